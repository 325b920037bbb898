"""The table of our experiment axes (config/axes.py) drives every piece an axis used to be written into by hand:
the experiment keys and their defaults, ExperimentConfig's fields and from_dict, the flags, the matrix, the
support rules, the fingerprint, the labels and the slug. Each entry round-trips through all of them, and a key at
its default leaves a config as it was before the key existed (no torch)."""

import dataclasses

import pytest

from benchmarks.config import axes, experiment_config
from benchmarks.config.axis import ONE_PER_SWEEP
from benchmarks.config.experiment_config import ConfigError, ExperimentConfig
from benchmarks.config.flags import PARENT
from benchmarks.config.run_options import MATRIX, AxisOptions, RunOptions, build_parser
from benchmarks.results import records
from benchmarks.results.measurement import Measurement
from benchmarks.runner import matrix
from benchmarks.suites import all_suites

MODEL = {"suite_name": "dummy", "model_name": "mlp"}
# A value other than the default of each axis: the table's own example.
SAMPLES = {axis.key: axis.example for axis in axes.AXES}
# The axes of commit 7f5344a and their samples then: the slug and label those configs had (log and artifact file
# names, aggregate's rows) must stay byte for byte; a newer axis is not part of this record of the past.
FROZEN = {"quantization": "int8wo", "precision": "bf16", "dynamic": "batch", "compile_mode": "max-autotune",
          "inductor_config": "freezing=True", "compile_cache": "warm", "train_step": "harness", "speedup": "paired",
          "allocator": "system", "cpu_profile": "dashboard", "cuda_profile": "dashboard"}
# A config every axis applies to (a dynamo backend, training), each key at its default.
BASE = ExperimentConfig("cpu", None, "inductor", "train", precision="fp32", compile_mode="default",
                        compile_cache="cold", train_step="forward_loss")
UPSTREAM = {"accelerator": ["cpu"], "xla": [None], "dynamo": ["inductor"], "test": ["train"]}


def flag_text(value) -> str:
    """A value as typed after its flag's `=` (a switch's true is `on`)."""
    return {True: "on", False: "off"}.get(value, value) if isinstance(value, bool) else str(value)


def fingerprint(experiment: dict) -> str:
    return records.fingerprint(MODEL, experiment, None, False)


def label(experiment: dict) -> str:
    return Measurement({"model": MODEL, "experiment": experiment}).backend


def test_the_keys_and_their_defaults_are_the_tables():
    for axis in axes.AXES:  # each entry's example is a value of its own, other than its default
        assert axis.example is not None and axis.shown(axis.parse(axis.example)), axis.key
    assert experiment_config.OWN_KEYS == tuple(axis.key for axis in axes.AXES)
    assert experiment_config.AXIS_DEFAULTS == {a.key: a.default for a in axes.AXES if a.default is not None}
    assert list(BASE.to_dict()) == list(experiment_config.EXPERIMENT_KEYS) + list(axes.KEYS)
    fields = {field.name: field.default for field in dataclasses.fields(ExperimentConfig)}
    assert {key: fields[key] for key in axes.KEYS} == {axis.key: axis.parse(None) for axis in axes.AXES}
    # nothing of upstream's nine is an axis of ours
    assert not set(axes.KEYS) & set(experiment_config.EXPERIMENT_KEYS)


def test_each_axis_is_one_flag_of_the_matrix_section():
    declared = {flag.name: flag for flag in build_parser(all_suites()).declared}
    assert [field.name for field in dataclasses.fields(AxisOptions)] == list(axes.KEYS)
    assert RunOptions().axes == AxisOptions()
    for axis in axes.AXES:
        flag = declared[axis.flag]
        assert (flag.dest, flag.help, flag.group, flag.consumer) == (axis.key, axis.help, MATRIX.title, PARENT)
        assert flag.repeatable == (axis.kind != ONE_PER_SWEEP or bool(axis.repeatable_flag))
        assert (flag.choices, flag.type, flag.metavar, flag.bare) == (axis.choices, axis.type, axis.metavar,
                                                                      axis.flag_bare)
    parsed = build_parser(all_suites()).options([f"{axes.BY_KEY[k].flag}={flag_text(v)}" for k, v in SAMPLES.items()])
    for axis in axes.AXES:
        asked = axis.asked(parsed)
        assert asked == (SAMPLES[axis.key],), axis.key
        if axis.key != "inductor_config":  # its flag takes KEY=VALUE settings; the axis asks for their text
            assert getattr(parsed.axes, axis.key) in (asked, asked[0])


