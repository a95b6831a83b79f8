#!/usr/bin/env python3
"""Peak memory and time of `memlens inspect` on a Claude Code project folder.

usage: scripts/bench/bench_folder.py MEMLENS_BIN [SIZE_MB] [RUNS] [CCUSAGE_BIN]   (run via scripts/bench/bench.sh)

Writes a synthetic project folder of SIZE_MB (default 200) with
scripts/bench/gen_claude_code_folder.py into target/bench/ (kept between runs: same seed, same bytes), then runs
`MEMLENS_BIN inspect --json FOLDER` RUNS times (default 3), each in a fresh process, and reports
the median wall time, MB/s, and the peak resident memory of the process (its rusage maxrss, read
in a fresh Python parent that has no other child) as a multiple of the folder's size.

With CCUSAGE_BIN (ccusage, the session-usage tool Claude Code users run; `ccusage session --json
--offline` with CLAUDE_CONFIG_DIR pointing at the folder) the same is measured for it in the same
run, and both tools' totals of reported input tokens (uncached + cache writes + cache reads) are
printed side by side.
"""
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def folder_bytes(path):
    total = 0
    for base, _, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(base, f)) for f in files)
    return total


def one_run(command, env=None, output=None):
    """Wall time and peak RSS (bytes) of one run of `command`, a child of a fresh Python; its
    stdout goes to `output` (a path) or nowhere."""
    code = (
        "import resource, subprocess, sys, time\n"
        "out = open(sys.argv[1], 'w') if sys.argv[1] else subprocess.DEVNULL\n"
        "t = time.perf_counter()\n"
        "subprocess.run(sys.argv[2:], stdout=out, check=True)\n"
        "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, output or ""] + command,
        check=True, capture_output=True, text=True, env=env,
    ).stdout.split()
    return float(out[0]), int(out[1]) * 1024


def summarize(results, size):
    wall = statistics.median(r[0] for r in results)
    peak = max(r[1] for r in results)
    return {
        "median_s": round(wall, 3),
        "mb_per_s": round(size / 1e6 / wall, 1),
        "peak_rss_bytes": peak,
        "peak_over_size": round(peak / size, 2),
    }


def main():
    binary = sys.argv[1]
    size_mb = float(sys.argv[2]) if len(sys.argv) > 2 else 200
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    folder = os.path.join(ROOT, "target", "bench", f"claude-code-{size_mb:g}mb")
    if not os.path.isdir(folder) or not os.listdir(folder):
        subprocess.run(
            [sys.executable, os.path.join(ROOT, "scripts", "bench", "gen_claude_code_folder.py"),
             folder, "--size-mb", str(size_mb)],
            check=True,
        )
    size = folder_bytes(folder)
    files = sum(len(f) for _, _, f in os.walk(folder))
    bench = os.path.join(ROOT, "target", "bench")
    ours_json = os.path.join(bench, "folder-memlens.json")
    memlens = [one_run([binary, "inspect", "--json", folder], output=ours_json) for _ in range(runs)]
    report = {
        "folder": os.path.relpath(folder, ROOT),
        "files": files,
        "bytes": size,
        "runs": runs,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "memlens": summarize(memlens, size),
    }
    ours = json.load(open(ours_json))
    report["memlens"]["reported_input_tokens"] = sum(
        t.get("reported_input_tokens") or 0 for t in ours["traces"])
    report["memlens"]["errors"] = len(ours["errors"])
    report["memlens"]["warnings"] = ours["warning_count"]
    if len(sys.argv) > 4:
        # ccusage reads CLAUDE_CONFIG_DIR/projects/<project>/: point one at the folder.
        config = os.path.join(bench, "ccusage-config")
        os.makedirs(os.path.join(config, "projects"), exist_ok=True)
        link = os.path.join(config, "projects", os.path.basename(folder))
        if not os.path.islink(link):
            os.symlink(os.path.abspath(folder), link)
        env = dict(os.environ, CLAUDE_CONFIG_DIR=config)
        theirs_json = os.path.join(bench, "folder-ccusage.json")
        runs_cc = [one_run([sys.argv[4], "session", "--json", "--offline"], env, theirs_json)
                   for _ in range(runs)]
        report["ccusage"] = summarize(runs_cc, size)
        sessions = json.load(open(theirs_json))["sessions"]
        report["ccusage"]["reported_input_tokens"] = sum(
            s["inputTokens"] + s["cacheCreationTokens"] + s["cacheReadTokens"] for s in sessions)
        report["time_ratio_memlens_over_ccusage"] = round(
            report["memlens"]["median_s"] / report["ccusage"]["median_s"], 2)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
