"""A timed run is a block of back-to-back calls (child/timing_block.py, child/measured_loop.py): by default as many
as make it last at least the target (10 ms on a CPU), found after the first warm-up call; --iterations-per-run=N
given by hand wins; the record says which and how many (iterations_per_run, timing_block). The grad mode is entered
once around a block, not by every call. Real torch on the CPU, tiny models; the child's run in process."""

import pytest
import torch

from benchmarks.child import config_run, hand_back, measured_loop, timing_block
from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.config.run_options import build_parser
from benchmarks.results import record_check
from benchmarks.suites import BenchmarkModel, all_suites

EAGER_CPU = ExperimentConfig("cpu", None, None, "eval")


@pytest.fixture(autouse=True)
def one_thread():
    """One intra-op thread while these tests time calls: on a machine shared with other tests, two threads wait at
    every parallel region for a core the other process holds (a 0.2 ms call then takes 20 ms), which is the
    machine's noise, not the rule under test."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def tiny_step():
    module = torch.nn.Linear(8, 8)
    bm = BenchmarkModel(module=module, example_inputs=(torch.randn(2, 8),), batch_size=2)
    return measured_loop.make_step(bm, EAGER_CPU, module, bm.example_inputs, {})


# ---------------------------------------------------------------- the rule, on a clock of known cost


def fixed_cost(per_call: float, first_extra: float = 0.0):
    """A probe whose calls take `per_call` seconds each (the first probe `first_extra` more): the rule's arithmetic."""
    seen = []

    def time_block(calls):
        seen.append(calls)
        return calls * per_call + (first_extra if len(seen) == 1 else 0.0)

    return time_block, seen


def test_the_block_grows_until_a_probe_lasts_the_target_and_aims_a_little_past_it():
    time_block, seen = fixed_cost(400e-6)  # the dummy cnn's time per call on this machine
    block = timing_block.calibrate(time_block, 0.010)
    assert seen == [1, 10, 30] and block.iterations == 30  # 30 x 0.4 ms = 12 ms: past 10 ms by the margin
    assert block.how == "calibrated"
    assert [calls for calls, _ in block.probes] == seen


def test_a_probe_that_only_just_reaches_the_target_is_stretched_by_the_margin():
    time_block, seen = fixed_cost(1e-3)
    block = timing_block.calibrate(time_block, 0.010)
    assert seen == [1, 10] and block.iterations == 12  # 10 ms is the target, not 1.2 x past it: 12 calls


def test_a_call_slower_than_the_target_is_a_block_of_one_after_two_probe_calls():
    time_block, seen = fixed_cost(0.055)  # resnet18 at 64 px
    block = timing_block.calibrate(time_block, 0.010)
    assert seen == [1, 1] and block.iterations == 1


def test_one_slow_first_call_does_not_make_every_run_a_single_call():
    time_block, seen = fixed_cost(200e-6, first_extra=0.024)  # a core taken by another process for a moment
    block = timing_block.calibrate(time_block, 0.010)
    assert seen == [1, 1, 10, 60] and block.iterations == 60


def test_a_warm_up_block_that_falls_short_of_the_target_grows_the_block_and_never_shrinks_it():
    block = timing_block.calibrate(fixed_cost(400e-6)[0], 0.010)  # 30 calls
    faster = timing_block.grown(block, 30, 30 * 200e-6)  # the calls warmed up to twice as fast: 6 ms
    assert faster.iterations == 60 and faster.probes[-1] == (30, 30 * 200e-6)
    assert timing_block.grown(faster, 60, 60 * 400e-6) is faster  # slower calls never shrink it
    assert timing_block.grown(timing_block.given(3), 3, 1e-6).iterations == 3  # a block given by hand is kept


def test_the_block_never_passes_its_limit():
    time_block, seen = fixed_cost(1e-9)
    block = timing_block.calibrate(time_block, 0.010, limit=500)
    assert block.iterations == 500 and seen[-1] == 500


# ---------------------------------------------------------------- the measured loop


