#!/usr/bin/env python3
"""Module loops: no two files of a crate reach each other through `use` or a path, directly or
round a longer loop. A child naming its parent (`super::X`) is structure, not a loop, and is left out.

usage: scripts/module_loops.py [CRATE_SRC_DIR ...]   (default: crates/*/src and web/src)

Prints every loop found as `a.rs -> b.rs -> a.rs` and exits 1 when there is any (0 otherwise).
CI runs it (scripts/test.sh).
"""
import glob
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from size_check import code_only  # noqa: E402  (comments and literals blanked)

USE = re.compile(r"\buse\s+([^;]+);", re.S)
PATH = re.compile(r"\b((?:crate|super|self)(?:\s*::\s*(?:super|\w+))+)")


def module_of(src, path):
    """The module path of a file: `src/a/b.rs` and `src/a/b/mod.rs` are ('a', 'b')."""
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel[-1] in ("mod", "lib", "main"):
        rel = rel[:-1]
    return tuple(rel)


def expand(tree):
    """`a::{b, c::{d, e}}` as ['a::b', 'a::c::d', 'a::c::e']."""
    tree = re.sub(r"\s+", "", tree)
    i = tree.find("{")
    if i < 0:
        return [tree]
    depth, parts, start = 0, [], i + 1
    for j in range(i, len(tree)):
        if tree[j] == "{":
            depth += 1
        elif tree[j] == "}":
            depth -= 1
            if depth == 0:
                parts.append(tree[start:j])
                break
        elif tree[j] == "," and depth == 1:
            parts.append(tree[start:j])
            start = j + 1
    out = []
    for p in parts:
        if p:
            out += [tree[:i] + q for q in expand(p)]
    return out


def resolve(here, path, modules):
    """The module a path names, as the longest prefix that is a file of the crate, or None."""
    segs = [s for s in re.sub(r"\s+", "", path).split("::") if s]
    if not segs:
        return None
    if segs[0] == "crate":
        base, segs = [], segs[1:]
    else:
        base = list(here)
        if segs[0] == "self":
            segs = segs[1:]
        while segs and segs[0] == "super":
            if not base:
                return None
            base, segs = base[:-1], segs[1:]
    best = None
    for k in range(len(segs) + 1):
        cand = tuple(base + segs[:k])
        if cand in modules:
            best = cand
    return best


def edges(src):
    files = [f for f in glob.glob(os.path.join(src, "**", "*.rs"), recursive=True)
             if os.sep + "tests" + os.sep not in f and not f.endswith("tests.rs")]
    modules = {module_of(src, f): f for f in files}
    graph = {m: set() for m in modules}
    for m, f in modules.items():
        code = code_only(open(f, encoding="utf-8").read())
        paths = []
        for u in USE.finditer(code):
            paths += expand(u.group(1).split(" as ")[0])
        paths += [p.group(1) for p in PATH.finditer(USE.sub("", code))]
        for p in paths:
            target = resolve(m, p, modules)
            # A module naming itself or one of its ancestors is structure, not a loop.
            if target is not None and target != m[:len(target)]:
                graph[m].add(target)
    return modules, graph


def loops(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    dirs = sys.argv[1:] or sorted(glob.glob(os.path.join(root, "crates", "*", "src"))) + [
        os.path.join(root, "web", "src")]
    found = 0
    for src in dirs:
        modules, graph = edges(src)
        for comp in loops(graph):
            found += 1
            names = [os.path.relpath(modules[m], root) for m in comp]
            print("loop: " + " <-> ".join(names))
    if found:
        print(f"{found} module loop(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
