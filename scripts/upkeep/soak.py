"""`make soak`: hours of faults with nothing lost, as a figure (not a test; docs/runner.md, "Isolation, failures and resume").

A sweep of small models (the dummy suite's mlp and cnn; eager and Inductor from the machine's compile cache,
eval and train, --jobs 2, children forked from the fork server, a short --subprocess-timeout) runs again and again while a seeded chaos loop hits
it at random moments; each time the sweep was killed, the same command resumes it, until the round is whole.

- Phase "local": SIGKILL a child, a fork server or the parent; SIGSTOP a child past the timeout (then SIGCONT).
- Phase "ray": the same sweep on a simulated Ray cluster (ray.cluster_utils.Cluster: a head without CPUs and two
  one-CPU nodes on this machine): SIGKILL a child, remove a node (a fresh one joins in its place), SIGKILL the
  driver.

Each phase first runs a clean round (with Inductor two: the first fills the compile cache); the last clean
round's wall time is the baseline. Every round
writes a results file of its own; after each, the soak counts the configs with exactly one record (the
record is the config's final answer: a killed child's is a crash, a stopped one's a timeout), the lost ones
(no record), the duplicated ones (more than one), torn lines, and, once the sweep has ended, the processes and
the scratch directories it left behind. Every process of the soak gets a temp directory of its own (TMPDIR),
so what is left there is the soak's. Prints the faults by kind and those figures; exit 1 when anything was
lost, duplicated, torn or left behind.

    SOAK_MINUTES=10 make soak        # or: python -m scripts.upkeep.soak --minutes 10 --seed 0
    python -m scripts.upkeep.soak --iterations 2 --eager-only --phases local     # a quick check of the soak itself
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.results import records

MODELS = "^(mlp|cnn)$"
TIMEOUT = 60  # --subprocess-timeout: a stopped child is stopped longer than this
MAX_FAULTS_PER_ROUND = 6  # then the round is left to finish (every round ends)


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog=f"python -m {__spec__.name}",
                                description=__doc__.splitlines()[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--minutes", type=float, default=float(os.environ.get("SOAK_MINUTES") or 10),
                   help="how long the faulted rounds go on, both phases together (default: $SOAK_MINUTES or 10)")
    p.add_argument("--seed", type=int, default=int(os.environ.get("SOAK_SEED") or 0), help="the chaos loop's seed")
    p.add_argument("--iterations", type=int, default=None,
                   help="faulted rounds per phase instead of --minutes (a quick check of the soak itself)")
    p.add_argument("--phases", default="local,ray", help="local, ray or both (default: local,ray)")
    p.add_argument("--eager-only", action="store_true", help="no Inductor configs (no compile: quick)")
    p.add_argument("--timeout", type=int, default=TIMEOUT, help=f"the sweep's --subprocess-timeout (default {TIMEOUT})")
    p.add_argument("--mean-gap", type=float, default=8.0, help="mean seconds between faults (default 8)")
    p.add_argument("--output-dir", default=os.path.join(ROOT, "output", "soak"), help="where the rounds' files go")
    args = p.parse_args(argv)
    args.phases = [name.strip() for name in args.phases.split(",") if name.strip()]
    if not args.phases or set(args.phases) - {"local", "ray"}:
        p.error("--phases takes local, ray or both")
    return args


# ---------------------------------------------------------------- processes


def psutil_module():
    import psutil

    return psutil


def cmdline(proc) -> str:
    try:
        return " ".join(proc.cmdline())
    except Exception:
        return ""


def local_targets(parent_pid: int) -> dict:
    """The live sweep's processes: its fork servers and its children (forked: a server's; spawned: the parent's)."""
    psutil = psutil_module()
    try:
        parent = psutil.Process(parent_pid)
        direct = parent.children()
    except psutil.Error:
        return {"servers": [], "children": []}
    servers = [p for p in direct if "benchmarks.fork_server.zygote" in cmdline(p)]
    children = [p for p in direct if "--model-config" in cmdline(p)]
    for server in servers:
        try:
            children += server.children()
        except psutil.Error:
            pass
    return {"servers": servers, "children": children}


