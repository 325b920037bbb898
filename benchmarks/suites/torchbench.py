"""`torchbench`: the real TorchBench (pytorch/benchmark), through its own model API. Its other jobs have modules
of their own: finding the checkout (torchbench_checkout.py), the skip rules (torchbench_skips.py), load failures
that are skips (torchbench_load_failures.py), precision (torchbench_precision.py).

Found in this order: --torchbench-dir; an importable `torchbenchmark` package; a `torchbenchmark`,
`torchbench` or `benchmark` checkout in `.`, `..` or `../..`. Models are listed from the folders of
`torchbenchmark/models/` (and `canary_models/`) without importing anything; the child builds one with
`Model(test=..., device=<plain accelerator>, batch_size=..., extra_args=[])` and `get_module()`, and
moves it to the XLA device afterwards, so that XLA and non-XLA configs get the same model and batch size
(what upstream's mismatched_batch_size.patch did by hand).

Skips, each with its reason: our skip data (torchbench_skips.yaml), the model's own metadata.yaml
`not_implemented` entries (parent side); a model's NotImplementedError, a `train`/`eval` method that
only raises it, a missing package, input data or files that TorchBench's install.py did not fetch, or a
download that cannot happen (child side). Pretrained weights load from the local caches ($TORCH_HOME/hub/
checkpoints, the Hugging Face cache) and are never downloaded: missing ones are a skip naming the file
and the command that fetches it. A model whose eval() takes gradients (maml: TorchBench's
USE_GRAD_IN_INFERENCE, or eval_in_nograd() False in older checkouts) runs its eval without torch.no_grad().
"""

from __future__ import annotations

import logging
import os
import sys

from benchmarks.config import accuracy_rule, tolerances
from benchmarks.config.flags import BOTH, Group
from benchmarks.config.train_steps import HARNESS_TRAIN_STEP
from benchmarks.plumbing.cli_support import UsageError
from benchmarks.suites import BenchmarkModel, ModelSkipped, Suite, model_config, torchbench_precision
from benchmarks.suites.torchbench_checkout import PACKAGE, find_root, list_model_dirs, module_name
from benchmarks.suites.torchbench_load_failures import load_failure_skip, never_download
from benchmarks.suites.torchbench_skips import declared_unsupported, group_applies, load_skips, metadata_skip, \
    read_metadata

log = logging.getLogger("benchmarks.suites.torchbench")


def split_inputs(inputs) -> tuple:
    import torch

    if isinstance(inputs, dict):
        return (), dict(inputs)
    if isinstance(inputs, (tuple, list)):
        return tuple(inputs), {}
    if isinstance(inputs, torch.Tensor):
        return (inputs,), {}
    raise TypeError(f"get_module() returned example inputs of type {type(inputs).__name__}")


def tolerance_for(experiment, name: str) -> float:
    """verification_code's limit on the mean relative error: the numbers PyTorch/XLA's TorchBenchModel.tolerance
    gives its same() check (config/tolerances.py MEAN_REL_ERROR, where each says so), by test, accelerator and its
    even_higher list."""
    if experiment.test == "eval":
        case = "eval"
    elif experiment.accelerator != "cuda":
        case = "train"
    else:
        even_higher = accuracy_rule.harness_lists()[accuracy_rule.TORCHBENCH]["even_higher"][1]
        case = "train_cuda_even_higher" if name in even_higher else "train_cuda"
    return tolerances.mean_rel_error(accuracy_rule.TORCHBENCH, case)


def eval_takes_gradients(benchmark, name: str) -> bool:
    """Whether TorchBench runs this model's eval with gradients on (maml adapts its weights with autograd).
    Today's TorchBench names such models in `util.env_check.USE_GRAD_IN_INFERENCE` (its `pick_grad`); checkouts
    before May 2024 asked the model, whose `eval_in_nograd()` returned False. The metadata.yaml `eval_nograd`
    entry is not it: TorchBench writes True there for every model, maml included."""
    import importlib

    try:
        listed = getattr(importlib.import_module(f"{PACKAGE}.util.env_check"), "USE_GRAD_IN_INFERENCE", None)
    except ImportError:
        listed = None
    if listed is not None:
        return name in listed
    in_nograd = getattr(benchmark, "eval_in_nograd", None)
    return callable(in_nograd) and in_nograd() is False


SUITE_NAME = "torchbench"
DESCRIPTION = "TorchBench's models"
ORDER = 40


