#!/usr/bin/env bash
# LittleBird next to the seeds' other two conversions, BigBird + TAPER and Longformer, on equal
# terms, ending with the README's table (accuracy by context length; latency and memory at 4K and 16K).
#
#   experiments/conversion-comparison/compare_conversions.sh   # after `littlebird train recipes/default.yaml --until-stage teacher` (runs/default/teacher)
#
# Every step skips what an earlier run already wrote, so a rerun resumes.
set -euo pipefail
cd "$(dirname "$0")/../.."

DATA=${DATA:-${LITTLEBIRD_DATA:?set LITTLEBIRD_DATA to the data folder}}
RUNS=${RUNS:-runs}
LAUNCH=${LAUNCH:-python}
SCALE=${SCALE:-1}
TEACHER=${TEACHER:-runs/default/teacher/model}    # what the student was converted from: the baselines' source too
LAYERS=${LAYERS:-12}                           # the student's depth (the README's table: the earlier 6-layer one, LAYERS=6)
STUDENT=${STUDENT:-assets/littlebird-qa}
EN_QUESTIONS=${EN_QUESTIONS:-2500}
KO_QUESTIONS=${KO_QUESTIONS:-2500}
EVAL_QUESTIONS=${EVAL_QUESTIONS:-100}
ARTICLE_QUESTIONS=${ARTICLE_QUESTIONS:-40}     # the cap the model card uses for Korean pages
minutes() { python -c "print($1 * $SCALE)"; }

# 1. Each baseline from the teacher's encoder (the student's LAYERS layers), then trained on stage 3's data as
#    recipes/default.yaml gives it to LittleBird (stage long): same options, seed, batch, rate and steps. The budget is
#    the 40 x 4 windows, not stage 3's time box: on CPU Longformer's steps take about 3x LittleBird's, and a box
#    would cut it short. Each run's log.txt has its wall time.
for kind in bigbird-taper longformer; do
  [ -d "$RUNS/long-$kind/model" ] && continue
  $LAUNCH -m littlebird.training.baselines --kind "$kind" --source "$TEACHER" --num-layers "$LAYERS" --data-dir "$DATA" \
    --output-dir "$RUNS/long-$kind" --max-en-questions "$EN_QUESTIONS" --max-ko-questions "$KO_QUESTIONS" \
    --max-length 1024 --batch-size 4 --lr 3e-5 \
    --max-steps 40 --max-minutes "$(minutes 60)" --log-every 2 --seed 4
done

# 1b. An ablation: LittleBird without its distillation stage (the teacher converted, --max-steps 0, then stage 3
#     exactly as recipes/default.yaml runs it), to tell what distillation brings from what attention does.
[ -d "$RUNS/convert-only/model" ] || python -m littlebird.training.distill --teacher-dir "$TEACHER" --data-dir "$DATA" \
  --output-dir "$RUNS/convert-only" --num-layers "$LAYERS" --max-en-questions 1 --max-ko-questions 1 --max-steps 0
[ -d "$RUNS/long-no-distill/model" ] || $LAUNCH -m littlebird.training.long_context \
  --student-dir "$RUNS/convert-only/model" --data-dir "$DATA" \
  --output-dir "$RUNS/long-no-distill" --max-en-questions "$EN_QUESTIONS" --max-ko-questions "$KO_QUESTIONS" \
  --max-length 1024 --batch-size 4 --lr 3e-5 \
  --max-steps 40 --max-minutes "$(minutes 6)" --log-every 2 --seed 4

# 2. Dev scores of all four on the same questions (the student's may exist from the training script).
[ -f "$RUNS/dev/dev-ko-article.json" ] || python -m littlebird.training.dev_files --data-dir "$DATA" \
  --output-dir "$RUNS/dev" --max-questions "$EVAL_QUESTIONS" --ko-passages-per-document 6
mkdir -p "$RUNS/eval"
for pair in "student:$STUDENT" "bigbird-taper:$RUNS/long-bigbird-taper/model" "longformer:$RUNS/long-longformer/model" \
    "no-distill:$RUNS/long-no-distill/model"; do
  name=${pair%%:*}; model=${pair#*:}
  for file in dev-en-paragraph dev-ko-paragraph dev-en-article dev-ko-article; do
    [ -f "$RUNS/eval/$name-$file.json" ] && continue
    limit=(); case $file in *article) limit=(--max-questions "$ARTICLE_QUESTIONS");; esac
    python -m littlebird.evaluation --model "$model" --data "$RUNS/dev/$file.json" "${limit[@]}" \
      --output "$RUNS/eval/$name-$file.json" | tee "$RUNS/eval/$name-$file.txt"
  done
done

# 3. Latency and memory at the trained models' size (e5-small's width, LAYERS layers), 4K and 16K tokens.
[ -f "$RUNS/eval/bench-conversions.json" ] || python benchmarks/bench_models.py --hidden 384 --layers "$LAYERS" \
  --heads 12 --lengths 4096 16384 --json "$RUNS/eval/bench-conversions.json"

# 4. The table.
python experiments/conversion-comparison/compare_conversions.py --bench "$RUNS/eval/bench-conversions.json" \
  --eval littlebird "$RUNS"/eval/student-dev-*.json \
  --eval bigbird-taper "$RUNS"/eval/bigbird-taper-dev-*.json \
  --eval longformer "$RUNS"/eval/longformer-dev-*.json \
  --eval "littlebird, no distillation" "$RUNS"/eval/no-distill-dev-*.json
