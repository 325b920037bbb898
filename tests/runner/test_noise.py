"""Noise checks at the start of a sweep (against a fake /sys), the one warning block with its fixes, the
facts in every record's environment, and --cpu-affinity pinning each child (the record says which cores)."""

import os
import signal
import subprocess
import sys
import time

import pytest

from benchmarks.plumbing import cpu_affinity
from benchmarks.runner import noise
from helpers import call_runner, read_jsonl, run_runner


def fake_sysfs(root, governors: dict, no_turbo=None):
    """A directory laid out like /sys for the files the check reads."""
    cpu = root / "devices" / "system" / "cpu"
    for core, governor in governors.items():
        path = cpu / f"cpu{core}" / "cpufreq"
        path.mkdir(parents=True)
        (path / "scaling_governor").write_text(governor + "\n")
    if no_turbo is not None:
        (cpu / "intel_pstate").mkdir(parents=True)
        (cpu / "intel_pstate" / "no_turbo").write_text(f"{no_turbo}\n")
    cpu.mkdir(parents=True, exist_ok=True)
    return root


def test_powersave_governor_is_found_and_its_fix_named(tmp_path):
    root = fake_sysfs(tmp_path, {0: "powersave", 1: "performance", 2: "powersave"}, no_turbo=0)
    facts = noise.check(cores=[0, 1], root=str(root), interval=0.05)
    assert facts["cores"] == [0, 1]
    assert facts["cpu_governor"] == {"0": "powersave", "1": "performance"}  # only the cores in use
    assert facts["cpu_boost"] is True
    assert any("powersave on core(s) 0" in p and "cpupower frequency-set --governor performance" in p
               for p in facts["problems"])
    assert any("turbo" in p and "no_turbo" in p for p in facts["problems"])
    text = noise.warning_text(facts)
    assert text.startswith("benchmark noise:") and text.count("benchmark noise:") == 1
    assert "fix: sudo cpupower frequency-set --governor performance" in text


def test_performance_governor_and_no_turbo_are_quiet(tmp_path):
    root = fake_sysfs(tmp_path, {0: "performance", 1: "performance"}, no_turbo=1)
    facts = noise.check(cores=[0, 1], root=str(root), interval=0.05)
    assert facts["cpu_governor"] == {"0": "performance", "1": "performance"} and facts["cpu_boost"] is False
    assert not any("governor" in p or "turbo" in p for p in facts["problems"])


def test_a_machine_without_cpufreq_records_none_and_blames_nothing(tmp_path):
    facts = noise.check(cores=[0], root=str(fake_sysfs(tmp_path, {})), interval=0.05)
    assert facts["cpu_governor"] is None and facts["cpu_boost"] is None
    assert not any("governor" in p for p in facts["problems"])
    assert len(facts["load_average"]) == 3 and isinstance(facts["swap_used_bytes"], int)
    assert isinstance(facts["gpus"], list)


@pytest.mark.process  # other processes, busy ones
def test_a_busy_process_is_among_the_busiest_and_the_sweeps_own_are_not():
    spin = "import time\nend = time.time() + 20\nwhile time.time() < end: pass"
    # Another's: started by a process that has ended (so it is not this one's descendant); and one of this one's
    # own (as a sweep's fork server importing torch during the check).
    quiet = "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL"  # else run() waits for it to close our pipes
    started = subprocess.run([sys.executable, "-c", f"import subprocess, sys\n"
                              f"print(subprocess.Popen([sys.executable, '-c', {spin!r}], {quiet}).pid)"],
                             capture_output=True, text=True, check=True)
    other = int(started.stdout)
    own = subprocess.Popen([sys.executable, "-c", spin])
    try:
        time.sleep(0.3)
        found = noise.busiest_processes(interval=0.5, top=100)
        theirs = [p for p in found if p["pid"] == other]
        assert theirs and theirs[0]["cpu_percent"] > 0 and theirs[0]["name"]
        assert os.getpid() not in [p["pid"] for p in found] and own.pid not in [p["pid"] for p in found]
    finally:
        own.kill()
        own.wait()
        os.kill(other, signal.SIGKILL)
    loud = {"busiest_processes": [{"pid": 7, "name": "miner", "cpu_percent": 97.0}], "cores": [0]}
    [(what, fix)] = noise.problems(loud)
    assert "miner (pid 7, 97%)" in what and "--cpu-affinity" in fix


