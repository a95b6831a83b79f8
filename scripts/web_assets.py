#!/usr/bin/env python3
"""The tables the web worker fetches on first use (memlens_core::assets), gathered into
target/web-assets/ for Trunk to copy into dist/assets/: tiktoken's o200k_base and cl100k_base
vocabularies (the files tiktoken-rs ships, found through `cargo metadata`) and MemLens' word-vector
table. Run by Trunk as a pre-build hook (Trunk.toml); files already up to date are left alone.
"""
import json, os, pathlib, shutil, subprocess, sys

root = pathlib.Path(__file__).resolve().parent.parent
out = root / 'target' / 'web-assets'
meta = json.loads(subprocess.run(
    ['cargo', 'metadata', '--format-version', '1', '--locked'],
    cwd=root, check=True, capture_output=True, text=True).stdout)
tiktoken = [p for p in meta['packages'] if p['name'] == 'tiktoken-rs']
if len(tiktoken) != 1:
    sys.exit(f'web_assets.py: expected one tiktoken-rs package, found {len(tiktoken)}')
vocabularies = pathlib.Path(tiktoken[0]['manifest_path']).parent / 'assets'
files = [vocabularies / 'o200k_base.tiktoken', vocabularies / 'cl100k_base.tiktoken',
         root / 'crates' / 'memlens-core' / 'data' / 'word-vectors.bin']
out.mkdir(parents=True, exist_ok=True)
for f in files:
    if not f.is_file():
        sys.exit(f'web_assets.py: {f} not found')
    target = out / f.name
    if not target.exists() or target.stat().st_size != f.stat().st_size \
            or target.stat().st_mtime < f.stat().st_mtime:
        shutil.copy2(f, target)
