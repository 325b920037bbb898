"""The environment of one config's child process, composed per config (a pure function) in one place: by the
parent once per config when it launches the child (runner/sweep.make_job; the child takes what it was given), or
by a config run by hand for itself (child/single_config.py); and the one a fork server starts under."""

from __future__ import annotations

import signal
from typing import Optional

from benchmarks import features
from benchmarks.plumbing import safe_paths

# The launcher's pid, set by the launcher itself: the child dies with it (single_config.die_with_parent).
PARENT_PID_VARIABLE = "BENCHMARKS_PARENT_PID"

# --compile-cache=warm-start: which of a config's two children this one is ("cold": it fills the cache directory its
# TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR name; "warm": a fresh process on what the cold one left), set by the
# launcher (runner/warm_start.py) with those two variables.
WARM_START_VARIABLE = "BENCHMARKS_WARM_START"

# Sent by the launcher to a child that timed out, just before it kills it: the child writes every thread's Python
# stack to its log (faulthandler), so its record can say where it hung.
STACKS_SIGNAL = signal.SIGUSR1

# Variables that belong to one XLA config and must not leak from the parent's environment.
XLA_RUNTIME_VARS = ("PJRT_DEVICE", "XRT_TPU_CONFIG", "XLA_FLAGS")


def child_environment(experiment, options, base_env: dict, model_config: Optional[dict] = None) -> dict:
    """`model_config` names the artifact paths of the diagnostics torch_xla reads from its environment
    (--dump-hlo, --save-ir-format); without it those are not set."""
    env = dict(base_env)
    env["PYTHONUNBUFFERED"] = "1"  # the log streams as the child runs
    if experiment.xla:
        for name in XLA_RUNTIME_VARS:
            env.pop(name, None)
        env["PJRT_DEVICE"] = experiment.accelerator.upper()
    if experiment.xla_flags:
        env["XLA_FLAGS"] = experiment.xla_flags
    if experiment.enable_functionalization:
        env.pop("XLA_DISABLE_FUNCTIONALIZATION", None)
    else:
        env["XLA_DISABLE_FUNCTIONALIZATION"] = "1"
    if model_config is not None and experiment.xla:
        _dump_variables(env, experiment, options, model_config)
    # What a feature sets before the interpreter starts (the C allocator's policy, the CPU profile's OpenMP and
    # threads), each declaration's `compose_environment`, in the features' order.
    for compose in features.declared("compose_environment"):
        compose(env, experiment, options)
    return env


def _dump_variables(env: dict, experiment, options, model_config: dict) -> None:
    """The variables that ask torch_xla, at its start, for the dumps of --dump-hlo and --save-ir-format, written to
    the config's artifact paths (idempotent: XLA_FLAGS is rebuilt from the experiment above)."""
    if options.diagnostics.dump_hlo:
        flag = f"--xla_dump_to={safe_paths.hlo_dir(options.output_dirname, model_config, experiment)}"
        if flag not in env.get("XLA_FLAGS", "").split():
            env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + flag).strip()
    if options.diagnostics.save_ir_format:
        env["XLA_SAVE_TENSORS_FMT"] = options.diagnostics.save_ir_format
        env["XLA_SAVE_TENSORS_FILE"] = safe_paths.ir_file(options.output_dirname, model_config, experiment,
                                                            options.diagnostics.save_ir_format)


def server_environment(experiment, options, base_env: dict) -> dict:
    """The environment a fork server for `experiment`'s kind starts under: a child's without what is the config's
    own (its XLA_FLAGS, the diagnostics' paths), so that configs that differ only there share a server
    (fork_server/client.server_spec)."""
    return child_environment(experiment.with_(xla_flags=None), options, base_env)


def allocator_environment(env: dict) -> dict:
    """The variables of `env` that take effect only when an interpreter starts (each declaration's
    `start_variables`: the C allocator's, LD_PRELOAD, OpenMP's): a config by hand compares them with those it was
    started with (features/allocator/child.py)."""
    names = [name for declared in features.declared("start_variables") for name in declared()]
    return {name: env[name] for name in names if name in env}
