"""The live pool from Python: the caller's own objects back, the invariants on random streams,
errors as Python exceptions."""

import asyncio
import datetime
import json
import random

import memlens
import pytest
from memlens import MemoryPool


def test_the_installed_package_is_tested_not_the_source_tree():
    assert "site-packages" in memlens.__file__, memlens.__file__


def tool_turn(i: int, size: int):
    call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
        ],
    }
    result = {"role": "tool", "tool_call_id": f"c{i}", "content": "result " * size}
    return call, result


def test_context_returns_the_very_objects_added_and_keeps_pairs_together():
    pool = MemoryPool(model="gpt-4o", budget=120, policy="window")
    system = {"role": "system", "content": "Be brief."}
    pool.add(system)
    pool.add({"role": "user", "content": "Find my booking."})
    call, result = tool_turn(1, 200)
    pool.add_many([call, result])
    newest = {"role": "user", "content": "And the seat?"}
    pool.add(newest)
    ctx = pool.context()
    assert ctx[0] is system and ctx[-1] is newest
    assert call not in ctx and result not in ctx  # dropped together
    last = pool.last_context
    assert last["tokens"] <= 120 and not last["over_budget"]
    assert len(last["evicted"]) == 3  # the old user turn, the call, its result


def check_openai(messages):
    """Every tool result answers a call of the assistant message before it; every call is answered."""
    open_calls = set()
    for i, m in enumerate(messages):
        if m["role"] == "tool":
            assert m["tool_call_id"] in open_calls, f"message {i}: orphaned tool result"
            open_calls.remove(m["tool_call_id"])
        else:
            assert not open_calls, f"message {i}: calls {open_calls} left unanswered"
            open_calls.update(c["id"] for c in m.get("tool_calls") or [])
    assert not open_calls


