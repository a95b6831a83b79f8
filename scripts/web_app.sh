#!/usr/bin/env bash
# The page's module, split: the views a first paint does not show (every one but the overview)
# are loaded from modules of their own once the page is usable, or when first opened (see
# web/src/app/split.rs). Run by Trunk as a pre-build hook (Trunk.toml); writes target/web-app/,
# which index.html copies to dist/app/.
#
#   cargo rustc --bin app -- -Clink-args=--emit-relocs   # the linker keeps its relocations
#   wasm-split-cli                                       # main module + one module per split view
#                                                        #   + chunks they share + __wasm_split.js
#   wasm-bindgen --target web                            # app.js, app_bg.wasm (the main module)
#   wasm-opt -Oz (release)                               # every module
#
# Trunk builds one module per binary and cannot split it (trunk-rs/trunk#1022), so the page is
# built here; the worker is still Trunk's. Only the final link gets --emit-relocs (`cargo rustc`
# passes it to the binary alone), so the dependencies are the ones the worker's build uses.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
profile="${TRUNK_PROFILE:-debug}"
target_dir="${CARGO_TARGET_DIR:-$ROOT/target}"
out="$ROOT/target/web-app"

args=(rustc -p memlens-web --bin app --target wasm32-unknown-unknown --locked)
[ "$profile" = release ] && args+=(--release)
cargo "${args[@]}" -- -Clink-args=--emit-relocs
wasm="$target_dir/wasm32-unknown-unknown/$profile/app.wasm"

# Cargo copies a binary to $wasm when it links it, not when it finds it up to date: a build of
# the app without --emit-relocs in between (`cargo build -p memlens-web --target wasm32...` in
# the same target dir) leaves its own copy there. Relink then.
has_relocs() {
  python3 - "$1" <<'PY'
import sys
data = open(sys.argv[1], 'rb').read()
def leb(i):
    n = shift = 0
    while True:
        b = data[i]; i += 1; n |= (b & 0x7f) << shift; shift += 7
        if b < 0x80: return n, i
i = 8
while i < len(data):
    kind = data[i]; size, i = leb(i + 1); end = i + size
    if kind == 0:
        length, j = leb(i)
        if data[j:j + length] == b'linking': sys.exit(0)
    i = end
sys.exit(1)
PY
}
if ! has_relocs "$wasm"; then
  touch web/src/bin/app.rs
  cargo "${args[@]}" -- -Clink-args=--emit-relocs
fi
rm -rf "$out"
mkdir -p "$out"
# The main module is written as app.wasm for wasm-bindgen, whose app.js the split modules'
# loader (__wasm_split.js) imports its memory and table from.
wasm-split-cli "$wasm" "$out" --out-name app --target web
# --keep-lld-exports: the split modules import the main module's function table, which
# wasm-bindgen would otherwise stop exporting.
wasm-bindgen "$out/app.wasm" --target web --out-dir "$out" --out-name app --no-typescript \
  --keep-lld-exports
rm "$out/app.wasm"

if [ "$profile" = release ]; then
  # The features rustc's wasm32 target emits; the flags Trunk's own wasm-opt step uses (-Oz).
  for f in "$out"/*.wasm; do
    wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
      --enable-mutable-globals --enable-reference-types --enable-multivalue "$f" -o "$f"
  done
fi
