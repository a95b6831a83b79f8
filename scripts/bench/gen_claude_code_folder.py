#!/usr/bin/env python3
"""Writes a synthetic Claude Code project folder, deterministic for a seed, for memory benchmarks.

usage: scripts/bench/gen_claude_code_folder.py OUT_DIR [--size-mb 200] [--seed 11]

The folder is what `~/.claude/projects/<project>/` holds: one `<session-uuid>.jsonl` per session
and, for a session that ran subagents, `<session-uuid>/subagents/agent-<id>.jsonl`. Lines follow
the fixtures in tests/fixtures/claude-code/ byte for byte in shape (key order, compact JSON,
raw UTF-8): `summary`, `file-history-snapshot`, `queue-operation` and hook `progress` lines; user
and assistant lines chained by `uuid`/`parentUuid`; an API response written one content block a
line (thinking with its signature, text, tool_use), the lines sharing `message.id` and
`requestId` with the usage (cache reads and writes, the 5m/1h split) repeated and growing;
consecutive tool-result lines with Claude Code's structured `toolUseResult` (Read's file content,
Edit's originalFile and structuredPatch, Bash's stdout...); `Task` calls whose result names the
subagent (`toolUseResult.agentId`) and whose subagent file starts with the call's prompt; and,
when the context would pass ~150k tokens, a `compact_boundary` line (`logicalParentUuid`,
`compactMetadata`) followed by the `isCompactSummary` user line.

The text is varied, not one string repeated: a generated repository of Python, TypeScript and
Rust files (read, grepped and edited through the session), test runs, build and server logs,
git output, and the assistant's explanations, built from word lists with a seeded generator.
Session sizes are drawn from a log-normal (50 KB to 24 MB) until the folder reaches --size-mb.
Prints one JSON line: files, sessions, subagent files, bytes, lines.
"""
import argparse
import json
import os
import random
import uuid
from datetime import datetime, timedelta, timezone

WORDS = """account action adapter address agent alert allocation amount api archive attempt audit
backoff balance batch bill block bucket buffer build bundle cache callback cancel capacity card
cart catalog channel charge checkout chunk claim client clock cluster code column commit config
connection consumer context counter coupon credit cursor customer dashboard data deadline decode
default delivery delta deploy device diff digest discount dispatch document domain draft driver
email encode endpoint entry event export feature fetch field filter flag flush format frame
gateway graph group handler hash header health history hook image index inventory invoice item
job journal key label layer lease ledger limit link listener loader lock log lookup manifest
mapper merchant message metric middleware migration mode model monitor mutex node notice offset
order owner package page parser partition patch path payload payment peer pending permission
pipeline plan plugin policy pool price probe process product profile promo provider proxy queue
quota range rate reader receipt record refund region registry release replica report request
resolver resource response result retry review role route rule runner schedule schema scope
score search secret segment sender session setting shard shipment signal snapshot source span
spec stage state status store stream subscriber summary supplier sync table tag task tax template
tenant test thread ticket timeout token topic total trace tracker transaction transfer trigger
upload user validator value vendor version view visit wallet warehouse webhook worker writer zone""".split()
VERBS = """add apply build check clean collect compute convert create decode delete dispatch emit
encode ensure expand fetch filter find flush format handle index init insert load lookup make
merge normalize open parse patch poll prepare process publish push read rebuild record refresh
register reload remove render replace reset resolve restore retry route run save scan schedule
send serialize set split start stop store sync track transform update upsert validate verify
wait walk write""".split()
ADJ = """active archived async batched broken cached current default empty expired failed first
global invalid last legacy local missing new next old partial pending primary raw remote
retried shared stale strict temporary unknown valid""".split()
LEVELS = ["INFO"] * 6 + ["DEBUG"] * 3 + ["WARN"] * 2 + ["ERROR"]
MODELS = ["claude-sonnet-4-5-20250929"] * 5 + ["claude-opus-4-1-20250805", "claude-haiku-4-5-20251001"]
VERSIONS = ["2.0.46", "2.0.50", "2.0.55", "2.0.61"]
B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
B64 = B62 + "+/"
NON_ASCII = ["→", "✓", "✗", "…", "é", "ü", "—", "°C", "µs", "≥"]


def snake(rng, n=None):
    return "_".join(rng.choice(WORDS) for _ in range(n or rng.randint(1, 3)))


def camel(rng, n=None):
    parts = [rng.choice(WORDS) for _ in range(n or rng.randint(1, 3))]
    return parts[0] + "".join(p.title() for p in parts[1:])


def pascal(rng, n=None):
    return "".join(rng.choice(WORDS).title() for _ in range(n or rng.randint(1, 2)))


