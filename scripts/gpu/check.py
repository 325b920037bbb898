#!/usr/bin/env python3
"""`make gpu-check`: the one GPU check, sized for a lent GPU machine (one GPU, a few minutes, no network).

Runs on the machine's own Python and torch (no .venv, no torch-xla there); what the project needs beyond them
travels as wheels (`make gpu-wheels` here; --wheels DIR there): only the modules that don't import are unpacked,
into the output directory, never over the machine's own. Then, within --minutes:

1. the GPU tier (`pytest -m gpu`: tests/end_to_end/test_gpu.py and the CUDA timing test), each test's outcome;
2. a small sweep of ours on real models under the dashboard's CUDA setup (--cuda-profile=dashboard: bf16, TF32;
   torchvision resnet18, timm mobilenetv2_100; eager, Inductor, Inductor with
   CUDA graphs), each config beside a plain CUDA loop in its own process (scripts/gpu/plain_loop.py);
3. where a checkout of PyTorch's dynamo harness is given (--harness-dir), the harness on the same models.

It writes one report (OUT/gpu-check.md, and .json): what ran, what was skipped and why, and one table of
milliseconds per iteration, ours against the plain loop and the harness. Each part that does not fit the time
left, or can't run here (no CUDA device, no harness), is named as skipped with the reason; exit 0 unless the
check itself could not run (exit 2) or a part failed (exit 1).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Optional

from benchmarks.features import cuda_profile
from scripts.gpu.check_machine import Check, OPTIONAL, ROOT, gather_facts, no_gpu_reason, say, unpack_wheels


@dataclasses.dataclass(frozen=True)
class Model:
    suite: str  # ours
    name: str
    batch_size: int
    harness: tuple  # (the harness's suite script key, its model name), or () where it has none


# The comparison's models and configs: our flags per config, and the harness's extra flags for the same config.
MODELS = (Model("torchvision", "resnet18", 32, ("torchbench", "resnet18")),
          Model("timm", "mobilenetv2_100", 32, ("timm", "mobilenetv2_100")))
# The comparison runs the dashboard's CUDA setup (--cuda-profile=dashboard: inference in bf16, TF32 matmuls, cold
# compiles; the harness's --bfloat16 and its defaults), each config its own sweep of ours.
PRECISION = "bf16"
OUR_SETUP = ["--cuda-profile=dashboard"]  # CUDA only: the check's own CPU test runs without it
CONFIGS = {  # name -> (our flags, the plain loop's flags, the harness's extra flags; None: its eager, timed beside)
    "eager": (["--dynamo=None"], ["--backend=eager"], None),
    "inductor": (["--dynamo=inductor", "--inductor-config=triton.cudagraphs=False"], ["--backend=inductor"],
                 ["--disable-cudagraphs"]),
    "inductor+cudagraphs": (["--dynamo=inductor"], ["--backend=inductor", "--cudagraphs"], []),
    # ours under the inherited C allocator (the harness's): does our default policy move a launch-bound time?
    "eager[allocator=system]": (["--dynamo=None", "--allocator=system"], ["--backend=eager"], None),
}
REPEAT = 30  # timed runs of ours (one iteration each), iterations of the plain loop
# The most one process of the comparison may take (a cold compile of a real model on an H100 is 15-40 s); what
# the time left can't hold is skipped, named, rather than every process cut short.
CAPS = {"ours": 240.0, "plain": 150.0, "harness": 240.0}
COMPARE_PARTS = ("ours", "plain", "harness")


# ---------------------------------------------------------------- 1. the GPU tier


# The GPU tier's test files (the Makefile's test-gpu runs the same): real CUDA sweeps, and CUDA timing in the child.
TIER_FILES = ("tests/end_to_end/test_gpu.py", "tests/child/test_precise_timing.py")


def run_tier(check: Check, budget: float) -> None:
    part = check.part("GPU tier")
    xml = check.out / "tier.xml"
    started = time.monotonic()
    select = ["-k", check.options.tier_select] if check.options.tier_select else []
    ended, _ = check.run([sys.executable, "-m", "pytest", "-v", "--tb=short", "-m", "gpu", *TIER_FILES, *select,
                          "-p", "no:cacheprovider", f"--junitxml={xml}", "-o", "addopts=-rfEs"],
                         check.out / "tier.log", timeout=budget)
    part.seconds = time.monotonic() - started
    outcomes = tier_outcomes(xml)
    counts = {kind: sum(1 for _, k, _ in outcomes if k == kind) for kind in ("passed", "failed", "skipped")}
    part.status = "ok" if ended == "ok" and not counts["failed"] else "failed"
    part.detail = (f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped"
                   + ("" if ended in ("ok", "exit 1") else f" ({ended}: log {check.out / 'tier.log'})"))
    part.tests = outcomes  # type: ignore[attr-defined]
    say(f"GPU tier: {part.detail}")


def tier_outcomes(xml: Path) -> list:
    """(test, passed/failed/skipped, message) per test case of a JUnit XML file (empty if there is none)."""
    try:
        root = ElementTree.parse(xml).getroot()
    except (OSError, ElementTree.ParseError):
        return []
    outcomes = []
    for case in root.iter("testcase"):
        name = case.get("name")
        for kind, words in (("failure", "failed"), ("error", "failed"), ("skipped", "skipped")):
            element = case.find(kind)
            if element is not None:
                message = (element.get("message") or element.text or "").strip().splitlines()
                outcomes.append((name, words, message[0][:300] if message else ""))
                break
        else:
            outcomes.append((name, "passed", ""))
    return outcomes


# ---------------------------------------------------------------- 2. ours and the plain loop


def run_ours(check: Check, model: Model, config: str, budget: float) -> Optional[float]:
    """Our sweep of one model and config (its own output directory): the median ms per iteration, or None."""
    out = check.out / "ours" / model.name / config.replace(" ", "").replace(",", "_")
    setup = OUR_SETUP if check.options.accelerator == "cuda" else []
    command = [sys.executable, str(ROOT / "experiment_runner.py"), f"--suite-name={model.suite}",
               "-k", f"^{model.name}$", f"--accelerator={check.options.accelerator}", "--xla=None",
               *CONFIGS[config][0], *setup, f"--precision={PRECISION}", "--test=eval",
               f"--batch-size={model.batch_size}", f"--repeat={REPEAT}", f"--output-dirname={out}"]
    ended, _ = check.run(command, out / "sweep.log", timeout=budget)
    times = [statistics.median(r["metrics"]["per_iter_time"]) * 1e3 for r in read_records(out / "results.jsonl")
             if r.get("status") == "ok"]
    say(f"ours {model.name} {config}: {ended}" + (f", {times[-1]:.3f} ms" if times else ", no ok record"))
    return times[-1] if times else None


def read_records(path: Path) -> list:
    try:
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except (OSError, ValueError):
        return []


def plain_flags(model: Model, config: str, accelerator: str) -> list:
    """The plain loop's flags for a config: its backend's, and on CUDA the setup ours runs under the profile: TF32,
    and cuDNN's autotuner for the models the dashboard runs with it (features/cuda_profile/__init__.py)."""
    flags = list(CONFIGS[config][1])
    if accelerator == "cuda":
        flags.append("--tf32")
        keys = {"cuda_profile": cuda_profile.DASHBOARD, "accelerator": accelerator}
        if cuda_profile.cudnn_benchmark_reason({"suite_name": model.suite, "model_name": model.name}, keys):
            flags.append("--cudnn-benchmark")
    return flags


