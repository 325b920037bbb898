"""Tensors rebuilt in their template's layout: an input made anew (--randomize-input's fresh values, --dynamic's
resized batch, a golden entry's stored inputs) lies in memory as the template does, so --channels-last inputs stay
channels-last whatever rebuilds them. The values are drawn or read as before, then copied in, so --verify and golden
files compare the same numbers. Child only: torch inside the functions."""

from __future__ import annotations


def dimension_order(template) -> list:
    """The template's dimensions from the outermost in memory to the innermost (its strides, largest first; a tie,
    as size-1 dimensions make, keeps the logical order)."""
    return sorted(range(template.dim()), key=lambda d: (-template.stride(d), d))


def empty_in_layout(template, shape):
    """An uninitialised tensor of `shape`, the template's dtype and device, its dimensions in the template's
    memory order (a channels-last template gives a channels-last tensor; a contiguous one, a contiguous one)."""
    import torch

    order = dimension_order(template)
    base = torch.empty([shape[d] for d in order], dtype=template.dtype, device=template.device)
    return base.permute([order.index(d) for d in range(len(order))])


def like(template, values):
    """`values` (any layout, dtype or device) copied into a tensor of the template's layout, dtype and device, with
    its requires_grad."""
    out = empty_in_layout(template, tuple(values.shape))
    out.copy_(values)
    return out.requires_grad_(template.requires_grad)


def is_channels_last(tensor) -> bool:
    """Whether a 4-D tensor lies in channels-last order (N, H, W, C innermost), or a 5-D one in channels-last-3d."""
    import torch

    formats = {4: torch.channels_last, 5: torch.channels_last_3d}
    return tensor.dim() in formats and tensor.is_contiguous(memory_format=formats[tensor.dim()])