def ray_targets(driver_pid: int) -> dict:
    """A Ray sweep's children on this machine's nodes: each writes under a scratch directory named after its
    driver's pid (spawned: its command line; forked: its node's fork server's, whose child it is)."""
    psutil = psutil_module()
    children = []
    for proc in psutil.process_iter():
        line = cmdline(proc)
        if f"-{driver_pid}-" not in line or "ptbench-ray-" not in line:
            continue
        try:
            if "--model-config" in line or ("benchmarks.fork_server.zygote" in line
                                            and "benchmarks.fork_server.zygote" in cmdline(proc.parent())):
                children.append(proc)
        except psutil.Error:
            continue
    return {"servers": [], "children": children}


def processes_mentioning(texts: list, also: str = "") -> list:
    """Live processes whose command line holds any of `texts` (and `also`)."""
    psutil = psutil_module()
    found = []
    for proc in psutil.process_iter():
        if proc.pid == os.getpid():
            continue
        line = cmdline(proc)
        if any(text in line for text in texts) and also in line:
            found.append(proc)
    return found


def signal_quietly(proc, sig) -> bool:
    try:
        proc.send_signal(sig)
        return True
    except Exception:
        return False


# ---------------------------------------------------------------- chaos


class Chaos:
    """The seeded fault loop for one run of the sweep command."""

    def __init__(self, rng: random.Random, kinds: dict, mean_gap: float, timeout: int, counts: collections.Counter):
        self.rng, self.kinds, self.mean_gap, self.timeout, self.counts = rng, kinds, mean_gap, timeout, counts

    def run(self, proc: subprocess.Popen, targets, budget: int, act: dict) -> int:
        """Inject faults into the running sweep `proc` until it ends or it was killed (at most `budget`); the
        number injected."""
        injected = 0
        names = list(self.kinds)
        weights = [self.kinds[n] for n in names]
        while proc.poll() is None and injected < budget:
            deadline = time.monotonic() + self.rng.expovariate(1.0 / self.mean_gap)
            kind = self.rng.choices(names, weights)[0]
            pick = self.rng.random()
            while time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.1)
            if proc.poll() is not None:
                break
            if act[kind](proc, targets(proc.pid), pick):
                if kind in ("kill_parent", "kill_driver"):
                    if proc.wait() == -signal.SIGKILL:  # not when it had just ended by itself
                        self.counts[kind] += 1
                        injected += 1
                    break
                self.counts[kind] += 1
                injected += 1
        return injected


def choose(items: list, pick: float):
    return items[min(int(pick * len(items)), len(items) - 1)] if items else None


def kill_child(proc, found, pick) -> bool:
    child = choose(found["children"], pick)
    return child is not None and signal_quietly(child, signal.SIGKILL)


def kill_fork_server(proc, found, pick) -> bool:
    server = choose(found["servers"], pick)
    return server is not None and signal_quietly(server, signal.SIGKILL)


def kill_parent(proc, found, pick) -> bool:
    return proc.poll() is None and signal_quietly(proc, signal.SIGKILL)


def stop_child_past_timeout(timeout: int):
    def act(proc, found, pick) -> bool:
        child = choose(found["children"], pick)
        if child is None or not signal_quietly(child, signal.SIGSTOP):
            return False
        end = time.monotonic() + timeout + 5
        while time.monotonic() < end and proc.poll() is None and child.is_running():
            time.sleep(0.5)
        signal_quietly(child, signal.SIGCONT)  # the launcher has killed it by now (its timeout): if not, it goes on
        return True

    return act


# ---------------------------------------------------------------- accounting


def read_results(path: str) -> tuple:
    """(records, torn lines) of a results file."""
    found, torn = [], 0
    if not os.path.exists(path):
        return found, torn
    with open(path, "rb") as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                found.append(json.loads(line))
            except ValueError:
                torn += 1
    return found, torn