def check_anthropic(messages):
    """Every tool_result block answers a tool_use block of the message just before it."""
    previous_uses = set()
    for i, m in enumerate(messages):
        blocks = m["content"] if isinstance(m["content"], list) else []
        results = {b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"}
        assert results <= previous_uses, f"message {i}: orphaned tool_result"
        assert previous_uses <= results, f"message {i}: tool_use left unanswered"
        previous_uses = {b["id"] for b in blocks if b.get("type") == "tool_use"}


def random_stream(rng: random.Random, anthropic: bool):
    words = "flight booking seat refund Friday upgrade baggage fare gate delay".split()
    text = lambda n: " ".join(rng.choice(words) for _ in range(n))  # noqa: E731
    out = []
    for i in range(rng.randint(3, 30)):
        kind = rng.random()
        if kind < 0.35:
            out.append({"role": "user", "content": text(rng.randint(1, 60))})
        elif kind < 0.6:
            out.append({"role": "assistant", "content": text(rng.randint(1, 60))})
        else:
            n = rng.randint(1, 3)
            ids = [f"t{i}_{k}" for k in range(n)]
            if anthropic:
                out.append({"role": "assistant", "content": [
                    {"type": "tool_use", "id": t, "name": "search", "input": {"q": text(3)}} for t in ids]})
                out.append({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": t, "content": text(rng.randint(1, 300))} for t in ids]})
            else:
                out.append({"role": "assistant", "content": None, "tool_calls": [
                    {"id": t, "type": "function", "function": {"name": "search", "arguments": "{}"}} for t in ids]})
                out.extend({"role": "tool", "tool_call_id": t, "content": text(rng.randint(1, 300))} for t in ids)
    out.append({"role": "user", "content": text(5)})
    return out


@pytest.mark.parametrize("policy", ["value", "window", "value-compress", "recall", "openai-keep-last-n"])
@pytest.mark.parametrize("anthropic", [False, True])
def test_random_streams_never_orphan_a_pair_or_drop_the_system_prompt(policy, anthropic):
    rng = random.Random(f"{policy}-{anthropic}")
    for case in range(60):
        system = {"role": "system", "content": "You are a travel agent."} if not anthropic else None
        pool = MemoryPool(model="gpt-4o", budget=rng.choice([60, 200, 800, 4000]), policy=policy)
        if system:
            pool.add(system)
        stream = random_stream(rng, anthropic)
        for k, m in enumerate(stream):
            pool.add(m)
            # A user turn (in Anthropic's shape, tool results are user messages too).
            if m["role"] == "user" and isinstance(m["content"], str) and (k == len(stream) - 1 or rng.random() < 0.5):
                ctx = pool.context()
                if system:
                    assert ctx[0] is system, f"case {case}: system prompt dropped"
                assert ctx[-1] is m, f"case {case}: newest user turn dropped"
                if policy != "openai-keep-last-n":  # the incumbent is replayed as it is, faults included
                    (check_anthropic if anthropic else check_openai)(ctx)


def test_errors_are_python_exceptions_with_clear_messages():
    with pytest.raises(ValueError, match="budget must be a positive number"):
        MemoryPool(budget=0)
    with pytest.raises(TypeError, match="budget must be a number"):
        MemoryPool(budget="8000")
    with pytest.raises(ValueError, match="unknown policy|no built-in policy|not a built-in"):
        MemoryPool(budget=100, policy="no-such-policy")
    with pytest.raises(ValueError, match="invalid policy"):
        MemoryPool(budget=100, policy="{ not json")
    with pytest.raises(TypeError, match="policy must be"):
        MemoryPool(budget=100, policy=42)
    with pytest.raises(ValueError, match="later steps"):
        MemoryPool(budget=100, policy="oracle")
    with pytest.raises(ValueError, match="dialect"):
        MemoryPool(budget=100, dialect="gemini")
    pool = MemoryPool(budget=100)
    with pytest.raises(TypeError, match="expected a dict"):
        pool.add("hello")
    with pytest.raises(TypeError, match="no \"role\""):
        pool.add({"content": "no role"})
    ids = pool.add({"role": "user", "content": "hi"})
    with pytest.raises(ValueError, match="unknown label"):
        pool.label(ids[0], "meh")
    with pytest.raises(ValueError, match="unknown chunk"):
        pool.explain(999)
    with pytest.raises(TypeError):
        pool.set_value(ids[0], "high")
    pool.close()
    assert pool.closed
    with pytest.raises(ValueError, match="closed"):
        pool.context()


def test_a_message_nested_too_deep_is_refused_not_a_crash():
    # Built without recursion, 100,000 levels: converting it recursively would overflow the
    # native stack and abort the interpreter (issue 15); it is refused before that.
    deep = "bottom"
    for _ in range(100_000):
        deep = {"x": [deep]}
    pool = MemoryPool(budget=100)
    with pytest.raises(TypeError, match="nested more than 128 levels"):
        pool.add({"role": "user", "content": "hi", "metadata": deep})
    # 100 levels is still data (extra fields travel with the caller's message), and the pool
    # still works.
    shallow = "bottom"
    for _ in range(50):
        shallow = {"x": [shallow]}
    pool.add({"role": "user", "content": "still here", "metadata": shallow})
    assert pool.context()


def test_stats_explain_labels_values_and_policy_switch():
    pool = MemoryPool(model="gpt-4o", budget=4000, policy="value")
    pool.add({"role": "system", "content": "Be brief."})
    ids = pool.add({"role": "user", "content": "My booking code is HAT136, keep it in mind."})
    pool.context()
    stats = pool.stats()
    assert stats["policy"] == "value" and stats["calls"] == 1 and stats["messages"] == 2
    assert "context_tokens" in stats and "over_budget_calls" in stats
    why = pool.explain(ids[0])
    assert why["status"] == "kept" and 0.0 <= why["value"]["value"] <= 1.0
    pool.label(ids[0], "important")
    pool.set_value(ids[0], 0.9)
    pool.set_policy("window")
    assert pool.stats()["policy"] == "window"
    assert pool.context()[-1]["content"].startswith("My booking code")


def test_a_scorer_sets_values_that_the_value_threshold_reads():
    # From the first call (act_from=0), and the preset's echo rule off: only the threshold acts.
    policy = dict(
        memlens.policy_config("value"),
        name="threshold",
        value_threshold=0.5,
        act_from=0,
        evict_echoed_replies=None,
    )
    scored = []

    def scorer(message, chunk_id, part):
        scored.append(chunk_id)
        return 0.0 if "noise" in str(message.get("content")) else None

    pool = MemoryPool(model="gpt-4o", budget=4000, policy=policy, scorer=scorer)
    pool.add({"role": "system", "content": "Be brief."})
    noise = {"role": "assistant", "content": "noise noise noise"}
    pool.add_many([{"role": "user", "content": "hello"}, noise])
    pool.context()
    pool.add({"role": "user", "content": "next question"})
    assert noise not in pool.context()
    assert len(scored) == 4


def test_acontext_calls_the_async_summarizer_once_per_span():
    calls = []

    async def summarizer(messages, max_tokens):
        calls.append((len(messages), max_tokens))
        return "the user asked about flights"

    pool = MemoryPool(model="gpt-4o", budget=300, policy="letta-summarize", summarizer=summarizer)
    pool.add({"role": "system", "content": "Be brief."})
    for i in range(12):
        pool.add({"role": "user", "content": f"question {i} " + "about flights " * 20})
        pool.add({"role": "assistant", "content": f"answer {i} " + "fares rose " * 20})
    with pytest.raises(RuntimeError, match="acontext"):
        pool.context()
    ctx = asyncio.run(pool.acontext())
    assert any(m["content"].startswith("[Summary of earlier conversation]") for m in ctx)
    assert calls and all(t > 0 for _, t in calls)
    assert pool.last_context["tokens"] > 0


def test_export_trace_round_trips_through_import():
    pool = MemoryPool(model="gpt-4o", budget=1000)
    pool.add({"role": "system", "content": "Be brief."})
    pool.add({"role": "user", "content": "hi"})
    pool.context()
    pool.record_usage({"prompt_tokens": 12, "completion_tokens": 3})
    pool.add({"role": "assistant", "content": "hello"})
    text = pool.export_trace()
    imported = memlens.import_trace(text.encode(), name="export.jsonl")
    assert imported["format"] == "memlens"
    trace = imported["traces"][0]
    assert len(trace["chunks"]) == 3 and len(trace["calls"]) == 1
    assert json.loads(text.splitlines()[0])  # JSON Lines


def test_count_tokens():
    assert memlens.count_tokens("hello world") == 2
    assert memlens.count_tokens("hello world", "gpt-4") == 2
    with pytest.raises(ValueError, match="unknown model"):
        memlens.count_tokens("x", "no-such-model")
    with pytest.raises(TypeError):
        memlens.count_tokens(b"bytes")
    assert "value" in memlens.builtin_policies() and "oracle" in memlens.builtin_policies()


def test_keep_history_false_releases_what_was_given_up_and_writes_the_same_trace(tmp_path, tau):
    records = json.loads(tau.read_text())
    run = [records[0]["traj"][0]] + [
        m for r in records[:20] for m in r["traj"] if m["role"] != "system"
    ]
    paths = [tmp_path / "kept.jsonl", tmp_path / "released.jsonl"]
    # No clock: the two files must be the same byte for byte.
    options = dict(model="gpt-4o", budget=2000, policy="window", clock=False)
    kept = MemoryPool(trace_file=paths[0], **options)
    released = MemoryPool(trace_file=paths[1], keep_history=False, **options)
    for m in run:
        if m["role"] == "assistant":
            a, b = kept.context(), released.context()
            # The very same dicts, in the same order: the window decides as before.
            assert len(a) == len(b) and all(x is y for x, y in zip(a, b))
        kept.add(m)
        released.add(m)
    assert released.stats()["dropped"] == kept.stats()["dropped"] > len(run) // 2
    with pytest.raises(ValueError, match="whole history"):
        released.export_trace()
    with pytest.raises(ValueError, match="set_policy"):
        released.set_policy("value")
    kept.close()
    released.close()
    assert paths[1].read_text() == paths[0].read_text()
    with pytest.raises(ValueError, match="cannot summarize"):
        MemoryPool(budget=1000, keep_history=False, summarizer=lambda ms, n: "s")


def test_prepare_between_turns_changes_when_the_work_is_done_not_the_contexts(tau):
    records = json.loads(tau.read_text())
    run = [records[0]["traj"][0]] + [
        m for r in records[:10] for m in r["traj"] if m["role"] != "system"
    ]
    # No clock: two pools would measure their tools' latencies apart.
    plain = MemoryPool(model="gpt-4o", budget=2000, policy="value", clock=False)
    prepared = MemoryPool(model="gpt-4o", budget=2000, policy="value", clock=False)
    for m in run:
        if m["role"] == "assistant":
            # Equal, not the same objects: `value` sends tool results minified, as copies.
            assert plain.context() == prepared.context()
            assert plain.last_context == prepared.last_context
            prepared.prepare()
        plain.add(m)
        prepared.add(m)
    assert plain.stats()["dropped"] == prepared.stats()["dropped"] > 0


def test_trace_file_is_appended_as_the_run_goes_and_ends_equal_to_the_export(tmp_path, tau):
    records = json.loads(tau.read_text())
    path = tmp_path / "run.jsonl"
    pool = MemoryPool(model="gpt-4o", budget=2000, policy="window", trace_file=path)
    with pytest.raises(RuntimeError, match="trace_file itself"):
        pool.trace_lines()
    calls = 0
    for m in records[3]["traj"]:
        if m["role"] == "assistant":
            pool.context()
        pool.add(m)
        if m["role"] == "assistant":
            pool.record_usage({"prompt_tokens": 1000 + calls, "completion_tokens": 7})
        # The file as it is now is a valid trace whose calls only grow.
        now = memlens.import_trace(path)["traces"][0]
        assert len(now["calls"]) >= calls
        calls = len(now["calls"])
    exported = pool.export_trace()
    pool.close()
    written = memlens.import_trace(path)
    assert written["traces"] == memlens.import_trace(exported.encode())["traces"]
    assert all(c.get("usage") for c in written["traces"][0]["calls"])
    # Without trace_file, trace_lines() hands out the same lines.
    p = MemoryPool(model="gpt-4o", budget=2000, policy="window")
    text = ""
    for m in records[3]["traj"]:
        if m["role"] == "assistant":
            p.context()
        p.add(m)
        text += p.trace_lines()
    text += p.trace_lines(finish=True)
    assert p.trace_lines(finish=True) == ""
    assert memlens.import_trace(text.encode())["traces"] == memlens.import_trace(p.export_trace().encode())["traces"]


# -- time, latency and preferences --------------------------------------------------------------
# Messages carry the time they were added (given, else time.time()) and tool results the time
# their tool took, as MemLens' importers record them in traces: time-based rules and the
# generation-cost factor act live as in a replay.

T0 = datetime.datetime(2025, 6, 2, 16, 46, 59, tzinfo=datetime.timezone.utc)
DAY = datetime.timedelta(days=1)


def exported_chunks(pool):
    lines = [json.loads(line) for line in pool.export_trace().splitlines() if line]
    return [r for r in lines if r["type"] == "chunk"]


def test_max_age_seconds_evicts_by_the_time_messages_were_written():
    policy = dict(memlens.policy_config("value"), name="aged", max_age_seconds=3600)
    run = [
        (T0, {"role": "system", "content": "You are a travel agent."}),
        (T0.timestamp(), {"role": "user", "content": "I want to fly to Lisbon next week."}),
        ("2025-06-02T16:47:04Z", {"role": "assistant", "content": "Lisbon next week: noted."}),
        (T0 + 2 * DAY - datetime.timedelta(minutes=30), {"role": "user", "content": "Any hotel near the river?"}),
        (T0 + 2 * DAY - datetime.timedelta(minutes=29), {"role": "assistant", "content": "Three: shall I list them?"}),
        (T0 + 2 * DAY, {"role": "user", "content": "Yes, the cheapest first."}),
    ]
    pool = MemoryPool(model="gpt-4o", budget=100000, policy=policy)
    untimed = MemoryPool(model="gpt-4o", budget=100000, policy=policy, clock=False)
    clocked = MemoryPool(model="gpt-4o", budget=100000, policy=policy)
    for t, m in run:
        pool.add(m, timestamp=t)
        untimed.add(m)
        clocked.add(m)
    messages = [m for _, m in run]
    # Two days old: out, under a budget that fits everything; half an hour old: kept.
    ctx = pool.context()
    assert [messages.index(m) for m in ctx] == [0, 3, 4, 5]
    assert sorted(pool.last_context["evicted"]) == [1, 2]
    assert pool.explain(1)["status"] == "dropped"
    # Without times (clock off), or all added just now, nothing ages out.
    assert untimed.context() == messages and clocked.context() == messages
    stamps = [c["meta"].get("timestamp") for c in exported_chunks(pool)]
    assert stamps[:3] == ["2025-06-02T16:46:59Z", "2025-06-02T16:46:59Z", "2025-06-02T16:47:04Z"]
    assert stamps[5] == "2025-06-04T16:46:59Z"
    assert "timestamp" not in exported_chunks(untimed)[0]["meta"]


def test_a_value_half_life_in_seconds_decays_what_was_written_long_ago():
    policy = {"name": "bot", "strategy": "value", "value_preset": "support-bot"}

    def recency(timed):
        pool = MemoryPool(model="gpt-4o", budget=100000, policy=policy, clock=False)
        at = (lambda t: {"timestamp": t}) if timed else (lambda t: {})
        (old,) = pool.add({"role": "user", "content": "My order is W1001."}, **at(T0))
        pool.add({"role": "assistant", "content": "Found it."}, **at(T0 + datetime.timedelta(seconds=1)))
        pool.add({"role": "user", "content": "Where is it now?"}, **at(T0 + DAY))
        pool.context()
        return pool.explain(old)["value"]["factors"]["recency"]

    # A day is four half-lives of six hours.
    assert recency(True) / recency(False) == pytest.approx(1 / 16, rel=1e-3)


def tool_call(call_id):
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "get_order", "arguments": "{}"}}],
    }


