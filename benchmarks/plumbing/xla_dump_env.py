"""The XLA dumps torch_xla writes because of its environment (--dump-hlo, --save-ir-format): the variables
that ask for them, where their files go, and which were written. The parent sets the variables when it
composes a child's environment and lists the files of a child that died without a record; the child
clears stale ones and lists them in its own record. No torch."""

from __future__ import annotations

import glob
import os
from typing import Optional

from benchmarks.plumbing import output_paths


def artifact_file(options, model_config: dict, experiment, kind: str, ext: str = "",
                  repeat: Optional[int] = None) -> str:
    """The absolute path of one of a config's artifacts (named from the config as requested)."""
    return os.path.abspath(output_paths.artifact_path(options.output_dirname, model_config, experiment, kind, ext,
                                                      repeat))


def hlo_dir(options, model_config, experiment) -> str:
    return artifact_file(options, model_config, experiment, "hlo")


def ir_file(options, model_config, experiment) -> str:
    return artifact_file(options, model_config, experiment, "dump", options.diagnostics.save_ir_format)


def ir_files(path: str) -> list:
    """torch_xla appends the device ordinal to XLA_SAVE_TENSORS_FILE (dump-x.hlo -> dump-x.hlo.0)."""
    return sorted(p for p in glob.glob(glob.escape(path) + "*")
                  if p == path or p[len(path):].lstrip(".").isdigit())


def set_dump_variables(env: dict, experiment, options, model_config: dict) -> None:
    """Environment variables that torch_xla reads at start-up (XLA configs only; idempotent, because
    child_environment rebuilds XLA_FLAGS from the experiment for XLA configs)."""
    if not experiment.xla:
        return
    if options.diagnostics.dump_hlo:
        flag = f"--xla_dump_to={hlo_dir(options, model_config, experiment)}"
        if flag not in env.get("XLA_FLAGS", "").split():
            env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + flag).strip()
    if options.diagnostics.save_ir_format:
        env["XLA_SAVE_TENSORS_FMT"] = options.diagnostics.save_ir_format
        env["XLA_SAVE_TENSORS_FILE"] = ir_file(options, model_config, experiment)


def env_artifacts(options, model_config: dict, experiment) -> dict:
    """The files torch_xla wrote because of the environment (kind -> relative path), found on disk; the
    parent uses it too, for a child that died without a record."""
    found = {}
    if not experiment.xla:
        return found
    out = os.path.abspath(options.output_dirname)
    if options.diagnostics.dump_hlo:
        directory = hlo_dir(options, model_config, experiment)
        if os.path.isdir(directory) and os.listdir(directory):
            found["hlo"] = output_paths.relative(directory, out)
    if options.diagnostics.save_ir_format:
        files = ir_files(ir_file(options, model_config, experiment))
        if files:  # one device: one file, <name>.0
            found["dump"] = output_paths.relative(files[0], out)
    return found
