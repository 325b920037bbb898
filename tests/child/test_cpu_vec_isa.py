"""Inductor's probe of the CPU's vector instruction sets, once per process and outside compile_time
(child/cpu_vec_isa.py). Where each launch probes is checked by tests/fork_server/test_fork_server.py's
forked-against-spawned
sweep; here, what the fork server's probe leaves behind, and which configs need it."""

import getpass
import os
import subprocess

import pytest

from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.config import backend_registry
from helpers import PYTHON, ROOT


def test_only_inductor_compiling_for_the_cpu_probes_the_cpu():
    configs = [("cpu", None, "inductor"), ("cpu", None, "aot_inductor"), ("cpu", None, None),
               ("cpu", None, "aot_eager"), ("cuda", None, "inductor"), ("cpu", "PJRT", "openxla")]
    probing = [c for c in configs if backend_registry.generates_cpu_code(ExperimentConfig(*c, "eval"))]
    assert probing == [("cpu", None, "inductor"), ("cpu", None, "aot_inductor")]


@pytest.mark.integration
def test_the_fork_servers_probe_is_kept_in_the_process_and_its_programs_in_the_machines_cache(tmp_path):
    code = ("import os; from benchmarks.child import cpu_vec_isa; cpu_vec_isa.probe(); "
            "from torch._inductor import cpu_vec_isa as isa; "
            "print(os.environ.get('TORCHINDUCTOR_CACHE_DIR'), isa.valid_vec_isa_list.cache_info().currsize)")
    env = {name: value for name, value in os.environ.items() if name != "TORCHINDUCTOR_CACHE_DIR"}
    env["TMPDIR"] = str(tmp_path)  # where Inductor's default cache directory, the machine's, is then
    result = subprocess.run([PYTHON, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["None", "1"]  # the answer kept for the forks; their environment as it was
    machine_cache = tmp_path / f"torchinductor_{getpass.getuser()}"
    assert [path.name for path in tmp_path.iterdir()] == [machine_cache.name]
    assert list(machine_cache.rglob("*.so")), "the probe's test programs, for the next process to reuse"
