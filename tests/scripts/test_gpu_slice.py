"""`make gpu-slice` (scripts/gpu/slice.py) as far as this machine allows: its plan and commands (--plan), the report
written again as each step ends (steps that write what the harness and our sweep would write: no GPU here), a run
cut off mid-step, bad usage; and, in the integration tier, the real thing on the CPU: our sweep of a small model with
the report row by row, and a run stopped by a signal, which keeps what it measured and leaves no sweep behind."""

import json
import signal
import subprocess
import time

import pytest

from helpers import PYTHON, ROOT, call_main
from test_gpu_slice_report import cuda
from test_harness_subset import checkout
from test_parity_report import record, write_harness

from scripts.gpu import check_machine
from scripts.gpu import slice as gpu_slice
from scripts.gpu import slice_plan
from scripts.gpu import slice_report
from scripts.parity import harness as parity_harness


SCRIPT = ["-m", "scripts.gpu.slice"]


def test_the_plan_names_every_step_its_estimate_and_its_command_and_runs_nothing(tmp_path, capsys):
    harness = checkout(tmp_path / "benchmark")
    out = tmp_path / "out"
    assert gpu_slice.main(["--plan", f"--out={out}", f"--harness-dir={harness}"]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0].startswith("gpu-slice plan: ") and "of --minutes 7" in lines[0]
    assert lines[1].startswith(" 1. [first] eval:torchvision:resnet18:harness-performance  ~")
    performance, accuracy = lines[2], lines[6]
    assert "torchbench.py --performance --inference --bfloat16 --backend inductor --device cuda --only resnet18 " \
           "--batch-size 8 --cold-start-latency" in performance and "--disable-cudagraphs" not in performance
    assert "--accuracy --inference --bfloat16" in accuracy and "--batch-size" not in accuracy  # the harness's own
    assert "left out: [train] train:torchvision:resnet18:harness-performance" in text
    assert not out.exists()


def test_our_row_is_one_sweep_of_eager_and_inductor_paired_and_a_probe_changes_one_flag(tmp_path):
    options = gpu_slice.parse([])
    steps = slice_plan.default_steps(tiers=("first", "probe"))
    row = gpu_slice.ours_command(next(s for s in steps if s.what == "ours"), options, tmp_path)
    assert row[2:] == ["--suite-name=torchvision", "-k", "^resnet18$", "--accelerator=cuda", "--xla=None",
                       "--dynamo=None", "--dynamo=inductor", "--test=eval", "--precision=bf16", "--batch-size=8",
                       "--repeat=30", f"--output-dirname={tmp_path}", "--speedup=paired", "--verify",
                       "--cuda-profile=dashboard"]
    isolated = next(s for s in steps if s.tier == "probe" and s.variant.name == "ours isolated")
    probe = gpu_slice.ours_command(isolated, options, tmp_path)
    assert "--dynamo=None" not in probe and probe.count("--dynamo=inductor") == 1
    assert [f for f in probe if f.startswith(("--speedup", "--compile-cache"))] == [
        "--speedup=isolated", "--compile-cache=shared"]  # the variant's value, never both (two configs)
    assert gpu_slice.merged_flags({"--a": "1", "--b": "2"}, ("--b=3", "--c")) == ["--a=1", "--b=3", "--c"]
    cpu = gpu_slice.ours_command(next(s for s in steps if s.what == "ours"), gpu_slice.parse(["--accelerator=cpu"]),
                                 tmp_path)
    assert "--cuda-profile=dashboard" not in cpu and "--accelerator=cpu" in cpu
    assert "probe" not in {s.tier for s in gpu_slice.slice_steps(gpu_slice.parse(["--accelerator=cpu"]))}


