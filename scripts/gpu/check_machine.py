"""The machine a GPU check runs on (check.py, slice.py): the check's clock, processes and parts (`Check`), the
wheels unpacked for what the machine's Python lacks, and the facts of its torch and GPUs."""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[2]

# What the runner, the tier and this check import beyond the standard library and torch: module -> its wheel's
# project name (`make gpu-wheels` downloads these for the lent machine's Python).
NEEDED = {"numpy": "numpy", "psutil": "psutil", "yaml": "PyYAML", "orjson": "orjson", "tqdm": "tqdm",
          "pynvml": "nvidia-ml-py", "pytest": "pytest"}
OPTIONAL = {"torchvision": "the torchvision suite (resnet18)", "timm": "the timm suite (mobilenetv2_100)"}
# Libraries of optional suites carried as wheels too (gpu-slice's Hugging Face rows), each with the companions it is
# pinned with in requirements.txt: where the library does not import, all of them are unpacked, ahead of the
# machine's own (whose huggingface_hub, pulled in by its timm, may be older than transformers accepts).
CARRIED_GROUPS = {"transformers": ("transformers", "huggingface_hub", "tokenizers", "safetensors")}


@dataclasses.dataclass
class Part:
    name: str
    status: str = "not run"  # ok, failed, skipped
    detail: str = ""
    seconds: float = 0.0


class Check:
    """The check's clock, environment, output directory and report."""

    def __init__(self, options):
        self.options = options
        self.out = Path(options.out).resolve()
        self.out.mkdir(parents=True, exist_ok=True)
        # where unpack_wheels unpacks: OUT/site, or a folder of the caller's (one the report's folder leaves out)
        self.site = Path(getattr(options, "site", None) or self.out / "site").resolve()
        self.deadline = time.monotonic() + options.minutes * 60
        self.parts: dict = {}
        self.rows: list = []  # the comparison table's rows
        self.facts: dict = {}
        self.env = dict(os.environ)
        self.harness = None  # parity_harness.Harness, when --harness-dir names one
        self.harness_eager: dict = {}  # model -> the harness's eager ms (timed beside its compiled runs)

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def part(self, name: str) -> Part:
        return self.parts.setdefault(name, Part(name))

    def skip(self, name: str, why: str) -> None:
        part = self.part(name)
        part.status, part.detail = "skipped", why
        say(f"{name}: skipped: {why}")

    def run(self, command: list, log: Path, timeout: float, cwd: Path = ROOT) -> tuple:
        """(how it ended: ok / exit N / timeout, its output) of one process of the check, its output and errors
        kept in `log` as they come. Out of time, its whole process group is interrupted (SIGINT: pytest then reports
        the tests it ran and writes its JUnit file, a sweep keeps its records), and killed only if it has not ended
        30 s later: nothing it started goes on running on the GPU beside the check's next process. The check itself
        interrupted (Ctrl-C, or a signal its caller turned into an exception) ends the process's group the same
        way, then goes on being interrupted."""
        say("+ " + " ".join(map(shlex.quote, map(str, command))))
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "w") as sink, subprocess.Popen(command, stdout=subprocess.PIPE, stderr=sink, text=True,
                                                      env=self.env, cwd=cwd, start_new_session=True) as process:
            try:
                output, _ = process.communicate(timeout=max(timeout, 1))
            except subprocess.TimeoutExpired:
                output = end_group(process)
                ended = "timeout"
            except BaseException:  # its own session got no SIGINT: it would run on while Popen waits for it
                end_group(process)
                raise
            else:
                ended = "ok" if process.returncode == 0 else f"exit {process.returncode}"
        with open(log, "a") as sink:
            sink.write(output or "")
        return ended, output or ""


def end_group(process: subprocess.Popen) -> str:
    """Interrupt `process`'s whole group (SIGINT), kill it if it has not ended 30 s later; its remaining output."""
    from benchmarks.plumbing.process_groups import kill_group

    kill_group(process.pid, signal.SIGINT)
    try:
        output, _ = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        kill_group(process.pid)
        output, _ = process.communicate()
    return output or ""


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- the environment


def missing_modules(python: str, env: dict, modules=NEEDED) -> list:
    probe = ("import importlib.util, json, sys; "
             f"print(json.dumps([m for m in {list(modules)!r} if importlib.util.find_spec(m) is None]))")
    done = subprocess.run([python, "-c", probe], capture_output=True, text=True, env=env)
    return json.loads(done.stdout) if done.returncode == 0 else list(modules)


def wheel_project(file_name: str) -> str:
    """The project a wheel's file name is of (its first field, as pip normalises it, lower case)."""
    return file_name.split("-")[0].lower()