def run_plain(check: Check, model: Model, config: str, budget: float) -> Optional[float]:
    flags = plain_flags(model, config, check.options.accelerator)
    name = "-".join(flag.lstrip("-").replace("=", "_") for flag in flags)
    found = plain_loop(check, model.suite, model.name, model.batch_size, PRECISION, flags, budget,
                       check.out / "plain" / f"{model.name}-{name}.log")
    return found["median_ms"] if found else None


def plain_loop(check: Check, suite: str, name: str, batch_size: int, precision: str, flags: list, budget: float,
               log: Path) -> Optional[dict]:
    """One run of the plain loop (scripts/gpu/plain_loop.py, REPEAT iterations) with `flags`: its JSON line (median_ms
    and the rest), or None where it gave none."""
    command = [sys.executable, "-m", "scripts.gpu.plain_loop", f"--suite={suite}", f"--model={name}",
               f"--batch-size={batch_size}", f"--precision={precision}", f"--iterations={REPEAT}",
               f"--device={check.options.accelerator}", *flags]
    ended, output = check.run(command, log, timeout=budget)
    try:
        found = json.loads(output.strip().splitlines()[-1]) if ended == "ok" else None
    except (ValueError, IndexError):
        return None
    return found if isinstance(found, dict) and "median_ms" in found else None


