#!/usr/bin/env python3
"""`make gpu-slice`: a slice of PyTorch's CUDA dashboard on the machine's GPU, the dynamo harness beside ours, model
for model, in one prepared command sized for a lent GPU machine (one GPU, a few minutes, no network).

On the machine's own Python and torch, with what it lacks unpacked from --wheels (`make gpu-wheels`; gpu-check's
machinery: scripts/gpu/check_machine.py), and the harness from --harness-dir (`make gpu-harness`), it runs the slice's
steps in priority order (scripts/gpu/slice_plan.py): the rows of inference in bf16 (torchvision resnet18, a Hugging
Face model, a timm model: the harness's performance and accuracy runs, our sweep), the CUDA-graph probe, training in
amp, more models, the harness's LLM generation rows (ours alone: Qwen3-0.6B, Llama-3.2-1B), as --minutes allows. A step whose estimate does not fit what is left is not started, and named.

After every step it writes the report again (OUT/gpu-slice.md and .json; scripts/gpu/slice_report.py) and prints
one line: a run cut off at any point (a signal, the machine taken back) leaves the report of what it measured, and
names the step it was cut off in. `--plan` prints the plan, its estimate and every command, and runs nothing.
Exit 0 when every step it ran finished, 1 when one failed, 2 for bad usage, 130 when cut off by a signal.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import sys
import time
from pathlib import Path
from typing import Optional

from scripts.gpu import check as gpu_check, check_machine, slice_plan, slice_report
from scripts.gpu.slice_report import CUT_OFF, DONE, FAILED, LEFT_OUT, NOT_STARTED, RUNNING, Outcome

ROOT = Path(__file__).resolve().parents[2]

DEFAULT_MINUTES = 7.0
REPEAT = 30  # timed runs (pairs) on both sides: the harness's default
PROCESS_CAP_S = 300.0  # the most one step may take
GRACE_S = 30.0  # a step started in time may run this far past the budget before it is interrupted
# The library each suite's rows need, as gpu-check's facts name it.
SUITE_LIBRARY = {"torchvision": "torchvision", "timm": "timm", "huggingface": "transformers"}


class CutOff(Exception):
    """A signal ended the run (SIGTERM, SIGHUP): the report says so and keeps what was measured."""


def parse(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="output/gpu-slice", help="where the report, the results and the logs go")
    parser.add_argument("--minutes", type=float, default=DEFAULT_MINUTES,
                        help=f"the slice's time budget (default {DEFAULT_MINUTES:g}); a step started in it may run "
                             f"up to {GRACE_S:.0f} s past it")
    parser.add_argument("--wheels", help="wheels of what the machine's Python lacks (make gpu-wheels)")
    parser.add_argument("--site", default=str(ROOT / "output" / "gpu-site"),
                        help="where the wheels this Python lacks are unpacked (default output/gpu-site: outside --out, "
                             "so that the report's folder stays small enough to bring back)")
    parser.add_argument("--harness-dir", help="a PyTorch or TorchBench checkout (make gpu-harness): the harness's rows")
    parser.add_argument("--tiers", default=",".join(slice_plan.TIERS),
                        help="of " + ", ".join(slice_plan.TIERS) + " (default: all, in that order)")
    parser.add_argument("--models", help="SUITE:NAME:BATCH,...: these rows instead of the first tier's (and the "
                                         "probe on the first), e.g. torchvision:resnet18:32")
    parser.add_argument("--llm-models", help="NAME,...: the `llm` tier's rows, by the harness's hub names (default: "
                                             + ", ".join(m.name for m in slice_plan.LLM_MODELS) + "; also "
                                             + ", ".join(m.name for m in slice_plan.LLM_KNOWN
                                                         if m not in slice_plan.LLM_MODELS) + ")")
    parser.add_argument("--llm-lengths", default="%d:%d" % slice_plan.LLM_LENGTHS,
                        help="PROMPT:NEW tokens of the `llm` tier's rows (default %(default)s)")
    parser.add_argument("--llm-params", help="JSON: --model-params for the `llm` tier's models (fewer layers, for the "
                                             "slice's own test on a CPU)")
    parser.add_argument("--accelerator", choices=("cuda", "cpu"), default="cuda",
                        help="cpu: the slice's own test on a machine without a GPU (no probe, no CUDA profile)")
    parser.add_argument("--repeat", type=int, default=REPEAT, help=f"timed runs, both sides (default {REPEAT})")
    parser.add_argument("--plan", action="store_true", help="print the plan and its commands; run nothing")
    options = parser.parse_args(argv)
    options.tiers = tuple(t.strip() for t in options.tiers.split(",") if t.strip())
    unknown = set(options.tiers) - set(slice_plan.TIERS)
    if unknown or not options.tiers:
        parser.error(f"--tiers takes {', '.join(slice_plan.TIERS)}")
    if options.minutes <= 0 or options.repeat < 1:
        parser.error("--minutes must be positive and --repeat at least 1")
    options.first = slice_plan.FIRST_MODELS
    try:
        options.llm = tuple(slice_plan.parse_llm_models(options.llm_models)) if options.llm_models \
            else slice_plan.LLM_MODELS
        options.llm_lengths = slice_plan.parse_lengths(options.llm_lengths)
    except ValueError as exc:
        parser.error(str(exc))
    if options.llm_params is not None:
        try:
            if not isinstance(json.loads(options.llm_params), dict):
                raise ValueError
        except ValueError:
            parser.error(f"--llm-params must be a JSON object, not {options.llm_params!r}")
    if options.models:
        try:
            options.first = tuple(slice_plan.parse_models(options.models))
        except ValueError as exc:
            parser.error(str(exc))
    return options


def slice_steps(options) -> list:
    tiers = tuple(t for t in options.tiers if not (t == "probe" and options.accelerator != "cuda"))
    return slice_plan.default_steps(options.first, slice_plan.MORE_MODELS, tiers, options.llm)


# ---------------------------------------------------------------- the commands


def merged_flags(base: dict, flags: tuple) -> list:
    """`base` (--name: value) with `flags` ("--name=value" or "--name") put over it: one value per option, so an
    axis given twice never makes two configs."""
    merged = dict(base)
    for flag in flags:
        name, _, value = flag.partition("=")
        merged[name] = value or None
    return [name if value is None else f"{name}={value}" for name, value in merged.items()]


def ours_command(step: slice_plan.Step, options, out_dir: Path) -> list:
    """Our sweep for a row (eager, and Inductor timed paired with eager, both --verify) or a probe's variant (the
    compiled config alone, its flag changed, the Inductor cache shared by the probe's runs)."""
    model = step.model
    command = [sys.executable, str(ROOT / "experiment_runner.py"), f"--suite-name={model.suite}",
               "-k", f"^{re.escape(model.name)}$", f"--accelerator={options.accelerator}", "--xla=None"]
    repeat = options.repeat
    if step.what == "probe":
        command += ["--dynamo=inductor"]
        base = {"--speedup": "paired", "--compile-cache": "shared"}
        flags = merged_flags(base, step.variant.flags)
    elif step.what == "llm":  # generate calls: eager against the decode step compiled (with CUDA graphs on CUDA)
        prompt, new = options.llm_lengths
        command += ["--dynamo=None", "--dynamo=inductor"]
        flags = ["--generation-compile=forward", f"--prompt-tokens={prompt}", f"--new-tokens={new}",
                 f"--warmup={slice_plan.LLM_WARMUP}", "--verify"]
        flags += ["--compile-mode=reduce-overhead"] if options.accelerator == "cuda" else []
        flags += [f"--model-params={options.llm_params}"] if options.llm_params else []
        repeat = min(repeat, slice_plan.LLM_REPEAT)
    else:
        command += ["--dynamo=None", "--dynamo=inductor"]
        flags = ["--speedup=paired", "--verify"]
    command += [f"--test={step.test}", f"--precision={step.precision}", f"--batch-size={step.batch_size}",
                f"--repeat={repeat}", f"--output-dirname={out_dir}", *flags]
    if options.accelerator == "cuda":
        command.append("--cuda-profile=dashboard")
    return command


