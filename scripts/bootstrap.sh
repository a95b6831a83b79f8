#!/usr/bin/env bash
# Installs what MemLens needs to build and test, idempotently: fast when everything is present.
#   - the Rust wasm32 target (the core and importers must build for the browser)
#   - Python tiktoken, the independent tokenizer the test suite cross-checks counts against
#   - wasm-bindgen-cli 0.2.130 and trunk 0.21.14 (cargo install; versions from
#     ../shared/toolchain/NOTES.md), wasm-split-cli 0.2.4 (the page's split), wasm-opt 132 and
#     playwright-core from npm (tools/), and Debian's chromium for the browser tests. Debian's own
#     binaryen (wasm-opt 108) is never used: its output fails to load.
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
# maturin builds the Python package's wheel (scripts/py.sh); pinned, installed once.
if ! .venv/bin/maturin --version 2>/dev/null | grep -q '^maturin 1.16.0$'; then
  say "installing maturin 1.16.0 into .venv"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check 'maturin==1.16.0'
fi
# Pinned Rust tools; `cargo install` only when the installed version differs.
have_version() { command -v "$1" >/dev/null 2>&1 && "$1" --version 2>/dev/null | grep -q "$2"; }
if ! have_version wasm-bindgen 0.2.130; then
  say "installing wasm-bindgen-cli 0.2.130 (a few minutes, once)"
  # Not --locked: its lockfile pins a crate the registry no longer serves (toolchain NOTES).
  cargo install wasm-bindgen-cli --version 0.2.130 --quiet
fi
if ! have_version trunk 0.21.14; then
  say "installing trunk 0.21.14 (several minutes, once)"
  cargo install trunk --version 0.21.14 --locked --quiet
fi

# wasm-split-cli: splits the page's module so that the views load on first use (scripts/web_app.sh).
if ! cargo install --list 2>/dev/null | grep -q '^wasm_split_cli_support v0.2.4:'; then
  say "installing wasm-split-cli 0.2.4 (a minute or two, once)"
  cargo install wasm_split_cli_support --version 0.2.4 --locked --features build-binary --quiet
fi

# cargo-fuzz: the coverage-guided fuzz targets (fuzz/, scripts/fuzz.sh; libFuzzer on stable Rust).
if ! have_version cargo-fuzz 0.13.2; then
  say "installing cargo-fuzz 0.13.2 (a minute or two, once)"
  cargo install cargo-fuzz --version 0.13.2 --locked --quiet
fi

# npm tools: wasm-opt 132, playwright-core, and the npm tokenizers the benchmarks compare against.
if [ ! -x tools/node_modules/.bin/wasm-opt ] || [ tools/package-lock.json -nt tools/node_modules/.package-lock.json ]; then
  say "installing npm tools (tools/)"
  (cd tools && npm ci --no-audit --no-fund --silent)
fi

# Headless Chromium for the web app's and the npm package's browser tests.
if [ ! -x /usr/bin/chromium ]; then
  say "installing chromium (apt)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi

# Java 17 for PySpark's local mode (memlens.spark's tests; these machines usually have it).
if ! command -v java >/dev/null 2>&1; then
  say "installing Java 17 (apt, for PySpark)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi
say "ok"
