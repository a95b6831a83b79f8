"""A fleet report with MemLens on Spark: a folder of trace files in, the spend by category and
tool and what each policy would have saved (with the misses it would have caused) out, as
Parquet and as printed tables.

    python examples/spark/fleet_report.py TRACE_FOLDER OUT_FOLDER [--model gpt-4o]
        [--policies window,value,value-compress,oracle] [--budgets 2000,4000,8000]
        [--master local[2]]

Reads every file under TRACE_FOLDER (any format MemLens reads; one row per file) with Spark's
binaryFile source. On a cluster, the executors' Python needs the memlens wheel and pyarrow.
"""

import argparse
import os
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from memlens import spark as ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces")
    parser.add_argument("out")
    parser.add_argument("--model")
    parser.add_argument("--policies", default="window,value,value-compress,oracle")
    parser.add_argument("--budgets", default="2000,4000,8000")
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    # Local mode: the workers run this interpreter, which has memlens.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master(args.master).appName("memlens-fleet-report")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")

    files = (spark.read.format("binaryFile").option("recursiveFileLookup", "true")
             .load(args.traces).select("path", "content"))
    kw = {"trace": "content", "name": "path", "model": args.model}
    chunks = ms.chunks(files, **kw)
    sims = ms.simulate(files, policies=args.policies.split(","),
                       budgets=[int(b) for b in args.budgets.split(",")], **kw)

    by_category = (chunks.groupBy("category")
                   .agg(F.sum("token_calls").alias("input_tokens"), F.sum("cost_usd").alias("cost_usd"))
                   .orderBy(F.desc("input_tokens")))
    by_tool = (chunks.where(F.col("tool_name").isNotNull()).groupBy("tool_name")
               .agg(F.sum("token_calls").alias("input_tokens"), F.sum("cost_usd").alias("cost_usd"))
               .orderBy(F.desc("input_tokens")).limit(20))
    savings = (sims.groupBy("policy", "budget")
               .agg(F.count("*").alias("traces"), F.sum("full_input_tokens").alias("full_input_tokens"),
                    F.sum("saved_tokens").alias("saved_tokens"), F.sum("saved_usd").alias("saved_usd"),
                    F.sum("calls").alias("calls"), F.sum("calls_with_misses").alias("calls_with_misses"),
                    F.sum("violations").alias("violations"))
               .withColumn("saved_share", F.round(F.col("saved_tokens") / F.col("full_input_tokens"), 4))
               .withColumn("miss_rate", F.round(F.col("calls_with_misses") / F.col("calls"), 4))
               .orderBy("budget", F.desc("saved_share")))

    for name, frame in [("by_category", by_category), ("by_tool", by_tool), ("savings", savings)]:
        frame.write.mode("overwrite").parquet(os.path.join(args.out, name))
        print(f"\n{name} (written to {os.path.join(args.out, name)})")
        frame.show(50, truncate=False)
    errors = ms.errors(files, **kw)
    if errors.count():
        print("files that could not be read:")
        errors.show(truncate=False)
    spark.stop()


if __name__ == "__main__":
    main()
