"""Attention counted (child/flop_formulas.py through child/work_count.py): a tiny module calling
F.scaled_dot_product_attention counts exactly the hand formula, with and without is_causal, forward and training
step; a suite transformer (DistilBERT from its config) gains exactly its attention over torch's own count; an operator
no formula covers is named in `how`, never left out silently."""

import pytest
import torch
import torch.nn.functional as F

from benchmarks.child import flop_formulas, work_count
from benchmarks.config.experiment_config import ExperimentConfig
from benchmarks.suites import BenchmarkModel, load_suite, model_config

BATCH, HEADS, LENGTH, HEAD_DIM = 2, 4, 8, 4
WIDTH = HEADS * HEAD_DIM


def experiment(test="eval"):
    return ExperimentConfig.from_dict({"accelerator": "cpu", "xla": None, "dynamo": None, "test": test})


class SelfAttention(torch.nn.Module):
    """One projection, then scaled-dot-product attention of the result with itself."""

    def __init__(self, causal: bool):
        super().__init__()
        self.causal = causal
        self.project = torch.nn.Linear(WIDTH, WIDTH, bias=False)

    def forward(self, x):
        q = self.project(x).view(BATCH, LENGTH, HEADS, HEAD_DIM).transpose(1, 2)
        return F.scaled_dot_product_attention(q, q, q, is_causal=self.causal)


def hand_count(causal: bool, train: bool) -> int:
    """The projection (2·tokens·in·out; backward: the input's and the weight's gradients, as much again each) and the
    attention: 4·B·H·L²·D forward, 10·B·H·L²·D backward, causal half."""
    linear = 2 * BATCH * LENGTH * WIDTH * WIDTH
    forward = 4 * BATCH * HEADS * LENGTH * LENGTH * HEAD_DIM
    backward = 10 * BATCH * HEADS * LENGTH * LENGTH * HEAD_DIM
    attention = (forward + (backward if train else 0)) // (2 if causal else 1)
    return linear * (3 if train else 1) + attention


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("test", ["eval", "train"])
def test_scaled_dot_product_attention_counts_the_hand_formula(causal, test):
    exp = experiment(test)
    module = SelfAttention(causal)
    x = torch.randn(BATCH, LENGTH, WIDTH, requires_grad=test == "train")  # its gradient: the projection's backward
    bm = BenchmarkModel(module=module, example_inputs=(x,), batch_size=BATCH, loss_fn=lambda out: out.sum())
    work = work_count.count_iteration(bm, exp, module, (x,), {})
    assert work["flops"] == hand_count(causal, test == "train")
    assert "not counted" not in work["how"]


def test_the_cpu_kernel_is_the_one_counted():
    """The CPU's fused kernel runs (the math fallback's bmm calls would be counted by torch anyway)."""
    from torch.utils.flop_counter import FlopCounterMode

    q = torch.randn(BATCH, HEADS, LENGTH, HEAD_DIM)
    counter = FlopCounterMode(display=False, custom_mapping=flop_formulas.custom_mapping())
    with counter:
        F.scaled_dot_product_attention(q, q, q)
    ops = {str(op) for op in counter.get_flop_counts()["Global"]}
    assert ops == {"aten._scaled_dot_product_flash_attention_for_cpu"}


def test_a_suite_transformer_gains_exactly_its_attention():
    """DistilBERT built from its config (small): our count minus torch's own is the hand formula of its layers'
    attention, 4·B·H·L²·D each."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils.flop_counter import FlopCounterMode

    params = {"n_layers": 2, "dim": 32, "n_heads": 4, "hidden_dim": 64, "seq_len": 16}
    exp = ExperimentConfig.from_dict({"accelerator": "cpu", "xla": None, "dynamo": None, "test": "eval",
                                      "batch_size": 2})
    pytest.importorskip("transformers")
    bm = load_suite("huggingface").build(model_config("huggingface", "DistilBertForMaskedLM", params=params),
                                         exp, "cpu", None)
    module, args, kwargs = bm.module.eval(), tuple(bm.example_inputs), dict(bm.example_kwargs)
    torchs = FlopCounterMode(display=False)
    with FakeTensorMode(allow_non_fake_inputs=True), torchs, torch.no_grad():
        module(*args, **kwargs)
    ours = work_count.count_iteration(bm, exp, module, args, kwargs)["flops"]
    assert ours - torchs.get_total_flops() == 2 * 4 * 2 * 4 * 16 * 16 * (32 // 4)


@torch.library.custom_op("ptbench_test::scaled_product", mutates_args=())
def scaled_product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a @ b * 2


@scaled_product.register_fake
def _(a, b):
    return a.new_empty(a.shape[0], b.shape[1])


class CustomKernel(torch.nn.Module):
    def forward(self, x):
        return scaled_product(x, x) + torch.ops.aten._int_mm(x.to(torch.int8).repeat(16, 8), x.to(torch.int8)
                                                           .repeat(8, 8)).float()[:4, :4]


def test_what_no_formula_counts_is_named_in_how():
    exp = experiment()
    x = torch.ones(4, 4)
    bm = BenchmarkModel(module=CustomKernel(), example_inputs=(x,), batch_size=4)
    how = work_count.count_iteration(bm, exp, bm.module, (x,), {})["how"]
    assert "not counted (no FLOP formula): aten._int_mm, ptbench_test.scaled_product" in how
