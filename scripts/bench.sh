#!/usr/bin/env bash
# Benchmarks (BENCHMARKS.md): import + tokenize vs. Python tiktoken on the real data, the policy
# engine's per-turn cost vs. LangChain trim_messages, the npm package vs. npm tiktoken/js-tiktoken
# (scripts/npm.sh bench), the web app's sizes and load times (scripts/web.sh measure), then the
# divan benches.
# Usage: scripts/bench.sh [TRACE_FILE] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh >/dev/null
cargo build --release -p memlens-bench -p memlens-cli --locked --quiet
.venv/bin/python scripts/bench_import.py "$@"
# LangChain, to time its trim_messages next to the engine (benchmarks only; tests do not need it).
.venv/bin/python -c 'import langchain_core' 2>/dev/null ||
  .venv/bin/python -m pip install --quiet --disable-pip-version-check 'langchain-core>=0.3,<2'
.venv/bin/python scripts/bench_engine.py
bash scripts/npm.sh bench
bash scripts/web.sh measure
if [ $# -eq 0 ]; then
  cargo bench -p memlens-bench --locked
fi
