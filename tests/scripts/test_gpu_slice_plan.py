"""scripts/gpu/slice_plan.py (`make gpu-slice`'s plan): the slice's priority order, the harness's batch sizes it runs
at, and which steps a time budget takes by their estimates. Pure Python: no torch, no process."""

import pytest

from scripts.gpu import slice_plan


def test_the_first_rows_are_inference_of_resnet18_a_hugging_face_model_and_a_timm_model_then_the_probe():
    steps = slice_plan.default_steps()
    first = [(s.model.suite, s.model.name, s.test, s.what) for s in steps if s.tier == "first"]
    assert first == [(suite, name, "eval", what)
                     for suite, name in (("torchvision", "resnet18"), ("huggingface", "DistilBertForQuestionAnswering"),
                                         ("timm", "mobilenetv2_100"))
                     for what in ("harness-performance", "ours", "harness-accuracy")]
    assert {s.precision for s in steps if s.test == "eval"} == {"bf16"}
    assert {s.precision for s in steps if s.test == "train"} == {"amp"}
    # tier by tier, in the order: first rows, the CUDA-graph probe, training, more models, the LLM rows
    tiers = [s.tier for s in steps]
    assert tiers == sorted(tiers, key=slice_plan.TIERS.index) and tiers[-1] == "llm"
    probe = [s for s in steps if s.tier == "probe"]
    assert [s.variant.name for s in probe] == [v.name for v in slice_plan.VARIANTS]
    assert {s.row for s in probe} == {("torchvision", "resnet18", "eval")}  # measured against resnet18's row
    assert [s.model.name for s in steps if s.tier == "train" and s.what == "ours"] == [
        m.name for m in slice_plan.FIRST_MODELS]
    assert len({s.key for s in steps}) == len(steps)


def test_the_rows_run_at_the_harness_batch_sizes_on_cuda():
    batches = {(m.name, test): m.batch_for(test) for m in slice_plan.FIRST_MODELS + slice_plan.MORE_MODELS
               for test in slice_plan.TESTS}
    # TorchBench's DEFAULT_EVAL_BSIZE / DEFAULT_TRAIN_BSIZE; the timm list's; the Hugging Face list's / its divisor
    assert batches[("resnet18", "eval")] == 8 and batches[("resnet18", "train")] == 16
    assert batches[("mobilenetv2_100", "eval")] == 128
    assert batches[("DistilBertForQuestionAnswering", "eval")] == 256 and batches[("BertForMaskedLM", "eval")] == 16
    assert slice_plan.TORCHBENCH_MODELS == ("resnet18", "resnet50")  # what make gpu-harness copies


def test_a_budget_takes_the_steps_in_priority_order_and_a_later_shorter_step_still_fits():
    model = slice_plan.RESNET18
    big, small, other = (slice_plan.Step(key, "first", "ours", model, "eval", estimate)
                         for key, estimate in (("big", 100.0), ("small", 20.0), ("other", 30.0)))
    plan = slice_plan.plan([small, big, other], 60.0)
    assert plan.chosen == [small, other] and plan.estimate_s == 50.0
    assert plan.left_out == [(big, "needs about 100 s, 40 s of the budget left")]
    assert slice_plan.plan([small, big], 200.0).left_out == []
    assert slice_plan.fits(big, 99.0) == "not started: needs about 100 s, 99 s left"
    assert slice_plan.fits(big, 100.0) is None


def test_the_default_budget_holds_the_first_rows_and_the_probe_and_says_what_it_leaves_out():
    plan = slice_plan.plan(slice_plan.default_steps(), 7 * 60)
    tiers = [s.tier for s in plan.chosen]
    assert tiers.count("first") == 9 and tiers.count("probe") >= 5
    assert 6 * 60 <= plan.estimate_s <= 7 * 60
    assert {s.tier for s, _ in plan.left_out} >= {"train", "more"}
    # more time, more of it: training and more models as time allows
    assert len(slice_plan.plan(slice_plan.default_steps(), 20 * 60).chosen) > len(plan.chosen)


def test_estimates_grow_with_training_and_the_probe_reuses_its_first_compile():
    eval_ours, train_ours = (next(s for s in slice_plan.row_steps(slice_plan.RESNET18, test, "first")
                                  if s.what == "ours") for test in ("eval", "train"))
    assert train_ours.estimate_s > eval_ours.estimate_s
    ours = [s for s in slice_plan.probe_steps(slice_plan.RESNET18) if s.variant.side == "ours"]
    first, later = ours[0], [s for s in ours[1:] if not any("pure-wall-time" in f for f in s.variant.flags)]
    assert all(s.estimate_s < first.estimate_s for s in later)  # the shared cache the first filled


def test_models_from_the_command_line_keep_a_known_models_harness_and_run_another_alone():
    known, mine = slice_plan.parse_models("torchvision:resnet18:32, dummy:mlp:4")
    assert (known.harness_suite, known.harness_name, known.batch_for("eval")) == ("torchbench", "resnet18", 32)
    assert mine.harness_suite is None and mine.batch_for("train") == 4
    assert [s.what for s in slice_plan.row_steps(mine, "eval", "first")] == ["ours"]
    for bad in ("timm:x", "timm:x:0", ":x:3", ""):
        with pytest.raises(ValueError):
            slice_plan.parse_models(bad)


def test_the_llm_rows_are_qwen3_then_llama_at_batch_1_ours_alone_in_one_sweep_each():
    steps = [s for s in slice_plan.default_steps() if s.tier == "llm"]
    assert [(s.model.name, s.what, s.batch_size, s.precision) for s in steps] == [
        ("Qwen/Qwen3-0.6B", "llm", 1, "bf16"), ("meta-llama/Llama-3.2-1B", "llm", 1, "bf16")]
    assert all(s.model.harness_suite is None for s in steps)  # the harness's LLM rows need the hub
    # each estimate counts its generate calls and the compile: more than a forward row of the same compile
    assert all(s.estimate_s > slice_plan.OURS_START_S + s.model.compile_s + 10 * slice_plan.LLM_GENERATE_S
               for s in steps)
    assert [m.name for m in slice_plan.parse_llm_models("google/gemma-2-2b, openai/whisper-tiny")] == [
        "google/gemma-2-2b", "openai/whisper-tiny"]
    assert slice_plan.parse_lengths("32:16") == (32, 16)
    for bad in ("gpt-5", ""):
        with pytest.raises(ValueError, match="--llm-models takes Qwen/Qwen3-0.6B"):
            slice_plan.parse_llm_models(bad)
    for bad in ("32", "0:16", "a:b", "32:-1"):
        with pytest.raises(ValueError, match="expected PROMPT:NEW"):
            slice_plan.parse_lengths(bad)
