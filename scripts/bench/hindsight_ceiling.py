#!/usr/bin/env python3
"""How far a rule on cheap features can get toward the hindsight oracle (issue 17).

Reads the table `memlens labels-from-hindsight TRACE -o labels.csv` writes (one row per chunk per
call that carried it) and asks: if a policy dropped a chunk, for good, at the first call where its
*segment* says "drop" (segment = category, tool name, age, calls since its last use, uses so
far: what a live engine knows at that call), how many input tokens would it save and in how many
calls would a later step miss a dropped chunk? Segments are added to the drop set in order of
their share of tokens not used later, measured on the same rows (in-sample: an upper bound for
rules on these features, not a validated policy). The system prompt is never dropped, as in
every MemLens policy. No budget: like the oracle, the rule drops whether or not the context is
over budget.

    target/release/memlens labels-from-hindsight TRACE.json --model gpt-4o -o /tmp/labels.csv
    python3 scripts/bench/hindsight_ceiling.py /tmp/labels.csv [--fine] [--max-miss 0.01] \
        [--trace TRACE.json]

With `--trace` (tau-bench's file: a list of `{task_id, trial, traj}`), three more features a live
engine has join the segment: the chunk's size (tokens: <32, 32-127, 128-511, 512+), whether it
shares an identifier (a word with a digit, e.g. a reservation or user id) with the newest user
message of the call, and how many content words it shares with that message (0, 1-2, 3+).

Prints the frontier (saved share of all input tokens, share of calls with a miss) as segments
are added, and the most saved within the miss ceiling.
"""
import argparse
import collections
import csv
import json
import re
import sys

WORD = re.compile(r"[A-Za-z0-9_]+")
STOP = set("""the and for you your are with that this have has was were will would can could
please thank thanks what when where which there their them they then than from into about
would like just also need want know okay sure yes""".split())


def words(text):
    """(identifiers, content words) of a text: identifiers hold a digit; words are >= 4 letters."""
    ids, content = set(), set()
    for w in WORD.findall(text or ""):
        lw = w.lower()
        if any(ch.isdigit() for ch in w) and len(w) >= 3:
            ids.add(lw)
        elif len(lw) >= 4 and lw not in STOP:
            content.add(lw)
    return ids, content


def message_texts(path):
    """trace id -> message index -> (identifiers, content words) of its text or tool call."""
    out = {}
    for rec in json.load(open(path)):
        tid = f"task-{rec['task_id']}-trial-{rec['trial']}"
        texts = []
        for m in rec["traj"]:
            parts = [m.get("content") or ""]
            for c in m.get("tool_calls") or []:
                parts.append(c["function"]["name"] + " " + c["function"].get("arguments", ""))
            texts.append(words(" ".join(parts)))
        out[tid] = texts
    return out


