"""features/compile_options/child.py: which process may run a warm-start config (one of the pair's two children, named by
its launcher, or none by hand); the other caches need nothing of the environment."""

from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.features.compile_options import child as compile_options_child

WARM_START = ExperimentConfig("cpu", None, "inductor", "eval", compile_cache="warm-start")
CACHES = {"TORCHINDUCTOR_CACHE_DIR": "/tmp/x/inductor", "TRITON_CACHE_DIR": "/tmp/x/triton"}


def test_a_warm_start_runs_only_as_a_half_its_launcher_named_with_the_pairs_cache():
    for half in ("cold", "warm"):
        assert compile_options_child.by_hand_problem(WARM_START, {"BENCHMARKS_WARM_START": half, **CACHES}) is None
    for environ in ({}, CACHES, {"BENCHMARKS_WARM_START": "cold"}, {"BENCHMARKS_WARM_START": "hot", **CACHES},
                    {"BENCHMARKS_WARM_START": "warm", "TORCHINDUCTOR_CACHE_DIR": "/tmp/x/inductor"}):
        problem = compile_options_child.by_hand_problem(WARM_START, environ)
        assert problem.startswith("compile_cache warm-start runs a config in two processes") and "\n" not in problem


def test_other_caches_and_eager_configs_ask_nothing_of_the_environment():
    for experiment in (WARM_START.with_(compile_cache="cold"), WARM_START.with_(compile_cache="shared"),
                       WARM_START.with_(dynamo=None, compile_cache=None)):
        assert compile_options_child.by_hand_problem(experiment, {}) is None