def sentence(rng, words=None):
    n = words or rng.randint(6, 18)
    out = []
    for i in range(n):
        r = rng.random()
        if r < 0.12:
            out.append(f"`{snake(rng)}()`")
        elif r < 0.2:
            out.append(rng.choice(VERBS))
        elif r < 0.28:
            out.append(rng.choice(ADJ))
        elif r < 0.31:
            out.append(str(rng.randint(2, 500)))
        elif r < 0.32:
            out.append(rng.choice(NON_ASCII))
        else:
            out.append(rng.choice(WORDS))
    s = " ".join(out)
    return s[0].upper() + s[1:] + rng.choice([".", ".", ".", ":", "?"] if n > 8 else ["."])


def paragraph(rng, n=None):
    return " ".join(sentence(rng) for _ in range(n or rng.randint(2, 6)))


# --- a generated repository -------------------------------------------------------------------


def python_file(rng, lines):
    out = [f'"""{sentence(rng)}"""', ""]
    for _ in range(rng.randint(2, 6)):
        out.append(rng.choice([f"import {rng.choice(WORDS)}", f"from {snake(rng, 2)} import {pascal(rng)}, {snake(rng)}"]))
    out.append("")
    while len(out) < lines:
        if rng.random() < 0.3:
            cls = pascal(rng)
            out += ["", f"class {cls}({rng.choice(['object', 'Base' + cls, 'Exception', 'dataclass'])}):",
                    f'    """{sentence(rng)}"""', ""]
            for _ in range(rng.randint(1, 4)):
                out += [f"    def {snake(rng)}(self, {snake(rng, 1)}, {snake(rng, 1)}=None):"]
                out += python_body(rng, 8) + [""]
        else:
            out += ["", f"def {snake(rng)}({', '.join(snake(rng, 1) for _ in range(rng.randint(0, 3)))}):"]
            out += python_body(rng, 4)
    return "\n".join(out[:lines]) + "\n"


def python_body(rng, indent):
    pad = " " * indent
    body = []
    for _ in range(rng.randint(2, 9)):
        k = rng.random()
        a, b = snake(rng, 1), snake(rng)
        if k < 0.25:
            body.append(f"{pad}{a} = {b}({snake(rng, 1)}, {rng.randint(0, 100)})")
        elif k < 0.4:
            body += [f"{pad}if {a} is None or {a}.{snake(rng, 1)} > {rng.randint(1, 1000)}:",
                     f"{pad}    raise ValueError(f\"{sentence(rng, 5)[:-1]}: {{{a}!r}}\")"]
        elif k < 0.55:
            body += [f"{pad}for {a} in self.{b}:", f"{pad}    {snake(rng, 1)}.{rng.choice(VERBS)}({a})"]
        elif k < 0.65:
            body.append(f"{pad}# {sentence(rng)}")
        elif k < 0.75:
            body.append(f"{pad}logger.{rng.choice(['info', 'debug', 'warning'])}(\"{rng.choice(VERBS)} %s\", {a})")
        else:
            body.append(f"{pad}{a}.{rng.choice(VERBS)}_{rng.choice(WORDS)}({b}={rng.choice(['True', 'False', 'None', str(rng.randint(0, 9))])})")
    body.append(f"{pad}return {rng.choice([snake(rng, 1), 'None', 'True', snake(rng) + '(' + snake(rng, 1) + ')'])}")
    return body


def ts_file(rng, lines):
    out = [f"import {{ {pascal(rng)}, {camel(rng)} }} from './{camel(rng, 1)}';" for _ in range(rng.randint(2, 5))]
    out.append("")
    while len(out) < lines:
        if rng.random() < 0.3:
            out += [f"export interface {pascal(rng)} {{"]
            out += [f"  {camel(rng)}{rng.choice(['', '?'])}: {rng.choice(['string', 'number', 'boolean', pascal(rng) + '[]', 'Date | null'])};" for _ in range(rng.randint(2, 7))]
            out += ["}", ""]
        else:
            out += [f"export {rng.choice(['async ', ''])}function {camel(rng)}({camel(rng, 1)}: {pascal(rng)}): {rng.choice(['Promise<void>', 'number', 'string', pascal(rng)])} {{"]
            for _ in range(rng.randint(2, 8)):
                k = rng.random()
                if k < 0.3:
                    out.append(f"  const {camel(rng)} = await {camel(rng)}({camel(rng, 1)}.{camel(rng, 1)});")
                elif k < 0.5:
                    out += [f"  if (!{camel(rng)}) {{", f"    throw new Error('{sentence(rng, 5)[:-1]}');", "  }"]
                elif k < 0.65:
                    out.append(f"  // {sentence(rng)}")
                else:
                    out.append(f"  {camel(rng)}.{rng.choice(VERBS)}({camel(rng)}, {rng.randint(0, 500)});")
            out += [f"  return {camel(rng)};", "}", ""]
    return "\n".join(out[:lines]) + "\n"


