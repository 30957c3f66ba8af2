"""Lowerings of the reductions: MEAN, SUM, REDUCE_MAX, ARG_MAX, ARG_MIN.

MEAN follows BUILTIN_REF; int8 SUM follows ai-edge-litert's optimised kernel instead (BUILTIN_REF's
int8 SUM reads int8 as uint8; docs/codegen.md), whose float32 requantisation `sum_thresholds` turns
into integer thresholds the device binary-searches."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tinysched.codegen.cgen import c_list
from tinysched.codegen.context import KernelCall, LoweringContext
from tinysched.codegen.errors import Unsupported
from tinysched.codegen.lower_data import lower_copy
from tinysched.codegen.quant import INT8_MAX, INT8_MIN, quantize_multiplier
from tinysched.codegen.shapes import dims_strides, pad_left, rank_axis
from tinysched.codegen.table import lowering
from tinysched.model.graph import Operator


def _reduction_axes(ctx: LoweringContext, op: Operator) -> tuple[list[int], list[int]]:
    """(input shape, the sorted distinct axes of the constant second input, made non-negative)."""
    shape = list(ctx.tensor(op.inputs[0]).shape)
    rank = len(shape)
    axes = sorted({rank_axis(a, rank) for a in ctx.constant(op.inputs[1]).reshape(-1)})
    if any(not 0 <= a < rank for a in axes):
        raise Unsupported(f"axes {axes} for rank {rank}")
    return shape, axes


def _walk(shape: list[int], axes: list[int]) -> list[tuple[str, str]]:
    """The walk every reduction kernel takes: the kept dimensions with their input strides, then the
    reduced ones, each padded to the kernels' rank."""
    strides = dims_strides(shape)
    kept = [d for d in range(len(shape)) if d not in axes]
    return [
        ("out_dims", c_list(pad_left([shape[d] for d in kept], 1))),
        ("out_strides", c_list(pad_left([strides[d] for d in kept], 0))),
        ("red_dims", c_list(pad_left([shape[d] for d in axes], 1))),
        ("red_strides", c_list(pad_left([strides[d] for d in axes], 0))),
    ]


