#!/usr/bin/env bash
# Builds and tests the Python package `memlens` (crates/memlens-py).
#
#   scripts/py.sh build   # the abi3 wheel (CPython >= 3.9) in target/wheels
#   scripts/py.sh test    # build, install the wheel into a fresh virtualenv, run pytest there
#                         # (Spark in local mode included), then the examples (examples/python,
#                         # stub models, no network; examples/spark on the tau-bench file)
#   scripts/py.sh bench   # build, then scripts/bench/bench_py.py (vs tiktoken, LangChain,
#                         # LlamaIndex)
#
# The tests import the installed package, never the source tree: they run from target/ with
# the virtualenv's Python, and check where `memlens` was imported from.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
say() { printf '\033[1mpy:\033[0m %s\n' "$*"; }

build() {
  say "maturin build --release (crates/memlens-py)"
  rm -rf target/wheels
  .venv/bin/maturin build --release --locked --quiet \
    -m crates/memlens-py/Cargo.toml -o target/wheels >/dev/null
  wheel=$(ls target/wheels/memlens-*.whl)
  say "built $wheel ($(du -k "$wheel" | cut -f1) KB)"
}

# A fresh virtualenv with the wheel and the pinned test libraries.
venv() {
  venv=target/py-venv
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$wheel" \
    -r crates/memlens-py/requirements-test.txt
  export TIKTOKEN_CACHE_DIR; TIKTOKEN_CACHE_DIR=$("$venv/bin/python" scripts/tiktoken_cache.py)
}

# The wheel is abi3 for CPython >= 3.9: when a 3.9 is on the machine (python3.9 on PATH, or
# pyenv's), the same wheel runs the pool and real-data tests there too (pytest 8.4: pytest 9
# needs 3.10; the drop-ins' libraries need newer Pythons, so they are tested on the main one).
oldest_python() {
  local py39="" candidate
  # pyenv's shim for python3.9 exists but fails unless 3.9 is selected: try each, keep one that runs.
  for candidate in "$HOME"/.pyenv/versions/3.9*/bin/python3 "$(command -v python3.9 || true)"; do
    if [ -x "$candidate" ] && "$candidate" --version >/dev/null 2>&1; then
      py39=$candidate
      break
    fi
  done
  if [ -z "$py39" ]; then
    say "no CPython 3.9 on this machine: the abi3 floor is not tested"
    return
  fi
  say "the same wheel on $("$py39" --version): pool and real-data tests"
  rm -rf target/py39-venv
  "$py39" -m venv target/py39-venv
  target/py39-venv/bin/python -m pip install --quiet --disable-pip-version-check "$wheel" \
    -r crates/memlens-py/requirements-test-py39.txt
  (cd target && MEMLENS_BIN="$PWD/debug/memlens" MEMLENS_DATA="$PWD/../../shared/data" \
    py39-venv/bin/python -W ignore::DeprecationWarning -m pytest -q -p no:cacheprovider \
    ../crates/memlens-py/tests/test_pool.py ../crates/memlens-py/tests/test_real_data.py)
}

case "${1:-test}" in
  build) build ;;
  test)
    build
    venv
    cargo build -p memlens-cli --locked --quiet
    say "pytest against the installed wheel"
    (cd target && MEMLENS_BIN="$PWD/debug/memlens" MEMLENS_DATA="$PWD/../../shared/data" \
      py-venv/bin/python -W ignore::DeprecationWarning -m pytest -q -p no:cacheprovider ../crates/memlens-py/tests)
    for example in examples/python/*.py; do
      say "example: $example"
      (cd target && py-venv/bin/python -W ignore "../$example")
    done
    say "example: examples/spark/fleet_report.py (Spark local mode, the tau-bench file)"
    (cd target && rm -rf fleet-report && py-venv/bin/python -W ignore ../examples/spark/fleet_report.py \
      ../../shared/data/traces fleet-report --model gpt-4o --policies window,value --budgets 4000)
    oldest_python
    ;;
  bench)
    build
    venv
    target/py-venv/bin/python scripts/bench/bench_py.py "${2:-../shared/data/traces/tau-bench-gpt-4o-airline.json}"
    ;;
  *) echo "usage: scripts/py.sh build|test|bench" >&2; exit 2 ;;
esac
