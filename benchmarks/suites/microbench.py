"""`microbench`: single operators as models, over a sweep of shapes and dtypes.

Each (operator, dtype, shape) is one model, named like `matmul-float32-1024x1024x1024`, so the runner's
matrix, isolation, records, resume, analyzer and aggregate apply unchanged. The dtype is also an
experiment key (`--dtype` is a matrix axis): a model is paired only with experiments of its own dtype.
Records carry the operation's FLOP count and its exact bytes (each element read or written once) in `model_info`, and
`metrics.tflops` per repeat; `add` is the memory-bound operator beside matmul (docs/roofline.md).

Adding an operator: a builder in microbench_ops.py and one `OPS` entry here (its FLOP count).
This module does not import torch.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from typing import Callable, Optional

from benchmarks.config import tolerances
from benchmarks.config.flags import PARENT, Group
from benchmarks.suites import BenchmarkModel, ModelSkipped, Suite, model_config


@dataclasses.dataclass(frozen=True)
class Op:
    description: str
    flops: Callable[[int, int, int], int]  # (M, K, N) -> floating-point operations per call
    elements: Callable[[int, int, int], int]  # (M, K, N) -> elements read + written per call, each once


OPS = {
    "matmul": Op("A (MxK) @ B (KxN)", lambda m, k, n: 2 * m * k * n, lambda m, k, n: m * k + k * n + m * n),
    # bias add and relu: one operation each per output element.
    "linear_relu": Op("relu(x (MxK) @ W.T (KxN) + bias (N))", lambda m, k, n: 2 * m * k * n + 2 * m * n,
                      lambda m, k, n: m * k + k * n + n + m * n),
    # memory-bound: one addition per element, two arrays read and one written (into an output made once, as
    # STREAM's kernels write theirs: the output's allocation is not timed)
    "add": Op("a + b, elementwise over M*K*N elements, into an output allocated once", lambda m, k, n: m * k * n,
              lambda m, k, n: 3 * m * k * n),
}
DTYPES = ("float32", "bfloat16", "float16")
ITEMSIZE = {"float32": 4, "bfloat16": 2, "float16": 2}
DEFAULT_OP = "matmul"
DEFAULT_DTYPE = "float32"
DEFAULT_SHAPES = "pow2:256:2048"
MAX_SHAPES = 10000

_NAME = re.compile(r"^(?P<op>[a-z0-9_]+)-(?P<dtype>[a-z0-9]+)-(?P<m>\d+)x(?P<k>\d+)x(?P<n>\d+)$")


# ---------------------------------------------------------------- shape specs


class ShapeSpecError(ValueError):
    """A --shapes value that cannot be read; the message is one line."""


def _ints(item: str, fields: list, count: int) -> list:
    if len(fields) != count:
        raise ShapeSpecError(f"{item!r} needs {count} numbers after its name, separated by ':'")
    try:
        values = [int(field) for field in fields]
    except ValueError:
        raise ShapeSpecError(f"{item!r}: sizes must be whole numbers") from None
    if any(v < 1 for v in values):
        raise ShapeSpecError(f"{item!r}: every number must be positive")
    return values


def _powers_of_two(item: str, low: int, high: int) -> list:
    if low > high:
        raise ShapeSpecError(f"{item!r}: MIN must not be above MAX")
    powers = [1 << p for p in range(high.bit_length()) if low <= 1 << p <= high]
    if not powers:
        raise ShapeSpecError(f"{item!r}: no power of two lies between {low} and {high}")
    return powers


def _expand_item(item: str) -> list:
    name, colon, rest = item.partition(":")
    if not colon:
        sizes = item.lower().split("x")
        if len(sizes) != 3 or not all(s.isdigit() for s in sizes):
            raise ShapeSpecError(f"{item!r} is not a shape: use MxKxN (e.g. 1024x512x256), pow2:MIN:MAX, "
                                 "small_sweep:MIN:MAX or square:START:END:STEP")
        m, k, n = (int(s) for s in sizes)
        if min(m, k, n) < 1:
            raise ShapeSpecError(f"{item!r}: sizes must be positive")
        return [(m, k, n)]
    fields = rest.split(":")
    if name == "pow2":  # M = K = N = 2^p
        low, high = _ints(item, fields, 2)
        return [(s, s, s) for s in _powers_of_two(item, low, high)]
    if name == "small_sweep":  # every M <= K <= N, each a power of two
        low, high = _ints(item, fields, 2)
        sizes = _powers_of_two(item, low, high)
        return [(m, k, n) for m in sizes for k in sizes for n in sizes if m <= k <= n]
    if name == "square":  # M = K = N from START to END (inclusive) by STEP
        start, end, step = _ints(item, fields, 3)
        if start > end:
            raise ShapeSpecError(f"{item!r}: START must not be above END")
        return [(s, s, s) for s in range(start, end + 1, step)]
    raise ShapeSpecError(f"unknown shape sweep {name!r} in {item!r} (known: pow2, small_sweep, square)")


def parse_shapes(spec: str) -> list:
    """'MxKxN,MxKxN', 'pow2:MIN:MAX', 'small_sweep:MIN:MAX', 'square:START:END:STEP', or a comma-separated
    mix of them -> [(M, K, N), ...] in the order given, without repeats."""
    items = [item.strip() for item in str(spec).split(",")]
    if not any(items):
        raise ShapeSpecError("empty shape list")
    shapes = []
    for item in items:
        if not item:
            raise ShapeSpecError(f"empty item in {spec!r}")
        shapes.extend(_expand_item(item))
    shapes = list(dict.fromkeys(shapes))
    if len(shapes) > MAX_SHAPES:
        raise ShapeSpecError(f"{spec!r} makes {len(shapes)} shapes; at most {MAX_SHAPES} per sweep")
    return shapes


def shapes_spec(text: str) -> str:
    """argparse type: validates (bad spec: one line, exit 2, before any child runs); keeps the text."""
    try:
        parse_shapes(text)
    except ShapeSpecError as exc:
        raise argparse.ArgumentTypeError(str(exc))
    return text


def shape_text(shape) -> str:
    return "x".join(str(size) for size in shape)


def model_name(op: str, dtype: str, shape) -> str:
    return f"{op}-{dtype}-{shape_text(shape)}"


def parse_model_name(name: str) -> tuple:
    """'matmul-float32-64x32x16' -> ('matmul', 'float32', (64, 32, 16)); ValueError if it is not one of ours."""
    match = _NAME.match(name)
    if not match or match["op"] not in OPS or match["dtype"] not in DTYPES:
        raise ValueError(f"{name!r} is not a microbench model name (OP-DTYPE-MxKxN, OP one of {', '.join(OPS)}, "
                         f"DTYPE one of {', '.join(DTYPES)})")
    shape = (int(match["m"]), int(match["k"]), int(match["n"]))
    if min(shape) < 1:
        raise ValueError(f"{name!r}: sizes must be positive")
    return match["op"], match["dtype"], shape


def experiment_dtype(experiment) -> Optional[str]:
    return dict(experiment.extra).get("dtype")


# ---------------------------------------------------------------- the suite


SUITE_NAME = "microbench"
DESCRIPTION = "single operators (matmul, add: the roofline's known kernels)"
ORDER = 70


class MicrobenchSuite(Suite):
    name = SUITE_NAME

    # The parent's only: a child's operator, shape and dtype are in its model and experiment configs.
    _group = Group("microbench suite (--suite-name=microbench)")
    flags = (
        _group.flag("--op", PARENT, f"operator(s) to time (repeatable; default {DEFAULT_OP}): "
                    + "; ".join(f"{name}: {op.description}" for name, op in OPS.items()), repeatable=True,
                    choices=list(OPS)),
        _group.flag("--shapes", PARENT, "shapes MxKxN: a list (1024x1024x1024,512x256x128), or a sweep: pow2:MIN:MAX "
                    "(M=K=N=2^p), small_sweep:MIN:MAX (every M<=K<=N power of two), square:START:END:STEP (M=K=N, END "
                    f"included); repeatable; default {DEFAULT_SHAPES}", repeatable=True, type=shapes_spec,
                    metavar="SPEC"),
        _group.flag("--dtype", PARENT, f"data type (repeatable: an experiment axis, key `dtype`); default "
                    f"{DEFAULT_DTYPE}", repeatable=True, choices=list(DTYPES)),
    )

    def shapes(self, flags) -> list:
        shapes = []
        for spec in getattr(flags, "shapes", None) or [DEFAULT_SHAPES]:
            shapes.extend(parse_shapes(spec))
        return list(dict.fromkeys(shapes))

    def list_models(self, flags) -> list:
        ops = list(dict.fromkeys(getattr(flags, "op", None) or [DEFAULT_OP]))
        dtypes = list(dict.fromkeys(getattr(flags, "dtype", None) or [DEFAULT_DTYPE]))
        return [model_config(self.name, model_name(op, dtype, shape))
                for op in ops for shape in self.shapes(flags) for dtype in dtypes]

    def extra_axes(self, flags) -> dict:
        return {"dtype": list(dict.fromkeys(getattr(flags, "dtype", None) or [DEFAULT_DTYPE]))}

    def matches(self, model_config: dict, experiment) -> bool:
        wanted = experiment_dtype(experiment)
        try:
            return wanted is None or parse_model_name(model_config["model_name"])[1] == wanted
        except ValueError:
            return True  # not ours to judge; build() says what is wrong with the name

    def skip_reason(self, model_config, experiment, flags) -> Optional[str]:
        if experiment.test != "eval":
            return "microbench times operators for inference only (use --test=eval)"
        if experiment.batch_size is not None:
            return "microbench operators have no batch size: their sizes come from --shapes"
        return None

    def build(self, model_config, experiment, device, flags) -> BenchmarkModel:
        from benchmarks.suites import microbench_ops

        op, dtype, shape = parse_model_name(model_config["model_name"])
        wanted = experiment_dtype(experiment)
        if wanted is not None and wanted != dtype:
            raise ValueError(f"model {model_config['model_name']} is {dtype}, but the experiment asks for {wanted}")
        reason = microbench_ops.dtype_skip_reason(op, dtype, device)
        if reason:
            raise ModelSkipped(reason)
        module, inputs = microbench_ops.build(op, dtype, shape, device)
        m, k, n = shape
        info = {"op": op, "dtype": dtype, "shape": {"M": m, "K": k, "N": n}, "flops": OPS[op].flops(m, k, n),
                "bytes": OPS[op].elements(m, k, n) * ITEMSIZE[dtype]}
        return BenchmarkModel(module=module, example_inputs=inputs, batch_size=None, info=info,
                              tolerance=tolerances.mean_rel_error(self.name, dtype))


SUITE = MicrobenchSuite()
