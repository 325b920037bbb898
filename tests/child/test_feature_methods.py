"""The core reaches the features' child halves by a method's name (child/feature_methods.py), never a feature's: each
method has its one provider or its neutral default, and the core modules moved to it name no feature."""

import contextlib
import re

import pytest
from helpers import ROOT

from benchmarks.child import feature_methods
from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.features.compile_options import child as compile_options_child
from benchmarks.features.precision import child as precision_child
from benchmarks.features.quantization import child as quantization_child

# The core modules that reach the features only through feature_methods (none names a feature), and generation.py,
# which still reads the generation_options declaration's constants but no child half.
NO_FEATURE = ("backends.py", "measured_loop.py", "work_count.py")


def test_each_method_is_its_features_function():
    assert feature_methods.provided("step_context") is precision_child.step_context
    assert feature_methods.provided("grad_scaler") is precision_child.grad_scaler
    assert feature_methods.provided("compute_dtype") is precision_child.compute_dtype
    assert feature_methods.provided("model_cast") is precision_child.model_cast
    assert feature_methods.provided("model_transform") is quantization_child.model_transform
    assert feature_methods.provided("before_compile") is compile_options_child.before_compile
    assert feature_methods.provided("compile_mode") is compile_options_child.compile_mode


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


@pytest.mark.parametrize("module", NO_FEATURE)
def test_the_core_module_names_no_feature(module):
    assert "benchmarks.features" not in (ROOT / "benchmarks" / "child" / module).read_text(encoding="utf-8")


def test_generation_reaches_no_child_half():
    text = (ROOT / "benchmarks" / "child" / "generation.py").read_text(encoding="utf-8")
    assert not re.findall(r"from benchmarks\.features\.\w+ import child", text)
