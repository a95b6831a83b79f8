#!/usr/bin/env bash
# Installs what MemLens needs to build and test, idempotently: fast when everything is present.
#   - the Rust wasm32 target (the core and importers must build for the browser)
#   - Python tiktoken, the independent tokenizer the test suite cross-checks counts against
# Tools only the web app needs (trunk, wasm-bindgen-cli, wasm-opt 132, chromium) come with it.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\033[1mbootstrap:\033[0m %s\n' "$*"; }

if ! command -v cargo >/dev/null 2>&1; then
  [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
fi
command -v cargo >/dev/null 2>&1 || { echo "bootstrap: cargo not found; install Rust with rustup first" >&2; exit 1; }

if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  say "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi
rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy
rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt

# Python tiktoken in a project-local virtualenv (never the system site-packages).
if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import tiktoken' 2>/dev/null; then
  say "creating .venv with tiktoken"
  python3 -m venv .venv
  .venv/bin/python -m pip install --quiet --disable-pip-version-check 'tiktoken==0.12.*'
fi
say "ok"
