"""The columnar tables from Python (memlens.columns): the same tables `memlens export-columns`
writes as Parquet, equal column for column, on the real tau-bench and LoCoMo files."""

import subprocess

import memlens
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

POLICIES = ["window", "value", "oracle"]
BUDGETS = [2000, 4000]


def exported(cli, tmp_path, files, *args):
    out = tmp_path / "columns"
    subprocess.run([str(cli), "export-columns", "-o", str(out), *map(str, args), *map(str, files)],
                   check=True, capture_output=True)
    return {p.stem: pq.read_table(p) for p in out.glob("*.parquet")}


def test_the_tables_equal_the_cli_parquet_files(cli, tau, locomo, tmp_path):
    files = [tau, locomo]
    got = memlens.columns(files, model="gpt-4o", policies=POLICIES, budgets=BUDGETS)
    want = exported(cli, tmp_path, files, "--model", "gpt-4o",
                    "--policies", ",".join(POLICIES), "--budgets", ",".join(map(str, BUDGETS)))
    assert sorted(want) == ["calls", "chunks", "simulations", "traces"]
    for name, table in want.items():
        assert got[name].schema == table.schema, name
        assert got[name].equals(table), name
    assert got["traces"].num_rows == 200 + 10
    assert got["simulations"].num_rows == got["traces"].num_rows * len(POLICIES) * len(BUDGETS)
    assert got["errors"].num_rows == 0


def test_a_batch_with_unreadable_rows_keeps_the_rest_and_names_them(tau):
    batch = pa.record_batch({
        "name": pa.array(["tau.json", "garbage.bin", "empty.json"]),
        "trace": pa.array([tau.read_bytes(), b"\x00\x01not a trace", b""], pa.binary()),
    })
    got = memlens.columns_of_batch(batch, model="gpt-4o")
    assert got["traces"].num_rows == 200
    assert set(got["traces"].column("source").to_pylist()) == {"tau.json"}
    errors = got["errors"].to_pylist()
    assert [e["source"] for e in errors] == ["garbage.bin", "empty.json"]
    assert all(e["source"] in e["error"] for e in errors), errors


def test_a_table_asked_for_alone_is_the_same_table(tau):
    batch = pa.record_batch({"name": pa.array(["tau.json"]), "trace": pa.array([tau.read_bytes()])})
    every = memlens.columns_of_batch(batch, model="gpt-4o", policies=["window"], budgets=[4000])
    for name in ["traces", "calls", "chunks", "simulations"]:
        one = memlens.columns_of_batch(
            batch, model="gpt-4o", policies=["window"], budgets=[4000], tables=[name]
        )
        assert sorted(one) == sorted([name, "errors"])
        assert one[name].equals(every[name]), name
    with pytest.raises(ValueError, match="no table `sessions`"):
        memlens.columns_of_batch(batch, tables=["sessions"])


def test_a_batch_without_the_columns_is_a_value_error():
    with pytest.raises(ValueError, match="no `trace` column"):
        memlens.columns_of_batch(pa.record_batch({"name": pa.array(["x"])}))
    with pytest.raises(ValueError, match="2 names for 1 traces"):
        memlens.columns([b"{}"], names=["a", "b"])