def harness_command(step: slice_plan.Step, options, harness, out: Path) -> list:
    from scripts.parity import harness as parity_harness, table as parity_table

    spec = slice_report.harness_spec(step.model, step.test)
    mode = "performance" if step.what == "harness-performance" else "accuracy"
    batch = spec.batch_size if mode == "performance" else None  # accuracy: the harness's own, as the dashboard's
    return parity_harness.command(sys.executable, harness, spec.suite, spec.model, step.test, spec.precision, batch,
                                  mode, options.repeat, parity_table.harness_csv(out, spec, mode),
                                  device=options.accelerator)


def plain_flags(step: slice_plan.Step) -> list:
    return list(step.variant.flags)


def plan_text(the_plan: slice_plan.Plan, options, harness, out: Path) -> str:
    lines = [f"gpu-slice plan: {len(the_plan.chosen)} steps, about {the_plan.estimate_s:.0f} s "
             f"({the_plan.estimate_s / 60:.1f} min) of --minutes {options.minutes:g}"]
    for number, step in enumerate(the_plan.chosen, 1):
        lines.append(f"{number:2d}. [{step.tier}] {step.key}  ~{step.estimate_s:.0f} s")
        lines.append("      " + " ".join(map(shlex.quote, map(str, step_command(step, options, harness, out)))))
    for step, why in the_plan.left_out:
        lines.append(f"    left out: [{step.tier}] {step.key}: {why}")
    return "\n".join(lines) + "\n"


