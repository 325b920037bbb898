"""A dynamo config's compile keys in the child (benchmarks/features/compile_options/__init__.py): its Inductor
settings, its own compile cache (cold, warm; a warm start's half) and dynamo's statistics for
the record.
torch inside the functions: the cache directories must be set before Inductor first reads them."""

from __future__ import annotations

import os
import shutil
import time
from typing import Callable, Optional

from benchmarks.child import torch_internals
from benchmarks.config.compile_cache_dirs import CACHE_VARIABLES, INDUCTOR_CACHE_VARIABLE, WARM_START_HALVES, \
    cache_environment
from benchmarks.config.process_env import WARM_START_VARIABLE
from benchmarks.config.inductor_settings import settings_of
from benchmarks.features import compile_options
from benchmarks.plumbing import scratch_dirs
from benchmarks.results import dynamo_stats as stats_shape


class CompileCache:
    """cold and warm: an empty cache directory of this child's own (removed at close), so a compile does not
    depend on which configs ran before; warm-start: one half of a pair (runner/warm_start.py), whose launcher named
    the pair's directory in the cache variables and keeps it between the halves; shared (or no dynamo): the
    machine's, untouched."""

    def __init__(self, experiment):
        self.kind = experiment.compile_cache if experiment.dynamo else None
        self.root: Optional[str] = None
        self.machine_dir = os.environ.get(INDUCTOR_CACHE_VARIABLE)  # as the process was given it
        if self.kind in ("cold", "warm"):
            self.root = scratch_dirs.owned_dir("compile-cache")  # named after this child: collected if it is killed
            os.environ.update(cache_environment(self.root))

    def warm_up(self, make_step: Callable[[], Callable], step: Callable) -> tuple:
        """warm: run the step once untimed (a cold compile that fills the cache), forget dynamo's compiled code,
        and give back a fresh step whose first run compiles from the warm cache. (step, seconds the fill took)."""
        if self.kind != "warm":
            return step, None
        import torch

        start = time.perf_counter()
        step()
        fill_seconds = time.perf_counter() - start
        torch._dynamo.reset()
        with torch_internals.reading(torch_internals.DYNAMO_COUNTERS, "torch._dynamo.utils.counters"):
            from torch._dynamo.utils import counters

            counters.clear()  # the record's dynamo statistics are the timed compile's
        return make_step(), fill_seconds

    def close(self) -> None:
        if self.root:
            shutil.rmtree(self.root, ignore_errors=True)
            for name in CACHE_VARIABLES:
                os.environ.pop(name, None)


def before_compile(experiment) -> None:
    """Set the config's Inductor settings (the child runs one config, so setting them globally is its own): the
    feature method child/feature_methods.py's `before_compile`."""
    settings = settings_of(experiment.inductor_config)
    if not settings:
        return
    import torch._inductor.config as inductor_config

    for key, value in settings.items():
        setattr(inductor_config, key, value)


def turn_on(feature: str, setting: str) -> Optional[bool]:
    """A mode's own boolean Inductor setting (--deterministic's `deterministic`, --batch-invariant's
    `batch_invariant`) turned on: True; None where this torch has no such setting (torch 2.9 has neither), with
    `feature` marked absent and why: the config runs without it."""
    def set_it() -> bool:
        import torch._inductor.config as inductor_config

        getattr(inductor_config, setting)  # a torch without it: AttributeError
        setattr(inductor_config, setting, True)
        return True

    return torch_internals.read(feature, f"torch._inductor.config.{setting}", set_it)


def compile_mode(experiment) -> Optional[str]:
    """torch.compile's mode argument: None for the default mode (feature method `compile_mode`)."""
    return None if experiment.compile_mode in (None, "default") else experiment.compile_mode


def compile_cache(experiment) -> CompileCache:
    """The config's compile cache (feature method `compile_cache`), made before torch is imported."""
    return CompileCache(experiment)


