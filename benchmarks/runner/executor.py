"""The executor interface: "run this config's child, give me its result and log" (docs/architecture.md,
"Executors"), and the local executor: up to --jobs children at once on this machine, each on its own cores.

The sweep owns the plan and is the only writer: it offers the executor the next job of its plan
(`try_start`), collects finished jobs (`wait`) and writes their records. An executor never writes a record.
Serial runs are the local executor with one job: one code path, not two.
"""

from __future__ import annotations

import dataclasses
import os
import queue
import socket
import threading
from typing import Optional

from benchmarks.config.run_options import RunOptions
from benchmarks.fork_server import client
from benchmarks.plumbing import disk_writes, process_groups
from benchmarks.plumbing.cli_support import UsageError
from benchmarks.plumbing.cpu_affinity import parse_cores, usable_cores
from benchmarks.runner import forked_launch, launcher
from benchmarks.runner.job_resources import Grant, Needs, ResourceError, ResourcePool


@dataclasses.dataclass
class Job:
    """One config's child, as the sweep asks for it."""

    key: int  # its place in the plan
    config: object  # the sweep's Config
    request: launcher.ChildRequest  # the same command and environment a serial run uses
    needs: Needs


@dataclasses.dataclass
class Finished:
    job: Job
    result: launcher.ChildResult
    facts: dict  # how it ran: the record's environment.executor


class LocalExecutor:
    """Children on this machine, one thread each (a thread only waits on its child)."""

    kind = "local"

    def __init__(self, options: RunOptions, gpu_count: int, preloads):
        """The cores and GPUs of the flags (--cpu-affinity, --jobs, --cores-per-job, --gpus-per-job) shared out."""
        cores = parse_cores(options.noise.cpu_affinity) if options.noise.cpu_affinity else usable_cores()
        per_job = options.cores_per_job
        if per_job and per_job > len(cores):
            raise UsageError(f"--cores-per-job {per_job} is more than the {len(cores)} CPU core(s) this sweep may "
                             f"use ({','.join(map(str, sorted(cores)))})")
        jobs = options.jobs or (len(cores) // per_job if per_job else 1)
        try:
            self.pool = ResourcePool(cores, jobs, gpus=list(range(gpu_count)), gpus_per_job=options.gpus_per_job,
                                     cores_per_job=per_job)
        except ResourceError as exc:
            raise UsageError(str(exc)) from None
        # --launch=fork: the fork servers (fork_server/client.py); None: every child spawned
        self.servers = (client.ForkServers(os.path.join(options.output_dirname, "logs"), preloads)
                        if options.launch == "fork" and client.available() else None)
        self.jobs = len(self.pool.groups)
        self.confine = jobs > 1 or per_job is not None  # pin each child to its cores and size its threads to them
        self.host = socket.gethostname()
        self._done: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._running: dict = {}  # job key -> (job, pid or None), until wait() hands its end to the sweep
        self._ended: set = set()  # keys of jobs whose child ended and wait() has not handed back yet
        self._threads: list = []

    def describe(self) -> str:
        return f"executor: local on {self.host}, " + (self.pool.describe() if self.confine else "one job at a time")

    def impossible(self, job: Job) -> Optional[str]:
        return self.pool.impossible(job.needs)

    def running(self) -> list:
        """Running jobs and ended ones not yet collected by wait() (so the sweep never stops before it writes them)."""
        with self._lock:
            return [job for job, _ in self._running.values()]

    def _live(self) -> int:
        return len(self._running) - len(self._ended)  # under self._lock

    def start(self) -> None:
        """Nothing to start before the sweep's first child (its fork server starts in `prepare`)."""

    def prepare(self, request: launcher.ChildRequest) -> None:
        """Start the fork server the sweep's first child needs now: it imports torch while the sweep still
        prepares (the noise check), not while that child waits."""
        if self.servers and request.fork:
            self.servers.prepare(request.fork)

    def try_start(self, job: Job) -> bool:
        grant = self.pool.try_acquire(job.needs)
        if grant is None:
            return False
        request = job.request
        if self.servers and request.fork:
            self.servers.prepare(request.fork)  # it imports torch while the configs before this one run
        if self.confine:
            request = dataclasses.replace(
                request, argv=request.argv + [f"--cpu-affinity={','.join(map(str, grant.cores))}"],
                env={**request.env, **grant.child_env()}, cpu_affinity=list(grant.cores))
        with self._lock:
            beside = self._live()
            self._running[job.key] = (job, None)
        request = dataclasses.replace(request, on_start=lambda pid, key=job.key: self._started(key, pid))
        thread = threading.Thread(target=self._run, args=(job, request, grant, beside), daemon=True,
                                  name=f"job-{job.key}")
        self._threads.append(thread)
        thread.start()
        return True

    def _started(self, key: int, pid: int) -> None:
        with self._lock:
            if key in self._running:
                self._running[key] = (self._running[key][0], pid)

    def _run(self, job: Job, request: launcher.ChildRequest, grant: Grant, beside_at_start: int) -> None:
        try:
            result = forked_launch.run_child(request, self.servers)
        except Exception as exc:  # could not even start it (no such interpreter, no fork): a crash record says so
            result = launcher.ChildResult(record=None, returncode=None, start_error=f"{type(exc).__name__}: {exc}")
            if disk_writes.disk_full(exc):  # unless the disk refused its log: that stops the sweep, no record
                result = launcher.ChildResult(record=None, returncode=None,
                                              write_failed=disk_writes.describe_failure(exc, request.log_path))
        with self._lock:
            self._ended.add(job.key)
            facts = {"kind": self.kind, "jobs": self.jobs, "host": self.host,
                     "cores": list(grant.cores) if self.confine else None, "gpus": list(grant.gpus),
                     "running_beside_at_start": beside_at_start, "running_beside_at_end": self._live()}
            self._done.put((Finished(job, result, facts), grant))

    def wait(self, timeout: float) -> list:
        """The jobs that finished (at least one, unless `timeout` seconds pass first)."""
        items = []
        try:
            items.append(self._done.get(timeout=timeout))
            while True:
                items.append(self._done.get_nowait())
        except queue.Empty:
            pass
        finished = []
        for done, grant in items:
            self.pool.release(grant)
            with self._lock:
                self._running.pop(done.job.key, None)
                self._ended.discard(done.job.key)
            finished.append(done)
        return finished

    def stop_all(self) -> None:
        """Kill every running child's process group (Ctrl-C); their threads then end on their own."""
        with self._lock:
            pids = [pid for key, (_, pid) in self._running.items() if pid and key not in self._ended]
        for pid in pids:
            process_groups.kill_group(pid)
        for thread in self._threads:
            thread.join(timeout=10)

    def close(self) -> None:
        for thread in self._threads:
            thread.join(timeout=1)
        if self.servers:
            self.servers.close()
