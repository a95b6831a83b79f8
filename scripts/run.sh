#!/usr/bin/env bash
# Sets everything up and runs MemLens' main job on a trace: `memlens inspect`.
#   scripts/run.sh                 # the real tau-bench file in ../shared (or a bundled fixture)
#   scripts/run.sh FILE... [ARGS]  # your own trace files, any supported format
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh >/dev/null
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release -p memlens-cli --locked --quiet
if [ $# -eq 0 ]; then
  sample=../shared/data/traces/tau-bench-gpt-4o-airline.json
  if [ -f "$sample" ]; then
    set -- "$sample" --model gpt-4o
  else
    set -- tests/fixtures/anthropic/log.jsonl
  fi
fi
exec target/release/memlens inspect "$@"