def dynamo_stats() -> dict:
    """(Feature method `dynamo_stats`.) Dynamo's statistics since the child started compiling (cheap: its own counters and timers, no
    recompile): calls captured, graphs, graph breaks, unique graph breaks, fallbacks to eager (frames dynamo
    started to convert less those it converted: the harness's count, which any torch keeps), recompiles (compiles
    of a frame past its first), the graph-break reasons and the compile seconds by phase and by function
    (results/dynamo_stats.py). All of them are dynamo's internals, not its API: a torch that moved one costs its
    keys, named in the record's `absent` with why (child/torch_internals.py), never the config."""
    found = {}
    with torch_internals.reading(torch_internals.DYNAMO_COUNTERS, "torch._dynamo.utils.counters"):
        from torch._dynamo.utils import counters

        breaks = counters.get("graph_break", {})
        found.update({
            "calls_captured": int(counters.get("stats", {}).get("calls_captured", 0)),
            "graphs": int(counters.get("stats", {}).get("unique_graphs", 0)),
            "graph_breaks": int(sum(breaks.values())),
            "unique_graph_breaks": len(breaks),
            stats_shape.FALLBACKS_TO_EAGER: stats_shape.fallbacks_to_eager(counters.get("frames", {})),
        })
    with torch_internals.reading(torch_internals.RECOMPILES, "torch._dynamo.convert_frame.FRAME_COMPILE_COUNTER"):
        from torch._dynamo import convert_frame

        found["recompiles"] = int(sum(n - 1 for n in convert_frame.FRAME_COMPILE_COUNTER.values() if n > 1))
    with torch_internals.reading(torch_internals.GRAPH_BREAK_REASONS, "torch._dynamo.utils.graph_break_reasons"):
        reasons, omitted = stats_shape.summarize_reasons(_graph_breaks())
        found.update({stats_shape.REASONS: reasons, stats_shape.OMITTED: omitted})
    # dynamo's compile timers, emptied by torch._dynamo.reset(): by phase (calculate_time_spent: the harness's
    # "compilation_metrics") and by timed function, summed over calls (the harness's compilation-metrics CSV)
    with torch_internals.reading(torch_internals.COMPILE_SECONDS_BY_PHASE, "torch._dynamo.utils.calculate_time_spent"):
        from torch._dynamo import utils

        found[stats_shape.PHASES] = stats_shape.seconds_by_key(utils.calculate_time_spent())
    with torch_internals.reading(torch_internals.COMPILE_SECONDS_BY_FUNCTION,
                                 "torch._dynamo.utils.compilation_time_metrics"):
        from torch._dynamo import utils

        by_function = {name: sum(values) for name, values in utils.compilation_time_metrics.items()}
        found[stats_shape.FUNCTIONS] = stats_shape.seconds_by_key(by_function)
    return found


def _graph_breaks() -> list:
    """(message, "file:line" of the user frame that broke) per graph break dynamo compiled a partial graph for:
    torch._dynamo.utils.graph_break_reasons, what the harness's --print-graph-breaks writes (emptied by
    torch._dynamo.reset(), so a warm cache's fill is not in it). It also holds breaks that counters["graph_break"]
    does not count (torch 2.9: a data-dependent branch, "generic_jump")."""
    from torch._dynamo.utils import graph_break_reasons

    out = []
    for reason in graph_break_reasons:
        stack = getattr(reason, "user_stack", None) or []
        frame = stack[-1] if stack else None
        where = f"{frame.filename}:{frame.lineno}" if frame is not None else None
        out.append((getattr(reason, "reason", ""), where))
    return out



def by_hand_problem(experiment, environ=None) -> Optional[str]:
    """(Feature method `by_hand_problem`.) Why this process can't run a warm-start config by itself (one line), or None: a warm start is two processes,
    which a sweep starts (runner/warm_start.py); by hand, only as one of them, named as the launcher names it."""
    environ = os.environ if environ is None else environ
    if not experiment.dynamo or experiment.compile_cache != compile_options.WARM_START:
        return None
    half = environ.get(WARM_START_VARIABLE)
    if half in WARM_START_HALVES and all(environ.get(n) for n in CACHE_VARIABLES):
        return None
    return (f"compile_cache {compile_options.WARM_START} runs a config in two processes, one after the other, "
            "which a sweep starts: experiment_runner.py -k <model> --compile-cache=warm-start ...; by hand, one half "
            f"at a time: {WARM_START_VARIABLE}=cold or warm, with {' and '.join(CACHE_VARIABLES)} "
            "naming the pair's cache directories")
