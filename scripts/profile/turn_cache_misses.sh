#!/usr/bin/env bash
# Per-turn instructions and simulated L1 data-cache misses inside one function of the live pool
# (default `Pool::context`), at 10,000 tau-bench messages: callgrind's cache simulation with
# `--toggle-collect`, 201 turns minus 1, divided by 200, so the 10,000 adds cancel out.
# Deterministic, unlike wall time on a shared machine: how two builds' memory traffic is compared
# (BENCHMARKS.md, "Live pool"). `LL=bytes,ways,line` sets the simulated last-level cache
# (callgrind's default is the host's; LL=2097152,16,64 models this machine's 2 MiB second level per
# core), and its misses are reported too. Build with debug line tables so the function name is
# found:
#   CARGO_PROFILE_RELEASE_DEBUG=line-tables-only cargo build --release -p memlens-bench
#   scripts/profile/turn_cache_misses.sh target/release/memlens-bench [policy] [function] [tau-bench.json]
set -euo pipefail
bin="$1"
policy="${2:-value}"
function="${3:-memlens_pool::pool::Pool::context}"
data="${4:-$(dirname "$0")/../../../shared/data/traces/tau-bench-gpt-4o-airline.json}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
totals() {
  MEMLENS_BENCH_TURNS="$1" valgrind --tool=callgrind --cache-sim=yes ${LL:+--LL=$LL} \
    --callgrind-out-file="$out/cg.$1" --toggle-collect="$function" \
    "$bin" --pool "$policy" 10000 "$data" >/dev/null 2>&1
  grep -E "^(events|summary|totals):" "$out/cg.$1" | head -2
}
python3 - "$(totals 1)" "$(totals 201)" "$policy" "$function" <<'PY'
import sys
def parse(text):
    events = totals = None
    for line in text.splitlines():
        key, values = line.split(":", 1)
        if key == "events":
            events = values.split()
        else:
            totals = [int(v) for v in values.split()]
    return dict(zip(events, totals))
one, many = parse(sys.argv[1]), parse(sys.argv[2])
per = {k: (many[k] - one[k]) / 200 for k in ("Ir", "Dr", "Dw", "D1mr", "D1mw", "DLmr", "DLmw")}
print(f"{sys.argv[3]} {sys.argv[4]} per turn: " + ", ".join(f"{k} {v:,.0f}" for k, v in per.items()))
PY
