#!/bin/sh
# Kill a training process before it thrashes the machine:
#
#   setsid nohup scripts/memory_guard.sh >> runs/memory_guard.log 2>&1 < /dev/null &
#
# scripts/in_chunks.sh starts one for as long as it runs (WATCH_PID: exit once that process has gone).
# Why: scripts/in_chunks.sh restarts a stage every few minutes because jemalloc keeps what it frees, yet now
# and then one 10-minute process still grows to all the memory within minutes. Without swap the kernel
# then evicts the process's own code pages instead of killing it, and it runs on at a step in many minutes
# (one distillation process logged no step for 18 minutes that way). Killed at once, it loses only the steps
# since its last save: in_chunks.sh starts the next process, which resumes from there.
# LIMIT_KB (default 1.5 GiB): the available memory under which it kills.
limit=${LIMIT_KB:-1572864}; watch=${WATCH_PID:-}
while :; do
  if [ -n "$watch" ] && ! kill -0 "$watch" 2>/dev/null; then exit 0; fi
  avail=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
  if [ "$avail" -lt "$limit" ]; then
    pids=$(pgrep -f '^[^ ]*python[^ ]* -m littlebird.training' || true)
    if [ -n "$pids" ]; then
      echo "$(date '+%F %T') memory_guard: ${avail} kB available, killing $pids"
      kill -9 $pids
      sleep 20
    fi
  fi
  sleep 5
done