@pytest.mark.parametrize("axis", axes.AXES, ids=axes.KEYS)
def test_each_axis_round_trips_through_the_record_the_fingerprint_the_label_and_the_slug(axis):
    value = SAMPLES[axis.key]
    config = BASE.with_(**{axis.key: value})
    data = config.to_dict()
    assert data[axis.key] == value and ExperimentConfig.from_dict(data) == config
    # set: another config, named in the label and the slug
    assert fingerprint(data) != fingerprint(BASE.to_dict())
    shown = axes.label_text(axis.key, value)
    assert (f"+{shown}" if axis.label_plus else shown) in label(data)
    assert axis.slug_text(value) in config.slug() and config.slug() != BASE.slug()
    assert f"{axis.key}={value}" in config.describe()
    # the flags that ask for it give it back (a rerun command's), and none at the default
    assert axis.asked(build_parser(all_suites()).options(axis.flag_args(value))) == (value,)
    assert axis.flag_args(axis.default) == [] and axis.flag_args(None) == []
    # at its default (or unset): the config of a record written before the key existed
    without = {k: v for k, v in BASE.to_dict().items() if k != axis.key}
    assert fingerprint(without) == fingerprint(BASE.to_dict()) == fingerprint(dict(without, **{axis.key: None}))
    assert label(without) == label(BASE.to_dict()) == "inductor"
    assert ExperimentConfig.from_dict(without) == BASE.with_(**{axis.key: axis.parse(None)})


@pytest.mark.parametrize("axis", axes.AXES, ids=axes.KEYS)
def test_a_bad_value_of_each_axis_is_one_line(axis):
    with pytest.raises(ConfigError) as caught:
        ExperimentConfig.from_dict(dict(BASE.to_dict(), **{axis.key: "no-such-value"}))
    assert axis.key in str(caught.value) or "no-such-value" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_the_label_and_slug_rules_are_the_tables():
    assert axes.label_text("train_step", "harness") == "harness-step"
    assert axes.label_text("cuda_profile", "dashboard") == "cuda-dashboard"
    assert axes.label_text("dtype", "float16") == "float16" and axes.label_text("cudagraphs", True) == "cudagraphs"
    everything = BASE.with_(batch_size=8, **FROZEN)
    # the slug names log and artifact files: byte for byte what it was before the table
    assert everything.slug() == ("cpu-inductor-train-bs8-q-int8wo-bf16-dyn-batch-compile_mode-max-autotune-"
                                 "inductor_config-9313df69-compile_cache-b6cc4a02")  # safe_name cut it to 120
    assert label(everything.to_dict()) == ("inductor+int8wo[system,warm,max-autotune,dashboard,cuda-dashboard,batch,"
                                           "freezing=True,bf16,paired,harness-step]")
    # describe names what was set: an axis at the value of a config that does not set it is left out
    assert ExperimentConfig("cpu", None, None, "eval").describe() == "accelerator=cpu test=eval"


def test_expand_takes_each_axis_by_key_and_its_sweep_default_otherwise():
    asked = dict(UPSTREAM, **{key: [value] for key, value in SAMPLES.items()})
    [config] = matrix.expand(asked)
    assert {key: getattr(config, key) for key in axes.KEYS} == dict(SAMPLES)
    [plain] = matrix.expand(UPSTREAM)
    assert {key: getattr(plain, key) for key in axes.KEYS} == {
        axis.key: axis.value_for(axis.sweep_values({})[0], plain) for axis in axes.AXES}
    # a dependent default: the dashboard's jemalloc under --cpu-profile=dashboard
    assert matrix.expand(dict(UPSTREAM, cpu_profile=["dashboard"]))[0].allocator == "jemalloc"
    with pytest.raises(ValueError, match="no such experiment axis: precisions"):
        matrix.expand(dict(UPSTREAM, precisions=["bf16"]))


def test_the_axes_support_rules_follow_upstreams_in_the_tables_order():
    added = [rule for axis in axes.AXES for rule in axis.support_rules]
    assert added and matrix.SUPPORT_RULES[-len(added):] == added
    names = [name for name, _, _ in matrix.SUPPORT_RULES]
    assert len(names) == len(set(names))
