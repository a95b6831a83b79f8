#!/usr/bin/env python3
"""Where the native live pool's time goes, from a `perf` profile of `memlens-bench --pool`:
samples split into contexts that rank by value, contexts that do not, adds and the rest, and
for one part the functions its samples were in (leaf) and under (inclusive). perf's software
clock works here, without hardware counters (BENCHMARKS.md, "Live pool"):

  MEMLENS_BENCH_TURNS=4000 perf record -o p.data -F 4000 --call-graph dwarf,16384 \\
      BIN --pool value 10000 tau-bench.json > /dev/null
  perf script -i p.data -F comm,tid,time,ip,sym > p.txt
  python3 scripts/profile/perf_turn_split.py p.txt [ctx-norank|ctx-rank|add|other]
"""
import collections
import sys


def samples(path):
    stack = []
    for line in open(path, encoding="utf-8", errors="replace"):
        line = line.rstrip("\n")
        if not line.strip():
            if stack:
                yield stack
            stack = []
        elif line[0] in " \t":
            parts = line.strip().split(" ", 1)
            stack.append(parts[1] if len(parts) > 1 else parts[0])
        else:
            stack = []
    if stack:
        yield stack


def part(stack):
    frames = " | ".join(stack)
    if "Pool::context" in frames:
        return "ctx-rank" if "by_value_per_token" in frames else "ctx-norank"
    return "add" if "Pool::add" in frames else "other"


def main():
    path, want = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "ctx-norank"
    parts, leaf, inclusive = collections.Counter(), collections.Counter(), collections.Counter()
    for stack in samples(path):
        p = part(stack)
        parts[p] += 1
        if p == want:
            leaf[stack[0][:100]] += 1
            for frame in {f[:100] for f in stack}:
                inclusive[frame] += 1
    print("samples:", dict(parts))
    print(f"{want}, leaf:")
    for frame, n in leaf.most_common(20):
        print(f"{n:7} {frame}")
    print(f"{want}, inclusive:")
    for frame, n in inclusive.most_common(40):
        print(f"{n:7} {frame}")


if __name__ == "__main__":
    main()
