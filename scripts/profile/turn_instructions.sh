#!/usr/bin/env bash
# Instructions per pool turn (add + context) at 10,000 tau-bench messages, counted by callgrind:
# the difference between 501 timed turns and 1, divided by 500, so the 10,000 adds before them
# cancel out. Deterministic, unlike wall time on a shared 2-core machine: how the per-turn work
# of two builds is compared (BENCHMARKS.md, "Live pool").
#   scripts/profile/turn_instructions.sh target/release/memlens-bench [value|window|...] [tau-bench.json]
set -euo pipefail
bin="$1"
policy="${2:-value}"
data="${3:-$(dirname "$0")/../../../shared/data/traces/tau-bench-gpt-4o-airline.json}"
count() {
  MEMLENS_BENCH_TURNS="$1" valgrind --tool=callgrind --callgrind-out-file=/dev/null \
    "$bin" --pool "$policy" 10000 "$data" 2>&1 >/dev/null | awk '/Collected/ {print $4}'
}
one=$(count 1)
many=$(count 501)
echo "$policy: $(( (many - one) / 500 )) instructions per turn"
