"""--compile-mode and --compile-cache (matrix axes), --inductor-config/--freezing/--cpp-wrapper (experiment key
`inductor_config`), dynamo's statistics in every dynamo record: expansion, support rules, fingerprint and
labels, bad values; real Inductor sweeps of the dummy mlp (cold compiles alike, a warm one much faster,
max-autotune and freezing)."""

import pytest

from helpers import call_runner, call_tool, read_jsonl, run_runner

from benchmarks.config import experiment_config
from benchmarks.config import inductor_settings
from benchmarks.features import compile_options
from benchmarks.results import measurement, records
from benchmarks.runner import matrix
from benchmarks.runner.capabilities import Capabilities
from benchmarks.runner.plan import Config

CPU = Capabilities(dynamo_backends=("inductor", "openxla"), torch_xla_error=None, xla_devices=("CPU",))
GPU = Capabilities(dynamo_backends=("inductor",), torch_xla_error=None, cuda_devices=("NVIDIA H100",))
MODEL = {"suite_name": "dummy", "model_name": "mlp"}


def test_eager_takes_no_compile_keys_and_one_eager_config_whatever_the_modes():
    configs = matrix.expand({"accelerator": ["cpu"], "xla": [None], "dynamo": [None, "inductor"], "test": ["eval"],
                             "compile_mode": ["default", "max-autotune"], "compile_cache": ["cold", "warm"]})
    eager = [c for c in configs if c.dynamo is None]
    assert len(eager) == 1 and (eager[0].compile_mode, eager[0].compile_cache, eager[0].inductor_config) == (None,) * 3
    inductor = {(c.compile_mode, c.compile_cache) for c in configs if c.dynamo == "inductor"}
    assert inductor == {("default", "cold"), ("default", "warm"), ("max-autotune", "cold"), ("max-autotune", "warm")}


def test_support_rules_say_why():
    configs = matrix.expand({"accelerator": ["cpu", "cuda"], "xla": [None, "PJRT"], "dynamo": ["inductor", "openxla"],
                             "test": ["eval", "train"], "compile_mode": ["reduce-overhead", "max-autotune"],
                             "inductor_config": ["freezing=True"]})
    kept, dropped = matrix.split(configs, CPU)
    reasons = {(c.accelerator, c.xla, c.dynamo, c.test, c.compile_mode): why for c, why in dropped}
    assert "captures CUDA graphs, which need a CUDA device" in reasons[("cpu", None, "inductor", "eval",
                                                                        "reduce-overhead")]
    assert "takes no mode" in reasons[("cpu", "PJRT", "openxla", "eval", "max-autotune")]
    assert "inference (test eval) only" in reasons[("cpu", None, "inductor", "train", "max-autotune")]
    assert {(c.accelerator, c.dynamo, c.test, c.compile_mode) for c in kept} == {("cpu", "inductor", "eval",
                                                                                   "max-autotune")}
    # On a CUDA machine reduce-overhead runs (its command line carries the mode).
    cuda_kept, _ = matrix.split([c for c in configs if c.accelerator == "cuda" and not c.xla], GPU)
    assert {(c.test, c.compile_mode) for c in cuda_kept} == {("eval", "reduce-overhead"), ("eval", "max-autotune")}
    assert all(c.inductor_config == "freezing=True" for c in cuda_kept)