def tool_result(call_id):
    return {"role": "tool", "tool_call_id": call_id, "content": "; ".join(f"item {i}: shipped" for i in range(30))}


def test_a_tool_results_latency_measured_or_given_sets_its_generation_cost_as_an_importers_does():
    import time

    pool = MemoryPool(model="gpt-4o", budget=100000)
    pool.add({"role": "user", "content": "Where is W1001?"})
    pool.add(tool_call("clocked"))
    time.sleep(0.25)  # the tool runs a quarter of a second, by the clock
    (clocked,) = pool.add(tool_result("clocked"))
    pool.add(tool_call("slow"), timestamp=T0)
    (slow,) = pool.add(tool_result("slow"), timestamp=T0 + datetime.timedelta(seconds=20))
    pool.add(tool_call("fast"))
    (fast,) = pool.add(tool_result("fast"), latency_ms=50)
    pool.context()

    def cost(chunk):
        return pool.explain(chunk)["value"]["factors"]["generation_cost"]

    assert cost(slow) > cost(clocked) > cost(fast)
    assert any("took 20 s" in s for s in pool.explain(slow)["value"]["explanation"])
    latency = {c["id"]: c["meta"].get("latency_ms") for c in exported_chunks(pool)}
    assert 240 <= latency[clocked] < 5000 and latency[slow] == 20000 and latency[fast] == 50
    # The trace the pool writes, read back by the analyzer, gives the same factor.
    analysis = memlens.analyze_trace(pool.export_trace().encode(), name="run.jsonl")["traces"][0]
    for chunk in (clocked, slow, fast):
        assert analysis["chunks"][chunk]["factors"]["generation_cost"] == pytest.approx(cost(chunk), abs=1e-6)
    # Without a time (clock off) nor a latency: the category's prior, between the two.
    plain = MemoryPool(model="gpt-4o", budget=100000, clock=False)
    plain.add(tool_call("c"))
    (unknown,) = plain.add(tool_result("c"))
    plain.context()
    prior = plain.explain(unknown)["value"]["factors"]["generation_cost"]
    assert cost(slow) > prior > cost(fast)


