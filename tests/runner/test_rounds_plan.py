"""--rounds planning, without a child: the order of the rounds, their fingerprints, what resume leaves."""

from benchmarks.config import experiment_config
from benchmarks.runner import resume
from benchmarks.runner.plan import Config


def configs() -> list:
    experiment = experiment_config.ExperimentConfig.from_dict({"accelerator": "cpu", "xla": None, "dynamo": None,
                                                                     "test": "eval"})
    return [Config({"suite_name": "dummy", "model_name": name}, experiment) for name in ("a", "b")]


def test_rounds_run_round_robin_over_the_plan():
    a, b = configs()
    todo = resume.plan_rounds([(a, None), (b, None)], 3, set())
    assert [(c.model["model_name"], c.round) for c, _ in todo] == [("a", 0), ("b", 0), ("a", 1), ("b", 1),
                                                                  ("a", 2), ("b", 2)]
    assert len({c.fingerprint for c, _ in todo}) == 6
    assert todo[0][0].fingerprint == a.fingerprint  # round 0: the fingerprint a sweep without --rounds gives


def test_resume_runs_only_the_missing_rounds_and_a_skip_once():
    a, b = configs()
    done = {a.fingerprint, b.fingerprint, resume.plan_rounds([(a, None)], 2, set())[1][0].fingerprint}
    todo = resume.plan_rounds([(a, None), (b, "unsupported")], 3, done)
    assert [(c.model["model_name"], c.round, reason) for c, reason in todo] == [("a", 2, None)]
    assert "round 2" in todo[0][0].label()
