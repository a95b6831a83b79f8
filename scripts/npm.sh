#!/usr/bin/env bash
# Builds, tests and benchmarks the npm package `memlens` (packages/memlens).
#   scripts/npm.sh build   # release wasm -> wasm-bindgen (node + web) -> wasm-opt 132 -> npm pack
#   scripts/npm.sh test    # build, install the tarball in a scratch consumer, node --test there
#   scripts/npm.sh bench   # build, then token counting and per-turn cost vs. npm tiktoken/js-tiktoken
#   scripts/npm.sh example # build, install, run examples/agent-loop.mjs in the scratch consumer
# The tarball lands in target/npm/memlens-<version>.tgz.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
# wasm-opt 132 from npm, never Debian's (its output fails to load).
export PATH="$PWD/tools/node_modules/.bin:$PATH"

say() { printf '\033[1mnpm:\033[0m %s\n' "$*"; }
PKG=packages/memlens
OUT=target/npm

build() {
  say "cargo build --release --target wasm32-unknown-unknown -p memlens-wasm"
  cargo build --release --target wasm32-unknown-unknown -p memlens-wasm --locked --quiet
  local wasm=target/wasm32-unknown-unknown/release/memlens_wasm.wasm
  rm -rf "$PKG/wasm"
  # One module for Node and browsers: the `web` target, which node.js instantiates synchronously
  # from the file next to it (no second copy of the tokenizer vocabulary in the package).
  wasm-bindgen --target web --no-typescript --out-dir "$PKG/wasm" "$wasm"
  if [ "${MEMLENS_WASM_NAMES:-0}" = 1 ]; then
    say "keeping function names (profiling build, no wasm-opt)"
  else
    wasm-opt -O3 --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
      --enable-mutable-globals "$PKG/wasm/memlens_wasm_bg.wasm" -o "$PKG/wasm/memlens_wasm_bg.wasm"
  fi
  mkdir -p "$OUT"
  rm -f "$OUT"/memlens-*.tgz
  (cd "$PKG" && npm pack --silent --pack-destination "../../$OUT" >/dev/null)
  TARBALL=$(ls "$OUT"/memlens-*.tgz)
  say "packed $TARBALL ($(du -k "$TARBALL" | cut -f1) KB; wasm $(du -k "$PKG/wasm/memlens_wasm_bg.wasm" | cut -f1) KB)"
}

# A scratch consumer project with the tarball installed, as a user would install it.
consumer() {
  local dir="$OUT/consumer"
  rm -rf "$dir" && mkdir -p "$dir"
  (cd "$dir" && npm init -y >/dev/null && npm install --no-audit --no-fund --silent "../$(basename "$TARBALL")")
  cp "$PKG"/test/*.mjs "$dir/"
  echo "$dir"
}

case "${1:-build}" in
  build) build ;;
  test)
    build
    # The tests compare with the native CLI's output on the same files.
    cargo build -p memlens-cli --locked --quiet
    dir=$(consumer)
    say "node --test (installed tarball, $dir)"
    (cd "$dir" && MEMLENS_ROOT="$PWD/../../.." node --test --test-reporter=spec *.test.mjs)
    say "example: examples/agent-loop.mjs"
    (cd "$dir" && cp ../../../examples/agent-loop.mjs . && node agent-loop.mjs >/dev/null)
    ;;
  example)
    build
    dir=$(consumer)
    cp examples/agent-loop.mjs "$dir/"
    (cd "$dir" && node agent-loop.mjs)
    ;;
  bench)
    build
    dir=$(consumer)
    ln -sfn "$PWD/tools/node_modules/tiktoken" "$dir/node_modules/tiktoken"
    ln -sfn "$PWD/tools/node_modules/js-tiktoken" "$dir/node_modules/js-tiktoken"
    cp scripts/bench/bench_npm.mjs "$dir/"
    (cd "$dir" && node bench_npm.mjs "${2:-../../../../shared/data/traces/tau-bench-gpt-4o-airline.json}")
    ;;
  *) echo "usage: scripts/npm.sh build|test|bench|example" >&2; exit 2 ;;
esac