def test_a_preference_is_kept_where_an_unmarked_message_of_the_same_size_and_age_is_dropped():
    def note(head, words):
        text, i = head, 0
        while memlens.count_tokens(text) < 60:
            text, i = f"{text} {words[i % len(words)]}", i + 1
        assert memlens.count_tokens(text) == 60, text
        return text

    second = datetime.timedelta(seconds=1)
    run = [
        (T0, {"role": "system", "content": "Be brief."}),
        (T0 + 10 * second, {"role": "user", "content": note("I prefer", "aisle seats and quiet hotels near parks".split())}),
        (T0 + 10 * second, {"role": "user", "content": note("My trip", "starts in Porto then goes south by train".split())}),
        (T0 + 15 * second, {"role": "assistant", "content": "Noted."}),
        (T0 + 20 * second, {"role": "user", "content": "Book it."}),
    ]
    messages = [m for _, m in run]

    def decide(budget, mark):
        pool = MemoryPool(model="gpt-4o", budget=budget)
        for k, (t, m) in enumerate(run):
            pool.add(m, timestamp=t, preference=k == mark)
        sent = [next(i for i, m in enumerate(messages) if m is x) for x in pool.context()]
        categories = [pool.explain(c)["category"] for c in (1, 2)]
        return sent, pool.last_context["full_tokens"], categories

    sent, full, categories = decide(100000, None)
    assert (sent, categories) == ([0, 1, 2, 3, 4], ["user", "user"])
    # Room for one note only (the newest two messages are protected): the value policy gives
    # one up; marked as a preference, that one stays and the other goes.
    unmarked, _, _ = decide(full - 40, None)
    dropped, other = (2, 1) if 1 in unmarked else (1, 2)
    assert unmarked == [0, other, 3, 4]
    marked, _, categories = decide(full - 40, dropped)
    assert marked == [0, dropped, 3, 4] and categories[dropped - 1] == "preference"


