"""Which models a script calls: asked of a discovery child, cached by the script's content and arguments (and
the installed torch's version).

Parent side (no torch): the child (suites/script_capture.py) runs the script to its end in its own process
group, with its output in a log file, and writes what it found as it goes; this module starts it, enforces
--script-timeout on the script's own time (the child's torch import is not counted), and keeps the answer
in <output dir>/script-discovery/ (docs/runner.md, "Scripts"). That folder is the output directory's: it must
resolve inside it (safe_paths.under), its log is not written through a link (safe_paths.open_no_follow), and a
cache entry that is not a regular file of JSON (a FIFO, a link's damaged target) is discovered again, never waited on.
An entry is a claim, not a fact (docs/architecture.md, "The rule for state"): one that does not carry this user's
seal (plumbing/state_seal.py), or that names another script or other arguments than the ones asked about, is ignored
and discovered again; the script that runs is always the one the suite found, never one a cache entry names.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import time
from typing import Optional

from benchmarks.plumbing import machine_facts, process_groups, safe_reads, state_seal
from benchmarks.plumbing.safe_paths import open_no_follow, under
from benchmarks.suites import script_capture  # standard library only at import: torch is inside its functions

CACHE_DIRNAME = "script-discovery"
CACHE_FORMAT = 2  # part of the cache key: a new format discovers again
START_ALLOWANCE_SECONDS = 300.0  # the child's interpreter and torch import, before the script's clock starts
POLL_SECONDS = 0.05
FINISHED, CRASHED, TIMEOUT = "finished", "crashed", "timeout"


@dataclasses.dataclass
class Discovery:
    script: str
    script_args: Optional[str]
    status: str  # finished (ran to its end), crashed, timeout
    models: list  # {"name", "class", "inputs"} per model, in call order
    message: Optional[str]
    seconds: float  # the script's run time (until its end, crash or kill)
    timeout_seconds: float
    log: Optional[str] = None
    cached: bool = False

    @property
    def problem(self) -> Optional[str]:
        """Why the script gives no model ('no_model', 'crash' or 'timeout'), or None when it called one."""
        if self.models:
            return None
        return {FINISHED: "no_model", CRASHED: "crash", TIMEOUT: "timeout"}[self.status]

    def summary(self) -> str:
        """How the script's discovery run ended, in a few words."""
        if self.status == FINISHED:
            return f"ran to its end in {self.seconds:.1f} s"
        if self.status == TIMEOUT:
            return f"timed out after {self.timeout_seconds:g} s (--script-timeout)"
        return f"crashed: {self.message}"


def cache_key(path: str, script_args: Optional[str], torch_version: Optional[str] = None) -> str:
    """The script's content, its arguments, the cache format and the installed torch's version (read from the
    package's metadata, never by importing it): another torch may trace other modules, so it discovers again."""
    if torch_version is None:
        torch_version = machine_facts.package_version("torch") or ""
    digest = hashlib.sha256(f"{CACHE_FORMAT}\0{script_args or ''}\0{torch_version}\0".encode())
    with open(path, "rb") as handle:
        digest.update(handle.read())
    return digest.hexdigest()


def cache_file(output_dir: str, path: str, script_args: Optional[str]) -> str:
    stem = os.path.splitext(os.path.basename(path))[0]
    # under(): PathEscapes when script-discovery/ is a link out of the output directory
    return under(output_dir, CACHE_DIRNAME, f"{stem}-{cache_key(path, script_args)[:20]}.json")


def canonical(data: dict) -> bytes:
    return json.dumps(data, sort_keys=True).encode("utf-8", "surrogatepass")


