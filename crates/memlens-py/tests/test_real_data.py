"""On the real shared data: the pool decides call by call as `memlens simulate` does, and the
trace functions return exactly what the CLI's --json prints."""

import json
import subprocess

import memlens
import pytest
from memlens import MemoryPool

POLICIES = ["value", "window", "recall", "value-compress", "langchain-trim"]
BUDGET = 4000


def cli_json(cli, *args):
    out = subprocess.run([str(cli), *map(str, args), "--json"], check=True, capture_output=True)
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def trajectories(tau):
    return json.loads(tau.read_bytes())


@pytest.mark.parametrize("policy", POLICIES)
def test_the_pool_decides_like_the_simulator_on_all_200_tau_bench_trajectories(
    policy, tau, cli, trajectories
):
    report = memlens.simulate(tau, policy=policy, budget=BUDGET, model="gpt-4o")
    assert report == cli_json(cli, "simulate", tau, "--policy", policy, "--budget", BUDGET, "--model", "gpt-4o")
    assert len(report["traces"]) == len(trajectories) == 200
    compared = 0
    for record, trace in zip(trajectories, report["traces"]):
        # No clock: the trace has no times, and replayed in a burst every tool would seem to
        # take no time.
        pool = MemoryPool(model="gpt-4o", budget=BUDGET, policy=policy, clock=False)
        calls = iter(trace["calls"])
        for message in record["traj"]:
            if message["role"] == "assistant":
                pool.context()
                want = next(calls)
                got = pool.last_context
                assert (got["tokens"], len(got["evicted"]), len(got["compressed"]), got["over_budget"]) == (
                    want["input_tokens"], want["evictions"], want["compressions"], want["over_budget"]
                ), f"{policy} on {trace['id']}: call {want['index']}"
                compared += 1
            pool.add(message)
        assert next(calls, None) is None, f"{trace['id']}: calls left over"
    assert compared > 2000


@pytest.mark.parametrize("which", ["tau", "locomo"])
def test_inspect_gives_the_cli_summaries(which, request, cli):
    path = request.getfixturevalue(which)
    ours = memlens.inspect(path)
    theirs = cli_json(cli, "inspect", path)
    # The CLI adds the file each trace came from beside its summary.
    assert [{k: v for k, v in t.items() if k != "file"} for t in theirs["traces"]] == ours["traces"]
    assert ours["warning_count"] == theirs["warning_count"]
    assert all(t["counted_input_tokens"] > 0 for t in ours["traces"])


def test_analyze_trace_agrees_with_inspect(tau):
    analysis = memlens.analyze_trace(tau)
    summaries = memlens.inspect(tau)["traces"]
    assert len(analysis["traces"]) == len(summaries) == 200
    first = analysis["traces"][0]
    assert first["summary"]["calls"] == summaries[0]["calls"]
    assert first["summary"]["counted_input_tokens"] == summaries[0]["counted_input_tokens"]


def test_import_reads_every_trace(tau, locomo):
    assert len(memlens.import_trace(tau)["traces"]) == 200
    conversations = memlens.import_trace(locomo)
    assert conversations["format"] == "locomo" and len(conversations["traces"]) == 10


def test_a_broken_file_is_a_value_error_naming_it(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('[{"traj": [ {"role": "user", "content": "x"} ')
    with pytest.raises(ValueError, match="broken.json"):
        memlens.inspect(bad)
    with pytest.raises(TypeError):
        memlens.inspect(12)
    with pytest.raises(FileNotFoundError):
        memlens.simulate(tmp_path / "missing.json", policy="window", budget=100)
