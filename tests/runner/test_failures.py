"""Failure is data: real crashes, hangs, memory blow-ups and exceptions each become a record, the sweep
goes on, nothing is left running; --retry-failed re-runs only failures; a killed parent resumes cleanly."""

import signal
import subprocess
import time

import pytest

from helpers import PYTHON, ROOT, by_model, processes_mentioning, read_jsonl, run_runner

pytestmark = pytest.mark.integration  # every test here starts real sweeps or children

FAULTS = ["--suite-name=faults", "--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval", "--repeat=1",
          "--warmup=1", "--subprocess-timeout=15", "--subprocess-memory-limit=1G"]


@pytest.fixture(scope="module")
def faults(tmp_path_factory):
    """Every fault in a child forked from one fork server (the default launch, named), then a model that works: the
    fork server's own tests (tests/fork_server/) read this sweep's server facts here rather than run it again."""
    out = tmp_path_factory.mktemp("faults")
    result = run_runner(*FAULTS, "--launch=fork", "-k",
                        "segfault|hang|memory_hog|raise_on_load|silent_exit|random_output", f"--output-dirname={out}",
                        check_rc=1)
    return result, out, by_model(read_jsonl(out / "results.jsonl"))


def test_segfault_is_a_crash_record_naming_the_signal(faults):
    _, out, records = faults
    record = records["segfault"]
    assert record["status"] == "crash" and record["error"]["type"] == "SIGSEGV"
    assert "SIGSEGV" in record["error"]["message"] and record["error"]["phase"] == "compile"
    assert record["verification_code"] == "VERIFIER_DIDNT_RUN" and record["metrics"]["error"].startswith("SIGSEGV")
    assert record["accuracy"] == "fail_to_run"  # the harness's name, derived by the parent from status and phase
    assert (out / record["error"]["log"]).exists()


def test_a_hang_is_a_timeout_record_and_nothing_is_left_running(faults):
    _, out, records = faults
    record = records["hang"]
    assert record["status"] == "timeout" and "timed out after 15 s" in record["error"]["message"]
    assert record["error"]["phase"] == "compile" and record["accuracy"] == "timeout"
    assert processes_mentioning(str(out)) == []


def test_a_timeout_says_where_the_child_hung_and_its_log_has_every_threads_stack(faults):
    _, out, records = faults
    record = records["hang"]
    # Asked for its stacks just before it was killed: the innermost frame is the model's sleep.
    assert ", in forward (benchmarks/suites/faults_models.py:" in record["error"]["message"]
    assert "every thread's stack is in its log" in record["error"]["message"]
    log = (out / record["error"]["log"]).read_text()
    assert "Current thread 0x" in log and "in forward" in log


def test_a_memory_blow_up_is_an_oom_record(faults):
    _, _, records = faults
    record = records["memory_hog"]
    assert record["status"] == "oom" and record["error"]["type"] == "MemoryLimitExceeded"
    assert "limit of 1.00 GiB" in record["error"]["message"]
    assert record["accuracy"] == "OOM"


def test_an_exception_is_an_error_record_with_its_phase_and_a_short_message(faults):
    _, out, records = faults
    record = records["raise_on_load"]
    assert record["status"] == "error" and record["error"]["phase"] == "load"
    assert record["error"] == {"type": "RuntimeError", "phase": "load",
                               "message": "raise_on_load: this model fails while it is built, on purpose",
                               "log": "logs/raise_on_load/cpu-eager-eval.log"}
    assert "Traceback" in (out / record["error"]["log"]).read_text()  # the whole story is in the log
    assert record["accuracy"] == "model_fail_to_load"  # the child's own record, derived from its phase


def test_exiting_without_a_record_is_a_crash_record(faults):
    _, _, records = faults
    record = records["silent_exit"]
    assert record["status"] == "crash" and "without handing back a record" in record["error"]["message"]
    assert record["accuracy"] == "fail_to_run"


def test_the_sweep_went_on_and_counted_failures(faults):
    result, _, records = faults
    assert len(records) == 6 and records["random_output"]["status"] == "ok"  # after every fault, a config that works
    assert "1 ok, 5 failed, 0 skipped" in result.stdout


def test_faults_in_forked_children_leave_the_server_and_the_sweep_intact(faults):
    result, out, records = faults
    assert all(r["environment"]["launch"] == "fork" for r in records.values())
    assert result.stderr.count("fork server (torch) started") == 1, result.stderr  # one server served them all
    assert "fork server died" not in result.stderr
    assert processes_mentioning(str(out)) == []


def test_dynamo_runtime_error_backend_gives_an_error_record(tmp_path):
    # torch's relu_runtime_error_TESTING_ONLY backend raises where the graph calls torch.relu (mlp does).
    run_runner("--accelerator=cpu", "--xla=None", "--dynamo=relu_runtime_error_TESTING_ONLY", "--test=eval",
               "-k", "^mlp$", "--repeat=1", "--warmup=1", f"--output-dirname={tmp_path}", check_rc=1)
    (record,) = read_jsonl(tmp_path / "results.jsonl")
    assert record["status"] == "error" and record["error"]["phase"] == "compile"
    assert "relu" in record["error"]["message"].lower()


