"""--executor=ray: each config's child runs on whichever node of a Ray cluster has room for it.

One Ray task per config declares what it needs (num_cpus, num_gpus for CUDA configs, a `TPU` resource for
TPU configs) and runs the same single-config child command through the same launcher as a local run, on
the node Ray picks, so isolation, timeout, memory limit, process-group kill and the pipe hand-back are one
code. Its children are spawned (no fork server on the nodes yet: --launch=fork applies to local sweeps).
The task returns the child's result and its log text; the parent (the driver) writes the log where a
local run puts it and appends the record: it stays the only writer. --jobs caps the tasks in flight.

A task whose Ray worker or node is lost gives that config a `crash` record that names the cause (no retry:
a config that kills its worker would do it again); Ctrl-C cancels every task, which kills the workers and,
with them, the children (they die with their parent: single_config.die_with_parent).
Every node needs the same environment and model sources at the same paths (README, "Run on a cluster").
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import tempfile
from typing import Optional

from benchmarks.common import machine_facts
from benchmarks.common.cli_support import UsageError
from benchmarks.common.run_options import RunOptions
from benchmarks.runner import launcher
from benchmarks.runner.executor import Finished, Job

log = logging.getLogger("benchmarks.runner.ray_executor")

CONNECT_TIMEOUT = 5.0  # seconds to reach the cluster's address before saying it is unreachable
CORES_PER_JOB = 1  # a Ray task's num_cpus; the child's threads are sized to match


def run_on_node(argv: list, env_changes: dict, env_removed: list, timeout: float, memory_limit: Optional[int],
                cores: int) -> dict:
    """The task's body, on the node: the child runs exactly as it would locally; its result and log return."""
    env = dict(os.environ)
    for name in env_removed:
        env.pop(name, None)
    env.update(env_changes)
    threads = str(cores)
    env.update(OMP_NUM_THREADS=threads, MKL_NUM_THREADS=threads, TORCHINDUCTOR_COMPILE_THREADS=threads)
    with tempfile.TemporaryDirectory(prefix="ptbench-ray-") as scratch:
        log_path = os.path.join(scratch, "child.log")
        result = launcher.run_child(launcher.ChildRequest(argv=argv, env=env, log_path=log_path, timeout=timeout,
                                                          memory_limit=memory_limit))
        with open(log_path, "rb") as handle:
            log_bytes = handle.read()
    import ray

    return {"result": dataclasses.asdict(result), "log": log_bytes, "host": socket.gethostname(),
            "gpus": [str(g) for g in ray.get_gpu_ids()]}


def check_reachable(address: str) -> None:
    host, _, port = address.rpartition(":")
    if address == "auto" or not port.isdigit():
        return
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=CONNECT_TIMEOUT):
            pass
    except OSError as exc:
        raise UsageError(f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}") from None


