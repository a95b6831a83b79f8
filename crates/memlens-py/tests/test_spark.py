"""memlens.spark in Spark's local mode (local[2], PySpark from the registry, the machine's Java):
the tau-bench file split into one row per trajectory plus the LoCoMo file give, table for table,
exactly what `memlens export-columns` writes for the same files (whose figures the CLI's tests
check against `memlens inspect --json` and `memlens simulate --json`)."""

import json
import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is in requirements-test.txt")
from memlens import spark as ms  # noqa: E402

POLICIES = ["window", "value"]
BUDGETS = [2000, 4000]
KEYS = {
    "traces": ["source", "trace_id"],
    "calls": ["source", "trace_id", "call"],
    "chunks": ["source", "trace_id", "chunk"],
    "simulations": ["source", "trace_id", "policy", "budget"],
}


@pytest.fixture(scope="module")
def session():
    # The Python workers must import memlens: the interpreter running the tests has it.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("memlens-tests")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    yield spark
    spark.stop()


@pytest.fixture(scope="module")
def files(tau, locomo, tmp_path_factory):
    """Each tau-bench trajectory as a file of its own, and the LoCoMo file."""
    folder = tmp_path_factory.mktemp("fleet")
    paths = []
    for i, record in enumerate(json.loads(tau.read_bytes())):
        path = folder / f"tau-{i:03}.json"
        path.write_text(json.dumps([record]))
        paths.append(path)
    return paths + [locomo]


def sorted_rows(table, keys):
    return table.sort_by([(k, "ascending") for k in keys]).to_pylist()


def test_the_fleet_tables_equal_the_cli_on_the_same_files(session, files, cli, tmp_path):
    out = tmp_path / "cli"
    subprocess.run([str(cli), "export-columns", "-o", str(out), "--model", "gpt-4o",
                    "--policies", ",".join(POLICIES), "--budgets", ",".join(map(str, BUDGETS)),
                    *map(str, files)], check=True, capture_output=True)
    rows = [(str(p), p.read_bytes()) for p in files]
    df = session.createDataFrame(rows, "name string, trace binary").repartition(2)
    got = {
        "traces": ms.analyze(df, model="gpt-4o"),
        "calls": ms.calls(df, model="gpt-4o"),
        "chunks": ms.chunks(df, model="gpt-4o"),
        "simulations": ms.simulate(df, policies=POLICIES, budgets=BUDGETS, model="gpt-4o"),
    }
    for name, frame in got.items():
        want = pq.read_table(out / f"{name}.parquet")
        table = frame.toArrow()
        assert table.column_names == want.column_names, name
        assert sorted_rows(table, KEYS[name]) == sorted_rows(want, KEYS[name]), name
    assert got["traces"].count() == 200 + 10
    assert ms.errors(df).count() == 0
    # Aggregation is Spark's: input spend by category over the fleet equals the CLI's sum.
    total = got["chunks"].groupBy("category").sum("cost_usd").collect()
    want = pq.read_table(out / "chunks.parquet").to_pandas().groupby("category")["cost_usd"].sum()
    assert {r["category"]: round(r["sum(cost_usd)"], 9) for r in total} == {
        k: round(v, 9) for k, v in want.items()}


def test_unreadable_rows_are_listed_with_the_reason(session, tau):
    df = session.createDataFrame(
        [("good.json", tau.read_bytes()), ("bad.json", b"{not json")], "name string, trace binary")
    assert ms.analyze(df, model="gpt-4o").count() == 200
    errors = ms.errors(df).collect()
    assert [e["source"] for e in errors] == ["bad.json"]
    assert "bad.json" in errors[0]["error"]
