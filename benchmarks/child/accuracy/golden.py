"""--save-golden and --golden in the child: store a config's inputs, weights and eager result, or run the config on
stored ones and check its result against the stored result (docs/runner.md, "Golden inputs and outputs").

Save: the eager model (the config's precision and quantization, no dynamo, no XLA), built as the config's is, runs
`STEPS[test]` iterations from a fixed seed; its starting weights, its inputs and its result (eval: the output;
train: the loss and every gradient of the last step) are written as an entry (child/accuracy/golden_store.py).
Check: the config's model is given the entry's weights and inputs right after it is built (so the timing runs on
them too, and --verify's eager reference starts from them alike); after timing, the weights (and optimizer state)
are put back, the same steps run on the config's backend, and the result is compared element by element:
pass when every element is within atol + rtol * |expected|. The record's `golden` key says what was found.
Nothing here raises into the child: a missing or bad entry is a status with the file and the reason.

The design:

`child/accuracy/golden.py` (docs/runner.md has the user's side). `--save-golden`: before the config's own model, the
child builds the eager model (same build, seeds, precision and quantization), keeps CPU copies of its weights and
inputs, runs `STEPS[test]` steps and writes an entry (`golden_store.write_entry`: the three safetensors files, then
the manifest, atomically, an older manifest removed first). `--golden`: `GoldenCheck` reads and checks the manifest
against the config (`golden_store.identity`: the model's suite, name, params and script model, never its path or
labels, so an entry saved in another checkout is used; test, precision, requested batch size; and the format
version) and the files when the child starts; `apply` gives every model the child builds (the config's, and
`--verify`'s eager reference, through the same `build`) the entry's weights and inputs; after timing and `--verify`,
`check` reloads the weights, restores the optimizer and loss-scaler state kept before timing, runs the steps with
the config's own step and compares (`compare`: max abs/rel error, elements outside atol + rtol*|golden|, structure).
The record key is `golden` (an object, after the verification keys); its failures are the record's verdict too
(`accuracy_status.settle`, docs/accuracy.md), which is what every tool reads. The flags themselves are the record's
`golden_request` (`GoldenOptions.request`, written by `config_record` for the child's record and the parent's
alike) and part of the resume fingerprint, so a check or a save is another run than a plain one.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import math
import os
from typing import Any, Optional

from benchmarks.child import tensor_layout
from benchmarks.child.accuracy import golden_store, output_tree
from benchmarks.config import tolerances
from benchmarks.plumbing import disk_writes
from benchmarks.results.accuracy_status import GoldenStatus  # its failures are accuracy statuses too (with_golden)

log = logging.getLogger("benchmarks.child.accuracy.golden")

STEPS = {"eval": 1, "train": 2}
# (atol, rtol) by the lowest floating-point dtype of the result: config/tolerances.py GOLDEN. A manifest may carry a
# model's own pair (edit it), and --golden-atol/--golden-rtol override both.
DTYPE_ORDER = ("float64", "float32", "float16", "bfloat16")  # widest first
MAX_LISTED = 3


def cpu_copy(tree):
    """A detached CPU copy (never a view of the model's own storage, which training changes) in plain containers,
    as the entry's files hold it (child/accuracy/output_tree.py)."""
    return output_tree.plain(output_tree.to_cpu(tree))


def result_of(experiment, module, output) -> Any:
    """What is stored and compared: the output (eval), or the loss and every parameter's gradient (train)."""
    if experiment.test == "train":
        return {"loss": cpu_copy(output), "grad": {name: cpu_copy(p.grad) for name, p in module.named_parameters()}}
    return cpu_copy(output)


def lowest_float_dtype(tree) -> str:
    import torch

    names = {str(leaf.dtype).replace("torch.", "") for leaf in output_tree.leaves(tree).values()
             if isinstance(leaf, torch.Tensor) and leaf.is_floating_point()}
    known = [name for name in DTYPE_ORDER if name in names]
    return known[-1] if known else "float32"


@dataclasses.dataclass
class Figures:
    """The comparison of a result with the golden one: error figures over the floating-point elements, the
    elements outside atol + rtol * |expected|, and what did not match in structure, shape or exact value."""

    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    elements: int = 0
    outside: int = 0
    mismatches: list = dataclasses.field(default_factory=list)

    def status(self) -> tuple:
        """(the golden status: pass or fail_golden, what differs or None)."""
        if self.mismatches:
            shown = "; ".join(self.mismatches[:MAX_LISTED])
            more = len(self.mismatches) - MAX_LISTED
            return GoldenStatus.FAIL_GOLDEN, ("differs from the golden result: " + shown
                                              + (f"; and {more} more" if more > 0 else ""))
        if self.outside:
            return GoldenStatus.FAIL_GOLDEN, (f"{self.outside} of {self.elements} elements outside atol + rtol * "
                                              f"|golden| (max abs error {self.max_abs_error:.3g}, max rel error "
                                              f"{self.max_rel_error:.3g})")
        return GoldenStatus.PASS, None


def compare(expected, actual, atol: float, rtol: float) -> Figures:
    import torch

    figures = Figures()
    paired = output_tree.pairs(expected, actual)
    if paired.missing or paired.extra:
        figures.mismatches.append(f"structure differs (missing {sorted(paired.missing)[:MAX_LISTED]}, "
                                  f"extra {sorted(paired.extra)[:MAX_LISTED]})")
    for path, ref, out in paired.matched:
        where = path or "result"
        if not (isinstance(ref, torch.Tensor) and isinstance(out, torch.Tensor)):
            if isinstance(ref, torch.Tensor) or isinstance(out, torch.Tensor) or ref != out:
                figures.mismatches.append(f"{where}: {str(out)[:40]}, golden {str(ref)[:40]}")
            continue
        if ref.shape != out.shape or ref.dtype != out.dtype:
            figures.mismatches.append(f"{where}: {out.dtype} {tuple(out.shape)}, golden {ref.dtype} {tuple(ref.shape)}")
            continue
        if not ref.is_floating_point():
            if not torch.equal(ref, out):
                figures.mismatches.append(f"{where}: {int((ref != out).sum())} of {ref.numel()} elements differ")
            continue
        r, o = ref.double().reshape(-1), out.double().reshape(-1)
        diff = (o - r).abs()
        same_special = (torch.isnan(r) & torch.isnan(o)) | (torch.isinf(r) & (r == o))
        diff = torch.where(same_special, torch.zeros_like(diff), diff.nan_to_num(nan=math.inf))
        figures.elements += r.numel()
        figures.outside += int((diff > atol + rtol * r.abs()).sum())
        if r.numel():
            figures.max_abs_error = max(figures.max_abs_error, float(diff.max()))
            nonzero = r != 0
            if bool(nonzero.any()):
                figures.max_rel_error = max(figures.max_rel_error, float((diff[nonzero] / r[nonzero].abs()).max()))
    return figures


def finite(value: Optional[float]) -> Optional[float]:
    return value if value is not None and math.isfinite(value) else None


def save(root: str, model_config: dict, experiment, build) -> dict:
    """Write this config's entry from the eager model `build(experiment)` gives; the record's `golden` value."""
    from benchmarks.child import backends, measured_loop
    from benchmarks.suites import tensor_trees

    directory = golden_store.entry_dir(root, model_config, experiment)
    eager = experiment.with_(xla=None, dynamo=None)
    steps = STEPS[experiment.test]
    try:
        bm = build(eager)
        weights = cpu_copy(dict(bm.module.state_dict()))
        inputs = cpu_copy((tuple(bm.example_inputs), dict(bm.example_kwargs)))
        device = backends.target_device(eager)
        module = backends.module_on(bm, device)
        step = measured_loop.make_step(bm, eager, module, tensor_trees.move(tuple(bm.example_inputs), device),
                                       tensor_trees.move(dict(bm.example_kwargs), device))
        backends.seed_everything(eager)
        _, _, output = measured_loop.timed_run(step, eager, steps)
        expected = result_of(eager, module, output)
        dtype = lowest_float_dtype(expected)
        atol, rtol = tolerances.golden(dtype)
        manifest = golden_store.new_manifest(model_config, experiment, steps, atol, rtol, dtype)
        golden_store.write_entry(directory, manifest, {"weights": weights, "inputs": inputs, "expected": expected})
    except Exception as exc:
        if disk_writes.disk_full(exc):  # the disk's failure, not the model's: the sweep stops (single_config.main)
            raise
        log.exception("saving the golden entry raised")
        return {"status": None, "path": directory, "message": f"not saved: {type(exc).__name__}: {str(exc)[:300]}"}
    log.info("golden entry saved in %s (%s, %d step(s), atol %g, rtol %g)", directory, dtype, steps, atol, rtol)
    return {"status": GoldenStatus.SAVED, "path": directory, "steps": steps, "dtype": dtype, "atol": atol, "rtol": rtol}


def stored_in_place_of(built, stored, device):
    """The stored inputs, each tensor copied into the layout, dtype and device of the built tensor at its place (a
    --channels-last input stays channels-last); where the built tree has no tensor of that shape there, the stored
    tensor as it is, on `device` (the model's)."""
    import torch

    if isinstance(stored, torch.Tensor):
        if isinstance(built, torch.Tensor) and built.shape == stored.shape:
            return tensor_layout.like(built, stored)
        return stored.to(device)
    if isinstance(stored, (list, tuple)):
        peers = list(built) if isinstance(built, (list, tuple)) and len(built) == len(stored) else [None] * len(stored)
        items = [stored_in_place_of(peer, item, device) for peer, item in zip(peers, stored)]
        return type(stored)(*items) if hasattr(stored, "_fields") else type(stored)(items)
    if isinstance(stored, dict):
        peers = built if isinstance(built, dict) else {}
        return type(stored)((key, stored_in_place_of(peers.get(key), value, device)) for key, value in stored.items())
    return stored


class GoldenCheck:
    """One config checked against its entry: `apply` to every model built (the config's, --verify's eager one),
    `before_timing`, `check` after timing, then `finish` writes the record's `golden`."""

    def __init__(self, root: str, model_config: dict, experiment, atol: Optional[float], rtol: Optional[float]):
        self.directory = golden_store.entry_dir(root, model_config, experiment)
        self.model_config, self.requested = model_config, experiment
        self.atol_override, self.rtol_override = atol, rtol
        self.status: Optional[str] = None
        self.message: Optional[str] = None
        self.path = self.directory
        self.manifest: Optional[dict] = None
        self.trees: dict = {}
        self.figures: Optional[Figures] = None
        self._initial = None
        self._load()

    def _load(self) -> None:
        try:
            self.manifest = golden_store.read_manifest(self.directory, self.model_config, self.requested)
            if self.manifest is None:
                self.status = GoldenStatus.NO_GOLDEN
                self.path = os.path.join(self.directory, golden_store.MANIFEST)
                self.message = f"no golden entry: {self.path} does not exist (save one with --save-golden)"
                return
            for kind in golden_store.FILES:
                self.trees[kind] = golden_store.read_tree(self.directory, self.manifest, kind)
            args, kwargs = self.trees["inputs"]
            if not isinstance(args, (list, tuple)) or not isinstance(kwargs, dict):
                raise golden_store.GoldenRefused(os.path.join(self.directory, golden_store.FILES["inputs"]),
                                                 "does not hold (args, kwargs)")
        except golden_store.GoldenRefused as exc:
            self._refuse(exc)

    def _refuse(self, exc: "golden_store.GoldenRefused") -> None:
        self.status, self.path, self.message = GoldenStatus.BAD_GOLDEN, exc.path, str(exc)
        self.trees = {}
        log.warning("golden entry refused: %s", exc)

    @property
    def ready(self) -> bool:
        return bool(self.trees) and self.status is None

    @property
    def atol(self) -> float:
        return self.atol_override if self.atol_override is not None else float(self.manifest["atol"])

    @property
    def rtol(self) -> float:
        return self.rtol_override if self.rtol_override is not None else float(self.manifest["rtol"])

    def apply(self, bm):
        """The entry's weights and inputs into a freshly built model (on its base device)."""
        if not self.ready:
            return bm
        try:
            bm.module.load_state_dict(self.trees["weights"])
        except (RuntimeError, KeyError, TypeError) as exc:
            self._refuse(golden_store.GoldenRefused(os.path.join(self.directory, golden_store.FILES["weights"]),
                                                    f"does not fit the model: {str(exc).splitlines()[0][:300]}"))
            return bm
        device = next((t.device for t in bm.module.parameters()), None) or "cpu"
        args, kwargs = self.trees["inputs"]
        # the stored values in the built inputs' layout (--channels-last's stays), dtype and device
        bm.example_inputs = stored_in_place_of(tuple(bm.example_inputs), tuple(args), device)
        bm.example_kwargs = stored_in_place_of(dict(bm.example_kwargs), dict(kwargs), device)
        return bm

    def before_timing(self, experiment, step) -> None:
        """Train: the optimizer's (and loss scaler's) state before timing, to check from it again."""
        if self.ready and experiment.test == "train":
            optimizer, scaler = getattr(step, "optimizer", None), getattr(step, "grad_scaler", None)
            self._initial = (copy.deepcopy(optimizer.state_dict()) if optimizer is not None else None,
                             scaler.state_dict() if scaler is not None else None)

    def check(self, experiment, module, step) -> None:
        if not self.ready:
            return
        from benchmarks.child import backends, measured_loop

        try:
            module.load_state_dict(self.trees["weights"])  # timing trained (eval: changed nothing)
            if self._initial is not None:
                optimizer_state, scaler_state = self._initial
                if optimizer_state is not None:
                    step.optimizer.load_state_dict(optimizer_state)
                if scaler_state is not None:
                    step.grad_scaler.load_state_dict(scaler_state)
            backends.seed_everything(experiment)
            _, _, output = measured_loop.timed_run(step, experiment, int(self.manifest["steps"]))
            self.figures = compare(self.trees["expected"], result_of(experiment, module, output), self.atol, self.rtol)
            self.status, self.message = self.figures.status()
            log.info("golden %s: max abs error %g, max rel error %g (atol %g, rtol %g)", self.status,
                     self.figures.max_abs_error, self.figures.max_rel_error, self.atol, self.rtol)
        except Exception as exc:
            log.exception("the golden check raised")
            self.status = GoldenStatus.FAIL_GOLDEN
            self.message = f"the config raised while checked: {type(exc).__name__}: {str(exc)[:300]}"
        self.trees = {}

    def finish(self, record: dict) -> None:
        status = self.status
        if status is None:  # the entry was usable but the config failed (or was skipped) before its check
            status, self.message = GoldenStatus.NOT_CHECKED, "the config did not run to its check"
        value = {"status": status, "path": self.path, "message": self.message,
                 "max_abs_error": finite(self.figures.max_abs_error) if self.figures else None,
                 "max_rel_error": finite(self.figures.max_rel_error) if self.figures else None,
                 "elements_outside": self.figures.outside if self.figures else None,
                 "atol": self.atol if self.manifest else self.atol_override,
                 "rtol": self.rtol if self.manifest else self.rtol_override}
        if self.manifest:
            value["saved"] = {key: self.manifest.get(key) for key in ("created", "versions", "machine",
                                                                       "accelerator", "accelerator_model", "steps")}
        record["golden"] = value
