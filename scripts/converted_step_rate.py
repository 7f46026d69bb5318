"""Training step time of a converted encoder, by source size, on this machine.

For each size a random encoder of that shape (XLM-R layout, a 1,000-piece vocabulary: the frozen
embedding rows cost nothing in a step) is written to a temporary folder, converted with
``littlebird.convert`` (every layer, 64-token blocks, 64 pack slots) and trained for ``--steps`` timed
steps of the gold-label stage's objective (``QAObjective``: start, end given the start, answerable)
with AdamW, word embeddings frozen and bf16 autocast where the hardware has bf16 units, as
``littlebird.training.loop`` trains. Windows are ``--length`` random tokens. It prints seconds per step,
windows per second and each size's step time as a multiple of the first size's: the ratio that scales
a rate measured for one size (e.g. a GPU run of the shipped e5-small-sized student) to another.

    python scripts/converted_step_rate.py --sizes e5-small xlm-roberta-base --batch-size 4 --steps 3

The machines are shared: read ratios, not absolute times.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from transformers import XLMRobertaConfig, XLMRobertaModel, XLMRobertaTokenizer  # noqa: E402

from littlebird.convert import convert  # noqa: E402
from littlebird.training.loop import resolve_mixed_precision  # noqa: E402
from littlebird.training.objectives import QAObjective  # noqa: E402
from littlebird.training.options import freeze_word_embeddings  # noqa: E402

# hidden size, layers, heads, feed-forward size of each source
SIZES = {
    "e5-small": (384, 12, 12, 1536),  # multilingual-e5-small, the shipped checkpoint's source
    "xlm-roberta-base": (768, 12, 12, 3072),
    "xlm-roberta-large": (1024, 24, 16, 4096),
}
VOCABULARY = 1000


def write_random_source(size: str, directory: Path) -> Path:
    """A random encoder of ``size``'s shape with a small Unigram tokenizer, in the transformers format."""
    hidden, layers, heads, ffn = SIZES[size]
    pieces = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)]
    pieces += [(f"\u2581w{i}", -float(i % 7)) for i in range(VOCABULARY - 5)] + [("<mask>", 0.0)]
    XLMRobertaTokenizer(vocab=pieces).save_pretrained(directory)
    config = XLMRobertaConfig(vocab_size=VOCABULARY, hidden_size=hidden, num_hidden_layers=layers,
                              num_attention_heads=heads, intermediate_size=ffn, max_position_embeddings=514)
    XLMRobertaModel(config).save_pretrained(directory)
    return directory


def seconds_per_step(size: str, *, batch_size: int, length: int, steps: int, precision: str) -> float:
    with tempfile.TemporaryDirectory() as folder:
        model = convert(write_random_source(size, Path(folder))).model.train()
    freeze_word_embeddings(model)
    objective = QAObjective(model)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
    generator = torch.Generator().manual_seed(0)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16" else contextlib.nullcontext()

    def step():
        starts = torch.randint(1, length - 20, (batch_size,), generator=generator)
        batch = {"input_ids": torch.randint(5, VOCABULARY, (batch_size, length), generator=generator),
                 "attention_mask": torch.ones(batch_size, length, dtype=torch.long),
                 "start_positions": starts, "end_positions": starts + 3}
        with autocast:
            loss, _ = objective(batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    step()  # warm-up: first-call allocations
    began = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - began) / steps


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", choices=sorted(SIZES), default=["e5-small", "xlm-roberta-base"])
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--length", type=int, default=384, help="tokens per window")
    parser.add_argument("--steps", type=int, default=3, help="timed steps after one warm-up step")
    parser.add_argument("--mixed-precision", choices=("auto", "no", "bf16"), default="auto")
    args = parser.parse_args(argv)
    precision = resolve_mixed_precision(args.mixed_precision, use_cpu=True)
    print(f"CPU, {torch.get_num_threads()} threads, {precision}, batch {args.batch_size} x {args.length} tokens, "
          f"{args.steps} timed steps")
    first = None
    for size in args.sizes:
        seconds = seconds_per_step(size, batch_size=args.batch_size, length=args.length, steps=args.steps,
                                   precision=precision)
        first = first or seconds
        print(f"{size:>18}: {seconds:6.2f} s/step  {args.batch_size / seconds:6.2f} windows/s  "
              f"x{seconds / first:.2f} the first size's step")


if __name__ == "__main__":
    main()
