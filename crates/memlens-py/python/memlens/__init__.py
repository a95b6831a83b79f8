"""MemLens for Python: see and manage what your LLM agent re-sends every call.

The live memory pool keeps your agent's messages under a token budget with a value-aware policy
(the same Rust engine as the MemLens CLI, web app and npm package), and returns your own message
objects to send::

    from memlens import MemoryPool

    pool = MemoryPool(model="gpt-4o", budget=8000, policy="value")
    pool.add({"role": "system", "content": "You are a support agent."})
    pool.add({"role": "user", "content": "Change my flight to Friday."})
    messages = pool.context()

Trace tools read every format the CLI reads: ``inspect`` and ``simulate`` return what
``memlens inspect --json`` and ``memlens simulate --json`` print, as plain dicts.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import time
from typing import Any, Awaitable, Callable, Dict, List, Mapping, Optional, Sequence, Union

from . import _memlens

__all__ = [
    "MemoryPool",
    "analyze_trace",
    "builtin_policies",
    "columns",
    "columns_of_batch",
    "count_tokens",
    "import_trace",
    "inspect",
    "policy_config",
    "simulate",
]

Message = Dict[str, Any]
Policy = Union[str, Mapping[str, Any], None]
TraceInput = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview]
Summarizer = Callable[[List[Message], int], Awaitable[str]]
Scorer = Callable[[Message, int, int], Optional[float]]
Timestamp = Union[datetime.datetime, float, int, str]

_EXTRA = 0x80000000
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def _snake(d: Mapping[str, Any]) -> Dict[str, Any]:
    """Top-level keys in Python spelling (the engine names them as the npm package does)."""
    return {_CAMEL.sub("_", k).lower(): v for k, v in d.items()}


def _read(data: TraceInput, name: Optional[str]) -> "tuple[bytes, str]":
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data), name or "trace"
    if isinstance(data, (str, os.PathLike)):
        path = os.fspath(data)
        with open(path, "rb") as f:
            return f.read(), name or path
    raise TypeError(f"expected a path or bytes, got {type(data).__name__}")


def count_tokens(text: str, model: Optional[str] = None) -> int:
    """Tokens of ``text`` for ``model`` (exact for OpenAI models; default gpt-4o's o200k)."""
    if not isinstance(text, str):
        raise TypeError(f"count_tokens expects a str, got {type(text).__name__}")
    return _memlens.count_tokens(text, model)


def builtin_policies() -> List[str]:
    """The names of the built-in policies."""
    return list(_memlens.builtin_policies())


def policy_config(policy: Policy = None) -> Dict[str, Any]:
    """A policy in full, defaults filled in (a built-in name, JSON/TOML text or a dict)."""
    return json.loads(_memlens.policy_config(_policy_arg(policy)))


def import_trace(
    data: TraceInput,
    *,
    format: Optional[str] = None,
    model: Optional[str] = None,
    name: Optional[str] = None,
) -> Dict[str, Any]:
    """Imports a trace file (path or bytes; gzipped too, as ``x.traj.json.gz``): ``{format,
    traces, warnings, warning_count}``."""
    raw, name = _read(data, name)
    return json.loads(_memlens.import_trace(raw, name, format, model))


def inspect(
    data: TraceInput,
    *,
    format: Optional[str] = None,
    model: Optional[str] = None,
    name: Optional[str] = None,
    top: int = 10,
) -> Dict[str, Any]:
    """Each trace's summary (tokens, cost, cache, costliest chunks) as ``memlens inspect --json``
    gives it: ``{format, traces: [summary, ...], warnings, warning_count}``."""
    raw, name = _read(data, name)
    return json.loads(_memlens.inspect_trace(raw, name, format, model, top))


def analyze_trace(
    data: TraceInput,
    *,
    format: Optional[str] = None,
    model: Optional[str] = None,
    name: Optional[str] = None,
) -> Dict[str, Any]:
    """The web analyzer's analysis of each trace, as the npm package's ``analyzeTrace`` returns
    it (per call, per chunk, categories, values, references): ``{format, traces, warnings,
    warning_count}``."""
    raw, name = _read(data, name)
    return json.loads(_memlens.analyze_trace(raw, name, format, model))


def simulate(
    data: TraceInput,
    *,
    policy: Policy = None,
    budget: Optional[int] = None,
    format: Optional[str] = None,
    model: Optional[str] = None,
    name: Optional[str] = None,
) -> Dict[str, Any]:
    """Replays a trace file under a policy at a budget: the report ``memlens simulate --json``
    prints (per call: input tokens, cached prefix, evictions, misses; totals; cost)."""
    raw, name = _read(data, name)
    return json.loads(_memlens.simulate(raw, name, _policy_arg(policy), budget, format, model))


def columns_of_batch(
    batch: Any,
    *,
    format: Optional[str] = None,
    model: Optional[str] = None,
    policies: Optional[Sequence[Policy]] = None,
    budgets: Optional[Sequence[int]] = None,
    tables: Optional[Sequence[str]] = None,
) -> Dict[str, Any]:
    """The columnar tables of a ``pyarrow.RecordBatch`` (or ``Table``) of trace files, one per
    row: a ``name`` column (string) and a ``trace`` column (the file's bytes, binary or string).
    Returns ``pyarrow.Table``s by name: ``traces``, ``calls``, ``chunks`` (as ``memlens
    export-columns`` writes them; columns in docs/columns.md), ``simulations`` when ``policies``
    and ``budgets`` are given, and ``errors`` (``source``, ``error``) for rows that could not be
    read. The batch crosses to the engine as one Arrow IPC stream and the tables come back the
    same way: no Python object per row. ``tables`` names the tables wanted (``errors`` always
    comes back): the per-trace table alone costs what :func:`inspect` does, ``simulations``
    alone needs no analysis. Needs ``pyarrow``."""
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write(batch)
    out = _memlens.tables_ipc(
        sink.getvalue().to_pybytes(),
        format,
        model,
        [_policy_arg(p) for p in policies or []],
        list(budgets or []),
        list(tables or []),
    )
    return {name: pa.ipc.open_stream(data).read_all() for name, data in out}


def columns(
    traces: Sequence[TraceInput],
    *,
    names: Optional[Sequence[str]] = None,
    format: Optional[str] = None,
    model: Optional[str] = None,
    policies: Optional[Sequence[Policy]] = None,
    budgets: Optional[Sequence[int]] = None,
    tables: Optional[Sequence[str]] = None,
) -> Dict[str, Any]:
    """:func:`columns_of_batch` of trace files given as paths or bytes (``names`` name the
    bytes; a path names itself): ``pyarrow.Table``s by name, for pandas, Polars or DuckDB."""
    import pyarrow as pa

    given = list(names) if names is not None else [None] * len(traces)
    if len(given) != len(traces):
        raise ValueError(f"{len(given)} names for {len(traces)} traces")
    read = [_read(t, n) for t, n in zip(traces, given)]
    batch = pa.record_batch(
        {
            "name": pa.array([n for _, n in read], pa.string()),
            "trace": pa.array([b for b, _ in read], pa.binary()),
        }
    )
    return columns_of_batch(
        batch, format=format, model=model, policies=policies, budgets=budgets, tables=tables
    )


def _timestamp_arg(timestamp: Optional[Timestamp]) -> Union[float, str, None]:
    """A time as the native pool takes it: seconds since the epoch, or ISO text it reads as
    MemLens reads trace timestamps. A naive datetime is local time, as ``timestamp()`` reads it."""
    if timestamp is None or isinstance(timestamp, str):
        return timestamp
    if isinstance(timestamp, datetime.datetime):
        return timestamp.timestamp()
    if isinstance(timestamp, bool) or not isinstance(timestamp, (int, float)):
        raise TypeError(
            "timestamp must be a datetime, seconds since the epoch or an ISO 8601 string, "
            f"got {type(timestamp).__name__}"
        )
    return float(timestamp)


def _policy_arg(policy: Policy) -> Any:
    if policy is None or isinstance(policy, str):
        return policy
    if isinstance(policy, Mapping):
        return dict(policy)
    raise TypeError(
        f"policy must be a built-in name, JSON or TOML text, or a dict; got {type(policy).__name__}"
    )


class MemoryPool:
    """Live memory pool: add messages as the agent produces them, send ``context()``.

    ``model`` picks the token counter and prices; ``budget`` is the context budget in tokens;
    ``policy`` a built-in name (``builtin_policies()``), JSON/TOML text or a dict;
    ``summarizer`` an async function ``(messages, max_tokens) -> str`` for policies that
    summarize (used by ``acontext``); ``scorer`` a function ``(message, chunk_id, part) ->
    float | None`` giving chunks a value in [0, 1]; ``dialect`` ``"openai"`` or ``"anthropic"``
    (detected per message when omitted); ``trace_file`` a path the run is appended to (native
    JSON Lines) after every step; ``keep_history=False`` releases what the policy has given up
    for good once written to ``trace_file`` (at once without one), so memory follows the context
    and the archive (``export_trace()`` and ``set_policy()`` then raise, and a summarizer is
    refused); ``clock=False`` records only the timestamps and latencies given to ``add`` (for
    feeding recorded messages, whose times ``time.time()`` does not know), where by default a
    message added without one is stamped with ``time.time()`` (see ``add``).
    """

    def __init__(
        self,
        *,
        budget: int,
        model: Optional[str] = None,
        policy: Policy = None,
        summarizer: Optional[Summarizer] = None,
        scorer: Optional[Scorer] = None,
        dialect: Optional[str] = None,
        trace_file: Optional[Union[str, "os.PathLike[str]"]] = None,
        keep_history: bool = True,
        clock: bool = True,
    ) -> None:
        if not isinstance(clock, bool):
            raise TypeError(f"clock must be a bool, got {type(clock).__name__}")
        if trace_file is not None and not isinstance(trace_file, (str, os.PathLike)):
            raise TypeError("trace_file must be a path")
        if summarizer is not None and not callable(summarizer):
            raise TypeError("summarizer must be an async function (messages, max_tokens) -> str")
        if scorer is not None and not callable(scorer):
            raise TypeError("scorer must be a function (message, chunk_id, part) -> float | None")
        if isinstance(budget, bool) or not isinstance(budget, (int, float)):
            raise TypeError(f"budget must be a number of tokens, got {type(budget).__name__}")
        self._raw = _memlens.RawPool(
            budget=float(budget),
            model=model,
            policy=_policy_arg(policy),
            summarizer=summarizer is not None,
            dialect=dialect,
            keep_history=bool(keep_history),
        )
        self._messages: List[Message] = []
        self._summarizer = summarizer
        self._scorer = scorer
        self._summaries: Dict[str, str] = {}
        self._last: Optional[Dict[str, Any]] = None
        self._trace_file = None if trace_file is None else os.fspath(trace_file)
        self._clock = clock

    def _append_trace(self, finish: bool = False) -> None:
        # With trace_file, what the run added goes to the file after every step.
        if self._trace_file is None:
            return
        text = self._raw.trace_lines(finish)
        if text:
            with open(self._trace_file, "a", encoding="utf-8") as f:
                f.write(text)

    def trace_lines(self, finish: bool = False) -> str:
        """The run's native-format lines (JSON Lines) not returned before: append each result
        to a file and ``memlens inspect`` or the web app reads the run so far at any point. The
        newest call is held back until the next one (its usage may still be recorded), tool
        pairs until complete; ``finish=True`` returns the rest. With ``trace_file=`` the pool
        does this itself (and finishes the file on ``close()``)."""
        if self._trace_file is not None:
            raise RuntimeError("this pool writes its trace to trace_file itself; trace_lines() would take lines from it")
        return self._raw.trace_lines(finish)

    # -- adding -------------------------------------------------------------------------------

    def add(
        self,
        message: Message,
        *,
        timestamp: Optional[Timestamp] = None,
        latency_ms: Optional[float] = None,
        preference: bool = False,
    ) -> List[int]:
        """Adds one message (an OpenAI- or Anthropic-style dict); returns its chunk ids.

        ``timestamp``: when the message was written, a ``datetime`` (naive: local time, as
        ``datetime.timestamp()`` reads it), seconds since the epoch, or an ISO 8601 string (UTC
        without an offset, as MemLens reads trace timestamps); default ``time.time()`` (none
        with ``clock=False``). ``max_age_seconds`` and value half-lives in seconds (the
        ``support-bot`` preset's) read it, "now" being the newest message's time.
        ``latency_ms``: what its tool results took to produce, for the generation-cost factor;
        default the time since their tool call's message was added. ``preference=True``: its
        text is a preference of the user (category ``preference``, which the ``value``
        policies protect; refused on a system prompt)."""
        if latency_ms is not None and (
            isinstance(latency_ms, bool) or not isinstance(latency_ms, (int, float))
        ):
            raise TypeError(f"latency_ms must be a number of milliseconds, got {latency_ms!r}")
        if not isinstance(preference, bool):
            raise TypeError(f"preference must be a bool, got {type(preference).__name__}")
        stamp = _timestamp_arg(timestamp)
        if stamp is None and self._clock:
            stamp = time.time()
        ids = list(
            self._raw.add(
                message, stamp, None if latency_ms is None else float(latency_ms), preference
            )
        )
        self._messages.append(message)
        self._append_trace()
        if self._scorer is not None:
            for part, chunk_id in enumerate(ids):
                value = self._scorer(message, chunk_id, part)
                if value is not None:
                    self.set_value(chunk_id, value)
        return ids

    def add_many(self, messages: Sequence[Message]) -> List[List[int]]:
        """Adds messages in order; returns the chunk ids of each."""
        if isinstance(messages, (str, bytes, Mapping)):
            raise TypeError("add_many expects a sequence of message dicts")
        return [self.add(m) for m in messages]

    # -- deciding -----------------------------------------------------------------------------

    def _decide(self, query: Optional[str]) -> Dict[str, Any]:
        if query is not None and not isinstance(query, str):
            raise TypeError("query must be a str")
        c = self._raw.context(query)
        self._append_trace()
        return c

    def _materialize(
        self, c: Dict[str, Any], summary: Callable[[Dict[str, Any]], Message]
    ) -> List[Message]:
        extras = c["extras"]
        out: List[Message] = []
        for r in c["refs"]:
            if r < _EXTRA:
                out.append(self._messages[r])
            else:
                extra = extras[r - _EXTRA]
                out.append(extra["value"] if extra["kind"] == "patched" else summary(extra))
        self._last = {
            "tokens": c["tokens"],
            "full_tokens": c["full_tokens"],
            "over_budget": c["over_budget"],
            "compressed": list(c["compressed"]),
            "evicted": list(c["evicted"]),
            "retrieved": list(c["retrieved"]),
        }
        # A pool that does not keep its history released these: no context refers to them again.
        for m in c["released_messages"]:
            self._messages[m] = None
        return out

    def context(self, query: Optional[str] = None) -> List[Message]:
        """The messages to send now: the very dicts added where kept as they were, patched
        copies where parts were compressed or dropped. Raises ``RuntimeError`` when the policy
        wants a summary: use ``await pool.acontext()`` with a summarizer."""

        def no_summary(_: Dict[str, Any]) -> Message:
            raise RuntimeError("the policy summarized old messages: call `await pool.acontext()`")

        return self._materialize(self._decide(query), no_summary)

    async def acontext(self, query: Optional[str] = None) -> List[Message]:
        """Like ``context()``, producing summaries with the summarizer given to the pool."""
        c = self._decide(query)
        texts: Dict[int, Message] = {}
        delta = 0
        for i, extra in enumerate(c["extras"]):
            if extra["kind"] != "summary":
                continue
            key = ",".join(map(str, extra["covers"]))
            text = self._summaries.get(key)
            if text is None:
                if self._summarizer is None:
                    raise RuntimeError("the policy summarizes: pass summarizer= to MemoryPool")
                covered = [self._messages[m] for m in extra["covers"]]
                text = await self._summarizer(covered, extra["tokens"])
                if not isinstance(text, str):
                    raise TypeError("the summarizer must return a str")
                self._summaries[key] = text
            message = {"role": "user", "content": f"[Summary of earlier conversation]\n{text}"}
            delta += self._raw.count_tokens(message["content"]) + 4 - extra["tokens"]
            texts[id(extra)] = message
        out = self._materialize(c, lambda extra: texts[id(extra)])
        assert self._last is not None  # set by _materialize
        self._last["tokens"] += delta
        self._last["over_budget"] = self._last["tokens"] > self.stats()["budget"]
        return out

    def prepare(self) -> None:
        """Does now the value work the next ``context()`` would do first (the analysis of the
        messages added since the last ranking, and of what the agent's replies used): call it
        while the agent waits for the model, e.g. ``loop.call_soon(pool.prepare)``. Contexts
        are the same whether or not it is called; only when the work is done changes."""
        self._raw.prepare()

    @property
    def last_context(self) -> Optional[Dict[str, Any]]:
        """Tokens, budget and what the latest ``context()`` dropped, compressed or retrieved."""
        return self._last

    # -- reading and steering -----------------------------------------------------------------

    def stats(self) -> Dict[str, Any]:
        """Running totals: tokens in the pool and in context, dropped, compressed, cost."""
        return _snake(self._raw.stats())

    def explain(self, chunk_id: int) -> Dict[str, Any]:
        """Value factors of one chunk and why it was kept or dropped."""
        return _snake(self._raw.explain(chunk_id))

    def set_policy(self, policy: Policy) -> None:
        """Switches policy without losing the run: the next context is the one the new policy
        would have decided had it been used from the start."""
        self._raw.set_policy(_policy_arg(policy))

    def set_value(self, chunk_id: int, value: Optional[float]) -> None:
        """Sets a chunk's value in [0, 1] (``None``: the engine scores it), as a scorer would."""
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise TypeError(f"a value must be a number in [0, 1] or None, got {value!r}")
        self._raw.set_value(chunk_id, None if value is None else float(value))

    def label(self, chunk_id: int, label: Optional[str]) -> None:
        """Labels a chunk ``"important"`` (kept) or ``"useless"``; ``None`` clears it."""
        self._raw.label(chunk_id, label)

    def record_usage(self, usage: Mapping[str, Any]) -> None:
        """Records the provider's reported usage (OpenAI or Anthropic shape) of the latest call."""
        self._raw.record_usage(dict(usage))
        self._append_trace()

    def export_trace(self) -> str:
        """The run so far in the native MemLens format (JSON Lines): open it in the web app."""
        return self._raw.export_trace()

    def count_tokens(self, text: str) -> int:
        """Tokens of a text with this pool's encoding."""
        if not isinstance(text, str):
            raise TypeError("count_tokens expects a str")
        return self._raw.count_tokens(text)

    def close(self) -> None:
        """Frees the pool (finishing its ``trace_file``); using it afterwards raises ``ValueError``."""
        if not self._raw.closed:
            self._append_trace(finish=True)
        self._raw.close()
        self._messages = []

    @property
    def closed(self) -> bool:
        return self._raw.closed

    def __enter__(self) -> "MemoryPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
