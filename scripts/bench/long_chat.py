#!/usr/bin/env python3
"""Builds long LoCoMo-format conversations for the evidence benchmark's memory and time at scale
(BENCHMARKS, "Evidence"): each output conversation is LoCoMo's sessions laid end to end, starting
at a different source conversation and cycling through all ten until it holds about `--tokens`
tokens (4 characters a token), with its speakers renamed to one pair, sessions renumbered and
each question's evidence ids moved with its turns. Content repeats after one pass over LoCoMo
(~175k tokens): recall on these files measures nothing; memory and time do.

usage: scripts/bench/long_chat.py LOCOMO_JSON OUT_JSON [--conversations 3] [--tokens 500000]
                                  [--questions N]   (N per conversation, evenly spaced; all: 0)
"""
import argparse
import json
import re


def sessions(conv):
    """The (date, turns) of each session of a LoCoMo conversation, in order."""
    c = conv["conversation"]
    numbers = sorted(int(m.group(1)) for k in c if (m := re.fullmatch(r"session_(\d+)", k)))
    return [(c.get(f"session_{n}_date_time", ""), c[f"session_{n}"], n) for n in numbers]


def build(source, start, tokens):
    names = ("Ann", "Bo")
    out = {"sample_id": f"long-{start}", "conversation": {"speaker_a": names[0],
                                                          "speaker_b": names[1]}, "qa": []}
    chars, number, k = 0, 0, start
    while chars < tokens * 4:
        conv = source[k % len(source)]
        c = conv["conversation"]
        rename = {c["speaker_a"]: names[0], c["speaker_b"]: names[1]}
        moved = {}
        for date, turns, old in sessions(conv):
            number += 1
            new_turns = []
            for t in turns:
                t = dict(t)
                turn = t["dia_id"].split(":", 1)[1] if ":" in t["dia_id"] else t["dia_id"]
                new_id = f"D{number}:{turn}"
                moved[t["dia_id"]] = new_id
                t["dia_id"] = new_id
                t["speaker"] = rename.get(t["speaker"], t["speaker"])
                chars += len(t.get("text", ""))
                new_turns.append(t)
            out["conversation"][f"session_{number}_date_time"] = date
            out["conversation"][f"session_{number}"] = new_turns
        for qa in conv["qa"]:
            qa = dict(qa)
            qa["evidence"] = [moved.get(e, e) for e in qa.get("evidence", [])]
            out["qa"].append(qa)
        k += 1
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("locomo")
    ap.add_argument("out")
    ap.add_argument("--conversations", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=500_000)
    ap.add_argument("--questions", type=int, default=0)
    a = ap.parse_args()
    source = json.load(open(a.locomo, encoding="utf-8"))
    convs = [build(source, i, a.tokens) for i in range(a.conversations)]
    for c in convs:
        if 0 < a.questions < len(c["qa"]):
            step = len(c["qa"]) / a.questions
            c["qa"] = [c["qa"][int(i * step)] for i in range(a.questions)]
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(convs, f)


if __name__ == "__main__":
    main()
