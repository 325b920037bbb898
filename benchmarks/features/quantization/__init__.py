"""TorchAO quantization recipes as an experiment axis (key `quantization`): their names, what each can run
on, pure Python (the parent checks them without torch). The child applies them (features/quantization/child.py).

Recipe strings are TorchAO's own benchmark names. `none` (the default) is the key's null.

The design:

Quantization is an experiment key: `features/quantization/__init__.py` holds the recipe names and their support
rules (no torch), and on CUDA what a card's compute capability must be, int4's packing per device and the recipes
that take bfloat16 weights only; `features/quantization/child.py` applies the recipe with torchao's `quantize_`
right after `Suite.build`, so every suite gets it and `--verify`'s eager reference is quantized alike, after the
checks that make a card, a torch or a model that can't run it a skip record, and records what torchao changed in
Inductor's process-wide settings (a diff of `torch._inductor.config` taken before torchao is imported and after the
recipe). A null `quantization` is left out of the fingerprint, so results written before the key existed still
resume.
"""

from __future__ import annotations

import re
from typing import Optional
from benchmarks.config.axis import Axis, flag_type

# Fixed names -> what the recipe does (torchao config class).
FIXED = {
    "int8wo": "int8 weights, float activations (Int8WeightOnlyConfig)",
    "int8dq": "int8 weights and dynamically quantized int8 activations (Int8DynamicActivationInt8WeightConfig)",
    "float8wo": "float8 e4m3 weights (Float8WeightOnlyConfig)",
    "float8dq-tensor": "float8 weights and activations, one scale per tensor "
                       "(Float8DynamicActivationFloat8WeightConfig, PerTensor)",
    "float8dq-row": "float8 weights and activations, one scale per row "
                    "(Float8DynamicActivationFloat8WeightConfig, PerRow)",
}
# Parameterized names: pattern -> description.
PATTERNS = {
    "int4wo-<group_size>": "int4 weights in groups of 32, 64, 128 or 256 (Int4WeightOnlyConfig)",
    "uintx-<bits>-<group_size>": "unsigned 1..7-bit weights in groups of 32, 64, 128 or 256 (UIntXWeightOnlyConfig)",
}
GROUP_SIZES = (32, 64, 128, 256)
_INT4 = re.compile(r"^int4wo-(\d+)$")
_UINTX = re.compile(r"^uintx-(\d+)-(\d+)$")
KNOWN_TEXT = "none, " + ", ".join(list(FIXED) + list(PATTERNS))


class RecipeError(ValueError):
    """An unknown recipe; the message is one line naming the known ones."""


def parse(text: Optional[str]) -> Optional[str]:
    """'none'/None -> None; a known recipe -> its canonical text; else RecipeError."""
    if text is None or str(text).strip().lower() in ("none", "null", ""):
        return None
    recipe = str(text).strip().lower()
    if recipe in FIXED:
        return recipe
    int4, uintx = _INT4.match(recipe), _UINTX.match(recipe)
    if int4 and int(int4.group(1)) in GROUP_SIZES:
        return recipe
    if uintx and 1 <= int(uintx.group(1)) <= 7 and int(uintx.group(2)) in GROUP_SIZES:
        return recipe
    raise RecipeError(f"unknown quantization recipe {text!r} (known: {KNOWN_TEXT}; "
                      f"group sizes {', '.join(map(str, GROUP_SIZES))})")


def family(recipe: str) -> str:
    """'int4wo-128' -> 'int4wo', 'uintx-4-64' -> 'uintx', 'float8dq-row' -> 'float8dq'."""
    return re.split(r"-", recipe)[0]


def unsupported_reason(recipe: Optional[str], experiment) -> Optional[str]:
    """Why `experiment` cannot run `recipe` (a support-rule drop), known without torch; None if it may."""
    if recipe is None:
        return None
    if experiment.test != "eval":
        return (f"quantization {recipe}: torchao's post-training recipes quantize weights for inference "
                "(quantized weights get no gradient); use --test=eval")
    kind = family(recipe)
    if kind == "float8dq" and experiment.accelerator != "cuda":
        return (f"quantization {recipe}: torchao's float8 dynamic activation kernels need a CUDA GPU of compute "
                f"capability 8.9 or newer (or MI300), not {experiment.accelerator}")
    if kind == "int4wo" and experiment.xla:
        return (f"quantization {recipe}: torchao packs int4 weights for its CPU or CUDA kernels, which XLA tensors "
                "cannot take (use --xla=None)")
    return None


