"""A config's work counted (child/work_count.py) and the machine's ceilings kept (child/ceilings.py), in process on
the real suites' models: the microbench operators' counts are their exact ones, a training step adds its gradients
and the optimizer's traffic, the count leaves the module as it found it, a model the counter can't run says why; the
ceilings are measured once per key and cached, measured again when beaten (the better of each kept), and left alone when caching is off. No timing
thresholds here (scripts/bench/roofline.py holds those)."""

import os

import pytest
import torch

from benchmarks.child import ceilings, measured_loop, work_count
from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.plumbing import user_cache
from benchmarks.suites import BenchmarkModel, load_suite, model_config


def experiment(test="eval", **extra):
    return ExperimentConfig.from_dict({"accelerator": "cpu", "xla": None, "dynamo": None, "test": test, **extra})


def built(suite_name, name, exp):
    bm = load_suite(suite_name).build(model_config(suite_name, name), exp, "cpu", None)
    return bm, bm.module, tuple(bm.example_inputs), dict(bm.example_kwargs)


@pytest.mark.parametrize("name, flops", [("matmul-float32-64x32x16", 2 * 64 * 32 * 16),
                                         ("add-float32-8x16x32", 8 * 16 * 32),
                                         ("linear_relu-bfloat16-16x32x8", 2 * 16 * 32 * 8 + 2 * 16 * 8)])
def test_a_microbench_operators_count_is_its_exact_one(name, flops):
    exp = experiment(dtype=name.split("-")[1])
    bm, module, args, kwargs = built("microbench", name, exp)
    work = work_count.count_iteration(bm, exp, module, args, kwargs)
    assert work["flops"] == flops
    # the compulsory bytes counted from the tensors equal the operator's own count (each element once)
    assert work["bytes"] == bm.info["bytes"]


def test_the_counter_sees_a_matmuls_flops_itself():
    exp = experiment(dtype="float32")
    bm, module, args, kwargs = built("microbench", "matmul-float32-64x32x16", exp)
    bm.info.pop("flops")
    assert work_count.count_iteration(bm, exp, module, args, kwargs)["flops"] == 2 * 64 * 32 * 16


@pytest.mark.parametrize("name", ["mlp", "cnn", "multi_output"])
def test_a_training_step_counts_backward_and_the_optimizers_traffic(name):
    exp_eval, exp_train = experiment("eval"), experiment("train")
    bm, module, args, kwargs = built("dummy", name, exp_eval)
    evaluated = work_count.count_iteration(bm, exp_eval, module, args, kwargs)
    optimizer = torch.optim.SGD(module.parameters(), lr=0.01, momentum=0.9)
    measured_loop.make_step(bm, exp_train, module, args, kwargs)  # train mode, as the config's step sets it
    trained = work_count.count_iteration(bm, exp_train, module, args, kwargs, optimizer)
    params = sum(p.nbytes for p in module.parameters())
    assert trained["flops"] > evaluated["flops"] > 0  # backward's matmuls and convolutions
    detail = trained["bytes_detail"]
    assert detail["gradients"] == 2 * params and detail["parameters_written"] == params
    assert detail["optimizer_state"] == 0  # SGD's momentum buffers exist only after a step
    measured_loop.reduce_to_scalar(module(*args, **kwargs)).backward()
    optimizer.step()  # momentum buffers now: the optimizer's state
    again = work_count.count_iteration(bm, exp_train, module, args, kwargs, optimizer)
    assert again["bytes_detail"]["optimizer_state"] == 2 * params  # read and written once each
    assert trained["bytes"] == sum(detail.values())


def test_the_count_leaves_the_module_as_it_found_it():
    exp = experiment("train")
    bm, module, args, kwargs = built("dummy", "cnn", exp)
    module.train()
    grads_before = [p.grad for p in module.parameters()]
    buffers_before = [b.clone() for b in module.buffers()]
    params_before = [p.detach().clone() for p in module.parameters()]
    rng_before = torch.get_rng_state()
    work_count.count_iteration(bm, exp, module, args, kwargs, torch.optim.SGD(module.parameters(), lr=0.1))
    assert [p.grad for p in module.parameters()] == grads_before  # None, as before
    assert all(torch.equal(a, b) for a, b in zip(module.buffers(), buffers_before))  # BatchNorm's running stats
    assert all(torch.equal(a, b) for a, b in zip(module.parameters(), params_before))  # no optimizer step ran
    assert torch.equal(torch.get_rng_state(), rng_before)


class Opaque(torch.nn.Module):
    def forward(self, x):
        if isinstance(torch.utils._python_dispatch._get_current_dispatch_mode(), torch.utils._python_dispatch.TorchDispatchMode):
            raise RuntimeError("this model refuses to be watched")
        return x * 2


def test_a_model_the_counter_cannot_run_says_why():
    exp = experiment()
    bm = BenchmarkModel(module=Opaque(), example_inputs=(torch.ones(4),), batch_size=4)
    with pytest.raises(work_count.CannotCount, match="refuses to be watched"):
        work_count.count_iteration(bm, exp, bm.module, (torch.ones(4),), {})
    with pytest.raises(work_count.CannotCount, match="XLA"):
        work_count.count_iteration(bm, experiment(xla="PJRT"), bm.module, (torch.ones(4),), {})


