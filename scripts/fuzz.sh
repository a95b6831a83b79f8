#!/usr/bin/env bash
# Coverage-guided fuzzing (cargo-fuzz / libFuzzer on stable Rust, no sanitizer: the code is safe
# Rust, `unsafe_code = "forbid"`; libFuzzer's coverage instrumentation is stable rustc flags).
#   scripts/fuzz.sh build                 # instrumented release build of every target
#   scripts/fuzz.sh smoke [SECONDS]       # CI: every target replays its corpus, then fuzzes SECONDS (10)
#   scripts/fuzz.sh run TARGET [ARGS...]  # a long run, libFuzzer ARGS (e.g. -runs=10000000 -jobs=2)
#   scripts/fuzz.sh cmin TARGET           # minimize TARGET's corpus in place
#   scripts/fuzz.sh list                  # the targets
# Corpora live in fuzz/corpus/<target>/ (seeds from the fixtures: scripts/fuzz_seeds.py); a crash
# lands in fuzz/artifacts/<target>/ and becomes a regression test (RELIABILITY.md says how).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
command -v cargo-fuzz >/dev/null || { echo "fuzz.sh: cargo-fuzz not found: run scripts/bootstrap.sh" >&2; exit 2; }
TARGETS=(import native_jsonl policy live_message pool_ops)
# Inputs the fuzzer makes stay small (the seeds may be larger): fast runs, real coverage.
MAX_LEN=4096
fuzz() { (cd fuzz && cargo fuzz "$@"); }

cmd="${1:-smoke}"
shift || true
case "$cmd" in
  list) printf '%s\n' "${TARGETS[@]}" ;;
  build) fuzz build --sanitizer none ;;
  smoke)
    secs="${1:-10}"
    fuzz build --sanitizer none
    for t in "${TARGETS[@]}"; do
      mkdir -p "$PWD/fuzz/corpus/$t"
      # The corpus is replayed in full first (libFuzzer's startup), then new inputs for $secs s.
      # A scratch corpus folder takes what the smoke finds: the committed corpus is unchanged.
      scratch=$(mktemp -d)
      log=$(mktemp)
      if ! fuzz run --sanitizer none "$t" "$scratch" "$PWD/fuzz/corpus/$t" -- \
          -max_len=$MAX_LEN -max_total_time="$secs" -print_final_stats=1 >"$log" 2>&1; then
        tail -n 40 "$log" >&2
        echo "fuzz.sh: $t failed (the input is in fuzz/artifacts/$t/)" >&2
        exit 1
      fi
      runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
      cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
      echo "fuzz smoke: $t: $runs runs, $cov, no crash"
      rm -rf "$scratch" "$log"
    done
    ;;
  run)
    t="${1:?usage: scripts/fuzz.sh run TARGET [libFuzzer args]}"
    shift
    mkdir -p "$PWD/fuzz/corpus/$t"
    fuzz run --sanitizer none "$t" "$PWD/fuzz/corpus/$t" -- -max_len=$MAX_LEN -print_final_stats=1 "$@"
    ;;
  cmin)
    t="${1:?usage: scripts/fuzz.sh cmin TARGET}"
    fuzz cmin --sanitizer none "$t" "$PWD/fuzz/corpus/$t" -- -max_len=$MAX_LEN
    ;;
  *) echo "usage: scripts/fuzz.sh build|smoke [SECONDS]|run TARGET [ARGS]|cmin TARGET|list" >&2; exit 2 ;;
esac
