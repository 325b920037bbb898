"""The body of one config's Ray task, on whichever node Ray picked (docs/parallel.md, docs/architecture.md
"Executors"): the same child command and launcher as a local run, with what only the node can do itself.

- Cores: the task holds --cores-per-job cores of its node that no other task of the sweep holds
  (`node_cores`), pins the child to them and sizes its threads to them.
- Files: the child writes under a scratch output directory on the node; they travel home with the result
  (`artifact_shipping`), so every path in the record exists on the driver.
- A driver that is gone (killed): Ray ends the job's workers; the child dies with its worker
  (single_config.die_with_parent) and a watcher here kills its process group as soon as the job is over.
- Where it runs: the task writes its node's id in Ray's key-value store first (`WHERE_NAMESPACE`), so the
  driver can send a retry of a task whose worker died elsewhere (ray.cluster_executor).
- Scratch: the task's output scratch keeps its log beside it until the task has packed its files, so a
  scratch with a log is a task that never finished; `tidy_node` (a task of its own on every node at the
  sweep's end) removes those, the sweep's core locks and empty directories, and what dead sweeps left.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import socket
import tempfile
import threading

from benchmarks.fork_server import client, node_servers
from benchmarks.plumbing import process_groups, scratch_dirs
from benchmarks.runner import forked_launch, launcher
from benchmarks.runner.ray import artifact_shipping, node_cores

log = logging.getLogger("benchmarks.runner.ray.task")

DRIVER_CHECK_SECONDS = 1.0
WHERE_NAMESPACE = "ptbench-where"  # Ray's key-value store: "<sweep id>/<attempt id>" -> the node that ran it


def where_key(sweep_id: str, attempt_id: str) -> str:
    return f"{sweep_id}/{attempt_id}"


@dataclasses.dataclass
class TaskSpec:
    """What the driver sends with each task (plain data: it travels to the node)."""

    argv: list
    env_changes: dict
    env_removed: list
    timeout: float
    memory_limit: object
    cores: int
    sweep_id: str
    attempt_id: str  # the config's key and attempt: names its files in --artifacts-uri
    output_dir: str  # the driver's --output-dirname, as the child's command line and environment name it
    artifacts_uri: object = None
    artifacts_max_size: int = 2**30
    fork: object = None  # (server kind, entry point) when the driver found the config forkable (--launch=fork)
    shared_compile_cache: bool = False  # launcher.ChildRequest's
    uses_cuda: bool = False  # launcher.ChildRequest's
    warm_start: bool = False  # launcher.ChildRequest's: the pair runs in this task, on this node's disk


def _node_environment(spec: TaskSpec, scratch: str, cores: list) -> tuple:
    env = dict(os.environ)
    for name in spec.env_removed:
        env.pop(name, None)
    env.update(spec.env_changes)
    threads = str(len(cores))
    env.update(OMP_NUM_THREADS=threads, MKL_NUM_THREADS=threads, TORCHINDUCTOR_COMPILE_THREADS=threads)
    driver_out = os.path.abspath(spec.output_dir)
    for name, value in env.items():  # dump paths (XLA_FLAGS, ...) point into the output directory
        if driver_out in value:
            env[name] = value.replace(driver_out, scratch)
    argv = [arg for arg in spec.argv if not arg.startswith("--output-dirname=")]  # absent when it is the default
    return argv + [f"--output-dirname={scratch}", f"--cpu-affinity={','.join(map(str, cores))}"], env


def _watch_driver(ray, pid_box: dict, done: threading.Event) -> None:
    """Kill the child's group when this task's job is over (its driver died): Ray would end the worker too,
    but not always before the child has run on."""
    job_id = ray.get_runtime_context().get_job_id()
    worker = ray._private.worker.global_worker  # the job table is only on the GCS client
    while not done.wait(DRIVER_CHECK_SECONDS):
        try:
            jobs = worker.gcs_client.get_all_job_info(skip_submission_job_info_field=True,
                                                      skip_is_running_tasks_field=True, timeout=5)
            dead = any(key.hex() == job_id and info.is_dead for key, info in jobs.items())
        except Exception:  # the GCS is away for a moment: look again later
            continue
        if dead:
            if pid_box.get("pid"):
                process_groups.kill_group(pid_box["pid"])
            return


def _run_child(ray, spec: TaskSpec, request: launcher.ChildRequest, node_id: str) -> launcher.ChildResult:
    """Forked from this node's fork server when the config may fork and the node has its servers, else spawned."""
    actor = node_servers.lookup(ray, spec.sweep_id, node_id) if spec.fork else None
    if actor is None:
        return launcher.run_child(request)
    kind, entry = spec.fork
    server = client.ServerSpec(kind, tuple(sorted(client.before_import(request.env).items())), tuple(entry))
    return _forked_on_node(ray, actor, dataclasses.replace(request, fork=server))


