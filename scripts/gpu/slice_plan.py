"""The dashboard slice's plan (`make gpu-slice`, scripts/gpu/slice.py): which models and configs run, in which order,
at the dynamo harness's batch sizes on CUDA, and which of them fit a time budget by their estimated cost. Pure
Python: no torch, no clock, no process (docs/parity.md, "A slice of the dashboard on a GPU").

A step is one process (the harness's) or one sweep of ours. Steps run in priority order, tier by tier:

1. `first`: inference (bf16, Inductor with CUDA graphs against eager) of torchvision resnet18, one Hugging Face
   model the harness builds offline and one timm model: for each, the harness's performance run, our sweep
   (eager, and Inductor timed paired with eager as the harness times it, both --verify), the harness's accuracy run;
2. `probe`: what the remaining CUDA-graph gap on the first row's model is made of (VARIANTS);
3. `train`: the first tier's models trained in amp;
4. `more`: one more model per suite, inference;
5. `llm`: the harness's LLM generation rows at reduced lengths, ours alone (LLM_MODELS): eager against Inductor
   compiling the decode step with CUDA graphs, each one sweep with --verify.

The estimates are seconds on the lent H100 (torch 2.11, 16 cores; the first run's notes and gpu-check's runs):
every step's actual seconds are in the slice's report beside its estimate, to correct these with.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

TESTS = ("eval", "train")
# The dashboard's precisions (features/cuda_profile/__init__.py PRECISIONS: --bfloat16 inference, --amp training); a copy,
# so that planning imports nothing of the library.
PRECISIONS = {"eval": "bf16", "train": "amp"}
TIERS = ("first", "probe", "train", "more", "llm")


@dataclasses.dataclass(frozen=True)
class SliceModel:
    """A model of ours beside the harness's same model, with the harness's batch sizes on CUDA."""

    suite: str  # our suite
    name: str
    harness_suite: Optional[str]  # the harness's suite script key (parity_harness.SCRIPTS), None: it has none
    harness_name: Optional[str]
    batch: tuple  # ((test, batch size), ...): the harness's own on CUDA
    batch_source: str  # where the harness takes that batch size from
    compile_s: float  # estimated cold Inductor compile of inference on an H100, seconds

    def batch_for(self, test: str) -> int:
        return dict(self.batch)[test]

    @property
    def label(self) -> str:
        return f"{self.suite} {self.name}"


# The harness's batch sizes on CUDA, when it is given none (the dashboard gives none): TorchBench's model's own
# DEFAULT_EVAL_BSIZE / DEFAULT_TRAIN_BSIZE (its metadata.yaml names another only for an A100-SXM4-40GB), the timm
# list's, the Hugging Face list's divided by huggingface.yaml's divisor. Facts of TorchBench's copy at ceb79e10.
RESNET18 = SliceModel("torchvision", "resnet18", "torchbench", "resnet18", (("eval", 8), ("train", 16)),
                      "TorchBench resnet18's DEFAULT_EVAL_BSIZE 8, DEFAULT_TRAIN_BSIZE 16", 13)
DISTILBERT = SliceModel("huggingface", "DistilBertForQuestionAnswering", "huggingface",
                        "DistilBertForQuestionAnswering", (("eval", 256), ("train", 256)),
                        "huggingface_models_list.txt 512, huggingface.yaml divisor 2", 18)
MOBILENETV2 = SliceModel("timm", "mobilenetv2_100", "timm", "mobilenetv2_100", (("eval", 128), ("train", 128)),
                         "timm_models_list.txt 128", 17)
RESNET50 = SliceModel("torchvision", "resnet50", "torchbench", "resnet50", (("eval", 32), ("train", 32)),
                      "TorchBench resnet50's DEFAULT_EVAL_BSIZE 32, DEFAULT_TRAIN_BSIZE 32", 16)
BERT = SliceModel("huggingface", "BertForMaskedLM", "huggingface", "BertForMaskedLM", (("eval", 16), ("train", 16)),
                  "huggingface_models_list.txt 32, huggingface.yaml divisor 2", 22)
GHOSTNET = SliceModel("timm", "ghostnet_100", "timm", "ghostnet_100", (("eval", 512), ("train", 512)),
                      "timm_models_list.txt 512", 20)
FIRST_MODELS = (RESNET18, DISTILBERT, MOBILENETV2)
MORE_MODELS = (RESNET50, BERT, GHOSTNET)
# The TorchBench models the slice asks the harness for: `make gpu-harness` copies these into the carried subset.
TORCHBENCH_MODELS = tuple(m.harness_name for m in FIRST_MODELS + MORE_MODELS if m.harness_suite == "torchbench")
# The harness's LLM generation rows (huggingface_llm_models.py; docs/generation.md), ours alone: the harness takes
# their configurations and tokenizers from the hub, which a lent machine can't reach. Batch 1, as the harness runs
# them; compile_s: transformers' decode step (the forward) compiled with CUDA graphs, estimated.
QWEN3 = SliceModel("huggingface", "Qwen/Qwen3-0.6B", None, None, (("eval", 1),), "the harness's LLM rows: batch 1",
                   45)
LLAMA32 = SliceModel("huggingface", "meta-llama/Llama-3.2-1B", None, None, (("eval", 1),),
                     "the harness's LLM rows: batch 1", 40)
GEMMA2 = SliceModel("huggingface", "google/gemma-2-2b", None, None, (("eval", 1),), "the harness's LLM rows: batch 1",
                    60)
WHISPER = SliceModel("huggingface", "openai/whisper-tiny", None, None, (("eval", 1),),
                     "the harness's LLM rows: batch 1", 30)
LLM_MODELS = (QWEN3, LLAMA32)  # the first two; --llm-models names others (LLM_KNOWN)
LLM_KNOWN = (QWEN3, LLAMA32, GEMMA2, WHISPER)
# Reduced lengths (the harness's 1,000 prompt and 2,000 new tokens take minutes per eager call): 128 and 128.
LLM_LENGTHS = (128, 128)
LLM_REPEAT = 5  # timed generate calls per config (each is a whole generation)
LLM_WARMUP = 2  # CUDA graphs: the first call compiles and warms up, the second records
LLM_BUILD_S = 6.0  # a model built in bf16 and moved to the GPU (three: eager, compiled, --verify's eager)
LLM_GENERATE_S = 4.0  # one eager generate call of 128 + 128 tokens (about 30 ms a decode step in eager)
LLM_COMPILED_FRACTION = 0.3  # a compiled call's time against eager's


@dataclasses.dataclass(frozen=True)
class Variant:
    """One measurement of the CUDA-graph probe: ours with a flag changed, or the plain CUDA loop."""

    name: str
    side: str  # "ours" (a sweep of the compiled config alone) or "plain" (scripts/gpu/plain_loop.py)
    flags: tuple  # ours: the sweep's flags beside the row's; plain: the loop's flags beside its model's
    candidate: str  # which candidate for the gap it tells about, and how


# The candidates for the CUDA-graph gap (ours 1.317 ms, the harness 1.025 ms on resnet18, batch 32, bf16), each
# measured against the row's own figures (ours paired, the harness's): one GPU run tells which moves ours.
VARIANTS = (
    Variant("plain, autotuner on", "plain", ("--backend=inductor", "--cudagraphs", "--tf32", "--cudnn-benchmark"),
            "a plain loop under the dashboard's setup (cuDNN's autotuner on, as TorchBench's factory sets it): "
            "ours / plain is our runner's own cost"),
    Variant("plain, autotuner off", "plain", ("--backend=inductor", "--cudagraphs", "--tf32"),
            "cuDNN's autotuner: the same loop with cudnn.benchmark off; the difference is the autotuner's share"),
    Variant("ours isolated", "ours", ("--speedup=isolated",),
            "where the timed region sits: ours without eager runs between the graph replays (gpu-check's 1.317 ms "
            "setup); the GPU idles between runs, where the harness alternates eager and compiled"),
    Variant("ours device time", "ours", ("--pure-wall-time",),
            "the timed region around a replay: CUDA events around each call (device time, no host part, L2 "
            "flushed before each call: if anything above the harness's); near the harness's, the gap is on the host"),
    Variant("ours warm-up 10", "ours", ("--warmup=10",),
            "the graph-capture warm-up count: 10 untimed runs (the harness: 5 in its warm-up, more before "
            "its timing) instead of our 2 (Inductor's graph trees warm up once, record once, then replay)"),
    Variant("ours 10 per run", "ours", ("--iterations-per-run=10",),
            "the synchronisation around a replay: 10 replays between two synchronisations instead of one"),
    Variant("ours allocator system", "ours", ("--allocator=system",),
            "the allocator: the C allocator as inherited (the harness's) instead of our glibc policy"),
)
# Each probe step also records facts from the records and logs it reads: cudagraph_skips (ours, the harness's CSV),
# whether CUDA graphs ran, cuDNN's settings as ours ran them, the SM clock during our timed runs.

# Estimated seconds (an H100, torch 2.11, 16 cores).
PROCESS_START_S = 8.0  # Python, torch and Inductor imported, the suite's library (transformers, timm)
OURS_START_S = 8.0  # our sweep's parent and its fork server (torch, dynamo and Inductor preloaded)
BUILD_S = 2.0  # a model built and moved to the GPU
TIMED_S = 3.0  # warm-up and 30 timed runs (or pairs), peak memory
VERIFY_S = 2.0  # --verify's fp64 reference and comparison
EAGER_CHILD_S = 4.0  # our eager config's child: forked, model built, runs, --verify
DEVICE_TIME_S = 6.0  # --pure-wall-time: each of 30 runs times calls for 0.1 s, eager's too
TRAIN_FACTOR = 2.0  # a training step against inference: forward and backward compiled and run
WARM_COMPILE_FRACTION = 0.3  # a compile whose Inductor cache a compile of the same graph filled before


@dataclasses.dataclass(frozen=True)
class Step:
    """One process of the slice: `what` is harness-performance, ours, harness-accuracy (a row's), or probe."""

    key: str  # unique: the report's and the logs' name for it
    tier: str
    what: str
    model: SliceModel
    test: str
    estimate_s: float
    variant: Optional[Variant] = None

    @property
    def precision(self) -> str:
        return PRECISIONS[self.test]

    @property
    def batch_size(self) -> int:
        return self.model.batch_for(self.test)

    @property
    def row(self) -> tuple:
        """The row of the side-by-side table this step fills (a probe's: the row it is measured against)."""
        return (self.model.suite, self.model.name, self.test)


ROW_STEPS = ("harness-performance", "ours", "harness-accuracy")


def compile_seconds(model: SliceModel, test: str, warm: bool = False) -> float:
    seconds = model.compile_s * (TRAIN_FACTOR if test == "train" else 1.0)
    return seconds * WARM_COMPILE_FRACTION if warm else seconds


def row_steps(model: SliceModel, test: str, tier: str) -> list:
    """A row's three steps: the harness's performance run, our sweep, the harness's accuracy run (its status)."""
    compile_s = compile_seconds(model, test)
    run_s = TIMED_S * (TRAIN_FACTOR if test == "train" else 1.0)
    estimates = {"harness-performance": PROCESS_START_S + BUILD_S + compile_s + run_s,
                 "ours": OURS_START_S + EAGER_CHILD_S + BUILD_S + compile_s + run_s + VERIFY_S,
                 "harness-accuracy": PROCESS_START_S + BUILD_S + compile_s + VERIFY_S}
    if model.harness_suite is None:  # ours alone
        return [Step(f"{test}:{model.suite}:{model.name}:ours", tier, "ours", model, test, estimates["ours"])]
    return [Step(f"{test}:{model.suite}:{model.name}:{what}", tier, what, model, test, estimates[what])
            for what in ROW_STEPS]


def llm_step(model: SliceModel) -> Step:
    """An LLM row: one sweep of ours (eager and the compiled decode step, --verify), estimated from its generate calls
    (warm-up and timed, both configs, and --verify's two) and the compile."""
    calls = (LLM_WARMUP + LLM_REPEAT + 1) * (1 + LLM_COMPILED_FRACTION)
    estimate = OURS_START_S + 3 * LLM_BUILD_S + calls * LLM_GENERATE_S + model.compile_s
    return Step(f"eval:{model.suite}:{model.name}:llm", "llm", "llm", model, "eval", estimate)


def probe_steps(model: SliceModel) -> list:
    """The probe's variants on `model` (inference): ours compile from the cache the first of ours filled (shared),
    the plain loop compiles a graph of its own."""
    steps, ours_seen = [], False
    for variant in VARIANTS:
        if variant.side == "ours":
            estimate = OURS_START_S + BUILD_S + compile_seconds(model, "eval", warm=ours_seen) + TIMED_S
            estimate += DEVICE_TIME_S if "--pure-wall-time" in variant.flags else 0.0
            ours_seen = True
        else:
            estimate = PROCESS_START_S + BUILD_S + compile_seconds(model, "eval") + 1.0
        steps.append(Step(f"probe:{model.suite}:{model.name}:{variant.name.replace(' ', '-').replace(',', '')}",
                          "probe", "probe", model, "eval", estimate, variant))
    return steps


def default_steps(first: tuple = FIRST_MODELS, more: tuple = MORE_MODELS, tiers: tuple = TIERS,
                  llm: tuple = LLM_MODELS) -> list:
    """Every step of the slice, in priority order, for the tiers asked."""
    by_tier = {
        "first": [s for m in first for s in row_steps(m, "eval", "first")],
        "probe": probe_steps(first[0]) if first else [],
        "train": [s for m in first for s in row_steps(m, "train", "train")],
        "more": [s for m in more for s in row_steps(m, "eval", "more")],
        "llm": [llm_step(m) for m in llm],
    }
    return [step for tier in TIERS if tier in tiers for step in by_tier[tier]]


@dataclasses.dataclass
class Plan:
    chosen: list  # Steps, in the order they run
    left_out: list  # (Step, why)

    @property
    def estimate_s(self) -> float:
        return sum(step.estimate_s for step in self.chosen)


def plan(steps: list, budget_s: float) -> Plan:
    """The steps that fit `budget_s` by their estimates, taken in priority order: a step that does not fit what is
    left is left out, and a later, shorter one may still fit."""
    chosen, left_out, left = [], [], budget_s
    for step in steps:
        if step.estimate_s <= left:
            chosen.append(step)
            left -= step.estimate_s
        else:
            left_out.append((step, f"needs about {step.estimate_s:.0f} s, {max(left, 0):.0f} s of the budget left"))
    return Plan(chosen, left_out)


def fits(step: Step, left_s: float) -> Optional[str]:
    """At run time: why `step` is not started with `left_s` seconds left (its estimate is more), or None."""
    if step.estimate_s > left_s:
        return f"not started: needs about {step.estimate_s:.0f} s, {max(left_s, 0):.0f} s left"
    return None


def parse_llm_models(text: str, known: tuple = LLM_KNOWN) -> list:
    """--llm-models NAME,...: the LLM rows to run, by the harness's hub name; ValueError names an unknown one."""
    by_name = {m.name: m for m in known}
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in by_name]
    if unknown or not names:
        raise ValueError(f"--llm-models takes {', '.join(by_name)}" + (f", not {', '.join(unknown)}" if unknown else ""))
    return [by_name[n] for n in names]