def test_retry_failed_reruns_only_failed_configs(tmp_path):
    args = FAULTS + ["-k", "raise_on_load|random_output", f"--output-dirname={tmp_path}"]
    run_runner(*args, check_rc=1)
    first = read_jsonl(tmp_path / "results.jsonl")
    assert sorted(r["status"] for r in first) == ["error", "ok"]
    plain = run_runner(*args, check_rc=1)
    assert "0 to run" in plain.stderr and len(read_jsonl(tmp_path / "results.jsonl")) == 2
    run_runner(*args, "--retry-failed", check_rc=1)
    after = read_jsonl(tmp_path / "results.jsonl")
    assert [r["model"]["model_name"] for r in after] == [r["model"]["model_name"] for r in first] + ["raise_on_load"]


def test_no_resume_keeps_the_old_file_as_a_backup(faults, tmp_path):
    # the old file: the module's sweep's, raise_on_load's record in it (a sweep of its own only to write one was
    # a runner start more)
    old = (faults[1] / "results.jsonl").read_text()
    (tmp_path / "results.jsonl").write_text(old)
    run_runner(*FAULTS, "-k", "raise_on_load", f"--output-dirname={tmp_path}", "--no-resume", check_rc=1)
    backups = list(tmp_path.glob("results.jsonl.bak-*"))
    assert len(backups) == 1 and backups[0].read_text() == old
    assert len(read_jsonl(tmp_path / "results.jsonl")) == 1


def wait_for_records(path, count, timeout=240):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and len(read_jsonl(path)) >= count:
            return
        time.sleep(0.2)
    raise AssertionError(f"fewer than {count} records after {timeout} s")


def test_parent_killed_with_sigkill_mid_sweep_then_resumed(tmp_path):
    args = ["--accelerator=cpu", "--xla=None", "--dynamo=None", "--test=eval", "--test=train", "--repeat=3",
            "--warmup=1", f"--output-dirname={tmp_path}"]
    parent = subprocess.Popen([PYTHON, str(ROOT / "experiment_runner.py"), *args], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = tmp_path / "results.jsonl"
    wait_for_records(results, 2)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    # The orphaned child notices within a second of reaching its watch (die_with_parent), and a child the parent
    # had just started reaches it once its imports are done: seconds, more on a loaded machine (one outlived 10 s
    # in make test and then went); what is still there after a minute was left behind.
    deadline = time.monotonic() + 60
    while processes_mentioning(str(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_mentioning(str(tmp_path)) == []
    before = read_jsonl(results)
    assert 2 <= len(before) < 6
    run_runner(*args, check_rc=0)
    after = read_jsonl(results)
    keys = [(r["model"]["model_name"], r["experiment"]["test"]) for r in after]
    assert len(after) == 6 and len(set(keys)) == 6  # nothing lost, nothing duplicated
    assert after[: len(before)] == before  # nothing already written changed
    assert all(r["status"] == "ok" for r in after)
    assert all(line.endswith("}") for line in results.read_text().splitlines())  # no torn line


def test_ctrl_c_stops_cleanly_and_says_how_to_resume(tmp_path):
    parent = subprocess.Popen([PYTHON, str(ROOT / "experiment_runner.py"), *FAULTS, "-k", "raise_on_load|hang",
                               f"--output-dirname={tmp_path}"], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    wait_for_records(tmp_path / "results.jsonl", 1)
    time.sleep(1.0)  # the hang child is running now
    parent.send_signal(signal.SIGINT)
    _, stderr = parent.communicate(timeout=30)
    assert parent.returncode == 130
    assert "Resume with:" in stderr and "--timestamp=" in stderr and "Traceback" not in stderr
    assert processes_mentioning(str(tmp_path)) == []
    assert [r["model"]["model_name"] for r in read_jsonl(tmp_path / "results.jsonl")] == ["raise_on_load"]


def test_print_subprocess_streams_the_childs_output_and_still_logs_it(tmp_path):
    result = run_runner(*FAULTS, "-k", "raise_on_load", "--print-subprocess", f"--output-dirname={tmp_path}",
                        check_rc=1)
    assert "RuntimeError: raise_on_load" in result.stderr  # streamed to the terminal
    assert "RuntimeError: raise_on_load" in (tmp_path / "logs/raise_on_load/cpu-eager-eval.log").read_text()


def test_where_it_hung_reads_only_this_runs_output_of_its_log(tmp_path):
    from benchmarks.runner.launcher import where_it_hung

    log = tmp_path / "config.log"
    earlier = ('$ python experiment_runner.py ...\nCurrent thread 0x00007f (most recent call first):\n'
               '  File "/venv/lib/python3.11/site-packages/filelock/_core/_acquire.py", line 177 in _poll_until_acquired\n')
    log.write_text(earlier + "$ python experiment_runner.py ...\n")
    assert where_it_hung(str(log)) == "_poll_until_acquired (filelock/_core/_acquire.py:177)"
    assert where_it_hung(str(log), offset=len(earlier)) is None  # a resumed run that wrote no stack: nothing said
    with open(log, "a") as handle:
        handle.write('Current thread 0x00007f (most recent call first):\n'
                     '  File "/repo/benchmarks/suites/faults_models.py", line 26 in forward\n'
                     '  File "/repo/benchmarks/child/single_config.py", line 80 in run\n')
    assert where_it_hung(str(log), offset=len(earlier)) == "forward (benchmarks/suites/faults_models.py:26)"
