"""The checks of a sweep's flags against what the probe finds: an unknown --dynamo backend, an unknown Inductor setting
(one line, exit 2, or under --allow-empty a warning and the name left out). The -k patterns are checked in
runner/model_selection.py, the flags against each other in config/run_options.check_combinations."""

from __future__ import annotations

import logging

from benchmarks import features
from benchmarks.config import backend_registry
from benchmarks.config.run_options import RunOptions
from benchmarks.plumbing.cli_support import UsageError, refuse_or_warn, unknown_name
from benchmarks.runner.capabilities import Capabilities

log = logging.getLogger("benchmarks.runner.flag_checks")


def check_dynamo_backends(experiments: list, caps: Capabilities, options: RunOptions) -> list:
    """The experiments whose --dynamo backend torch knows (or an export backend); an unknown name is a typo,
    refused with the close matches (or left out under --allow-empty). Without the probe's list (no dynamo
    config, or the probe failed) nothing is judged here: the support rules say why a config can't run."""
    known = set(caps.dynamo_backends)
    if not known:
        return experiments
    unknown = sorted({e.dynamo for e in experiments
                      if e.dynamo is not None and not backend_registry.available(e.dynamo, known)})
    for name in unknown:
        refuse_or_warn(unknown_name("--dynamo backend", name, backend_registry.known(known)), options.allow_empty, log)
    return [e for e in experiments if e.dynamo not in unknown]


def check_inductor_settings(experiments: list, caps: Capabilities) -> None:
    """An unknown Inductor setting or a badly typed value: one line, exit 2, before anything runs. A torch whose
    settings could not be listed (the probe's reason) leaves them to its children, which set them or fail saying so."""
    if caps.inductor_settings_error and any(e.inductor_config for e in experiments):
        log.warning("--inductor-config is not checked before the children run: %s", caps.inductor_settings_error)
    known = dict(caps.inductor_settings)
    checks = features.declared("inductor_settings_problem") if known else ()
    for experiment in experiments:
        for settings_problem in checks:
            problem = settings_problem(experiment, known)
            if problem:
                raise UsageError(problem)
