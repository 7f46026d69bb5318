#!/usr/bin/env bash
# The model card's Evaluation tables for a checkpoint: every dev file through the served reader (the
# evaluation CLI), then the results table and the "No answer found" shares at six thresholds.
#
#   scripts/model_card_scores.sh [MODEL_DIR] [RESULTS_DIR]
#
# MODEL_DIR defaults to assets/littlebird-qa, RESULTS_DIR to runs/card. A result file already in
# RESULTS_DIR is not computed again, so the command resumes, and the four files of
# scripts/compare_to_shipped.sh (same reader, same threads) can be copied in first. DEV (default runs/dev)
# holds the dev files, written first if missing. About 20 minutes of 2 cores with bf16 units; THREADS
# sets the evaluation's threads (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:-assets/littlebird-qa}; RESULTS=${2:-runs/card}
DEV=${DEV:-runs/dev}; DATA=${DATA:-${LITTLEBIRD_DATA:?set LITTLEBIRD_DATA to the data folder}}; THREADS=${THREADS:-2}; PY=${PYTHON:-python}

FILES="dev-en-paragraph dev-ko-paragraph dev-en-article dev-ko-article dev-en-long dev-ko-long
  dev-en-unanswerable dev-ko-unanswerable dev-en-near-miss dev-ko-near-miss"
[ -f "$DEV/dev-ko-long.json" ] || $PY -m littlebird.training.dev_files --data-dir "$DATA" --output-dir "$DEV" \
  --max-questions 200 --ko-passages-per-document 6 --long-questions 200
mkdir -p "$RESULTS"
results=()
for file in $FILES; do
  result=$RESULTS/$file.json
  [ -f "$result" ] || $PY -m littlebird.evaluation --model "$MODEL" --data "$DEV/$file.json" \
    --threads "$THREADS" --output "$result" > "$RESULTS/$file.log"
  results+=("$result")
done
$PY -m littlebird.evaluation --report "${results[@]}"
$PY -m littlebird.evaluation --report "${results[@]}" --thresholds 0.1 0.2 0.3 0.5 0.7 0.9
