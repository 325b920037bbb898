"""The core reaches the features' child halves by a method's name (child/feature_methods.py), never a feature's, and
the parent and the readers their declarations by a hook's name (features.declared) or an axis's declared field: each
method has its one provider or its neutral default, and no core module (the child's, the runner's, the results
layer's, the report tools') names a feature."""

import contextlib
import re
import subprocess
import sys

import pytest
from helpers import ROOT

from benchmarks.child import feature_methods
from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.features.compile_options import child as compile_options_child
from benchmarks.features.precision import child as precision_child
from benchmarks.features.quantization import child as quantization_child

# The core: the child's modules (not the features' child halves), the runner's, the shared layers' and the report
# tools'; each reaches a feature through child/feature_methods.py, child/config_hooks.py, benchmarks/features'
# declared(hook) or an axis's declared fields, never by its name (what a feature shares with the core is the core's:
# config/inductor_settings.py, config/train_steps.py, ...).
CORE = ("benchmarks/child/*.py", "benchmarks/child/accuracy/*.py", "benchmarks/runner/**/*.py", "benchmarks/config/*.py",
        "benchmarks/plumbing/*.py", "benchmarks/results/*.py", "benchmarks/analyzer/**/*.py",
        "benchmarks/aggregate/**/*.py", "benchmarks/compare/**/*.py", "benchmarks/history/**/*.py",
        "benchmarks/fork_server/*.py", "benchmarks/suites/__init__.py")
# `benchmarks.features.<name>` (an import of a declaration or a child half) or `from benchmarks.features import <name>`
BY_NAME = re.compile(r"benchmarks\.features\.\w+|from\s+benchmarks\.features\s+import\s+\w+")


def by_name(text: str) -> list:
    """(line number, line) of each place `text` names a feature's module."""
    return [(number, line.strip()) for number, line in enumerate(text.splitlines(), 1) if BY_NAME.search(line)]


def test_each_method_is_its_features_function():
    assert feature_methods.provided("step_context") is precision_child.step_context
    assert feature_methods.provided("grad_scaler") is precision_child.grad_scaler
    assert feature_methods.provided("compute_dtype") is precision_child.compute_dtype
    assert feature_methods.provided("model_cast") is precision_child.model_cast
    assert feature_methods.provided("model_transform") is quantization_child.model_transform
    assert feature_methods.provided("before_compile") is compile_options_child.before_compile
    assert feature_methods.provided("compile_mode") is compile_options_child.compile_mode
    assert feature_methods.provided("compile_cache") is compile_options_child.compile_cache
    assert feature_methods.provided("by_hand_problem") is compile_options_child.by_hand_problem
    assert feature_methods.provided("cast_dtype") is precision_child.cast_dtype


def test_the_methods_do_what_the_config_asks():
    amp = ExperimentConfig("cpu", None, None, "eval", precision="amp")
    plain = ExperimentConfig("cpu", None, None, "eval", precision="fp32")
    assert feature_methods.provided("compute_dtype")(plain) == "float32"
    assert isinstance(feature_methods.provided("step_context")(plain), contextlib.nullcontext)
    import torch

    assert isinstance(feature_methods.provided("step_context")(amp), torch.autocast)
    assert feature_methods.provided("compile_mode")(ExperimentConfig("cpu", None, "inductor", "eval",
                                                                     compile_mode="max-autotune")) == "max-autotune"


def test_an_undeclared_method_is_refused():
    with pytest.raises(ValueError, match="not a feature method"):
        feature_methods.provided("no_such_method")


def test_the_scan_finds_each_way_of_naming_a_feature():
    text = ("from benchmarks import features\n"  # the declarations' interface: allowed
            "name = f\"benchmarks.features.{feature}.child\"\n"  # feature_methods' lookup by a feature's name it is given
            "from benchmarks.features.cuda_profile import child as cuda_profile_child\n"
            "    from benchmarks.features import precision\n"
            "import benchmarks.features.dynamic\n")
    assert [number for number, _ in by_name(text)] == [3, 4, 5]


def test_no_core_module_names_a_feature():
    files = sorted({path for pattern in CORE for path in ROOT.glob(pattern)})
    assert any(path.name == "config_run.py" for path in files) and any(path.parent.name == "ray" for path in files)
    assert any(path.name == "process_env.py" for path in files)
    assert any(path.parent.name == "fork_server" for path in files) and any(path.parent.name == "suites" for path in files)
    assert {"against_eager.py", "measurement.py", "dashboard.py"} <= {path.name for path in files}
    assert any(path.parent.name == "site" for path in files)  # history/site/
    found = [f"{path.relative_to(ROOT)}:{number}: {line}" for path in files
             for number, line in by_name(path.read_text(encoding="utf-8"))]
    assert not found, ("core modules name a feature (reach it through child/feature_methods.py, a config_hooks.Hook or "
                       "features.declared(hook) instead):\n" + "\n".join(found))


def test_the_declarations_answer_by_a_hooks_name():
    from benchmarks import features

    warm_start = ExperimentConfig("cpu", None, "inductor", "eval", compile_cache="warm-start")
    assert [runs_twice(warm_start) for runs_twice in features.declared("runs_twice")] == [True]
    assert not any(runs_twice(warm_start.with_(dynamo=None)) for runs_twice in features.declared("runs_twice"))
    problems = [check(warm_start.with_(inductor_config="no_such_setting=1"), {"freezing": False})
                for check in features.declared("inductor_settings_problem")]
    assert len(problems) == 1 and "no_such_setting" in problems[0]
    fp16_tpu = ExperimentConfig("tpu", "PJRT", None, "eval", precision="fp16")
    assert [why(fp16_tpu) for why in features.declared("resolved_skip_reason")][0].startswith("precision fp16")
    assert features.declared("no_declaration_defines_this") == ()


def test_the_readers_ask_the_declarations_by_a_hooks_name_too():
    from benchmarks import features
    from benchmarks.features import cuda_profile, speedup

    assert features.declared_one("pooled_speedup") is speedup.pooled_speedup
    assert features.declared("runs_cudagraphs") == (cuda_profile.runs_cudagraphs,)
    assert features.declared_one("no_declaration_defines_this") is None
    with pytest.raises(ValueError, match="more than one feature"):  # every valued axis's declaration has a parse
        features.declared_one("parse")


def test_finding_every_method_imports_no_torch():
    # the child resolves some before torch is imported (the cache variables, the allocator policy's restart)
    code = ("import sys\nfrom benchmarks.child import feature_methods\n"
            "[feature_methods.provided(m) for m in feature_methods.METHODS]\nprint('torch' in sys.modules)")
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert found.stdout.strip() == "False", found.stderr


def test_without_a_provider_the_compile_cache_is_the_machines(monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/machine/cache")
    cache = feature_methods.METHODS["compile_cache"][1](ExperimentConfig("cpu", None, "inductor", "eval"))
    step = object()
    assert cache.machine_dir == "/machine/cache" and cache.warm_up(lambda: None, step) == (step, None)
    cache.close()
