"""aggregate.py's words: the plot titles and the notes every report carries (how it was measured, how many
models each backend includes, and which were left out and why)."""

from __future__ import annotations

from benchmarks.aggregate.analysis import WARMUP, Analysis, Cell
from benchmarks.aggregate.inputs import backend_title, utc_text
from benchmarks.config import axes
from benchmarks.results import metric_catalog, number_text
from benchmarks.results.accuracy_status import AccuracyStatus

# Reasons a model is left out of a backend's numbers, in the order the notes list them.
LEFT_OUT = ("failed", "skipped", "no data", "no baseline", "missing")
MAX_NAMES = 6


def sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


# The words before "speedup" in titles and axes, per --metric (the whole generate time is `exec`'s: none).
METRIC_WORDS = {"compile": "compile-time ", "decode_tokens_per_second": "decode tokens/s ",
                "time_to_first_token": "time-to-first-token ", "decode_per_token_time": "decode per-token ",
                "decode_per_token_p90_time": "decode p90 per-token "}


def metric_word(analysis: Analysis) -> str:
    return METRIC_WORDS.get(analysis.options.metric, "")


def plot_title(analysis: Analysis, what: str, detail: str = "") -> str:
    """What, against which baseline; then accelerator and test; then the user's --title."""
    options = analysis.options
    title = sentence(what.format(m=metric_word(analysis))) + f" over {options.baseline} {backend_title(analysis.base)}"
    title += (f", {detail}" if detail else "") + f"\n{analysis.accelerator}, {options.test}"
    if options.title:
        title += f"\n{options.title}"
    return title


def method_notes(analysis: Analysis) -> list:
    options = analysis.options
    base = backend_title(analysis.base)
    if options.across:
        first = next((r.measurement for r in analysis.rows if r.backend == analysis.base), None)
        own = ", ".join(f"{axis} {first.axes.get(axis) or 'none' if first else '?'}" for axis in options.across)
        rule = (f"at the same axes but torch.compile's own and {', '.join(options.across)}, where it is {base}'s own "
                f"({own}; --across)")
    else:
        rule = "at the same precision, quantization and other axes but torch.compile's own (the dashboard's rule)"
    notes = [f"Speedup = {base} time / backend time (above 1 is faster), against the {options.baseline} {base} "
             f"result of each model and batch size {rule}; batch sizes of one model combine by geomean."]
    if options.metric == "compile":
        notes.append("Time: compile = the first run, compilation included (our first warm-up run; records without "
                     "warm-up: their first sample), as in compare.py and history.py.")
    elif options.metric in metric_catalog.speedup_metrics():
        declared = metric_catalog.get(options.metric)
        rate = declared.higher_is_better
        whose = ("generate run's (records of models run by generate; others are left out)" if declared.generation
                 else f"record's ({declared.meaning}; records without it are left out)")
        notes.append(f"Figure: {options.metric}, the {options.estimator} of each {whose}"
                     + ("; a rate, so speedup = backend rate / base rate (more is better)."
                        if rate else "; speedup = base / backend (less is better)."))
    else:
        skip = (f"first {options.skip_samples} samples skipped" if options.skip_samples is not None
                else f"warm-up excluded; records without warm-up skip their first {WARMUP.upstream} samples")
        spread = "1.4826 x MAD" if options.estimator == "median" else "sample std (ddof 1)"
        notes.append(f"Time: {options.estimator} per iteration of the timed samples ({skip}); spread: {spread}.")
    return notes


def _names(items: list) -> str:
    shown = items[:MAX_NAMES]
    text = ", ".join(shown)
    if len(items) > len(shown):
        text += f", +{len(items) - len(shown)} more"
    return text


def left_out_text(left_out: dict, labels: dict) -> str:
    """'1 failed (BERT_pytorch: timeout), 2 missing (a, b)'."""
    parts = []
    for reason in LEFT_OUT:
        items = sorted(((labels[w], detail) for w, (r, detail) in left_out.items() if r == reason),
                       key=lambda item: item[0].casefold())
        if items:
            names = [f"{name}: {detail}" if detail else name for name, detail in items]
            parts.append(f"{len(items)} {reason} ({_names(names)})")
    return ", ".join(parts)


