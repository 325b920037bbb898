"""One output tree (child/accuracy/output_tree.py): the CPU copy, the plain form for files, one path syntax and the
pairing,
as --verify, the harness's judgement and the golden check all read them (in process, real tensors)."""

import collections
import dataclasses

import pytest

torch = pytest.importorskip("torch")

from benchmarks.child.accuracy import check, eager_comparison, golden, output_tree  # noqa: E402

Pair = collections.namedtuple("Pair", "left right")


@dataclasses.dataclass
class Output:  # like a Hugging Face ModelOutput: a dataclass whose unset fields are None
    logits: torch.Tensor
    hidden: tuple
    attentions: object = None


class Opaque:
    __slots__ = ()  # no __dict__: an unknown leaf

    def __repr__(self):
        return "Opaque()"


def test_every_kind_of_output_is_copied_to_the_cpu_and_made_plain_for_files():
    import numpy as np

    weight = torch.nn.Parameter(torch.ones(4))
    sparse = torch.eye(3).to_sparse()
    tree = output_tree.to_cpu({"view": weight[:2], "sparse": sparse, "pair": Pair(weight[:1], 3),
                               "out": Output(torch.zeros(2), (torch.ones(1), 2)), "np": np.arange(3.0),
                               "opaque": Opaque(), "dtype": torch.float16})
    assert tree["view"].untyped_storage().data_ptr() != weight.untyped_storage().data_ptr()
    assert not tree["view"].requires_grad and tree["sparse"].layout == torch.strided
    assert torch.equal(tree["sparse"], torch.eye(3)) and torch.equal(tree["np"], torch.arange(3.0, dtype=torch.float64))
    assert isinstance(tree["pair"], output_tree.Node) and tree["pair"].sequence
    assert isinstance(tree["out"].fields["hidden"], tuple)  # a tuple stays a tuple
    flat = output_tree.plain(tree)
    assert isinstance(flat["pair"], tuple) and flat["pair"][1] == 3  # a namedtuple: a tuple of its fields
    assert set(flat["out"]) == {"logits", "hidden"}  # a dataclass: a dict, its None fields left out
    assert flat["opaque"] == "Opaque()" and flat["dtype"] == "torch.float16"  # unknown leaves: their repr
    assert golden.cpu_copy({"pair": Pair(weight, None)})["pair"][1] is None


def test_one_path_syntax_names_a_tensor_alike_in_every_check():
    t = torch.arange(6.0).reshape(2, 3)
    ref = {"x": [t, Output(t, (t, t))]}
    out = {"x": [t, Output(t, (t, t + 1))]}
    where = "output['x'][1].hidden[1]"
    assert set(output_tree.leaves(output_tree.to_cpu(ref), "output")) >= {where, "output['x'][0]"}
    upstream = eager_comparison.compare(output_tree.to_cpu(ref), output_tree.to_cpu(out))
    assert upstream.mismatches == [] and upstream.mean_rel_error > 0  # a numeric difference, not a structure one
    harness = check.judge(output_tree.to_cpu(out), output_tree.to_cpu(ref), None, 1e-4)
    assert not harness.passed and harness.failures[0].startswith(where)
    stored = golden.compare(golden.cpu_copy(ref), golden.cpu_copy(out), 1e-4, 1e-3)
    assert stored.status()[0] == "fail_golden" and stored.outside == 6
    paired = output_tree.pairs(output_tree.to_cpu(ref), output_tree.to_cpu({"x": [t]}), "output")
    assert paired.missing == ["output['x'][1].logits", "output['x'][1].hidden[0]", where, "output['x'][1].attentions"]
    assert paired.extra == [] and [p[0] for p in paired.matched] == ["output['x'][0]"]


def test_lists_and_tuples_are_both_sequences_for_every_check():
    t = torch.ones(2)
    as_tuple, as_list = output_tree.to_cpu((t, 1)), output_tree.to_cpu([t, 1])
    assert isinstance(as_tuple, tuple) and isinstance(as_list, list)
    assert eager_comparison.compare(as_tuple, as_list).identical
    assert check.judge(as_list, as_tuple, None, 1e-4).passed
    assert golden.compare(golden.cpu_copy((t, 1)), golden.cpu_copy([t, 1]), 0.0, 0.0).status() == ("pass", None)
