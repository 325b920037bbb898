"""Inductor's probe of the CPU's vector instruction sets, once per process and outside compile_time
(child/cpu_vec_isa.py). Where each launch probes is checked by tests/runner/test_fork_server.py's forked-against-spawned
sweep; here, what the fork server's probe leaves behind, and which configs need it."""

import os
import subprocess

import pytest

from benchmarks.config import compile_options
from benchmarks.config.experiment_config import ExperimentConfig
from helpers import PYTHON, ROOT


def test_only_inductor_compiling_for_the_cpu_probes_the_cpu():
    needs = {(accelerator, xla, dynamo): compile_options.generates_cpu_code(ExperimentConfig(accelerator, xla, dynamo,
                                                                                             "eval"))
             for accelerator, xla, dynamo in [("cpu", None, "inductor"), ("cpu", None, "aot_inductor"),
                                              ("cpu", None, None), ("cpu", None, "aot_eager"), ("cuda", None, "inductor"),
                                              ("cpu", "PJRT", "openxla")]}
    assert [key for key, needed in needs.items() if needed] == [("cpu", None, "inductor"), ("cpu", None, "aot_inductor")]


@pytest.mark.integration
def test_the_fork_servers_probe_is_kept_in_the_process_and_leaves_no_directory_or_variable_behind(tmp_path):
    code = ("import os; from benchmarks.child import cpu_vec_isa; cpu_vec_isa.probe(); "
            "from torch._inductor import cpu_vec_isa as isa; "
            "print(os.environ.get('TORCHINDUCTOR_CACHE_DIR'), isa.valid_vec_isa_list.cache_info().currsize)")
    env = {name: value for name, value in os.environ.items() if name != "TORCHINDUCTOR_CACHE_DIR"}
    env["TMPDIR"] = str(tmp_path)  # where both the probe's scratch and the machine's default Inductor cache would go
    result = subprocess.run([PYTHON, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["None", "1"]  # the answer kept for the forks; the environment as it was
    assert sorted(path.name for path in tmp_path.iterdir()) == []