# ---------------------------------------------------------------- 3. the harness


def run_harness(check: Check, model: Model, config: str, budget: float) -> Optional[dict]:
    """The harness's performance run of one model and config: {"eager": ms, "compiled": ms} or None."""
    from scripts.parity import harness as parity_harness, table as parity_table

    extra = CONFIGS[config][2]
    if extra is None or not model.harness:
        return None
    harness = check.harness
    suite, name = model.harness
    scratch = parity_harness.write_shims(harness, check.out / "harness" / "shims")
    extra_paths = [p for p in os.environ.get("PARITY_EXTRA_PATH", "").split(os.pathsep) if p]  # scipy, tabulate
    env = parity_harness.environment(harness, scratch, extra_paths, base=check.env, allocator_policy="system")
    csv_path = check.out / "harness" / f"{name}-{config}.csv"
    command = parity_harness.command(sys.executable, harness, suite, name, "eval", PRECISION, model.batch_size,
                                     "performance", REPEAT, csv_path, device=check.options.accelerator) + extra
    saved, check.env = check.env, env
    try:
        ended, _ = check.run(command, csv_path.with_suffix(".log"), timeout=budget, cwd=harness.checkout)
    finally:
        check.env = saved
    times = harness_times(parity_table.read_csv_row(csv_path, name))
    if times is None:
        say(f"harness {name} {config}: {ended}, no timed row (log {csv_path.with_suffix('.log')})")
    return times


def harness_times(row: Optional[dict]) -> Optional[dict]:
    """{"compiled": ms, "eager": ms} of the harness's performance CSV row, or None where it timed nothing: no row,
    or its failure row (eager_fail_to_run and the like), which says 0 for both the speedup and the latency."""
    try:
        compiled, speedup = float(row["abs_latency"]), float(row["speedup"])
    except (TypeError, KeyError, ValueError):
        return None
    return {"compiled": compiled, "eager": compiled * speedup} if compiled > 0 and speedup > 0 else None


# ---------------------------------------------------------------- the report


