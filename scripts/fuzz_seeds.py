#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (fuzz/corpus/<target>/seed-*) from the repository's own
fixtures and docs, so every run starts from real shapes of every format. Deterministic: run it
again and nothing changes. Corpus entries the fuzzer found (other names) are left alone.

    python3 scripts/fuzz_seeds.py
"""
import hashlib
import json
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
CORPUS = ROOT / "fuzz" / "corpus"
# Files over this size are left out: libFuzzer's default -max_len is 4 KB for generated inputs,
# and a small corpus stays in the repository.
MAX_SEED = 24 * 1024
# Byte the import target reads as "sniff the format" (>= the number of importers).
SNIFF = 200


def fixtures():
    for path in sorted(FIXTURES.rglob("*")):
        if path.is_file() and path.suffix in {".json", ".jsonl", ".bin"} and "real" not in path.parts:
            data = path.read_bytes()
            if len(data) <= MAX_SEED:
                yield path, data


def write(target, data):
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    name = "seed-" + hashlib.sha1(data).hexdigest()[:16]
    (folder / name).write_bytes(data)


def main():
    for target in ["import", "native_jsonl", "policy", "live_message", "pool_ops"]:
        for old in (CORPUS / target).glob("seed-*"):
            old.unlink()
    for path, data in fixtures():
        write("import", bytes([SNIFF]) + data)
        if path.suffix == ".jsonl":
            write("native_jsonl", b"\x07" + data)
        # Messages for the live parser: every JSON object with a role in the fixtures.
        try:
            records = [json.loads(data)] if path.suffix == ".json" else [
                json.loads(line) for line in data.splitlines() if line.strip()]
        except (ValueError, UnicodeDecodeError):
            continue
        found = []

        def walk(v):
            if isinstance(v, dict):
                if isinstance(v.get("role"), str) and len(found) < 6:
                    found.append(v)
                for x in v.values():
                    walk(x)
            elif isinstance(v, list):
                for x in v:
                    walk(x)

        for r in records:
            walk(r)
        for k, m in enumerate(found):
            text = json.dumps(m).encode()
            if len(text) <= 4096:
                write("live_message", bytes([k]) + text)
    # Policies: every TOML and JSON block of docs/policies.md, and the built-in names' shapes.
    doc = (ROOT / "docs" / "policies.md").read_text()
    for block in re.findall(r"```(?:toml|json)\n(.*?)```", doc, re.S):
        write("policy", block.encode())
    write("policy", b'{"name": "p", "strategy": "value", "value_threshold": 0.2}')
    write("policy", b'name = "p"\nstrategy = "window"\n[cleanup]\ntrigger = 0.8\ntarget = 0.6\n')
    # The pool's operations are decoded by `arbitrary`: any bytes are a run; a few to start.
    for k in range(8):
        write("pool_ops", hashlib.sha256(bytes([k])).digest() * (k + 1))


if __name__ == "__main__":
    main()
