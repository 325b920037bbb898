"""Inputs rebuilt in their template's layout (child/tensor_layout.py): --randomize-input's fresh values,
--dynamic's resized batches and a golden entry's stored inputs keep a channels-last template channels-last (and a
contiguous one contiguous), its dtype, device and requires_grad, with the values drawn as before, so --verify and
golden files compare the same numbers."""

import pytest

torch = pytest.importorskip("torch")

from benchmarks.child import inputs_outputs, tensor_layout  # noqa: E402
from benchmarks.child.accuracy import golden  # noqa: E402
from benchmarks.features.dynamic import child as dynamic_child  # noqa: E402


def channels_last(*shape, dtype=torch.float32):
    return torch.randn(*shape).to(dtype).contiguous(memory_format=torch.channels_last)


def test_like_and_empty_in_layout_keep_the_templates_memory_order():
    template = channels_last(2, 3, 4, 5)
    assert tensor_layout.is_channels_last(template) and not template.is_contiguous()
    grown = tensor_layout.empty_in_layout(template, (6, 3, 4, 5))
    assert grown.shape == (6, 3, 4, 5) and tensor_layout.is_channels_last(grown)
    values = torch.arange(120.0).reshape(2, 3, 4, 5)
    copied = tensor_layout.like(template.requires_grad_(), values)
    assert torch.equal(copied, values) and tensor_layout.is_channels_last(copied) and copied.requires_grad
    plain = tensor_layout.like(torch.zeros(2, 3, dtype=torch.bfloat16), torch.ones(2, 3))
    assert plain.is_contiguous() and plain.dtype == torch.bfloat16
    assert tensor_layout.is_channels_last(torch.zeros(1, 2, 3, 4, 5).contiguous(memory_format=torch.channels_last_3d))


def test_randomized_inputs_stay_channels_last_with_the_values_drawn_as_before():
    template = channels_last(2, 3, 4, 4, dtype=torch.bfloat16)
    fresh = inputs_outputs.randomized((template, torch.arange(3)), torch.Generator().manual_seed(7))
    assert tensor_layout.is_channels_last(fresh[0]) and fresh[0].dtype == torch.bfloat16
    drawn = torch.randn((2, 3, 4, 4), generator=torch.Generator().manual_seed(7)).to(torch.bfloat16)
    assert torch.equal(fresh[0], drawn)  # the same numbers as a contiguous template gets
    assert torch.equal(fresh[1], torch.arange(3))  # integer inputs kept


def test_resized_batches_stay_channels_last_with_the_templates_rows():
    template = channels_last(4, 3, 2, 2)
    for rows in (2, 5, 9):
        [grown] = dynamic_child.resized([template], 4, rows)
        assert grown.shape[0] == rows and tensor_layout.is_channels_last(grown)
        assert torch.equal(grown, template.repeat(3, 1, 1, 1)[:rows])
    contiguous = torch.randn(4, 8)
    assert dynamic_child.resized(contiguous, 4, 5).is_contiguous()


def test_golden_inputs_take_the_built_inputs_layout():
    built = ({"x": channels_last(2, 3, 4, 4)}, torch.zeros(2, 8))
    stored = ({"x": torch.randn(2, 3, 4, 4)}, torch.ones(2, 8))
    placed = golden.stored_in_place_of(built, stored, "cpu")
    assert tensor_layout.is_channels_last(placed[0]["x"]) and torch.equal(placed[0]["x"], stored[0]["x"])
    assert torch.equal(placed[1], stored[1])
    [extra] = golden.stored_in_place_of((), (torch.ones(3),), "cpu")  # nothing built there: the stored one
    assert torch.equal(extra, torch.ones(3))