def parse_lengths(text: str) -> tuple:
    """--llm-lengths PROMPT:NEW: two positive token counts; ValueError otherwise."""
    prompt, _, new = text.partition(":")
    if not (prompt.isdigit() and new.isdigit() and int(prompt) > 0 and int(new) > 0):
        raise ValueError(f"--llm-lengths {text}: expected PROMPT:NEW, two positive token counts")
    return int(prompt), int(new)


def parse_models(text: str, known: tuple = FIRST_MODELS + MORE_MODELS) -> list:
    """--models SUITE:NAME:BATCH,...: the rows' models (each batch for both tests); a model the slice knows keeps its
    harness counterpart, another runs ours alone. ValueError names a malformed entry."""
    found = []
    by_name = {(m.suite, m.name): m for m in known}
    for entry in (e.strip() for e in text.split(",") if e.strip()):
        suite, name, batch = (entry.split(":") + ["", "", ""])[:3]
        if not (suite and name and batch.isdigit() and int(batch) > 0):
            raise ValueError(f"--models {entry}: expected SUITE:NAME:BATCH")
        base = by_name.get((suite, name))
        batches = (("eval", int(batch)), ("train", int(batch)))
        if base is not None:
            found.append(dataclasses.replace(base, batch=batches, batch_source="--models"))
        else:
            found.append(SliceModel(suite, name, None, None, batches, "--models", 15.0))
    if not found:
        raise ValueError("--models names no model")
    return found
