"""--shard I/N (issue 63): N stable parts of the expanded configs (not only the models), by fingerprint: across N
every config is in exactly one part, a config's part depends on nothing but the config, each part resumes alone,
and the parts' results files read as one sweep."""

import json
import re

import pytest

from benchmarks.config import shards
from helpers import call_runner, call_tool, read_jsonl

MATRIX = ["--suite-name=dummy", "--accelerator=cpu", "--xla=None", "--dynamo=None", "--dynamo=aot_eager",
          "--dynamo=inductor", "--test=eval", "--test=train", "--batch-size=2", "--batch-size=4"]


def planned(*flags, out) -> list:
    result = call_runner(*MATRIX, *flags, "--dry-run", f"--output-dirname={out}", check_rc=0)
    return re.findall(r"--model-config=(\{.*?\})' '--experiment-config=(\{.*?\})'", result.stdout)


@pytest.mark.parametrize("count", [1, 2, 3, 5])
def test_the_parts_cover_every_config_exactly_once(tmp_path, count):
    whole = planned(out=tmp_path)
    assert len(whole) == len(set(whole)) > 20  # models x backends x tests x batch sizes
    parts = [planned(f"--shard={index}/{count}", out=tmp_path) for index in range(1, count + 1)]
    assert sorted(config for part in parts for config in part) == sorted(whole)  # each once: none twice, none lost
    if count > 1:
        assert all(parts) and len({frozenset(p) for p in parts}) == count  # configs, not models: no part is empty
        models = [{json.loads(model)["model_name"] for model, _ in part} for part in parts]
        assert any(len(m) > 1 for m in models)  # a model's configs spread over the parts


def test_a_configs_part_depends_on_the_config_alone(tmp_path):
    everything = set(planned("--shard=2/3", out=tmp_path))
    only_mlp = set(planned("--shard=2/3", "-k", "^mlp$", out=tmp_path))
    assert only_mlp and only_mlp == {c for c in everything if '"mlp"' in c[0]}


@pytest.mark.parametrize("text,message", [("0/3", "0/3: the part must be 1..3 (parts count from 1)"),
                                          ("4/3", "4/3: the part must be 1..3"), ("3", "expected I/N"),
                                          ("1/0", "the part must be 1..1")])
def test_a_bad_shard_is_one_line_and_exit_2(tmp_path, text, message):
    result = call_runner(*MATRIX, f"--shard={text}", "--dry-run", f"--output-dirname={tmp_path}", check_rc=2)
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_the_part_of_a_fingerprint_is_its_hash_modulo_n():
    found = [shards.parse(f"{i}/4").holds("a config") for i in range(1, 5)]
    assert found.count(True) == 1 and shards.parse(" 2 / 4 ") == shards.Shard(2, 4)
    assert shards.Shard(2, 4).basename("results.jsonl") == "results.shard-2-of-4.jsonl"


def test_parts_run_alone_resume_alone_and_read_as_one_sweep(tmp_path):
    out = tmp_path / "out"
    flags = ["--suite-name=dummy", "--accelerator=cpu", "--xla=None", "--dynamo=None", "--dynamo=aot_eager",
             "--test=eval", "-k", "^(mlp|cnn)$", "--repeat=2", "--warmup=1", "--timestamp=2026-12-01",
             f"--output-dirname={out}"]
    for index in (1, 2):
        call_runner(*flags, f"--shard={index}/2", check_rc=0)
    parts = [read_jsonl(out / f"results.shard-{index}-of-2.jsonl") for index in (1, 2)]
    keys = [(r["model"]["model_name"], str(r["experiment"]["dynamo"])) for part in parts for r in part]
    assert sorted(keys) == sorted((m, d) for m in ("mlp", "cnn") for d in ("None", "aot_eager"))
    again = call_runner(*flags, "--shard=1/2", check_rc=0)  # resumes on its own file: nothing left to run
    assert read_jsonl(out / "results.shard-1-of-2.jsonl") == parts[0] and "0 to run" in again.stderr
    grid = call_tool("aggregate.py", out, "--accelerator=cpu", "--format=csv", "--report=speedup", "-o", "-",
                     check_rc=0).stdout
    assert grid.count("\n") == 2  # one run (one timestamp) of both parts: a header and one row
    report = json.loads(call_tool("compare.py", out, out, "--format=json", "--fail-on=none", check_rc=0).stdout)
    assert len([r for r in report["rows"] if r["time_ratio"] == 1.0]) == 4  # every config of both parts
