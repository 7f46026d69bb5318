#!/usr/bin/env bash
# Run a training stage in chunks of CHUNK minutes until it finishes (exit 0) or TOTAL minutes are spent
# before it does (exit 2: a rerun resumes it, so a stage never silently ends short of its last step):
#
#   scripts/in_chunks.sh TOTAL CHUNK OUTPUT_DIR python -m littlebird.training.distill ... --output-dir OUTPUT_DIR
#
# Each chunk is the same command with --max-minutes CHUNK; the stage saves at its end and the next chunk
# resumes from OUTPUT_DIR/state.pt. Why: with jemalloc that never hands memory back (the training
# script's allocator setting) a process's memory grows with the variety of batch shapes: one distillation
# process held 7 GB after 20 minutes, the next one 22 GB after 15 and was OOM-killed. A fresh process
# every CHUNK minutes keeps it bounded; a chunk that dies anyway (OOM) is followed by the next, which
# resumes from the last save. Only a third failure in a row with no save between them stops the script (exit 1):
# a long stage may be OOM-killed now and then and still progress, a broken command fails at once.
# Beside the chunks runs scripts/memory_guard.sh, which kills a chunk that fills the memory before it
# thrashes (the next chunk resumes from its last save); GUARD=0 leaves it out.
set -euo pipefail
total=$1; chunk=$2; out=$3; shift 3
if [ "${GUARD:-1}" != 0 ]; then
  WATCH_PID=$$ "$(dirname "$0")/memory_guard.sh" &
  guard=$!; trap 'kill "$guard" 2>/dev/null || true' EXIT
fi
start=$(date +%s)
failures=0
while :; do
  if [ -f "$out/summary.json" ] && python - "$out/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
sys.exit(0 if s["step"] >= s.get("last_step", s["total_steps"]) else 1)
PY
  then echo "in_chunks: $out finished"; break; fi
  left=$(( total - ($(date +%s) - start) / 60 ))
  if [ "$left" -le 1 ]; then
    echo "in_chunks: $total minutes spent before $out reached its last step; rerun to resume it" >&2
    exit 2
  fi
  this=$(( left < chunk ? left : chunk ))
  saved=$(stat -c %.9Y "$out/state.pt" 2>/dev/null || echo none)
  if ! "$@" --max-minutes "$this"; then
    # a chunk that saved before it died made progress: its failure does not count towards the three
    [ "$(stat -c %.9Y "$out/state.pt" 2>/dev/null || echo none)" = "$saved" ] || failures=0
    failures=$((failures + 1))
    echo "in_chunks: a chunk of $out failed ($failures in a row without a save)" >&2
    [ "$failures" -lt 3 ] || exit 1
  fi
done
