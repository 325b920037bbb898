"""scripts/bench/sweep.py: which sweep `make bench` runs on this machine (the GPU's where torch sees a CUDA device,
else the CPU's), its flags for each, the line it prints, and BENCH_ACCELERATOR choosing either without a GPU."""

import pytest

from scripts.bench import sweep as bench_sweep


def test_the_cpu_sweep_is_the_one_make_bench_always_ran():
    assert bench_sweep.flags("cpu") == [
        "--suite-name=dummy", "--accelerator=cpu", "--xla=None", "--xla=PJRT", "--dynamo=None", "--dynamo=inductor",
        "--dynamo=openxla", "--test=eval", "--test=train", "--repeat=5"]


def test_the_gpu_sweep_is_eager_and_inductor_without_and_with_cuda_graphs_and_no_xla():
    flags = bench_sweep.flags("cuda")
    assert "--accelerator=cuda" in flags and "--accelerator=cpu" not in flags
    assert [f for f in flags if f.startswith(("--dynamo", "--compile-mode", "--xla"))] == [
        "--xla=None", "--dynamo=None", "--dynamo=inductor", "--compile-mode=default", "--compile-mode=reduce-overhead"]
    assert {"--test=eval", "--test=train", "--suite-name=dummy"} <= set(flags)


def test_the_variable_chooses_without_asking_torch_and_torch_decides_otherwise(capsys):
    import torch

    assert bench_sweep.accelerator({"BENCH_ACCELERATOR": "cuda"}) == "cuda"
    assert bench_sweep.accelerator({"BENCH_ACCELERATOR": " CPU "}) == "cpu"
    here = "cuda" if torch.cuda.is_available() else "cpu"
    assert bench_sweep.accelerator({}) == here
    assert bench_sweep.main(["--accelerator"], environ={"BENCH_ACCELERATOR": "cuda"}) == 0
    assert capsys.readouterr().out == "cuda\n"
    assert bench_sweep.main(["--flags", "cuda"], environ={}) == 0
    assert capsys.readouterr().out.split() == bench_sweep.flags("cuda")


def test_the_printed_line_says_which_sweep_and_why():
    import torch

    line = bench_sweep.describe("cuda", by_variable=True)
    assert line.startswith("make bench: the GPU's sweep (BENCH_ACCELERATOR=cuda): eager, and Inductor without and with "
                           "CUDA graphs") and "--verify" in line
    line = bench_sweep.describe("cpu", by_variable=False)
    why = "CUDA device found" if torch.cuda.is_available() else "no CUDA device: torch.cuda.is_available() is False"
    assert line.startswith(f"make bench: the CPU sweep ({why}): eager, Inductor, PyTorch/XLA")
    assert "BENCH_SWEEP's flags" in bench_sweep.describe("cpu", by_variable=True, own_sweep=True)


@pytest.mark.parametrize("argv, environ", [(["--accelerator"], {"BENCH_ACCELERATOR": "tpu"}),
                                          (["--flags", "gpu"], {}), (["--describe", "tpu", "--chosen"], {})])
def test_another_accelerator_is_one_line_and_exit_2(argv, environ, capsys):
    assert bench_sweep.main(argv, environ=environ) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "make bench runs on cpu or cuda" in err and "Traceback" not in err
