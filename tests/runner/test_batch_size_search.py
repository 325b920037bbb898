"""--find-batch-sizes (runner/batch_size_search.py): the dynamo harness's rule (eager only, one attempt per child,
1024 halved by its decay_batch_exp on any failure), its flags, its memory bound on the CPU, and, for real, a search
over a model that fails above a size, its file, a search resumed, and a later sweep taking the file
(--batch-size-file, runner/plan.py)."""

import json
import shlex

import pytest

from helpers import ROOT, call_runner, read_jsonl, run_runner

from benchmarks.config import batch_size_file
from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.plumbing import machine_facts
from benchmarks.plumbing.cli_support import UsageError
from benchmarks.results.records import RecordStatus
from benchmarks.runner import batch_size_search
from benchmarks.runner.batch_size_search import Search

MODELS = ROOT / "tests" / "fixtures" / "batch_limit"
CAPPED = ["--suite-name=files", f"--model-file={MODELS / 'capped.py'}"]  # fails above batch 100 (--model-params)


def test_the_sizes_are_the_harnesss_from_1024_down_to_1():
    assert batch_size_search.sizes_tried() == [1024, 512, 256, 128, 64, 32, 16, 8, 4, 3, 2, 1]
    assert batch_size_search.next_batch_size(1) == 0
    assert batch_size_search.sizes_tried(100) == [100, 50, 26, 14, 8, 4, 3, 2, 1]  # decay_batch_exp's rounding


def attempt(status, batch=None, message="out of memory"):
    record = {"status": status, "experiment": {"batch_size": batch}}
    if status != RecordStatus.OK:
        record["error"] = {"type": "RuntimeError" if status == RecordStatus.ERROR else "Skip", "message": message}
    return record


def test_any_failure_halves_a_success_ends_with_the_size_that_ran_and_a_skip_ends_without_one():
    search = Search({"model_name": "m"})
    for status in (RecordStatus.ERROR, RecordStatus.OOM, RecordStatus.CRASH, RecordStatus.TIMEOUT):
        search.after(attempt(status))
    assert (search.batch, search.done) == (64, False)
    search.after(attempt(RecordStatus.OK, batch=64))
    assert search.found == 64 and [a[:2] for a in search.attempts] == [
        (1024, "error"), (512, "oom"), (256, "crash"), (128, "timeout"), (64, "ok")]
    fixed = Search({"model_name": "fixed"})  # a model that takes no other batch size: the size that ran
    fixed.after(attempt(RecordStatus.OK, batch=4))
    assert fixed.found == 4
    skipped = Search({"model_name": "s"})
    skipped.after(attempt(RecordStatus.SKIP, message="needs torchvision"))
    assert skipped.done and skipped.found is None and skipped.skipped == "needs torchvision"
    never = Search({"model_name": "n"})
    for _ in batch_size_search.sizes_tried():
        never.after(attempt(RecordStatus.ERROR))
    assert never.found == batch_size_file.NONE_RAN and len(never.attempts) == 12


@pytest.mark.parametrize("flags, words", [
    (["--dynamo=inductor"], "runs eager only"), (["--xla=PJRT"], "leave out --xla"),
    (["--batch-size=8"], "starts every model at 1024"), (["--verify"], "leave out --verify"),
    (["--rounds=2"], "leave out --rounds"), (["--retry-failed"], "leave out --retry-failed"),
    (["--accelerator=cpu", "--accelerator=cuda"], "give one --accelerator"),
    (["--test=eval", "--test=train"], "give one --test"),
    (["--accelerator=cpu", "--precision=fp32", "--precision=bf16"], "searches one experiment config per model")])
def test_what_a_search_cannot_take_is_one_line_and_exit_2(flags, words, tmp_path):
    result = call_runner(*CAPPED, "--find-batch-sizes", *flags, f"--output-dirname={tmp_path}", check_rc=2)
    assert words in result.stderr and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert not list(tmp_path.iterdir())  # nothing written


