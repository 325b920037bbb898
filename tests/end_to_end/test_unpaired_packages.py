"""A package built for another torch (README.md, "Your own torch") costs the configs that need it, each a skip record
saying why, and never the sweep: torchvision (the torchvision suite, and timm's, which imports it) and TorchAO
(--quantization). Each is made unloadable for real: a package of that name first on PYTHONPATH that fails as such a
build does when imported (the registry's torchvision 0.28.0 beside torch 2.13.0+cpu: "operator torchvision::nms does
not exist"); and a module the fork server can't preload."""

import importlib.util
import os

import pytest

from helpers import PYTHON, ROOT, read_jsonl, run_runner

pytestmark = pytest.mark.integration  # real sweeps

EAGER = ["--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval", "--repeat=1", "--warmup=0"]


def unloadable(root, name: str, error: str) -> dict:
    """The environment of a sweep in which `import name` raises `error` (the parent never imports it)."""
    package = root / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f"raise {error}\n")
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])))


def test_a_torchvision_that_does_not_load_costs_its_suites_configs_with_why_and_nothing_else(tmp_path):
    env = unloadable(tmp_path / "site", "torchvision", 'RuntimeError("operator torchvision::nms does not exist")')
    out = tmp_path / "out"
    vision = run_runner("--suite-name=torchvision", "-k", "^resnet18$", '--model-params={"image_size": 32}', *EAGER,
                        f"--output-dirname={out}", env=env, check_rc=0)
    [record] = read_jsonl(out / "results.jsonl")
    assert record["status"] == "skip" and record["error"]["phase"] == "load", record["error"]
    message = record["error"]["message"]
    assert message.startswith("the torchvision suite needs torchvision, and torchvision")
    assert "does not load beside torch 2." in message
    assert "(RuntimeError: operator torchvision::nms does not exist); pip install torchvision" in message
    assert "Traceback" not in vision.stderr
    # the same environment's other suites run as ever, forked from the same kind of server
    run_runner("--suite-name=dummy", "-k", "^mlp$", *EAGER, "--dynamo=aot_eager", f"--output-dirname={out}",
               env=env, check_rc=0)
    dummy = [r for r in read_jsonl(out / "results.jsonl") if r["model"]["suite_name"] == "dummy"]
    assert [r["status"] for r in dummy] == ["ok", "ok"] and {r["environment"]["launch"] for r in dummy} == {"fork"}


def test_timm_which_imports_torchvision_is_a_skip_too(tmp_path):
    if importlib.util.find_spec("timm") is None:
        pytest.skip("timm is not installed here (the project's `timm` extra)")
    env = unloadable(tmp_path / "site", "torchvision", 'RuntimeError("operator torchvision::nms does not exist")')
    run_runner("--suite-name=timm", "-k", "^mobilenetv2_100$", '--model-params={"image_size": 32}', *EAGER,
               f"--output-dirname={tmp_path}", env=env, check_rc=0)
    [record] = read_jsonl(tmp_path / "results.jsonl")
    assert record["status"] == "skip" and record["error"]["message"].startswith(
        "the timm suite needs torchvision, and torchvision"), record["error"]


def test_transformers_which_imports_an_installed_torchvision_is_a_skip_too(tmp_path):
    if importlib.util.find_spec("transformers") is None:
        pytest.skip("transformers is not installed here (the project's `huggingface` extra)")
    env = unloadable(tmp_path / "site", "torchvision", 'RuntimeError("operator torchvision::nms does not exist")')
    run_runner("--suite-name=huggingface", "-k", "^BertForMaskedLM$", '--model-params={"num_hidden_layers": 1}', *EAGER,
               f"--output-dirname={tmp_path}", env=env, check_rc=0)
    [record] = read_jsonl(tmp_path / "results.jsonl")
    assert record["status"] == "skip" and record["error"]["message"].startswith(
        "the huggingface suite (transformers imports an installed torchvision) needs torchvision, and torchvision"), \
        record["error"]


def test_a_torchao_that_does_not_load_makes_quantized_configs_skips_saying_why(tmp_path):
    env = unloadable(tmp_path / "site", "torchao", 'ImportError("libtorchao.so: undefined symbol: _ZN3c1017RegisterOp")')
    run_runner("--suite-name=dummy", "-k", "^mlp$", *EAGER, "--quantization=none", "--quantization=int8wo",
               f"--output-dirname={tmp_path}", env=env, check_rc=0)
    records = {r["experiment"]["quantization"]: r for r in read_jsonl(tmp_path / "results.jsonl")}
    assert records[None]["status"] == "ok"
    skipped = records["int8wo"]
    assert skipped["status"] == "skip" and skipped["error"]["phase"] == "load"
    assert skipped["error"]["message"].startswith("quantization int8wo needs torchao, which does not load beside torch 2.")
    assert "(ImportError: libtorchao.so: undefined symbol: _ZN3c1017RegisterOp)" in skipped["error"]["message"]


def test_a_module_the_fork_server_cannot_preload_is_left_to_its_children_and_it_serves(tmp_path):
    """A preload that fails (a package built for another torch, say) is not the server's to die of: its log says
    which and why, and it forks children as ever (each imports what it needs itself, failing or not)."""
    from benchmarks.fork_server import client
    from benchmarks.runner import launcher

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    spec = client.ServerSpec("torch", tuple(sorted(env.items())), (PYTHON, "-m", "benchmarks"))
    server = client.ForkServer(spec, str(tmp_path / "server.log"), preloads=("benchmarks.no_such_module",))
    read_end, write_end = os.pipe()
    try:
        with open(tmp_path / "child.log", "wb") as output:
            request = launcher.ChildRequest(argv=[PYTHON, "-m", "benchmarks", "--help"], env=env,
                                            log_path=str(tmp_path / "child.log"), timeout=300, uses_cuda=False)
            child = server.start(request, env, output.fileno(), write_end)
        assert child.ended_within(300) and child.returncode == 0, child.lost
    finally:
        server.stop()
        os.close(read_end)
        os.close(write_end)
    assert "zygote: preload benchmarks.no_such_module failed (ModuleNotFoundError: No module named " \
           "'benchmarks.no_such_module'); the configs that need it import it themselves" in \
           (tmp_path / "server.log").read_text()
    assert "usage:" in (tmp_path / "child.log").read_text()