def step_command(step: slice_plan.Step, options, harness, out: Path) -> list:
    if step.what == "ours":
        return ours_command(step, options, slice_report.ours_results(out).parent)
    if step.what == "llm":
        return ours_command(step, options, slice_report.llm_results(out).parent)
    if step.what == "probe" and step.variant.side == "ours":
        return ours_command(step, options, slice_report.probe_path(out, step))
    if step.what == "probe":
        return [sys.executable, "-m", "scripts.gpu.plain_loop", f"--suite={step.model.suite}",
                f"--model={step.model.name}", f"--batch-size={step.batch_size}", f"--precision={step.precision}",
                f"--iterations={options.repeat}", f"--device={options.accelerator}", *plain_flags(step)]
    if harness is None:
        return ["<the harness>", step.what, step.model.harness_name or "-"]
    return harness_command(step, options, harness, out)


# ---------------------------------------------------------------- the run


class SliceRun:
    """The slice's steps, their outcomes and the report, written again after each change."""

    def __init__(self, check: check_machine.Check, steps: list, the_plan: slice_plan.Plan, started: float):
        self.check, self.options, self.out = check, check.options, check.out
        self.steps, self.started = steps, started
        self.outcomes = {step.key: Outcome() for step in steps}
        for step, why in the_plan.left_out:
            self.outcomes[step.key] = Outcome(LEFT_OUT, why)
        self.harness = None
        self.cut_off: Optional[str] = None

    def write(self) -> None:
        report = slice_report.build(self.out, self.steps, self.outcomes, self.check.facts, self.options.accelerator,
                                    self.options.minutes * 60, time.monotonic() - self.started, self.cut_off)
        slice_report.write(self.out, report)

    def set(self, step: slice_plan.Step, state: str, detail: str = "", seconds: Optional[float] = None,
            log: Optional[Path] = None) -> None:
        self.outcomes[step.key] = Outcome(state, detail, None if seconds is None else round(seconds, 1),
                                          None if log is None else str(log.relative_to(self.out)))
        self.write()
        if state != RUNNING:
            shown = f" ({seconds:.0f} s)" if seconds is not None else ""
            print(f"gpu-slice: {step.key}: {state}{shown}" + (f": {detail}" if detail else ""), flush=True)

    def why_not(self, step: slice_plan.Step) -> Optional[str]:
        """Why `step` can't run here at all (its suite's library, the harness), or None."""
        library = SUITE_LIBRARY.get(step.model.suite)
        if library and not self.check.facts.get(library):
            return f"not started: {library} does not import here (carry it: make gpu-wheels, --wheels)"
        if step.what.startswith("harness") and self.harness is None:
            return "not started: no harness (--harness-dir: make gpu-harness)"
        return None

    def run_all(self) -> None:
        """Every step in priority order that fits the time left when its turn comes: the plan's estimates decide
        what it expects to run, the clock what runs (a run faster than planned takes steps the plan left out)."""
        for step in self.steps:
            planned = self.outcomes[step.key].state
            if planned not in (slice_report.PLANNED, LEFT_OUT):
                continue
            left = self.check.left()
            why = self.why_not(step) or slice_plan.fits(step, left)
            if why:
                self.set(step, NOT_STARTED if planned == slice_report.PLANNED else LEFT_OUT, why)
                continue
            self.set(step, RUNNING)
            began = time.monotonic()
            try:
                state, detail, log = self.run_step(step, min(PROCESS_CAP_S, left + GRACE_S))
            except (CutOff, KeyboardInterrupt) as exc:
                why = str(exc) or type(exc).__name__
                self.cut_off = f"{why} during {step.key}"
                self.set(step, CUT_OFF, why, time.monotonic() - began)
                raise
            self.set(step, state, detail, time.monotonic() - began, log)

    def run_step(self, step: slice_plan.Step, budget: float) -> tuple:
        """(state, detail, log) of one step run within `budget` seconds."""
        if step.what in ("ours", "llm"):
            out_dir = (slice_report.ours_results if step.what == "ours" else slice_report.llm_results)(self.out).parent
            name = re.sub(r"[^A-Za-z0-9._-]", "-", step.key)  # a hub name's slash too
            return self.run_ours(step, out_dir, budget, out_dir / "logs" / f"sweep-{name}.log")
        if step.what == "probe" and step.variant.side == "ours":
            out_dir = slice_report.probe_path(self.out, step)
            return self.run_ours(step, out_dir, budget, out_dir / "sweep.log")
        if step.what == "probe":
            return self.run_plain(step, budget)
        return self.run_harness(step, budget)

    def run_ours(self, step, out_dir: Path, budget: float, log: Path) -> tuple:
        from scripts.parity import table as parity_table

        ended, _ = self.check.run(ours_command(step, self.options, out_dir), log, timeout=budget)
        compiled = [m for m in parity_table.load_ours(out_dir / "results.jsonl")
                    if m.suite == step.model.suite and m.model_name == step.model.name and m.test == step.test
                    and m.base_backend != "eager"]
        if compiled and compiled[-1].ok:
            return DONE, f"sweep {ended}", log
        why = (compiled[-1].record.get("error") or {}).get("message", "") if compiled else "no compiled record"
        return FAILED, f"sweep {ended}: {str(why)[:160]}", log

    def run_plain(self, step, budget: float) -> tuple:
        path = slice_report.probe_path(self.out, step)
        log = path.with_suffix(".log")
        found = gpu_check.plain_loop(self.check, step.model.suite, step.model.name, step.batch_size, step.precision,
                                     plain_flags(step), budget, log)
        if found is None:
            return FAILED, "the plain loop gave no time", log
        path.write_text(json.dumps(found) + "\n")
        return DONE, f"{found['median_ms']:.3f} ms", log

    def harness_env(self) -> dict:
        from scripts.parity import harness as parity_harness

        scratch = parity_harness.write_shims(self.harness, self.out / "harness" / "shims")
        extra_paths = [p for p in os.environ.get("PARITY_EXTRA_PATH", "").split(os.pathsep) if p]  # scipy, tabulate
        env = parity_harness.environment(self.harness, scratch, extra_paths, base=self.check.env,
                                         allocator_policy="system")
        site = str(self.check.site)  # what was unpacked (transformers): the same libraries as ours
        if site in self.check.env.get("PYTHONPATH", "").split(os.pathsep):
            env["PYTHONPATH"] += os.pathsep + site
        return env

    def run_harness(self, step, budget: float) -> tuple:
        from scripts.parity import table as parity_table

        spec = slice_report.harness_spec(step.model, step.test)
        mode = "performance" if step.what == "harness-performance" else "accuracy"
        csv_path = parity_table.harness_csv(self.out, spec, mode)
        log = csv_path.with_suffix(".log")
        if parity_table.read_csv_row(csv_path, spec.model) is None:  # a row there: measured before (a rerun resumes)
            saved, self.check.env = self.check.env, self.harness_env()
            try:
                ended, _ = self.check.run(harness_command(step, self.options, self.harness, self.out), log,
                                          timeout=budget, cwd=self.harness.checkout)
            finally:
                self.check.env = saved
        else:
            ended = "measured before"
        row = parity_table.read_csv_row(csv_path, spec.model)
        if row is None:
            return FAILED, f"the harness {ended}, no row in its CSV", log
        if mode == "performance" and not parity_table.float_field(row, "speedup"):
            return FAILED, f"the harness {ended}: its failure row (no time)", log
        return DONE, f"the harness {ended}", log


