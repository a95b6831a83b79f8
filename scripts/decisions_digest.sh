#!/usr/bin/env bash
# Prints one line per (trace file, policy, budget): the sha256 of `memlens simulate --json`
# (per-call input tokens, cached prefix, evictions, compressions, retrievals, misses,
# violations), plus one line for `memlens bench-evidence --json` on LoCoMo. Run it before and
# after a change to the engine and diff the two outputs: equal lines mean identical decisions.
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
# Timings (`*_ms`, `*_us`, `*_us_per_turn`, `*per_second`) differ run to run; everything else must not.
h=$("$bin" bench-evidence "$locomo" --json | python3 -c '
import json, sys
def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if not k.endswith(("_ms", "_us", "_us_per_turn", "per_second"))}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x
print(json.dumps(strip(json.load(sys.stdin)), sort_keys=True))' | sha256sum | cut -c1-16)
echo "locomo10.json bench-evidence $h"