def test_bad_add_options_are_clear_errors_that_leave_the_pool_as_it_was():
    pool = MemoryPool(model="gpt-4o", budget=1000)
    m = {"role": "user", "content": "hi"}
    with pytest.raises(TypeError, match="timestamp must be"):
        pool.add(m, timestamp=True)
    with pytest.raises(TypeError, match="timestamp must be"):
        pool.add(m, timestamp=datetime.date(2025, 6, 2))
    with pytest.raises(ValueError, match='invalid timestamp: "last Tuesday"'):
        pool.add(m, timestamp="last Tuesday")
    with pytest.raises(ValueError, match="invalid timestamp"):
        pool.add(m, timestamp=float("nan"))
    with pytest.raises(ValueError, match="latency"):
        pool.add(m, latency_ms=-1)
    with pytest.raises(TypeError, match="latency_ms"):
        pool.add(m, latency_ms="slow")
    with pytest.raises(TypeError, match="preference"):
        pool.add(m, preference="yes")
    with pytest.raises(ValueError, match="system prompt"):
        pool.add({"role": "system", "content": "Be brief."}, preference=True)
    with pytest.raises(TypeError, match="clock"):
        MemoryPool(budget=1000, clock="off")
    assert pool.stats()["messages"] == 0
    pool.add(m, latency_ms=5)
    assert any("no tool result" in w for w in pool.stats()["warnings"])
    assert pool.context() == [m]