def rust_file(rng, lines):
    out = [f"//! {sentence(rng)}", ""]
    out += [f"use crate::{snake(rng, 1)}::{{{pascal(rng)}, {snake(rng)}}};" for _ in range(rng.randint(2, 5))]
    out.append("")
    while len(out) < lines:
        if rng.random() < 0.3:
            out += [f"/// {sentence(rng)}", "#[derive(Debug, Clone, PartialEq)]", f"pub struct {pascal(rng)} {{"]
            out += [f"    pub {snake(rng)}: {rng.choice(['u32', 'u64', 'String', 'Option<String>', 'Vec<u8>', pascal(rng)])}," for _ in range(rng.randint(2, 6))]
            out += ["}", ""]
        else:
            out += [f"/// {sentence(rng)}", f"pub fn {snake(rng)}({snake(rng, 1)}: &{pascal(rng)}) -> Result<{rng.choice(['u64', 'String', '()', pascal(rng)])}, Error> {{"]
            for _ in range(rng.randint(2, 8)):
                k = rng.random()
                if k < 0.3:
                    out.append(f"    let {snake(rng, 1)} = {snake(rng)}(&{snake(rng, 1)})?;")
                elif k < 0.5:
                    out += [f"    if {snake(rng, 1)}.{snake(rng, 1)} > {rng.randint(1, 4096)} {{",
                            f"        return Err(Error::{pascal(rng)}(\"{sentence(rng, 4)[:-1]}\".into()));", "    }"]
                elif k < 0.65:
                    out.append(f"    // {sentence(rng)}")
                else:
                    out.append(f"    {snake(rng, 1)}.{rng.choice(VERBS)}_{rng.choice(WORDS)}({rng.randint(0, 64)});")
            out += [f"    Ok({snake(rng, 1)})", "}", ""]
    return "\n".join(out[:lines]) + "\n"


def make_repo(rng, root, n_files):
    files = {}
    for _ in range(n_files):
        kind = rng.choice(["py", "py", "ts", "rs"])
        lines = int(min(900, max(12, rng.lognormvariate(4.6, 0.8))))
        if kind == "py":
            path = f"{root}/{rng.choice(['src/app', 'src/app/' + snake(rng, 1), 'tests'])}/{snake(rng, 2)}.py"
            files[path] = python_file(rng, lines)
        elif kind == "ts":
            path = f"{root}/web/src/{rng.choice(['components', 'lib', 'pages', 'api'])}/{camel(rng, 2)}.ts"
            files[path] = ts_file(rng, lines)
        else:
            path = f"{root}/crates/{snake(rng, 1)}/src/{snake(rng, 1)}.rs"
            files[path] = rust_file(rng, lines)
    return files


def numbered(text, start=1):
    """Read's view: `cat -n` with 6-wide numbers and a tab."""
    return "".join(f"{i:>6}\t{line}\n" for i, line in enumerate(text.splitlines(), start))


# --- tool runs -------------------------------------------------------------------------------


class Clock:
    def __init__(self, rng, start):
        self.rng, self.t = rng, start

    def tick(self, lo=0.05, hi=3.0):
        self.t += timedelta(seconds=self.rng.uniform(lo, hi))
        return self.t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.t.microsecond // 1000:03d}Z"


def log_lines(rng, clock, n):
    out = []
    for _ in range(n):
        ts = clock.t + timedelta(milliseconds=rng.randint(0, 900000))
        lvl = rng.choice(LEVELS)
        mod = f"{snake(rng, 1)}.{snake(rng, 1)}"
        msg = rng.choice([
            lambda: f"{rng.choice(VERBS)} {rng.choice(WORDS)} id={rng.randint(1000, 99999)} in {rng.randint(1, 900)}ms",
            lambda: f"GET /api/v{rng.randint(1, 3)}/{rng.choice(WORDS)}s/{rng.randint(1, 9999)} {rng.choice([200, 200, 200, 201, 204, 400, 404, 500])} {rng.uniform(0.3, 800):.1f}ms",
            lambda: f"{sentence(rng, rng.randint(5, 12))}",
            lambda: f"retrying {rng.choice(WORDS)} after {rng.choice(['ConnectionResetError', 'TimeoutError', 'HTTP 503'])} (attempt {rng.randint(1, 5)}/5)",
            lambda: f"worker-{rng.randint(1, 16)} {rng.choice(VERBS)}ed batch size={rng.randint(1, 512)} lag={rng.randint(0, 4000)}",
        ])()
        out.append(f"{ts.strftime('%Y-%m-%d %H:%M:%S')},{rng.randint(0, 999):03d} {lvl:<5} [{mod}] {msg}")
    return "\n".join(out)


