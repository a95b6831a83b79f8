#!/usr/bin/env python3
"""Size check: no file over 800 lines, no function over 120 lines, in every crate, the web app and
the Python package (tests and fixtures excepted: `tests.rs`, `tests/` folders).

usage: scripts/size_check.py [DIR ...] [--max-file 800] [--max-fn 120]
       (default: crates/*/src, web/src and crates/memlens-py/python)

Lines are physical lines. A Rust function runs from its `fn` line to the brace that closes its
body, found by counting braces outside string literals, char literals and comments (raw strings
`r"..."` / `r#"..."#` included); a Python function is its `def` statement (`ast`). Prints every
file and function over the limit, longest first, and exits 1 when there is any (0 otherwise).
CI runs it (scripts/test.sh).
"""
import argparse
import ast
import glob
import os
import re
import sys

FN = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+(\w+)")


def code_only(text):
    """`text` with comments and the contents of string and char literals blanked, newlines kept."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and (i == 0 or not text[i - 1].isalnum()):
            hashes = len(re.match(r"r(#*)", text[i:]).group(1))
            end = text.find('"' + "#" * hashes, i + 2 + hashes)
            j = n if end < 0 else end + 1 + hashes
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", text[i:j + 1]))
            i = j + 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 4]) or text.startswith("'\\u{", i):
            j = text.find("'", i + 1)
            out.append(" " * (j + 1 - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    """(name, first line, line count) of every function with a body in the file."""
    lines = code_only(open(path, encoding="utf-8").read()).split("\n")
    found = []
    for start, line in enumerate(lines):
        m = FN.match(line)
        if not m:
            continue
        depth, opened = 0, False
        for k in range(start, len(lines)):
            for ch in lines[k]:
                if ch == "{":
                    depth, opened = depth + 1, True
                elif ch == "}":
                    depth -= 1
                elif ch == ";" and not opened and depth == 0:
                    break  # a declaration without a body (trait method)
            else:
                if opened and depth == 0:
                    found.append((m.group(6), start + 1, k - start + 1))
                    break
                continue
            break
    return found


def python_functions(path):
    """(name, first line, line count) of every function in a Python file."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    return [
        (node.name, node.lineno, node.end_lineno - node.lineno + 1)
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]


def default_dirs():
    return sorted(glob.glob("crates/*/src")) + ["web/src", "crates/memlens-py/python"]


def sources(dirs):
    """Every .rs and .py file under `dirs`, tests excepted."""
    for d in dirs:
        for base, subdirs, files in os.walk(d):
            subdirs[:] = sorted(s for s in subdirs if s != "tests")
            for f in sorted(files):
                if f.endswith((".rs", ".py")) and f != "tests.rs":
                    yield os.path.join(base, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="*")
    ap.add_argument("--max-file", type=int, default=800)
    ap.add_argument("--max-fn", type=int, default=120)
    a = ap.parse_args()
    big_files, big_fns = [], []
    for path in sources(a.dirs or default_dirs()):
        n = sum(1 for _ in open(path, encoding="utf-8"))
        if n > a.max_file:
            big_files.append((n, path))
        found = python_functions(path) if path.endswith(".py") else functions(path)
        for name, line, length in found:
            if length > a.max_fn:
                big_fns.append((length, f"{path}:{line}", name))
    for n, path in sorted(big_files, reverse=True):
        print(f"file {path}: {n} lines (> {a.max_file})")
    for length, where, name in sorted(big_fns, reverse=True):
        print(f"fn {name} at {where}: {length} lines (> {a.max_fn})")
    print(f"{len(big_files)} file(s) over {a.max_file} lines, {len(big_fns)} function(s) over {a.max_fn} lines")
    sys.exit(1 if big_files or big_fns else 0)


if __name__ == "__main__":
    main()
