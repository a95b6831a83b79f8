#!/usr/bin/env bash
# Benchmarks (BENCHMARKS.md, "Tokens and import"): import + tokenize vs. Python tiktoken on the real
# data, a Claude Code project folder vs. ccusage, the policy
# engine's per-turn cost vs. LangChain trim_messages, the npm package vs. npm tiktoken/js-tiktoken
# (scripts/npm.sh bench), the web app's sizes and load times (scripts/web.sh measure), then the
# divan benches.
# Usage: scripts/bench/bench.sh [TRACE_FILE] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/bootstrap.sh >/dev/null
cargo build --release -p memlens-bench -p memlens-cli --locked --quiet
.venv/bin/python scripts/bench/bench_import.py "$@"
# A 200 MB Claude Code project folder: memlens inspect vs. ccusage (17.2.1: the last pure-JS
# release; later ones need a native binary that npm does not install here), benchmarks only.
if [ ! -x target/bench/ccusage/node_modules/.bin/ccusage ]; then
  mkdir -p target/bench/ccusage
  (cd target/bench/ccusage && npm init -y >/dev/null && npm install --no-audit --no-fund --silent ccusage@17.2.1)
fi
python3 scripts/bench/bench_folder.py target/release/memlens 200 3 target/bench/ccusage/node_modules/.bin/ccusage
# LangChain, to time its trim_messages next to the engine (benchmarks only; tests do not need it).
.venv/bin/python -c 'import langchain_core' 2>/dev/null ||
  .venv/bin/python -m pip install --quiet --disable-pip-version-check 'langchain-core>=0.3,<2'
.venv/bin/python scripts/bench/bench_engine.py
bash scripts/npm.sh bench
bash scripts/web.sh measure
if [ $# -eq 0 ]; then
  cargo bench -p memlens-bench --locked
fi
