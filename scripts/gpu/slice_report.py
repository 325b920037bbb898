"""The dashboard slice's report (scripts/gpu/slice.py): per row the dynamo harness's figures beside ours, the
CUDA-graph probe's measurements against the row they probe, each side's wall time, and every step's state, from the
files the steps wrote (the harness's CSV files, our results files, the plain loop's lines). Written again after every
step, so a run cut off at any point leaves the report of what it measured. Pure Python and numpy over files: no torch,
no process (docs/parity.md, "A slice of the dashboard on a GPU").
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from pathlib import Path
from typing import Optional

from scripts.gpu import slice_plan
from scripts.parity import table as parity_table
from scripts.parity.table import Difference, Side, Spec

# A step's state in the report.
PLANNED, LEFT_OUT, NOT_STARTED, RUNNING, DONE, FAILED, CUT_OFF = (
    "planned", "left out", "not started", "running", "done", "failed", "cut off")
# Beyond this relative gap the compiled latencies of the two sides are named a difference (the speedup's 10%).
LATENCY_GAP = parity_table.SPEEDUP_GAP
REASONS = dict(parity_table.REASONS, latency=(
    "ms per compiled iteration: the harness's abs_latency is the median of its 30 compiled runs, each timed between "
    "two synchronisations right after an eager run; ours is the median of our 30 timed runs (paired: each right "
    "after an eager run too); the CUDA-graph probe measures what moves ours"))
COMPILE_CACHE = ("cold on both sides: the harness runs --cold-start-latency (a fresh Inductor cache per process), "
                 "ours --compile-cache=cold (our default: a fresh cache per child); the probe's runs of ours share one "
                 "cache (--compile-cache=shared: the first fills it) and report no compile time")


@dataclasses.dataclass
class Outcome:
    """What became of one step."""

    state: str = PLANNED
    detail: str = ""
    seconds: Optional[float] = None
    log: Optional[str] = None


# ---------------------------------------------------------------- where the steps write


def harness_spec(model: slice_plan.SliceModel, test: str) -> Optional[Spec]:
    if model.harness_suite is None:
        return None
    return Spec(model.harness_suite, model.harness_name, test, slice_plan.PRECISIONS[test], model.batch_for(test))


def our_spec(model: slice_plan.SliceModel, test: str) -> Spec:
    return Spec(model.suite, model.name, test, slice_plan.PRECISIONS[test], model.batch_for(test))


def ours_results(out: Path) -> Path:
    """Our rows' results file: one for every row's sweep (each resumes from it)."""
    return out / "ours" / "results.jsonl"


def llm_results(out: Path) -> Path:
    """The LLM rows' results file: one for every LLM row's sweep, apart from the forward rows'."""
    return out / "llm" / "results.jsonl"


def probe_path(out: Path, step: slice_plan.Step) -> Path:
    """A probe step's output: ours' sweep directory, or the plain loop's JSON line (.json)."""
    slug = step.key.split(":", 3)[-1]
    base = out / "probe" / slug
    return base if step.variant.side == "ours" else base.with_suffix(".json")


# ---------------------------------------------------------------- the LLM rows


def llm_side(m) -> dict:
    """One config of an LLM row: its status and generate figures (medians over its timed calls, docs/generation.md)."""
    side = {"backend": m.backend, "status": m.status, "accuracy": m.accuracy,
            "error": (m.record.get("error") or {}).get("message") if not m.ok else None}
    for name in ("time_to_first_token", "decode_tokens_per_second", "decode_per_token_time", "generate_time",
                 "compile_time"):
        side[name] = m.median(name) if m.ok else None
    side["tokens_match"] = m.record.get("generation_verify")
    side["precision"] = m.experiment.get("precision")
    side["lengths"] = (m.experiment.get("prompt_tokens"), m.experiment.get("new_tokens"))
    return side


def _ratio(numerator: Optional[float], denominator: Optional[float]) -> Optional[float]:
    return numerator / denominator if numerator and denominator else None


def llm_entry(out: Path, model: slice_plan.SliceModel, state: str) -> dict:
    """An LLM row: eager and the compiled decode step side by side (the newest record of each), and the speedups on
    the whole generate time (the harness's) and on decode tokens per second."""
    found = [m for m in parity_table.load_ours(llm_results(out)) if m.model_name == model.name]
    eager = next((m for m in reversed(found) if m.base_backend == "eager"), None)
    compiled = next((m for m in reversed(found) if m.base_backend != "eager"), None)
    sides = {"eager": llm_side(eager) if eager else None, "compiled": llm_side(compiled) if compiled else None}
    e, c = sides["eager"] or {}, sides["compiled"] or {}
    return {"model": model.name, "state": state, **sides,
            "speedup_generate": _ratio(e.get("generate_time"), c.get("generate_time")),
            "speedup_decode": _ratio(c.get("decode_tokens_per_second"), e.get("decode_tokens_per_second"))}


