"""Lowerings of the operators that map each element on its own, and of SOFTMAX and L2_NORMALIZATION
(which normalise along the last dimension).

Pointwise int8 -> int8 operators (RELU, RELU6, RELU_N1_TO_1, LEAKY_RELU, HARD_SWISH, TANH, RSQRT,
LOGISTIC) are a function of the input byte alone: `quant` evaluates TFLite's arithmetic for all 256
inputs and the device runs the table lookup `ts_lut_s8`. QUANTIZE and DEQUANTIZE convert between
element types."""

from __future__ import annotations

import math

import numpy as np

from tinysched.codegen.cgen import c_float
from tinysched.codegen.context import KernelCall, LoweringContext
from tinysched.codegen.errors import Unsupported
from tinysched.codegen.quant import (
    hard_swish_table,
    leaky_relu_table,
    logistic_f32,
    lut_int8,
    quantize_multiplier,
    relu_table,
    rsqrt_table,
    softmax_exp_table,
    softmax_params,
    tanh_table,
)
from tinysched.codegen.table import lowering
from tinysched.model.graph import Operator
from tinysched.model.uint8 import UINT8_EDGE


def _lut(ctx: LoweringContext, op: Operator, call: KernelCall, table: np.ndarray, what: str) -> None:
    call.kernel, call.params_type = "ts_lut_s8", "ts_lut_s8_params"
    x, y = op.inputs[0], op.outputs[0]
    name = ctx.array(call, "table", "int8_t", table, f"{what} of each input byte, by (uint8_t)q")
    call.params = [("count", str(math.prod(ctx.tensor(x).shape))), ("table", name)]
    call.args = [ctx.ptr(x), ctx.ptr(y, const=False)]


def _unary_quant(ctx: LoweringContext, op: Operator) -> tuple[float, int, float, int]:
    x, y = op.inputs[0], op.outputs[0]
    ctx.expect(x, "int8")
    ctx.expect(y, "int8")
    (si, zi), (so, zo) = ctx.quant(x), ctx.quant(y)
    return si, zi, so, zo


