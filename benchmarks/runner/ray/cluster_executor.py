"""--executor=ray: each config's child runs on whichever node of a Ray cluster has room for it.

One Ray task per config declares what it needs (--cores-per-job CPUs, num_gpus for CUDA configs, a `TPU`
resource for TPU configs) and runs the same single-config child command through the same launcher as a
local run, on the node Ray picks (`task.run_on_node`: its cores pinned, its files shipped home), so
isolation, timeout, memory limit, process-group kill and the pipe hand-back are one code. With --launch=fork
each node forks its children from its own fork servers (`fork_server.node_servers`: one actor per node, owned by this
driver, started when the first forkable config is submitted). The task returns the
child's result, its log and its files; the parent (the driver) writes them where a local run puts them and
appends the record: it stays the only writer. --jobs caps the tasks in flight.

A task lost to the infrastructure (its worker or node died) runs once more, on another node when the cluster
has one that could run it (Ray's hard label selector `ray.io/node-id: !<the node it was lost on>`; the task
wrote its node in Ray's key-value store as it started), and its record says so
(`environment.executor.retries`, `lost_on`); a second loss is a `crash` record (`ExecutorLost`). A
config whose own child crashed is not retried: the child's end is an ordinary result. Ctrl-C cancels every
task. When the sweep ends, a small task on every live node removes the sweep's scratch there and what dead
sweeps left (`task.tidy_node`), and the driver the sweep's empty directories under --artifacts-uri.
How to join a cluster: `ray.join` (token, stale files). Every node needs the same environment and model
sources at the same paths (docs/parallel.md).
"""

from __future__ import annotations

import logging
import os
import socket
from typing import Optional

from benchmarks.config.run_options import RunOptions
from benchmarks.fork_server import client, node_servers
from benchmarks.plumbing import cli_support, disk_writes, environment_variables, machine_facts, scratch_dirs
from benchmarks.plumbing.cli_support import UsageError
from benchmarks.plumbing.cpu_affinity import usable_cores
from benchmarks.plumbing.safe_paths import inside, relative
from benchmarks.runner import launcher
from benchmarks.runner.executor import Finished, Job
from benchmarks.runner.ray import artifact_shipping, join, task

log = logging.getLogger("benchmarks.runner.ray.cluster_executor")

RETRIES = 1  # runs more of a config whose task the infrastructure lost
TIDY_SECONDS = 30.0  # how long the driver waits for the nodes to remove the sweep's scratch


