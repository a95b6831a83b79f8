#!/usr/bin/env bash
# Benchmarks on the real data: the scripted comparison with Python tiktoken (BENCHMARKS.md), then
# the divan benches. Usage: scripts/bench.sh [TRACE_FILE] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh >/dev/null
cargo build --release -p memlens-bench -p memlens-cli --locked --quiet
.venv/bin/python scripts/bench_import.py "$@"
if [ $# -eq 0 ]; then
  cargo bench -p memlens-bench --locked --bench import
fi
