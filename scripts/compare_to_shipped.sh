#!/usr/bin/env bash
# Does a candidate checkpoint beat the shipped one? Both through the served reader (the evaluation CLI) on
# the four dev files the model card leads with (paragraphs and articles/pages, English and Korean, 200
# questions each), then per file the F1 difference with its 95% paired-bootstrap interval
# (`littlebird evaluate --compare`) and a last line saying whether the candidate is ahead on all of them.
#
#   scripts/compare_to_shipped.sh CANDIDATE_MODEL_DIR [RESULTS_DIR]
#   FILES=all scripts/compare_to_shipped.sh CANDIDATE_MODEL_DIR [RESULTS_DIR]
#
# FILES=all compares on every dev file: the model card's ten (with the long, unanswerable and near-miss ones),
# the two page-shaped ones and the page-table one; FILES may also list dev file names. RESULTS_DIR (default runs/compare) keeps
# each result file; a file already there is not computed again, so the command resumes. DEV (default runs/dev)
# holds the dev files; they are written first if missing. About an hour of 2 cores for both models on the
# four files, three on all; THREADS sets the evaluation's threads (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
CANDIDATE=${1:?usage: scripts/compare_to_shipped.sh CANDIDATE_MODEL_DIR [RESULTS_DIR]}
RESULTS=${2:-runs/compare}; DEV=${DEV:-runs/dev}; DATA=${DATA:-${LITTLEBIRD_DATA:?set LITTLEBIRD_DATA to the data folder}}; THREADS=${THREADS:-2}
SHIPPED=${SHIPPED:-assets/littlebird-qa}; PY=${PYTHON:-python}

FILES=${FILES:-dev-en-paragraph dev-ko-paragraph dev-en-article dev-ko-article}
[ "$FILES" = all ] && FILES="dev-en-paragraph dev-ko-paragraph dev-en-article dev-ko-article dev-en-long dev-ko-long
  dev-en-unanswerable dev-ko-unanswerable dev-en-near-miss dev-ko-near-miss dev-en-page-shaped dev-ko-page-shaped
  dev-en-page-table"
for file in $FILES; do
  [ -f "$DEV/$file.json" ] || { $PY -m littlebird.training.dev_files --data-dir "$DATA" --output-dir "$DEV" \
    --max-questions 200 --ko-passages-per-document 6 --long-questions 50; break; }
done
mkdir -p "$RESULTS"
for name in shipped candidate; do
  model=$SHIPPED; [ $name = candidate ] && model=$CANDIDATE
  for file in $FILES; do
    result=$RESULTS/$name-$file.json
    [ -f "$result" ] || $PY -m littlebird.evaluation --model "$model" --data "$DEV/$file.json" \
      --threads "$THREADS" --output "$result" > "$RESULTS/$name-$file.log"
  done
done
$PY -m littlebird.evaluation --compare "$RESULTS/shipped-{}.json" "$RESULTS/candidate-{}.json" \
  --names shipped candidate --files $FILES
