"""Lowerings of the broadcasting binary operators: ADD, SUB, MUL, MAXIMUM, MINIMUM, PRELU,
SQUARED_DIFFERENCE.

Their kernels walk the broadcast output shape (`ts_broadcast_shape`: dimensions padded to 6 and
each input's strides, 0 along a broadcast dimension). SUB is ADD with the second input's multiplier
negated (TFLite's rounding is symmetric, so requant(x, -m) == -requant(x, m) exactly)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tinysched.codegen.cgen import c_list
from tinysched.codegen.context import KernelCall, LoweringContext
from tinysched.codegen.errors import Unsupported
from tinysched.codegen.quant import activation_range, f32_ratio, quantize_multiplier
from tinysched.codegen.shapes import dims_strides, pad_left
from tinysched.codegen.table import lowering
from tinysched.graph import Operator


def _broadcast(ctx: LoweringContext, a: int, b: int, y: int) -> str:
    sa, sb, sy = ctx.tensor(a).shape, ctx.tensor(b).shape, ctx.tensor(y).shape
    try:
        shape = np.broadcast_shapes(tuple(sa), tuple(sb))
    except ValueError:
        raise Unsupported(f"shapes {list(sa)} and {list(sb)} do not broadcast") from None
    if tuple(shape) != tuple(sy) and math.prod(shape) != math.prod(sy):
        raise Unsupported(f"output shape {list(sy)} is not the broadcast shape {list(shape)}")
    dims = pad_left(shape, 1)

    def strides(s: Sequence[int]) -> list[int]:
        padded = pad_left(s, 1)
        return [0 if padded[d] == 1 and dims[d] != 1 else st for d, st in enumerate(dims_strides(padded))]

    return (
        "{ .dims = "
        + c_list(dims)
        + ", .in1_strides = "
        + c_list(strides(sa))
        + ", .in2_strides = "
        + c_list(strides(sb))
        + " }"
    )


@lowering("ADD")
def lower_add(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    call.kernel, call.params_type = "ts_add_s8", "ts_add_s8_params"
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    for t in (a, b, y):
        ctx.expect(t, "int8")
    (s1, z1), (s2, z2), (so, zo) = ctx.quant(a), ctx.quant(b), ctx.quant(y)
    left_shift = 20
    twice_max = 2 * float(max(np.float32(s1), np.float32(s2)))
    m1, sh1 = quantize_multiplier(float(s1) / twice_max)
    m2, sh2 = quantize_multiplier(float(s2) / twice_max)
    mo, sho = quantize_multiplier(twice_max / ((1 << left_shift) * float(so)))
    if sh1 > 0 or sh2 > 0 or sho > 0:
        raise Unsupported("an ADD rescale of 1 or more")
    act_min, act_max = activation_range(op.options.get("fused_activation_function", "NONE"), so, zo)
    call.params = [
        ("shape", _broadcast(ctx, a, b, y)),
        ("input1_offset", str(-z1)),
        ("input2_offset", str(-z2)),
        ("output_offset", str(zo)),
        ("left_shift", str(left_shift)),
        ("input1_multiplier", str(m1)),
        ("input1_shift", str(sh1)),
        ("input2_multiplier", str(m2)),
        ("input2_shift", str(sh2)),
        ("output_multiplier", str(mo)),
        ("output_shift", str(sho)),
        ("act_min", str(act_min)),
        ("act_max", str(act_max)),
    ]
    call.args = [ctx.ptr(a), ctx.ptr(b), ctx.ptr(y, const=False)]


@lowering("SUB")
def lower_sub(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    """SUB int8 = ADD with input 2's multiplier negated (sub.cc uses ADD's rescaling, left shift 20)."""
    lower_add(ctx, op, call)
    params = dict(call.params)
    params["input2_multiplier"] = str(-int(params["input2_multiplier"]))
    call.params = list(params.items())


@lowering("MUL")
def lower_mul(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    call.kernel, call.params_type = "ts_mul_s8", "ts_mul_s8_params"
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    for t in (a, b, y):
        ctx.expect(t, "int8")
    (s1, z1), (s2, z2), (so, zo) = ctx.quant(a), ctx.quant(b), ctx.quant(y)
    mult, shift = quantize_multiplier(float(s1) * float(s2) / float(so))
    act_min, act_max = activation_range(op.options.get("fused_activation_function", "NONE"), so, zo)
    call.params = [
        ("shape", _broadcast(ctx, a, b, y)),
        ("input1_offset", str(-z1)),
        ("input2_offset", str(-z2)),
        ("output_offset", str(zo)),
        ("output_multiplier", str(mult)),
        ("output_shift", str(shift)),
        ("act_min", str(act_min)),
        ("act_max", str(act_max)),
    ]
    call.args = [ctx.ptr(a), ctx.ptr(b), ctx.ptr(y, const=False)]


def _minmax(ctx: LoweringContext, op: Operator, call: KernelCall, is_max: bool) -> None:
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    for t in (a, b, y):
        ctx.expect(t, "int8")
    call.kernel, call.params_type = "ts_minmax_s8", "ts_minmax_s8_params"
    call.params = [("shape", _broadcast(ctx, a, b, y)), ("is_max", "1" if is_max else "0")]
    call.args = [ctx.ptr(a), ctx.ptr(b), ctx.ptr(y, const=False)]


@lowering("MAXIMUM")
def lower_maximum(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    _minmax(ctx, op, call, True)


@lowering("MINIMUM")
def lower_minimum(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    _minmax(ctx, op, call, False)


@lowering("PRELU")
def lower_prelu(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    x, alpha, y = op.inputs[0], op.inputs[1], op.outputs[0]
    for t in (x, alpha, y):
        ctx.expect(t, "int8")
    (si, zi), (sa, za), (so, zo) = ctx.quant(x), ctx.quant(alpha), ctx.quant(y)
    # activations.cc PreluPrepare: the scale products in float32, then QuantizeMultiplier.
    m1, s1 = quantize_multiplier(f32_ratio(si, so))
    m2, s2 = quantize_multiplier(float(np.float32(np.float32(si) * np.float32(sa)) / np.float32(so)))
    call.kernel, call.params_type = "ts_prelu_s8", "ts_prelu_s8_params"
    call.params = [
        ("shape", _broadcast(ctx, x, alpha, y)),
        ("input_offset", str(-zi)),
        ("alpha_offset", str(-za)),
        ("output_offset", str(zo)),
        ("multiplier_pos", str(m1)),
        ("shift_pos", str(s1)),
        ("multiplier_neg", str(m2)),
        ("shift_neg", str(s2)),
    ]
    call.args = [ctx.ptr(x), ctx.ptr(alpha), ctx.ptr(y, const=False)]


@lowering("SQUARED_DIFFERENCE")
def lower_squared_difference(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    for t in (a, b, y):
        ctx.expect(t, "int8")
    for t in (a, b):
        if len(ctx.tensor(t).shape) > 4:
            raise Unsupported("inputs of rank above 4 (TFLite broadcasts in 4-D)")
    (s1, z1), (s2, z2), (so, zo) = ctx.quant(a), ctx.quant(b), ctx.quant(y)
    left_shift = 7
    twice_max = float(np.float32(2) * max(np.float32(s1), np.float32(s2)))  # float, then double
    m1, sh1 = quantize_multiplier(float(s1) / twice_max)
    m2, sh2 = quantize_multiplier(float(s2) / twice_max)
    mo, sho = quantize_multiplier(twice_max * twice_max / ((1 << (2 * left_shift)) * float(so)))
    if max(sh1, sh2, sho) > 0:
        raise Unsupported("a rescale of 1 or more (TFLite requires multipliers below one)")
    call.kernel, call.params_type = "ts_squared_difference_s8", "ts_squared_difference_s8_params"
    call.params = [
        ("shape", _broadcast(ctx, a, b, y)),
        ("input1_offset", str(-z1)),
        ("input2_offset", str(-z2)),
        ("output_offset", str(zo)),
        ("left_shift", str(left_shift)),
        ("input1_multiplier", str(m1)),
        ("input1_shift", str(sh1)),
        ("input2_multiplier", str(m2)),
        ("input2_shift", str(sh2)),
        ("output_multiplier", str(mo)),
        ("output_shift", str(sho)),
    ]
    call.args = [ctx.ptr(a), ctx.ptr(b), ctx.ptr(y, const=False)]
