#!/usr/bin/env bash
# Every check CI runs: formatting, lints (native and wasm32), the wasm32 build of the core, all
# tests, the token-count cross-check against Python tiktoken on the real tau-bench file, the npm
# package's tests (Node, against the packed tarball), the Python package's tests (pytest, against
# the installed wheel) and the web app's browser tests (Chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"

# A test run builds once and does not edit: no incremental caches, and line tables only as debug
# info (backtraces keep file and line): a smaller target/ (a CI run once ran out of disk; a clean
# clone's whole run then peaked at 8.8 GB).
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
export CARGO_PROFILE_DEV_DEBUG="${CARGO_PROFILE_DEV_DEBUG:-line-tables-only}"

step() { printf '\n\033[1m== %s\033[0m  (%s, %ss into the run)\n' "$*" "$(date +%T)" "$SECONDS"; }
WASM_CRATES=(-p memlens-core -p memlens-import -p memlens-pool -p memlens-fit -p memlens-wasm)

step "cargo fmt --check"
cargo fmt --all -- --check
step "size check (every crate, the web app, the Python package: files <= 800 lines, functions <= 120)"
python3 scripts/size_check.py
step "module loops (no two files of a crate reach each other)"
python3 scripts/module_loops.py
step "clippy (native)"
cargo clippy --workspace --all-targets --locked -- -D warnings
# The core as the web worker takes it: no compiled-in tables (memlens_core::assets).
cargo clippy -p memlens-core --no-default-features --locked -- -D warnings
# The core as the web page takes it: no TOML (policies in TOML are read by the worker).
cargo test -p memlens-core --no-default-features --features embedded-assets --lib --locked -q policy::config
step "clippy (wasm32: core, importers, pool, fit, npm layer, web app)"
cargo clippy "${WASM_CRATES[@]}" --target wasm32-unknown-unknown --locked -- -D warnings
CARGO_TARGET_DIR=target/web cargo clippy -p memlens-web --target wasm32-unknown-unknown --locked -- -D warnings
# The worker's build (index.html turns `toml` on for it alone), and `measure` (scripts/web.sh measure).
CARGO_TARGET_DIR=target/web cargo clippy -p memlens-web --features toml,measure --target wasm32-unknown-unknown --locked -- -D warnings
step "build (wasm32: core, importers, pool, fit, npm layer)"
cargo build "${WASM_CRATES[@]}" --target wasm32-unknown-unknown --locked
step "tests"
# CI=true makes insta fail on a missing or changed snapshot instead of writing a new one.
CI=true cargo test --workspace --locked
step "token counts vs. Python tiktoken (tau-bench, LoCoMo)"
cargo build -p memlens-cli --locked --quiet
for f in ../shared/data/traces/tau-bench-gpt-4o-airline.json ../shared/data/locomo/locomo10.json; do
  .venv/bin/python scripts/crosscheck_tokens.py target/debug/memlens "$f"
done
step "fuzz smoke: every target replays its corpus, then fuzzes 10 s (scripts/fuzz.sh)"
bash scripts/fuzz.sh smoke 10
step "npm package: build, pack, install in a scratch project, node --test"
bash scripts/npm.sh test
step "Python package: build the wheel, install it in a fresh virtualenv, pytest there"
bash scripts/py.sh test
step "web app: build, serve on 127.0.0.1, browser tests in headless Chromium"
bash scripts/web.sh test
step "all checks passed"