def test_defaults_keep_the_old_fingerprint_and_labels():
    old = experiment_config.ExperimentConfig("cpu", None, "inductor", "eval")
    new = old.with_(compile_mode="default", compile_cache="cold")
    assert Config(MODEL, new).fingerprint == Config(MODEL, old).fingerprint
    old_record = {"model": MODEL, "experiment": {k: v for k, v in old.to_dict().items()
                                                 if k not in compile_options.KEYS}}
    assert records.record_fingerprint(old_record) == Config(MODEL, new).fingerprint
    assert measurement.Measurement({"model": MODEL, "experiment": new.to_dict()}).backend == "inductor"
    tuned = new.with_(compile_mode="max-autotune-no-cudagraphs", compile_cache="warm", inductor_config="freezing=True")
    assert Config(MODEL, tuned).fingerprint != Config(MODEL, new).fingerprint
    label = measurement.Measurement({"model": MODEL, "experiment": tuned.to_dict()}).backend
    assert label.startswith("inductor[") and "max-autotune-no-cudagraphs" in label and "warm" in label
    assert experiment_config.ExperimentConfig.from_dict(tuned.to_dict()) == tuned
    assert new.slug() == old.slug() and tuned.slug() != new.slug()


def test_inductor_settings_text_and_checks():
    assert inductor_settings.config_text([("freezing", "True"), ("cpp_wrapper", "True")]) == \
        "cpp_wrapper=True,freezing=True"
    assert inductor_settings.settings_of("cpp_wrapper=True,max_fusion_size=32") == {"cpp_wrapper": True,
                                                                                 "max_fusion_size": 32}
    known = {"freezing": "bool", "max_fusion_size": "int"}
    assert compile_options.check_settings({"freezing": "True"}, known) is None
    assert "no setting 'freezng'" in compile_options.check_settings({"freezng": "True"}, known)
    assert "wants a int" in compile_options.check_settings({"max_fusion_size": "big"}, known)


@pytest.mark.parametrize("flag, message", [
    ("--compile-mode=fast", "invalid choice: 'fast'"),
    ("--compile-cache=hot", "invalid choice: 'hot'"),
    ("--inductor-config=freezing", "--inductor-config wants KEY=VALUE"),
])
def test_bad_values_are_one_line_and_exit_2(flag, message):
    result = call_runner("--suite-name=dummy", flag, "--dry-run", check_rc=2)
    assert result.stderr.count("\n") == 1 and message in result.stderr and "Traceback" not in result.stderr


def test_a_hand_written_config_with_a_bad_mode_is_refused():
    result = call_runner(f"--model-config={{\"suite_name\": \"dummy\", \"model_name\": \"mlp\"}}",
                        '--experiment-config={"accelerator": "cpu", "xla": null, "dynamo": "inductor", "test": "eval", '
                        '"compile_mode": "fast"}', check_rc=2)
    assert "compile_mode must be one of" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.integration  # the probe child
def test_dry_run_shows_values_and_drops():
    result = run_runner("--suite-name=dummy", "-k", "^mlp$", "--accelerator=cpu", "--xla=None", "--dynamo=inductor",
                        "--test=eval", "--test=train", "--compile-mode=reduce-overhead", "--compile-mode=max-autotune",
                        "--freezing", "--cpp-wrapper", "--dry-run", check_rc=0)
    assert '"compile_mode": "max-autotune", "inductor_config": "cpp_wrapper=True,freezing=True", ' \
           '"compile_cache": "cold"' in result.stdout
    assert "compile mode reduce-overhead captures CUDA graphs" in result.stdout
    assert "freezing folds the weights" in result.stdout


@pytest.mark.integration  # the probe child knows Inductor's settings
@pytest.mark.parametrize("setting, message", [
    ("freezng=True", "Inductor has no setting 'freezng'"),
    ("max_fusion_size=big", "max_fusion_size wants a int, not 'big'"),
])
def test_unknown_or_badly_typed_inductor_settings_exit_2_before_anything_runs(tmp_path, setting, message):
    result = run_runner("--suite-name=dummy", "-k", "^mlp$", "--accelerator=cpu", "--xla=None", "--dynamo=inductor",
                        "--test=eval", f"--inductor-config={setting}", f"--output-dirname={tmp_path}", check_rc=2)
    assert result.stderr.count("\n") == 1 and message in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "results.jsonl").exists()


# ---------------------------------------------------------------- real sweeps


