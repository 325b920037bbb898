"""The dynamo benchmark harness beside ptbench-matrix, for scripts/parity/report.py: where a checkout of it is
found, the shim files that let it run offline, and its command lines. Nothing of the harness is copied here and
the checkout is never written: the shims are our own text, written into the report's scratch directory, which
goes first on the harness's PYTHONPATH. No torch (the harness runs in its own processes).

Layouts found (docs/parity.md): a PyTorch checkout (`benchmarks/dynamo/`; TorchBench's models then come from
--torchbench-dir) or a TorchBench checkout (`userbenchmark/dynamo/dynamobench/`, its own models beside it).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Optional

from benchmarks.features import allocator

# Where each layout keeps the harness, relative to the checkout.
LAYOUTS = (("torchbench", Path("userbenchmark/dynamo/dynamobench")), ("pytorch", Path("benchmarks/dynamo")))
# Our suite name -> the harness's script for it.
SCRIPTS = {"torchbench": "torchbench.py", "timm": "timm_models.py", "huggingface": "huggingface.py"}
# Our precision names -> the harness's flag.
PRECISION_FLAGS = {"fp32": "--float32", "bf16": "--bfloat16", "fp16": "--float16", "amp": "--amp"}
TEST_FLAGS = {"eval": "--inference", "train": "--training"}
# Hugging Face models whose config the harness fetches from the hub (its EXTRA_MODELS): offline they can't run.
HUB_CONFIG_MODELS = frozenset({"AllenaiLongformerBase", "T5Small", "DistillGPT2", "GoogleFnet", "YituTechConvBert",
                               "CamemBert"})


class NoHarness(Exception):
    """No harness checkout where we looked (the message says where)."""


@dataclasses.dataclass(frozen=True)
class Harness:
    layout: str  # "torchbench" or "pytorch"
    checkout: Path  # the repository's root
    bench_dir: Path  # the directory holding common.py and the three suite scripts
    torchbench_dir: Optional[Path]  # TorchBench's checkout (its models), when known

    def script(self, suite: str) -> Path:
        return self.bench_dir / SCRIPTS[suite]


def harness_at(path: Path, torchbench_dir: Optional[Path] = None) -> Optional[Harness]:
    """The harness in `path` (a checkout of either layout, or the harness's own directory), else None."""
    path = path.resolve()
    for layout, relative in LAYOUTS:
        bench = path / relative
        if (bench / "common.py").is_file() and (bench / "torchbench.py").is_file():
            tb = torchbench_dir or (path if layout == "torchbench" else None)
            return Harness(layout, path, bench, tb)
    if (path / "common.py").is_file() and (path / "torchbench.py").is_file():
        for layout, relative in LAYOUTS:
            if path.parts[-len(relative.parts):] == relative.parts:
                root = Path(*path.parts[:-len(relative.parts)])
                tb = torchbench_dir or (root if layout == "torchbench" else None)
                return Harness(layout, root, path, tb)
    return None


def find_harness(explicit: Optional[str], project_root: Path, torchbench_dir: Optional[str] = None) -> Harness:
    """--harness-dir, else $PARITY_HARNESS_DIR, else a sibling directory of the project holding either layout.
    Raises NoHarness with one line naming where it looked."""
    tb = Path(torchbench_dir).resolve() if torchbench_dir else None
    given = explicit or os.environ.get("PARITY_HARNESS_DIR")
    if given:
        found = harness_at(Path(given), tb)
        if found is None:
            raise NoHarness(f"{given} holds no dynamo harness (looked for "
                            + " or ".join(str(r / "common.py") for _, r in LAYOUTS) + ")")
        return found
    parent = project_root.resolve().parent
    for sibling in sorted(p for p in parent.iterdir() if p.is_dir() and p != project_root.resolve()):
        found = harness_at(sibling, tb)
        if found is not None:
            return found
    raise NoHarness(f"no PyTorch checkout (benchmarks/dynamo) or TorchBench checkout "
                    f"(userbenchmark/dynamo/dynamobench) beside {project_root.resolve()}: give --harness-dir DIR")


# --- the shims (our own text) ---

# Written as sitecustomize.py into the scratch directory, which is first on the harness's PYTHONPATH, so Python
# imports it at start-up. It patches three modules right after they are first imported, nothing else.
SITECUSTOMIZE = '''"""Written by ptbench-matrix's scripts/parity/harness.py for the dynamo harness run offline.

After import: timm's create_model never fetches weights (pretrained=False), nor do TorchBench's torchvision models
(weights=None); the harness's load_yaml_file reads a
file the checkout lacks from this directory; transformers' AutoConfig.from_pretrained returns None, with a line on
stderr, for a config only the hub has (those models are left out of the report). $PARITY_EXTRA_PATH (scipy,
tabulate) goes at the END of the import path (site.addsitedir), so the environment's own packages win.
"""
import importlib.abc
import os
import site
import sys

SHIM_DIR = os.path.dirname(os.path.abspath(__file__))
for _extra in os.environ.get("PARITY_EXTRA_PATH", "").split(os.pathsep):
    if _extra:
        site.addsitedir(_extra)  # appended, once


def _timm_models(module):
    original = module.create_model

    def create_model(*args, **kwargs):
        kwargs["pretrained"] = False
        return original(*args, **kwargs)

    module.create_model = create_model


def _lists_as_sets(value):
    # the harness reads its yaml lists as sets (it adds to them)
    if isinstance(value, dict):
        return {k: _lists_as_sets(v) for k, v in value.items()}
    return set(value) if isinstance(value, list) else value


def _harness_common(module):
    original = getattr(module, "load_yaml_file", None)
    if original is None or not hasattr(module, "BenchmarkRunner"):
        return  # some other module named common

    def load_yaml_file(filename):
        beside = os.path.join(os.path.dirname(os.path.abspath(module.__file__)), filename)
        ours = os.path.join(SHIM_DIR, filename)
        if not os.path.exists(beside) and os.path.exists(ours):
            import yaml
            with open(ours) as f:
                return _lists_as_sets(yaml.safe_load(f))
        return original(filename)

    module.load_yaml_file = load_yaml_file


def _auto_config(module):
    original = module.AutoConfig.from_pretrained

    def from_pretrained(*args, **kwargs):
        try:
            return original(*args, **kwargs)
        except OSError:
            print(f"parity shim: {args[0] if args else '?'} needs the hub: its model is left out", file=sys.stderr)
            return None

    module.AutoConfig.from_pretrained = staticmethod(from_pretrained)


def _random_vision_weights(module):
    # TorchBench's torchvision models ask for ImageNet weights (a download): random ones time the same
    real = module.models

    class RandomWeights:
        def __getattr__(self, name):
            build = getattr(real, name)
            if isinstance(build, type) or not callable(build):  # a weights enum, a class: as it is
                return build

            def build_random(*args, **kwargs):
                kwargs.pop("pretrained", None)
                kwargs["weights"] = None
                return build(*args, **kwargs)

            return build_random

    module.models = RandomWeights()


PATCHES = {"timm.models": _timm_models, "common": _harness_common,
           "transformers.models.auto.configuration_auto": _auto_config,
           "torchbenchmark.util.framework.vision.model_factory": _random_vision_weights}


class _PatchAfterImport(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name not in PATCHES:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                execute, patch = spec.loader.exec_module, PATCHES[name]

                def exec_module(module, execute=execute, patch=patch):
                    execute(module)
                    patch(module)

                spec.loader.exec_module = exec_module
                return spec
        return None


sys.meta_path.insert(0, _PatchAfterImport())
'''

# The harness imports this module unconditionally; the copy in TorchBench lacks it. No LLMs here.
HF_LLM_MODELS = '"""Written by ptbench-matrix\'s scripts/parity/harness.py: no LLM models."""\nHF_LLM_MODELS = {}\n'

# timm_models.py reads its skip lists from timm_models.yaml; TorchBench's copy lacks it. Empty lists: the report
# always names its models (--only), which bypasses every skip list anyway.
TIMM_YAML = "# Written by ptbench-matrix's scripts/parity/harness.py: empty skip lists.\n" \
            "skip:\n  all: []\n  device:\n    cpu: []\n    cpu_aarch64: []\n"


def write_shims(harness: Harness, scratch: Path) -> Path:
    """Writes the shim files into `scratch` (created), each only where the checkout lacks it; returns scratch."""
    scratch.mkdir(parents=True, exist_ok=True)
    (scratch / "sitecustomize.py").write_text(SITECUSTOMIZE)
    if not (harness.bench_dir / "huggingface_llm_models.py").exists():
        (scratch / "huggingface_llm_models.py").write_text(HF_LLM_MODELS)
    if not (harness.bench_dir / "timm_models.yaml").exists():
        (scratch / "timm_models.yaml").write_text(TIMM_YAML)
    return scratch


def environment(harness: Harness, scratch: Path, extra_paths: list, base: Optional[dict] = None,
                cores: Optional[list] = None, allocator_policy: str = allocator.DEFAULT) -> dict:
    """The harness's environment: the scratch directory first on PYTHONPATH, then TorchBench's checkout (its
    `torchbenchmark` package) and the harness's directory; `extra_paths` (scipy, tabulate) appended to the path by the
    sitecustomize shim; the hub offline (fail at once, not after retries); no bytecode written; the C allocator
    policy our children run under (`allocator_policy`, features/allocator/__init__.py; `system`: as inherited), so that the
    two tools' times don't differ by their processes' allocation history."""
    env = dict(os.environ if base is None else base)
    allocator.apply(env, allocator_policy)
    torchbench = [str(harness.torchbench_dir)] if harness.torchbench_dir else []
    paths = [str(scratch), *torchbench, str(harness.bench_dir)]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["PARITY_EXTRA_PATH"] = os.pathsep.join(str(Path(p).resolve()) for p in extra_paths)
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # no __pycache__ written into the checkout
    if cores:  # pinned (the caller pins the process): threads to match, as our runner sizes its children's
        env.update(OMP_NUM_THREADS=str(len(cores)), MKL_NUM_THREADS=str(len(cores)))
    return env


def command(python: str, harness: Harness, suite: str, model: str, test: str, precision: str,
            batch_size: Optional[int], mode: str, repeat: int, output: Path, device: str = "cpu") -> list:
    """One harness process: `mode` "accuracy" or "performance" of one model on `device`, Inductor against eager,
    fresh Inductor caches (--cold-start-latency: our children compile cold too), CSV at `output` (absolute). A
    `batch_size` of None: the harness's own for the mode (its accuracy runs use smaller ones, as the dashboard's)."""
    batch = ["--batch-size", str(batch_size)] if batch_size is not None else []
    args = [python, str(harness.script(suite)), f"--{mode}", TEST_FLAGS[test], PRECISION_FLAGS[precision],
            "--backend", "inductor", "--device", device, "--only", model, *batch,
            "--cold-start-latency", "--output", str(output.resolve())]
    if mode == "performance":  # its raw timings too: the pairs' median beside its CSV's ratio of medians
        args += ["--repeat", str(repeat), "--dump-raw-metrics"]
    return args