def _figure(value: Optional[float], scale: float = 1.0, digits: int = 1) -> str:
    return "-" if value is None else f"{value * scale:.{digits}f}"


def llm_cells(row: dict) -> list:
    e, c = row["eager"] or {}, row["compiled"] or {}
    lengths = (e or c).get("lengths") or (None, None)
    match = c.get("tokens_match") or {}
    accuracy = c.get("accuracy") or c.get("status") or row["state"]
    if match:
        accuracy += f" ({match['leading_tokens_match']}/{match['new_tokens']} tokens as eager's)"
    if c.get("error") or e.get("error"):
        accuracy += f": {(c.get('error') or e.get('error'))[:120]}"
    tokens = "-" if lengths[1] is None else f"{'audio' if lengths[0] is None else lengths[0]}+{lengths[1]}"  # whisper
    return [row["model"], tokens, (e or c).get("precision") or "-",
            f"{_figure(e.get('time_to_first_token'), 1e3)} / {_figure(c.get('time_to_first_token'), 1e3)}",
            f"{_figure(e.get('decode_tokens_per_second'))} / {_figure(c.get('decode_tokens_per_second'))}",
            f"{_figure(e.get('generate_time'), digits=3)} / {_figure(c.get('generate_time'), digits=3)}",
            _figure(row["speedup_generate"], digits=2), _figure(row["speedup_decode"], digits=2),
            _figure(c.get("compile_time")), accuracy]


# ---------------------------------------------------------------- the rows


