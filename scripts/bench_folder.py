#!/usr/bin/env python3
"""Peak memory and time of `memlens inspect` on a Claude Code project folder.

usage: scripts/bench_folder.py MEMLENS_BIN [SIZE_MB] [RUNS]     (run via scripts/bench.sh)

Writes a synthetic project folder of SIZE_MB (default 200) with scripts/gen_claude_code_folder.py
into target/bench/ (kept between runs: same seed, same bytes), then runs
`MEMLENS_BIN inspect --json FOLDER` RUNS times (default 3), each in a fresh process, and reports
the median wall time, MB/s, and the peak resident memory of the process (its rusage maxrss, read
in a fresh Python parent that has no other child) as a multiple of the folder's size.
"""
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def folder_bytes(path):
    total = 0
    for base, _, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(base, f)) for f in files)
    return total


def one_run(binary, folder):
    """Wall time and peak RSS (bytes) of one `inspect --json` in a child of a fresh Python."""
    code = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)\n"
        "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, binary, "inspect", "--json", folder],
        check=True, capture_output=True, text=True,
    ).stdout.split()
    return float(out[0]), int(out[1]) * 1024


def main():
    binary = sys.argv[1]
    size_mb = float(sys.argv[2]) if len(sys.argv) > 2 else 200
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    folder = os.path.join(ROOT, "target", "bench", f"claude-code-{size_mb:g}mb")
    if not os.path.isdir(folder) or not os.listdir(folder):
        subprocess.run(
            [sys.executable, os.path.join(ROOT, "scripts", "gen_claude_code_folder.py"), folder,
             "--size-mb", str(size_mb)],
            check=True,
        )
    size = folder_bytes(folder)
    files = sum(len(f) for _, _, f in os.walk(folder))
    results = [one_run(binary, folder) for _ in range(runs)]
    wall = statistics.median(r[0] for r in results)
    peak = max(r[1] for r in results)
    print(json.dumps({
        "folder": os.path.relpath(folder, ROOT),
        "files": files,
        "bytes": size,
        "runs": runs,
        "median_s": round(wall, 3),
        "mb_per_s": round(size / 1e6 / wall, 1),
        "peak_rss_bytes": peak,
        "peak_over_size": round(peak / size, 2),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
    }))


if __name__ == "__main__":
    main()