def newest_wheel(wheels: Optional[Path], project: str) -> Optional[Path]:
    """The newest wheel of `project` (its name as pip writes it in a wheel's file name) in `wheels`, or None."""
    project = project.lower().replace("-", "_")
    if not wheels or not wheels.is_dir():
        return None
    found = sorted((w for w in wheels.glob("*.whl") if w.name.lower().startswith(project + "-")),
                   key=lambda p: p.name)
    return found[-1] if found else None


def unpack_wheels(check: Check) -> None:
    """Unpack the wheels of the modules this Python lacks into OUT/site (check.site; first on the check's PYTHONPATH
    after the repository). A wheel is a zip of what goes into site-packages: no pip needed, nothing of the machine's
    own packages touched."""
    site = check.site
    missing = missing_modules(sys.executable, check.env)
    wheels = Path(check.options.wheels) if check.options.wheels else None
    unpacked = []
    projects = [NEEDED[module] for module in missing]
    groups = missing_modules(sys.executable, check.env, CARRIED_GROUPS)
    projects += [project for module in groups for project in CARRIED_GROUPS[module]]
    for project in projects:
        found = newest_wheel(wheels, project)
        if found is None or found.name in unpacked:
            continue
        with zipfile.ZipFile(found) as wheel:
            wheel.extractall(site)
        unpacked.append(found.name)
    # each wheel's own dependencies (pytest's pluggy, iniconfig, packaging; transformers' regex): every wheel in the
    # folder whose top-level packages do not all import yet (one probe for all of them)
    if wheels and wheels.is_dir() and unpacked:
        taken = {wheel_project(name) for name in unpacked}
        rest = [w for w in sorted(wheels.glob("*.whl")) if wheel_project(w.name) not in taken]
        tops = {}
        for wheel_path in rest:
            with zipfile.ZipFile(wheel_path) as wheel:
                names = {name.split("/")[0] for name in wheel.namelist()}
            tops[wheel_path.name] = sorted({t[:-3] if t.endswith(".py") else t for t in names
                                            if not t.endswith((".dist-info", ".data"))})
        probe = ("import importlib.util, json, sys; tops = json.loads(sys.argv[1]); print(json.dumps("
                 "[w for w, t in tops.items() if not all(importlib.util.find_spec(m) for m in t)]))")
        done = subprocess.run([sys.executable, "-c", probe, json.dumps(tops)], capture_output=True, text=True,
                              env=check.env)
        lacking = json.loads(done.stdout) if done.returncode == 0 else list(tops)
        for wheel_path in reversed(rest):  # the newest of a project first, and only it
            if wheel_path.name in lacking and wheel_project(wheel_path.name) not in taken:
                taken.add(wheel_project(wheel_path.name))
                with zipfile.ZipFile(wheel_path) as wheel:
                    wheel.extractall(site)
                unpacked.append(wheel_path.name)
    paths = [str(ROOT)] + ([str(site)] if unpacked else []) + [check.env.get("PYTHONPATH", "")]
    check.env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    still = missing_modules(sys.executable, check.env)
    absent = missing_modules(sys.executable, check.env, CARRIED_GROUPS)
    part = check.part("packages")
    part.status = "ok" if not still else "failed"
    part.detail = (f"unpacked {', '.join(unpacked)}" if unpacked else "all present") + (
        f"; still missing: {', '.join(still)} (give --wheels DIR: make gpu-wheels)" if still else "") + (
        f"; optional, not carried: {', '.join(absent)}" if absent else "")
    say(f"packages: {part.detail}")


FACTS = r"""
import json, os, platform, sys
facts = {"python": platform.python_version()}
try:
    import torch
except Exception as exc:
    facts["torch_error"] = str(exc)
else:
    facts["torch"] = torch.__version__
    facts["cuda_built"] = torch.backends.cuda.is_built()
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    facts["devices"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
for name in ("torchvision", "timm", "transformers", "torch_xla", "triton"):
    try:
        facts[name] = __import__(name).__version__
    except Exception as exc:
        facts[name] = None
print(json.dumps(facts))
"""


def gather_facts(check: Check) -> None:
    done = subprocess.run([sys.executable, "-c", FACTS], capture_output=True, text=True, env=check.env)
    check.facts = json.loads(done.stdout) if done.returncode == 0 else {"error": done.stderr.strip()[-500:]}
    say(f"facts: {json.dumps(check.facts)}")


def no_gpu_reason(facts: dict) -> Optional[str]:
    if "torch" not in facts:
        return f"torch does not import ({facts.get('torch_error') or facts.get('error')})"
    if not facts.get("cuda_built"):
        return f"this torch ({facts['torch']}) is built without CUDA"
    if not facts.get("devices"):
        return "no CUDA device is visible"
    return None