def compare(check: Check) -> None:
    """Parts 2 and 3: per model, our sweep, the plain loop per config, the harness per config."""
    names = ("small sweep", "plain loop", "harness")
    wanted = check.options.model_list
    models = [m for m in wanted if m.suite not in OPTIONAL or check.facts.get(m.suite)]
    absent = [f"{m.suite} {m.name} ({OPTIONAL[m.suite]}: not installed)" for m in wanted if m not in models]
    if not models:
        for name in names:
            check.skip(name, "no model's suite is installed: " + "; ".join(absent))
        return
    if check.options.harness_dir:
        from scripts.parity import harness as parity_harness

        try:
            check.harness = parity_harness.find_harness(check.options.harness_dir, ROOT)
        except parity_harness.NoHarness as exc:
            check.skip("harness", str(exc))
    else:
        check.skip("harness", "no --harness-dir (a PyTorch or TorchBench checkout: docs/parity.md)")
    asked = check.options.compare_parts
    for name, part_name in zip(COMPARE_PARTS, names):
        if name not in asked:
            check.skip(part_name, "not asked (--parts)")
    if "harness" not in asked:
        check.harness = None
    started = time.monotonic()
    counts = {name: {"wanted": 0, "started": 0, "timed": 0} for name in COMPARE_PARTS}

    def timed(name: str, run, *args) -> Optional[object]:
        """One process of part `name` within its cap or what is left; None where it gave no time or too little
        time was left to start it (counted either way)."""
        count = counts[name]
        count["wanted"] += 1
        left = check.left()
        if name not in asked or left < 30:
            return None
        count["started"] += 1
        result = run(check, *args, min(CAPS[name], left))
        count["timed"] += result is not None
        return result

    for model in models:
        plain_of: dict = {}  # the plain loop's time per flag set (two configs may share one)
        for config in check.options.configs:
            ours = timed("ours", run_ours, model, config)
            key = tuple(CONFIGS[config][1])
            if key not in plain_of:
                plain_of[key] = timed("plain", run_plain, model, config)
            theirs = None
            if check.harness and CONFIGS[config][2] is not None and model.harness:
                theirs = timed("harness", run_harness, model, config)
            if theirs:  # its eager, timed beside its compiled run, is the eager rows'
                check.harness_eager.setdefault(model.name, theirs["eager"])
            check.rows.append({"model": model.name, "batch_size": model.batch_size, "precision": PRECISION,
                               "config": config, "ours_ms": ours, "plain_ms": plain_of[key],
                               "harness_ms": theirs["compiled"] if theirs else None})
    for row in check.rows:  # eager: the harness times it beside its compiled run
        if CONFIGS[row["config"]][2] is None and row["harness_ms"] is None:
            row["harness_ms"] = check.harness_eager.get(row["model"])
    elapsed = time.monotonic() - started
    ran = [r for r in check.rows if r["ours_ms"] is not None]
    for name, part_name in zip(COMPARE_PARTS, names):
        part, count = check.part(part_name), counts[name]
        if part.status == "skipped":
            continue
        not_started = count["wanted"] - count["started"]
        part.status = ("skipped" if not count["started"] else "ok" if count["timed"] == count["started"]
                       else "failed")
        part.detail = (f"{count['timed']} of {count['wanted']} processes timed"
                       + (f"; {not_started} not started: out of --minutes {check.options.minutes}"
                          if not_started else "") + (f"; not installed: {'; '.join(absent)}" if absent else ""))
        part.seconds = elapsed
    if not ran:
        say("no config of ours was timed")


def ratio(a: Optional[float], b: Optional[float]) -> str:
    return f"{a / b:.2f}" if a and b else "-"


def ms(value: Optional[float]) -> str:
    return f"{value:.3f}" if value is not None else "-"


