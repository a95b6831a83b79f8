#!/usr/bin/env bash
# Every check CI runs: formatting, lints (native and wasm32), the wasm32 build of the core, all
# tests, and the token-count cross-check against Python tiktoken on the real tau-bench file.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
WASM_CRATES=(-p memlens-core -p memlens-import)

step "cargo fmt --check"
cargo fmt --all -- --check
step "clippy (native)"
cargo clippy --workspace --all-targets --locked -- -D warnings
step "clippy (wasm32: core and importers)"
cargo clippy "${WASM_CRATES[@]}" --target wasm32-unknown-unknown --locked -- -D warnings
step "build (wasm32: core and importers)"
cargo build "${WASM_CRATES[@]}" --target wasm32-unknown-unknown --locked
step "tests"
# CI=true makes insta fail on a missing or changed snapshot instead of writing a new one.
CI=true cargo test --workspace --locked
step "token counts vs. Python tiktoken (tau-bench, LoCoMo)"
cargo build -p memlens-cli --locked --quiet
for f in ../shared/data/traces/tau-bench-gpt-4o-airline.json ../shared/data/locomo/locomo10.json; do
  .venv/bin/python scripts/crosscheck_tokens.py target/debug/memlens "$f"
done
step "all checks passed"
