"""The microbench suite: shape specs (every form, and bad ones), model names and dtype pairing, dtype support,
and one real sweep of two small matmul shapes across eager, Inductor and both PyTorch/XLA paths, whose records
carry FLOPs and TFLOP/s and are read by result_analyzer.py and aggregate.py."""

import argparse
import csv
import json
import re

import pytest


from benchmarks.runner import matrix
from benchmarks.suites import microbench
from helpers import XLA, call_runner, read_jsonl, run_runner, run_tool

SHAPES = "64x64x64,128x256x512"
# where torch-xla can't run (another torch than 2.9), its configs are dropped, saying why, and the others run
BACKENDS = [(None, None), (None, "inductor")] + ([("PJRT", None), ("PJRT", "openxla")] if XLA else [])


# ---------------------------------------------------------------- shape specs


def test_explicit_shapes_keep_their_order_without_repeats():
    assert microbench.parse_shapes("1024x512x256, 8X4X2,1024x512x256") == [(1024, 512, 256), (8, 4, 2)]


def test_pow2_sweep():
    assert microbench.parse_shapes("pow2:256:2048") == [(256,) * 3, (512,) * 3, (1024,) * 3, (2048,) * 3]
    assert microbench.parse_shapes("pow2:100:300") == [(128,) * 3, (256,) * 3]


def test_small_sweep_is_every_m_le_k_le_n():
    shapes = microbench.parse_shapes("small_sweep:16:64")
    assert shapes == [(16, 16, 16), (16, 16, 32), (16, 16, 64), (16, 32, 32), (16, 32, 64), (16, 64, 64),
                      (32, 32, 32), (32, 32, 64), (32, 64, 64), (64, 64, 64)]


def test_square_sweep_is_upstreams_range_with_its_end():
    shapes = microbench.parse_shapes("square:256:8192:128")
    assert len(shapes) == 63 and shapes[0] == (256,) * 3 and shapes[-1] == (8192,) * 3
    assert all(m == k == n for m, k, n in shapes)


def test_forms_mix():
    assert microbench.parse_shapes("pow2:8:16,3x5x7,square:8:10:1") == [
        (8, 8, 8), (16, 16, 16), (3, 5, 7), (9, 9, 9), (10, 10, 10)]


@pytest.mark.parametrize("spec, message", [
    ("64x64", "is not a shape"), ("64x0x64", "sizes must be positive"), ("pow2:8:4", "MIN must not be above MAX"),
    ("pow2:100:120", "no power of two"), ("pow2:8", "needs 2 numbers"), ("square:1:10:0", "must be positive"),
    ("square:9:1:1", "START must not be above END"), ("small_sweep:a:4", "whole numbers"),
    ("cube:1:2", "unknown shape sweep 'cube'"), ("64x64x64,,", "empty item"), ("square:1:20000:1", "at most"),
])
def test_bad_specs_are_refused_with_a_reason(spec, message):
    with pytest.raises(microbench.ShapeSpecError, match=message):
        microbench.parse_shapes(spec)


def test_a_bad_spec_on_the_command_line_is_one_line_and_exit_2(tmp_path):
    out = tmp_path / "never"
    result = call_runner("--suite-name=microbench", "--shapes=64x64", f"--output-dirname={out}", check_rc=2)
    assert result.stderr.strip() == ("experiment_runner.py: error: argument --shapes: '64x64' is not a shape: use "
                                     "MxKxN (e.g. 1024x512x256), pow2:MIN:MAX, small_sweep:MIN:MAX or "
                                     "square:START:END:STEP")
    assert not out.exists()  # refused before any child (or the probe) ran


# ---------------------------------------------------------------- models, dtypes, pairing


def options(**kwargs):
    base = {"op": None, "shapes": None, "dtype": None}
    base.update(kwargs)
    return argparse.Namespace(**base)