def scratch_left(temp: str) -> list:
    """ptbench scratch in the soak's temp directory: a process's own directories, and the sweeps' entries in the
    per-user roots (the roots themselves are shared by sweeps and stay)."""
    left = []
    for name in sorted(os.listdir(temp)):
        path = os.path.join(temp, name)
        if not name.startswith("ptbench-"):
            continue
        if re.fullmatch(r"ptbench-(cores|ray)-\d+", name):
            left += [os.path.join(path, entry) for entry in sorted(os.listdir(path))]
        else:
            left.append(path)
    return left


def expected_configs(sweep: list, env: dict) -> int:
    """Records a whole round writes: configs to run plus the suite's skips (from --dry-run)."""
    out = subprocess.run([sys.executable, os.path.join(ROOT, "experiment_runner.py"), *sweep, "--dry-run"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    match = re.search(r": (\d+) to run, (\d+) skipped", out.stdout)
    if out.returncode != 0 or not match:
        raise SystemExit(f"soak: the sweep's --dry-run failed: {out.stderr.strip()[-500:]}")
    return int(match.group(1)) + int(match.group(2))


class Tally:
    def __init__(self, name: str):
        self.name = name
        self.faults = collections.Counter()
        self.rounds = self.runs = self.configs = self.exactly_one = self.lost = self.duplicated = self.torn = 0
        self.processes_left = self.scratch_left = 0
        self.clean_seconds = None
        self.faulted_seconds = []
        self.statuses = collections.Counter()
        self.notes = []

    def account(self, results: str, expected: int) -> None:
        found, torn = read_results(results)
        by_config = collections.Counter(records.record_fingerprint(r) for r in found)
        self.configs += expected
        self.exactly_one += sum(1 for n in by_config.values() if n == 1)
        self.duplicated += sum(1 for n in by_config.values() if n > 1)
        self.lost += max(0, expected - len(by_config))
        self.torn += torn
        self.statuses.update(records.record_status(r) for r in found)
        if torn or len(by_config) != expected or any(n > 1 for n in by_config.values()):
            self.notes.append(f"{results}: {len(found)} record(s) of {len(by_config)} config(s), {expected} "
                              f"expected, {torn} torn line(s)")


def note_scratch(tally: Tally, temp: str) -> None:
    """Count the scratch left in the soak's temp directory, and say what each holds."""
    left = scratch_left(temp)
    tally.scratch_left = len(left)
    for path in left:
        inside = [os.path.relpath(os.path.join(d, n), path) for d, dirs, files in os.walk(path) for n in dirs + files]
        tally.notes.append(f"scratch left: {path} holding {inside[:6]}")


def wait_gone(texts: list, seconds: float, also: str = "") -> list:
    """Processes still mentioning any of `texts` (and `also`) after up to `seconds` (what a sweep left behind)."""
    end = time.monotonic() + seconds
    while True:
        left = processes_mentioning(texts, also)
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.5)


# ---------------------------------------------------------------- phases


def sweep_flags(args, out: str) -> list:
    # Inductor compiles from the machine's cache (--compile-cache=shared): a resumed config compiles again cheaply.
    dynamo = ["--dynamo=None"] + ([] if args.eager_only else ["--dynamo=inductor", "--compile-cache=shared"])
    return ["--suite-name=dummy", "-k", MODELS, "--accelerator=cpu", "--xla=None", *dynamo, "--test=eval",
            "--test=train", "--jobs=2", "--launch=fork", "--repeat=2", "--warmup=1",
            f"--subprocess-timeout={args.timeout}", f"--output-dirname={out}"]


def phase_rounds(args, phase: str, deadline: float):
    """A phase's rounds, each (its output directory, whether faults are injected): the clean ones first, then
    faulted ones, --iterations of them, else until the deadline."""
    rounds = 0
    while True:
        faulted = rounds >= clean_rounds(args)
        if faulted and (rounds >= args.iterations + clean_rounds(args) if args.iterations is not None
                        else time.monotonic() > deadline):
            return
        yield os.path.join(args.output_dir, f"{phase}-{rounds}"), faulted
        rounds += 1


def clean_rounds(args) -> int:
    """Rounds without faults first: one fills the compile cache (Inductor), the last is the baseline."""
    return 1 if args.eager_only else 2


def run_round(args, tally: Tally, sweep: list, env: dict, chaos, targets, act, faulted: bool, expected: int,
              results: str, watch: list, before_run=None) -> None:
    """Run the sweep command until it ends by itself, resuming it after each kill; then account for it."""
    started = time.monotonic()
    faults = 0
    while True:
        if before_run:
            before_run()
        proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "experiment_runner.py"), *sweep], cwd=ROOT,
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        errors = []
        reader = threading.Thread(target=lambda: errors.append(proc.stderr.read()), daemon=True)
        reader.start()
        tally.runs += faulted
        if faulted and faults < MAX_FAULTS_PER_ROUND:
            faults += chaos.run(proc, targets, MAX_FAULTS_PER_ROUND - faults, act)
        proc.wait()
        reader.join(timeout=10)
        if proc.returncode in (0, 1):
            break
        if proc.returncode not in (-signal.SIGKILL,):
            text = (errors[0] if errors else b"").decode("utf-8", "replace").strip().splitlines()
            tally.notes.append(f"a run ended with exit {proc.returncode}: {text[-1] if text else ''}")
            if proc.returncode == 2:  # a usage error: it would end so again
                raise SystemExit(f"soak: the sweep refused its command: {text[-1] if text else ''}")
    elapsed = time.monotonic() - started
    if faulted:
        tally.faulted_seconds.append(elapsed)
        tally.rounds += 1
        tally.account(results, expected)
    else:
        tally.clean_seconds = elapsed
    left = wait_gone(watch, 15)
    tally.processes_left += len(left)
    if left:
        tally.notes.append("left running: " + "; ".join(f"{p.pid} {cmdline(p)[:120]}" for p in left))


