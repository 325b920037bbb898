"""No path ever leaves the output directory (docs/architecture.md, "Paths stay under the output directory"):
a model named `..` by a hand-written --model-config, and a model file named `...py` in a sweep, write their
log, artifacts, diagnostics and XLA dumps under the output directory and nothing beside it."""

import json
import os

import pytest

from benchmarks.plumbing.safe_paths import safe_name
from helpers import XLA, read_jsonl, run_runner

pytestmark = pytest.mark.integration  # real children, torch and torch_xla

MODEL = '''
import torch


def create_model(batch_size):
    return torch.nn.Linear(4, 2), (torch.randn(batch_size, 4),)
'''
EAGER = {"accelerator": "cpu", "xla": None, "dynamo": None, "test": "eval"}
WRITERS = ["--save-output", "--dump-pytorch-profiles", "--repeat=1", "--warmup=1"]


def files_under(directory):
    return sorted(os.path.relpath(os.path.join(root, name), directory)
                  for root, _, names in os.walk(directory) for name in names)


def assert_listed_paths_exist_inside(record, out):
    listed = [record["error"]["log"]] if record.get("error") and record["error"].get("log") else []
    for value in record["artifacts"].values():
        listed += value if isinstance(value, list) else [value]
    for path in listed:
        full = os.path.realpath(os.path.join(out, path))
        assert full.startswith(os.path.realpath(out) + os.sep) and os.path.exists(full), path


def test_a_hand_written_model_config_named_dot_dot_writes_only_under_the_output_dir(tmp_path):
    (tmp_path / "models").mkdir()
    model_file = tmp_path / "models" / "linear.py"
    model_file.write_text(MODEL)
    out = tmp_path / "work" / "out"
    model = {"suite_name": "files", "model_name": "..", "path": str(model_file)}
    run_runner("--suite-name=files", f"--model-config={json.dumps(model)}", f"--experiment-config={json.dumps(EAGER)}",
               f"--output-dirname={out}", *WRITERS, check_rc=0, timeout=300)
    assert os.listdir(tmp_path / "work") == ["out"]  # nothing in the output directory's parent
    assert sorted(os.listdir(tmp_path)) == ["models", "work"]
    [record] = read_jsonl(out / "results.jsonl")
    assert record["status"] == "ok" and record["model"]["model_name"] == ".."
    assert {"output", "trace", "pytorch-profile"} <= set(record["artifacts"])
    assert_listed_paths_exist_inside(record, out)
    assert all(path.startswith(safe_name("..") + os.sep) for path in files_under(out) if path != "results.jsonl")


def test_a_model_file_named_dot_dot_dot_py_keeps_logs_artifacts_and_xla_dumps_inside(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "...py").write_text(MODEL)
    out = tmp_path / "work" / "out"
    run_runner("--suite-name=files", f"--search-dir={tmp_path / 'models'}", "--accelerator=cpu", "--xla=None",
               "--xla=PJRT", "--dynamo=None", "--test=eval", "--dump-hlo", "--save-ir-format=text",
               f"--output-dirname={out}", *WRITERS, check_rc=0, timeout=600, env={**os.environ, "PJRT_DEVICE": "CPU"})
    assert os.listdir(tmp_path / "work") == ["out"]
    assert sorted(os.listdir(tmp_path)) == ["models", "work"]
    records = read_jsonl(out / "results.jsonl")
    ran = 2 if XLA else 1  # the XLA config is dropped where torch-xla can't run beside this torch
    assert [r["status"] for r in records] == ["ok"] * ran, [r.get("error") for r in records]
    for record in records:
        assert_listed_paths_exist_inside(record, out)
    if XLA:
        xla = next(r for r in records if r["experiment"]["xla"])
        assert {"output", "trace", "hlo", "dump"} <= set(xla["artifacts"])
    written = files_under(out)
    folder = safe_name("...py")  # the model is named `...py` (a stem of dots only): `___py` and its hash
    assert any(path.startswith(os.path.join("logs", folder) + os.sep) for path in written)  # the logs
    assert all(path.startswith((folder + os.sep, "logs" + os.sep)) for path in written if path != "results.jsonl")
