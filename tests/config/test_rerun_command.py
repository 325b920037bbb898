"""The command that reruns one config alone (config/rerun_command.py), as every record carries it (`rerun`): the
config as asked for, the sweep's child flags but its output and time, a fresh directory under the sweep's; and where
the tools show it: the end-of-sweep failure list, compare's changes, history's config page (no torch)."""

import shlex

from benchmarks.config import rerun_command
from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.config.run_options import build_parser
from benchmarks.runner import progress
from benchmarks.suites import all_suites

MODEL = {"suite_name": "faults", "model_name": "raise_on_load"}


def test_the_command_is_the_config_as_asked_with_the_sweeps_child_flags_in_a_directory_of_its_own(tmp_path):
    options = build_parser(all_suites()).options([f"--output-dirname={tmp_path}", "--repeat=3", "--verify",
                                                  "--timestamp=2026-11-18", "--output-basename=nightly.jsonl"])
    experiment = ExperimentConfig("cpu", None, "aot_eager", "eval", channels_last=True)
    argv = shlex.split(rerun_command.rerun_text(options, MODEL, experiment))
    assert argv[:2] == rerun_command.entry_argv()
    assert "--repeat=3" in argv and "--verify" in argv
    assert not [a for a in argv if a.startswith(("--timestamp", "--output-basename"))]
    [out] = [a.split("=", 1)[1] for a in argv if a.startswith("--output-dirname=")]
    assert out == str(tmp_path / "rerun" / "raise_on_load" / "cpu-aot_eager-eval-channels-last")
    [asked] = [a.split("=", 1)[1] for a in argv if a.startswith("--experiment-config=")]
    assert ExperimentConfig.from_dict(__import__("json").loads(asked)) == experiment


def test_a_config_by_hand_reruns_with_its_config_named_once(tmp_path):
    asked = '{"accelerator": "cpu", "xla": null, "dynamo": null, "test": "eval"}'
    options = build_parser(all_suites()).options([f"--output-dirname={tmp_path}", "--repeat=2",
                                                  '--model-config={"model_name": "raise_on_load"}',
                                                  f"--experiment-config={asked}"])
    experiment = ExperimentConfig.from_dict(__import__("json").loads(asked))
    argv = shlex.split(rerun_command.rerun_text(options, MODEL, experiment))
    assert [a.split("=", 1)[0] for a in argv if a.startswith("--")].count("--model-config") == 1
    assert [a.split("=", 1)[0] for a in argv if a.startswith("--")].count("--experiment-config") == 1
    assert "--repeat=2" in argv and f"--model-config={__import__('json').dumps(MODEL, sort_keys=True)}" in argv


def test_the_end_of_sweep_list_gives_the_failing_configs_rerun_commands(tmp_path):
    failing = {"model": MODEL, "experiment": ExperimentConfig("cpu", None, None, "eval").to_dict(), "status": "error",
               "metrics": {}, "accuracy": "fail_to_run"}
    options = build_parser(all_suites()).options([f"--output-dirname={tmp_path}"])
    failing["rerun"] = rerun_command.rerun_text(options, MODEL, ExperimentConfig("cpu", None, None, "eval"))
    text = progress.end_of_sweep(str(tmp_path / "results.jsonl"), {"a": failing}, options,
                                 {"ok": 0, "failed": 1, "skipped": 0}, 0, 1.0, "resume")
    assert "rerun one alone (each record's `rerun` holds its command):" in text
    assert "  " + failing["rerun"] in text.splitlines()


def test_a_warm_start_reruns_as_the_sweep_of_that_one_config(tmp_path):
    options = build_parser(all_suites()).options([f"--output-dirname={tmp_path}", "--repeat=2"])
    model = {"suite_name": "torchvision", "model_name": "resnet18", "params": {"image_size": 64}}
    experiment = ExperimentConfig("cpu", None, "inductor", "eval", compile_cache="warm-start", channels_last=True)
    argv = shlex.split(rerun_command.rerun_text(options, model, experiment))
    assert not [a for a in argv if a.startswith(("--model-config", "--experiment-config"))]  # two processes: a sweep
    assert argv[2:] == ["--suite-name=torchvision", "--filter=^(?-i:resnet18)$", "--accelerator=cpu", "--xla=None",
                        "--dynamo=inductor", "--test=eval", '--model-params={"image_size": 64}',
                        "--compile-cache=warm-start", "--channels-last", "--repeat=2",
                        f"--output-dirname={tmp_path}/rerun/resnet18/{experiment.slug()}"]
    parsed = build_parser(all_suites()).options(argv[2:])
    assert parsed.axes.compile_cache == ("warm-start",) and parsed.axes.channels_last == (True,)