class RayExecutor:
    kind = "ray"

    def __init__(self, options: RunOptions, fork_preloads: tuple = ()):
        self.address = options.ray_address or os.environ.get("RAY_ADDRESS") or None
        if self.address:
            join.check_reachable(self.address)
        problem = options.artifacts_uri and artifact_shipping.check_uri(options.artifacts_uri)
        if problem:
            raise UsageError(problem)
        token = join.ask_for_token_mode() if self.address else None  # before Ray reads its config
        try:
            import ray
        except ImportError:
            raise UsageError("--executor=ray needs Ray: pip install -e '.[ray]' (make env installs it)") from None
        self.ray = ray
        self.fork = options.launch == "fork" and client.available()
        self.fork_preloads = tuple(fork_preloads)
        self._node_servers: Optional[dict] = None  # node id -> its fork servers' actor, once a config may fork
        self._starting: dict = {}  # actor readiness ref -> node id, until the actor has started (or failed to)
        self.token_source = token
        self.token = token if os.environ.get(join.AUTH_MODE) == "token" else None
        self._saved_python_path = None
        self.sweep_id = None
        # object ref -> (job, running beside at start, attempt, cause of the last loss, the node it was lost on)
        self._in_flight: dict = {}
        self.options = options
        self.cluster: dict = {}

    def start(self) -> None:
        """Start or join Ray (after the checks above, and after the sweep holds its results file: sweep.execute)."""
        ray, options = self.ray, self.options
        # The workers import this module: they find it on PYTHONPATH (the same path on every node). A local
        # instance's workers inherit this process's environment; a cluster's get it as the job's runtime env
        # (which costs every worker a slower start, so the local instance goes without).
        python_path = os.pathsep.join(filter(None, [machine_facts.PROJECT_ROOT, os.environ.get("PYTHONPATH")]))
        if self.address:
            where = {"runtime_env": {"env_vars": {"PYTHONPATH": python_path}}}
        else:
            self._saved_python_path = os.environ.get("PYTHONPATH")
            os.environ["PYTHONPATH"] = python_path
            # The CPUs this process may run on (taskset, a cgroup's cpuset), not the machine's: a Ray of its own
            # runs no more tasks at once than there are cores to run them.
            where = {"num_cpus": len(usable_cores())}
        join.init(ray, self.address, self.token_source, **where)
        self.remote = ray.remote(max_retries=0)(task.run_on_node)
        resources = ray.cluster_resources()
        self.cluster = {"CPU": int(resources.get("CPU", 0)), "GPU": int(resources.get("GPU", 0)),
                        "TPU": int(resources.get("TPU", 0))}
        self.cores_per_job = options.cores_per_job or 1
        largest = max((int(n["Resources"].get("CPU", 0)) for n in ray.nodes() if n.get("Alive")), default=0)
        if self.cores_per_job > largest:
            self.close()
            raise UsageError(f"--cores-per-job {self.cores_per_job} is more than any node of the Ray cluster offers "
                             f"(at most {largest} CPU)")
        self.jobs = options.jobs or max(1, self.cluster["CPU"] // self.cores_per_job)
        self.gpus_per_job = options.gpus_per_job
        # Names the sweep's core locks and scratch directories on every node (the driver's host and pid).
        self.sweep_id = scratch_dirs.sweep_id_of(socket.gethostname(), os.getpid(), options.timestamp)
        try:
            self._tidy(ending=False, wait=False)  # what dead sweeps left on the nodes goes while this one starts
        except Exception as exc:  # a node that went away meanwhile: the next sweep collects it
            log.debug("tidy: %s", exc)

    def describe(self) -> str:
        where = self.address or "a local Ray instance started for this sweep"
        return (f"executor: ray at {where} ({self.cluster['CPU']} CPU, {self.cluster['GPU']} GPU, "
                f"{self.cluster['TPU']} TPU in the cluster), up to {self.jobs} task(s) in flight, "
                f"{self.cores_per_job} CPU core(s) per task, {self.gpus_per_job} GPU per CUDA task"
                + (", children forked from each node's fork servers" if self.fork else ""))

    def prepare(self, request: launcher.ChildRequest) -> None:
        """The sweep's first child may fork: every node's fork servers start now, while the sweep still prepares."""
        if request.fork:
            self._serve_nodes()

    def _serve_nodes(self) -> None:
        """From the first forkable config on, every node that may run a task keeps fork servers (once)."""
        if self.fork and self._node_servers is None:
            self._node_servers = {}
            for node_id in self._node_ids():
                self._serve_node(node_id)

    def _node_ids(self) -> list:
        return [n["NodeID"] for n in self.ray.nodes() if n.get("Alive") and n["Resources"].get("CPU", 0) > 0]

    def _serve_node(self, node_id: str) -> None:
        """Start `node_id`'s fork servers' actor, if it has none yet."""
        if node_id and node_id not in self._node_servers:
            actor = node_servers.start(self.ray, self.sweep_id, node_id, self.fork_preloads)
            self._node_servers[node_id] = actor
            if actor is not None:
                self._starting[actor.__ray_ready__.remote()] = node_id

    def _check_node_servers(self) -> None:
        """Say once per node when its fork servers' actor could not start (its tasks then spawn their children):
        e.g. a driver in Ray's token mode on a cluster without it starts tasks but no actors."""
        ready, _ = self.ray.wait(list(self._starting), num_returns=len(self._starting), timeout=0)
        for ref in ready:
            node_id = self._starting.pop(ref)
            try:
                self.ray.get(ref)
            except self.ray.exceptions.RayError as exc:
                text = str(exc).strip().splitlines()
                hint = (f"; this driver asked for Ray's token mode (a token is at {self.token}): on a cluster without "
                        "token authentication set RAY_AUTH_MODE=disabled" if self.token else "")
                log.warning("node %s: its fork servers did not start (%s%s): its children are spawned%s", node_id[:8],
                            type(exc).__name__, f": {text[-1]}" if text else "", hint)

    def impossible(self, job: Job) -> Optional[str]:
        if job.needs.gpus > self.cluster["GPU"]:
            return f"needs {job.needs.gpus} GPU(s) and the Ray cluster has {self.cluster['GPU']}"
        if job.needs.tpu and not self.cluster["TPU"]:
            return "needs a TPU and no node of the Ray cluster offers the TPU resource"
        return None

    def running(self) -> list:
        return [entry[0] for entry in self._in_flight.values()]

    def try_start(self, job: Job) -> bool:
        if len(self._in_flight) >= self.jobs:
            return False
        self._submit(job, len(self._in_flight), 0, None)
        return True

    def _submit(self, job: Job, beside_at_start: int, attempt: int, cause: Optional[str],
                avoid: Optional[str] = None) -> None:
        base = os.environ
        spec = task.TaskSpec(
            argv=job.request.argv, env_changes={k: v for k, v in job.request.env.items() if base.get(k) != v},
            env_removed=[k for k in base if k not in job.request.env], timeout=job.request.timeout,
            memory_limit=job.request.memory_limit, cores=self.cores_per_job, sweep_id=self.sweep_id,
            attempt_id=f"{job.key}-{attempt}", output_dir=self.options.output_dirname,
            artifacts_uri=self.options.artifacts_uri, artifacts_max_size=self.options.artifacts_max_size,
            fork=(job.request.fork.kind, job.request.fork.entry) if self.fork and job.request.fork else None,
            shared_compile_cache=job.request.shared_compile_cache, uses_cuda=job.request.uses_cuda,
            warm_start=job.request.warm_start)
        if spec.fork:
            self._serve_nodes()
        options = {"num_cpus": self.cores_per_job, "num_gpus": job.needs.gpus}
        if job.needs.tpu:
            options["resources"] = {"TPU": 1}
        if avoid and self._another_node_for(job, avoid):
            options["label_selector"] = {"ray.io/node-id": f"!{avoid}"}  # hard: any node but that one
        ref = self.remote.options(**options).remote(spec)
        self._in_flight[ref] = (job, beside_at_start, attempt, cause, avoid)

    def _another_node_for(self, job: Job, avoid: str) -> bool:
        """Whether a live node other than `avoid` has the resources this job's task asks for."""
        for node in self.ray.nodes():
            have = node.get("Resources", {})
            if (node.get("Alive") and node["NodeID"] != avoid and have.get("CPU", 0) >= self.cores_per_job
                    and have.get("GPU", 0) >= job.needs.gpus and (not job.needs.tpu or have.get("TPU", 0))):
                return True
        return False

    def _where(self, attempt_id: str) -> Optional[str]:
        """The node the task of `attempt_id` started on (None if it never started, or the store is away); the
        note is removed from the store."""
        from ray.experimental import internal_kv

        key = task.where_key(self.sweep_id, attempt_id)
        try:
            node = internal_kv._internal_kv_get(key, namespace=task.WHERE_NAMESPACE)
            internal_kv._internal_kv_del(key, namespace=task.WHERE_NAMESPACE)
        except Exception as exc:  # the GCS is away: the retry goes wherever Ray finds room
            log.debug("where did %s run: %s", attempt_id, exc)
            return None
        return node.decode() if node else None

    def wait(self, timeout: float) -> list:
        if self._starting:
            self._check_node_servers()
        if not self._in_flight:
            return []
        ready, _ = self.ray.wait(list(self._in_flight), num_returns=1, timeout=timeout)
        finished = []
        for ref in ready:
            done = self._collect(ref, *self._in_flight.pop(ref))
            if done is not None:
                finished.append(done)
        return finished

    def _collect(self, ref, job: Job, beside_at_start: int, attempt: int, cause: Optional[str],
                 lost_on: Optional[str]) -> Optional[Finished]:
        """The finished job, or None when its lost task was submitted again."""
        facts = {"kind": self.kind, "jobs": self.jobs, "host": None, "node_id": None, "node_ip": None, "cores": None,
                 "gpus": [], "running_beside_at_start": beside_at_start,
                 "running_beside_at_end": len(self._in_flight), "ray_address": self.address, "retries": attempt,
                 "lost_before": cause, "lost_on": lost_on, "artifacts_left_behind": []}
        ran_on = self._where(f"{job.key}-{attempt}")
        out = self.options.output_dirname
        log_path = inside(out, relative(job.request.log_path, out))
        os.makedirs(os.path.dirname(log_path), exist_ok=True)
        try:
            answer = self.ray.get(ref)
        except self.ray.exceptions.RayError as exc:  # the worker or its node died, or the task was cancelled
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            why = f"the Ray worker running this config was lost ({type(exc).__name__}{': ' + text if text else ''})"
            infrastructure = not isinstance(exc, (self.ray.exceptions.RayTaskError,
                                                  self.ray.exceptions.TaskCancelledError))
            disk_writes.append_bytes(log_path, f"$ {cli_support.command_line(job.request.argv)}\n[ray] {why}\n".encode())
            if infrastructure and attempt < RETRIES:
                log.warning("%s: %s; running it once more", job.config.label(), why)
                disk_writes.append_bytes(log_path, b"[ray] running it once more\n")
                self._submit(job, beside_at_start, attempt + 1, why, avoid=ran_on)
                return None
            return Finished(job, launcher.ChildResult(record=None, returncode=None, lost=why), facts)
        disk_writes.append_bytes(log_path, answer["log"])  # a full disk here stops the sweep (WriteFailed)
        facts["artifacts_left_behind"] = artifact_shipping.unpack(answer["shipment"], out, self.options.artifacts_uri)
        if answer["shipment"].get("remote"):  # the directories those files were put in, now empty
            artifact_shipping.prune_remote(self.options.artifacts_uri, artifact_shipping.remote_root(
                self.options.artifacts_uri, self.sweep_id, f"{job.key}-{attempt}"))
        result = launcher.ChildResult(**answer["result"])
        facts.update(host=answer["host"], node_id=answer["node_id"], node_ip=answer["node_ip"], gpus=answer["gpus"],
                     cores=result.cpu_affinity)
        if self._node_servers is not None:  # a node that joined since: its next configs fork too
            self._serve_node(answer["node_id"])
        return Finished(job, result, facts)

    def stop_all(self) -> None:
        for ref in list(self._in_flight):
            try:
                self.ray.cancel(ref, force=True)
            except Exception as exc:  # already finished, or the cluster is gone
                log.debug("cancel: %s", exc)
        self._in_flight.clear()

    def close(self) -> None:
        if not self.cluster:  # never started (refused before Ray, or Ray refused us)
            self.ray.shutdown()
            return
        self.stop_all()
        self._close_node_servers()
        if self.sweep_id:
            try:
                self._tidy(ending=True, wait=True)
            except Exception as exc:  # the cluster is gone: its nodes' scratch with it, or collected later
                log.debug("tidy: %s", exc)
            if self.options.artifacts_uri:
                artifact_shipping.prune_remote(self.options.artifacts_uri, artifact_shipping.sweep_remote_root(
                    self.options.artifacts_uri, self.sweep_id))
        self.ray.shutdown()
        if not self.address:  # the environment as it was before this executor
            environment_variables.apply({"PYTHONPATH": self._saved_python_path})

    def _tidy(self, ending: bool, wait: bool) -> None:
        """`task.tidy_node` on every live node, as a task pinned there holding no CPU (a local instance: here):
        the sweep's scratch when it is `ending`, what dead sweeps left in any case; `wait`: up to TIDY_SECONDS."""
        if not self.address:  # a local instance: its one node is this machine
            for path in task.tidy_node(self.sweep_id, ending):
                log.debug("removed scratch %s", path)
            return
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        tidy = self.ray.remote(max_retries=0, num_cpus=0)(task.tidy_node)
        refs = []
        for node in self.ray.nodes():
            if node.get("Alive"):
                try:
                    refs.append(tidy.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
                        node_id=node["NodeID"], soft=False)).remote(self.sweep_id, ending))
                except Exception as exc:  # the node went away meanwhile
                    log.debug("tidy node %s: %s", node["NodeID"][:8], exc)
        if not wait or not refs:
            return
        ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=TIDY_SECONDS)
        for ref in ready:
            try:
                for path in self.ray.get(ref):
                    log.debug("removed scratch %s", path)
            except self.ray.exceptions.RayError as exc:
                log.debug("tidy: %s", exc)
        if ending:
            from ray.experimental import internal_kv

            try:  # the where-keys of tasks this sweep never collected (cancelled ones)
                internal_kv._internal_kv_del(f"{self.sweep_id}/", del_by_prefix=True,
                                             namespace=task.WHERE_NAMESPACE)
            except Exception as exc:
                log.debug("where-keys: %s", exc)

    def _close_node_servers(self) -> None:
        """Stop every node's fork servers; their logs come home as logs/fork-server-<kind>-node-<id>.log."""
        for node_id, actor in (self._node_servers or {}).items():
            if actor is None:
                continue
            try:
                closed = self.ray.get(actor.close.remote(), timeout=node_servers.CLOSE_SECONDS)
            except Exception as exc:  # the node is gone, or the actor with it: its servers died with it
                log.debug("fork servers of node %s: %s", node_id, exc)
                continue
            if closed["started"]:
                log.info("node %s: %d fork server(s) started there", node_id[:8], closed["started"])
            for name, data in closed["logs"].items():
                path = inside(self.options.output_dirname,
                              os.path.join("logs", f"{name[:-len('.log')]}-node-{node_id[:8]}.log"))
                os.makedirs(os.path.dirname(path), exist_ok=True)
                disk_writes.append_bytes(path, data)  # a link there is not followed (WriteFailed says so)
        self._node_servers = None