class TorchBenchSuite(Suite):
    name = SUITE_NAME
    default_train_step = HARNESS_TRAIN_STEP  # its loss: the harness's generic reduction (BenchmarkModel.harness_loss None)

    def __init__(self):
        self._skips = None
        self._metadata: dict = {}
        self._folders: dict = {}

    _group = Group("TorchBench (--suite-name=torchbench)")
    flags = (
        _group.flag("--torchbench-dir", BOTH, "a TorchBench checkout (or its torchbenchmark folder); default: an "
                    "importable torchbenchmark, else a torchbenchmark, torchbench or benchmark folder in ., .. or "
                    "../..", metavar="DIR"),
        _group.flag("--torchbench-skips", BOTH, "skip list (YAML, groups with reasons) instead of the project's own "
                    "benchmarks/suites/torchbench_skips.yaml; 'none' skips nothing", metavar="FILE"),
    )

    def root(self, flags) -> str:
        root, how = find_root(getattr(flags, "torchbench_dir", None))
        if root is None:
            raise UsageError(how)
        log.debug("TorchBench at %s (%s)", root, how)
        return root

    def list_models(self, flags):
        if getattr(flags, "model_params", None):
            raise UsageError("the torchbench suite takes no --model-params (TorchBench models take no parameters)")
        root = self.root(flags)
        self._skips = load_skips(getattr(flags, "torchbench_skips", None))
        dirs = list_model_dirs(root)
        if not dirs:
            log.warning("no model folder under %s", os.path.join(root, PACKAGE, "models"))
        self._folders = dict(dirs)
        return [model_config(self.name, name) for name, _ in dirs]

    def precision_for(self, model_config, experiment):
        return torchbench_precision.resolve(model_config["model_name"], experiment.test, experiment.precision,
                                            experiment.accelerator)

    def precision_reason(self, model_config, experiment):
        return torchbench_precision.resolve_with_reason(model_config["model_name"], experiment.test,
                                                        experiment.precision, experiment.accelerator)[1]

    def skip_reason(self, model_config, experiment, flags):
        name = model_config["model_name"]
        cannot = torchbench_precision.unsupported_request(name, experiment.precision)
        if cannot:
            return cannot
        if self._skips is None:
            self._skips = load_skips(getattr(flags, "torchbench_skips", None))
        for group in self._skips:
            if group_applies(group, name, experiment):
                return str(group["reason"])
        folder = self._folders.get(name)
        if folder is None:
            return None
        if name not in self._metadata:
            self._metadata[name] = read_metadata(folder)
        return metadata_skip(self._metadata[name], experiment)

    def build(self, model_config, experiment, device, flags):
        import importlib

        name = model_config["model_name"]
        root, how = find_root(getattr(flags, "torchbench_dir", None))
        if root is None:
            raise RuntimeError(how)
        if root not in sys.path:
            sys.path.insert(0, root)
        # Nothing is downloaded: hub libraries fail fast instead (a skip record that says so).
        for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
            os.environ[key] = "1"
        os.environ.setdefault("KALDI_ROOT", "/tmp")  # as upstream: one speech model reads it at import
        import torch.hub

        # Pretrained weights come from the local cache ($TORCH_HOME/hub/checkpoints) or not at all.
        torch.hub.download_url_to_file = never_download
        dotted = module_name(root, name)
        if dotted is None:
            raise KeyError(f"TorchBench at {root} has no model {name!r}")
        try:
            module = importlib.import_module(dotted)
            cls = module.Model
            reason = declared_unsupported(cls, experiment.test)
            if reason:
                raise ModelSkipped(reason)
            batch_size = experiment.batch_size
            if batch_size is not None and not getattr(cls, "ALLOW_CUSTOMIZE_BSIZE", True):
                log.info("%s does not allow a custom batch size: running its default instead of %d", name, batch_size)
                batch_size = None
            benchmark = cls(test=experiment.test, device=device, batch_size=batch_size, extra_args=[])
            net, inputs = benchmark.get_module()
        except (ModelSkipped, NotImplementedError):
            raise
        except Exception as exc:
            reason = load_failure_skip(exc, root, name)
            if reason:
                raise ModelSkipped(reason) from exc
            raise
        args, kwargs = split_inputs(inputs)
        eval_needs_grad = experiment.test == "eval" and eval_takes_gradients(benchmark, name)
        # Deterministic (the BenchmarkModel default): metadata.yaml's eval_deterministic / train_deterministic
        # default to false for most models; the harness calls a model non-deterministic only by its own list
        # (config/harness_accuracy.yaml, which --verify's rule reads).
        return BenchmarkModel(
            module=net, example_inputs=args, example_kwargs=kwargs, batch_size=benchmark.batch_size,
            tolerance=tolerance_for(experiment, name), eval_needs_grad=eval_needs_grad,
        )


SUITE = TorchBenchSuite()
