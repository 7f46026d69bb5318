#!/usr/bin/env bash
# Lengthen any BERT-family encoder into a LittleBird QA model, on one GPU (or CPU, slowly):
# convert it with its own tokenizer, train on the QA data with gold labels (paragraph windows, then 1,024-token
# long windows mixed with paragraph ones), export a standalone copy, score the dev split.
#
#   SOURCE=xlm-roberta-base scripts/train_from_encoder.sh     # a Hub id (read from the Hub once) or a local folder
#
# The stages are the default recipe's gold-label stages (scripts/train_default_checkpoint.sh, steps 4 and 7)
# without its teacher and distillation: the converted encoder learns the QA head from the answers alone. Each
# stage resumes from $RUNS/<stage>/state.pt when rerun. Outputs: $RUNS/long/model (the checkpoint, with its
# tokenizer: LITTLEBIRD_CHECKPOINT=$RUNS/long/model python app.py) and $RUNS/standalone (for the Hub).
set -euo pipefail
cd "$(dirname "$0")/.."

SOURCE=${SOURCE:?set SOURCE to a Hub id or a folder of a BERT, RoBERTa, XLM-R, ELECTRA or e5 encoder}
DATA=${DATA:-../shared/data}
RUNS=${RUNS:-runs/$(basename "$SOURCE")}
DEV=${DEV:-runs/dev}
LAUNCH=${LAUNCH:-python}      # e.g. "torchrun --nproc_per_node N": data-parallel
EPOCHS=${EPOCHS:-2}           # passes over the paragraph windows (SQuAD train less the dev articles, Korean x3)
BATCH=${BATCH:-32}            # windows per step and process
LONG_STEPS=${LONG_STEPS:-600} # steps of the mixed long / paragraph stage
EVAL_QUESTIONS=${EVAL_QUESTIONS:-200}

python -m littlebird.convert --source "$SOURCE" --output "$RUNS/converted"

$LAUNCH -m littlebird.training.finetune --student-dir "$RUNS/converted" --data-dir "$DATA" \
  --output-dir "$RUNS/finetune" --max-length 384 --doc-stride 128 --ko-repeat 3 \
  --pi-probability 0.2 --pi-max-padding 256 --batch-size "$BATCH" --lr 5e-5 --epochs "$EPOCHS" \
  --save-minutes 10 --log-every 50 --seed 31

$LAUNCH -m littlebird.training.long_context --student-dir "$RUNS/finetune/model" --data-dir "$DATA" \
  --output-dir "$RUNS/long" --max-en-questions 1500 --max-ko-questions 700 --max-length 1024 \
  --short-en-questions 27000 --short-ko-questions 10000 --short-max-length 384 \
  --batch-size 8 --grad-accum 2 --lr 3e-5 --max-steps "$LONG_STEPS" --save-minutes 10 --log-every 20 --seed 51

python -m littlebird.training.export --student-dir "$RUNS/long/model" --standalone "$RUNS/standalone"

[ -f "$DEV/dev-en-paragraph.json" ] || python -m littlebird.training.data --data-dir "$DATA" --output-dir "$DEV" \
  --max-questions "$EVAL_QUESTIONS" --ko-passages-per-document 6
for file in dev-en-paragraph dev-ko-paragraph; do
  python -m littlebird.evaluation --model "$RUNS/long/model" --data "$DEV/$file.json"
done
