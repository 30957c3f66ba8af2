"""Lowerings of the stateful operators: SVDF (with its int16 state) and the fully integer
UNIDIRECTIONAL_SEQUENCE_LSTM. Their variable tensors live in the state buffer outside the arena
(`module.state_layout`), which the generated `<prefix>_reset` fills as TFLite resets them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from tinysched.codegen.context import KernelCall, LoweringContext
from tinysched.codegen.errors import Unsupported
from tinysched.codegen.quant import (
    INT8_MAX,
    INT8_MIN,
    MAX_ACCUMULATED_PRODUCTS,
    quantize_multiplier,
    round_half_away,
)
from tinysched.codegen.table import lowering
from tinysched.model.graph import Operator


@lowering("SVDF", stateful=True)
def lower_svdf(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    x, wf, wt = op.inputs[0], op.inputs[1], op.inputs[2]
    bias = op.inputs[3] if len(op.inputs) > 3 else -1
    state, y = op.inputs[4], op.outputs[0]
    ctx.expect(x, "int8")
    ctx.expect(y, "int8")
    ctx.expect(wf, "int8")
    ctx.expect(wt, "int16")
    ctx.expect(state, "int16")
    if bias >= 0:
        ctx.expect(bias, "int32")
    if not (ctx.tensor(wf).is_constant and ctx.tensor(wt).is_constant):
        raise Unsupported("non-constant weights")
    if not ctx.tensor(state).is_variable:
        raise Unsupported("the state input is not a variable tensor")
    (si, zi), (so, zo) = ctx.quant(x), ctx.quant(y)
    (swf, _), (swt, _), (ss, _) = ctx.quant(wf), ctx.quant(wt), ctx.quant(state)
    batches, input_size = ctx.tensor(x).shape
    num_filters, memory_size = ctx.tensor(wt).shape
    rank = int(op.options.get("rank", 1))
    if ctx.tensor(wf).shape != (num_filters, input_size) or num_filters % rank:
        raise Unsupported("weight shapes")
    if ctx.tensor(state).shape != (batches, num_filters * memory_size):
        raise Unsupported(f"state shape {list(ctx.tensor(state).shape)}")
    f = np.float32
    # svdf.cc Prepare: the scale products in float32, then QuantizeMultiplier in double.
    m1, s1 = quantize_multiplier(float(f(si) * f(swf) / f(ss)))
    m2, s2 = quantize_multiplier(float(f(ss) * f(swt) / f(so)))
    # The reference's integer SVDF clamps to int8 only (the fused RELU is not applied).
    params = [
        ("batches", batches), ("input_size", input_size), ("num_filters", num_filters), ("rank", rank),
        ("memory_size", memory_size), ("input_zero_point", zi), ("output_zero_point", zo),
        ("multiplier_1", m1), ("shift_1", s1), ("multiplier_2", m2), ("shift_2", s2),
        ("act_min", INT8_MIN), ("act_max", INT8_MAX),
    ]  # fmt: skip
    call.kernel, call.params_type = "ts_svdf_s8", "ts_svdf_s8_params"
    call.params = [(k, str(v)) for k, v in params]
    call.args = [
        ctx.ptr(x),
        ctx.ptr(wf),
        ctx.ptr(wt),
        ctx.ptr(bias) if bias >= 0 else "NULL",
        ctx.ptr(state, const=False),
        ctx.ptr(y, const=False),
    ]


# UNIDIRECTIONAL_SEQUENCE_LSTM input positions (lstm_shared.h): the tensors of each gate, in the
# order input, forget, cell, output.
_LSTM_INPUT_WEIGHTS = (1, 2, 3, 4)
_LSTM_RECURRENT_WEIGHTS = (5, 6, 7, 8)
_LSTM_PEEPHOLE = (9, 10, 11)
_LSTM_BIASES = (12, 13, 14, 15)
_LSTM_PROJECTION = (16, 17)
_LSTM_OUTPUT_STATE, _LSTM_CELL_STATE = 18, 19
_LSTM_LAYER_NORM = (20, 21, 22, 23)


def _lstm_optional(op: Operator, positions: Sequence[int]) -> bool:
    return any(k < len(op.inputs) and op.inputs[k] >= 0 for k in positions)


def _checked_log2(scale: float) -> int:
    """TFLite's CheckedLog2: the cell state scale must be a power of two (to 1e-3 in the exponent)."""
    exponent = float(np.float32(math.log(scale)) * np.float32(1.0 / math.log(2.0)))
    rounded = round_half_away(exponent)
    if abs(exponent - rounded) >= 1e-3:
        raise Unsupported(f"a cell state scale {scale!r} that is not a power of two")
    return int(rounded)


