"""A metric declared in the catalog with speedup=True (docs/architecture.md's metric recipe) is a speedup metric of
aggregate.py by name, with nothing else edited: in a process of its own, whose catalog holds a throwaway per-run
metric (declared at start by a sitecustomize), so no other test's catalog sees it."""

import json
import os
import subprocess
import sys

import pytest

from tests.helpers import RUN1, ROOT, hand_record

# A per-run time (lower is better) that each config's records carry beside their times: eager 8 ms, the backend's 2
# ms for mlp and 4 ms for cnn, so its speedups are 4.0 and 2.0 and their geomean sqrt(8).
NEWCOMER = "nc_step_time"
VALUES = {("mlp", None): 8e-3, ("mlp", "inductor"): 2e-3, ("cnn", None): 8e-3, ("cnn", "inductor"): 4e-3}

DECLARE = (
    "from benchmarks.results import metric_catalog as c\n"
    f"c.declare(c.Metric({NEWCOMER!r}, c.TIME, 's', 'a throwaway per-run metric', speedup=True))\n"
)


def records(tmp_path) -> str:
    """Hand records whose per-iteration times say the opposite of the new metric (the backend 2x slower), so a
    report that read the wrong metric could not pass."""
    found = []
    for (model, dynamo), value in VALUES.items():
        record = hand_record(model, dynamo, RUN1, 2e-3 if dynamo else 1e-3, 1.0, 1e6)
        record["metrics"][NEWCOMER] = [value] * 3
        found.append(record)
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in found))
    return str(path)


def aggregate(tmp_path, *args, declared=True) -> subprocess.CompletedProcess:
    boot = tmp_path / "boot"
    boot.mkdir(exist_ok=True)
    (boot / "sitecustomize.py").write_text(DECLARE if declared else "", encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(boot), str(ROOT)]), MPLBACKEND="Agg")
    return subprocess.run([sys.executable, f"{ROOT}/aggregate.py", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


def speedups(csv_text: str) -> dict:
    """{column: value} of a --format=csv report's one row."""
    lines = [line for line in csv_text.splitlines() if line.strip()]
    header, row = lines[0].lstrip("# ").split(","), lines[1].split(",")
    return dict(zip(header, row))


def test_a_declared_speedup_metric_is_read_by_name_and_its_geomean_is_right(tmp_path):
    path = records(tmp_path)
    result = aggregate(tmp_path, path, "--format=csv", f"--metric={NEWCOMER}")
    assert result.returncode == 0, result.stderr
    row = speedups(result.stdout)
    inductor = [value for column, value in row.items() if column.startswith("Speedup(Inductor")]
    assert len(inductor) == 1, row
    assert float(inductor[0]) == pytest.approx(8 ** 0.5, rel=1e-3)
    # the default metric reads the per-iteration times: the backend at half speed
    plain = speedups(aggregate(tmp_path, path, "--format=csv").stdout)
    assert float(next(v for c, v in plain.items() if c.startswith("Speedup(Inductor"))) == pytest.approx(0.5, rel=1e-3)


def test_without_the_declaration_the_name_is_refused_in_one_line(tmp_path):
    result = aggregate(tmp_path, records(tmp_path), "--format=csv", f"--metric={NEWCOMER}", declared=False)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "--metric" in result.stderr, result.stderr