def test_model_names_and_the_dtype_axis():
    suite = microbench.SUITE
    opts = options(op=["matmul", "linear_relu"], shapes=["8x16x32"], dtype=["float32", "bfloat16"])
    names = [m["model_name"] for m in suite.list_models(opts)]
    assert names == ["matmul-float32-8x16x32", "matmul-bfloat16-8x16x32",
                     "linear_relu-float32-8x16x32", "linear_relu-bfloat16-8x16x32"]
    assert suite.extra_axes(opts) == {"dtype": ["float32", "bfloat16"]}
    assert microbench.parse_model_name("linear_relu-bfloat16-8x16x32") == ("linear_relu", "bfloat16", (8, 16, 32))
    with pytest.raises(ValueError):
        microbench.parse_model_name("conv-float32-8x16x32")
    defaults = [m["model_name"] for m in suite.list_models(options())]
    assert defaults == [f"matmul-float32-{s}x{s}x{s}" for s in (256, 512, 1024, 2048)]


def test_a_model_pairs_only_with_experiments_of_its_dtype():
    suite = microbench.SUITE
    experiments = matrix.expand({"accelerator": ["cpu"], "xla": [None], "dynamo": [None], "test": ["eval"]},
                                {"dtype": ["float32", "float16"]})
    model = {"suite_name": "microbench", "model_name": "matmul-float16-8x8x8"}
    assert [dict(e.extra)["dtype"] for e in experiments if suite.matches(model, e)] == ["float16"]
    train = matrix.expand({"accelerator": ["cpu"], "xla": [None], "dynamo": [None], "test": ["train"]})[0]
    assert "inference only" in suite.skip_reason(model, train, options())
    sized = matrix.expand({"accelerator": ["cpu"], "xla": [None], "dynamo": [None], "test": ["eval"],
                           "batch_size": [8]})[0]
    assert "no batch size" in suite.skip_reason(model, sized, options())


def test_flop_counts():
    assert microbench.OPS["matmul"].flops(64, 128, 256) == 2 * 64 * 128 * 256
    assert microbench.OPS["linear_relu"].flops(64, 128, 256) == 2 * 64 * 128 * 256 + 2 * 64 * 256
    # the memory-bound operator: one addition per element, two arrays read and one written
    assert microbench.OPS["add"].flops(4, 8, 16) == 4 * 8 * 16
    assert microbench.OPS["add"].elements(4, 8, 16) == 3 * 4 * 8 * 16
    assert microbench.parse_model_name("add-bfloat16-4x8x16") == ("add", "bfloat16", (4, 8, 16))


def test_dtype_support_is_decided_from_facts():
    from benchmarks.suites import microbench_ops

    # torch 2.9 runs every one of these on the CPU (bfloat16 and float16 matmul included): no skip here.
    for dtype in microbench.DTYPES:
        for op in microbench.OPS:
            assert microbench_ops.dtype_skip_reason(op, dtype, "cpu") is None
    # A GPU without native bfloat16 (compute capability < 8.0) is a skip with its reason.
    reason = microbench_ops.dtype_skip_reason("matmul", "bfloat16", "cuda", cuda_bf16_native=False)
    assert "no native bfloat16" in reason and "8.0" in reason


# ---------------------------------------------------------------- one real sweep


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    out = tmp_path_factory.mktemp("microbench")
    result = run_runner("--suite-name=microbench", "--op=matmul", f"--shapes={SHAPES}", "--dtype=float32",
                        "--accelerator=cpu", "--xla=None", "--xla=PJRT", "--dynamo=None", "--dynamo=inductor",
                        "--dynamo=openxla", "--test=eval", "--repeat=2", "--warmup=1", f"--output-dirname={out}",
                        check_rc=0)
    return result, out, read_jsonl(out / "results.jsonl")


