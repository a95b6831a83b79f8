"""Seeds a tiktoken cache with the vocabularies the tiktoken-rs crate ships, and prints its path.

Python tiktoken (and LlamaIndex's default tokenizer, through it) downloads o200k_base and
cl100k_base on first use; this machine has no internet. The files tiktoken-rs ships are the
identical ones (tiktoken checks their SHA-256 before use). `export TIKTOKEN_CACHE_DIR=$(python3
scripts/tiktoken_cache.py)` before running tiktoken."""

import glob
import hashlib
import os
import shutil
import sys
import tempfile


def seed() -> str:
    cache = os.path.join(tempfile.gettempdir(), "memlens-tiktoken-cache")
    os.makedirs(cache, exist_ok=True)
    home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
    for name in ("o200k_base", "cl100k_base"):
        url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
        target = os.path.join(cache, hashlib.sha1(url.encode()).hexdigest())
        if not os.path.exists(target):
            found = sorted(glob.glob(f"{home}/registry/src/*/tiktoken-rs-*/assets/{name}.tiktoken"))
            if not found:
                sys.exit(f"{name}.tiktoken not found in the cargo registry (build the workspace first)")
            shutil.copyfile(found[-1], target)
    return cache


if __name__ == "__main__":
    print(seed())