def test_the_ceilings_are_measured_once_per_key_and_measured_again_when_beaten(tmp_path, monkeypatch):
    monkeypatch.setenv(user_cache.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(ceilings, "GEMM_SIZES", (64, 128))  # the keying and caching are tested, not the machine
    monkeypatch.setattr(ceilings, "MIN_STREAM_BYTES", 1 << 20)
    monkeypatch.setattr(ceilings, "stream_array_bytes", lambda device, llc: 1 << 20)
    first = ceilings.for_config(experiment())
    # bfloat16 is measured either way: a roof of its own, or (slower than float32 here) set aside
    measured = {**first["flops_per_second"], **(first.get("slower_than_float32") or {})}
    assert first["cached"] is False and set(measured) == {"float32", "bfloat16"}
    assert first["bytes_per_second"] > 0 and first["threads"] == torch.get_num_threads()
    second = ceilings.for_config(experiment())
    assert second["cached"] is True and second["flops_per_second"] == first["flops_per_second"]
    threads = torch.get_num_threads()
    try:  # another thread count: another key, measured anew
        torch.set_num_threads(1)
        assert ceilings.for_config(experiment())["cached"] is False
    finally:
        torch.set_num_threads(threads)
    assert len(list(tmp_path.glob("ceilings-*.json"))) == 2
    # beaten: measured again, each figure the better of the two, and cached so
    high = {**second, "flops_per_second": {"float32": 1e18, "bfloat16": 1.0}, "bytes_per_second": 1.0}
    again = ceilings.remeasured(experiment(), high)
    assert again["remeasured"] is True and again["flops_per_second"]["float32"] == 1e18
    # bfloat16, now slower than that float32, is no roof of its own: kept aside, measured again all the same
    assert again["slower_than_float32"]["bfloat16"] > 1.0 and again["bytes_per_second"] > 1.0
    assert ceilings.for_config(experiment())["flops_per_second"]["float32"] == 1e18
    assert ceilings.for_config(experiment(xla="PJRT"))["why_not"].startswith("XLA")


def test_no_cache_when_caching_is_off(tmp_path, monkeypatch):
    monkeypatch.setenv(user_cache.CACHE_ENV, "off")
    monkeypatch.setattr(ceilings, "GEMM_SIZES", (64,))
    monkeypatch.setattr(ceilings, "stream_array_bytes", lambda device, llc: 1 << 20)
    found = ceilings.for_config(experiment())
    assert found["cached"] is False and found["path"] is None


def test_a_config_that_beats_its_ceilings_has_them_measured_again_and_its_fraction(tmp_path, monkeypatch):
    import types

    monkeypatch.setenv(user_cache.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(ceilings, "stream_array_bytes", lambda device, llc: 4 << 20)
    exp = experiment(dtype="float32")
    bm, module, args, kwargs = built("microbench", "matmul-float32-256x256x256", exp)
    too_low = {"flops_per_second": {"float32": 1e6, "bfloat16": 1e6}, "bytes_per_second": 1e3,
               "cache_bytes_per_second": 1e3, "last_level_cache_bytes": 1 << 30, "path": None}
    record = {"environment": {"ceilings": too_low}, "metrics": {"per_iter_time": [0.5, 0.5, 0.5]}}
    run = types.SimpleNamespace(experiment=exp, record=record, bm=bm, module=module, args=args, kwargs=kwargs,
                                step=None)
    roofline = work_count.roofline(run)
    assert record["environment"]["ceilings"]["remeasured"] is True
    assert 0 < roofline["fraction_of_attainable"] <= 1, roofline
    assert record["metrics"]["fraction_of_attainable"] == [roofline["fraction_of_attainable"]] * 3


class ReadsAValue(torch.nn.Module):
    """A model fake tensors can't run: it reads a tensor's value."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.linear(x) * float(x.sum().item())


def test_the_count_runs_on_fake_tensors_and_for_real_where_they_cant():
    exp = experiment("train")
    bm, module, args, kwargs = built("dummy", "cnn", exp)
    module.train()
    assert work_count.count_iteration(bm, exp, module, args, kwargs)["how"].endswith("counted on fake tensors")
    exp = experiment()
    bm = BenchmarkModel(module=ReadsAValue(), example_inputs=(torch.ones(2, 4),), batch_size=2)
    work = work_count.count_iteration(bm, exp, bm.module, (torch.ones(2, 4),), {})
    assert work["how"].endswith("counted on a real eager iteration") and work["flops"] == 2 * 2 * 4 * 4


class TinyLM(torch.nn.Module):
    def __init__(self, tied: bool):
        super().__init__()
        self.embed = torch.nn.Embedding(100, 8)
        self.head = torch.nn.Linear(8, 100, bias=False)
        if tied:
            self.head.weight = self.embed.weight

    def get_input_embeddings(self):
        return self.embed


def test_a_decode_step_reads_an_untied_embedding_table_by_the_row():
    assert work_count.lookup_table_bytes(TinyLM(tied=False)) == 100 * 8 * 4  # left out of the weights read
    assert work_count.lookup_table_bytes(TinyLM(tied=True)) == 0  # read whole, as the output layer's weight
