#!/usr/bin/env bash
# The web analyzer: build it with Trunk, serve dist/ on 127.0.0.1, or run its browser tests.
#   scripts/web.sh build [--release]   # dist/ (release: opt-level z, wasm-opt 132 -Oz)
#   scripts/web.sh serve [PORT]        # release build, then a static server on 127.0.0.1
#   scripts/web.sh test                # debug build, a server on a free port, tests/web/*.test.mjs
#   scripts/web.sh measure             # release build, then sizes and load times (BENCHMARKS.md, "Web app")
# Tools come from scripts/bootstrap.sh: trunk 0.21.14, wasm-bindgen 0.2.130, wasm-split-cli 0.2.4
# (splits the page: scripts/web_app.sh), wasm-opt 132 (npm, tools/node_modules; Debian's binaryen
# 108 produces modules that fail to load), chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
export PATH="$ROOT/tools/node_modules/.bin:$PATH"
# A target dir of its own: the wasm builds do not fight the native ones over cargo's lock.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target/web}"
# The caller's flags, kept for the native CLI the tests compare against (`cli` below): built
# under the page's flags it would be a second build of the CLI and every dependency in
# target/debug (cargo keys artifacts by RUSTFLAGS; it took a CI run ~7 minutes).
NATIVE_RUSTFLAGS="${RUSTFLAGS-}"
# Leptos' type-erased views (`--cfg erase_components`): every component's view becomes an
# `AnyView` instead of one nested generic type. Measured: the page's code 1,602 -> 1,510 KB and
# 548 -> 496 KB gzipped (BENCHMARKS.md, "Web app"). Debug builds and tests use it too, so what is
# tested is what ships.
export RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }--cfg erase_components"
cli() { # the CLI in the default target dir, built as scripts/test.sh built it
  (unset CARGO_TARGET_DIR; if [ -n "$NATIVE_RUSTFLAGS" ]; then export RUSTFLAGS="$NATIVE_RUSTFLAGS"; else unset RUSTFLAGS; fi
   cargo build -p memlens-cli --quiet)
}

need() {
  for tool in trunk wasm-bindgen wasm-split-cli wasm-opt; do
    command -v "$tool" >/dev/null || { echo "web.sh: $tool not found: run scripts/bootstrap.sh" >&2; exit 2; }
  done
  case "$(wasm-opt --version)" in
    *"version 132"*) ;;
    *) echo "web.sh: wasm-opt on PATH is not version 132: $(command -v wasm-opt)" >&2; exit 2 ;;
  esac
}

build() {
  need
  # wasm-bindgen never deletes old snippets from its output folder and Trunk preloads every file
  # there: clear it (it is rewritten on every build anyway).
  rm -rf "$CARGO_TARGET_DIR/wasm-bindgen"
  if [ "${1:-}" = "--release" ]; then
    # Release: small and fast, for shipping and measuring.
    CARGO_PROFILE_RELEASE_OPT_LEVEL=z CARGO_PROFILE_RELEASE_LTO=fat \
      CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 CARGO_PROFILE_RELEASE_PANIC=abort \
      trunk build index.html --release
  else
    trunk build index.html
  fi
}

measure_worker() { # dist/measure/: the release worker with `measure` (Request::ProtocolBench)
  CARGO_PROFILE_RELEASE_OPT_LEVEL=z CARGO_PROFILE_RELEASE_LTO=fat \
    CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 CARGO_PROFILE_RELEASE_PANIC=abort \
    cargo build -p memlens-web --bin worker --features toml,measure --release --locked \
      --target wasm32-unknown-unknown
  rm -rf dist/measure
  wasm-bindgen "$CARGO_TARGET_DIR/wasm32-unknown-unknown/release/worker.wasm" --target no-modules \
    --out-dir dist/measure --out-name worker --no-typescript
  wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
    --enable-mutable-globals --enable-reference-types --enable-multivalue \
    dist/measure/worker_bg.wasm -o dist/measure/worker_bg.wasm
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

serve_bg() { # serve dist/ on $1 in the background; prints the pid
  python3 -m http.server "$1" --bind 127.0.0.1 -d dist >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 50); do
    curl -sf "http://127.0.0.1:$1/" >/dev/null 2>&1 && break
    sleep 0.1
  done
  echo "$pid"
}

cmd="${1:-build}"
shift || true
case "$cmd" in
  build) build "$@" ;;
  serve)
    port="${1:-8080}"
    build --release
    echo "MemLens web analyzer: http://127.0.0.1:$port/#sample  (open a trace, or the sample)"
    exec python3 -m http.server "$port" --bind 127.0.0.1 -d dist
    ;;
  test)
    build
    # The reference figures come from the CLI (the default target dir: scripts/test.sh built it).
    cli
    port=$(free_port)
    pid=$(serve_bg "$port")
    trap 'kill "$pid" 2>/dev/null || true' EXIT
    MEMLENS_WEB_URL="http://127.0.0.1:$port/" MEMLENS_BIN="$ROOT/target/debug/memlens" \
      node --test --test-concurrency=1 tests/web/
    ;;
  measure)
    build --release
    measure_worker
    # The live-follow measurement converts files with the CLI (MEMLENS_BIN: one already built).
    if [ -z "${MEMLENS_BIN:-}" ]; then
      cli
      MEMLENS_BIN="$ROOT/target/debug/memlens"
    fi
    port=$(free_port)
    pid=$(serve_bg "$port")
    trap 'kill "$pid" 2>/dev/null || true' EXIT
    MEMLENS_WEB_URL="http://127.0.0.1:$port/" MEMLENS_BIN="$MEMLENS_BIN" node tests/web/measure.mjs
    ;;
  *) echo "usage: scripts/web.sh build [--release] | serve [PORT] | test | measure" >&2; exit 2 ;;
esac
