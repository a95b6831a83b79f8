#!/usr/bin/env python3
"""Cross-checks MemLens' token counts against Python tiktoken, an independent implementation.

usage: crosscheck_tokens.py MEMLENS_BINARY TRACE_FILE

Runs `memlens inspect --json --chunks --model gpt-4o` and recounts every chunk's content with
tiktoken's o200k_base (special-token text counted as ordinary text, as MemLens does). Exits
non-zero on any difference. tiktoken downloads its vocabulary from the internet on first use; this
machine has none, so the script points tiktoken's cache at the identical o200k_base.tiktoken file
that the tiktoken-rs crate ships (tiktoken verifies its SHA-256 before using it).
"""
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


def o200k():
    cache = os.path.join(tempfile.gettempdir(), "memlens-tiktoken-cache")
    os.makedirs(cache, exist_ok=True)
    target = os.path.join(cache, hashlib.sha1(O200K_URL.encode()).hexdigest())
    if not os.path.exists(target):
        home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
        found = sorted(glob.glob(f"{home}/registry/src/*/tiktoken-rs-*/assets/o200k_base.tiktoken"))
        if not found:
            sys.exit("crosscheck: o200k_base.tiktoken not found in the cargo registry (build the workspace first)")
        shutil.copyfile(found[-1], target)
    os.environ["TIKTOKEN_CACHE_DIR"] = cache
    import tiktoken

    return tiktoken.get_encoding("o200k_base")


def main():
    binary, trace = sys.argv[1], sys.argv[2]
    out = subprocess.run(
        [binary, "inspect", trace, "--json", "--chunks", "--model", "gpt-4o"],
        check=True, capture_output=True, text=True,
    ).stdout
    doc = json.loads(out)
    enc = o200k()
    chunks = mismatches = tokens = 0
    for t in doc["traces"]:
        for c in t["chunk_list"]:
            n = len(enc.encode_ordinary(c["content"]))
            chunks += 1
            tokens += n
            if n != c["content_tokens"]:
                mismatches += 1
                if mismatches <= 5:
                    print(f"MISMATCH {t['id']}/{c['key']}: memlens {c['content_tokens']} tiktoken {n}")
    orphans = sum(t["orphan_tool_results"] for t in doc["traces"])
    print(f"{len(doc['traces'])} traces, {chunks} chunks, {tokens} tokens: {mismatches} mismatches; {orphans} orphaned tool results")
    if mismatches or orphans or not chunks:
        sys.exit(1)


if __name__ == "__main__":
    main()