def load_cached(cache: str, path: str, script_args: Optional[str], timeout: float) -> Optional[Discovery]:
    """The cached answer, unless not sealed by this user (state_seal: a planted entry is ignored), not of `path`
    with `script_args` (a cache never names the file to run), unreadable, a crash (its cause may lie outside the script: a missing package,
    the memory, a Ctrl-C) or a timeout under a shorter --script-timeout than this one."""
    try:
        data = safe_reads.load_json(cache, follow_links=False)
        claimed = data.pop("seal")
        if not state_seal.sealed(canonical(data), claimed):  # not written by this user's runs: a claim, ignored
            return None
        found = Discovery(**data, cached=True)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):  # a FIFO or a link, damaged JSON: again
        return None
    if found.script != path or found.script_args != script_args:  # the script to run is always the caller's
        return None
    if found.status == CRASHED or (found.status == TIMEOUT and found.timeout_seconds < timeout):
        return None
    return found


def discover(path: str, script_args: Optional[str], output_dir: str, timeout: float) -> Discovery:
    """The models `path` calls with `script_args`: from the cache, or from a discovery child (then cached)."""
    cache = cache_file(output_dir, path, script_args)
    found = load_cached(cache, path, script_args, timeout)
    if found is not None:
        return found
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    found = run_child(path, script_args, cache[:-len(".json")], timeout)
    data = dataclasses.asdict(found)
    data.pop("cached")
    script_capture.write_json(cache, {**data, "seal": state_seal.seal(canonical(data))})
    return found


def child_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (machine_facts.PROJECT_ROOT, env.get("PYTHONPATH")) if p)
    return env


def run_child(path: str, script_args: Optional[str], stem: str, timeout: float) -> Discovery:
    """Start the discovery child (its result file and log beside the cache entry) and wait for it: the script
    gets `timeout` seconds from its start; the whole process group is killed past it."""
    result, log = stem + ".partial.json", stem + ".log"
    if os.path.lexists(result):  # a link too (removed, not followed)
        os.remove(result)
    spec = json.dumps({"script": path, "script_args": script_args, "result": result})
    # not through a link at the log's path: LinkRefused, one line (its target, maybe the user's, is not written)
    with os.fdopen(open_no_follow(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), "wb") as out:
        child = subprocess.Popen([sys.executable, "-m", "benchmarks.suites.script_capture", spec], stdout=out,
                                 stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=child_env(),
                                 start_new_session=True)
    launched, script_started = time.monotonic(), None
    timed_out = False
    while child.poll() is None:
        now = time.monotonic()
        if script_started is None and os.path.exists(result):
            script_started = now
        limit = (script_started + timeout) if script_started is not None else launched + START_ALLOWANCE_SECONDS
        if now > limit:
            timed_out = True
            kill_and_wait(child)
            break
        time.sleep(POLL_SECONDS)
    state = read_state(result)
    if os.path.lexists(result):
        os.remove(result)
    found = Discovery(path, script_args, state.get("status", CRASHED), state.get("models", []),
                      state.get("message"), float(state.get("seconds") or 0.0), timeout, log)
    if timed_out:
        found.status, found.seconds = TIMEOUT, timeout
        found.message = f"still running after {timeout:g} s; killed"
    elif found.status == "running":  # the child ended without its last word: the script left by os._exit, or died
        code = child.returncode
        if code == 0:
            found.status = FINISHED
        else:
            found.status = CRASHED
            how = f"signal {-code}" if code < 0 else f"status {code}"
            found.message = f"the discovery child ended ({how}): {last_line(log)}; see {log}"
    return found


def last_line(log: str) -> str:
    try:
        with open(log, "rb") as handle:
            handle.seek(max(0, os.path.getsize(log) - 4096))
            lines = [line.strip() for line in handle.read().decode(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "no log"
    return lines[-1][:300] if lines else "no output"


def read_state(result: str) -> dict:
    try:
        state = safe_reads.load_json(result, follow_links=False)
        if isinstance(state, dict):
            return state
    except (OSError, ValueError):  # not written yet, or not what the child writes (a link, a FIFO, damaged)
        pass
    return {"status": "running", "models": []}


def kill_and_wait(child: subprocess.Popen) -> None:
    process_groups.kill_group(child.pid)
    child.wait()
