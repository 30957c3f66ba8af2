"""Lowerings of the operators added for issue 6 (activations, elementwise, data movement, reductions,
resizing, TRANSPOSE_CONV, the stateful SVDF with its int16 companions, and the integer
UNIDIRECTIONAL_SEQUENCE_LSTM).

`install(_Lowering)` adds one `lower_<opcode>` method per operator to the code generator's lowering
class; each computes in Python what TFLite computes in `Prepare` and picks a kernel. The approach:

- Pointwise int8 -> int8 operators (RELU, RELU6, RELU_N1_TO_1, LEAKY_RELU, HARD_SWISH, TANH, RSQRT)
  are a function of the input byte alone, so the generator evaluates TFLite's integer arithmetic for
  all 256 inputs here (`*_table`) and the device runs the existing table lookup `ts_lut_s8`.
- Data movement that is a strided view of the input (SLICE, STRIDED_SLICE, TILE, SPACE_TO_DEPTH,
  DEPTH_TO_SPACE, unpadded SPACE_TO_BATCH_ND / uncropped BATCH_TO_SPACE_ND) runs on `ts_transpose`,
  given the view's dimensions, its input strides and a start offset; PACK runs on
  `ts_concatenation`; SPLIT, SPLIT_V and UNPACK on `ts_split` (its mirror image).
- SUB is ADD with the second input's multiplier negated (TFLite's rounding is symmetric, so
  requant(x, -m) == -requant(x, m) exactly).
- The rest have kernels of their own (`firmware/kernels/ts_*.c`), documented in `ts_kernels.h`.
- Variable tensors of stateful operators (`STATEFUL_OPS`) live in a state buffer outside the arena
  (`state_layout`, `state_init`; the templates emit it and `<prefix>_reset`).

The arithmetic reproduces ai-edge-litert's BUILTIN_REF kernels (int8 SUM: the optimised kernel, see
`lower_sum`); `tests/test_kernels_extra.py` checks
each table exhaustively against the interpreter and each operator end to end through generated C.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import numpy as np

from tinysched.graph import Operator

INT8_MIN, INT8_MAX = -128, 127


# ---- integer arithmetic, as TFLite's reference kernels do it -------------------------------------


def srdhm(a: int, b: int) -> int:
    """gemmlowp SaturatingRoundingDoublingHighMul for int32."""
    if a == b == -(2**31):
        return 2**31 - 1
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    return _trunc_div(ab + nudge, 1 << 31)


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def rdivpot(x: int, exponent: int) -> int:
    """gemmlowp RoundingDivideByPOT: x / 2^exponent, ties away from zero."""
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def _wrap32(x: int) -> int:
    return (x + 2**31) % 2**32 - 2**31


def mbqm(x: int, multiplier: int, shift: int) -> int:
    """MultiplyByQuantizedMultiplier (double rounding): what `ts_requantize` computes in C."""
    left = max(shift, 0)
    right = max(-shift, 0)
    return rdivpot(srdhm(_wrap32(x * (1 << left)), multiplier), right)


def f32_ratio(a: float, b: float) -> float:
    """a / b computed in float32 (TFLite's `input->params.scale / output->params.scale`)."""
    return float(np.float32(a) / np.float32(b))


# ---- pointwise int8 tables ----------------------------------------------------------------------


def relu_table(si: float, zi: int, so: float, zo: int, lo: float | None, hi: float | None) -> np.ndarray:
    """activations.cc ReluPrepare + QuantizedReluX: requantise, clamp to the quantised [lo, hi]."""
    mult, shift = cg.quantize_multiplier(f32_ratio(si, so))
    qmin = INT8_MIN if lo is None else max(INT8_MIN, cg.quantize_value(lo, so, zo))
    qmax = INT8_MAX if hi is None else min(INT8_MAX, cg.quantize_value(hi, so, zo))
    table = np.zeros(256, dtype=np.int8)
    for q in range(-128, 128):
        v = zo + mbqm(q - zi, mult, shift)
        table[q & 0xFF] = min(max(v, qmin), qmax)
    return table


def leaky_relu_table(si: float, zi: int, so: float, zo: int, alpha: float) -> np.ndarray:
    """activations.cc LeakyReluPrepare (float32 products) + reference QuantizeLeakyRelu."""
    alpha_real = float(np.float32(np.float32(si) * np.float32(alpha)) / np.float32(so))
    ma, sa = cg.quantize_multiplier(alpha_real)
    mi, shi = cg.quantize_multiplier(f32_ratio(si, so))
    table = np.zeros(256, dtype=np.int8)
    for q in range(-128, 128):
        x = q - zi
        v = zo + (mbqm(x, mi, shi) if x >= 0 else mbqm(x, ma, sa))
        table[q & 0xFF] = min(max(v, INT8_MIN), INT8_MAX)
    return table


def _sat16(x: int) -> int:
    return min(max(x, -32768), 32767)


def _srdhm16(a: int, b: int) -> int:
    """gemmlowp SaturatingRoundingDoublingHighMul for int16."""
    if a == b == -32768:
        return 32767
    ab = a * b
    nudge = (1 << 14) if ab >= 0 else 1 - (1 << 14)
    return _trunc_div(ab + nudge, 1 << 15)


def _downscale16(m: int) -> int:
    """activations.cc DownScaleInt32ToInt16Multiplier."""
    if m >= 2**31 - 1 - (1 << 15):
        return 32767
    return (m + (1 << 15)) >> 16


def hard_swish_table(si: float, zi: int, so: float, zo: int) -> np.ndarray:
    """activations.cc HardSwishPrepare (float32 scales) + reference_ops::HardSwish (int16 fixed point)."""
    hires = np.float32(1.0 / 128.0) * np.float32(si)
    out_m32, out_exp = cg.quantize_multiplier(float(hires / np.float32(so)))
    relu_m32, relu_exp = cg.quantize_multiplier(float(hires / np.float32(3.0 / 32768.0)))
    if out_exp > 0:
        raise cg._Unsupported("HARD_SWISH output multiplier above 1")
    out_m, relu_m = _downscale16(out_m32), _downscale16(relu_m32)
    table = np.zeros(256, dtype=np.int8)
    for q in range(-128, 128):
        x = _sat16(q - zi)
        hires_x = int(np.int16(x * 128))  # |x| <= 255, so x * 128 fits int16 as the reference stores it
        pre_out = _srdhm16(hires_x, out_m)
        r = hires_x
        if relu_exp > 0:
            r = _sat16(r * (1 << (relu_exp - 1)))
        r = _srdhm16(r, relu_m)
        if relu_exp > 0:
            r = _sat16(r * 2)
        if relu_exp < 0:
            r = rdivpot(r, -relu_exp)
        r = int(np.int16((r + (1 << 15)) >> 1))
        # SaturatingDoublingHighMul: the product halved and rounded toward zero, saturating.
        saturated = r == pre_out == -32768
        prod = 32767 if saturated else int(np.int16(_trunc_div(r * pre_out, 1 << 15)))
        v = int(np.int16(rdivpot(prod, -out_exp) + zo))
        table[q & 0xFF] = min(max(v, INT8_MIN), INT8_MAX)
    return table


@cache
def _libm(name: str) -> Callable[[float], float] | None:
    lib_name = ctypes.util.find_library("m")
    try:
        lib = ctypes.CDLL(lib_name) if lib_name else ctypes.CDLL("libm.so.6")
    except OSError:  # pragma: no cover - every supported host has a C library
        return None
    fn = getattr(lib, name)
    fn.restype = ctypes.c_float
    fn.argtypes = [ctypes.c_float]
    return fn


def _tanhf(x: np.float32) -> np.float32:
    fn = _libm("tanhf")
    return np.float32(fn(float(x))) if fn is not None else np.float32(np.tanh(np.float32(x)))


def tanh_table(si: float, zi: int, so: float, zo: int) -> np.ndarray:
    """TANH int8: TFLite tabulates tanhf of the dequantised input (LUTPopulate)."""
    return cg.lut_int8(si, zi, so, zo, _tanhf)


def _sat_shift_left(x: int, exponent: int) -> int:
    """gemmlowp SaturatingRoundingMultiplyByPOT for a positive exponent."""
    threshold = (1 << (31 - exponent)) - 1
    if x > threshold:
        return 2**31 - 1
    if x < -threshold:
        return -(2**31)
    return _wrap32(x << exponent)


def inv_sqrt_multiplier(x: int) -> tuple[int, int]:
    """TFLite's GetInvSqrtQuantizedMultiplierExp(x, kReverseShift): 1/sqrt(x) = m * 2^(s - 31),
    by five Newton-Raphson steps in gemmlowp fixed point (3 integer bits)."""
    if x <= 1:
        return 2**31 - 1, 0
    shift = 11
    while x >= 1 << 29:
        x //= 4
        shift += 1
    clz = 32 - x.bit_length()
    pairs = (clz - 1) // 2 - 1
    shift -= pairs
    x <<= 2 * pairs
    half_input = rdivpot(x >> 1, 1)
    r = 1 << 28
    for _ in range(5):
        r3 = _sat_shift_left(srdhm(srdhm(r, r), r), 6)
        a = srdhm((1 << 28) + (1 << 27), r)
        b = srdhm(half_input, r3)
        r = _sat_shift_left(_wrap32(a - b), 3)
    r = srdhm(r, 1518500250)
    if shift < 0:
        r = _wrap32(r << -shift)
        shift = 0
    return r, -shift


def rsqrt_table(si: float, zi: int, so: float, zo: int) -> np.ndarray:
    """elementwise.cc RsqrtEvalQuantized (int8). Inputs below the zero point are an error in TFLite;
    the table gives them 127 like the zero point itself."""
    real = 1.0 / float(np.float32(np.sqrt(np.float32(si))) * np.float32(so))
    mult, shift = cg.quantize_multiplier(real)
    table = np.full(256, INT8_MAX, dtype=np.int8)
    for q in range(-128, 128):
        value = q - zi
        if value <= 0:
            continue
        m, s = inv_sqrt_multiplier(value)
        data = mbqm(1, m, s + 20)
        v = mbqm(data, mult, shift - 20) + zo
        table[q & 0xFF] = min(max(v, INT8_MIN), INT8_MAX)
    return table


# ---- small helpers for the lowerings -----------------------------------------------------------


def _rank_axis(axis: int, rank: int) -> int:
    axis = int(axis)
    return axis + rank if axis < 0 else axis


def _view_params(call: Any, out_dims: Sequence[int], in_strides: Sequence[int], element_bytes: int) -> None:
    call.kernel, call.params_type = "ts_transpose", "ts_transpose_params"
    if len(out_dims) > cg.MAX_DIMS:
        raise cg._Unsupported(f"a view of rank {len(out_dims)}")
    call.params = [
        ("out_dims", cg._c_list(cg._pad_left(list(out_dims), 1))),
        ("in_strides", cg._c_list(cg._pad_left(list(in_strides), 0))),
        ("element_bytes", str(element_bytes)),
    ]


def _ctype(low: Any, index: int) -> str:
    t = low.t(index)
    if t.dtype not in cg._C_TYPES:
        raise cg._Unsupported(f"tensor type {t.dtype}")
    return cg._C_TYPES[t.dtype]


def _offset_ptr(low: Any, index: int, offset: int) -> str:
    base = low.ptr(index)
    return base if offset == 0 else f"({base} + {offset})"


def _same_bytes_quant(low: Any, a: int, b: int) -> None:
    ta, tb = low.t(a), low.t(b)
    if ta.dtype != tb.dtype:
        raise cg._Unsupported(f"{ta.dtype} input, {tb.dtype} output")
    if ta.dtype in ("int8", "uint8", "int16") and ta.quantization != tb.quantization:
        raise cg._Unsupported("input and output quantised differently")


# ---- the lowerings -----------------------------------------------------------------------------


def _lut(low: Any, op: Operator, call: Any, table: np.ndarray, what: str) -> None:
    call.kernel, call.params_type = "ts_lut_s8", "ts_lut_s8_params"
    x, y = op.inputs[0], op.outputs[0]
    name = low.array(call, "table", "int8_t", table, f"{what} of each input byte, by (uint8_t)q")
    call.params = [("count", str(math.prod(low.t(x).shape))), ("table", name)]
    call.args = [low.ptr(x), low.ptr(y, const=False)]


def _unary_quant(low: Any, op: Operator) -> tuple[float, int, float, int]:
    x, y = op.inputs[0], op.outputs[0]
    low.expect(x, "int8")
    low.expect(y, "int8")
    (si, zi), (so, zo) = low.quant(x), low.quant(y)
    return si, zi, so, zo


def lower_relu(low: Any, op: Operator, call: Any) -> None:
    _lut(low, op, call, relu_table(*_unary_quant(low, op), 0.0, None), "relu")


def lower_relu6(low: Any, op: Operator, call: Any) -> None:
    _lut(low, op, call, relu_table(*_unary_quant(low, op), 0.0, 6.0), "relu6")


def lower_relu_n1_to_1(low: Any, op: Operator, call: Any) -> None:
    _lut(low, op, call, relu_table(*_unary_quant(low, op), -1.0, 1.0), "relu_n1_to_1")


def lower_leaky_relu(low: Any, op: Operator, call: Any) -> None:
    alpha = float(op.options.get("alpha", 0.0))
    _lut(low, op, call, leaky_relu_table(*_unary_quant(low, op), alpha), f"leaky_relu(alpha {alpha})")


def lower_hard_swish(low: Any, op: Operator, call: Any) -> None:
    _lut(low, op, call, hard_swish_table(*_unary_quant(low, op)), "hard_swish")


def lower_tanh(low: Any, op: Operator, call: Any) -> None:
    _lut(low, op, call, tanh_table(*_unary_quant(low, op)), "tanh")


def lower_sub(low: Any, op: Operator, call: Any) -> None:
    """SUB int8 = ADD with input 2's multiplier negated (sub.cc uses ADD's rescaling, left shift 20)."""
    low.lower_add(op, call)
    params = dict(call.params)
    params["input2_multiplier"] = str(-int(params["input2_multiplier"]))
    call.params = list(params.items())


def _itemsize(low: Any, index: int) -> int:
    _ctype(low, index)
    return int(np.dtype(low.t(index).dtype).itemsize)


def _view(low: Any, op: Operator, call: Any, dims: Sequence[int], strides: Sequence[int], start: int) -> None:
    """Output = the input's elements at start + sum_d i[d] * strides[d], over dims, in row-major order."""
    x, y = op.inputs[0], op.outputs[0]
    _same_bytes_quant(low, x, y)
    if math.prod(dims) != math.prod(low.t(y).shape):
        raise cg._Unsupported(f"view of {math.prod(dims)} elements for an output of {list(low.t(y).shape)}")
    # Merge trailing unit dimensions away so that any rank up to 6 after merging is accepted.
    pairs = [(d, s) for d, s in zip(dims, strides, strict=True) if d != 1] or [(1, 0)]
    _view_params(call, [d for d, _ in pairs], [s for _, s in pairs], _itemsize(low, x))
    call.args = [_offset_ptr(low, x, start), low.ptr(y, const=False)]


def lower_slice(low: Any, op: Operator, call: Any) -> None:
    shape = list(low.t(op.inputs[0]).shape)
    begin = [int(v) for v in low.constant(op.inputs[1]).reshape(-1)]
    size = [int(v) for v in low.constant(op.inputs[2]).reshape(-1)]
    if len(begin) != len(shape) or len(size) != len(shape):
        raise cg._Unsupported("begin/size of another rank than the input")
    size = [d - b if s < 0 else s for d, b, s in zip(shape, begin, size, strict=True)]
    if any(b < 0 or s < 0 or b + s > d for d, b, s in zip(shape, begin, size, strict=True)):
        raise cg._Unsupported("a slice outside the input")
    strides = cg._dims_strides(shape)
    _view(low, op, call, size, strides, sum(b * st for b, st in zip(begin, strides, strict=True)))


def lower_strided_slice(low: Any, op: Operator, call: Any) -> None:
    from tinysched.fold import _NotFoldable, strided_slice_index

    shape = list(low.t(op.inputs[0]).shape)
    begin, end, step = (low.constant(op.inputs[k]).reshape(-1).tolist() for k in (1, 2, 3))
    try:
        slices, _ = strided_slice_index(shape, begin, end, step, op.options)
    except _NotFoldable:
        raise cg._Unsupported("ellipsis/new-axis masks, offset, or a zero stride") from None
    strides = cg._dims_strides(shape)
    dims, view_strides, start = [], [], 0
    for d, sl, st in zip(shape, slices, strides, strict=True):
        first, _, s = sl.indices(d)
        count = len(range(*sl.indices(d)))
        if count == 0:
            raise cg._Unsupported("an empty slice")
        dims.append(count)
        view_strides.append(s * st)
        start += first * st
    _view(low, op, call, dims, view_strides, start)


def lower_tile(low: Any, op: Operator, call: Any) -> None:
    shape = list(low.t(op.inputs[0]).shape)
    multiples = [int(v) for v in low.constant(op.inputs[1]).reshape(-1)]
    if len(multiples) != len(shape) or any(m < 1 for m in multiples):
        raise cg._Unsupported(f"multiples {multiples}")
    strides = cg._dims_strides(shape)
    dims, view_strides = [], []
    for d, m, st in zip(shape, multiples, strides, strict=True):
        if m > 1:
            dims.append(m)
            view_strides.append(0)
        dims.append(d)
        view_strides.append(st)
    _view(low, op, call, dims, view_strides, 0)


def _nhwc(low: Any, index: int) -> tuple[int, int, int, int]:
    shape = low.t(index).shape
    if len(shape) != 4:
        raise cg._Unsupported(f"rank {len(shape)} (expects NHWC)")
    return tuple(int(d) for d in shape)  # type: ignore[return-value]


def lower_space_to_depth(low: Any, op: Operator, call: Any) -> None:
    n, h, w, c = _nhwc(low, op.inputs[0])
    b = int(op.options.get("block_size", 0))
    if b < 1 or h % b or w % b:
        raise cg._Unsupported(f"block size {b} for {h}x{w}")
    # out[n][oh][ow][(by * b + bx) * c + k] = in[n][oh * b + by][ow * b + bx][k]
    dims = [n, h // b, w // b, b, b, c]
    _view(low, op, call, dims, [h * w * c, b * w * c, b * c, w * c, c, 1], 0)


def lower_depth_to_space(low: Any, op: Operator, call: Any) -> None:
    n, h, w, cin = _nhwc(low, op.inputs[0])
    b = int(op.options.get("block_size", 0))
    if b < 1 or cin % (b * b):
        raise cg._Unsupported(f"block size {b} for {cin} channels")
    c = cin // (b * b)
    # out[n][h * b + by][w * b + bx][k] = in[n][h][w][(by * b + bx) * c + k]
    dims = [n, h, b, w, b, c]
    _view(low, op, call, dims, [h * w * cin, w * cin, b * c, cin, c, 1], 0)


def _block(low: Any, op: Operator) -> tuple[int, int, list[int]]:
    block = [int(v) for v in low.constant(op.inputs[1]).reshape(-1)]
    pads = [int(v) for v in low.constant(op.inputs[2]).reshape(-1)]
    if len(block) != 2:
        raise cg._Unsupported("block shape of other than 2 spatial dimensions")
    return block[0], block[1], pads


def _space_batch(low: Any, op: Operator, call: Any, to_batch: bool) -> None:
    x, y = op.inputs[0], op.outputs[0]
    _same_bytes_quant(low, x, y)
    nb, h, w, c = _nhwc(low, x)
    ob, oh, ow, _ = _nhwc(low, y)
    bh, bw, pads = _block(low, op)
    if len(pads) != 4 or min(pads) < 0 or bh < 1 or bw < 1:
        raise cg._Unsupported(f"block {bh}x{bw} with paddings/crops {pads}")
    if to_batch:
        ok = ob == nb * bh * bw and (h + pads[0] + pads[1]) == oh * bh and (w + pads[2] + pads[3]) == ow * bw
    else:
        ok = nb == ob * bh * bw and h * bh - pads[0] - pads[1] == oh and w * bw - pads[2] - pads[3] == ow
    if not ok:
        raise cg._Unsupported("output shape does not match the block and paddings/crops")
    itemsize = _itemsize(low, x)
    if not any(pads):  # a pure view: the general strided copy does it
        if to_batch:
            dims = [bh, bw, nb, oh, ow, c]
            _view(low, op, call, dims, [w * c, c, h * w * c, bh * w * c, bw * c, 1], 0)
        else:
            hwc = h * w * c
            _view(low, op, call, [ob, h, bh, w, bw, c], [hwc, w * c, bw * ob * hwc, c, ob * hwc, 1], 0)
        return
    zero = low.quant(y)[1] & 0xFF if low.t(y).dtype in ("int8", "uint8") else 0
    call.kernel, call.params_type = "ts_space_batch_nd", "ts_space_batch_nd_params"
    params = [
        ("to_batch", int(to_batch)), ("in_batches", nb), ("in_h", h), ("in_w", w), ("out_batches", ob),
        ("out_h", oh), ("out_w", ow), ("block_h", bh), ("block_w", bw), ("offset_top", pads[0]),
        ("offset_left", pads[2]), ("pixel_bytes", c * itemsize), ("pad_value", zero),
    ]  # fmt: skip
    call.params = [(k, str(v)) for k, v in params]
    call.args = [low.ptr(x), low.ptr(y, const=False)]


def lower_space_to_batch_nd(low: Any, op: Operator, call: Any) -> None:
    _space_batch(low, op, call, to_batch=True)


def lower_batch_to_space_nd(low: Any, op: Operator, call: Any) -> None:
    _space_batch(low, op, call, to_batch=False)


def _chunks(low: Any, shapes: Sequence[Sequence[int]], axis: int, itemsize: int) -> list[int]:
    return [math.prod(s[axis:]) * itemsize for s in shapes]


def lower_pack(low: Any, op: Operator, call: Any) -> None:
    ins, y = [t for t in op.inputs if t >= 0], op.outputs[0]
    for t in ins:
        _same_bytes_quant(low, t, y)
    rank = len(low.t(ins[0]).shape)
    axis = _rank_axis(op.options.get("axis", 0), rank + 1)
    itemsize = _itemsize(low, y)
    chunks = _chunks(low, [low.t(t).shape for t in ins], axis, itemsize)
    call.kernel, call.params_type = "ts_concatenation", "ts_concatenation_params"
    name = low.array(call, "chunk_bytes", "int32_t", chunks, "bytes of each input per outer slice")
    call.params = [
        ("num_inputs", str(len(ins))),
        ("outer", str(math.prod(low.t(ins[0]).shape[:axis]))),
        ("chunk_bytes", name),
    ]
    inputs_name = f"op{call.op}_inputs"
    call.pre = [
        f"const void *const {inputs_name}[{len(ins)}] = {{" + ", ".join(low.ptr(t) for t in ins) + "};"
    ]
    call.args = [inputs_name, low.ptr(y, const=False)]


def _split(low: Any, op: Operator, call: Any, x: int, axis: int, keep_axis: bool) -> None:
    src = low.t(x)
    rank = len(src.shape)
    axis = _rank_axis(axis, rank)
    if not 0 <= axis < rank:
        raise cg._Unsupported(f"axis {axis} for rank {rank}")
    for y in op.outputs:
        _same_bytes_quant(low, x, y)
    itemsize = _itemsize(low, x)
    inner = math.prod(src.shape[axis + 1 :]) * itemsize
    sizes = [low.t(y).shape[axis] if keep_axis else 1 for y in op.outputs]
    if sum(sizes) != src.shape[axis]:
        raise cg._Unsupported(f"outputs of {sum(sizes)} along an axis of {src.shape[axis]}")
    chunks = [s * inner for s in sizes]
    call.kernel, call.params_type = "ts_split", "ts_split_params"
    name = low.array(call, "chunk_bytes", "int32_t", chunks, "bytes of each output per outer slice")
    call.params = [
        ("num_outputs", str(len(op.outputs))),
        ("outer", str(math.prod(src.shape[:axis]))),
        ("chunk_bytes", name),
    ]
    outputs_name = f"op{call.op}_outputs"
    call.pre = [
        f"void *const {outputs_name}[{len(op.outputs)}] = {{"
        + ", ".join(low.ptr(y, const=False) for y in op.outputs)
        + "};"
    ]
    call.args = [low.ptr(x), outputs_name]


def lower_split(low: Any, op: Operator, call: Any) -> None:
    axis = int(low.constant(op.inputs[0]).reshape(-1)[0])
    _split(low, op, call, op.inputs[1], axis, keep_axis=True)


def lower_split_v(low: Any, op: Operator, call: Any) -> None:
    axis = int(low.constant(op.inputs[2]).reshape(-1)[0])
    _split(low, op, call, op.inputs[0], axis, keep_axis=True)


def lower_unpack(low: Any, op: Operator, call: Any) -> None:
    _split(low, op, call, op.inputs[0], int(op.options.get("axis", 0)), keep_axis=False)


def _minmax(low: Any, op: Operator, call: Any, is_max: bool) -> None:
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    for t in (a, b, y):
        low.expect(t, "int8")
    call.kernel, call.params_type = "ts_minmax_s8", "ts_minmax_s8_params"
    call.params = [("shape", low.broadcast(a, b, y)), ("is_max", "1" if is_max else "0")]
    call.args = [low.ptr(a), low.ptr(b), low.ptr(y, const=False)]


def lower_maximum(low: Any, op: Operator, call: Any) -> None:
    _minmax(low, op, call, True)


def lower_minimum(low: Any, op: Operator, call: Any) -> None:
    _minmax(low, op, call, False)


def lower_reduce_max(low: Any, op: Operator, call: Any) -> None:
    x, y = op.inputs[0], op.outputs[0]
    low.expect(x, "int8")
    low.expect(y, "int8")
    if low.quant(x) != low.quant(y):
        raise cg._Unsupported("input and output quantised differently")
    shape = list(low.t(x).shape)
    rank = len(shape)
    axes = sorted({_rank_axis(a, rank) for a in low.constant(op.inputs[1]).reshape(-1)})
    if any(not 0 <= a < rank for a in axes):
        raise cg._Unsupported(f"axes {axes} for rank {rank}")
    if not axes:
        low.lower_copy(op, call)
        return
    strides = cg._dims_strides(shape)
    kept = [d for d in range(rank) if d not in axes]
    call.kernel, call.params_type = "ts_reduce_max_s8", "ts_reduce_max_s8_params"
    call.params = [
        ("out_dims", cg._c_list(cg._pad_left([shape[d] for d in kept], 1))),
        ("out_strides", cg._c_list(cg._pad_left([strides[d] for d in kept], 0))),
        ("red_dims", cg._c_list(cg._pad_left([shape[d] for d in axes], 1))),
        ("red_strides", cg._c_list(cg._pad_left([strides[d] for d in axes], 0))),
    ]
    call.args = [low.ptr(x), low.ptr(y, const=False)]


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
        raise cg._Unsupported("a SUM whose rescaled sum overflows int32")
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


def lower_sum(low: Any, op: Operator, call: Any) -> None:
    """int8 SUM as ai-edge-litert's optimised kernel computes it (see docs/codegen.md on why that,
    not BUILTIN_REF, is the reference): the walk of ts_mean_s8, then `sum_thresholds`."""
    x, y = op.inputs[0], op.outputs[0]
    low.expect(x, "int8")
    low.expect(y, "int8")
    (si, zi), (so, zo) = low.quant(x), low.quant(y)
    shape = list(low.t(x).shape)
    rank = len(shape)
    axes = sorted({_rank_axis(a, rank) for a in low.constant(op.inputs[1]).reshape(-1)})
    if any(not 0 <= a < rank for a in axes):
        raise cg._Unsupported(f"axes {axes} for rank {rank}")
    count = math.prod(shape[a] for a in axes)
    if not 1 <= count < 1 << 23:
        raise cg._Unsupported(f"a sum over {count} elements")
    base, thresholds = sum_thresholds(float(si), int(zi), float(so), int(zo), count)
    strides = cg._dims_strides(shape)
    kept = [d for d in range(rank) if d not in axes]
    call.kernel, call.params_type = "ts_sum_s8", "ts_sum_s8_params"
    table = low.array(
        call, "thresholds", "int32_t", np.asarray(thresholds or [0], dtype=np.int32), "least sum of each step"
    )
    call.params = [
        ("out_dims", cg._c_list(cg._pad_left([shape[d] for d in kept], 1))),
        ("out_strides", cg._c_list(cg._pad_left([strides[d] for d in kept], 0))),
        ("red_dims", cg._c_list(cg._pad_left([shape[d] for d in axes], 1))),
        ("red_strides", cg._c_list(cg._pad_left([strides[d] for d in axes], 0))),
        ("count", str(count)),
        ("base", str(base)),
        ("n_thresholds", str(len(thresholds))),
        ("thresholds", table),
    ]
    call.args = [low.ptr(x), low.ptr(y, const=False)]


def _arg_minmax(low: Any, op: Operator, call: Any, is_max: bool) -> None:
    x, y = op.inputs[0], op.outputs[0]
    low.expect(x, "int8")
    low.expect(y, "int32", "int64")
    shape = list(low.t(x).shape)
    axis = _rank_axis(int(low.constant(op.inputs[1]).reshape(-1)[0]), len(shape))
    if not 0 <= axis < len(shape):
        raise cg._Unsupported(f"axis {axis} for rank {len(shape)}")
    call.kernel, call.params_type = "ts_arg_minmax_s8", "ts_arg_minmax_s8_params"
    call.params = [
        ("outer", str(math.prod(shape[:axis]))),
        ("axis_size", str(shape[axis])),
        ("inner", str(math.prod(shape[axis + 1 :]))),
        ("is_max", "1" if is_max else "0"),
        ("output_is_int64", "1" if low.t(y).dtype == "int64" else "0"),
    ]
    call.args = [low.ptr(x), low.ptr(y, const=False)]


def lower_arg_max(low: Any, op: Operator, call: Any) -> None:
    _arg_minmax(low, op, call, True)


def lower_arg_min(low: Any, op: Operator, call: Any) -> None:
    _arg_minmax(low, op, call, False)


def lower_gather(low: Any, op: Operator, call: Any) -> None:
    x, idx, y = op.inputs[0], op.inputs[1], op.outputs[0]
    _same_bytes_quant(low, x, y)
    low.expect(idx, "int32", "int64")
    if int(op.options.get("batch_dims", 0) or 0):
        raise cg._Unsupported("batch_dims")
    shape = list(low.t(x).shape)
    axis = _rank_axis(int(op.options.get("axis", 0)), len(shape))
    if not 0 <= axis < len(shape):
        raise cg._Unsupported(f"axis {axis} for rank {len(shape)}")
    call.kernel, call.params_type = "ts_gather", "ts_gather_params"
    call.params = [
        ("outer", str(math.prod(shape[:axis]))),
        ("axis_size", str(shape[axis])),
        ("inner_bytes", str(math.prod(shape[axis + 1 :]) * _itemsize(low, x))),
        ("num_indices", str(math.prod(low.t(idx).shape))),
        ("indices_are_int64", "1" if low.t(idx).dtype == "int64" else "0"),
    ]
    call.args = [low.ptr(x), low.ptr(idx), low.ptr(y, const=False)]


def nearest_map(in_size: int, out_size: int, align_corners: bool, half_pixel: bool) -> list[int]:
    """resize_nearest_neighbor.h GetNearestNeighbor for every output coordinate (float32 arithmetic)."""
    f = np.float32
    aligned = align_corners and out_size > 1
    scale = f(in_size - 1) / f(out_size - 1) if aligned else f(in_size) / f(out_size)
    offset = f(0.5) if half_pixel else f(0.0)
    out = []
    for v in range(out_size):
        value = (f(v) + offset) * scale
        r = int(cg.round_half_away(float(value))) if align_corners else math.floor(float(value))
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


def _resize_shapes(low: Any, op: Operator) -> tuple[tuple[int, int, int, int], tuple[int, int, int, int]]:
    (n, ih, iw, c), (n2, oh, ow, c2) = _nhwc(low, op.inputs[0]), _nhwc(low, op.outputs[0])
    if (n, c) != (n2, c2):
        raise cg._Unsupported("batch or channels change")
    return (n, ih, iw, c), (n2, oh, ow, c2)


def lower_resize_nearest_neighbor(low: Any, op: Operator, call: Any) -> None:
    x, y = op.inputs[0], op.outputs[0]
    _same_bytes_quant(low, x, y)
    (n, ih, iw, c), (_, oh, ow, _) = _resize_shapes(low, op)
    align = bool(op.options.get("align_corners", False))
    half = bool(op.options.get("half_pixel_centers", False))
    ymap = low.array(call, "y_map", "int32_t", nearest_map(ih, oh, align, half), "source row of each row")
    xmap = low.array(
        call, "x_map", "int32_t", nearest_map(iw, ow, align, half), "source column of each column"
    )
    call.kernel, call.params_type = "ts_resize_nearest", "ts_resize_nearest_params"
    call.params = [
        ("batches", str(n)),
        ("in_h", str(ih)),
        ("in_w", str(iw)),
        ("out_h", str(oh)),
        ("out_w", str(ow)),
        ("pixel_bytes", str(c * _itemsize(low, x))),
        ("y_map", ymap),
        ("x_map", xmap),
    ]
    call.args = [low.ptr(x), low.ptr(y, const=False)]


def lower_resize_bilinear(low: Any, op: Operator, call: Any) -> None:
    x, y = op.inputs[0], op.outputs[0]
    low.expect(x, "int8")
    low.expect(y, "int8")
    if low.quant(x) != low.quant(y):
        raise cg._Unsupported("input and output quantised differently")
    (n, ih, iw, c), (_, oh, ow, _) = _resize_shapes(low, op)
    align = bool(op.options.get("align_corners", False))
    half = bool(op.options.get("half_pixel_centers", False))
    if align and half:
        raise cg._Unsupported("align_corners together with half_pixel_centers")
    params = [("batches", n), ("in_h", ih), ("in_w", iw), ("channels", c), ("out_h", oh), ("out_w", ow)]
    call.params = [(k, str(v)) for k, v in params]
    for axis, (size_in, size_out) in (("y", (ih, oh)), ("x", (iw, ow))):
        lo, hi, weight = bilinear_map(size_in, size_out, align, half)
        call.params.append((f"{axis}0", low.array(call, f"{axis}0", "int32_t", lo, "first source index")))
        call.params.append((f"{axis}1", low.array(call, f"{axis}1", "int32_t", hi, "second source index")))
        call.params.append(
            (f"w{axis}", low.array(call, f"w{axis}", "int32_t", weight, "weight of the second, /1024"))
        )
    order = ["batches", "in_h", "in_w", "channels", "out_h", "out_w", "y0", "y1", "wy", "x0", "x1", "wx"]
    call.params.sort(key=lambda kv: order.index(kv[0]))
    call.kernel, call.params_type = "ts_resize_bilinear_s8", "ts_resize_bilinear_s8_params"
    call.args = [low.ptr(x), low.ptr(y, const=False)]


def lower_rsqrt(low: Any, op: Operator, call: Any) -> None:
    _lut(low, op, call, rsqrt_table(*_unary_quant(low, op)), "rsqrt")


def lower_prelu(low: Any, op: Operator, call: Any) -> None:
    x, alpha, y = op.inputs[0], op.inputs[1], op.outputs[0]
    for t in (x, alpha, y):
        low.expect(t, "int8")
    (si, zi), (sa, za), (so, zo) = low.quant(x), low.quant(alpha), low.quant(y)
    # activations.cc PreluPrepare: the scale products in float32, then QuantizeMultiplier.
    m1, s1 = cg.quantize_multiplier(f32_ratio(si, so))
    m2, s2 = cg.quantize_multiplier(float(np.float32(np.float32(si) * np.float32(sa)) / np.float32(so)))
    call.kernel, call.params_type = "ts_prelu_s8", "ts_prelu_s8_params"
    call.params = [
        ("shape", low.broadcast(x, alpha, y)),
        ("input_offset", str(-zi)),
        ("alpha_offset", str(-za)),
        ("output_offset", str(zo)),
        ("multiplier_pos", str(m1)),
        ("shift_pos", str(s1)),
        ("multiplier_neg", str(m2)),
        ("shift_neg", str(s2)),
    ]
    call.args = [low.ptr(x), low.ptr(alpha), low.ptr(y, const=False)]


def lower_squared_difference(low: Any, op: Operator, call: Any) -> None:
    a, b, y = op.inputs[0], op.inputs[1], op.outputs[0]
    for t in (a, b, y):
        low.expect(t, "int8")
    for t in (a, b):
        if len(low.t(t).shape) > 4:
            raise cg._Unsupported("inputs of rank above 4 (TFLite broadcasts in 4-D)")
    (s1, z1), (s2, z2), (so, zo) = low.quant(a), low.quant(b), low.quant(y)
    left_shift = 7
    twice_max = float(np.float32(2) * max(np.float32(s1), np.float32(s2)))  # float, then double
    m1, sh1 = cg.quantize_multiplier(float(s1) / twice_max)
    m2, sh2 = cg.quantize_multiplier(float(s2) / twice_max)
    mo, sho = cg.quantize_multiplier(twice_max * twice_max / ((1 << (2 * left_shift)) * float(so)))
    if max(sh1, sh2, sho) > 0:
        raise cg._Unsupported("a rescale of 1 or more (TFLite requires multipliers below one)")
    call.kernel, call.params_type = "ts_squared_difference_s8", "ts_squared_difference_s8_params"
    call.params = [
        ("shape", low.broadcast(a, b, y)),
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
    call.args = [low.ptr(a), low.ptr(b), low.ptr(y, const=False)]


def lower_l2_normalization(low: Any, op: Operator, call: Any) -> None:
    x, y = op.inputs[0], op.outputs[0]
    low.expect(x, "int8")
    low.expect(y, "int8")
    _, zi = low.quant(x)
    so, zo = low.quant(y)
    if so != 1.0 / 128 or zo != 0:
        raise cg._Unsupported("int8 output quantisation other than (1/128, 0)")
    if op.options.get("fused_activation_function", "NONE") not in ("NONE", None):
        raise cg._Unsupported("a fused activation")
    shape = low.t(x).shape
    depth = shape[-1] if shape else 1
    if depth >= 33000:
        raise cg._Unsupported(f"rows of {depth} elements could overflow the int32 sum of squares")
    call.kernel, call.params_type = "ts_l2_normalization_s8", "ts_l2_normalization_s8_params"
    call.params = [
        ("outer", str(math.prod(shape) // depth)),
        ("depth", str(depth)),
        ("input_zero_point", str(zi)),
    ]
    call.args = [low.ptr(x), low.ptr(y, const=False)]


def lower_transpose_conv(low: Any, op: Operator, call: Any) -> None:
    w, x = op.inputs[1], op.inputs[2]
    bias = op.inputs[3] if len(op.inputs) > 3 else -1
    y = op.outputs[0]
    low.expect(x, "int8")
    low.expect(y, "int8")
    low.expect(w, "int8")
    if not low.t(w).is_constant:
        raise cg._Unsupported("non-constant filter")
    if bias >= 0:
        low.expect(bias, "int32")
    (si, zi), (so, zo) = low.quant(x), low.quant(y)
    wq = low.t(w).quantization
    if wq is None or any(z != 0 for z in wq.zero_point):
        raise cg._Unsupported("filter must be symmetric int8 (zero point 0)")
    n, ih, iw, ic = _nhwc(low, x)
    _, oh, ow, oc = _nhwc(low, y)
    fo, fh, fw, fi = low.t(w).shape
    if fo != oc or fi != ic:
        raise cg._Unsupported(f"filter shape {list(low.t(w).shape)} for {ic} -> {oc} channels")
    if len(wq.scale) not in (1, oc):
        raise cg._Unsupported(f"{len(wq.scale)} filter scales for {oc} output channels")
    if fh * fw * ic >= cg.MAX_ACCUMULATED_PRODUCTS:
        raise cg._Unsupported("too many products per output for an int32 accumulator")
    scales = wq.scale if len(wq.scale) == oc else wq.scale * oc
    mults, shifts = zip(
        *(cg.quantize_multiplier(float(si) * float(s) / float(so)) for s in scales), strict=True
    )
    sh, sw = int(op.options.get("stride_h", 1)), int(op.options.get("stride_w", 1))
    # transpose_conv.cc: padding as for a convolution from the output size to the input size.
    same = op.options.get("padding") == "SAME"
    pad_top = cg.window_padding(oh, -(-oh // sh), fh, sh, 1) if same else 0
    pad_left = cg.window_padding(ow, -(-ow // sw), fw, sw, 1) if same else 0
    act_min, act_max = cg.activation_range(op.options.get("fused_activation_function", "NONE"), so, zo)
    params = [
        ("batches", n), ("in_h", ih), ("in_w", iw), ("in_c", ic), ("out_h", oh), ("out_w", ow),
        ("out_c", oc), ("filter_h", fh), ("filter_w", fw), ("stride_h", sh), ("stride_w", sw),
        ("pad_top", pad_top), ("pad_left", pad_left), ("input_offset", -zi), ("output_offset", zo),
        ("act_min", act_min), ("act_max", act_max),
    ]  # fmt: skip
    call.kernel, call.params_type = "ts_transpose_conv_s8", "ts_transpose_conv_s8_params"
    call.params = [(k, str(v)) for k, v in params] + [
        ("multiplier", low.array(call, "multiplier", "int32_t", mults, "per output channel")),
        ("shift", low.array(call, "shift", "int32_t", shifts, "per output channel")),
    ]
    call.args = [low.ptr(x), low.ptr(w), low.ptr(bias) if bias >= 0 else "NULL", low.ptr(y, const=False)]


# ---- persistent state (stateful operators) and integer QUANTIZE ----------------------------------

# Operators whose variable tensors the generator keeps in the state buffer.
STATEFUL_OPS = ("SVDF", "UNIDIRECTIONAL_SEQUENCE_LSTM")


def state_layout(graph: Any, alignment: int) -> tuple[dict[int, int], int]:
    """Offsets of the variable tensors operators read, in one state buffer outside the arena."""
    offsets: dict[int, int] = {}
    total = 0
    for t in graph.tensors:
        if t.is_variable and graph.consumers.get(t.index):
            offsets[t.index] = total
            total += -(-t.nbytes // alignment) * alignment
    return offsets, total


def state_init(graph: Any, offsets: dict[int, int]) -> list[dict[str, Any]]:
    """How reset() fills each state tensor: TFLite's ResetVariableTensor puts int8 state at its zero
    point and everything else at 0."""
    rows = []
    for t, off in sorted(offsets.items(), key=lambda kv: kv[1]):
        tensor = graph.tensors[t]
        q = tensor.quantization
        fill = q.zero_point[0] & 0xFF if tensor.dtype == "int8" and q is not None else 0
        note = cg.c_comment(f"{tensor.name} {tensor.dtype}{list(tensor.shape)}", 100)
        rows.append({"tensor": t, "offset": off, "bytes": tensor.nbytes, "fill": fill, "note": note})
    return rows


_INT_TYPES = {
    "int8": "TS_TYPE_INT8",
    "uint8": "TS_TYPE_UINT8",
    "int16": "TS_TYPE_INT16",
    "int32": "TS_TYPE_INT32",
}


def lower_quantize_integer(low: Any, op: Operator, call: Any) -> None:
    """QUANTIZE between integer types other than 8-bit to 8-bit (quantize.cc Requantize): int16 and
    int32 in or out. The caller adds the pointer arguments."""
    x, y = op.inputs[0], op.outputs[0]
    src, dst = low.t(x), low.t(y)
    if src.dtype not in _INT_TYPES or dst.dtype not in _INT_TYPES:
        raise cg._Unsupported(f"{src.dtype} -> {dst.dtype}")
    (si, zi), (so, zo) = low.quant(x), low.quant(y)
    mult, shift = cg.quantize_multiplier(float(si) / float(so))
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


def lower_svdf(low: Any, op: Operator, call: Any) -> None:
    x, wf, wt = op.inputs[0], op.inputs[1], op.inputs[2]
    bias = op.inputs[3] if len(op.inputs) > 3 else -1
    state, y = op.inputs[4], op.outputs[0]
    low.expect(x, "int8")
    low.expect(y, "int8")
    low.expect(wf, "int8")
    low.expect(wt, "int16")
    low.expect(state, "int16")
    if bias >= 0:
        low.expect(bias, "int32")
    if not (low.t(wf).is_constant and low.t(wt).is_constant):
        raise cg._Unsupported("non-constant weights")
    if not low.t(state).is_variable:
        raise cg._Unsupported("the state input is not a variable tensor")
    (si, zi), (so, zo) = low.quant(x), low.quant(y)
    (swf, _), (swt, _), (ss, _) = low.quant(wf), low.quant(wt), low.quant(state)
    batches, input_size = low.t(x).shape
    num_filters, memory_size = low.t(wt).shape
    rank = int(op.options.get("rank", 1))
    if low.t(wf).shape != (num_filters, input_size) or num_filters % rank:
        raise cg._Unsupported("weight shapes")
    if low.t(state).shape != (batches, num_filters * memory_size):
        raise cg._Unsupported(f"state shape {list(low.t(state).shape)}")
    f = np.float32
    # svdf.cc Prepare: the scale products in float32, then QuantizeMultiplier in double.
    m1, s1 = cg.quantize_multiplier(float(f(si) * f(swf) / f(ss)))
    m2, s2 = cg.quantize_multiplier(float(f(ss) * f(swt) / f(so)))
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
        low.ptr(x),
        low.ptr(wf),
        low.ptr(wt),
        low.ptr(bias) if bias >= 0 else "NULL",
        low.ptr(state, const=False),
        low.ptr(y, const=False),
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
    rounded = cg.round_half_away(exponent)
    if abs(exponent - rounded) >= 1e-3:
        raise cg._Unsupported(f"a cell state scale {scale!r} that is not a power of two")
    return int(rounded)


def _row_sums_times(weights: np.ndarray, scalar: int) -> np.ndarray:
    """MatrixScalarMultiplyAccumulate: each row's int32 sum times a scalar, wrapping like int32."""
    sums = weights.astype(np.int64).sum(axis=1) * int(scalar)
    return ((sums + 2**31) % 2**32 - 2**31).astype(np.int64)


def lower_unidirectional_sequence_lstm(low: Any, op: Operator, call: Any) -> None:
    """The fully integer LSTM (unidirectional_sequence_lstm.cc Prepare, PopulateQuantizedLstmParams8x8_16
    and PopulatePrecomputedZPTimesWeightsWithBias; lstm_eval.cc EvalInteger8x8_16), for the variant
    without CIFG, peephole, layer normalisation or projection. The gate pre-activations are in Q3.12
    (scale 2^-12: without layer norm TFLite ignores the four gate intermediates), the hidden value
    takes the fifth intermediate's quantisation."""
    x, y = op.inputs[0], op.outputs[0]
    opts = op.options
    if low.t(x).dtype != "int8":
        raise cg._Unsupported(f"{low.t(x).dtype} input (only the integer 8x8_16 LSTM is supported)")
    if len(op.inputs) not in (20, 24):
        raise cg._Unsupported(f"{len(op.inputs)} inputs (expects 20 or 24)")
    if op.inputs[1] < 0:
        raise cg._Unsupported("CIFG (no input gate)")
    if _lstm_optional(op, _LSTM_PEEPHOLE):
        raise cg._Unsupported("peephole weights")
    if _lstm_optional(op, _LSTM_LAYER_NORM):
        raise cg._Unsupported("layer normalisation")
    if _lstm_optional(op, _LSTM_PROJECTION):
        raise cg._Unsupported("a projection")
    if opts.get("diagonal_recurrent_tensors"):
        raise cg._Unsupported("diagonal recurrent tensors")
    if opts.get("fused_activation_function", "TANH") != "TANH":
        raise cg._Unsupported(
            f"fused activation {opts.get('fused_activation_function')} (the integer LSTM uses TANH)"
        )
    if len(op.intermediates) != 5:
        raise cg._Unsupported(f"{len(op.intermediates)} intermediate tensors (the integer LSTM needs 5)")
    h_state, c_state = op.inputs[_LSTM_OUTPUT_STATE], op.inputs[_LSTM_CELL_STATE]
    low.expect(y, "int8")
    low.expect(h_state, "int8")
    low.expect(c_state, "int16")
    if not (low.t(h_state).is_variable and low.t(c_state).is_variable):
        raise cg._Unsupported("the output/cell state inputs are not variable tensors")
    in_w = [op.inputs[k] for k in _LSTM_INPUT_WEIGHTS]
    rec_w = [op.inputs[k] for k in _LSTM_RECURRENT_WEIGHTS]
    biases = [op.inputs[k] for k in _LSTM_BIASES]
    for t in (*in_w, *rec_w):
        low.expect(t, "int8")
        if not low.t(t).is_constant:
            raise cg._Unsupported("non-constant weights")
    for t in biases:
        low.expect(t, "int32")
        low.constant(t)
    shape = low.t(x).shape
    time_major = bool(opts.get("time_major", False))
    if len(shape) != 3:  # TFLite's Prepare reads the input size from dimension 2 whatever the rank
        raise cg._Unsupported(f"input of rank {len(shape)} (expects [batch, time, input] or time-major)")
    steps, batches = (shape[0], shape[1]) if time_major else (shape[1], shape[0])
    n_input = shape[-1]
    n_cell = low.t(in_w[3]).shape[0]
    for t in in_w:
        if low.t(t).shape != (n_cell, n_input):
            raise cg._Unsupported(f"input weights of shape {list(low.t(t).shape)}")
    for t in rec_w:
        if low.t(t).shape != (n_cell, n_cell):
            raise cg._Unsupported(f"recurrent weights of shape {list(low.t(t).shape)}")
    for t in biases:
        if low.t(t).shape != (n_cell,):
            raise cg._Unsupported(f"gate bias of shape {list(low.t(t).shape)}")
    if (
        math.prod(low.t(h_state).shape) != batches * n_cell
        or math.prod(low.t(c_state).shape) != batches * n_cell
    ):
        raise cg._Unsupported("state sizes do not match batches x cells")
    if math.prod(low.t(y).shape) != batches * steps * n_cell:
        raise cg._Unsupported(f"output shape {list(low.t(y).shape)}")
    if max(n_input, n_cell) >= cg.MAX_ACCUMULATED_PRODUCTS:
        raise cg._Unsupported("too many products per gate for an int32 accumulator")
    (si, zi), (sh, zh), (sc, _) = low.quant(x), low.quant(h_state), low.quant(c_state)
    cell_log2 = _checked_log2(sc)
    if not 0 <= 15 + cell_log2 <= 6:
        raise cg._Unsupported(f"a cell state scale 2^{cell_log2} (TFLite's tanh takes 2^-15 to 2^-9)")
    hidden = low.t(op.intermediates[4]).quantization
    if hidden is None:
        raise cg._Unsupported("the hidden-state intermediate has no quantisation")
    hidden_scale, hidden_zp = float(hidden.scale[0]), int(hidden.zero_point[0])
    f = np.float32
    gate_scale = f(2.0**-12)  # Q3.12: TFLite's intermediate scale without layer norm

    def effective(weight: int, scale: float) -> tuple[int, int]:
        return cg.quantize_multiplier(float(f(f(low.quant(weight)[0]) * f(scale)) / gate_scale))

    in_m, in_s = zip(*(effective(t, si) for t in in_w), strict=True)
    rec_m, rec_s = zip(*(effective(t, sh) for t in rec_w), strict=True)
    # effective_hidden_scale: 2^-15 / hidden scale * 2^-15 in double, stored as a float.
    hid_m, hid_s = cg.quantize_multiplier(float(f(2.0**-15 / float(f(hidden_scale)) * 2.0**-15)))
    clip = float(opts.get("cell_clip", 0.0) or 0.0)
    cell_clip = int(min(max(float(f(clip) / f(sc)), -32768.0), 32767.0)) if clip > 0 else 0
    in_bias, rec_bias = [], []
    for k, gate in enumerate("ifco"):
        w, u = low.constant(in_w[k]).reshape(n_cell, n_input), low.constant(rec_w[k]).reshape(n_cell, n_cell)
        bias = low.constant(biases[k]).astype(np.int64)
        eff_in = (bias + _row_sums_times(w, -zi) + 2**31) % 2**32 - 2**31
        eff_rec = _row_sums_times(u, -zh)
        in_bias.append(
            low.array(call, f"{gate}_input_bias", "int32_t", eff_in, f"gate {gate}: bias + row sums * {-zi}")
        )
        rec_bias.append(
            low.array(call, f"{gate}_recurrent_bias", "int32_t", eff_rec, f"gate {gate}: row sums * {-zh}")
        )

    def c4(values: Sequence[Any]) -> str:
        return "{" + ", ".join(str(v) for v in values) + "}"

    call.kernel, call.params_type = "ts_lstm_s8", "ts_lstm_s8_params"
    call.params = [
        ("batches", str(batches)), ("time_steps", str(steps)), ("input_size", str(n_input)),
        ("cell_size", str(n_cell)), ("time_major", "1" if time_major else "0"),
        ("input_weights", c4(low.ptr(t) for t in in_w)),
        ("recurrent_weights", c4(low.ptr(t) for t in rec_w)),
        ("input_bias", c4(in_bias)), ("recurrent_bias", c4(rec_bias)),
        ("input_multiplier", c4(in_m)), ("input_shift", c4(in_s)),
        ("recurrent_multiplier", c4(rec_m)), ("recurrent_shift", c4(rec_s)),
        ("cell_scale_log2", str(cell_log2)), ("cell_clip", str(cell_clip)),
        ("hidden_multiplier", str(hid_m)), ("hidden_shift", str(hid_s)), ("hidden_offset", str(hidden_zp)),
    ]  # fmt: skip
    call.args = [
        low.ptr(x),
        low.ptr(h_state, const=False),
        low.ptr(c_state, const=False),
        low.ptr(y, const=False),
    ]


EXTRA_LOWERINGS: dict[str, Callable[[Any, Operator, Any], None]] = {
    "RELU": lower_relu,
    "RELU6": lower_relu6,
    "RELU_N1_TO_1": lower_relu_n1_to_1,
    "LEAKY_RELU": lower_leaky_relu,
    "HARD_SWISH": lower_hard_swish,
    "TANH": lower_tanh,
    "SUB": lower_sub,
    "SLICE": lower_slice,
    "STRIDED_SLICE": lower_strided_slice,
    "TILE": lower_tile,
    "SPACE_TO_DEPTH": lower_space_to_depth,
    "DEPTH_TO_SPACE": lower_depth_to_space,
    "SPACE_TO_BATCH_ND": lower_space_to_batch_nd,
    "BATCH_TO_SPACE_ND": lower_batch_to_space_nd,
    "PACK": lower_pack,
    "SPLIT": lower_split,
    "SPLIT_V": lower_split_v,
    "UNPACK": lower_unpack,
    "MAXIMUM": lower_maximum,
    "MINIMUM": lower_minimum,
    "REDUCE_MAX": lower_reduce_max,
    "SUM": lower_sum,
    "ARG_MAX": lower_arg_max,
    "ARG_MIN": lower_arg_min,
    "GATHER": lower_gather,
    "RESIZE_NEAREST_NEIGHBOR": lower_resize_nearest_neighbor,
    "RESIZE_BILINEAR": lower_resize_bilinear,
    "RSQRT": lower_rsqrt,
    "PRELU": lower_prelu,
    "SQUARED_DIFFERENCE": lower_squared_difference,
    "L2_NORMALIZATION": lower_l2_normalization,
    "TRANSPOSE_CONV": lower_transpose_conv,
    "SVDF": lower_svdf,
    "UNIDIRECTIONAL_SEQUENCE_LSTM": lower_unidirectional_sequence_lstm,
}


_WEIGHTED_OPS = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "TRANSPOSE_CONV")


def refuse_known_gaps(graph: Any) -> None:
    """One clear line for what tinysched refuses on purpose: a legacy uint8 (asymmetric) quantised
    model (the kernels are int8; uint8 is accepted only at the model's edges, through QUANTIZE).
    (int8 SUM, once refused here, is lowered by `lower_sum` against the optimised kernel.)"""
    from tinysched.errors import TinyschedError

    for op in graph.operators:
        if op.opcode in _WEIGHTED_OPS and any(
            graph.tensors[t].dtype == "uint8" for t in op.input_tensors[:2]
        ):
            raise TinyschedError(
                f"operator {op.index} ({op.opcode}) computes on uint8: legacy uint8-quantised models "
                "are not supported by the code generator (its kernels are int8); convert the model "
                "with int8 quantisation"
            )


def install(lowering_class: type) -> None:
    """Add `lower_<opcode>` methods to the code generator's lowering class (without overriding)."""
    for opcode, fn in EXTRA_LOWERINGS.items():
        name = f"lower_{opcode.lower()}"
        if name not in vars(lowering_class):
            setattr(lowering_class, name, fn)


# Imported last: codegen imports this module while it is being set up and calls `install`, so every
# name above must exist first; the functions use `cg` only when called.
from tinysched import codegen as cg  # noqa: E402