def _ms(value: Optional[float], digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def harness_figures(out: Path, spec: Optional[Spec], device: str) -> Side:
    """The harness's side of a row; its batch size the performance run's (the accuracy run takes the harness's own,
    smaller one, as the dashboard's accuracy jobs do: Side.problems do not name that)."""
    if spec is None:
        return Side(problems=["the harness has no such model"])
    side = parity_table.harness_side(out, spec, device)
    performance = parity_table.read_csv_row(parity_table.harness_csv(out, spec, "performance"), spec.model)
    batch = parity_table.int_field(performance, "batch_size")
    side.batch_size = batch or side.batch_size
    return side


def harness_accuracy_batch(out: Path, spec: Optional[Spec]) -> Optional[int]:
    if spec is None:
        return None
    return parity_table.int_field(parity_table.read_csv_row(parity_table.harness_csv(out, spec, "accuracy"), spec.model),
                             "batch_size")


def latency_difference(harness: Side, ours: Side) -> Optional[Difference]:
    gap = parity_table.relative_gap(harness.latency, ours.latency)
    if gap is None or gap <= LATENCY_GAP:
        return None
    return Difference("latency", f"latency {harness.latency:.3f} vs {ours.latency:.3f} ms "
                                 f"(ours / harness {ours.latency / harness.latency:.2f})", "latency")


def row_entry(out: Path, model: slice_plan.SliceModel, test: str, views: list, device: str, steps: dict) -> dict:
    """One row of the side-by-side table: both sides' figures, the differences, and the row's steps' states."""
    h_spec, o_spec = harness_spec(model, test), our_spec(model, test)
    harness = harness_figures(out, h_spec, device)
    ours = parity_table.our_side(views, o_spec)
    differences = parity_table.differences(o_spec, harness, ours, device)
    found = latency_difference(harness, ours)
    differences += [found] if found else []
    keep = ("accuracy", "batch_size", "speedup", "paired_speedup", "latency", "compile_latency", "graph_breaks",
            "compression", "problems")
    return {"suite": model.suite, "model": model.name, "harness_model": model.harness_name, "test": test,
            "precision": o_spec.precision, "batch_size": o_spec.batch_size, "batch_source": model.batch_source,
            "harness_accuracy_batch": harness_accuracy_batch(out, h_spec),
            "harness": {k: getattr(harness, k) for k in keep}, "ours": {k: getattr(ours, k) for k in keep},
            "differences": [{"what": d.what, "text": d.text, "reason": d.reason} for d in differences],
            "steps": steps}


def _pair(a, b, fmt) -> str:
    return f"{'-' if a is None else fmt(a)} / {'-' if b is None else fmt(b)}"


def row_cells(row: dict) -> list:
    h, o = row["harness"], row["ours"]
    speedup = _pair(h["speedup"], o["paired_speedup"], lambda v: f"{v:.2f}x")
    differences = "; ".join(f"{d['text']} [{d['reason']}]" if d["reason"] else d["text"]
                            for d in row["differences"]) or "none"
    return [row["model"], row["test"], _pair(h["batch_size"], o["batch_size"], str),
            _pair(h["accuracy"], o["accuracy"], str), speedup, _pair(h["latency"], o["latency"], _ms),
            _pair(h["compile_latency"], o["compile_latency"], lambda v: f"{v:.1f}"),
            _pair(h["compression"], o["compression"], lambda v: f"{v:.2f}"), differences]


# ---------------------------------------------------------------- the probe


def _latest_compiled(results: Path):
    found = [m for m in parity_table.load_ours(results) if m.base_backend != "eager"]
    return found[-1] if found else None


def record_facts(m) -> dict:
    """What a compiled record of ours says about its CUDA graphs and the card: whether graphs ran, how many graphs
    ran without them, cuDNN's settings as it ran, the SM clock during its timed runs."""
    if m is None:
        return {}
    record = m.record
    profile = (record.get("environment") or {}).get("cuda_profile") or {}
    clocks = (record.get("metrics") or {}).get("gpu_sm_clock_mhz") or []
    telemetry = record.get("gpu_telemetry") or {}
    facts = {"cudagraphs": record.get("cudagraphs"), "cudagraph_skips": record.get("cudagraph_skips"),
             "cudnn": profile.get("cudnn"),
             "sm_clock_mhz": statistics.median(clocks) if clocks else None,
             "max_sm_clock_mhz": telemetry.get("max_sm_clock_mhz")}
    return {k: v for k, v in facts.items() if v is not None}


def probe_entry(out: Path, step: slice_plan.Step, row: Optional[dict]) -> dict:
    variant = step.variant
    path = probe_path(out, step)
    ms, facts = None, {}
    if variant.side == "ours":
        m = _latest_compiled(path / "results.jsonl")
        times = m.per_iter_time() if m is not None and m.ok else None
        ms = float(statistics.median(times)) * 1e3 if times is not None else None
        facts = record_facts(m)
    else:
        try:
            found = json.loads(path.read_text())
            ms = float(found["median_ms"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
    ours_row = (row or {}).get("ours", {}).get("latency")
    harness_row = (row or {}).get("harness", {}).get("latency")
    return {"variant": variant.name, "side": variant.side, "flags": list(variant.flags),
            "candidate": variant.candidate, "ms": ms,
            "per_ours_row": ms / ours_row if ms and ours_row else None,
            "per_harness": ms / harness_row if ms and harness_row else None, "facts": facts}


def row_facts(out: Path, model: slice_plan.SliceModel, views: list) -> dict:
    """The probed row's own facts: ours' compiled record, and the harness's CSV's cudagraph_skips."""
    spec = harness_spec(model, "eval")
    mine = [m for m in views if m.suite == model.suite and m.model_name == model.name and m.test == "eval"
            and m.base_backend != "eager"]
    facts = {"ours": record_facts(mine[-1] if mine else None)}
    if spec is not None:
        performance = parity_table.read_csv_row(parity_table.harness_csv(out, spec, "performance"), spec.model)
        skips = parity_table.int_field(performance, "cudagraph_skips")
        if skips is not None:
            facts["harness"] = {"cudagraph_skips": skips}
    return facts


# ---------------------------------------------------------------- the whole report


def wall_times(entries: list, steps: list, outcomes: dict) -> dict:
    """Each side's seconds for the rows both sides measured (the same numbers): the harness's performance and
    accuracy processes, our sweeps."""
    both = {(r["suite"], r["model"], r["test"]) for r in entries
            if outcomes_of(steps, outcomes, (r["suite"], r["model"], r["test"]), "ours") is not None}
    sides = {"harness": {"seconds": 0.0, "processes": 0}, "ours": {"seconds": 0.0, "processes": 0}}
    for row in both:
        seconds = {what: outcomes_of(steps, outcomes, row, what) for what in slice_plan.ROW_STEPS}
        if any(s is None for s in seconds.values()):
            continue  # a side not finished: not the same numbers
        for what, s in seconds.items():
            side = sides["ours" if what == "ours" else "harness"]
            side["seconds"] += s
            side["processes"] += 1
    sides["rows"] = sum(1 for row in both
                        if all(outcomes_of(steps, outcomes, row, w) is not None for w in slice_plan.ROW_STEPS))
    return sides


def outcomes_of(steps: list, outcomes: dict, row: tuple, what: str) -> Optional[float]:
    """The seconds of a row's finished step `what` (done or failed: it ran to its end), or None."""
    for step in steps:
        if step.row == row and step.what == what and step.tier != "probe":
            outcome = outcomes.get(step.key)
            if outcome and outcome.state in (DONE, FAILED) and outcome.seconds is not None:
                return outcome.seconds
    return None


def build(out: Path, steps: list, outcomes: dict, facts: dict, device: str, budget_s: float, elapsed_s: float,
          cut_off: Optional[str] = None) -> dict:
    """The report as data (the JSON file), from the steps' outcomes and what they wrote under `out`."""
    views = parity_table.load_ours(ours_results(out))
    rows, seen = [], set()
    for step in steps:
        if step.what in ("probe", "llm") or step.row in seen:
            continue
        seen.add(step.row)
        states = {s.what: outcomes[s.key].state for s in steps if s.row == step.row and s.what != "probe"}
        rows.append(row_entry(out, step.model, step.test, views, device, states))
    probe = []
    probed = next((s for s in steps if s.what == "probe"), None)
    if probed is not None:
        row = next((r for r in rows if (r["suite"], r["model"], r["test"]) == probed.row), None)
        probe = [dict(probe_entry(out, s, row), state=outcomes[s.key].state) for s in steps if s.what == "probe"]
    running = [s.key for s in steps if outcomes[s.key].state == RUNNING]
    return {
        "facts": facts, "device": device, "budget_s": budget_s, "elapsed_s": elapsed_s,
        "estimate_s": sum(s.estimate_s for s in steps if outcomes[s.key].state != LEFT_OUT),
        "cut_off": cut_off, "running": running, "compile_cache": COMPILE_CACHE,
        "rows": rows,
        "llm": [llm_entry(out, s.model, outcomes[s.key].state) for s in steps if s.what == "llm"],
        "probe_row": None if probed is None else {"suite": probed.model.suite, "model": probed.model.name,
                                                 "batch_size": probed.batch_size, "facts": row_facts(out, probed.model,
                                                                                                      views)},
        "probe": probe, "wall": wall_times(rows, steps, outcomes),
        "steps": [dict(key=s.key, tier=s.tier, what=s.what, estimate_s=round(s.estimate_s, 1),
                       **dataclasses.asdict(outcomes[s.key])) for s in steps],
    }


def _table(header: list, rows: list) -> list:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + [
        "| " + " | ".join(str(c) for c in row) + " |" for row in rows]


def where_it_stands(report: dict) -> str:
    if report["cut_off"]:
        return f"cut off ({report['cut_off']}): what follows is what it measured"
    if report["running"]:
        return (f"in progress: {', '.join(report['running'])} running (a run that ended here was cut off during it; "
                "what follows is what it measured)")
    return "complete"


def render(report: dict) -> str:
    facts = report["facts"]
    states = [s["state"] for s in report["steps"]]
    lines = [f"# gpu-slice: {', '.join(facts.get('devices') or [report['device']])}", "",
             f"torch {facts.get('torch', '?')}, Python {facts.get('python', '?')}, torchvision "
             f"{facts.get('torchvision')}, timm {facts.get('timm')}, transformers {facts.get('transformers')}. "
             f"Budget {report['budget_s'] / 60:.1f} min, steps planned in it about {report['estimate_s']:.0f} s; ran "
             f"{report['elapsed_s']:.0f} s; {states.count(DONE)} steps done, {states.count(FAILED)} failed, "
             f"{states.count(LEFT_OUT) + states.count(NOT_STARTED)} not run. {where_it_stands(report)}.", "",
             f"Compile cache: {report['compile_cache']}.", ""]
    if report["rows"]:
        setup = ("Inductor with CUDA graphs against eager (ours --cuda-profile=dashboard --speedup=paired --verify; "
                 "the harness's defaults, --cold-start-latency)" if report["device"] == "cuda" else
                 f"Inductor against eager on the {report['device']} (no CUDA profile, no CUDA graphs: the slice's "
                 "own test; ours --speedup=paired --verify, the harness --cold-start-latency)")
        lines += ["## The dashboard's rows: the harness / ours", "",
                  f"Inference in bf16, training in amp; {setup}. "
                  "Status: the harness's accuracy run (at its own accuracy batch size) / ours (--verify, at the "
                  "row's). Speedup: the harness's CSV / ours paired. Latency: ms per compiled iteration.", ""]
        lines += _table(["model", "test", "batch", "status", "speedup", "latency ms", "compile s", "compression",
                         "differences"], [row_cells(r) for r in report["rows"]])
        wall = report["wall"]
        if wall["rows"]:
            lines += ["", f"Wall time for the {wall['rows']} row(s) both sides measured: the harness "
                          f"{wall['harness']['seconds']:.0f} s in {wall['harness']['processes']} processes "
                          f"(performance and accuracy), ours {wall['ours']['seconds']:.0f} s in "
                          f"{wall['ours']['processes']} sweeps (eager and Inductor paired, --verify)."]
        cited = sorted({d["reason"] for r in report["rows"] for d in r["differences"] if d["reason"]})
        if cited:
            lines += ["", "Reasons:", ""] + [f"- [{key}] {REASONS[key]}" for key in cited]
    if report["probe"]:
        probed = report["probe_row"]
        row = next((r for r in report["rows"] if (r["suite"], r["model"], r["test"]) ==
                    (probed["suite"], probed["model"], "eval")), None)
        ours_ms, harness_ms = (row["ours"]["latency"], row["harness"]["latency"]) if row else (None, None)
        lines += ["", f"## CUDA graphs: the gap, candidate by candidate ({probed['model']}, eval, bf16, batch "
                      f"{probed['batch_size']})", "",
                  f"The row: ours {_ms(ours_ms)} ms (paired), the harness {_ms(harness_ms)} ms"
                  + (f", ours / harness {ours_ms / harness_ms:.2f}" if ours_ms and harness_ms else "") + ".", ""]
        lines += _table(["measurement", "state", "ms", "/ ours' row", "/ harness", "what it tells"],
                        [[p["variant"], p["state"], _ms(p["ms"]), _ms(p["per_ours_row"], 2),
                          _ms(p["per_harness"], 2), p["candidate"]] for p in report["probe"]])
        facts_lines = [f"- the row, {side}: {json.dumps(f, sort_keys=True)}" for side, f in probed["facts"].items() if f]
        facts_lines += [f"- {p['variant']}: {json.dumps(p['facts'], sort_keys=True)}" for p in report["probe"]
                        if p["facts"]]
        if facts_lines:
            lines += ["", "Facts (CUDA graphs, cudagraph_skips, cuDNN as it ran, SM clock during the timed runs):", ""]
            lines += facts_lines
    if report.get("llm"):
        compiled = ("the decode step compiled by Inductor with CUDA graphs (--generation-compile=forward "
                    "--compile-mode=reduce-overhead)" if report["device"] == "cuda" else
                    "the decode step compiled by Inductor (--generation-compile=forward; no CUDA graphs here)")
        lines += ["", "## LLM generation: eager / compiled (ours; the harness's rows need the hub)", "",
                  f"Batch 1, greedy, static cache, exactly the new tokens asked; eager against {compiled}, "
                  "--verify (the logits judged, the tokens matching eager's counted). Each figure is the median of "
                  "the timed generate calls. Speedups: the whole generate time (the harness's) and decode tokens "
                  "per second (more is better).", ""]
        lines += _table(["model", "tokens", "precision", "first token ms", "decode tokens/s", "generate s",
                         "speedup generate", "speedup decode", "compile s", "accuracy"],
                        [llm_cells(r) for r in report["llm"]])
    lines += ["", "## Steps, in priority order", ""]
    lines += _table(["step", "tier", "estimate s", "state", "s", "detail"],
                    [[s["key"], s["tier"], f"{s['estimate_s']:.0f}", s["state"], _ms(s["seconds"], 0),
                      s["detail"] + (f" (log {s['log']})" if s["log"] else "")] for s in report["steps"]])
    return "\n".join(lines) + "\n"


def write(out: Path, report: dict) -> None:
    """Both files, each replaced whole (written aside, then renamed): a reader never sees half of one."""
    for name, text in (("gpu-slice.json", json.dumps(report, indent=1, default=str)), ("gpu-slice.md", render(report))):
        partial = out / f".{name}.partial"
        partial.write_text(text)
        partial.replace(out / name)
