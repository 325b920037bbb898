"""The XLA dumps torch_xla wrote because of its environment (--dump-hlo, --save-ir-format): which of them are on
disk. The variables that ask for them are composed with the child's environment (config/process_env.py), their
paths are the config's artifacts' (plumbing/safe_paths.py). The child lists them in its own record, the parent
for a child that died without one. No torch."""

from __future__ import annotations

import glob
import os

from benchmarks.plumbing import safe_paths


def ir_files(path: str) -> list:
    """torch_xla appends the device ordinal to XLA_SAVE_TENSORS_FILE (dump-x.hlo -> dump-x.hlo.0)."""
    return sorted(p for p in glob.glob(glob.escape(path) + "*")
                  if p == path or p[len(path):].lstrip(".").isdigit())


def env_artifacts(options, model_config: dict, experiment) -> dict:
    """The files torch_xla wrote because of the environment (kind -> relative path), found on disk; the
    parent uses it too, for a child that died without a record."""
    found = {}
    if not experiment.xla:
        return found
    out = os.path.abspath(options.output_dirname)
    if options.diagnostics.dump_hlo:
        directory = safe_paths.hlo_dir(options.output_dirname, model_config, experiment)
        if os.path.isdir(directory) and os.listdir(directory):
            found["hlo"] = safe_paths.relative(directory, out)
    if options.diagnostics.save_ir_format:
        files = ir_files(safe_paths.ir_file(options.output_dirname, model_config, experiment,
                                              options.diagnostics.save_ir_format))
        if files:  # one device: one file, <name>.0
            found["dump"] = safe_paths.relative(files[0], out)
    return found
