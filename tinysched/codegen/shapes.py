"""Shape arithmetic shared by the lowerings: row-major strides, padding to the kernels' fixed rank."""

from __future__ import annotations

from collections.abc import Sequence

from tinysched.codegen.errors import Unsupported

# The kernels that walk tensors of any rank take dimensions and strides padded to this rank.
MAX_DIMS = 6


def dims_strides(shape: Sequence[int]) -> list[int]:
    """Row-major element strides of `shape`."""
    strides, stride = [], 1
    for d in reversed(shape):
        strides.append(stride)
        stride *= d
    return strides[::-1]


def pad_left(values: Sequence[int], fill: int) -> list[int]:
    """`values` padded at the front with `fill` to MAX_DIMS entries (outer dimensions first)."""
    values = list(values)
    if len(values) > MAX_DIMS:
        raise Unsupported(f"rank {len(values)} (the kernels handle up to {MAX_DIMS})")
    return [fill] * (MAX_DIMS - len(values)) + values


def rank_axis(axis: int, rank: int) -> int:
    """A TFLite axis (negative counts from the end) as a non-negative one."""
    axis = int(axis)
    return axis + rank if axis < 0 else axis