def test_an_llm_row_is_one_sweep_of_eager_and_the_decode_step_compiled_with_cuda_graphs_verified(tmp_path):
    [step] = slice_plan.default_steps(tiers=("llm",), llm=(slice_plan.QWEN3,))
    command = gpu_slice.ours_command(step, gpu_slice.parse([]), tmp_path)
    assert command[2:] == ["--suite-name=huggingface", "-k", r"^Qwen/Qwen3\-0\.6B$", "--accelerator=cuda",
                           "--xla=None", "--dynamo=None", "--dynamo=inductor", "--test=eval", "--precision=bf16",
                           "--batch-size=1", "--repeat=5", f"--output-dirname={tmp_path}",
                           "--generation-compile=forward", "--prompt-tokens=128", "--new-tokens=128", "--warmup=2",
                           "--verify", "--compile-mode=reduce-overhead", "--cuda-profile=dashboard"]
    cpu = gpu_slice.ours_command(step, gpu_slice.parse(["--accelerator=cpu", "--llm-lengths=4:3",
                                                        '--llm-params={"num_hidden_layers": 1}']), tmp_path)
    assert "--compile-mode=reduce-overhead" not in cpu and "--prompt-tokens=4" in cpu and "--new-tokens=3" in cpu
    assert cpu[-1] == '--model-params={"num_hidden_layers": 1}'
    chosen = gpu_slice.slice_steps(gpu_slice.parse(["--tiers=llm", "--llm-models=openai/whisper-tiny"]))
    assert [s.model.name for s in chosen] == ["openai/whisper-tiny"]


class WrittenSteps(gpu_slice.SliceRun):
    """The slice's run with each step writing what its process would (the harness's CSV files, our records: no GPU
    here), and checking first that the report on disk already holds every step before it."""

    def __init__(self, *args, cut_at=None, spend=False):
        super().__init__(*args)
        self.cut_at, self.spend, self.seen = cut_at, spend, []

    def run_step(self, step, budget):
        on_disk = json.loads((self.out / "gpu-slice.json").read_text())
        states = {s["key"]: s["state"] for s in on_disk["steps"]}
        assert states[step.key] == slice_report.RUNNING and all(states[k] == slice_report.DONE for k in self.seen)
        self.seen.append(step.key)
        if self.spend:  # as long as its estimate: the budget's clock moves on
            self.check.deadline -= step.estimate_s
        if step.key == self.cut_at:
            raise gpu_slice.CutOff("signal SIGTERM")
        h_spec, o_spec = slice_report.harness_spec(step.model, step.test), slice_report.our_spec(step.model, step.test)
        if step.what == "harness-performance":
            write_harness(self.out, h_spec)
        elif step.what == "ours":
            path = slice_report.ours_results(self.out)
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "a") as sink:
                for dynamo, ms in ((None, 2.0), ("inductor", 1.0)):
                    sink.write(json.dumps(cuda(record(o_spec, dynamo, ms, 1.0, 2**30))) + "\n")
        return slice_report.DONE, "written", None


def start(tmp_path, *args, cut_at=None, spend=False):
    options = gpu_slice.parse([f"--out={tmp_path}", "--tiers=first", *args])
    check = check_machine.Check(options)
    check.facts = {"devices": ["NVIDIA H100 80GB HBM3"], "torchvision": "0.26", "timm": "1.0",
                   "transformers": "5.23"}
    steps = gpu_slice.slice_steps(options)
    run = WrittenSteps(check, steps, slice_plan.plan(steps, options.minutes * 60), time.monotonic(), cut_at=cut_at,
                       spend=spend)
    run.harness = object()  # a harness is there: its steps run (written by WrittenSteps)
    return run


def test_the_report_is_written_again_as_each_step_ends_row_by_row(tmp_path):
    run = start(tmp_path)
    run.run_all()
    assert len(run.seen) == 9
    on_disk = json.loads((tmp_path / "gpu-slice.json").read_text())
    assert [r["model"] for r in on_disk["rows"]] == [m.name for m in slice_plan.FIRST_MODELS]
    assert all(r["harness"]["accuracy"] == "pass" and r["ours"]["latency"] == 1.0 for r in on_disk["rows"])
    assert on_disk["wall"]["rows"] == 3 and on_disk["running"] == [] and on_disk["cut_off"] is None
    assert "complete." in (tmp_path / "gpu-slice.md").read_text()


