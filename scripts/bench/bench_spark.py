#!/usr/bin/env python3
"""memlens.spark's throughput in Spark's local mode (BENCHMARKS.md, "Fleet (Spark)"): traces per second per core
for analyze and for simulate (4 policies x 3 budgets) at several fleet sizes, 1 and 2 cores, and
the Arrow path against the per-row Python UDF a user would otherwise write (memlens.inspect on
each row, its figures returned as a struct), in the same run.

    target/py-venv/bin/python scripts/bench/bench_spark.py [--sizes 1000,10000,100000]
        [--simulate-sizes 1000,10000] [--cores 1,2] [--repeat 1] [--udf-size 10000]

The fleet is the tau-bench file's 200 trajectories, one row each, replicated with new names
(`source`) up to each size. Each measure forces the whole computation (`noop` sink) and is the
best of --repeat runs, after one warm-up per Spark session; peak memory of the Python workers
and of the JVM is sampled from /proc during each measure.
"""

import argparse
import json
import os
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
TAU = ROOT.parent / "shared" / "data" / "traces" / "tau-bench-gpt-4o-airline.json"
POLICIES = ["window", "value", "value-compress", "oracle"]
BUDGETS = [2000, 4000, 8000]


class PeakMemory:
    """Peak resident memory of Spark's processes, sampled from /proc while a measure runs: the
    largest single Python worker (where memlens runs: the executor's Python memory) and the JVM."""

    def __init__(self):
        import threading
        self.worker = self.jvm = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _run(self):
        while not self._stop.wait(0.1):
            for pid in os.listdir("/proc"):
                if not pid.isdigit():
                    continue
                try:
                    cmd = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes()
                    status = pathlib.Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    continue
                rss = next((int(l.split()[1]) for l in status.splitlines() if l.startswith("VmRSS:")), 0)
                if b"pyspark.daemon" in cmd or b"pyspark.worker" in cmd:
                    self.worker = max(self.worker, rss)
                elif b"org.apache.spark" in cmd:
                    self.jvm = max(self.jvm, rss)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000", help="fleet sizes for analyze")
    ap.add_argument("--simulate-sizes", default=None, help="fleet sizes for simulate (default: --sizes)")
    ap.add_argument("--cores", default="1,2")
    ap.add_argument("--repeat", type=int, default=1, help="runs per measure (the best is kept)")
    ap.add_argument("--udf-size", type=int, default=10000, help="fleet size for the per-row UDF")
    args = ap.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession, functions as F, types as T
    import memlens
    from memlens import spark as ms

    base_rows = [(f"tau-{i:03}", json.dumps([r]).encode())
                 for i, r in enumerate(json.loads(TAU.read_bytes()))]
    sizes = [int(s) for s in args.sizes.split(",") if s]
    sim_sizes = [int(s) for s in (args.sizes if args.simulate_sizes is None else args.simulate_sizes).split(",") if s]
    results = []
    udf_rows = []
    for cores in [int(c) for c in args.cores.split(",")]:
        spark = (SparkSession.builder.master(f"local[{cores}]").appName("memlens-bench")
                 .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                 .config("spark.sql.shuffle.partitions", str(cores))
                 # The replicated fleet is cached: 100k tau-bench rows are ~2.5 GB.
                 .config("spark.driver.memory", "8g").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        base = spark.createDataFrame(base_rows, "name string, trace binary").cache()
        base.count()

        def fleet(n):
            copies = spark.range((n + len(base_rows) - 1) // len(base_rows)).withColumnRenamed("id", "copy")
            return (base.crossJoin(copies)
                    .select(F.concat_ws("-", "name", F.col("copy").cast("string")).alias("name"), "trace")
                    .limit(n).repartition(cores * 4).cache())

        def best(frame):
            times = []
            with PeakMemory() as memory:
                for _ in range(args.repeat):
                    t = time.perf_counter()
                    frame.write.format("noop").mode("overwrite").save()
                    times.append(time.perf_counter() - t)
            return min(times), memory

        # One warm-up per session (workers started, vocabularies loaded), not per measure.
        warm = fleet(len(base_rows))
        best(ms.analyze(warm, model="gpt-4o"))
        best(ms.simulate(warm, policies=POLICIES, budgets=BUDGETS, model="gpt-4o"))
        for n in sorted(set(sizes) | set(sim_sizes)):
            df = fleet(n)
            df.count()
            a = s = None
            if n in sizes:
                a, a_mem = best(ms.analyze(df, model="gpt-4o"))
                results.append((cores, n, "analyze", a, a_mem))
            if n in sim_sizes:
                s, s_mem = best(ms.simulate(df, policies=POLICIES, budgets=BUDGETS, model="gpt-4o"))
                results.append((cores, n, "simulate (4 policies x 3 budgets)", s, s_mem))
            print(f"cores {cores} traces {n}: analyze {a} s, simulate {s} s", file=sys.stderr)
            if n == args.udf_size and a is not None:
                fields = ms.schema("traces")
                keep = [f.name for f in fields.fields]

                def per_row(name, trace):
                    out = memlens.inspect(trace, name=name, model="gpt-4o")["traces"][0]
                    row = dict(out, source=name, trace_id=out["id"], total_tokens=out["tokens"]["total"])
                    for c in keep:
                        if c.startswith("tokens_") and c != "tokens_estimated":
                            row[c] = out["tokens"]["by_category"].get(c[len("tokens_"):], 0)
                    return tuple(row.get(c) for c in keep)

                naive = df.select(F.udf(per_row, fields)("name", "trace").alias("t")).select("t.*")
                u, _ = best(naive)
                udf_rows.append((cores, n, a, u))
            df.unpersist()
        spark.stop()
    print("| cores | traces | job | seconds | traces/s/core | peak Python worker RSS | peak JVM RSS |")
    print("|---|---|---|---|---|---|---|")
    for cores, n, job, t, mem in results:
        print(f"| {cores} | {n:,} | {job} | {t:.1f} | {n / t / cores:,.0f} | "
              f"{mem.worker / 1024:,.0f} MB | {mem.jvm / 1024:,.0f} MB |")
    speedups = {(n, job): t for cores, n, job, t, _ in results if cores == 1}
    print("\n| traces | job | speed-up 1 -> 2 cores |")
    print("|---|---|---|")
    for cores, n, job, t, _ in results:
        if cores == 2 and (n, job) in speedups:
            print(f"| {n:,} | {job} | {speedups[(n, job)] / t:.2f}x |")
    if udf_rows:
        print("\n| cores | traces | analyze, Arrow (memlens.spark) | per-row Python UDF (memlens.inspect) | ratio |")
        print("|---|---|---|---|---|")
        for cores, n, a, u in udf_rows:
            print(f"| {cores} | {n:,} | {a:.2f} s | {u:.2f} s | {u / a:.1f}x |")


if __name__ == "__main__":
    main()
