"""TorchAO quantization recipes as an experiment axis (key `quantization`): their names, what each can run
on, pure Python (the parent checks them without torch). The child applies them (child/quantize.py).

Recipe strings are TorchAO's own benchmark names. `none` (the default) is the key's null.
"""

from __future__ import annotations

import re
from typing import Optional

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


# (name, cannot_run(experiment, capabilities), reason): runner/matrix.py's table adds it (config/axes.py).
SUPPORT_RULES = [("quantization-supported", lambda e, c: unsupported_reason(e.quantization, e) is not None,
                  lambda e, c: unsupported_reason(e.quantization, e))]