def local_phase(args, rng, env, temp, deadline) -> Tally:
    tally = Tally("local")
    kinds = {"kill_child": 3, "kill_fork_server": 1, "kill_parent": 2, "stop_child_past_timeout": 1}
    act = {"kill_child": kill_child, "kill_fork_server": kill_fork_server, "kill_parent": kill_parent,
           "stop_child_past_timeout": stop_child_past_timeout(args.timeout)}
    chaos = Chaos(rng, kinds, args.mean_gap, args.timeout, tally.faults)
    expected = expected_configs(sweep_flags(args, os.path.join(args.output_dir, "local-dry")), env)
    for out, faulted in phase_rounds(args, "local", deadline):
        run_round(args, tally, sweep_flags(args, out), env, chaos, local_targets, act, faulted, expected,
                  os.path.join(out, "results.jsonl"), [out, temp])
    note_scratch(tally, temp)
    return tally


def ray_phase(args, rng, env, temp, deadline) -> Tally:
    from ray.cluster_utils import Cluster

    tally = Tally("ray")
    os.makedirs(os.path.join(temp, "ray"), exist_ok=True)  # Ray notes its cluster's address there
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "temp_dir": os.path.join(temp, "r")})
    nodes = [cluster.add_node(num_cpus=1) for _ in range(2)]
    cluster.wait_for_nodes()
    drivers = []

    def remove_node(proc, found, pick) -> bool:
        index = min(int(pick * len(nodes)), len(nodes) - 1)
        cluster.remove_node(nodes[index])
        nodes[index] = cluster.add_node(num_cpus=1)  # a fresh node joins in its place
        return True

    kinds = {"kill_child": 2, "remove_node": 1, "kill_driver": 1}
    act = {"kill_child": kill_child, "remove_node": remove_node, "kill_driver": kill_parent}
    chaos = Chaos(rng, kinds, args.mean_gap * 1.5, args.timeout, tally.faults)
    ray_env = dict(env, RAY_AUTH_MODE="disabled")
    expected = expected_configs(sweep_flags(args, os.path.join(args.output_dir, "ray-dry")), env)

    def targets(pid):
        drivers.append(pid)
        return ray_targets(pid)

    try:
        for out, faulted in phase_rounds(args, "ray", deadline):
            sweep = sweep_flags(args, out) + ["--executor=ray", f"--ray-address={cluster.address}"]
            run_round(args, tally, sweep, ray_env, chaos, targets, act, faulted, expected,
                      os.path.join(out, "results.jsonl"), [out])
        left = wait_gone([f"-{pid}-" for pid in set(drivers)], 15, also="ptbench-")  # children, node fork servers
        tally.processes_left += len(left)
        if left:
            tally.notes.append("left running: " + "; ".join(f"{p.pid} {cmdline(p)[:120]}" for p in left))
        note_scratch(tally, temp)
    finally:
        cluster.shutdown()
    return tally


