#!/usr/bin/env bash
# Coverage-guided fuzzing (cargo-fuzz / libFuzzer on stable Rust, no sanitizer: the code is safe
# Rust, `unsafe_code = "forbid"`; libFuzzer's coverage instrumentation is stable rustc flags).
#   scripts/fuzz.sh build                 # instrumented release build of every target
#   scripts/fuzz.sh smoke [SECONDS]       # CI: every target replays its corpus, then fuzzes SECONDS (10)
#   scripts/fuzz.sh run TARGET [--no-trace-compares] [ARGS...]
#                                         # a long run, libFuzzer ARGS (e.g. -runs=10000000 -jobs=2);
#                                         # --no-trace-compares: a build without comparison tracing
#                                         # (2.35x the executions per second of pool_ops, coverage
#                                         # still guided by edges; its own target dir)
#   scripts/fuzz.sh cmin TARGET           # minimize TARGET's working corpus
#   scripts/fuzz.sh keep TARGET [KB]      # the smallest inputs of the minimized working corpus,
#                                         # up to KB (128) and 300 files, into the committed corpus
#   scripts/fuzz.sh list                  # the targets
# The committed corpus is fuzz/corpus/<target>/: seeds from the fixtures (scripts/fuzz_seeds.py)
# and a small part of what long runs found (`keep`). Long runs grow a working corpus in
# target/fuzz-corpus/<target>/ (megabytes: not committed). A crash lands in
# fuzz/artifacts/<target>/ and becomes a regression test (RELIABILITY.md says how).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
command -v cargo-fuzz >/dev/null || { echo "fuzz.sh: cargo-fuzz not found: run scripts/bootstrap.sh" >&2; exit 2; }
TARGETS=(import native_jsonl policy live_message pool_ops)
# Inputs the fuzzer makes stay small (the seeds may be larger): fast runs, real coverage.
MAX_LEN=4096
WORK="$PWD/target/fuzz-corpus"
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
      # A fixed seed: the inputs the smoke tries come in the same order every run (for the same
      # code and corpus), so a red smoke reproduces rather than depending on luck.
      mkdir -p "$PWD/fuzz/corpus/$t"
      # The corpus is replayed in full first (libFuzzer's startup), then new inputs for $secs s.
      # A scratch corpus folder takes what the smoke finds: the committed corpus is unchanged.
      scratch=$(mktemp -d)
      log=$(mktemp)
      if ! fuzz run --sanitizer none "$t" "$scratch" "$PWD/fuzz/corpus/$t" -- \
          -seed=1 -max_len=$MAX_LEN -max_total_time="$secs" -print_final_stats=1 >"$log" 2>&1; then
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
    build=(--sanitizer none)
    if [ "${1:-}" = --no-trace-compares ]; then
      build+=(--no-trace-compares --target-dir "$PWD/target/fuzz-notc")
      shift
    fi
    mkdir -p "$WORK/$t"
    # New inputs go to the working corpus; the committed one is read as well.
    fuzz run "${build[@]}" "$t" "$WORK/$t" "$PWD/fuzz/corpus/$t" -- \
      -max_len=$MAX_LEN -print_final_stats=1 "$@"
    ;;
  cmin)
    t="${1:?usage: scripts/fuzz.sh cmin TARGET}"
    fuzz cmin --sanitizer none "$t" "$WORK/$t" -- -max_len=$MAX_LEN
    ;;
  keep)
    t="${1:?usage: scripts/fuzz.sh keep TARGET [KB]}"
    python3 - "$WORK/$t" "fuzz/corpus/$t" "${2:-128}" <<'PY'
import pathlib, shutil, sys
work, kept, budget = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), int(sys.argv[3]) * 1024
for old in kept.iterdir():
    if not old.name.startswith("seed-"):
        old.unlink()
used, kept_files = 0, 0
for f in sorted(work.iterdir(), key=lambda p: (p.stat().st_size, p.name)):
    if used + f.stat().st_size > budget or kept_files >= 300:
        break
    shutil.copyfile(f, kept / f.name)
    used += f.stat().st_size
    kept_files += 1
print(f"{kept}: {sum(1 for _ in kept.iterdir())} inputs")
PY
    ;;
  *) echo "usage: scripts/fuzz.sh build|smoke [SECONDS]|run TARGET [ARGS]|cmin TARGET|keep TARGET [KB]|list" >&2; exit 2 ;;
esac