def test_swap_and_gpu_clock_problems_name_their_fixes():
    facts = {"swap_used_bytes": 512 * 2**20, "cores": [0],
             "gpus": [{"index": 1, "clocks_locked": False, "max_sm_clock_mhz": 1410, "auto_boost": True},
                      {"index": 2, "clocks_locked": True, "max_sm_clock_mhz": 1980, "auto_boost": None}]}
    fixes = dict(noise.problems(facts))
    assert fixes["512 MiB of swap in use"].startswith("sudo swapoff -a && sudo swapon -a")
    assert fixes["GPU 1 clocks are not locked"] == "sudo nvidia-smi -i 1 --lock-gpu-clocks=1410,1410"
    assert fixes["GPU 1 auto-boost is on"] == "sudo nvidia-smi -i 1 --auto-boost-default=0"
    assert len(fixes) == 3  # GPU 2 is locked, its auto-boost unknown: nothing to say


def test_core_lists():
    assert cpu_affinity.parse_cores("0-2,5,1") == [0, 1, 2, 5]
    assert cpu_affinity.format_cores([5, 0, 1, 2]) == "0-2,5"
    for bad in ("", "a", "3-1", "-1", "0,,1"):
        with pytest.raises(ValueError):
            cpu_affinity.parse_cores(bad)


@pytest.mark.parametrize("spec, message", [("99", "core(s) 99 not available here"), ("1-x", "not a core number")])
def test_bad_cpu_affinity_is_one_line_and_exit_2(spec, message):
    result = call_runner(f"--cpu-affinity={spec}", "--dry-run", check_rc=2)
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """One eager config run by a child (ok) and one the parent skips (train), under a fake powersave /sys."""
    out = tmp_path_factory.mktemp("noise")
    root = fake_sysfs(tmp_path_factory.mktemp("sys"), {core: "powersave" for core in range(os.cpu_count())})
    core = max(cpu_affinity.usable_cores())
    env = dict(os.environ, **{noise.SYSFS_ENV: str(root)})
    result = run_runner("--suite-name=microbench", "--shapes=32x32x32", "--accelerator=cpu", "--xla=None",
                        "--dynamo=None", "--test=eval", "--test=train", "--repeat=2", "--warmup=1",
                        f"--cpu-affinity={core}", f"--output-dirname={out}", env=env, check_rc=0)
    return result, read_jsonl(out / "results.jsonl"), core


@pytest.mark.integration
def test_the_sweep_warns_once_with_the_fix(sweep):
    result, _, _ = sweep
    assert result.stderr.count("benchmark noise:") == 1
    assert "powersave on core(s)" in result.stderr
    assert "fix: sudo cpupower frequency-set --governor performance" in result.stderr


@pytest.mark.integration
def test_every_record_carries_the_noise_facts(sweep):
    _, records, core = sweep
    assert sorted(r["status"] for r in records) == ["ok", "skip"]
    for record in records:
        facts = record["environment"]["noise"]
        assert facts["cores"] == [core]
        assert facts["cpu_governor"] == {str(core): "powersave"}
        assert len(facts["load_average"]) == 3 and "swap_used_bytes" in facts and "busiest_processes" in facts
        assert any("powersave" in p for p in facts["problems"])


@pytest.mark.integration
def test_the_child_ran_on_the_requested_core(sweep):
    _, records, core = sweep
    [ran] = [r for r in records if r["status"] == "ok"]
    assert ran["environment"]["cpu_affinity"] == [core]
