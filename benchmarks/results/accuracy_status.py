"""A config's verdict: its accuracy status, named as PyTorch's dynamo harness (and the HUD dashboard) names it, and
the golden check's failures beside those names.

Every record carries one in `accuracy`; records written before it existed get one derived from their status,
failure phase and verification code, so reports and compare treat old and new results alike. The child
writes the status it judged (docs/accuracy.md); `derive` is the rule for everything else, and
`settle` the one place the key is written, the golden check folded in (`with_golden`). Every tool asks the
questions here: `passed`, `failed` and `first_not_passing`.

The statuses are types (`AccuracyStatus`, and `GoldenStatus` for the golden check's own): str enums, so the record's
JSON keeps the same strings and a status read back from a file compares equal to its member. No other module spells
one as a string (tests/project/test_vocabulary.py reads the sources).
"""

from __future__ import annotations

from typing import Optional

from benchmarks.results import records
from benchmarks.results.records import RecordStatus, VerificationCode
from benchmarks.results.str_enum import StrEnum


class AccuracyStatus(StrEnum):
    """The record's `accuracy`: the harness's names, and ours for the golden check's failures."""

    PASS = "pass"
    # The harness does not check this model (its large-model or eager-not-deterministic lists): a passing status.
    PASS_DUE_TO_SKIP = "pass_due_to_skip"
    FAIL_ACCURACY = "fail_accuracy"
    EAGER_TWO_RUNS_DIFFER = "eager_two_runs_differ"
    EAGER_FAIL_TO_RUN = "eager_fail_to_run"
    # --verify's eager reference raised on its first / second run (OutOfMemoryError: the _OOM names), as the harness
    # names a failure of its first / second eager run inside the accuracy check.
    EAGER_1ST_RUN_FAIL = "eager_1st_run_fail"
    EAGER_1ST_RUN_OOM = "eager_1st_run_OOM"
    EAGER_2ND_RUN_FAIL = "eager_2nd_run_fail"
    EAGER_2ND_RUN_OOM = "eager_2nd_run_OOM"
    FAIL_TO_RUN = "fail_to_run"
    MODEL_FAIL_TO_LOAD = "model_fail_to_load"
    OOM = "OOM"
    TIMEOUT = "timeout"
    SKIPPED = "skipped"  # a decision, not a failure: counted in a pass rate's denominator only where asked
    NOT_CHECKED = "not_checked"  # ran, but without --verify: no judgement either way
    # --golden's failures (child/accuracy/golden.py writes them in the record's `golden`): the result is outside the
    # stored
    # one's tolerance; the entry is missing; the entry is unreadable or another config's. Ours, not the harness's.
    FAIL_GOLDEN = "fail_golden"
    NO_GOLDEN = "no_golden"
    BAD_GOLDEN = "bad_golden"
    # --deterministic's own check (features/deterministic/child.py): two runs of the config's step from the same seed and
    # weights gave outputs that are not bitwise equal. Ours: the harness checks no output in that mode.
    FAIL_NONDETERMINISTIC = "fail_nondeterministic"
    # --batch-invariant (features/batch_invariant/child.py): a sample's output at a smaller batch is not bitwise equal to the
    # same sample's at the config's batch (the harness's batch-invariance accuracy mode, in a status of its own).
    FAIL_BATCH_INVARIANCE = "fail_batch_invariance"


class GoldenStatus(StrEnum):
    """The golden check's own status (the record's `golden.status`, child/accuracy/golden.py): its failures are accuracy
    statuses too (`with_golden`); a save is `saved`, a check that never ran `not_checked`."""

    PASS = AccuracyStatus.PASS.value
    FAIL_GOLDEN = AccuracyStatus.FAIL_GOLDEN.value
    NO_GOLDEN = AccuracyStatus.NO_GOLDEN.value
    BAD_GOLDEN = AccuracyStatus.BAD_GOLDEN.value
    SAVED = "saved"
    NOT_CHECKED = AccuracyStatus.NOT_CHECKED.value


