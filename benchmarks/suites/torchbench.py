"""`torchbench`: the real TorchBench (pytorch/benchmark), through its own model API.

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

import ast
import inspect
import logging
import os
import re
import sys
import textwrap
from typing import Optional

from benchmarks.common import experiment_config
from benchmarks.suites import BenchmarkModel, ModelSkipped, Suite, model_config, torchbench_precision
from benchmarks.common.cli_support import UsageError
from benchmarks.common.flags import BOTH, Group

log = logging.getLogger("benchmarks.suites.torchbench")

PACKAGE = "torchbenchmark"
CHECKOUT_NAMES = ("torchbenchmark", "torchbench", "benchmark")
SEARCH_BASES = (".", "..", os.path.join("..", ".."))
MODEL_FOLDERS = ("models", "canary_models")
DEFAULT_SKIPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torchbench_skips.yaml")
SKIP_KEYS = ("test", "accelerator", "xla", "dynamo")
NOT_FOUND = ("TorchBench not found: pass --torchbench-dir=DIR (a checkout of https://github.com/pytorch/benchmark, "
             "with `python install.py` run for the models you want), install its torchbenchmark package, or put "
             "the checkout in ., .. or ../.. as torchbenchmark, torchbench or benchmark")


# ---------------------------------------------------------------- finding TorchBench (no import)


def is_package_dir(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "__init__.py")) and os.path.isdir(os.path.join(path, "models"))


def checkout_root(path: str) -> Optional[str]:
    """The folder that holds the torchbenchmark package, given a checkout or the package folder itself."""
    path = os.path.abspath(path)
    if is_package_dir(os.path.join(path, PACKAGE)):
        return path
    if os.path.basename(path) == PACKAGE and is_package_dir(path):
        return os.path.dirname(path)
    return None


def importable_root() -> Optional[str]:
    """Where an installed (or PYTHONPATH) torchbenchmark lives; find_spec does not run the package."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        if is_package_dir(location):
            return os.path.dirname(os.path.abspath(location))
    return None


def find_root(torchbench_dir: Optional[str]) -> tuple:
    """(root, how it was found) or (None, why not)."""
    if torchbench_dir:
        root = checkout_root(torchbench_dir)
        if root is None:
            return None, (f"--torchbench-dir {torchbench_dir} holds no TorchBench checkout "
                          f"(expected {os.path.join(torchbench_dir, PACKAGE, 'models')}/)")
        return root, "--torchbench-dir"
    root = importable_root()
    if root:
        return root, "importable torchbenchmark package"
    for base in SEARCH_BASES:
        for name in CHECKOUT_NAMES:
            root = checkout_root(os.path.join(base, name))
            if root:
                return root, f"found at {os.path.join(base, name)}"
    return None, NOT_FOUND


def list_model_dirs(root: str) -> list:
    """(name, folder) for every model folder with an __init__.py: models/, models/fb/, canary_models/."""
    found, seen = [], set()
    package = os.path.join(root, PACKAGE)
    for folder in (os.path.join(package, "models"), os.path.join(package, "models", "fb"),
                   os.path.join(package, "canary_models")):
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if name == "fb" or name.startswith((".", "_")) or name in seen:
                continue
            if os.path.isfile(os.path.join(path, "__init__.py")):
                seen.add(name)
                found.append((name, path))
    return found


def module_name(root: str, name: str) -> Optional[str]:
    package = os.path.join(root, PACKAGE)
    for dotted, folder in ((f"{PACKAGE}.models.{name}", os.path.join(package, "models", name)),
                           (f"{PACKAGE}.models.fb.{name}", os.path.join(package, "models", "fb", name)),
                           (f"{PACKAGE}.canary_models.{name}", os.path.join(package, "canary_models", name))):
        if os.path.isfile(os.path.join(folder, "__init__.py")):
            return dotted
    return None


# ---------------------------------------------------------------- skip data (parent side, no torch)


def as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def load_skips(path: Optional[str]) -> list:
    """Our skip groups: [{"reason", "models", and any of SKIP_KEYS}], validated. 'none' -> []."""
    import yaml

    if path is not None and path.strip().lower() == "none":
        return []
    path = path or DEFAULT_SKIPS
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle) or {}
    except OSError as exc:
        raise UsageError(f"--torchbench-skips {path}: {exc.strerror}")
    except yaml.YAMLError as exc:
        raise UsageError(f"--torchbench-skips {path} is not valid YAML: {str(exc).splitlines()[0]}")
    groups = data.get("skips") if isinstance(data, dict) else None
    if not isinstance(groups, list):
        raise UsageError(f"--torchbench-skips {path}: expected a top-level 'skips:' list")
    for number, group in enumerate(groups, start=1):
        if not isinstance(group, dict) or not group.get("reason") or not isinstance(group.get("models"), list):
            raise UsageError(f"--torchbench-skips {path}: group {number} needs 'reason' and a 'models' list")
        unknown = set(group) - {"reason", "models", *SKIP_KEYS}
        if unknown:
            raise UsageError(f"--torchbench-skips {path}: group {number} has unknown key(s) {', '.join(sorted(unknown))}")
    return groups