def pytest_output(rng, paths, fail):
    tests = [p for p in paths if p.endswith(".py")][:6] or ["tests/test_app.py"]
    lines = ["============================= test session starts ==============================",
             f"platform linux -- Python 3.11.{rng.randint(2, 9)}, pytest-8.{rng.randint(0, 3)}.{rng.randint(0, 4)}, pluggy-1.5.0",
             "rootdir: /home/dev/project", f"collected {rng.randint(20, 400)} items", ""]
    for t in tests:
        dots = "".join(rng.choice(".....F" if fail else "......") for _ in range(rng.randint(3, 40)))
        lines.append(f"{t.split('/project/')[-1]} {dots} [{rng.randint(1, 100):>3}%]")
    if fail:
        name = f"test_{snake(rng)}"
        lines += ["", "=================================== FAILURES ===================================",
                  f"___________________________ {name} ___________________________", ""]
        lines += [f"    {l}" for l in python_body(rng, 0)]
        lines += [f">       assert {snake(rng, 1)}.{snake(rng, 1)} == {rng.randint(0, 99)}",
                  f"E       AssertionError: assert {rng.randint(100, 999)} == {rng.randint(0, 99)}", "",
                  f"{tests[0].split('/project/')[-1]}:{rng.randint(10, 300)}: AssertionError",
                  "=========================== short test summary info ============================",
                  f"FAILED {tests[0].split('/project/')[-1]}::{name} - AssertionError",
                  f"========================= 1 failed, {rng.randint(20, 300)} passed in {rng.uniform(0.5, 30):.2f}s ========================="]
    else:
        lines.append(f"============================== {rng.randint(20, 400)} passed in {rng.uniform(0.5, 30):.2f}s ==============================")
    return "\n".join(lines)


def cargo_output(rng, paths):
    rs = [p for p in paths if p.endswith(".rs")] or ["crates/core/src/lib.rs"]
    lines = [f"   Compiling {snake(rng, 1)} v0.{rng.randint(1, 9)}.{rng.randint(0, 20)}" for _ in range(rng.randint(1, 8))]
    if rng.random() < 0.4:
        p = rng.choice(rs).split("/project/")[-1]
        lines += [f"error[E0{rng.randint(300, 599)}]: {sentence(rng, 7)[:-1].lower()}",
                  f"  --> {p}:{rng.randint(1, 400)}:{rng.randint(1, 60)}", "   |",
                  f"{rng.randint(1, 400):>3} |     let {snake(rng, 1)} = {snake(rng)}(&{snake(rng, 1)})?;",
                  "   |         ^^^^^^^^^ expected `" + pascal(rng) + "`, found `" + pascal(rng) + "`", "",
                  f"error: could not compile `{snake(rng, 1)}` (lib) due to 1 previous error"]
    else:
        lines += [f"    Finished `test` profile [unoptimized + debuginfo] target(s) in {rng.uniform(1, 90):.2f}s",
                  f"     Running unittests src/lib.rs (target/debug/deps/{snake(rng, 1)}-{rng.getrandbits(64):016x})", ""]
        lines += [f"test {snake(rng, 1)}::tests::{snake(rng)} ... ok" for _ in range(rng.randint(3, 40))]
        lines.append(f"\ntest result: ok. {rng.randint(3, 200)} passed; 0 failed; 0 ignored; finished in {rng.uniform(0, 4):.2f}s")
    return "\n".join(lines)


def git_output(rng, repo, paths):
    k = rng.random()
    if k < 0.35:
        return "On branch " + rng.choice(["main", "fix/" + snake(rng), "feat/" + snake(rng)]) + "\nChanges not staged for commit:\n" + "\n".join(
            f"\tmodified:   {p.split('/project/')[-1]}" for p in rng.sample(paths, min(len(paths), rng.randint(1, 6))))
    if k < 0.6:
        return "\n".join(f"{rng.getrandbits(28):07x} {sentence(rng, rng.randint(4, 10))[:-1]}" for _ in range(rng.randint(5, 30)))
    p = rng.choice(paths)
    lines = repo[p].splitlines()
    at = rng.randint(0, max(0, len(lines) - 8))
    out = [f"diff --git a/{p.split('/project/')[-1]} b/{p.split('/project/')[-1]}", f"index {rng.getrandbits(28):07x}..{rng.getrandbits(28):07x} 100644",
           f"--- a/{p.split('/project/')[-1]}", f"+++ b/{p.split('/project/')[-1]}", f"@@ -{at + 1},7 +{at + 1},8 @@"]
    for l in lines[at:at + 7]:
        out.append(rng.choice([" ", " ", " ", "-", "+"]) + l)
    return "\n".join(out)