def bucket(x, edges):
    """The label of the bucket holding x: edges [0, 1, 2, 4, 8] -> '0', '1', '2-3', '4-7', '8+'."""
    for lo, hi in zip(edges, edges[1:]):
        if lo <= x < hi:
            return str(lo) if hi == lo + 1 else f"{lo}-{hi - 1}"
    return f"{edges[-1]}+"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("labels", help="CSV from `memlens labels-from-hindsight`")
    ap.add_argument("--fine", action="store_true", help="finer age/idle buckets (more in-sample fit)")
    ap.add_argument("--max-miss", type=float, default=0.01, help="ceiling on calls with a miss")
    ap.add_argument("--trace", help="the traces (tau-bench JSON): adds size and overlap with the "
                    "newest user message to the features")
    args = ap.parse_args()
    age_edges = list(range(0, 13)) if args.fine else [0, 1, 2, 4, 8]
    idle_edges = list(range(0, 9)) if args.fine else [0, 1, 2, 4]
    max_uses = 3 if args.fine else 2

    rows = []
    with open(args.labels, newline="") as f:
        for r in csv.DictReader(f):
            rows.append(r)
    if not rows:
        sys.exit(f"{args.labels}: no rows")

    # Per chunk (trace, chunk id): the first call carrying it and every call whose output used it
    # (each use call is the `next_use_call` of the rows before it).
    first, uses, calls = {}, collections.defaultdict(set), collections.defaultdict(set)
    for r in rows:
        key, call = (r["trace_id"], r["chunk"]), int(r["call"])
        first[key] = min(first.get(key, call), call)
        calls[r["trace_id"]].add(call)
        if r["next_use_call"]:
            uses[key].add(int(r["next_use_call"]))

    texts = message_texts(args.trace) if args.trace else None
    # The newest user message carried by each call (its message index, from the chunk keys).
    newest_user = {}
    for r in rows:
        if r["category"] == "user":
            k, i = (r["trace_id"], int(r["call"])), int(re.match(r"m(\d+)", r["key"]).group(1))
            newest_user[k] = max(newest_user.get(k, -1), i)

    def overlap(r):
        """(size bucket, shares an identifier, shared content words bucket) with the newest user
        message of the row's call."""
        tid, call = r["trace_id"], int(r["call"])
        m = re.match(r"m(\d+)", r["key"])
        u = newest_user.get((tid, call))
        size = bucket(int(r["tokens"]), [0, 32, 128, 512])
        if m is None or u is None or tid not in texts:
            return (size, False, "0")
        (cid, cw), (uid, uw) = texts[tid][int(m.group(1))], texts[tid][u]
        shared = len(cw & uw)
        return (size, bool(cid & uid), "0" if shared == 0 else "1-2" if shared < 3 else "3+")

    def segment(r):
        key, call = (r["trace_id"], r["chunk"]), int(r["call"])
        before = [u for u in uses[key] if u < call]
        idle = call - max(before, default=first[key])
        tool = r["tool_name"] if r["category"] in ("tool_result", "tool_call") else ""
        base = (r["category"], tool, bucket(call - first[key], age_edges),
                bucket(idle, idle_edges), min(len(before), max_uses))
        return base + overlap(r) if texts is not None else base

    total_tokens = sum(int(r["tokens"]) for r in rows)
    total_calls = sum(len(c) for c in calls.values())
    # Token-weighted share not used later, per segment; the rows of each chunk in call order.
    seg_tokens, seg_unused = collections.Counter(), collections.Counter()
    by_chunk = collections.defaultdict(list)
    for r in rows:
        if r["category"] == "system":
            continue
        s, t = segment(r), int(r["tokens"])
        seg_tokens[s] += t
        seg_unused[s] += t * (r["used_later"] == "false")
        by_chunk[(r["trace_id"], r["chunk"])].append((int(r["call"]), s, t))
    for v in by_chunk.values():
        v.sort()
    order = sorted(seg_tokens, key=lambda s: (-seg_unused[s] / seg_tokens[s], s))

    def evaluate(drop):
        saved, missed = 0, set()
        for key, samples in by_chunk.items():
            at = next((c for c, s, _ in samples if s in drop), None)
            if at is None:
                continue
            saved += sum(t for c, _, t in samples if c >= at)
            missed.update((key[0], u) for u in uses[key] if u >= at)
        return saved / total_tokens, len(missed) / total_calls

    print(f"{args.labels}: {len(rows)} rows, {total_calls} calls, {total_tokens} input tokens, "
          f"{len(order)} segments ({'fine' if args.fine else 'coarse'}"
          f"{', with size and overlap with the newest user message' if texts else ''})")
    # The hindsight reference: each chunk dropped right after its last use (none missed).
    after_last = sum(t for key, v in by_chunk.items() for c, _, t in v
                     if not any(u >= c for u in uses[key]))
    print(f"hindsight (each chunk dropped after its last use): saved {after_last / total_tokens:.1%}, "
          "no misses")
    print("segments  unused(last)  saved   calls-with-miss")
    best, drop = (0.0, 0.0, 0), set()
    for n, s in enumerate(order, 1):
        drop.add(s)
        saved, miss = evaluate(drop)
        if miss <= args.max_miss and saved > best[0]:
            best = (saved, miss, n)
        if n <= 12 or n % 10 == 0 or miss > 0.3:
            print(f"{n:8}  {seg_unused[s] / seg_tokens[s]:11.1%}  {saved:6.1%}  {miss:6.1%}")
        if miss > 0.3:
            break
    print(f"most saved with misses in <= {args.max_miss:.1%} of calls: {best[0]:.1%} "
          f"(misses in {best[1]:.1%}, first {best[2]} segments)")


if __name__ == "__main__":
    main()
