"""The probe child: what torch can do on this machine, printed as one JSON object.

The parent runs this once per sweep so that it never imports torch_xla (or initialises CUDA) itself:
`python -m benchmarks.probe [--xla-kind CPU] [--xla-kind TPU]`.
"""

import argparse
import importlib.util
import json
import os
import subprocess
import sys
from typing import Optional

from benchmarks.plumbing import machine_facts, torch_support


def tpu_present() -> bool:
    """Cheap evidence of a TPU VM, so that CPU-only machines never try to open a TPU runtime."""
    return bool(os.environ.get("TPU_ACCELERATOR_TYPE")) or os.path.exists("/dev/accel0") or os.path.exists("/dev/vfio/0")


def xla_pairing_problem() -> Optional[str]:
    """Why torch_xla can't run beside this torch, found without importing it (an unpaired torch_xla may not even load):
    not installed, or a release of another torch's."""
    import torch

    return torch_support.xla_problem(torch.__version__, importlib.util.find_spec("torch_xla") is not None,
                                     machine_facts.package_version("torch_xla"))


def xla_device_check(kind: str) -> dict:
    """In this process (PJRT_DEVICE already set to `kind`): can torch_xla run there?"""
    problem = xla_pairing_problem()
    if problem:
        return {"torch_xla_error": problem}
    try:
        import torch_xla
        import torch_xla.runtime as xr
    except Exception as exc:  # ImportError, or a broken install raising anything
        return {"torch_xla_error": f"{type(exc).__name__}: {exc}".splitlines()[0]}
    try:
        found = xr.device_type() == kind and xr.global_runtime_device_count() > 0
        torch_xla.device()
    except Exception as exc:
        return {"torch_xla_error": None, "found": False, "error": str(exc).splitlines()[0] if str(exc) else type(exc).__name__}
    return {"torch_xla_error": None, "found": found}


def check_in_subprocess(kind: str) -> dict:
    env = dict(os.environ, PJRT_DEVICE=kind)
    env.pop("XLA_FLAGS", None)
    try:
        out = subprocess.run([sys.executable, "-m", "benchmarks.runner.probe", "--single-kind", kind], env=env,
                             capture_output=True, text=True, timeout=300)
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (subprocess.SubprocessError, ValueError, IndexError):
        return {"torch_xla_error": None, "found": False}


def inductor_settings_of(config) -> tuple:
    """({name: the type name of its default}, None) of Inductor's config module (what --inductor-config may set), from
    its private _config (the defaults), else its get_config_copy() (the values now); ({}, why) when neither reads."""
    def public(name: str) -> bool:
        return not name.startswith("_") and name != "TYPE_CHECKING"

    try:
        return {name: type(entry.default).__name__ for name, entry in config._config.items() if public(name)}, None
    except Exception as exc:  # a private API: a torch that moved it lists its settings another way, or not at all
        first = exc
    try:
        return {name: type(value).__name__ for name, value in config.get_config_copy().items() if public(name)}, None
    except Exception:
        text = str(first).strip().splitlines()[0] if str(first).strip() else ""
        why = f"{type(first).__name__}{': ' + text if text else ''}"
        return {}, f"torch._inductor.config._config could not be read ({why})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--xla-kind", action="append", default=[])
    parser.add_argument("--dynamo", action="store_true", help="list the registered dynamo backends")
    parser.add_argument("--cuda", action="store_true", help="list the CUDA devices")
    parser.add_argument("--inductor-settings", action="store_true", help="Inductor's config names and types")
    parser.add_argument("--single-kind", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.single_kind:
        print(json.dumps(xla_device_check(args.single_kind)))
        return
    import torch

    # Each question is asked only when a config needs it: importing torch._dynamo alone costs seconds.
    facts = {
        "torch": torch.__version__,
        "dynamo_backends": sorted(torch._dynamo.list_backends(exclude_tags=())) if args.dynamo else [],
        "cuda_devices": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        if args.cuda and torch.cuda.is_available() else [],
        "xla_devices": [],
        "torch_xla_error": "not probed",
        "inductor_settings": {},
    }
    if args.inductor_settings:
        import torch._inductor.config

        facts["inductor_settings"], facts["inductor_settings_error"] = inductor_settings_of(torch._inductor.config)
    for kind in args.xla_kind:
        if kind == "TPU" and not tpu_present():
            continue
        if kind not in ("CPU", "TPU"):
            continue  # XLA:CUDA is gone from torch-xla 2.9; the support rules say so
        if kind == "CPU":  # in this process: torch_xla is not imported yet
            os.environ["PJRT_DEVICE"] = "CPU"
            os.environ.pop("XLA_FLAGS", None)
            result = xla_device_check(kind)
        else:
            result = check_in_subprocess(kind)
        if result.get("torch_xla_error"):
            facts["torch_xla_error"] = result["torch_xla_error"]
            break
        facts["torch_xla_error"] = None
        if result.get("found"):
            facts["xla_devices"].append(kind)
    if facts["xla_devices"] and "TPU" in facts["xla_devices"]:
        facts["tpu_type"] = os.environ.get("TPU_ACCELERATOR_TYPE")
    print(json.dumps(facts))


if __name__ == "__main__":
    main()
