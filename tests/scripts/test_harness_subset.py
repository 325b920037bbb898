"""scripts/gpu/harness_subset.py (`make gpu-harness`): the dynamo harness's part of a TorchBench checkout, to carry to a
lent GPU machine. Built here on a checkout-shaped tree: what it copies, what it leaves, and that gpu-check's harness
finder takes the result as a TorchBench checkout."""

import subprocess

from helpers import PYTHON, ROOT

from scripts.gpu import harness_subset
from scripts.parity import harness as parity_harness


def checkout(root):
    """A tree laid out as pytorch/benchmark: the harness, the package with two models, utils, and a big data file."""
    files = ["userbenchmark/dynamo/dynamobench/common.py", "userbenchmark/dynamo/dynamobench/torchbench.py",
             "userbenchmark/dynamo/dynamobench/torchbench.yaml", "torchbenchmark/__init__.py",
             "torchbenchmark/tasks.py", "torchbenchmark/util/model.py", "torchbenchmark/_components/__init__.py",
             "torchbenchmark/models/__init__.py", "torchbenchmark/models/resnet18/__init__.py",
             "torchbenchmark/models/hf_T5/__init__.py", "torchbenchmark/canary_models/__init__.py",
             "torchbenchmark/canary_models/big/__init__.py", "utils/__init__.py"]
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"# {name}\n")
    (root / "torchbenchmark/models/hf_T5/weights.bin").write_bytes(b"\0" * 4096)
    return root


def test_the_subset_holds_the_harness_the_package_and_only_the_models_asked_for(tmp_path):
    source, out = checkout(tmp_path / "benchmark"), tmp_path / "subset"
    harness_subset.copy_subset(source, out, ["resnet18"])
    got = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert got == ["torchbenchmark/__init__.py", "torchbenchmark/_components/__init__.py",
                   "torchbenchmark/canary_models/__init__.py", "torchbenchmark/models/__init__.py",
                   "torchbenchmark/models/resnet18/__init__.py", "torchbenchmark/tasks.py",
                   "torchbenchmark/util/model.py", "userbenchmark/dynamo/dynamobench/common.py",
                   "userbenchmark/dynamo/dynamobench/torchbench.py", "userbenchmark/dynamo/dynamobench/torchbench.yaml",
                   "utils/__init__.py"]
    found = parity_harness.find_harness(str(out), ROOT)  # gpu-check's HARNESS_DIR takes it as a checkout
    assert found.layout == "torchbench" and found.torchbench_dir.resolve() == out.resolve()


def test_not_a_checkout_or_a_model_it_lacks_is_one_line_and_exit_2(tmp_path):
    source = checkout(tmp_path / "benchmark")
    for args, words in ((["--torchbench", str(tmp_path / "nothing")], "is not a TorchBench checkout"),
                        (["--torchbench", str(source), "--models", "resnet18,nope"], "has no nope")):
        done = subprocess.run([PYTHON, "-m", "scripts.gpu.harness_subset", *args,
                               "--out", str(tmp_path / "out")], capture_output=True, text=True, cwd=ROOT)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and words in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
