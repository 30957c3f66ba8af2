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
from tinysched.model.graph import Operator

Params = list[tuple[str, int]]  # struct field -> integer value, in struct order


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


def _int8_operands(ctx: LoweringContext, op: Operator) -> tuple[int, int, int]:
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    for t in (a, b, y):
        ctx.expect(t, "int8")
    return a, b, y


def _binary_call(
    ctx: LoweringContext, call: KernelCall, kernel: str, operands: tuple[int, int, int], params: Params
) -> None:
    """What every broadcasting binary kernel takes: `<kernel>_params` starting with the broadcast
    shape, then `params` in struct order; then the two inputs and the output."""
    a, b, y = operands
    call.kernel, call.params_type = kernel, f"{kernel}_params"
    call.params = [("shape", _broadcast(ctx, a, b, y))] + [(k, str(v)) for k, v in params]
    call.args = [ctx.ptr(a), ctx.ptr(b), ctx.ptr(y, const=False)]


def _offsets(z1: int, z2: int, zo: int) -> Params:
    return [("input1_offset", -z1), ("input2_offset", -z2), ("output_offset", zo)]


def _activation(op: Operator, so: float, zo: int) -> Params:
    act_min, act_max = activation_range(op.options.get("fused_activation_function", "NONE"), so, zo)
    return [("act_min", act_min), ("act_max", act_max)]


def _common_scale(
    s1: float, s2: float, twice_max: float, left_shift: int, output_real: float, refusal: str
) -> Params:
    """ADD's and SQUARED_DIFFERENCE's requantisation (add.cc, squared_difference.cc Prepare): each
    input shifted left by `left_shift` and rescaled to `twice_max`, the result rescaled by
    `output_real`; every multiplier must be below one."""
    m1, sh1 = quantize_multiplier(float(s1) / twice_max)
    m2, sh2 = quantize_multiplier(float(s2) / twice_max)
    mo, sho = quantize_multiplier(output_real)
    if max(sh1, sh2, sho) > 0:
        raise Unsupported(refusal)
    return [
        ("left_shift", left_shift),
        ("input1_multiplier", m1),
        ("input1_shift", sh1),
        ("input2_multiplier", m2),
        ("input2_shift", sh2),
        ("output_multiplier", mo),
        ("output_shift", sho),
    ]


@lowering("ADD")
def lower_add(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    operands = _int8_operands(ctx, op)
    (s1, z1), (s2, z2), (so, zo) = (ctx.quant(t) for t in operands)
    left_shift = 20
    twice_max = 2 * float(max(np.float32(s1), np.float32(s2)))
    output_real = twice_max / ((1 << left_shift) * float(so))
    scale = _common_scale(s1, s2, twice_max, left_shift, output_real, "an ADD rescale of 1 or more")
    params = _offsets(z1, z2, zo) + scale + _activation(op, so, zo)
    _binary_call(ctx, call, "ts_add_s8", operands, params)


@lowering("SUB")
def lower_sub(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    """SUB int8 = ADD with input 2's multiplier negated (sub.cc uses ADD's rescaling, left shift 20)."""
    lower_add(ctx, op, call)
    params = dict(call.params)
    params["input2_multiplier"] = str(-int(params["input2_multiplier"]))
    call.params = list(params.items())


@lowering("MUL")
def lower_mul(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    operands = _int8_operands(ctx, op)
    (s1, z1), (s2, z2), (so, zo) = (ctx.quant(t) for t in operands)
    mult, shift = quantize_multiplier(float(s1) * float(s2) / float(so))
    params = _offsets(z1, z2, zo) + [("output_multiplier", mult), ("output_shift", shift)]
    _binary_call(ctx, call, "ts_mul_s8", operands, params + _activation(op, so, zo))


def _minmax(ctx: LoweringContext, op: Operator, call: KernelCall, is_max: bool) -> None:
    _binary_call(ctx, call, "ts_minmax_s8", _int8_operands(ctx, op), [("is_max", int(is_max))])


@lowering("MAXIMUM")
def lower_maximum(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    _minmax(ctx, op, call, True)


@lowering("MINIMUM")
def lower_minimum(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    _minmax(ctx, op, call, False)


@lowering("PRELU")
def lower_prelu(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    operands = _int8_operands(ctx, op)  # input, alpha, output
    (si, zi), (sa, za), (so, zo) = (ctx.quant(t) for t in operands)
    # activations.cc PreluPrepare: the scale products in float32, then QuantizeMultiplier.
    m1, s1 = quantize_multiplier(f32_ratio(si, so))
    m2, s2 = quantize_multiplier(float(np.float32(np.float32(si) * np.float32(sa)) / np.float32(so)))
    params = [
        ("input_offset", -zi),
        ("alpha_offset", -za),
        ("output_offset", zo),
        ("multiplier_pos", m1),
        ("shift_pos", s1),
        ("multiplier_neg", m2),
        ("shift_neg", s2),
    ]
    _binary_call(ctx, call, "ts_prelu_s8", operands, params)


@lowering("SQUARED_DIFFERENCE")
def lower_squared_difference(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    operands = _int8_operands(ctx, op)
    for t in operands[:2]:
        if len(ctx.tensor(t).shape) > 4:
            raise Unsupported("inputs of rank above 4 (TFLite broadcasts in 4-D)")
    (s1, z1), (s2, z2), (so, zo) = (ctx.quant(t) for t in operands)
    left_shift = 7
    twice_max = float(np.float32(2) * max(np.float32(s1), np.float32(s2)))  # float, then double
    output_real = twice_max * twice_max / ((1 << (2 * left_shift)) * float(so))
    refusal = "a rescale of 1 or more (TFLite requires multipliers below one)"
    scale = _common_scale(s1, s2, twice_max, left_shift, output_real, refusal)
    _binary_call(ctx, call, "ts_squared_difference_s8", operands, _offsets(z1, z2, zo) + scale)