# ---------------------------------------------------------------- report


def report(tallies: list, args, wall: float) -> bool:
    load = os.getloadavg()
    print(f"soak: {wall / 60:.1f} min wall, seed {args.seed}, "
          f"{'--iterations ' + str(args.iterations) if args.iterations is not None else f'{args.minutes:g} min'} "
          f"of faults, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    clean = True
    for t in tallies:
        faults = ", ".join(f"{k} {v}" for k, v in sorted(t.faults.items())) or "none"
        print(f"\nphase {t.name}: {t.rounds} faulted round(s), {t.runs} run(s) of the sweep command (resumes included)")
        print(f"  faults injected: {sum(t.faults.values())} ({faults})")
        print(f"  configs with exactly one final record: {t.exactly_one} of {t.configs}")
        print(f"  lost: {t.lost}   duplicated: {t.duplicated}   torn lines: {t.torn}")
        print(f"  left behind: {t.processes_left} process(es), {t.scratch_left} scratch director(ies)")
        if t.faulted_seconds:
            mean = sum(t.faulted_seconds) / len(t.faulted_seconds)
            lost = sum(t.faulted_seconds) - (t.clean_seconds or 0) * len(t.faulted_seconds)
            print(f"  wall time: clean round {t.clean_seconds:.1f} s, faulted rounds {mean:.1f} s on average: "
                  f"{lost:.1f} s lost to recovery in all ({lost / max(1, sum(t.faults.values())):.1f} s per fault)")
        print("  final records by status: " + ", ".join(f"{k} {v}" for k, v in sorted(t.statuses.items())))
        for note in t.notes:
            print(f"  note: {note}")
        clean = clean and not (t.lost or t.duplicated or t.torn or t.processes_left or t.scratch_left)
    print(f"\nsoak: {'0 lost / 0 duplicated / 0 torn / 0 left behind' if clean else 'NOT CLEAN (see above)'}")
    return clean


def main(argv=None) -> int:
    args = parse_args(argv)
    shutil.rmtree(args.output_dir, ignore_errors=True)
    os.makedirs(args.output_dir)
    temp = tempfile.mkdtemp(prefix="sk", dir="/tmp")  # short: Ray's socket paths live under it
    os.environ["TMPDIR"] = temp  # this process's Ray nodes too
    tempfile.tempdir = None
    env = dict(os.environ, TMPDIR=temp, PYTHONPATH=ROOT)
    # The machine's compile cache, not one under the private temp directory: reruns compile from it.
    env.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join("/tmp", f"torchinductor_{os.environ.get('USER', 'root')}"))
    rng = random.Random(args.seed)
    started = time.monotonic()
    share = {"local": 0.6, "ray": 0.4} if len(args.phases) == 2 else {args.phases[0]: 1.0}
    tallies = []
    try:
        for name in args.phases:
            deadline = time.monotonic() + args.minutes * 60 * share[name]
            tallies.append((local_phase if name == "local" else ray_phase)(args, rng, env, temp, deadline))
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    return 0 if report(tallies, args, time.monotonic() - started) else 1


if __name__ == "__main__":
    sys.exit(main())
