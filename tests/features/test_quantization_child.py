"""features/quantization/child.py on CUDA, here without a GPU: the recipes' device rules (a card below a recipe's compute
capability is a skip record that says so, tested with a faked capability), int4's packing (torch's own
tile_packed_to_4d kernel on CUDA, never fbgemm's), bfloat16 weights where a kernel takes only those, a torch without
the int4 kernel, and what torchao changes in Inductor's settings, recorded (the recipe applied for real on the CPU)."""

import types

import pytest
import torch

from benchmarks.features import quantization
from benchmarks.features.quantization import child as quantization_child
from benchmarks.suites import ModelSkipped

RECIPES = ("int8dq", "int8wo", "int4wo-128", "float8dq-row", "float8dq-tensor", "float8wo")


def model(dtype=torch.float32):
    return types.SimpleNamespace(module=torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(),
                                                            torch.nn.Linear(256, 16)).to(dtype), info={})


@pytest.fixture
def card(monkeypatch):
    """A CUDA card of the capability a test sets (card(8, 0)), as torch.cuda.get_device_capability answers."""
    def set_capability(major, minor):
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (major, minor))
    return set_capability


@pytest.mark.parametrize("capability, refused", [
    ((7, 5), {"int4wo-128", "float8dq-row", "float8dq-tensor"}),  # T4
    ((8, 0), {"float8dq-row", "float8dq-tensor"}),  # A100
    ((8, 6), {"float8dq-row", "float8dq-tensor"}),  # A10, RTX 3090
    ((8, 9), set()), ((9, 0), set()), ((10, 0), set())])  # L4, H100, B200
def test_a_card_below_a_recipes_capability_is_a_skip_record_that_says_so(card, capability, refused):
    card(*capability)
    for recipe in RECIPES:
        problem = quantization_child.card_problem(recipe, "cuda")
        assert bool(problem) == (recipe in refused), (recipe, problem)
        if problem:
            assert problem == quantization.card_reason(recipe, capability)
            assert f"this card is {capability[0]}.{capability[1]}" in problem
            assert ("8.9" if recipe.startswith("float8dq") else "8.0") in problem
            with pytest.raises(ModelSkipped, match=f"this card is {capability[0]}.{capability[1]}"):
                quantization_child.apply(model(torch.bfloat16), recipe, "cuda")  # before torchao or the model is touched
    assert quantization_child.card_problem("float8dq-row", "cpu") is None  # the CPU's rules are the support rules'


@pytest.mark.requires_torchao
def test_int4_on_cuda_packs_for_torchs_own_kernel_and_the_cpu_keeps_its_own():
    config = quantization_child.torchao_config("int4wo-64", "cuda")
    assert str(getattr(config.int4_packing_format, "value", config.int4_packing_format)) == "tile_packed_to_4d"
    assert config.group_size == 64
    config = quantization_child.torchao_config("int4wo-128", "cpu")
    assert str(getattr(config.int4_packing_format, "value", config.int4_packing_format)) == "opaque"
    float8 = {recipe: quantization_child.torchao_config(recipe, "cuda") for recipe in ("float8dq-row", "float8dq-tensor")}
    assert {r: type(c.granularity[0] if isinstance(c.granularity, (list, tuple)) else c.granularity).__name__
            for r, c in float8.items()} == {"float8dq-row": "PerRow", "float8dq-tensor": "PerTensor"}
    assert type(quantization_child.torchao_config("float8wo", "cuda")).__name__ == "Float8WeightOnlyConfig"


def test_a_torch_without_the_int4_kernel_is_a_skip_record_naming_it():
    assert quantization_child.int4_kernel_problem("int4wo-128", "cuda") is None  # this torch has it
    problem = quantization_child.int4_kernel_problem("int4wo-128", "cuda", aten=types.SimpleNamespace())
    assert "has no aten._weight_int4pack_mm" in problem and "tile_packed_to_4d" in problem
    assert quantization_child.int4_kernel_problem("int8wo", "cuda", aten=types.SimpleNamespace()) is None
    assert quantization_child.int4_kernel_problem("int4wo-128", "cpu", aten=types.SimpleNamespace()) is None


def test_kernels_that_take_bfloat16_weights_skip_a_float32_model_naming_the_precision_to_ask_for(card):
    card(9, 0)
    for recipe in ("int4wo-128", "float8dq-row"):
        with pytest.raises(ModelSkipped, match="this model's are float32; run it with --precision=bf16"):
            quantization_child.apply(model(torch.float32), recipe, "cuda")
    assert quantization.weight_dtype_reason("float8dq-tensor", "cuda", {"float32"}) is None
    assert quantization.weight_dtype_reason("int4wo-128", "cuda", {"bfloat16"}) is None
    assert quantization.weight_dtype_reason("int4wo-128", "cpu", {"float32"}) is None  # the CPU's packing takes it


@pytest.fixture
def inductor_state(monkeypatch):
    """Inductor's settings and the matmul precision put back after a recipe changed them in this process."""
    import torch._inductor.config as config

    saved, precision = config.get_config_copy(), torch.get_float32_matmul_precision()
    monkeypatch.setattr(quantization_child, "CHANGED", {})
    yield
    config.load_config(saved)
    torch.set_float32_matmul_precision(precision)


@pytest.mark.requires_torchao
def test_the_record_says_which_inductor_settings_torchao_changed(inductor_state):
    import torch._inductor.config as config

    torch.set_float32_matmul_precision("highest")
    config.coordinate_descent_tuning = False
    before = quantization_child.inductor_settings()
    bm = model()
    quantization_child.apply(bm, "int8wo", "cpu")
    info = bm.info["quantization"]
    assert (info["recipe"], info["linear_layers"]) == ("int8wo", 2) and "packing" not in info
    changed = info["inductor_settings_changed"]
    # what set_inductor_config sets (features/quantization/__init__.py's list), where this torch's value was another
    assert {k: v for k, v in quantization.TORCHAO_INDUCTOR_SETTINGS.items() if before[k] != v} == {
        k: changed[k] for k in quantization.TORCHAO_INDUCTOR_SETTINGS if k in changed}
    assert changed["coordinate_descent_tuning"] is True and config.coordinate_descent_tuning is True
    assert changed["float32_matmul_precision"] == quantization.TORCHAO_MATMUL_PRECISION
    assert all(isinstance(v, (bool, int, float, str, type(None))) and "0x" not in str(v) for v in changed.values())
    # a second recipe in the same process changes nothing more; its record still says what is in force
    again = model()
    quantization_child.apply(again, "int4wo-128", "cpu")
    assert again.info["quantization"]["inductor_settings_changed"] == changed
    assert again.info["quantization"]["packing"] == "opaque"


def test_changed_settings_keeps_only_what_differs_and_names_objects_by_their_type():
    class Pass:
        pass

    before = {"a": False, "b": 1, "pass": None}
    after = {"a": True, "b": 1, "pass": Pass(), "new": "x"}
    changed = quantization_child.changed_settings(before, after)
    assert changed == {"a": True, "pass": f"{Pass.__module__}.{Pass.__qualname__}", "new": "x"}