def test_a_run_cut_off_mid_step_keeps_its_rows_and_names_the_step(tmp_path):
    cut = "eval:huggingface:DistilBertForQuestionAnswering:ours"
    run = start(tmp_path, cut_at=cut)
    with pytest.raises(gpu_slice.CutOff):
        run.run_all()
    on_disk = json.loads((tmp_path / "gpu-slice.json").read_text())
    states = {s["key"]: s["state"] for s in on_disk["steps"]}
    assert states[cut] == slice_report.CUT_OFF and on_disk["cut_off"] == f"signal SIGTERM during {cut}"
    assert [k for k, v in states.items() if v == slice_report.DONE] == run.seen[:-1]
    assert on_disk["rows"][0]["ours"]["accuracy"] == "pass"  # resnet18's row, measured before: kept
    assert "cut off (signal SIGTERM during" in (tmp_path / "gpu-slice.md").read_text()


def test_a_step_that_cannot_run_here_or_does_not_fit_is_not_started_and_says_why(tmp_path):
    run = start(tmp_path, spend=True)
    run.check.facts.pop("transformers")
    run.check.deadline = time.monotonic() + 60  # room for resnet18's first two steps (26 s and 32 s)
    run.run_all()
    states = {s.key: run.outcomes[s.key] for s in run.steps}
    bert = "eval:huggingface:DistilBertForQuestionAnswering:ours"
    assert states[bert].state == slice_report.NOT_STARTED and "transformers does not import here" in \
        states[bert].detail
    assert run.seen == ["eval:torchvision:resnet18:harness-performance", "eval:torchvision:resnet18:ours"]
    assert states["eval:timm:mobilenetv2_100:ours"].detail.startswith("not started: needs about 36 s, ")
    run = start(tmp_path)
    run.harness = None
    run.run_all()
    assert run.outcomes["eval:torchvision:resnet18:harness-accuracy"].detail == \
        "not started: no harness (--harness-dir: make gpu-harness)"


def test_a_run_faster_than_its_estimates_takes_the_steps_the_plan_left_out(tmp_path):
    run = start(tmp_path, "--minutes=1")  # planned: resnet18's first two steps (26 s and 32 s) of nine
    assert [s.key for s in run.steps if run.outcomes[s.key].state == slice_report.PLANNED] == [
        "eval:torchvision:resnet18:harness-performance", "eval:torchvision:resnet18:ours"]
    run.run_all()  # each written at once: the minute is still there for every step
    assert len(run.seen) == 9 and {o.state for o in run.outcomes.values()} == {slice_report.DONE}


@pytest.mark.process  # the script's exit status and its one line: once as `python -m`, the rest in process
def test_bad_usage_is_one_line_and_exit_2(tmp_path):
    for index, args in enumerate((["--tiers=first,warp"], ["--models=timm:x"], ["--minutes=0"],
                                  [f"--harness-dir={tmp_path}"], ["--llm-models=gpt-5"], ["--llm-lengths=12"],
                                  ["--llm-params=[1]"])):
        done = (call_main(gpu_slice.main, f"--out={tmp_path / 'out'}", *args) if index else
                subprocess.run([PYTHON, *SCRIPT, f"--out={tmp_path / 'out'}", *args], capture_output=True, text=True,
                               cwd=ROOT))
        last = done.stderr.strip().splitlines()[-1]
        assert done.returncode == 2 and ("error: " in last or last.startswith("gpu-slice: ")), (args, done.stderr)
        assert "Traceback" not in done.stderr and not (tmp_path / "out").exists()


