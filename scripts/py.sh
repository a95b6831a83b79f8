#!/usr/bin/env bash
# Builds and tests the Python package `memlens` (crates/memlens-py).
#
#   scripts/py.sh build   # the abi3 wheel (CPython >= 3.9) in target/wheels
#   scripts/py.sh test    # build, install the wheel into a fresh virtualenv, run pytest there
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

case "${1:-test}" in
  build) build ;;
  test)
    build
    venv=target/py-venv
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$wheel" 'pytest==8.*'
    cargo build -p memlens-cli --locked --quiet
    say "pytest against the installed wheel"
    (cd target && MEMLENS_BIN="$PWD/debug/memlens" MEMLENS_DATA="$PWD/../../shared/data" \
      py-venv/bin/python -m pytest -q -p no:cacheprovider ../crates/memlens-py/tests)
    ;;
  *) echo "usage: scripts/py.sh build|test" >&2; exit 2 ;;
esac
