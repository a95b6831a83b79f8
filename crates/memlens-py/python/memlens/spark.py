"""MemLens over a Spark DataFrame of traces: one row per trace file or session, the tables
``memlens export-columns`` writes (columns in docs/columns.md) as DataFrames, for fleet questions
asked in Spark SQL.

    from memlens import spark as ms
    df = spark.read.format("binaryFile").load("s3://bucket/traces/")     # path, content, ...
    traces = ms.analyze(df, trace="content", name="path", model="gpt-4o")
    traces.groupBy("model").sum("cost_usd").show()
    ms.simulate(df, policies=["window", "value"], budgets=[4000, 8000], trace="content",
                name="path").groupBy("policy", "budget").sum("saved_tokens", "misses").show()

Each function is one ``mapInArrow``: every Arrow batch of (name, trace) rows goes to the Rust
engine as one IPC stream and its tables come back the same way, so no Python object is made per
row; aggregation is left to Spark. The executors need the ``memlens`` wheel (and pyarrow) in
their Python environment. Rows that cannot be read are left out of these tables; ``errors``
lists them with the reason.
"""

from __future__ import annotations

from typing import Any, Iterator, Optional, Sequence

import memlens

__all__ = ["analyze", "calls", "chunks", "simulate", "errors", "schema"]


def _table(
    df: Any,
    table: str,
    trace: str,
    name: Optional[str],
    options: dict,
) -> Any:
    from pyspark.sql import functions as F

    name_col = F.col(name).cast("string") if name else F.lit("trace").cast("string")
    rows = df.select(name_col.alias("name"), F.col(trace).alias("trace"))

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            # Only this table is made: the others would cost an analysis nobody reads.
            out = memlens.columns_of_batch(batch, tables=[table], **options)[table]
            yield from out.to_batches()

    return rows.mapInArrow(run, schema(table, **options))


def schema(table: str, **options: Any) -> Any:
    """The Spark schema (``StructType``) of one of the tables: ``traces``, ``calls``,
    ``chunks``, ``simulations`` or ``errors``."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import from_arrow_schema

    empty = pa.record_batch({"name": pa.array([], pa.string()), "trace": pa.array([], pa.binary())})
    if table == "simulations" and not options.get("policies"):
        # The table exists only when asked for; its schema does not depend on what was asked.
        options = {**options, "policies": ["window"], "budgets": [1]}
    known = ["traces", "calls", "chunks", "simulations", "errors"]
    if table not in known:
        raise ValueError(f"no table {table!r}: one of {known}")
    tables = memlens.columns_of_batch(empty, tables=[table], **options)
    return from_arrow_schema(tables[table].schema)


def _per_trace_table(table: str, doc: str) -> Any:
    """A function that gives ``table`` of a DataFrame of traces (``trace=`` the column with the
    file's bytes or text, ``name=`` the one naming it: its ``source``)."""

    def of(
        df: Any,
        *,
        trace: str = "trace",
        name: Optional[str] = "name",
        format: Optional[str] = None,
        model: Optional[str] = None,
    ) -> Any:
        return _table(df, table, trace, name, {"format": format, "model": model})

    of.__name__ = of.__qualname__ = {"traces": "analyze"}.get(table, table)
    of.__doc__ = doc
    return of


analyze = _per_trace_table(
    "traces",
    """One row per trace: calls, chunks, tokens by category, counted vs reported input, cost,
    peak context, orphaned tool pairs (``traces.parquet``'s columns). ``trace`` names the column
    with the file's bytes or text, ``name`` the one that names it (its ``source``).""",
)
calls = _per_trace_table(
    "calls",
    """One row per LLM call: counted and reported input, cache, cost, why the cached prefix
    ended (``calls.parquet``'s columns).""",
)
chunks = _per_trace_table(
    "chunks",
    """One row per chunk: category, tool, tokens, calls carried, attributed cost, value
    (``chunks.parquet``'s columns).""",
)
errors = _per_trace_table(
    "errors",
    """The rows that could not be read: ``source`` and ``error`` (what the importer said, with
    the line or byte offset).""",
)


def simulate(
    df: Any,
    *,
    policies: Sequence[memlens.Policy],
    budgets: Sequence[int],
    trace: str = "trace",
    name: Optional[str] = "name",
    format: Optional[str] = None,
    model: Optional[str] = None,
) -> Any:
    """One row per trace × policy × budget with the simulator's totals (sent, saved, cost,
    misses, violations, calls over budget; ``simulations.parquet``'s columns)."""
    if not policies or not budgets:
        raise ValueError("simulate needs at least one policy and one budget")
    options = {"format": format, "model": model, "policies": list(policies), "budgets": list(budgets)}
    return _table(df, "simulations", trace, name, options)
