"""TFLite's resize coordinate maps: which source rows and columns each output row and column of a
RESIZE_NEAREST_NEIGHBOR or RESIZE_BILINEAR reads.

The code generator turns them into its kernels' tables (tinysched.codegen.lower_data), the streamed
stages into the rows a resize reads for each output row (tinysched.memory.stream.row_window): one
formula for both, so a stage's window holds exactly the rows the kernel reads."""

from __future__ import annotations

import math

import numpy as np

from tinysched.model.graph import Graph, Operator
from tinysched.model.uint8 import UINT8_ROUNDING

__all__ = ["RESIZE_OPS", "bilinear_float_map", "bilinear_map", "nearest_map", "resize_source_rows"]

RESIZE_OPS = ("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR")


def _round_half_away(x: float) -> float:
    """std::round: the nearest integer, halves away from zero."""
    return math.copysign(math.floor(abs(x) + 0.5), x)


def _trunc_div(a: int, b: int) -> int:
    """C integer division (toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def nearest_map(in_size: int, out_size: int, align_corners: bool, half_pixel: bool) -> list[int]:
    """resize_nearest_neighbor.h GetNearestNeighbor for every output coordinate (float32 arithmetic)."""
    f = np.float32
    aligned = align_corners and out_size > 1
    scale = f(in_size - 1) / f(out_size - 1) if aligned else f(in_size) / f(out_size)
    offset = f(0.5) if half_pixel else f(0.0)
    out = []
    for v in range(out_size):
        value = (f(v) + offset) * scale
        r = int(_round_half_away(float(value))) if align_corners else math.floor(float(value))
        r = min(r, in_size - 1)
        out.append(max(0, r) if half_pixel else r)
    return out


def bilinear_map(in_size: int, out_size: int, align_corners: bool, half_pixel: bool) -> tuple[list[int], ...]:
    """resize_bilinear.h (integer version): per output coordinate the two source indices and the
    weight of the second, in 1/1024."""
    scale = ((1 << 10) * in_size + out_size // 2) // out_size
    if align_corners and out_size > 1:
        scale = ((1 << 10) * (in_size - 1) + (out_size - 1) // 2) // (out_size - 1)
    lo, hi, weight = [], [], []
    for v in range(out_size):
        scaled = v * scale + scale // 2 - (1 << 9) if half_pixel else v * scale
        lower = max(_trunc_div(scaled, 1 << 10), 0)
        upper = min(_trunc_div(scaled + (1 << 10) - 1, 1 << 10), in_size - 1)
        lo.append(lower)
        hi.append(upper)
        weight.append(scaled - (1 << 10) * lower)
    return lo, hi, weight


def bilinear_float_map(
    in_size: int, out_size: int, align_corners: bool, half_pixel: bool
) -> tuple[list[int], list[int], list[float]]:
    """resize_bilinear.h's generic (float) version, which TFLite runs for uint8: per output coordinate
    the two source indices (floor and ceil of the scaled coordinate, clipped) and the scaled
    coordinate minus the first, all in float32 as ComputeInterpolationValues computes them."""
    f = np.float32
    scale = f(in_size) / f(out_size)
    if align_corners and out_size > 1:
        scale = f(in_size - 1) / f(out_size - 1)
    lo, hi, frac = [], [], []
    for v in range(out_size):
        scaled = (f(v) + f(0.5)) * scale - f(0.5) if half_pixel else f(v) * scale
        lower = max(int(math.floor(float(scaled))), 0)
        lo.append(lower)
        hi.append(min(int(math.ceil(float(scaled))), in_size - 1))
        frac.append(float(f(scaled - f(lower))))
    return lo, hi, frac


def resize_source_rows(graph: Graph, op: Operator) -> tuple[tuple[int, int], ...] | None:
    """Per output row of a 4-D (NHWC) resize, the input rows [lo, hi) it reads (bilinear: its two
    source rows, nearest: its one); None for any other operator."""
    if op.opcode not in RESIZE_OPS or not op.inputs or not op.outputs:
        return None
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if len(x.shape) != 4 or len(y.shape) != 4:
        return None
    ih, oh = int(x.shape[1]), int(y.shape[1])
    align = bool(op.options.get("align_corners", False))
    half = bool(op.options.get("half_pixel_centers", False))
    if op.opcode == "RESIZE_NEAREST_NEIGHBOR":
        rows = nearest_map(ih, oh, align, half)
        return tuple((r, r + 1) for r in rows)
    if op.options.get(UINT8_ROUNDING):  # a legacy uint8 model's resize (tinysched.model.uint8)
        lo, hi, _ = bilinear_float_map(ih, oh, align, half)
    else:
        lo, hi, _ = bilinear_map(ih, oh, align, half)
    return tuple((a, max(a, b) + 1) for a, b in zip(lo, hi, strict=True))