@pytest.mark.integration
def test_cold_compiles_are_alike_and_a_warm_one_is_fast(tmp_path):
    common = ["--suite-name=dummy", "-k", "^mlp$", "--accelerator=cpu", "--xla=None", "--dynamo=inductor",
              "--test=eval", "--repeat=1", "--warmup=1", f"--output-dirname={tmp_path}"]
    # The same config twice in a row: each child compiles into its own empty cache.
    run_runner(*common, "--compile-cache=cold", "--rounds=2", check_rc=0)
    # max-autotune (without CUDA graphs) and freezing, from a warm cache.
    run_runner(*common, "--compile-cache=warm", "--compile-mode=max-autotune-no-cudagraphs", "--freezing", check_rc=0)
    found = read_jsonl(tmp_path / "results.jsonl")
    assert [r["status"] for r in found] == ["ok"] * 3
    cold = [r["metrics"]["warmup_time"][0] for r in found if r["experiment"]["compile_cache"] == "cold"]
    (warm,) = [r for r in found if r["experiment"]["compile_cache"] == "warm"]
    assert len(cold) == 2 and max(cold) < 2.5 * min(cold)  # without cold caches the second is warm
    assert warm["experiment"]["compile_mode"] == "max-autotune-no-cudagraphs"
    assert warm["experiment"]["inductor_config"] == "freezing=True"
    assert warm["compile_cache_fill_seconds"] > 3 * warm["metrics"]["warmup_time"][0]
    for record in found:  # dynamo's statistics, without a flag
        stats = record["dynamo_stats"]
        counts = {key: stats[key] for key in ("graphs", "graph_breaks", "unique_graph_breaks", "recompiles")}
        assert counts == {"graphs": 1, "graph_breaks": 0, "unique_graph_breaks": 0, "recompiles": 0}
        assert stats["calls_captured"] > 0
        assert stats["graph_break_reasons"] == [] and stats["graph_break_reasons_omitted"] == 0
        # Inductor's phases, nested: code generation within Inductor's compile within the backend's, within
        # the frame's. A warm cache's record has the timed compile's only (dynamo was reset after the fill),
        # which may load what it needs from the cache and generate no code.
        phases = stats["compile_seconds_by_phase"]
        if record["experiment"]["compile_cache"] == "cold":
            assert 0 < phases["code_gen"] <= phases["inductor_compile"] <= phases["backend_compile"]
        assert 0 < phases["backend_compile"] <= phases["entire_frame_compile"] == phases["total_wall_time"]
        assert phases["entire_frame_compile"] <= record["metrics"]["warmup_time"][0]


def test_analyzer_has_a_column_per_compile_key(tmp_path, analyzer_reader):
    import csv
    import json

    from helpers import run_tool

    base = experiment_config.ExperimentConfig("cpu", None, "inductor", "eval", batch_size=4)
    found = []
    for experiment in (base.with_(compile_mode="default", compile_cache="cold"),
                       base.with_(compile_mode="max-autotune", compile_cache="warm", inductor_config="freezing=True"),
                       experiment_config.ExperimentConfig("cpu", None, None, "eval", batch_size=4)):
        found.append({"model": MODEL, "experiment": experiment.to_dict(), "repeat": 2, "iterations_per_run": 1,
                      "metrics": {"total_time": [0.1, 0.1], "per_iter_time": [0.1, 0.1], "warmup_time": [1.0]},
                      "timestamp": 1.0, "status": "ok", "warmup": 1, "schema_version": 1})
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in found))
    out = tmp_path / f"{analyzer_reader}.csv"
    call_tool("result_analyzer.py", str(path), f"--output={out}", f"--reader={analyzer_reader}", check_rc=0)
    with open(out, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["experiment_compile_mode"], r["experiment_compile_cache"], r["experiment_inductor_config"])
            for r in rows] == [("default", "cold", ""), ("max-autotune", "warm", "freezing=True"), ("", "", "")]