GOLDEN_FAILURES = (AccuracyStatus.FAIL_GOLDEN, AccuracyStatus.NO_GOLDEN, AccuracyStatus.BAD_GOLDEN)

# The record's keys: the status (every record), then --verify's figures behind it (docs/architecture.md, "The
# record"); the child writes them after the verification keys, the analyzer shows each as a column.
# `accuracy_reason` (last, so older columns keep their place): which rule judged the config, or why none did.
KEYS = ("accuracy", "accuracy_reference", "accuracy_tolerance", "accuracy_rmse", "accuracy_eager_rmse",
        "accuracy_message", "accuracy_reason")

# accuracy_reference's values: the rule that judged the config.
REFERENCE_FP64 = "fp64"  # the harness's rule against an fp64 eager reference
REFERENCE_COSINE = "cosine"  # the harness's cosine similarity (no fp64 reference, or listed under cosine)
REFERENCE_MEAN_REL_ERROR = "mean_rel_error"  # the fallback: upstream PyTorch/XLA's mean relative error
REFERENCES = (REFERENCE_FP64, REFERENCE_COSINE, REFERENCE_MEAN_REL_ERROR)

EAGER_RUN_FAILURES = (AccuracyStatus.EAGER_1ST_RUN_FAIL, AccuracyStatus.EAGER_1ST_RUN_OOM,
                      AccuracyStatus.EAGER_2ND_RUN_FAIL, AccuracyStatus.EAGER_2ND_RUN_OOM)
STATUSES = tuple(AccuracyStatus)
# The statuses that are a verdict against the config (the runner's exit status 1, history's events); neither a
# skip nor not_checked is one.
FAILURES = (AccuracyStatus.FAIL_ACCURACY, AccuracyStatus.EAGER_TWO_RUNS_DIFFER, AccuracyStatus.EAGER_FAIL_TO_RUN,
            *EAGER_RUN_FAILURES, AccuracyStatus.FAIL_TO_RUN, AccuracyStatus.MODEL_FAIL_TO_LOAD, AccuracyStatus.OOM,
            AccuracyStatus.TIMEOUT, *GOLDEN_FAILURES, AccuracyStatus.FAIL_NONDETERMINISTIC,
            AccuracyStatus.FAIL_BATCH_INVARIANCE)
# The experiment keys whose mode checks every config of theirs, with --verify or without (the dashboard's
# deterministic_perf and batch_invariant_accuracy rows) -> the status of a config that fails that check.
MODE_CHECKS = {"deterministic": AccuracyStatus.FAIL_NONDETERMINISTIC,
               "batch_invariant": AccuracyStatus.FAIL_BATCH_INVARIANCE}
# The statuses a pass rate counts as passed: the HUD's passing names that we write (it also counts its
# `eager_variation`, which the harness no longer writes).
PASSING = (AccuracyStatus.PASS, AccuracyStatus.PASS_DUE_TO_SKIP)


def passed(status) -> bool:
    """Whether an accuracy status counts as a pass (the dashboard's pass rate, compare's accuracy gate)."""
    return status in PASSING


def failed(status) -> bool:
    """Whether an accuracy status is a failure of the config (the runner's exit status and progress line, history's
    events): neither a pass nor `skipped` nor `not_checked`."""
    return status in FAILURES


def first_not_passing(statuses):
    """The first status of `statuses` that isn't a pass, else the first one; None for none (a config's verdict over
    its rounds: the dashboard's entries, compare's accuracy gate)."""
    statuses = list(statuses)
    return next((s for s in statuses if not passed(s)), statuses[0]) if statuses else None


def became_failing(before, after) -> bool:
    """Whether a config's verdict went from a pass to anything else between two runs (compare's accuracy gate,
    history's accuracy-failure event): one rule for both tools."""
    return passed(before) and after is not None and not passed(after)


def golden_status(record: dict):
    """The golden check's status in the record's `golden` (child/accuracy/golden.py), or None without a check."""
    golden = record.get("golden")
    return golden.get("status") if isinstance(golden, dict) else None


