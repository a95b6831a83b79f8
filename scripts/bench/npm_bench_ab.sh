#!/usr/bin/env bash
# The package's own per-turn benchmark (scripts/bench/bench_npm.mjs, what `scripts/npm.sh bench`
# runs) on two builds of the package, alternated in one session: each build is linked as
# `node_modules/memlens` of a scratch consumer directory, and the runs go A, B, A, B... so drift
# in this machine's speed falls on both alike. Prints each run's row at 10,000 messages.
#   scripts/bench/npm_bench_ab.sh PKG_A PKG_B [runs] [tau-bench.json]
# e.g. a copy of packages/memlens built before a change against the current build:
#   cp -r packages/memlens /tmp/pkg-before   # (built before the change)
#   scripts/npm.sh build && scripts/bench/npm_bench_ab.sh /tmp/pkg-before packages/memlens 3
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
a="$(cd "$1" && pwd)"; b="$(cd "$2" && pwd)"
runs="${3:-3}"
data="$(cd "$(dirname "${4:-$here/../shared/data/traces/tau-bench-gpt-4o-airline.json}")" && pwd)/$(basename "${4:-tau-bench-gpt-4o-airline.json}")"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
for side in a b; do
  mkdir -p "$scratch/$side/node_modules"
  ln -s "$here/tools/node_modules/tiktoken" "$scratch/$side/node_modules/tiktoken"
  ln -s "$here/tools/node_modules/js-tiktoken" "$scratch/$side/node_modules/js-tiktoken"
  cp "$here/scripts/bench/bench_npm.mjs" "$scratch/$side/"
done
ln -s "$a" "$scratch/a/node_modules/memlens"
ln -s "$b" "$scratch/b/node_modules/memlens"
echo "| run | build | messages in pool | memlens value (µs/turn) | memlens window (µs/turn) | plain JS loop (µs/turn) |"
echo "|---|---|---|---|---|---|"
for r in $(seq 1 "$runs"); do
  for side in a b; do
    pkg="$a"; [ "$side" = b ] && pkg="$b"
    row=$(cd "$scratch/$side" && node bench_npm.mjs "$data" | grep '^| 10,000')
    echo "| $r | ${side^^} ($(basename "$pkg")) $row"
  done
done
