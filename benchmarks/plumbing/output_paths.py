"""Deterministic names for everything a config writes under the output directory (no random hashes):
logs at <out>/logs/<model>/<config>.log, artifacts at <out>/<model>/<kind>-<config>[-<repeat>].<ext> (the XLA
dumps torch_xla writes because of the child's environment among them: hlo_dir, ir_file). Every path is checked to
stay under the output directory (safe_paths.inside: PathEscapes otherwise)."""

from __future__ import annotations

import json
import os
from typing import Optional

from benchmarks.plumbing.safe_paths import inside, safe_name, short_hash


def model_dirname(model_config: dict) -> str:
    name = safe_name(str(model_config.get("model_name", "model")))
    params = model_config.get("params")
    if params:
        name += "-" + short_hash(json.dumps(params, sort_keys=True))
    return name


def log_path(output_dir: str, model_config: dict, experiment, round_index: int = 0) -> str:
    """<out>/logs/<model>/<config>.log; a --rounds round past the first: <config>.round<N>.log."""
    suffix = f".round{round_index}" if round_index else ""
    return under(output_dir, "logs", model_dirname(model_config), experiment.slug() + suffix + ".log")


def artifact_path(output_dir: str, model_config: dict, experiment, kind: str, ext: str = "",
                  repeat: Optional[int] = None) -> str:
    name = f"{kind}-{experiment.slug()}"
    if repeat is not None:
        name += f"-{repeat}"
    if ext:
        name += "." + ext.lstrip(".")
    return under(output_dir, model_dirname(model_config), name)


def artifact_file(output_dir: str, model_config: dict, experiment, kind: str, ext: str = "",
                  repeat: Optional[int] = None) -> str:
    """artifact_path made absolute: what a tool (torch_xla, a profiler) is given to write to."""
    return os.path.abspath(artifact_path(output_dir, model_config, experiment, kind, ext, repeat))


def hlo_dir(output_dir: str, model_config: dict, experiment) -> str:
    """--dump-hlo's directory (torch_xla's --xla_dump_to)."""
    return artifact_file(output_dir, model_config, experiment, "hlo")


def ir_file(output_dir: str, model_config: dict, experiment, save_ir_format: str) -> str:
    """--save-ir-format's file (torch_xla's XLA_SAVE_TENSORS_FILE, to which it appends the device ordinal)."""
    return artifact_file(output_dir, model_config, experiment, "dump", save_ir_format)


def under(output_dir: str, *parts: str) -> str:
    """output_dir joined with parts, as given (records name it relative to output_dir), once it is known to
    resolve under output_dir."""
    relative_path = os.path.join(*parts)
    inside(output_dir, relative_path)
    return os.path.join(output_dir, relative_path)


def relative(path: str, output_dir: str) -> str:
    """How records name a file: relative to the output directory, so the directory can move."""
    return os.path.relpath(path, output_dir)