def checked(record: dict) -> bool:
    """Whether a check was asked of the record (--verify, --golden's check but not a save, or a mode that checks
    its configs: MODE_CHECKS): reports show its verdict then."""
    experiment = record.get("experiment") if isinstance(record.get("experiment"), dict) else {}
    return bool(record.get("verify")) or golden_status(record) not in (None, GoldenStatus.SAVED) or any(
        experiment.get(key) for key in MODE_CHECKS)


def with_golden(status: str, record: dict) -> str:
    """`status` with the record's golden check folded in (docs/accuracy.md): the golden's failure
    replaces a passing or not_checked status, a golden pass replaces not_checked; any other status stays, so the
    config's own failure, eager's failures and --verify's fail_accuracy come first (`golden.status` keeps the
    golden's own). A save (`saved`) and a check that never ran (`not_checked`) change nothing."""
    found = golden_status(record)
    if found in GOLDEN_FAILURES and (passed(status) or status == AccuracyStatus.NOT_CHECKED):
        return AccuracyStatus(found)
    if found == GoldenStatus.PASS and status == AccuracyStatus.NOT_CHECKED:
        return AccuracyStatus.PASS
    return status


# Phases before the model exists: a failure there is the model's, not the backend's.
_LOAD_PHASES = ("setup", "load")
# --verify's eager reference runs in its own phase, before the config's model is built.
_REFERENCE_PHASE = "reference"

_BY_VERIFICATION_CODE = {
    VerificationCode.PASS: AccuracyStatus.PASS,
    VerificationCode.FAIL: AccuracyStatus.FAIL_ACCURACY,
    VerificationCode.NONDETERMINISTIC_EAGER_RUN: AccuracyStatus.EAGER_TWO_RUNS_DIFFER,
    VerificationCode.EAGER_FAILED: AccuracyStatus.EAGER_FAIL_TO_RUN,
}


def derive(record: dict) -> str:
    """The accuracy status of any record: its own `accuracy` when it has a known one, else one derived from
    status, failure phase and upstream's verification code (docs/accuracy.md): oom and timeout
    by status; else the verification code (PASS, FAIL, NONDETERMINISTIC_EAGER_RUN, EAGER_FAILED); an ok record whose
    check raised fails to run, any other ok record was not checked; a failure while the eager reference
    ran is eager's, one before the model existed the model's (model_fail_to_load), any other fail_to_run."""
    own = record.get("accuracy")
    if own in STATUSES:
        return own
    return with_golden(_without_golden(record), record)


def _without_golden(record: dict) -> str:
    status = records.record_status(record)
    if status == RecordStatus.SKIP:
        return AccuracyStatus.SKIPPED
    if status == RecordStatus.OOM:
        return AccuracyStatus.OOM
    if status == RecordStatus.TIMEOUT:
        return AccuracyStatus.TIMEOUT
    code = record.get("verification_code")
    if code in _BY_VERIFICATION_CODE:
        return _BY_VERIFICATION_CODE[code]
    if status == RecordStatus.OK:
        return AccuracyStatus.FAIL_TO_RUN if code == VerificationCode.EXCEPTION_RAISED else AccuracyStatus.NOT_CHECKED
    error = record.get("error") if isinstance(record.get("error"), dict) else {}
    phase = error.get("phase")
    if phase == _REFERENCE_PHASE:
        return AccuracyStatus.EAGER_FAIL_TO_RUN
    return AccuracyStatus.MODEL_FAIL_TO_LOAD if phase in _LOAD_PHASES else AccuracyStatus.FAIL_TO_RUN


def settle(record: dict, judged: Optional[str] = None) -> str:
    """The one place a record's `accuracy` is written: `judged`, the status --verify decided for it
    (child/accuracy/verify.py
    `Verifier.finish`), else the rule `derive` (a status a child already wrote is kept); then the golden check
    folded in (`with_golden`). Whoever builds a record settles it, once: the child its own, last; the parent the
    records it builds (crash, timeout, oom, skip: runner/result_records.parent_record); a key already placed keeps
    its position."""
    record["accuracy"] = with_golden(judged if judged in STATUSES else derive(record), record)
    return record["accuracy"]