@lowering("MEAN")
def lower_mean(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    x, y = op.inputs[0], op.outputs[0]
    ctx.expect(x, "int8")
    ctx.expect(y, "int8")
    shape, axes = _reduction_axes(ctx, op)
    if not axes:
        lower_copy(ctx, op, call)
        return
    call.kernel, call.params_type = "ts_mean_s8", "ts_mean_s8_params"
    (si, zi), (so, zo) = ctx.quant(x), ctx.quant(y)
    count = math.prod(shape[a] for a in axes)
    if count >= 1 << 23:
        raise Unsupported(f"a mean over {count} elements")
    # reduce.cc: QuantizeMultiplier(input_scale / output_scale), then reference QuantizedMeanOrSum
    # folds 1/count in: multiplier << floor(log2(count)) / count, shift lowered to match.
    mult, shift = quantize_multiplier(float(si) / float(so))
    bits = min(count.bit_length() - 1, 32, 31 + shift)
    mult = (mult << bits) // count
    shift -= bits
    call.params = _walk(shape, axes) + [
        ("count", str(count)),
        ("input_zero_point", str(zi)),
        ("output_zero_point", str(zo)),
        ("multiplier", str(mult)),
        ("shift", str(shift)),
    ]
    call.args = [ctx.ptr(x), ctx.ptr(y, const=False)]


@lowering("REDUCE_MAX")
def lower_reduce_max(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    x, y = op.inputs[0], op.outputs[0]
    ctx.expect(x, "int8")
    ctx.expect(y, "int8")
    if ctx.quant(x) != ctx.quant(y):
        raise Unsupported("input and output quantised differently")
    shape, axes = _reduction_axes(ctx, op)
    if not axes:
        lower_copy(ctx, op, call)
        return
    call.kernel, call.params_type = "ts_reduce_max_s8", "ts_reduce_max_s8_params"
    call.params = _walk(shape, axes)
    call.args = [ctx.ptr(x), ctx.ptr(y, const=False)]


def sum_f32_requant(sums: Any, si: float, zi: int, so: float, zo: int, count: int) -> np.ndarray:
    """int8 SUM's requantisation in ai-edge-litert's optimised kernel (reduce.cc EvalSum ->
    optimized_ops::QuantizedMeanOrSum, compute_sum): on the int32 sum of the raw int8 values,
    float32 scale = in_scale / out_scale, bias = (float)-in_zp * scale * count,
    out = clamp(int32(round_half_away(sum * scale + bias)) + out_zp), each float32 operation rounded
    on its own (the shipped x86-64 build does not fuse the multiply-add: tests/test_sum.py checks
    sums where a fused one would differ). Raises if the int32 conversion would overflow."""
    f32 = np.float32
    scale = f32(f32(si) / f32(so))
    bias = f32(f32(f32(-zi) * scale) * f32(count))
    v = (np.asarray(sums, dtype=np.int64).astype(np.float32) * scale).astype(np.float32) + bias
    v = np.asarray(v, dtype=np.float32).astype(np.float64)
    r = np.sign(v) * np.floor(np.abs(v) + 0.5)  # std::round on a float32 value, exact in float64
    if np.any(np.abs(r) + abs(zo) >= 2**31):
        raise Unsupported("a SUM whose rescaled sum overflows int32")
    return np.clip(r.astype(np.int64) + zo, INT8_MIN, INT8_MAX)


def sum_thresholds(si: float, zi: int, so: float, zo: int, count: int) -> tuple[int, list[int]]:
    """`sum_f32_requant` as integers: it is a non-decreasing function of the sum (every step is
    monotonic and the scale is positive), so over the reachable sums [-128 * count, 127 * count] it is
    `base + (number of thresholds <= sum)`, threshold k being the least sum whose output exceeds
    base + k. Exact whatever the device's floating point (or lack of it)."""
    lo, hi = INT8_MIN * count, INT8_MAX * count
    base, top = (int(v) for v in sum_f32_requant([lo, hi], si, zi, so, zo, count))
    levels = np.arange(base + 1, top + 1, dtype=np.int64)
    left = np.full(levels.shape, lo, dtype=np.int64)  # output(left) < level
    right = np.full(levels.shape, hi, dtype=np.int64)  # output(right) >= level
    while np.any(right - left > 1):
        mid = (left + right) // 2
        above = sum_f32_requant(mid, si, zi, so, zo, count) >= levels
        right = np.where(above, mid, right)
        left = np.where(above, left, mid)
    return base, [int(t) for t in right]


@lowering("SUM")
def lower_sum(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    """int8 SUM as ai-edge-litert's optimised kernel computes it (see docs/codegen.md on why that,
    not BUILTIN_REF, is the reference): the walk of ts_mean_s8, then `sum_thresholds`."""
    x, y = op.inputs[0], op.outputs[0]
    ctx.expect(x, "int8")
    ctx.expect(y, "int8")
    (si, zi), (so, zo) = ctx.quant(x), ctx.quant(y)
    shape, axes = _reduction_axes(ctx, op)
    count = math.prod(shape[a] for a in axes)
    if not 1 <= count < 1 << 23:
        raise Unsupported(f"a sum over {count} elements")
    base, thresholds = sum_thresholds(float(si), int(zi), float(so), int(zo), count)
    call.kernel, call.params_type = "ts_sum_s8", "ts_sum_s8_params"
    table = ctx.array(
        call, "thresholds", "int32_t", np.asarray(thresholds or [0], dtype=np.int32), "least sum of each step"
    )
    call.params = _walk(shape, axes) + [
        ("count", str(count)),
        ("base", str(base)),
        ("n_thresholds", str(len(thresholds))),
        ("thresholds", table),
    ]
    call.args = [ctx.ptr(x), ctx.ptr(y, const=False)]


def _arg_minmax(ctx: LoweringContext, op: Operator, call: KernelCall, is_max: bool) -> None:
    x, y = op.inputs[0], op.outputs[0]
    ctx.expect(x, "int8")
    ctx.expect(y, "int32", "int64")
    shape = list(ctx.tensor(x).shape)
    axis = rank_axis(int(ctx.constant(op.inputs[1]).reshape(-1)[0]), len(shape))
    if not 0 <= axis < len(shape):
        raise Unsupported(f"axis {axis} for rank {len(shape)}")
    call.kernel, call.params_type = "ts_arg_minmax_s8", "ts_arg_minmax_s8_params"
    call.params = [
        ("outer", str(math.prod(shape[:axis]))),
        ("axis_size", str(shape[axis])),
        ("inner", str(math.prod(shape[axis + 1 :]))),
        ("is_max", "1" if is_max else "0"),
        ("output_is_int64", "1" if ctx.tensor(y).dtype == "int64" else "0"),
    ]
    call.args = [ctx.ptr(x), ctx.ptr(y, const=False)]


@lowering("ARG_MAX")
def lower_arg_max(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    _arg_minmax(ctx, op, call, True)


@lowering("ARG_MIN")
def lower_arg_min(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    _arg_minmax(ctx, op, call, False)