def group_applies(group: dict, name: str, experiment) -> bool:
    if name not in group["models"]:
        return False
    if "test" in group and experiment.test not in as_list(group["test"]):
        return False
    if "accelerator" in group and experiment.accelerator not in as_list(group["accelerator"]):
        return False
    if "xla" in group and bool(experiment.xla) not in [bool(v) for v in as_list(group["xla"])]:
        return False
    if "dynamo" in group and experiment.dynamo not in as_list(group["dynamo"]):
        return False
    return True


def read_metadata(folder: str) -> dict:
    import yaml

    path = os.path.join(folder, "metadata.yaml")
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def metadata_skip(metadata: dict, experiment) -> Optional[str]:
    """The model's own `not_implemented` entries: {device?, test?}; a device is `cpu`, `cuda` or a GPU name."""
    for entry in metadata.get("not_implemented") or ():
        if not isinstance(entry, dict) or not ({"device", "test"} & set(entry)):
            continue
        device, test = entry.get("device"), entry.get("test")
        if test is not None and test != experiment.test:
            continue
        if device is not None and device not in (experiment.accelerator, experiment.accelerator_model):
            continue
        what = f"{test} on {device}" if test and device else test or f"every test on {device}"
        return f"the model's metadata.yaml marks {what} as not implemented"
    return None


# ---------------------------------------------------------------- building (child side)


def declared_unsupported(cls, test: str) -> Optional[str]:
    """The message of a `train`/`eval` method that does nothing but raise (or return) NotImplementedError."""
    method = cls.__dict__.get(test)
    if method is None:
        for base in cls.__mro__[1:]:
            if test in base.__dict__:
                method = base.__dict__[test]
                break
    if method is None:
        return None
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(method)))
    except (OSError, TypeError, SyntaxError):
        return None
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.FunctionDef) else []
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        body = body[1:]  # a docstring
    if len(body) != 1 or not isinstance(body[0], (ast.Raise, ast.Return)):
        return None
    value = body[0].exc if isinstance(body[0], ast.Raise) else body[0].value
    call = value if isinstance(value, ast.Call) else None
    target = call.func if call else value
    if not (isinstance(target, ast.Name) and target.id == "NotImplementedError"):
        return None
    if call and call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
        return f"{test} is not implemented by this TorchBench model: {call.args[0].value}"
    return f"{test} is not implemented by this TorchBench model"


def missing_dependency(exc: ImportError, name: str) -> Optional[str]:
    """A skip reason for an ImportError of the model's requirements; None if TorchBench itself is broken."""
    module = getattr(exc, "name", None) or ""
    if module == PACKAGE or module.startswith(PACKAGE + "."):
        return None
    what = f"the Python module {module!r}" if module else "a Python module"
    detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return (f"needs {what}, which is missing here ({detail}); install the model's requirements "
            f"(python install.py {name} in the TorchBench checkout)")


class MissingCheckpoint(Exception):
    """Raised instead of a download: the pretrained weights a model wants are not in the local cache."""

    def __init__(self, url: str, path: str):
        super().__init__(f"{path} (from {url})")
        self.url, self.path = url, path


def never_download(url, dst, *args, **kwargs):
    """Stands in for torch.hub.download_url_to_file in the child: torch.hub calls it only when the file is not
    in $TORCH_HOME/hub/checkpoints, and a sweep never downloads."""
    raise MissingCheckpoint(url, dst)


def missing_checkpoint_reason(item: MissingCheckpoint, name: str) -> str:
    # Kept short: record messages hold 400 characters, and the path and address are long.
    return (f"pretrained weights missing from the local cache: {item.path}; fetch them with python install.py {name} "
            f"(TorchBench checkout) or, with the same TORCH_HOME, python -c \"import torch.hub; "
            f"torch.hub.load_state_dict_from_url('{item.url}')\"")


def hub_cache_reason(item: BaseException, name: str) -> str:
    try:
        from huggingface_hub import constants

        cache = constants.HF_HUB_CACHE
    except ImportError:
        cache = os.path.join(os.environ.get("HF_HOME", os.path.join("~", ".cache", "huggingface")), "hub")
    repo = re.search(r"['\"]([\w.-]+/[\w.-]+)['\"]", str(item))
    fetch = f"hf download {repo.group(1)}" if repo else f"python install.py {name} (TorchBench checkout)"
    # Kept short: record messages hold 400 characters.
    return (f"needs files from the Hugging Face hub that are not in the local cache {cache} "
            f"({type(item).__name__}); fetch them with {fetch}; a sweep never downloads (HF_HUB_OFFLINE=1)")


