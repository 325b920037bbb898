"""A config's accuracy status, named as PyTorch's dynamo harness (and the HUD dashboard) names it.

Every record carries one in `accuracy`; records written before it existed get one derived from their status,
failure phase and verification code, so reports and compare treat old and new results alike. The child
writes the status it judged (docs/architecture.md, "Accuracy"); `derive` is the rule for everything else.
"""

from __future__ import annotations

from benchmarks.common import records

PASS = "pass"
FAIL_ACCURACY = "fail_accuracy"
EAGER_TWO_RUNS_DIFFER = "eager_two_runs_differ"
EAGER_FAIL_TO_RUN = "eager_fail_to_run"
FAIL_TO_RUN = "fail_to_run"
MODEL_FAIL_TO_LOAD = "model_fail_to_load"
OOM = "OOM"
TIMEOUT = "timeout"
SKIPPED = "skipped"  # a decision, not a failure: counted in a pass rate's denominator only where asked
NOT_CHECKED = "not_checked"  # ran, but without --verify: no judgement either way

# The record's keys: the status (every record), then --verify's figures behind it (docs/architecture.md, "The
# record"); the child writes them after the verification keys, the analyzer shows each as a column.
KEYS = ("accuracy", "accuracy_reference", "accuracy_tolerance", "accuracy_rmse", "accuracy_eager_rmse",
        "accuracy_message")

STATUSES = (PASS, FAIL_ACCURACY, EAGER_TWO_RUNS_DIFFER, EAGER_FAIL_TO_RUN, FAIL_TO_RUN, MODEL_FAIL_TO_LOAD, OOM,
            TIMEOUT, SKIPPED, NOT_CHECKED)
FAILURES = (FAIL_ACCURACY, EAGER_TWO_RUNS_DIFFER, EAGER_FAIL_TO_RUN, FAIL_TO_RUN, MODEL_FAIL_TO_LOAD, OOM, TIMEOUT)

# Phases before the model exists: a failure there is the model's, not the backend's.
_LOAD_PHASES = ("setup", "load")
# --verify's eager reference runs in its own phase, before the config's model is built.
_REFERENCE_PHASE = "reference"

_BY_VERIFICATION_CODE = {
    records.PASS: PASS,
    records.FAIL: FAIL_ACCURACY,
    records.NONDETERMINISTIC_EAGER_RUN: EAGER_TWO_RUNS_DIFFER,
    records.EAGER_FAILED: EAGER_FAIL_TO_RUN,
}


def derive(record: dict) -> str:
    """The accuracy status of any record: its own `accuracy` when it has a known one, else one derived from
    status, failure phase and upstream's verification code (docs/architecture.md, "Accuracy"): oom and timeout
    by status; else the verification code (PASS, FAIL, NONDETERMINISTIC_EAGER_RUN, EAGER_FAILED); an ok record
    whose check raised fails to run, any other ok record was not checked; a failure while the eager reference
    ran is eager's, one before the model existed the model's (model_fail_to_load), any other fail_to_run."""
    own = record.get("accuracy")
    if own in STATUSES:
        return own
    status = records.record_status(record)
    if status == records.STATUS_SKIP:
        return SKIPPED
    if status == records.STATUS_OOM:
        return OOM
    if status == records.STATUS_TIMEOUT:
        return TIMEOUT
    code = record.get("verification_code")
    if code in _BY_VERIFICATION_CODE:
        return _BY_VERIFICATION_CODE[code]
    if status == records.STATUS_OK:
        return FAIL_TO_RUN if code == records.EXCEPTION_RAISED else NOT_CHECKED
    error = record.get("error") if isinstance(record.get("error"), dict) else {}
    phase = error.get("phase")
    if phase == _REFERENCE_PHASE:
        return EAGER_FAIL_TO_RUN
    return MODEL_FAIL_TO_LOAD if phase in _LOAD_PHASES else FAIL_TO_RUN