def cell_note(analysis: Analysis, title: str, cell: Cell, where: str) -> str:
    count = len(cell.speedups)
    text = f"{title}: {count} model{'s' if count != 1 else ''} ({where})"
    if cell.paired:  # --speedup=paired: the config's own eager runs, alternating with the backend's
        text += (f"; paired: {len(cell.paired)} model{'s' if len(cell.paired) != 1 else ''}, speedup from "
                 "eager/backend ratios of alternating runs in one process, not from the baseline's result")
    if cell.figures:  # --metric naming a figure: the figure itself, in its unit, not only a ratio of two
        values = sorted(cell.figures.values())
        unit = metric_catalog.get(analysis.options.metric).unit
        text += (f"; {analysis.options.metric} itself: " + (
            f"{number_text.significant(values[0])} {unit}" if len(values) == 1 else
            f"{number_text.significant(values[0])} to {number_text.significant(values[-1])} {unit} over its models"))
    if cell.failed:  # counted, as upstream counts them, and said: a speedup from wrong outputs is no win
        passing = cell.passing_summary()
        text += (f"; {len(cell.failed)} failed their check ({number_text.FAILED_MARK}: "
                 f"{_names([analysis.labels[w] for w in sorted(cell.failed, key=str)])}), in its geomean; over the "
                 "passing ones only (the dashboard's rule): " + (f"{passing[0]:.4g}" if passing else "none"))
    left = left_out_text(cell.left_out, analysis.labels)
    return text + (f"; left out: {left}" if left else "")


def series_notes(analysis: Analysis, timestamps: list) -> list:
    """Per backend: the newest run's models and left-outs, then the range over earlier runs."""
    notes = method_notes(analysis)
    newest, earlier = timestamps[-1], timestamps[:-1]
    for backend in analysis.backends:
        text = cell_note(analysis, backend_title(backend), analysis.cell(newest, backend),
                         f"newest run, {utc_text(newest)}")
        if earlier:
            counts = [len(analysis.cell(ts, backend).speedups) for ts in earlier]
            merged: dict = {}
            for ts in earlier:
                for workload, why in analysis.cell(ts, backend).left_out.items():
                    merged.setdefault(workload, why)
            span = f"{min(counts)}" if min(counts) == max(counts) else f"{min(counts)} to {max(counts)}"
            text += (f"; {len(earlier)} earlier run{'s' if len(earlier) > 1 else ''}: {span} "
                     f"model{'' if max(counts) == 1 else 's'}")
            left = left_out_text(merged, analysis.labels)
            if left:
                text += f", left out in some: {left}"
        notes.append(text)
    return notes


def runs_text(runs: dict) -> str:
    if len(runs) == 1:
        return f"run {utc_text(next(iter(runs.values())))}"
    return "runs " + "; ".join(f"{utc_text(ts)} on {accel}" for accel, ts in sorted(runs.items()))


def dashboard_title(analysis: Analysis) -> str:
    """The dashboard's own title: each backend is measured against eager of its own run, not one baseline."""
    options = analysis.options
    title = f"Dashboard: pass rate, {metric_word(analysis)}speedup, compile latency, compression ratio over " \
            f"{backend_title(analysis.base)}\n{analysis.accelerator}, {options.test}"
    return title + (f"\n{options.title}" if options.title else "")