class RayExecutor:
    kind = "ray"

    def __init__(self, options: RunOptions):
        try:
            import ray
        except ImportError:
            raise UsageError("--executor=ray needs Ray: pip install -e '.[ray]' (make env installs it)") from None
        self.ray = ray
        self._saved_python_path = None
        self.address = options.ray_address or os.environ.get("RAY_ADDRESS") or None
        if self.address:
            check_reachable(self.address)
        # The workers import this module: they find it on PYTHONPATH (the same path on every node). A local
        # instance's workers inherit this process's environment; a cluster's get it as the job's runtime env
        # (which costs every worker a slower start, so the local instance goes without).
        python_path = os.pathsep.join(filter(None, [machine_facts.PROJECT_ROOT, os.environ.get("PYTHONPATH")]))
        if self.address:
            where = {"runtime_env": {"env_vars": {"PYTHONPATH": python_path}}}
        else:
            self._saved_python_path = os.environ.get("PYTHONPATH")
            os.environ["PYTHONPATH"] = python_path
            where = {"num_cpus": os.cpu_count()}
        try:
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False, configure_logging=False,
                     **where)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise UsageError(f"cannot join the Ray cluster at {self.address or 'a new local instance'}: "
                             f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
        self.remote = ray.remote(max_retries=0)(run_on_node)
        resources = ray.cluster_resources()
        self.cluster = {"CPU": int(resources.get("CPU", 0)), "GPU": int(resources.get("GPU", 0)),
                        "TPU": int(resources.get("TPU", 0))}
        self.jobs = options.jobs or max(1, self.cluster["CPU"] // CORES_PER_JOB)
        self.gpus_per_job = options.gpus_per_job
        self._in_flight: dict = {}  # object ref -> (job, running beside at start)

    def describe(self) -> str:
        where = self.address or "a local Ray instance started for this sweep"
        return (f"executor: ray at {where} ({self.cluster['CPU']} CPU, {self.cluster['GPU']} GPU, "
                f"{self.cluster['TPU']} TPU in the cluster), up to {self.jobs} task(s) in flight, "
                f"{CORES_PER_JOB} CPU per task, {self.gpus_per_job} GPU per CUDA task")

    def impossible(self, job: Job) -> Optional[str]:
        if job.needs.gpus > self.cluster["GPU"]:
            return f"needs {job.needs.gpus} GPU(s) and the Ray cluster has {self.cluster['GPU']}"
        if job.needs.tpu and not self.cluster["TPU"]:
            return "needs a TPU and no node of the Ray cluster offers the TPU resource"
        return None

    def running(self) -> list:
        return [job for job, _ in self._in_flight.values()]

    def try_start(self, job: Job) -> bool:
        if len(self._in_flight) >= self.jobs:
            return False
        base = os.environ
        changes = {k: v for k, v in job.request.env.items() if base.get(k) != v}
        removed = [k for k in base if k not in job.request.env]
        options = {"num_cpus": CORES_PER_JOB, "num_gpus": job.needs.gpus}
        if job.needs.tpu:
            options["resources"] = {"TPU": 1}
        ref = self.remote.options(**options).remote(job.request.argv, changes, removed, job.request.timeout,
                                                    job.request.memory_limit, CORES_PER_JOB)
        self._in_flight[ref] = (job, len(self._in_flight))
        return True

    def wait(self, timeout: float) -> list:
        if not self._in_flight:
            return []
        ready, _ = self.ray.wait(list(self._in_flight), num_returns=1, timeout=timeout)
        finished = []
        for ref in ready:
            job, beside_at_start = self._in_flight.pop(ref)
            finished.append(self._collect(ref, job, beside_at_start))
        return finished

    def _collect(self, ref, job: Job, beside_at_start: int) -> Finished:
        facts = {"kind": self.kind, "jobs": self.jobs, "host": None, "cores": None, "gpus": [],
                 "running_beside_at_start": beside_at_start, "running_beside_at_end": len(self._in_flight),
                 "ray_address": self.address}
        os.makedirs(os.path.dirname(job.request.log_path), exist_ok=True)
        try:
            answer = self.ray.get(ref)
        except self.ray.exceptions.RayError as exc:  # the worker or its node died, or the task was cancelled
            cause = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            why = f"the Ray worker running this config was lost ({type(exc).__name__}{': ' + cause if cause else ''})"
            with open(job.request.log_path, "ab") as handle:
                handle.write(f"$ {' '.join(job.request.argv)}\n[ray] {why}\n".encode())
            result = launcher.ChildResult(record=None, returncode=None, lost=why)
            return Finished(job, result, facts)
        with open(job.request.log_path, "ab") as handle:
            handle.write(answer["log"])
        result = launcher.ChildResult(**answer["result"])
        facts.update(host=answer["host"], gpus=answer["gpus"], cores=result.cpu_affinity)
        return Finished(job, result, facts)

    def stop_all(self) -> None:
        for ref in list(self._in_flight):
            try:
                self.ray.cancel(ref, force=True)
            except Exception as exc:  # already finished, or the cluster is gone
                log.debug("cancel: %s", exc)
        self._in_flight.clear()

    def close(self) -> None:
        self.stop_all()
        self.ray.shutdown()
        if not self.address:  # the environment as it was before this executor
            if self._saved_python_path is None:
                os.environ.pop("PYTHONPATH", None)
            else:
                os.environ["PYTHONPATH"] = self._saved_python_path