def test_a_calibrated_block_is_sized_to_last_the_target_at_the_fastest_call_seen():
    """The rule is the block's size: at the fastest time per call its probes (and the warm-up blocks that grew it)
    saw, its calls last MARGIN x the target. Whether each timed run then lasts the target is the machine's: calls
    that run over 20% faster than any probe did (another process left the core between the two) fall short, as in
    blocked_autorange; the samples are still a block of calls each, far from one cold call."""
    blocks = []
    metrics = measured_loop.measure(tiny_step(), EAGER_CPU, repeat=4, iterations=None, warmup=2,
                                    on_block=lambda block, eager: blocks.append((block, eager)))
    (block, eager), = blocks
    assert eager is None and block.how == "calibrated" and block.target_seconds == 0.010
    assert block.iterations > 1  # a Linear(8, 8) call takes microseconds
    fastest = min(seconds / calls for calls, seconds in block.probes)
    assert block.iterations * fastest >= block.target_seconds * timing_block.MARGIN * (1 - 1e-6), block
    fewest = (block.iterations - 1) * fastest < block.target_seconds * timing_block.MARGIN * (1 + 1e-6)
    assert fewest or block.iterations in [calls for calls, _ in block.probes], block  # or a probe's own calls
    assert metrics["per_iter_time"] == [total / block.iterations for total in metrics["total_time"]]
    assert len(metrics["warmup_time"]) == 2 and len(metrics["total_time"]) == 4


def test_without_a_warm_up_run_nothing_calibrates_and_each_run_is_one_call():
    blocks = []
    metrics = measured_loop.measure(tiny_step(), EAGER_CPU, repeat=2, iterations=None, warmup=0,
                                    on_block=lambda block, eager: blocks.append(block))
    assert blocks[0].how == "one call" and blocks[0].iterations == 1 and "--warmup=0" in blocks[0].reason
    assert metrics["per_iter_time"] == metrics["total_time"]


class CountingNoGrad(torch.no_grad):
    """torch.no_grad itself, its entries counted."""

    entered = 0

    def __enter__(self):
        CountingNoGrad.entered += 1
        return super().__enter__()


def test_no_grad_is_entered_once_around_each_block_and_every_call_runs_without_gradients(monkeypatch):
    seen = []

    class Recording(torch.nn.Linear):
        def forward(self, x):
            seen.append(torch.is_grad_enabled())
            return super().forward(x)

    module = Recording(8, 8)  # built before the count: its initialisation enters no_grad too
    bm = BenchmarkModel(module=module, example_inputs=(torch.randn(2, 8),), batch_size=2)
    monkeypatch.setattr(torch, "no_grad", CountingNoGrad)
    CountingNoGrad.entered = 0
    step = measured_loop.make_step(bm, EAGER_CPU, module, bm.example_inputs, {})
    measured_loop.measure(step, EAGER_CPU, repeat=3, iterations=5, warmup=1)
    assert len(seen) == 20 and not any(seen)  # (1 warm-up + 3 timed runs) x 5 calls, none with gradients
    assert CountingNoGrad.entered == 4  # once per block, not once per call
    step()  # called alone (--verify's, the roofline's count): it enters the grad mode itself
    assert CountingNoGrad.entered == 5 and seen[-1] is False


# ---------------------------------------------------------------- the record, from the child's real run


def run_mlp(tmp_path, *flags) -> dict:
    options = build_parser(all_suites()).options(["--repeat=3", "--warmup=2", "--no-roofline",
                                                  f"--output-dirname={tmp_path}", *flags])
    record = config_run.run_config(options, {"suite_name": "dummy", "model_name": "mlp"}, EAGER_CPU,
                                      hand_back.Channel(None))
    assert record["status"] == "ok", record["error"]
    return record_check.written(record, None)  # every key declared and typed, as the sweep's writer checks


def test_the_record_says_its_block_was_calibrated_and_how_long_each_run_lasted(tmp_path):
    record = run_mlp(tmp_path)
    block, metrics = record["timing_block"], record["metrics"]
    assert block["how"] == "calibrated" and block["target_seconds"] == 0.010
    assert record["iterations_per_run"] == block["iterations"] > 1  # the dummy mlp's call is well under 10 ms
    assert block["probes"][0][0] == 1 and block["probes"][-1][1] >= 0.010
    assert min(metrics["total_time"]) >= 0.010
    assert metrics["per_iter_time"] == [t / record["iterations_per_run"] for t in metrics["total_time"]]


def test_iterations_per_run_given_by_hand_wins_and_is_recorded_as_given(tmp_path):
    record = run_mlp(tmp_path, "--iterations-per-run=3")
    assert record["iterations_per_run"] == 3 and record["timing_block"] == {"how": "given", "iterations": 3}
    assert record["metrics"]["per_iter_time"] == [t / 3 for t in record["metrics"]["total_time"]]


@pytest.mark.parametrize("text, value", [("auto", None), ("AUTO", None), ("7", 7)])
def test_the_flag_takes_auto_or_a_count(text, value):
    assert build_parser(all_suites()).options([f"--iterations-per-run={text}"]).iterations_per_run == value