def dashboard_notes(analysis: Analysis, lines: list) -> list:
    """How the dashboard's numbers are defined (the HUD's), and what the newest run left without a figure."""
    notes = [f"Pass rate = configs whose accuracy is pass or pass_due_to_skip (and that measured a time) / every "
             f"config, failures "
             f"and skips included. Over the passing configs only: geomean speedup (eager time / backend time, "
             f"eager of the same model and axes, of the same run, else the {analysis.options.baseline}), mean "
             "compile latency (the backend's first run - eager's, seconds), mean compression ratio (eager's peak "
             "memory / the backend's: each record's peak_memory_bytes, of the kind its memory_kind names; on the "
             "CPU the config's own peak above an idle process, not the dynamo harness's whole-process resident "
             "set, which records keep as process_rss_bytes), mean peak memory.", method_notes(analysis)[1]]
    newest = [line for line in lines if line.timestamp == max(l.timestamp for l in lines)] if lines else []
    unchecked = sum(1 for line in newest if line.checked for e in line.entries
                    if e.accuracy == AccuracyStatus.NOT_CHECKED)
    if unchecked:  # beside configs a check judged: they count as not passed
        notes.append(f"{unchecked} config(s) of the newest run were not checked for accuracy: run with --verify "
                     "for a pass rate.")
    unjudged = [f"{backend_title(line.backend)} ({line.suite})" for line in newest if not line.checked]
    if unjudged:
        notes.append(f"Not checked for accuracy (run with --verify for a pass rate): {_names(unjudged)}; their "
                     "figures are over the configs that measured a time, not over passing ones.")
    paired = sorted((f"{backend_title(line.backend)} ({line.suite})", e.label) for line in newest
                    for e in line.entries if e.paired and e.passed)
    if paired:
        notes.append(f"Paired: {len(paired)} config(s) of the newest run take their speedup from their own eager runs, "
                     "alternating with the backend's in one process (--speedup=paired): the median of the per-pair "
                     "ratios eager/backend, every process's pairs pooled: "
                     + _names([f"{label} {where}" for where, label in paired]) + ". The others divide their eager "
                     "config's time by their own.")
    notes += rule_notes(newest) + mode_notes(newest)
    if any(line.cold_compile is not None for line in lines):
        notes.append("Warm start (--compile-cache=warm-start): cold and warm compile are the first run (compilation "
                     "included) of a config's two children, the cold one on an empty compile cache and the warm one, "
                     "a fresh process, on the cache the cold one left on disk; saving = cold - warm; means over the "
                     "configs that passed. The line's compile latency is the warm child's.")
    if any(line.aot_load is not None for line in lines):
        notes.append("AOT precompile (--aot-precompile): a line's pass rate counts the configs whose forward "
                     "precompiled, loaded and passed (a model aot_compile refuses is an error record: not passed); AOT "
                     "load = the seconds torch.compiler.load_compiled_function took, the mean over the configs that "
                     "passed; the line's compile latency is the loaded function's first run (the ahead-of-time "
                     "compile is each record's aot_precompile.compile_seconds).")
    for line in newest:
        if not line.baseline:
            lacking = [e.label for e in line.entries if e.passed and e.speedup is None]
            if lacking:
                notes.append(f"{backend_title(line.backend)} ({line.suite}): no eager baseline for "
                             f"{_names(sorted(lacking, key=str.casefold))}")
    return notes


# accuracy_reference -> how a dashboard note names the rule, for configs not judged by the harness's fp64 rule.
_RULE_WORDS = {"mean_rel_error": "by the mean-relative-error fallback (upstream's verification, not the harness's "
                                 "rule: the suite declares their output random)",
               "cosine": "by cosine similarity (no fp64 reference, or the harness lists them under cosine)"}


# An axis whose mode checks its configs (accuracy_status.MODE_CHECKS) -> what its check is, for the dashboard's notes.
_MODE_WORDS = {"deterministic": "--deterministic's check (two runs of each config's step, compared bit by bit)",
               "batch_invariant": "--batch-invariant's check (each sample's output at N/2, ..., 1 against its own at "
                                  "the config's batch N, bit by bit)"}


def mode_notes(newest: list) -> list:
    """For each line of the newest run with a checking mode's axis on: its pass rate counts that check, and who
    failed it."""
    notes = []
    for line in newest:
        for key, status, failing in line.mode_checks():
            where = f"{backend_title(line.backend)} [{axes.label_text(key, True)}] ({line.suite})"
            notes.append(f"{where}: the pass rate counts {_MODE_WORDS[key]}, beside --verify's where it ran: "
                         f"{len(failing)} of {line.total} config(s) {status}"
                         + (f": {_names(failing)}" if failing else ""))
    return notes


def rule_notes(newest: list) -> list:
    """Where the newest run's accuracy was not the harness's fp64 rule, how many configs and which (a fallback
    is never silent); also the configs the harness's lists pass unchecked (pass_due_to_skip)."""
    notes = []
    for line in newest:
        where = f"{backend_title(line.backend)} ({line.suite})"
        for reference, words in _RULE_WORDS.items():
            names = sorted((e.label for e in line.entries if e.reference == reference), key=str.casefold)
            if names:
                notes.append(f"{where}: accuracy of {len(names)} config(s) judged {words}: {_names(names)}")
        skipped = sorted((e.label for e in line.entries if e.accuracy == AccuracyStatus.PASS_DUE_TO_SKIP),
                         key=str.casefold)
        if skipped:
            notes.append(f"{where}: {len(skipped)} config(s) pass_due_to_skip (the harness does not check them, "
                         f"by its lists; counted as passed, as the HUD does): {_names(skipped)}")
    return notes
