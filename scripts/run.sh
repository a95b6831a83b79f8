#!/usr/bin/env bash
# Sets everything up and runs MemLens' main job: builds the web analyzer (release) and serves it
# on 127.0.0.1, with the bundled sample trace loadable from the page ("Load sample", or the URL
# printed below). Everything runs in the browser: trace files are never uploaded.
#   scripts/run.sh                 # the web app on http://127.0.0.1:8080/ (PORT=N to change)
#   scripts/run.sh FILE... [ARGS]  # the command line instead: memlens inspect on your trace files
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh >/dev/null
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
if [ $# -gt 0 ]; then
  cargo build --release -p memlens-cli --locked --quiet
  exec target/release/memlens inspect "$@"
fi
port="${PORT:-8080}"
echo "== building the web analyzer (release; the first build takes a few minutes)"
echo "   (command line instead: scripts/run.sh TRACE.json, or after"
echo "    'cargo build --release -p memlens-cli': target/release/memlens compare TRACE.json --budget 4000)"
exec bash scripts/web.sh serve "$port"
