"""Gzipped trace files (``x.traj.json.gz``, ``x.jsonl.gz``), by path or as bytes: read as their
plain copies are, a broken one a ValueError naming it, one that decompresses past the memory
limit refused. The fixtures are gzipped copies in tests/fixtures/web of the repository."""

import gzip
import json
import os
import pathlib
import subprocess
import sys

import memlens
import pytest

FIXTURES = pathlib.Path(__file__).resolve().parents[3] / "tests" / "fixtures"
PAIRS = [
    ("web/v2-toolcall.traj.json.gz", "mini-swe-agent/v2-toolcall.traj.json"),
    ("web/cache-breaks.jsonl.gz", "openai/cache-breaks.jsonl"),
]


@pytest.mark.parametrize("packed,plain", PAIRS)
def test_a_gzipped_path_or_bytes_imports_as_its_plain_copy(packed, plain, cli):
    packed, plain = FIXTURES / packed, FIXTURES / plain
    want = memlens.import_trace(plain)
    assert memlens.import_trace(packed)["traces"] == want["traces"]
    assert memlens.import_trace(packed.read_bytes(), name="x.gz")["traces"] == want["traces"]
    # inspect gives what the CLI prints for the plain file (less the file name).
    theirs = json.loads(subprocess.run([str(cli), "inspect", str(plain), "--json"],
                                       check=True, capture_output=True).stdout)
    ours = memlens.inspect(packed)
    assert ours["traces"] == [{k: v for k, v in t.items() if k != "file"} for t in theirs["traces"]]


def test_a_truncated_or_corrupt_gzip_file_is_a_value_error_naming_it():
    whole = (FIXTURES / PAIRS[0][0]).read_bytes()
    with pytest.raises(ValueError, match=r"^cut\.traj\.json\.gz: .*corrupt or truncated"):
        memlens.import_trace(whole[: len(whole) // 2], name="cut.traj.json.gz")
    with pytest.raises(ValueError, match="corrupt or truncated"):
        memlens.simulate(whole[:30] + bytes(64), name="bad.gz", policy="window", budget=1000)


def test_the_columns_of_gzipped_files_are_those_of_the_plain_files():
    packed = memlens.columns([FIXTURES / p for p, _ in PAIRS], names=["a", "b"], tables=["traces"])
    plain = memlens.columns([FIXTURES / p for _, p in PAIRS], names=["a", "b"], tables=["traces"])
    assert packed["errors"].num_rows == 0
    assert packed["traces"].equals(plain["traces"])


def test_a_gzip_file_that_decompresses_past_the_limit_is_refused(tmp_path):
    # A gzip bomb in miniature: 4 MB of spaces in a few KB, under a 1 MB limit (the module reads
    # MEMLENS_MAX_INPUT_BYTES when it loads, so in a fresh interpreter).
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b"[" + b" " * (4 << 20) + b"]"))
    assert bomb.stat().st_size < 1 << 20
    code = ("import memlens, sys\n"
            "try:\n    memlens.import_trace(sys.argv[1])\n"
            "except ValueError as e:\n    print(e)\n")
    env = dict(os.environ, MEMLENS_MAX_INPUT_BYTES=str(1 << 20))
    out = subprocess.run([sys.executable, "-c", code, str(bomb)], env=env, check=True,
                         capture_output=True, text=True).stdout
    assert f"{bomb}: decompresses to more than 1 MB" in out, out
    # Without the lowered limit the same file decompresses (and is an empty array, not a trace).
    with pytest.raises(ValueError, match="empty array"):
        memlens.import_trace(bomb)


def test_the_gzipped_mini_swe_agent_runs_read_as_99_traces(data):
    files = sorted((data / "traces" / "mini-swe-agent-deepseek").glob("*.traj.json.gz"))
    assert len(files) == 99
    tables = memlens.columns(files, tables=["traces"])
    assert tables["errors"].num_rows == 0
    assert tables["traces"].num_rows == 99