def report(check: Check, started: float) -> str:
    facts = check.facts
    lines = [f"# gpu-check: {', '.join(facts.get('devices') or ['no CUDA device'])}",
             "", f"torch {facts.get('torch', '?')}, Python {facts.get('python', '?')}, torchvision "
             f"{facts.get('torchvision')}, timm {facts.get('timm')}, torch-xla {facts.get('torch_xla')}; "
             f"{time.monotonic() - started:.0f} s of --minutes {check.options.minutes}", "",
             "| part | result | detail |", "|---|---|---|"]
    for part in check.parts.values():
        lines.append(f"| {part.name} | {part.status} | {part.detail} |")
    tier = check.parts.get("GPU tier")
    not_passed: dict = {}
    for name, kind, message in getattr(tier, "tests", []):
        if kind != "passed":
            not_passed.setdefault((kind, message), []).append(name)
    if not_passed:
        lines += ["", "GPU tier, not passed:", ""] + [f"- {kind}: {message}: {', '.join(names)}"
                                                     for (kind, message), names in not_passed.items()]
    if check.rows:
        setup = " ".join(OUR_SETUP) if check.options.accelerator == "cuda" else "no profile (CPU)"
        lines += ["", f"## Milliseconds per iteration (median; eval, {PRECISION}, ours with {setup}, the plain loop and "
                  f"the harness with TF32 as the dashboard; ours {REPEAT} timed runs, the plain loop {REPEAT} "
                  "synchronized iterations in its own process)", "",
                  "| model | batch | config | ours | plain loop | ours / plain | harness | ours / harness |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in check.rows:
            lines.append(f"| {r['model']} | {r['batch_size']} | {r['config']} | {ms(r['ours_ms'])} | "
                         f"{ms(r['plain_ms'])} | {ratio(r['ours_ms'], r['plain_ms'])} | {ms(r['harness_ms'])} | "
                         f"{ratio(r['ours_ms'], r['harness_ms'])} |")
    return "\n".join(lines) + "\n"


def parse(argv):
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="output/gpu-check", help="where the report and logs go")
    parser.add_argument("--minutes", type=float, default=8.0, help="the whole check's time (default 8)")
    parser.add_argument("--wheels", help="wheels of what the machine's Python lacks (make gpu-wheels)")
    parser.add_argument("--harness-dir", help="a PyTorch or TorchBench checkout: the dynamo harness beside ours")
    parser.add_argument("--parts", default="tier,compare", help="of tier, compare (ours, plain, harness), ours, "
                        "plain, harness (default: tier,compare)")
    parser.add_argument("--tier-select", help="pytest -k expression: only these tests of the GPU tier")
    parser.add_argument("--models", help="SUITE:NAME:BATCH, comma-separated (default: "
                        + ", ".join(f"{m.suite}:{m.name}:{m.batch_size}" for m in MODELS) + ")")
    parser.add_argument("--configs", default=",".join(CONFIGS), help="of " + ", ".join(CONFIGS))
    parser.add_argument("--accelerator", choices=("cuda", "cpu"), default="cuda",
                        help="cpu: the comparison's own test on a machine without a GPU (no tier, no CUDA graphs)")
    options = parser.parse_args(argv)
    parts = {p.strip() for p in options.parts.split(",") if p.strip()}
    unknown = parts - {"tier", "compare", *COMPARE_PARTS}
    if unknown or not parts or options.minutes <= 0:
        parser.error(f"--parts takes tier, compare, {', '.join(COMPARE_PARTS)} (not {', '.join(sorted(unknown))})"
                     if unknown or not parts else "--minutes must be positive")
    options.tier = "tier" in parts
    options.compare_parts = [p for p in COMPARE_PARTS if p in parts or "compare" in parts]
    options.configs = [c.strip() for c in options.configs.split(",") if c.strip()]
    if set(options.configs) - set(CONFIGS) or not options.configs:
        parser.error(f"--configs takes {', '.join(CONFIGS)}")
    options.model_list = list(MODELS)
    if options.models:
        options.model_list = []
        for entry in options.models.split(","):
            suite, name, batch = (entry.split(":") + ["", "", ""])[:3]
            if not (suite and name and batch.isdigit() and int(batch) > 0):
                parser.error(f"--models {entry}: expected SUITE:NAME:BATCH")
            known = {(m.suite, m.name): m.harness for m in MODELS}
            options.model_list.append(Model(suite, name, int(batch), known.get((suite, name), ())))
    return options


def main(argv=None) -> int:
    options = parse(argv)
    started = time.monotonic()
    check = Check(options)
    unpack_wheels(check)
    gather_facts(check)
    why = no_gpu_reason(check.facts)
    if options.accelerator == "cpu":  # the comparison's own test: no tier, the CPU's figures
        check.skip("GPU tier", "--accelerator=cpu")
        if options.compare_parts:
            compare(check)
    elif why:
        for name in ("GPU tier", "small sweep", "plain loop", "harness"):
            check.skip(name, why)
        if options.tier:  # the tier still runs: each test says it is skipped, and why
            run_tier(check, check.left())
            check.part("GPU tier").status = "skipped"
    else:
        if options.tier:
            run_tier(check, min(check.left() * (0.5 if options.compare_parts else 1), 300))
        else:
            check.skip("GPU tier", "not asked (--parts)")
        if options.compare_parts:
            compare(check)
    text = report(check, started)
    (check.out / "gpu-check.md").write_text(text)
    (check.out / "gpu-check.json").write_text(json.dumps({
        "facts": check.facts, "parts": [dataclasses.asdict(p) for p in check.parts.values()], "rows": check.rows},
        indent=1))
    print(text)
    print(f"report: {check.out / 'gpu-check.md'}")
    return 1 if any(p.status == "failed" for p in check.parts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
