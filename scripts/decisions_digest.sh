#!/usr/bin/env bash
# Prints one line per (trace file, policy, budget): the sha256 of `memlens simulate --json`
# (per-call input tokens, cached prefix, evictions, compressions, retrievals, misses,
# violations), plus one line for `memlens bench-evidence --json` on LoCoMo without its timings
# (import_ms, prepare_ms, recall_index.build_ms / add_us_per_turn, rows[].questions_per_second
# change from run to run). Run it before and after a change to the engine and diff the two
# outputs: equal lines mean identical decisions.
#
#   scripts/decisions_digest.sh [path/to/memlens] > before.txt
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
bin="${1:-$here/target/release/memlens}"
data="${MEMLENS_DATA:-$here/../shared/data}"
tau="$data/traces/tau-bench-gpt-4o-airline.json"
locomo="$data/locomo/locomo10.json"
for p in $("$bin" policies | awk '{print $1}'); do
  for b in 2000 4000 8000; do
    for f in "$tau" "$locomo"; do
      h=$("$bin" simulate "$f" --policy "$p" --budget "$b" --json | sha256sum | cut -c1-16)
      echo "$(basename "$f") $p $b $h"
    done
  done
done
h=$("$bin" bench-evidence "$locomo" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
for k in ("import_ms", "prepare_ms"):
    d.pop(k, None)
for k in ("build_ms", "add_us_per_turn"):
    d.get("recall_index", {}).pop(k, None)
for r in d.get("rows", []):
    r.pop("questions_per_second", None)
json.dump(d, sys.stdout)
' | sha256sum | cut -c1-16)
echo "locomo10.json bench-evidence $h"