def signal_cut_off(number, frame):
    raise CutOff(f"signal {signal.Signals(number).name}")


def main(argv=None) -> int:
    options = parse(argv)
    steps = slice_steps(options)
    the_plan = slice_plan.plan(steps, options.minutes * 60)
    out = Path(options.out).resolve()
    harness = None
    if options.harness_dir:
        from scripts.parity import harness as parity_harness

        try:
            harness = parity_harness.find_harness(options.harness_dir, ROOT)
        except parity_harness.NoHarness as exc:
            print(f"gpu-slice: {exc}", file=sys.stderr)
            return 2
    if options.plan:
        sys.stdout.write(plan_text(the_plan, options, harness, out))
        return 0
    started = time.monotonic()
    check = check_machine.Check(options)
    check_machine.unpack_wheels(check)
    check_machine.gather_facts(check)
    run = SliceRun(check, steps, the_plan, started)
    run.harness = harness
    why = check_machine.no_gpu_reason(check.facts) if options.accelerator == "cuda" else None
    previous = {number: signal.signal(number, signal_cut_off) for number in (signal.SIGTERM, signal.SIGHUP)}
    code = 0
    try:
        if why:
            for step in the_plan.chosen:
                run.outcomes[step.key] = Outcome(NOT_STARTED, f"not started: {why}")
            run.write()
        else:
            run.run_all()
    except (CutOff, KeyboardInterrupt) as exc:
        if run.cut_off is None:
            run.cut_off = str(exc) or type(exc).__name__
        run.write()
        code = 130
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    text = slice_report.render(json.loads((out / "gpu-slice.json").read_text()))
    print(text)
    print(f"report: {out / 'gpu-slice.md'}")
    if code:
        return code
    return 1 if any(o.state == FAILED for o in run.outcomes.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