def missing_file_reason(filename: str, root: str, name: str) -> Optional[str]:
    """A file the checkout lacks (input data or a model's batch): TorchBench's install.py fetches it."""
    package = os.path.join(root, PACKAGE)
    path = os.path.abspath(str(filename))
    if not path.startswith(package + os.sep):
        return None
    names = [name]
    parts = os.path.relpath(path, package).split(os.sep)
    if len(parts) > 2 and parts[0] in MODEL_FOLDERS and parts[1] != name:
        names.append(parts[1])  # a file kept in another model's folder (functorch_maml_omniglot: maml_omniglot)
    what = "input data" if parts[0] == "data" else "a file"
    return (f"needs TorchBench's {what}, which is not installed ({filename}); "
            f"run python install.py {' '.join(names)} in the TorchBench checkout")


def load_failure_skip(exc: BaseException, root: str, name: str) -> Optional[str]:
    """A skip reason for load failures that mean "not installed here", not "broken"."""
    chain, seen = [], set()
    while exc is not None and id(exc) not in seen:  # the exception and its causes
        seen.add(id(exc))
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    for item in chain:
        if isinstance(item, MissingCheckpoint):
            return missing_checkpoint_reason(item, name)
        if isinstance(item, ImportError):
            return missing_dependency(item, name)
        filename = getattr(item, "filename", None)
        if isinstance(item, FileNotFoundError) and filename:
            reason = missing_file_reason(filename, root, name)
            if reason:
                return reason
    import socket
    import urllib.error

    for item in chain:
        kind = type(item).__name__
        if kind in ("OfflineModeIsEnabled", "LocalEntryNotFoundError"):
            return hub_cache_reason(item, name)
        if isinstance(item, (urllib.error.URLError, socket.gaierror, ConnectionError)):
            return f"needs a download while it is built, which cannot happen here ({kind}: {str(item)[:200]})"
    return None


def split_inputs(inputs) -> tuple:
    import torch

    if isinstance(inputs, dict):
        return (), dict(inputs)
    if isinstance(inputs, (tuple, list)):
        return tuple(inputs), {}
    if isinstance(inputs, torch.Tensor):
        return (inputs,), {}
    raise TypeError(f"get_module() returned example inputs of type {type(inputs).__name__}")


def tolerance_for(experiment) -> float:
    """Upstream's TorchBench tolerances: inference 1e-2; training 1e-3 on CUDA, 1e-4 elsewhere."""
    if experiment.test == "eval":
        return 1e-2
    return 1e-3 if experiment.accelerator == "cuda" else 1e-4


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


class TorchBenchSuite(Suite):
    name = "torchbench"
    default_train_step = experiment_config.HARNESS_TRAIN_STEP  # its loss: the harness's generic reduction (BenchmarkModel.harness_loss None)

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

    def root(self, options) -> str:
        root, how = find_root(getattr(options, "torchbench_dir", None))
        if root is None:
            raise UsageError(how)
        log.debug("TorchBench at %s (%s)", root, how)
        return root

    def list_models(self, options):
        if getattr(options, "model_params", None):
            raise UsageError("the torchbench suite takes no --model-params (TorchBench models take no parameters)")
        root = self.root(options)
        self._skips = load_skips(getattr(options, "torchbench_skips", None))
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

    def skip_reason(self, model_config, experiment, options):
        name = model_config["model_name"]
        cannot = torchbench_precision.unsupported_request(name, experiment.precision)
        if cannot:
            return cannot
        if self._skips is None:
            self._skips = load_skips(getattr(options, "torchbench_skips", None))
        for group in self._skips:
            if group_applies(group, name, experiment):
                return str(group["reason"])
        folder = self._folders.get(name)
        if folder is None:
            return None
        if name not in self._metadata:
            self._metadata[name] = read_metadata(folder)
        return metadata_skip(self._metadata[name], experiment)

    def build(self, model_config, experiment, device, options):
        import importlib

        name = model_config["model_name"]
        root, how = find_root(getattr(options, "torchbench_dir", None))
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
        # (common/harness_accuracy.yaml, which --verify's rule reads).
        return BenchmarkModel(
            module=net, example_inputs=args, example_kwargs=kwargs, batch_size=benchmark.batch_size,
            tolerance=tolerance_for(experiment), eval_needs_grad=eval_needs_grad,
        )


SUITE = TorchBenchSuite()