def _forked_on_node(ray, actor, request: launcher.ChildRequest) -> launcher.ChildResult:
    """launcher.run_child forked from this node's server for `request.fork`, which the node's actor gives (a server
    lost under the child is replaced once, as locally); spawned when the actor is gone before it starts."""
    def server_for(spec, replacing):
        try:
            path = ray.get(actor.address.remote(spec, replacing.path if replacing else None))
        except ray.exceptions.RayError as exc:
            raise client.ServerLost(f"this node's fork servers are gone ({type(exc).__name__})") from None
        return client.ServerClient(spec, path)

    try:
        first = server_for(request.fork, None)
    except client.ServerLost as exc:
        log.warning("%s: the child is spawned", exc)
        return launcher.run_child(request)
    return forked_launch.run_forked(request, server_for, first)


def run_on_node(spec: TaskSpec) -> dict:
    import psutil
    import ray

    context = ray.get_runtime_context()
    node = {"host": socket.gethostname(), "node_id": context.get_node_id(),
            "node_ip": ray.util.get_node_ip_address(), "gpus": [str(g) for g in ray.get_gpu_ids()]}
    from ray.experimental import internal_kv

    internal_kv._internal_kv_put(where_key(spec.sweep_id, spec.attempt_id), node["node_id"], overwrite=True,
                                 namespace=WHERE_NAMESPACE)
    usable = sorted(psutil.Process().cpu_affinity())
    held = node_cores.take(spec.sweep_id, spec.cores, usable)
    if held is None:
        result = launcher.ChildResult(record=None, returncode=None, start_error=(
            f"--cores-per-job {spec.cores} is more than the {len(usable)} core(s) of node {node['node_ip']}"))
        return dict(node, result=dataclasses.asdict(result), log=b"", shipment={})
    scratch_parent = node_servers.node_scratch(spec.sweep_id)
    os.makedirs(scratch_parent, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="out-", dir=scratch_parent)
    pid_box, done = {}, threading.Event()
    watcher = threading.Thread(target=_watch_driver, args=(ray, pid_box, done), daemon=True, name="driver-watch")
    watcher.start()
    try:
        argv, env = _node_environment(spec, scratch, held.cores)
        log_path = scratch + ".log"
        request = launcher.ChildRequest(argv=argv, env=env, log_path=log_path, timeout=spec.timeout,
                                        memory_limit=spec.memory_limit, cpu_affinity=held.cores,
                                        shared_compile_cache=spec.shared_compile_cache, uses_cuda=spec.uses_cuda,
                                        warm_start=spec.warm_start,
                                        on_start=lambda pid: pid_box.update(pid=pid))
        result = _run_child(ray, spec, request, node["node_id"])
    finally:
        done.set()
        held.release()
    with open(log_path, "rb") as handle:
        log_bytes = handle.read()
    remote_dir = (artifact_shipping.remote_root(spec.artifacts_uri, spec.sweep_id, spec.attempt_id)
                  if spec.artifacts_uri else None)
    shipment = artifact_shipping.pack(scratch, spec.artifacts_max_size, spec.artifacts_uri, remote_dir,
                                      node["node_ip"])
    artifact_shipping.clean(scratch)
    os.remove(log_path)  # last: a scratch whose log is still there belongs to a task that never finished
    return dict(node, result=dataclasses.asdict(result), log=log_bytes, shipment=shipment)


def tidy_node(sweep_id: str, ending: bool) -> list:
    """On a node: remove what dead sweeps left here (`scratch_dirs.collect_stale`), and when the sweep
    `sweep_id` is `ending`, its own scratch here: its core locks, the scratch of its tasks that never finished
    (their worker died), empty directories. Files a finished task could not ship stay (its record names
    them). Returns what was removed, for the driver's debug log."""
    removed = scratch_dirs.collect_stale()
    if not ending:
        return removed
    locks = node_cores.lock_dir(sweep_id)
    if os.path.isdir(locks):
        shutil.rmtree(locks, ignore_errors=True)
        removed.append(locks)
    scratch = node_servers.node_scratch(sweep_id)
    if os.path.isdir(scratch):
        import ray

        alive = [n["NodeID"] for n in ray.nodes() if n.get("Alive")]
        for name in sorted(os.listdir(scratch)):
            path = os.path.join(scratch, name)
            if name.startswith("out-") and name.endswith(".log"):
                shutil.rmtree(path[:-len(".log")], ignore_errors=True)
                os.remove(path)
                removed.append(path[:-len(".log")])
            elif (name.startswith(node_servers.SERVERS_DIR)
                  and not any(n.startswith(name[len(node_servers.SERVERS_DIR):]) for n in alive)):
                # the servers of a node that left the cluster (nodes may share a machine): their actor died
                # with the node, so their logs can't come home
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
        scratch_dirs.remove_empty_dirs(scratch)
    return removed