@lowering("RELU")
def lower_relu(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    _lut(ctx, op, call, relu_table(*_unary_quant(ctx, op), 0.0, None), "relu")


@lowering("RELU6")
def lower_relu6(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    _lut(ctx, op, call, relu_table(*_unary_quant(ctx, op), 0.0, 6.0), "relu6")


@lowering("RELU_N1_TO_1")
def lower_relu_n1_to_1(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    _lut(ctx, op, call, relu_table(*_unary_quant(ctx, op), -1.0, 1.0), "relu_n1_to_1")


@lowering("LEAKY_RELU")
def lower_leaky_relu(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    alpha = float(op.options.get("alpha", 0.0))
    _lut(ctx, op, call, leaky_relu_table(*_unary_quant(ctx, op), alpha), f"leaky_relu(alpha {alpha})")


@lowering("HARD_SWISH")
def lower_hard_swish(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    _lut(ctx, op, call, hard_swish_table(*_unary_quant(ctx, op)), "hard_swish")


@lowering("TANH")
def lower_tanh(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    _lut(ctx, op, call, tanh_table(*_unary_quant(ctx, op)), "tanh")


@lowering("RSQRT")
def lower_rsqrt(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    _lut(ctx, op, call, rsqrt_table(*_unary_quant(ctx, op)), "rsqrt")


@lowering("LOGISTIC")
def lower_logistic(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    si, zi, so, zo = _unary_quant(ctx, op)
    if so != 1.0 / 256:
        raise Unsupported("int8 output scale other than 1/256")
    _lut(ctx, op, call, lut_int8(si, zi, so, zo, logistic_f32), "logistic")


# SOFTMAX rows whose fixed-point arithmetic can be undefined (ts_softmax_s8.c): from this many
# elements the Q12.19 sum can reach 512 (int8 output: the final shift exceeds 31) or 8192 (int16
# output: the sum leaves 32 bits), and the kernel needs LiteRT's float32 exp table for such rows.
SOFTMAX_TABLE_DEPTH = {"int8": 512, "int16": 8192}


@lowering("SOFTMAX")
def lower_softmax(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    call.kernel, call.params_type = "ts_softmax_s8", "ts_softmax_s8_params"
    x, y = op.inputs[0], op.outputs[0]
    ctx.expect(x, "int8")
    si, _ = ctx.quant(x)
    so, zo = ctx.quant(y)
    out_dtype = ctx.tensor(y).dtype
    if out_dtype == "int16":  # int8 in, int16 out: same parameters, ts_softmax_s8_s16
        call.kernel = "ts_softmax_s8_s16"
        if zo != -32768 or abs(so - 1.0 / 65536) > 0.001 / 65536:
            raise Unsupported("int16 output quantisation other than (1/65536, -32768)")
    elif ctx.expect(y, "int8") and (zo != -128 or abs(so - 1.0 / 256) > 0.001 / 256):
        raise Unsupported("int8 output quantisation other than (1/256, -128)")
    # No SoftmaxOptions table: TFLite's parser leaves its zero-initialised beta, 0 (not the 1 of tf.nn).
    beta = float(op.options.get("beta", 0.0))
    if not (math.isfinite(beta) and beta > 0.0):
        given = "" if "beta" in op.options else ", the value TFLite takes when SoftmaxOptions are absent"
        raise Unsupported(f"beta {beta!r}{given} (expects a positive finite number)")
    if not (math.isfinite(si) and si > 0.0):
        raise Unsupported(f"input scale {si!r} (expects a positive finite number)")
    shape = ctx.tensor(x).shape
    depth = shape[-1] if shape else 1
    if depth < 1:
        raise Unsupported("an empty last dimension")
    params = softmax_params(si, beta)
    call.params = [
        ("outer", str(math.prod(shape) // depth)),
        ("depth", str(depth)),
        ("input_multiplier", str(params.input_multiplier)),
        ("input_left_shift", str(params.input_left_shift)),
        ("diff_min", str(params.diff_min)),
    ]
    if params.table_only or depth >= SOFTMAX_TABLE_DEPTH[out_dtype]:
        table = softmax_exp_table(si, beta)
        name = ctx.array(call, "exp", "float", table, "expf(-input_scale * beta * k), k = max(row) - x")
        call.params += [("exp_table", name), ("output_scale", c_float(so))]
        if params.table_only:
            call.params.append(("table_only", "1"))
            call.comment.append("input scale * beta <= 2^-26: LiteRT's float32 arithmetic for every row")
        else:
            call.comment.append(
                "rows whose Q12.19 sum is out of the reference's range: LiteRT's float32 table"
            )
    call.args = [ctx.ptr(x), ctx.ptr(y, const=False)]


@lowering("L2_NORMALIZATION")
def lower_l2_normalization(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    x, y = op.inputs[0], op.outputs[0]
    ctx.expect(x, "int8")
    ctx.expect(y, "int8")
    _, zi = ctx.quant(x)
    so, zo = ctx.quant(y)
    if so != 1.0 / 128 or zo != 0:
        raise Unsupported("int8 output quantisation other than (1/128, 0)")
    if op.options.get("fused_activation_function", "NONE") not in ("NONE", None):
        raise Unsupported("a fused activation")
    shape = ctx.tensor(x).shape
    depth = shape[-1] if shape else 1
    if depth >= 33000:
        raise Unsupported(f"rows of {depth} elements could overflow the int32 sum of squares")
    call.kernel, call.params_type = "ts_l2_normalization_s8", "ts_l2_normalization_s8_params"
    call.params = [
        ("outer", str(math.prod(shape) // depth)),
        ("depth", str(depth)),
        ("input_zero_point", str(zi)),
    ]
    call.args = [ctx.ptr(x), ctx.ptr(y, const=False)]


@lowering("QUANTIZE")
def lower_quantize(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    x, y = op.inputs[0], op.outputs[0]
    src, dst = ctx.tensor(x), ctx.tensor(y)
    count = str(math.prod(src.shape))
    if src.dtype == "float32" and dst.dtype == "int8":
        so, zo = ctx.quant(y)
        call.kernel, call.params_type = "ts_quantize_f32_s8", "ts_quantize_f32_s8_params"
        call.params = [("count", count), ("scale", c_float(so)), ("zero_point", str(zo))]
    elif op.options.get(UINT8_EDGE) and {src.dtype, dst.dtype} == {"int8", "uint8"}:
        # a legacy uint8 model's edge (tinysched.model.uint8): one scale, zero points 128 apart
        (si, zi), (so, zo) = ctx.quant(x), ctx.quant(y)
        if si != so or (zi - zo if src.dtype == "uint8" else zo - zi) != 128:
            raise Unsupported("an edge QUANTIZE whose zero points are not 128 apart at one scale")
        call.kernel, call.params_type = "ts_flip_sign_8bit", "ts_flip_sign_8bit_params"
        call.params = [("count", count)]
    elif src.dtype in ("int8", "uint8") and dst.dtype in ("int8", "uint8"):
        (si, zi), (so, zo) = ctx.quant(x), ctx.quant(y)
        mult, shift = quantize_multiplier(float(si) / float(so))
        call.kernel, call.params_type = "ts_requantize_8bit", "ts_requantize_8bit_params"
        call.params = [
            ("count", count),
            ("input_is_uint8", "1" if src.dtype == "uint8" else "0"),
            ("output_is_uint8", "1" if dst.dtype == "uint8" else "0"),
            ("input_zero_point", str(zi)),
            ("output_zero_point", str(zo)),
            ("multiplier", str(mult)),
            ("shift", str(shift)),
        ]
    else:
        _quantize_integer(ctx, op, call)  # int16/int32 in or out
    call.args = [ctx.ptr(x), ctx.ptr(y, const=False)]


_INT_TYPES = {
    "int8": "TS_TYPE_INT8",
    "uint8": "TS_TYPE_UINT8",
    "int16": "TS_TYPE_INT16",
    "int32": "TS_TYPE_INT32",
}


def _quantize_integer(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    """QUANTIZE between integer types other than 8-bit to 8-bit (quantize.cc Requantize): int16 and
    int32 in or out. The caller adds the pointer arguments."""
    x, y = op.inputs[0], op.outputs[0]
    src, dst = ctx.tensor(x), ctx.tensor(y)
    if src.dtype not in _INT_TYPES or dst.dtype not in _INT_TYPES:
        raise Unsupported(f"{src.dtype} -> {dst.dtype}")
    (si, zi), (so, zo) = ctx.quant(x), ctx.quant(y)
    mult, shift = quantize_multiplier(float(si) / float(so))
    call.kernel, call.params_type = "ts_requantize_int", "ts_requantize_int_params"
    call.params = [
        ("count", str(math.prod(src.shape))),
        ("input_type", _INT_TYPES[src.dtype]),
        ("output_type", _INT_TYPES[dst.dtype]),
        ("input_zero_point", str(zi)),
        ("output_zero_point", str(zo)),
        ("multiplier", str(mult)),
        ("shift", str(shift)),
    ]


@lowering("DEQUANTIZE")
def lower_dequantize(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    x, y = op.inputs[0], op.outputs[0]
    ctx.expect(x, "int8")
    ctx.expect(y, "float32")
    si, zi = ctx.quant(x)
    call.kernel, call.params_type = "ts_dequantize_s8_f32", "ts_dequantize_s8_f32_params"
    call.params = [
        ("count", str(math.prod(ctx.tensor(x).shape))),
        ("scale", c_float(si)),
        ("zero_point", str(zi)),
    ]
    call.args = [ctx.ptr(x), ctx.ptr(y, const=False)]