@pytest.mark.integration
def test_on_the_cpu_our_rows_are_measured_and_reported_one_by_one(tmp_path):
    done = subprocess.run([PYTHON, *SCRIPT, f"--out={tmp_path}", "--accelerator=cpu", "--models=dummy:mlp:4",
                           "--tiers=first,train", "--minutes=6", "--repeat=5"], capture_output=True, text=True,
                          cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    on_disk = json.loads((tmp_path / "gpu-slice.json").read_text())
    assert [(r["model"], r["test"], r["ours"]["accuracy"]) for r in on_disk["rows"]] == [
        ("mlp", "eval", "pass"), ("mlp", "train", "pass")]
    assert all(r["ours"]["latency"] > 0 and r["ours"]["paired_speedup"] > 0 for r in on_disk["rows"])
    said = [line for line in done.stdout.splitlines() if line.startswith("gpu-slice: ")]  # one line a step, in order
    assert [line.split(" (")[0] for line in said] == ["gpu-slice: eval:dummy:mlp:ours: done",
                                                     "gpu-slice: train:dummy:mlp:ours: done"]
    assert done.stdout.count("| mlp | ") == 2 and (tmp_path / "gpu-slice.md").read_text() in done.stdout


# Qwen3 at a toy width: the llm tier's machinery, not the model (docs/generation.md has the full-width tests)
TINY_QWEN3 = ('{"num_hidden_layers": 1, "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 2, '
              '"num_key_value_heads": 1, "head_dim": 32, "vocab_size": 512, "bos_token_id": 0, "eos_token_id": 1}')


@pytest.mark.integration
def test_on_the_cpu_an_llm_row_generates_eager_and_compiled_and_is_reported(tmp_path):
    done = subprocess.run([PYTHON, *SCRIPT, f"--out={tmp_path}", "--accelerator=cpu", "--tiers=llm",
                           "--llm-models=Qwen/Qwen3-0.6B", "--llm-lengths=4:3", f"--llm-params={TINY_QWEN3}",
                           "--minutes=5"], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    [row] = json.loads((tmp_path / "gpu-slice.json").read_text())["llm"]
    # bf16: judged by the harness's rule against an fp64 model's logits, as eager itself is far from exact
    assert row["state"] == "done" and row["eager"]["lengths"] == [4, 3] and row["compiled"]["accuracy"] == "pass"
    [compiled] = [r for r in map(json.loads, (tmp_path / "llm" / "results.jsonl").read_text().splitlines())
                  if r["experiment"]["dynamo"]]
    assert compiled["accuracy_reference"] == "fp64" and compiled["accuracy_rmse"] > 0
    assert "against an fp64 model's by the harness's rule" in compiled["accuracy_reason"]
    assert row["compiled"]["tokens_match"]["new_tokens"] == 3
    for side in ("eager", "compiled"):
        assert row[side]["decode_tokens_per_second"] > 0 and row[side]["generate_time"] > 0
    assert row["speedup_generate"] > 0 and row["speedup_decode"] > 0
    assert "## LLM generation: eager / compiled" in done.stdout and "| Qwen/Qwen3-0.6B | 4+3 | bf16 |" in done.stdout
    assert (tmp_path / "llm" / "logs" / "sweep-eval-huggingface-Qwen-Qwen3-0.6B-llm.log").exists()


@pytest.mark.integration
def test_a_signal_mid_sweep_keeps_the_report_and_leaves_no_sweep_behind(tmp_path):
    import psutil

    process = subprocess.Popen([PYTHON, *SCRIPT, f"--out={tmp_path}", "--accelerator=cpu",
                                "--models=dummy:mlp:4", "--tiers=first,train", "--minutes=6"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    report = tmp_path / "gpu-slice.json"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:  # the train row's sweep started: the eval row is in the report
        if report.exists() and "train:dummy:mlp:ours" in json.loads(report.read_text())["running"]:
            break
        time.sleep(0.5)
    children = psutil.Process(process.pid).children(recursive=True)
    assert children, "no sweep running"
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err[-3000:]
    on_disk = json.loads(report.read_text())
    assert on_disk["cut_off"] == "signal SIGTERM during train:dummy:mlp:ours"
    assert on_disk["rows"][0]["ours"]["accuracy"] == "pass"
    assert not [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
    assert "cut off (signal SIGTERM" in out


def test_the_harness_sees_the_libraries_ours_was_given_after_its_own_paths(tmp_path):
    run = start(tmp_path / "out", f"--site={tmp_path / 'site'}")
    run.harness = parity_harness.find_harness(str(checkout(tmp_path / "benchmark")), ROOT)
    paths = run.harness_env()["PYTHONPATH"].split(":")
    assert paths[0] == str(tmp_path / "out" / "harness" / "shims") and str(tmp_path / "site") not in paths
    run.check.env["PYTHONPATH"] = f"{ROOT}:{tmp_path / 'site'}"  # as unpack_wheels leaves it when it unpacked
    env = run.harness_env()
    assert env["PYTHONPATH"].split(":")[-1] == str(tmp_path / "site") and env["HF_HUB_OFFLINE"] == "1"
