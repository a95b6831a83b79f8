#!/usr/bin/env python3
"""Where a Node pool turn's time goes, from a V8 CPU profile of `bench_npm_loop.mjs`.

Each sample is put in one part by the frames on its stack: a context that ranks by value
(`contextJson` with `by_value_per_token` under it), a context that does not, `addJson`, `prepare`,
or other (the garbage collector, the package's JS, the loop). Samples before the turn loop (the
10,000 messages added first and the first context) are left out: the loop starts at the first
`addJson` after the first `contextJson`. With a part named, its time is also split by leaf frame.
The wasm needs its function names: build the package with `MEMLENS_WASM_NAMES=1`.

  MEMLENS_WASM_NAMES=1 bash scripts/npm.sh build && cp -r packages/memlens /tmp/pkg-names
  TURNS=4000 node --cpu-prof --cpu-prof-dir=/tmp/prof --cpu-prof-interval 200 \\
      scripts/bench/bench_npm_loop.mjs /tmp/pkg-names:value
  python3 scripts/profile/cpuprofile_split.py /tmp/prof/CPU.*.cpuprofile [context|ranking|add|prepare|other]
"""

import collections
import json
import sys


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    profile = json.load(open(sys.argv[1], encoding="utf-8"))
    focus = sys.argv[2] if len(sys.argv) > 2 else None
    nodes = {n["id"]: n for n in profile["nodes"]}
    parent = {c: n["id"] for n in profile["nodes"] for c in n.get("children", [])}

    def stack(i):
        out = []
        while i is not None:
            frame = nodes[i]["callFrame"]
            out.append(frame["functionName"] or f"({frame['url'][-30:]})")
            i = parent.get(i)
        return out

    stacks = {}
    parts, leaves = collections.Counter(), collections.Counter()
    seen_context, in_loop = False, False
    for sample, delta in zip(profile["samples"], profile["timeDeltas"]):
        if sample not in stacks:
            stacks[sample] = stack(sample)
        frames = stacks[sample]
        joined = "|".join(frames)
        if not in_loop:
            seen_context = seen_context or "contextJson" in joined
            in_loop = seen_context and "addJson" in joined
            if not in_loop:
                continue
        if "contextJson" in joined:
            part = "ranking" if "by_value_per_token" in joined else "context"
        elif "addJson" in joined:
            part = "add"
        elif "prepare" in joined:
            part = "prepare"
        else:
            part = "other"
        parts[part] += delta
        if part == focus:
            leaves[frames[0]] += delta
    total = sum(parts.values()) or 1
    for part, us in parts.most_common():
        print(f"{part:10s} {us / 1000:9.1f} ms {100 * us / total:5.1f}%")
    for leaf, us in leaves.most_common(25):
        print(f"  {us / 1000:9.1f} ms  {leaf[:110]}")


if __name__ == "__main__":
    main()