@pytest.mark.integration
def test_each_shape_ran_on_every_backend(sweep):
    _, _, records = sweep
    seen = [(r["model"]["model_name"], r["experiment"]["xla"], r["experiment"]["dynamo"]) for r in records]
    assert seen == [(f"matmul-float32-{shape}", xla, dynamo) for shape in SHAPES.split(",") for xla, dynamo in BACKENDS]
    for record in records:
        assert record["status"] == "ok", record["error"]
        assert record["experiment"]["dtype"] == "float32" and record["experiment"]["batch_size"] is None


@pytest.mark.integration
def test_records_carry_flops_and_tflops_per_repeat(sweep):
    _, _, records = sweep
    for record in records:
        m, k, n = (int(x) for x in record["model"]["model_name"].rsplit("-", 1)[1].split("x"))
        info = record["model_info"]
        assert info == {"op": "matmul", "dtype": "float32", "shape": {"M": m, "K": k, "N": n}, "flops": 2 * m * k * n,
                        "bytes": 4 * (m * k + k * n + m * n)}  # A and B read, C written, each once
        metrics = record["metrics"]
        assert len(metrics["tflops"]) == 2
        for tflops, seconds in zip(metrics["tflops"], metrics["per_iter_time"]):
            assert tflops == pytest.approx(info["flops"] / seconds / 1e12)


@pytest.mark.integration
def test_the_end_of_sweep_table_shows_time_tflops_and_speedup_per_shape(sweep):
    result, _, _ = sweep
    lines = result.stdout.splitlines()
    header = next(line for line in lines if line.startswith("model "))
    for backend in ("eager", "inductor", "openxla+lazytensor", "openxla+dynamo")[:len(BACKENDS)]:
        assert f"{backend} ms" in header
    for shape in SHAPES.split(","):
        [row] = [line for line in lines if line.startswith(f"matmul-float32-{shape} ")]
        # a speedup over eager for each other backend
        speedups = re.findall(r"\((?:\d[\d.e+-]*)x[,)]", row)  # "(55.7x)" or "(1.15x, 0 breaks, ...)"
        assert row.count("TFLOP/s") == len(BACKENDS) and len(speedups) == len(BACKENDS) - 1, row


@pytest.mark.integration
def test_result_analyzer_reads_the_records(sweep):
    _, out, _ = sweep
    report = out / "report.csv"
    run_tool("result_analyzer.py", out / "results.jsonl", f"--output={report}", check_rc=0)
    with open(report, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 2 * len(BACKENDS)
    for row in rows:
        assert row["model_name"].startswith("matmul-float32-") and row["status"] == "ok"
        assert float(row["median_tflops"]) > 0 and float(row["median_per_iter_time"]) > 0


@pytest.mark.integration
def test_aggregate_reads_the_records(sweep):
    _, out, _ = sweep
    table = out / "speedups.csv"
    run_tool("aggregate.py", out / "results.jsonl", "--report=latest_grouped", "--format=csv",
             f"--output={table}", check_rc=0)
    text = table.read_text()
    header = text.splitlines()[0]
    assert "Inductor" in header and ("XLA+Dynamo" in header) == XLA and ("XLA+LazyTensor" in header) == XLA
    for shape in SHAPES.split(","):
        assert f"matmul-float32-{shape}," in text


@pytest.mark.integration
def test_a_second_operator_in_bfloat16_runs_by_hand(tmp_path):
    model = json.dumps({"suite_name": "microbench", "model_name": "linear_relu-bfloat16-32x64x16"})
    experiment = json.dumps({"accelerator": "cpu", "xla": None, "dynamo": None, "test": "eval", "dtype": "bfloat16"})
    run_runner("--suite-name=microbench", "--repeat=2", "--warmup=1", f"--output-dirname={tmp_path}",
               f"--model-config={model}", f"--experiment-config={experiment}", check_rc=0)
    [record] = read_jsonl(tmp_path / "results.jsonl")
    assert record["status"] == "ok" and record["model_info"]["flops"] == 2 * 32 * 64 * 16 + 2 * 32 * 16
    assert len(record["metrics"]["tflops"]) == 2 and all(t > 0 for t in record["metrics"]["tflops"])
