#!/usr/bin/env bash
# Sets everything up and runs MemLens' main job on a trace: `memlens inspect`, then (for the
# default trace) `memlens compare` of every built-in policy at a budget of 4,000 tokens.
#   scripts/run.sh                 # the real tau-bench file in ../shared (or a bundled fixture)
#   scripts/run.sh FILE... [ARGS]  # your own trace files, any supported format: memlens inspect
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh >/dev/null
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release -p memlens-cli --locked --quiet
if [ $# -gt 0 ]; then
  exec target/release/memlens inspect "$@"
fi
sample=../shared/data/traces/tau-bench-gpt-4o-airline.json
[ -f "$sample" ] || sample=tests/fixtures/tau-bench/two-trajectories.json
target/release/memlens inspect "$sample" --model gpt-4o
echo "== what each policy would have sent at a budget of 4,000 tokens"
exec target/release/memlens compare "$sample" --model gpt-4o --budget 4000