# On CUDA, what a recipe's kernels need of the card (torch.cuda.get_device_capability()), as torchao checks it:
# family -> (the least compute capability, what needs it). A card below it gets a skip record saying so (the child's
# check, features/quantization/child.py: the parent does not know the card's capability).
CUDA_CAPABILITY = {
    "float8dq": ((8, 9), "torchao's float8 dynamic activation kernels (torch._scaled_mm) need compute capability 8.9 "
                         "or newer (Ada, Hopper, Blackwell; or an MI300)"),
    "int4wo": ((8, 0), "torch's own int4 kernel (aten._weight_int4pack_mm, which the tile_packed_to_4d packing feeds) "
                       "needs compute capability 8.0 or newer"),
}
# int4 weights' packing per device: torch's own kernels, never fbgemm-gpu-genai's (torchao's default `plain` packing
# on CUDA needs that package, which a GPU machine without network may lack and which is too big to carry).
INT4_PACKING = {"cuda": "tile_packed_to_4d", "cpu": "opaque"}
# The int4 kernel (tile_packed_to_4d) and float8's row-wise scales take bfloat16 weights only.
BF16_WEIGHTS = {("int4wo", "cuda"): "torch's int4 kernel (the tile_packed_to_4d packing) takes bfloat16 weights",
                ("float8dq-row", "cuda"): "torchao's row-wise float8 scales take bfloat16 weights"}
# What torchao's `set_inductor_config` (every recipe's default, True: torchao.quantization.utils.
# recommended_inductor_config_setter) sets, process-wide, when a recipe is applied; TorchAO's dashboard (PyTorch's
# harness, torchao_backend.setup_baseline) sets them for its unquantized baseline too. The child records what really
# changed (model_info.quantization.inductor_settings_changed); these are the --inductor-config settings (and
# --matmul-precision) that give an unquantized config the same (docs/runner.md, "Quantization").
TORCHAO_INDUCTOR_SETTINGS = {"coordinate_descent_tuning": True, "coordinate_descent_check_all_directions": True,
                             "force_fuse_int_mm_with_mul": True, "fx_graph_cache": True,
                             "triton.unique_kernel_names": True}
TORCHAO_MATMUL_PRECISION = "high"


def card_reason(recipe: str, capability) -> Optional[str]:
    """Why a CUDA card of compute `capability` (major, minor) cannot run `recipe`, or None."""
    need = CUDA_CAPABILITY.get(family(recipe))
    if need is None or tuple(capability) >= need[0]:
        return None
    return f"quantization {recipe}: {need[1]}; this card is {capability[0]}.{capability[1]}"


def weight_dtype_reason(recipe: str, device_type: str, dtypes) -> Optional[str]:
    """Why a model whose linear weights are of `dtypes` (names: {"float32"}) cannot take `recipe` on `device_type`
    (cuda, cpu), or None."""
    need = BF16_WEIGHTS.get((family(recipe), device_type)) or BF16_WEIGHTS.get((recipe, device_type))
    other = sorted(set(dtypes) - {"bfloat16"})
    if need is None or not other:
        return None
    return f"quantization {recipe} on {device_type}: {need}, and this model's are {', '.join(other)}; run it with " \
           "--precision=bf16 (as TorchAO measures its recipes)"


# (name, cannot_run(experiment, capabilities), reason): runner/matrix.py's table adds it (config/axes.py).
SUPPORT_RULES = [("quantization-supported", lambda e, c: unsupported_reason(e.quantization, e) is not None,
                  lambda e, c: unsupported_reason(e.quantization, e))]


ORDER = 10  # the feature's place among the axes (records' key order, --help, labels, the slug)
AXES = (
    Axis(
        "quantization",
        "TorchAO recipe applied after the model is built (repeatable): none (default), "
        + KNOWN_TEXT.replace("none, ", "") + "; experiment key `quantization`",
        parse=parse,
        type=flag_type(parse, ["none", *FIXED, "int4wo-128", "uintx-4-64"]),
        metavar="RECIPE", support_rules=SUPPORT_RULES, label_plus=True, slug="q-{}", example="int8wo",
        meaning="the quantization recipe (null: none)"),
)