def _row_sums_times(weights: np.ndarray, scalar: int) -> np.ndarray:
    """MatrixScalarMultiplyAccumulate: each row's int32 sum times a scalar, wrapping like int32."""
    sums = weights.astype(np.int64).sum(axis=1) * int(scalar)
    return ((sums + 2**31) % 2**32 - 2**31).astype(np.int64)


@lowering("UNIDIRECTIONAL_SEQUENCE_LSTM", stateful=True)
def lower_unidirectional_sequence_lstm(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    """The fully integer LSTM (unidirectional_sequence_lstm.cc Prepare, PopulateQuantizedLstmParams8x8_16
    and PopulatePrecomputedZPTimesWeightsWithBias; lstm_eval.cc EvalInteger8x8_16), for the variant
    without CIFG, peephole, layer normalisation or projection. The gate pre-activations are in Q3.12
    (scale 2^-12: without layer norm TFLite ignores the four gate intermediates), the hidden value
    takes the fifth intermediate's quantisation."""
    x, y = op.inputs[0], op.outputs[0]
    opts = op.options
    if ctx.tensor(x).dtype != "int8":
        raise Unsupported(f"{ctx.tensor(x).dtype} input (only the integer 8x8_16 LSTM is supported)")
    if len(op.inputs) not in (20, 24):
        raise Unsupported(f"{len(op.inputs)} inputs (expects 20 or 24)")
    if op.inputs[1] < 0:
        raise Unsupported("CIFG (no input gate)")
    if _lstm_optional(op, _LSTM_PEEPHOLE):
        raise Unsupported("peephole weights")
    if _lstm_optional(op, _LSTM_LAYER_NORM):
        raise Unsupported("layer normalisation")
    if _lstm_optional(op, _LSTM_PROJECTION):
        raise Unsupported("a projection")
    if opts.get("diagonal_recurrent_tensors"):
        raise Unsupported("diagonal recurrent tensors")
    if opts.get("fused_activation_function", "TANH") != "TANH":
        raise Unsupported(
            f"fused activation {opts.get('fused_activation_function')} (the integer LSTM uses TANH)"
        )
    if len(op.intermediates) != 5:
        raise Unsupported(f"{len(op.intermediates)} intermediate tensors (the integer LSTM needs 5)")
    h_state, c_state = op.inputs[_LSTM_OUTPUT_STATE], op.inputs[_LSTM_CELL_STATE]
    ctx.expect(y, "int8")
    ctx.expect(h_state, "int8")
    ctx.expect(c_state, "int16")
    if not (ctx.tensor(h_state).is_variable and ctx.tensor(c_state).is_variable):
        raise Unsupported("the output/cell state inputs are not variable tensors")
    in_w = [op.inputs[k] for k in _LSTM_INPUT_WEIGHTS]
    rec_w = [op.inputs[k] for k in _LSTM_RECURRENT_WEIGHTS]
    biases = [op.inputs[k] for k in _LSTM_BIASES]
    for t in (*in_w, *rec_w):
        ctx.expect(t, "int8")
        if not ctx.tensor(t).is_constant:
            raise Unsupported("non-constant weights")
    for t in biases:
        ctx.expect(t, "int32")
        ctx.constant(t)
    shape = ctx.tensor(x).shape
    time_major = bool(opts.get("time_major", False))
    if len(shape) != 3:  # TFLite's Prepare reads the input size from dimension 2 whatever the rank
        raise Unsupported(f"input of rank {len(shape)} (expects [batch, time, input] or time-major)")
    steps, batches = (shape[0], shape[1]) if time_major else (shape[1], shape[0])
    n_input = shape[-1]
    n_cell = ctx.tensor(in_w[3]).shape[0]
    for t in in_w:
        if ctx.tensor(t).shape != (n_cell, n_input):
            raise Unsupported(f"input weights of shape {list(ctx.tensor(t).shape)}")
    for t in rec_w:
        if ctx.tensor(t).shape != (n_cell, n_cell):
            raise Unsupported(f"recurrent weights of shape {list(ctx.tensor(t).shape)}")
    for t in biases:
        if ctx.tensor(t).shape != (n_cell,):
            raise Unsupported(f"gate bias of shape {list(ctx.tensor(t).shape)}")
    if (
        math.prod(ctx.tensor(h_state).shape) != batches * n_cell
        or math.prod(ctx.tensor(c_state).shape) != batches * n_cell
    ):
        raise Unsupported("state sizes do not match batches x cells")
    if math.prod(ctx.tensor(y).shape) != batches * steps * n_cell:
        raise Unsupported(f"output shape {list(ctx.tensor(y).shape)}")
    if max(n_input, n_cell) >= MAX_ACCUMULATED_PRODUCTS:
        raise Unsupported("too many products per gate for an int32 accumulator")
    (si, zi), (sh, zh), (sc, _) = ctx.quant(x), ctx.quant(h_state), ctx.quant(c_state)
    cell_log2 = _checked_log2(sc)
    if not 0 <= 15 + cell_log2 <= 6:
        raise Unsupported(f"a cell state scale 2^{cell_log2} (TFLite's tanh takes 2^-15 to 2^-9)")
    hidden = ctx.tensor(op.intermediates[4]).quantization
    if hidden is None:
        raise Unsupported("the hidden-state intermediate has no quantisation")
    hidden_scale, hidden_zp = float(hidden.scale[0]), int(hidden.zero_point[0])
    f = np.float32
    gate_scale = f(2.0**-12)  # Q3.12: TFLite's intermediate scale without layer norm

    def effective(weight: int, scale: float) -> tuple[int, int]:
        return quantize_multiplier(float(f(f(ctx.quant(weight)[0]) * f(scale)) / gate_scale))

    in_m, in_s = zip(*(effective(t, si) for t in in_w), strict=True)
    rec_m, rec_s = zip(*(effective(t, sh) for t in rec_w), strict=True)
    # effective_hidden_scale: 2^-15 / hidden scale * 2^-15 in double, stored as a float.
    hid_m, hid_s = quantize_multiplier(float(f(2.0**-15 / float(f(hidden_scale)) * 2.0**-15)))
    clip = float(opts.get("cell_clip", 0.0) or 0.0)
    cell_clip = int(min(max(float(f(clip) / f(sc)), -32768.0), 32767.0)) if clip > 0 else 0
    in_bias, rec_bias = [], []
    for k, gate in enumerate("ifco"):
        w, u = ctx.constant(in_w[k]).reshape(n_cell, n_input), ctx.constant(rec_w[k]).reshape(n_cell, n_cell)
        bias = ctx.constant(biases[k]).astype(np.int64)
        eff_in = (bias + _row_sums_times(w, -zi) + 2**31) % 2**32 - 2**31
        eff_rec = _row_sums_times(u, -zh)
        in_bias.append(
            ctx.array(call, f"{gate}_input_bias", "int32_t", eff_in, f"gate {gate}: bias + row sums * {-zi}")
        )
        rec_bias.append(
            ctx.array(call, f"{gate}_recurrent_bias", "int32_t", eff_rec, f"gate {gate}: row sums * {-zh}")
        )

    def c4(values: Sequence[Any]) -> str:
        return "{" + ", ".join(str(v) for v in values) + "}"

    call.kernel, call.params_type = "ts_lstm_s8", "ts_lstm_s8_params"
    call.params = [
        ("batches", str(batches)), ("time_steps", str(steps)), ("input_size", str(n_input)),
        ("cell_size", str(n_cell)), ("time_major", "1" if time_major else "0"),
        ("input_weights", c4(ctx.ptr(t) for t in in_w)),
        ("recurrent_weights", c4(ctx.ptr(t) for t in rec_w)),
        ("input_bias", c4(in_bias)), ("recurrent_bias", c4(rec_bias)),
        ("input_multiplier", c4(in_m)), ("input_shift", c4(in_s)),
        ("recurrent_multiplier", c4(rec_m)), ("recurrent_shift", c4(rec_s)),
        ("cell_scale_log2", str(cell_log2)), ("cell_clip", str(cell_clip)),
        ("hidden_multiplier", str(hid_m)), ("hidden_shift", str(hid_s)), ("hidden_offset", str(hidden_zp)),
    ]  # fmt: skip
    call.args = [
        ctx.ptr(x),
        ctx.ptr(h_state, const=False),
        ctx.ptr(c_state, const=False),
        ctx.ptr(y, const=False),
    ]