def test_on_the_cpu_each_attempt_is_bounded_by_half_the_memory_available(monkeypatch):
    from benchmarks.config.run_options import RunOptions

    monkeypatch.setattr(machine_facts, "available_memory", lambda: 8 * 2**30)
    assert batch_size_search.memory_bound(RunOptions(), "cpu") == 4 * 2**30
    assert batch_size_search.memory_bound(RunOptions(subprocess_memory_limit=2**30), "cpu") == 2**30
    assert batch_size_search.memory_bound(RunOptions(), "cuda") is None  # the device's own out-of-memory error
    monkeypatch.setattr(machine_facts, "available_memory", lambda: None)
    with pytest.raises(UsageError, match="available memory is unknown: give --subprocess-memory-limit"):
        batch_size_search.memory_bound(RunOptions(), "cpu")
    options = batch_size_search.attempt_options(RunOptions(repeat=10, child_flags=("--repeat=10",)), 2**30)
    assert (options.repeat, options.warmup, options.iterations_per_run, options.subprocess_memory_limit) == (
        1, 0, 1, 2**30)
    assert options.child_flags[-3:] == ("--repeat=1", "--warmup=0", "--iterations-per-run=1")  # the last one wins


def test_available_memory_reads_memavailable(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24000000 kB\nMemAvailable:   16000000 kB\n")
    assert machine_facts.available_memory(str(meminfo)) == 16000000 * 1024
    meminfo.write_text("MemTotal: 1 kB\n")
    assert machine_facts.available_memory(str(meminfo)) is None
    assert machine_facts.available_memory(str(tmp_path / "none")) is None


def test_the_dry_run_shows_the_first_attempts_and_writes_nothing(tmp_path):
    result = call_runner(*CAPPED, "--find-batch-sizes", "--accelerator=cpu", "--subprocess-memory-limit=2G",
                         "--dry-run", f"--output-dirname={tmp_path}", check_rc=0)
    lines = result.stdout.splitlines()
    assert lines[0].startswith("# --find-batch-sizes: 1 model(s), eager on cpu") and "2.0 GiB" in lines[0]
    assert '"batch_size": 1024' in lines[1] and "--repeat=1 --warmup=0 --iterations-per-run=1" in lines[1]
    assert not list(tmp_path.iterdir())


def write_sizes(path, text):
    path.write_text(text)
    return path


def test_a_sweep_takes_each_models_size_from_the_file_and_skips_one_that_ran_none(tmp_path):
    sizes = write_sizes(tmp_path / "sizes.csv", "\nmlp,16\ncnn,-1\n")
    result = call_runner("--suite-name=dummy", "--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval",
                         f"--batch-size-file={sizes}", "--dry-run", f"--output-dirname={tmp_path / 'out'}", check_rc=0)
    batch = {}  # model -> the requested batch size of its command
    for line in result.stdout.splitlines():
        flags = dict(arg.split("=", 1) for arg in shlex.split(line) if arg.startswith(("--model-config=",
                                                                                      "--experiment-config=")))
        if flags:
            batch[json.loads(flags["--model-config"])["model_name"]] = json.loads(
                flags["--experiment-config"])["batch_size"]
    assert batch == {"mlp": 16, "multi_output": None}  # cnn: skipped; multi_output: not in the file, its own
    assert f"skip: cnn cpu-eager-eval: --batch-size-file {sizes}: cnn has -1, no batch size ran" in result.stdout
    assert "has no row for multi_output: run at their own batch size" in result.stderr


@pytest.mark.parametrize("text, words", [(None, "cannot read it as a batch-size file"),
                                         ("mlp;16\n", ":1: expected a `name,batch` row")])
def test_a_file_that_is_not_one_is_one_line_and_exit_2(tmp_path, text, words):
    path = tmp_path / "sizes.csv"
    if text is not None:
        path.write_text(text)
    result = call_runner("--suite-name=dummy", "--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval",
                         f"--batch-size-file={path}", "--dry-run", check_rc=2)
    assert words in result.stderr and result.stderr.count("\n") == 1
    result = call_runner("--suite-name=dummy", f"--batch-size-file={path}", "--batch-size=4", "--dry-run", check_rc=2)
    assert "pass one of them" in result.stderr


# ---------------------------------------------------------------- real children


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    """The capped model (fails above batch 100) searched on the CPU, each attempt a child; then the same again."""
    out = tmp_path_factory.mktemp("search")
    first = run_runner(*CAPPED, "--find-batch-sizes", "--accelerator=cpu", f"--output-dirname={out}", check_rc=0)
    again = run_runner(*CAPPED, "--find-batch-sizes", "--accelerator=cpu", f"--output-dirname={out}", check_rc=0)
    return out, first, again


@pytest.mark.integration
def test_a_model_that_fails_above_a_size_gets_the_first_size_that_runs_one_child_each(searched):
    out, first, _ = searched
    assert (out / "batch_sizes.csv").read_text() == "capped,64\n"
    attempts = read_jsonl(out / "batch-size-search.jsonl")
    assert [(a["requested_batch_size"], a["status"]) for a in attempts] == [
        (1024, "error"), (512, "error"), (256, "error"), (128, "error"), (64, "ok")]
    for record in attempts:  # eager, one run of one iteration, each in a child of its own (its log, its time)
        size = record["requested_batch_size"]
        assert record["experiment"]["dynamo"] is None and record["experiment"]["accelerator"] == "cpu"
        assert (record["repeat"], record["warmup"], record["iterations_per_run"]) == (1, 0, 1)
        assert record["environment"]["launch"] in ("fork", "spawn") and record["run_seconds"] > 0
        assert (out / "logs" / "capped" / f"cpu-eager-eval-bs{size}.log").is_file()
    assert attempts[0]["error"]["type"] == "RuntimeError"
    assert "batch 1024 is more than 100" in attempts[0]["error"]["message"]
    assert "capped     64  1024: error, 512: error, 256: error, 128: error, 64: ok" in first.stdout
    assert "--batch-size-file=" in first.stdout


@pytest.mark.integration
def test_a_search_run_again_resumes_from_its_attempts(searched):
    out, _, again = searched
    assert len(read_jsonl(out / "batch-size-search.jsonl")) == 5  # no attempt ran twice
    assert "capped     64" in again.stdout and (out / "batch_sizes.csv").read_text() == "capped,64\n"


@pytest.mark.integration
def test_a_later_sweep_runs_each_model_at_the_size_found(searched, tmp_path):
    out, _, _ = searched
    run_runner(*CAPPED, "--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval", "--repeat=2",
               f"--batch-size-file={out / 'batch_sizes.csv'}", f"--output-dirname={tmp_path}", check_rc=0)
    (record,) = read_jsonl(tmp_path / "results.jsonl")
    assert (record["requested_batch_size"], record["experiment"]["batch_size"], record["status"]) == (64, 64, "ok")


@pytest.mark.integration
def test_a_model_that_runs_at_no_size_gets_minus_one_and_exit_1(tmp_path):
    result = run_runner(*CAPPED, '--model-params={"limit": 2}', "--find-batch-sizes", "--accelerator=cpu",
                        "--subprocess-memory-limit=4G", f"--output-dirname={tmp_path}", check_rc=0)
    assert (tmp_path / "batch_sizes.csv").read_text() == "capped,2\n"  # 4 and 3 fail, 2 runs
    assert [a["requested_batch_size"] for a in read_jsonl(tmp_path / "batch-size-search.jsonl")][-3:] == [4, 3, 2]
    result = run_runner(*CAPPED, '--model-params={"limit": 0}', "--find-batch-sizes", "--accelerator=cpu",
                        f"--output-dirname={tmp_path / 'none'}", check_rc=1)
    assert (tmp_path / "none" / "batch_sizes.csv").read_text() == "capped,-1\n"
    assert "no size ran, down to 1 (-1 in the file): RuntimeError" in result.stdout


@pytest.mark.integration
def test_on_the_cpu_an_attempt_past_the_memory_bound_is_an_oom_record_and_the_search_goes_down(tmp_path):
    """2 MiB per sample held: 1024 (2 GiB) and 512 (1 GiB, beside the child's own ~0.35 GiB) pass 1.2 GiB; 256 runs."""
    run_runner("--suite-name=files", f"--model-file={MODELS / 'hungry.py'}", "--find-batch-sizes", "--accelerator=cpu",
               "--subprocess-memory-limit=1200M", f"--output-dirname={tmp_path}", check_rc=0)
    attempts = read_jsonl(tmp_path / "batch-size-search.jsonl")
    assert [(a["requested_batch_size"], a["status"]) for a in attempts] == [(1024, "oom"), (512, "oom"), (256, "ok")]
    assert "passed the limit of 1.17 GiB" in attempts[0]["error"]["message"]
    assert (tmp_path / "batch_sizes.csv").read_text() == "hungry,256\n"