class Session:
    """One session file (or subagent file): writes lines, tracks the chain, usage and context."""

    def __init__(self, gen, path, session_id, agent_id=None, start=None):
        self.gen, self.rng = gen, gen.rng
        self.f = open(path, "w", encoding="utf-8")
        self.session_id, self.agent_id = session_id, agent_id
        self.version = gen.version
        self.parent = None
        self.clock = Clock(self.rng, start or gen.next_start())
        self.context = self.rng.randint(9000, 16000)  # system prompt + tools: cached
        self.bytes = 0
        self.lines = 0
        self.model = gen.model

    def write(self, obj):
        s = json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"
        self.f.write(s)
        self.bytes += len(s.encode("utf-8"))
        self.lines += 1

    def head(self):
        d = {"parentUuid": self.parent, "isSidechain": self.agent_id is not None, "userType": "external",
             "cwd": self.gen.cwd, "sessionId": self.session_id, "version": self.version, "gitBranch": self.gen.branch}
        if self.agent_id:
            d["agentId"] = self.agent_id
        return d

    def uuid(self):
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def user(self, content, tool_use_result=None, extra=None):
        u = self.uuid()
        d = self.head()
        d["type"] = "user"
        d["message"] = {"role": "user", "content": content}
        d["uuid"] = u
        d["timestamp"] = self.clock.tick()
        if extra:
            d.update(extra)
        if tool_use_result is not None:
            d["toolUseResult"] = tool_use_result
        self.write(d)
        self.parent = u
        self.context += tokens_of(content)

    def response(self, blocks, final):
        """One API response: one line per block, sharing message.id and requestId."""
        rid = "msg_01" + "".join(self.rng.choice(B62) for _ in range(22))
        req = "req_011C" + "".join(self.rng.choice(B62) for _ in range(18))
        new = self.rng.randint(50, 3000)
        write_1h = self.rng.random() < 0.2
        out_total = sum(tokens_of(b) for b in blocks) + self.rng.randint(5, 40)
        out = 0
        for i, block in enumerate(blocks):
            out = max(out + 1, out_total * (i + 1) // len(blocks))
            last = i == len(blocks) - 1
            usage = {"input_tokens": self.rng.randint(1, 12), "cache_creation_input_tokens": new,
                     "cache_read_input_tokens": self.context,
                     "cache_creation": {"ephemeral_5m_input_tokens": 0 if write_1h else new,
                                        "ephemeral_1h_input_tokens": new if write_1h else 0},
                     "output_tokens": out, "service_tier": "standard"}
            stop = final if last else None
            d = self.head()
            d["message"] = {"id": rid, "type": "message", "role": "assistant", "model": self.model, "content": [block],
                            "stop_reason": stop, "stop_sequence": None, "usage": usage}
            d["requestId"] = req
            d["type"] = "assistant"
            u = self.uuid()
            d["uuid"] = u
            d["timestamp"] = self.clock.tick(0.2, 6.0)
            self.write(d)
            self.parent = u
        self.context += new + out_total

    def progress(self, tool_id, name):
        u = self.uuid()
        d = self.head()
        d["type"] = "progress"
        d["data"] = {"type": "hook_progress", "hookEvent": "PostToolUse", "hookName": f"PostToolUse:{name}"}
        d["toolUseID"] = tool_id
        d["parentToolUseID"] = tool_id
        d["uuid"] = u
        d["timestamp"] = self.clock.tick(0.01, 0.2)
        self.write(d)
        self.parent = u

    def compact(self):
        u = self.uuid()
        d = self.head()
        d = {"parentUuid": None, "logicalParentUuid": self.parent, **{k: v for k, v in d.items() if k != "parentUuid"}}
        pre = self.context
        d.update({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted", "isMeta": False,
                  "timestamp": self.clock.tick(20, 90), "uuid": u, "level": "info",
                  "compactMetadata": {"trigger": self.rng.choice(["auto", "auto", "auto", "manual"]), "preTokens": pre}})
        self.write(d)
        self.parent = u
        self.context = self.rng.randint(9000, 16000)
        summary = ("This session is being continued from a previous conversation that ran out of context. "
                   "The conversation is summarized below:\nAnalysis:\n" + paragraph(self.rng, 4) + "\n\nSummary:\n"
                   + "\n".join(f"{i}. {sentence(self.rng)} ({self.rng.choice(self.gen.paths).split('/project/')[-1]})" for i in range(1, self.rng.randint(5, 12)))
                   + "\nPlease continue the conversation from where we left it off without asking the user any further questions.")
        self.user(summary, extra={"isVisibleInTranscriptOnly": True, "isCompactSummary": True})

    def close(self):
        self.f.close()


def tokens_of(x):
    return len(json.dumps(x, ensure_ascii=False)) // 4 + 1


def tool_id(rng):
    return "toolu_01" + "".join(rng.choice(B62) for _ in range(22))


class Generator:
    def __init__(self, out, seed, size_mb):
        self.rng = rng = random.Random(seed)
        self.out = out
        self.target = int(size_mb * 1_000_000)
        project = rng.choice(["shop", "ledger", "atlas", "relay", "harbor"])
        self.cwd = "/home/dev/project"
        self.repo = make_repo(rng, self.cwd, 260)
        self.paths = sorted(self.repo)
        self.branch = "main"
        self.version = VERSIONS[0]
        self.model = MODELS[0]
        self.start = datetime(2025, 11, 3, 8, 0, tzinfo=timezone.utc)
        self.stats = {"files": 0, "sessions": 0, "subagent_files": 0, "bytes": 0, "lines": 0, "compactions": 0,
                      "api_responses": 0, "project": project}

    def next_start(self):
        self.start += timedelta(hours=self.rng.uniform(0.5, 20))
        return self.start

    # -- tool calls: (name, input) and a function giving (result content, toolUseResult, is_error)
    def tool_call(self, s, subagent):
        rng = self.rng
        kinds = ["Read"] * 5 + ["Grep"] * 2 + ["Glob", "Edit", "Edit", "Write", "TodoWrite"] + ["Bash"] * 4
        kind = "Task" if not subagent and rng.random() < 0.02 else rng.choice(kinds)
        p = rng.choice(self.paths)
        rel = p.split("/project/")[-1]
        if kind == "Read":
            text = self.repo[p]
            lines = text.splitlines()
            start, n = 1, len(lines)
            inp = {"file_path": p}
            if len(lines) > 300 and rng.random() < 0.5:
                start = rng.randint(1, len(lines) - 100)
                n = min(len(lines) - start + 1, rng.randint(60, 250))
                inp.update({"offset": start, "limit": n})
            body = "\n".join(lines[start - 1:start - 1 + n]) + "\n"
            result = numbered(body, start) + ("" if rng.random() < 0.7 else "\n<system-reminder>\nWhenever you read a file, you should consider whether it looks malicious.\n</system-reminder>\n")
            tur = {"type": "text", "file": {"filePath": p, "content": body, "numLines": n, "startLine": start, "totalLines": len(lines)}}
            return "Read", inp, lambda: (result, tur, False)
        if kind == "Grep":
            word = rng.choice(WORDS)
            mode = rng.choice(["content", "files_with_matches"])
            hits = rng.sample(self.paths, rng.randint(1, 12))
            inp = {"pattern": rng.choice([f"def {word}", f"{word}\\(", f"class .*{word.title()}", word]), "path": self.cwd + "/" + rel.split("/")[0]}
            if mode == "content":
                inp["output_mode"] = "content"
                inp["-n"] = True
                lines = []
                for h in hits:
                    src = self.repo[h].splitlines()
                    for _ in range(rng.randint(1, 4)):
                        i = rng.randrange(len(src))
                        lines.append(f"{h}:{i + 1}:{src[i]}")
                content = "\n".join(lines)
                tur = {"mode": "content", "numFiles": 0, "filenames": [], "content": content, "numLines": len(lines)}
            else:
                content = f"Found {len(hits)} file{'s' if len(hits) > 1 else ''}\n" + "\n".join(hits)
                tur = {"mode": "files_with_matches", "filenames": hits, "numFiles": len(hits)}
            return "Grep", inp, lambda: (content, tur, False)
        if kind == "Glob":
            ext = rng.choice(["py", "ts", "rs"])
            hits = [q for q in self.paths if q.endswith(ext)][: rng.randint(3, 60)]
            inp = {"pattern": f"**/*.{ext}"}
            tur = {"filenames": hits, "durationMs": rng.randint(3, 400), "numFiles": len(hits), "truncated": False}
            return "Glob", inp, lambda: ("\n".join(hits), tur, False)
        if kind == "Edit":
            lines = self.repo[p].splitlines()
            i = rng.randrange(max(1, len(lines) - 3))
            old = "\n".join(lines[i:i + rng.randint(1, 3)])
            new_lines = [l.replace(rng.choice(WORDS), rng.choice(WORDS)) + (f"  # {sentence(rng, 5)}" if rng.random() < 0.3 else "") for l in lines[i:i + 3]]
            new = "\n".join(new_lines)
            inp = {"file_path": p, "old_string": old, "new_string": new}
            original = self.repo[p]
            fail = rng.random() < 0.08 or not old.strip()
            if fail:
                msg = f"<tool_use_error>String to replace not found in file.\nString: {old}</tool_use_error>"
                return "Edit", inp, lambda: (msg, "Error: String to replace not found in file.\nString: " + old, True)
            updated = original.replace(old, new, 1)
            self.repo[p] = updated
            snippet = numbered("\n".join(updated.splitlines()[max(0, i - 4):i + 8]), max(1, i - 3))
            content = f"The file {p} has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n{snippet}"
            tur = {"filePath": p, "oldString": old, "newString": new, "originalFile": original,
                   "structuredPatch": [{"oldStart": i + 1, "oldLines": old.count("\n") + 1, "newStart": i + 1, "newLines": new.count("\n") + 1,
                                        "lines": ["-" + l for l in old.splitlines()] + ["+" + l for l in new_lines]}],
                   "userModified": False, "replaceAll": False}
            return "Edit", inp, lambda: (content, tur, False)
        if kind == "Write":
            q = f"{self.cwd}/{rng.choice(['src/app', 'tests', 'scripts'])}/{snake(rng, 2)}.py"
            text = python_file(rng, rng.randint(20, 160))
            self.repo[q] = text
            if q not in self.paths:
                self.paths.append(q)
            inp = {"file_path": q, "content": text}
            tur = {"type": "create", "filePath": q, "content": text, "structuredPatch": []}
            return "Write", inp, lambda: (f"File created successfully at: {q}", tur, False)
        if kind == "TodoWrite":
            todos = [{"content": sentence(rng, rng.randint(4, 9))[:-1], "status": rng.choice(["pending", "in_progress", "completed"]),
                      "activeForm": rng.choice(VERBS).title() + "ing " + snake(rng).replace("_", " ")} for _ in range(rng.randint(2, 7))]
            inp = {"todos": todos}
            tur = {"oldTodos": todos[1:], "newTodos": todos}
            msg = "Todos have been modified successfully. Ensure that you continue to use the todo list to track your progress. Please proceed with the current tasks if applicable"
            return "TodoWrite", inp, lambda: (msg, tur, False)
        if kind == "Bash":
            which = rng.random()
            if which < 0.3:
                fail = rng.random() < 0.3
                cmd = rng.choice(["python -m pytest -q", f"python -m pytest {rel} -x", "pytest tests/ -q --no-header"])
                out = pytest_output(rng, self.paths, fail)
            elif which < 0.5:
                cmd = rng.choice(["cargo test -p " + snake(rng, 1), "cargo build --release", "cargo clippy --all-targets"])
                out = cargo_output(rng, self.paths)
                fail = "error[" in out
            elif which < 0.7:
                cmd = rng.choice(["git status", "git log --oneline -20", "git diff"])
                out = git_output(rng, self.repo, self.paths)
                fail = False
            elif which < 0.9:
                cmd = rng.choice([f"tail -n 200 logs/{snake(rng, 1)}.log", f"grep -i error logs/app.log | tail -50", "docker compose logs api --tail 100"])
                out = log_lines(rng, s.clock, rng.randint(10, 200))
                fail = False
            else:
                cmd = f"ls -la {rel.rsplit('/', 1)[0]}"
                out = f"total {rng.randint(8, 400)}\n" + "\n".join(
                    f"-rw-r--r-- 1 dev dev {rng.randint(100, 90000):>6} Nov {rng.randint(1, 30):>2} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} {q.rsplit('/', 1)[-1]}"
                    for q in rng.sample(self.paths, rng.randint(3, 20)))
                fail = False
            inp = {"command": cmd, "description": sentence(rng, rng.randint(3, 6))[:-1]}
            if fail:
                content = f"Exit code 1\n{out}"
                return "Bash", inp, lambda: (content, "Error: " + content, True)
            tur = {"stdout": out, "stderr": "", "interrupted": False, "isImage": False}
            return "Bash", inp, lambda: (out, tur, False)
        # Task: a subagent with a file of its own
        prompt = f"{sentence(rng, rng.randint(10, 20))} Look in {rel} and related modules. {sentence(rng)} Report file paths and line numbers."
        inp = {"subagent_type": rng.choice(["general-purpose", "Explore", "Plan"]), "description": " ".join(sentence(rng, 4)[:-1].split()[:4]), "prompt": prompt}

        def run():
            agent = f"{rng.getrandbits(32):08x}"
            report, n_tools, tokens = self.subagent(s, agent, prompt)
            content = [{"type": "text", "text": report}]
            tur = {"status": "completed", "prompt": prompt, "agentId": agent, "content": content,
                   "totalDurationMs": rng.randint(3000, 300000), "totalTokens": tokens, "totalToolUseCount": n_tools}
            return content, tur, False
        return "Task", inp, run

    def subagent(self, parent, agent, prompt):
        d = os.path.join(self.out, parent.session_id, "subagents")
        os.makedirs(d, exist_ok=True)
        s = Session(self, os.path.join(d, f"agent-{agent}.jsonl"), parent.session_id, agent_id=agent, start=parent.clock.t)
        s.user(prompt)
        target = int(min(2_000_000, max(15_000, self.rng.lognormvariate(11.2, 0.9))))
        n_tools = self.converse(s, target, subagent=True)
        report = self.final_text(s)
        s.response([{"type": "text", "text": report}], "end_turn")
        s.close()
        self.account(s, subagent=True)
        parent.clock.t = max(parent.clock.t, s.clock.t)
        return report, n_tools, s.context

    def final_text(self, s):
        rng = self.rng
        parts = [paragraph(rng, rng.randint(1, 3)), ""]
        parts += [f"- `{rng.choice(self.paths).split('/project/')[-1]}:{rng.randint(1, 400)}` {sentence(rng)}" for _ in range(rng.randint(2, 7))]
        if rng.random() < 0.4:
            p = rng.choice(self.paths)
            ext = p.rsplit(".", 1)[-1]
            snippet = "\n".join(self.repo[p].splitlines()[:rng.randint(4, 16)])
            parts += ["", f"```{ {'py': 'python', 'ts': 'typescript', 'rs': 'rust'}[ext] }", snippet, "```"]
        return "\n".join(parts)

    def converse(self, s, target, subagent):
        """Task, tool loop, answer; user prompts again, until the file reaches `target` bytes."""
        rng = self.rng
        n_tools = 0
        while s.bytes < target:
            # One agent turn: responses with tool calls until one ends without.
            for _ in range(rng.randint(1, 14)):
                blocks = []
                if rng.random() < 0.6:
                    blocks.append({"type": "thinking", "thinking": paragraph(rng, rng.randint(1, 5)),
                                   "signature": "".join(rng.choice(B64) for _ in range(rng.randint(200, 1400)))})
                if rng.random() < 0.7:
                    blocks.append({"type": "text", "text": paragraph(rng, rng.randint(1, 2))})
                calls = [self.tool_call(s, subagent) for _ in range(rng.choice([1, 1, 1, 1, 2, 2, 3]))]
                ids = []
                for name, inp, _ in calls:
                    ids.append(tool_id(rng))
                    blocks.append({"type": "tool_use", "id": ids[-1], "name": name, "input": inp})
                s.response(blocks, "tool_use")
                self.stats["api_responses"] += 1
                for tid, (name, _, run) in zip(ids, calls):
                    content, tur, err = run()
                    block = {"tool_use_id": tid, "type": "tool_result", "content": content}
                    if err:
                        block["is_error"] = True
                    s.user([block], tur)
                    n_tools += 1
                    if rng.random() < 0.15:
                        s.progress(tid, name)
                if s.context > 150_000 and not subagent:
                    s.compact()
                    self.stats["compactions"] += 1
                if s.bytes >= target:
                    break
            s.response([{"type": "text", "text": self.final_text(s)}], "end_turn")
            self.stats["api_responses"] += 1
            if s.bytes < target and not subagent:
                if rng.random() < 0.1:
                    s.write({"type": "queue-operation", "operation": "enqueue", "timestamp": s.clock.tick(),
                             "sessionId": s.session_id, "content": sentence(rng, 6)})
                s.write({"type": "file-history-snapshot", "messageId": s.uuid(),
                         "snapshot": {"messageId": s.uuid(), "trackedFileBackups": {}, "timestamp": s.clock.tick()},
                         "isSnapshotUpdate": False})
                s.user(self.prompt())
        return n_tools

    def prompt(self):
        rng = self.rng
        p = rng.choice(self.paths).split("/project/")[-1]
        return rng.choice([
            lambda: f"The {rng.choice(WORDS)} test fails since the last change. Can you fix it? {sentence(rng)}",
            lambda: f"Add {rng.choice(['a', 'an optional'])} `{snake(rng)}` parameter to `{snake(rng)}` in {p}, and tests.",
            lambda: f"{sentence(rng, rng.randint(8, 25))} See {p}.",
            lambda: f"Refactor {p}: {sentence(rng)} Keep the public API.",
            lambda: f"Here is the traceback I get:\n```\nTraceback (most recent call last):\n  File \"{self.cwd}/{p}\", line {rng.randint(1, 300)}, in {snake(rng)}\n    {snake(rng)}({snake(rng, 1)})\n{pascal(rng)}Error: {sentence(rng, 8)}\n```\nWhat is wrong?",
            lambda: "Go on.",
            lambda: "Yes, do that, and run the tests.",
        ])()

    def account(self, s, subagent=False):
        self.stats["files"] += 1
        self.stats["subagent_files" if subagent else "sessions"] += 1
        self.stats["bytes"] += s.bytes
        self.stats["lines"] += s.lines

    def session(self):
        rng = self.rng
        if rng.random() < 0.3:
            self.version = rng.choice(VERSIONS)
            self.model = rng.choice(MODELS)
            self.branch = rng.choice(["main", "main", f"fix/{snake(rng)}", f"feat/{snake(rng)}"])
        sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        s = Session(self, os.path.join(self.out, f"{sid}.jsonl"), sid)
        target = int(min(24_000_000, max(50_000, rng.lognormvariate(14.6, 1.1))))
        target = min(target, max(50_000, self.target - self.stats["bytes"]))
        leaf = s.uuid()
        if rng.random() < 0.5:
            s.write({"type": "summary", "summary": sentence(rng, rng.randint(3, 7))[:-1], "leafUuid": leaf})
        s.write({"type": "file-history-snapshot", "messageId": leaf,
                 "snapshot": {"messageId": leaf, "trackedFileBackups": {}, "timestamp": s.clock.tick()}, "isSnapshotUpdate": False})
        s.user(self.prompt())
        self.converse(s, target, subagent=False)
        s.close()
        self.account(s)

    def run(self):
        os.makedirs(self.out, exist_ok=True)
        while self.stats["bytes"] < self.target:
            self.session()
        return self.stats


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--size-mb", type=float, default=200)
    ap.add_argument("--seed", type=int, default=11)
    a = ap.parse_args()
    if os.path.exists(a.out) and os.listdir(a.out):
        raise SystemExit(f"{a.out}: not empty")
    print(json.dumps(Generator(a.out, a.seed, a.size_mb).run()))


if __name__ == "__main__":
    main()
