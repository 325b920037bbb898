"""The backend registry (config/backend_registry.py): one declaration per --dynamo backend, read by the support rules,
the plan's typo check, the probe's cache key and the child's torch.compile; a user's entry-point plugin listed beside
the in-repo ones."""

import pytest

from helpers import install_plugin

from benchmarks.config import backend_registry as backends
from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.runner import matrix
from benchmarks.runner.capabilities import Capabilities

TORCH_LISTED = ("inductor", "eager", "aot_eager", "openxla")
CAPS = Capabilities(dynamo_backends=TORCH_LISTED, torch_xla_error=None, xla_devices=("CPU",))


def config(dynamo, xla=None, test="eval"):
    return ExperimentConfig(accelerator="cpu", xla=xla, dynamo=dynamo, test=test)


@pytest.fixture
def throwaway(monkeypatch):
    """A backend declared for one test: torch's aot_eager under another name, native devices only."""
    monkeypatch.setitem(backends.REGISTRY, "tiny_alias", backends.Backend("tiny_alias", compiles_with="aot_eager",
                                                                          devices=backends.NATIVE_ONLY))
    return "tiny_alias"


def test_the_registry_lists_the_in_repo_backends_and_an_installed_entry_point_plugin(tmp_path, monkeypatch):
    assert {"inductor", "aot_eager", "openxla", "openxla_eval", "export", "export_nonstrict",
            "aot_inductor"} <= set(backends.names())
    assert "tiny_plugin" not in backends.names()
    install_plugin(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # where importlib.metadata (and torch, in the child) finds it
    assert "tiny_plugin" in backends.names()
    assert backends.get("tiny_plugin") == backends.Backend("tiny_plugin")  # undeclared: torch's as is
    assert backends.get("tiny_plugin").torch_name == "tiny_plugin"


def test_each_declaration_says_what_the_rules_and_the_child_read():
    assert backends.get(None) is None and not backends.exports(None) and not backends.uses_inductor(None)
    assert [name for name in backends.REGISTRY if backends.exports(name)] == ["export", "export_nonstrict",
                                                                               "aot_inductor"]
    assert [name for name in backends.REGISTRY if backends.uses_inductor(name)] == ["inductor"]
    assert [name for name in backends.REGISTRY if backends.generates_code(name)] == ["inductor", "aot_inductor"]
    assert [name for name in backends.REGISTRY if backends.runs_on(name) == backends.XLA_ONLY] == ["openxla",
                                                                                                  "openxla_eval"]
    assert backends.get("export").torch_name is None  # an export asks torch for no dynamo backend
    assert backends.available("export", ()) and not backends.available("inductor", ("eager",))


def test_a_declared_backend_is_one_registration_the_support_rules_and_the_plan_follow(throwaway):
    assert matrix.unsupported_reason(config(throwaway), CAPS) is None  # its torch backend (aot_eager) is listed
    assert matrix.unsupported_reason(config(throwaway, xla="PJRT"), CAPS) == \
        "tiny_alias compiles for native devices, not XLA tensors (use --xla=None)"
    assert matrix.unsupported_reason(config(throwaway), Capabilities(dynamo_backends=("eager",))) == \
        "dynamo backend 'tiny_alias' is not registered (torch._dynamo.list_backends)"
    assert throwaway in backends.known(TORCH_LISTED) and "openxla_eval" not in backends.known(TORCH_LISTED)


def test_the_support_rules_reasons_for_the_in_repo_backends_are_unchanged():
    assert matrix.unsupported_reason(config("inductor", xla="PJRT"), CAPS) == \
        "inductor compiles for native devices, not XLA tensors (use --xla=None)"
    assert matrix.unsupported_reason(config("openxla"), CAPS) == \
        "dynamo backend openxla runs on XLA devices only (add --xla=PJRT)"
    assert matrix.unsupported_reason(config("aot_inductor", xla="PJRT"), CAPS) == \
        "--dynamo=aot_inductor exports for native devices, not XLA tensors (use --xla=None)"
    assert matrix.unsupported_reason(config("export", test="train"), CAPS) == \
        "--dynamo=export measures inference only (the dashboard's export and aot_inductor)"
    assert matrix.unsupported_reason(config("aot_eager", xla="PJRT"), CAPS) is None  # any device


def test_the_child_compiles_a_declared_backend_with_the_torch_backend_it_names(throwaway):
    import torch
    import torch._dynamo

    from benchmarks.child import backends as child_backends

    torch._dynamo.reset()
    compiled = child_backends.compile_fn(lambda x: torch.sin(x) + 1, config(throwaway))
    x = torch.linspace(0, 1, 8)
    assert torch.equal(compiled(x), torch.sin(x) + 1)
    assert torch._dynamo.utils.counters["aot_autograd"]["total"] >= 1  # aot_eager's AOTAutograd ran it
