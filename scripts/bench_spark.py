#!/usr/bin/env python3
"""memlens.spark's throughput in Spark's local mode (BENCHMARKS.md): traces per second per core
for analyze and for simulate (4 policies x 3 budgets) at several fleet sizes, 1 and 2 cores, and
the Arrow path against the per-row Python UDF a user would otherwise write (memlens.inspect on
each row, its figures returned as a struct), in the same run.

    target/py-venv/bin/python scripts/bench_spark.py [--sizes 1000,10000] [--cores 1,2]

The fleet is the tau-bench file's 200 trajectories, one row each, replicated with new names
(`source`) up to each size. Each measure forces the whole computation (`noop` sink) and is the
best of --repeat runs after one warm-up.
"""

import argparse
import json
import os
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
TAU = ROOT.parent / "shared" / "data" / "traces" / "tau-bench-gpt-4o-airline.json"
POLICIES = ["window", "value", "value-compress", "oracle"]
BUDGETS = [2000, 4000, 8000]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--cores", default="1,2")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--udf-size", type=int, default=1000, help="fleet size for the per-row UDF")
    args = ap.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession, functions as F, types as T
    import memlens
    from memlens import spark as ms

    base_rows = [(f"tau-{i:03}", json.dumps([r]).encode())
                 for i, r in enumerate(json.loads(TAU.read_bytes()))]
    print(f"| cores | traces | analyze: s | traces/s/core | simulate (4x3): s | traces/s/core |")
    print("|---|---|---|---|---|---|")
    udf_rows = []
    for cores in [int(c) for c in args.cores.split(",")]:
        spark = (SparkSession.builder.master(f"local[{cores}]").appName("memlens-bench")
                 .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                 .config("spark.sql.shuffle.partitions", str(cores)).getOrCreate())
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
            for _ in range(args.repeat + 1):
                t = time.perf_counter()
                frame.write.format("noop").mode("overwrite").save()
                times.append(time.perf_counter() - t)
            return min(times[1:])

        for n in [int(s) for s in args.sizes.split(",")]:
            df = fleet(n)
            df.count()
            a = best(ms.analyze(df, model="gpt-4o"))
            s = best(ms.simulate(df, policies=POLICIES, budgets=BUDGETS, model="gpt-4o"))
            print(f"| {cores} | {n:,} | {a:.1f} | {n / a / cores:,.0f} | {s:.1f} | {n / s / cores:,.0f} |")
            if n == args.udf_size:
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
                u = best(naive)
                udf_rows.append((cores, n, a, u))
        df = None
        spark.stop()
    if udf_rows:
        print("\n| cores | traces | analyze, Arrow (memlens.spark) | per-row Python UDF (memlens.inspect) | ratio |")
        print("|---|---|---|---|---|")
        for cores, n, a, u in udf_rows:
            print(f"| {cores} | {n:,} | {a:.2f} s | {u:.2f} s | {u / a:.1f}x |")


if __name__ == "__main__":
    main()
