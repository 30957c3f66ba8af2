"""TFLite's quantised arithmetic, reproduced in Python bit for bit.

The code generator computes here what TFLite computes in each kernel's `Prepare` step
(requantisation multipliers and shifts, activation clamps, padding) and, for pointwise int8
operators, the whole function: such an operator is a function of the input byte alone, so its
integer arithmetic is evaluated for all 256 inputs (`*_table`) and the device runs a table lookup.
Each function names the TFLite computation it reproduces (`OpResolverType.BUILTIN_REF`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np

from tinysched.codegen.errors import Unsupported
from tinysched.errors import TinyschedError

INT8_MIN, INT8_MAX = -128, 127
# |q - zero_point| * |w| <= 255 * 128: an int32 accumulator holds fewer than this many products.
MAX_ACCUMULATED_PRODUCTS = (2**31 - 1) // (255 * 128)

# ---- multipliers, rounding, clamps --------------------------------------------------------------


def round_half_away(x: float) -> float:
    """std::round / roundf: nearest integer, halves away from zero (exact for float32 inputs)."""
    return math.copysign(math.floor(abs(x) + 0.5), x)


def quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier: real = multiplier * 2^(shift - 31), multiplier in [2^30, 2^31)."""
    if real == 0.0:
        return 0, 0
    q, shift = math.frexp(real)
    q_fixed = int(round_half_away(q * (1 << 31)))
    if q_fixed == 1 << 31:
        q_fixed //= 2
        shift += 1
    if q_fixed > 2**31 - 1:
        raise TinyschedError(f"multiplier {real!r} cannot be represented")
    if shift < -31:
        return 0, 0
    return q_fixed, shift


def _f32(x: float) -> np.float32:
    return np.float32(x)


def quantize_value(value: float, scale: float, zero_point: int) -> int:
    """TFLite's Quantize() for activation limits: zero_point + roundf(value / scale), in float32."""
    return zero_point + int(round_half_away(float(_f32(value) / _f32(scale))))


_QRANGE = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767)}


def activation_range(activation: str, scale: float, zero_point: int, dtype: str = "int8") -> tuple[int, int]:
    """CalculateActivationRangeQuantized: the clamp a fused activation becomes on quantised values."""
    qmin, qmax = _QRANGE[dtype]
    if activation in ("NONE", None):
        return qmin, qmax
    if activation == "RELU":
        return max(qmin, quantize_value(0.0, scale, zero_point)), qmax
    if activation == "RELU6":
        return (
            max(qmin, quantize_value(0.0, scale, zero_point)),
            min(qmax, quantize_value(6.0, scale, zero_point)),
        )
    if activation == "RELU_N1_TO_1":
        return (
            max(qmin, quantize_value(-1.0, scale, zero_point)),
            min(qmax, quantize_value(1.0, scale, zero_point)),
        )
    raise Unsupported(f"fused activation {activation}")


# ---- the host C library's float32 functions (TFLite tabulates libm's results) -----------------


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


def expf(x: np.float32) -> np.float32:
    """The C library's expf (numpy's exp if there were none)."""
    fn = _libm("expf")
    return np.float32(fn(float(x))) if fn is not None else np.exp(np.float32(x))


def tanhf(x: np.float32) -> np.float32:
    """The C library's tanhf (numpy's tanh if there were none)."""
    fn = _libm("tanhf")
    return np.float32(fn(float(x))) if fn is not None else np.float32(np.tanh(np.float32(x)))


def logistic_f32(x: np.float32) -> np.float32:
    """The float32 function TFLite tabulates for int8 LOGISTIC: 1.0f / (1.0f + expf(-x))."""
    with np.errstate(over="ignore"):
        return np.float32(1.0) / (np.float32(1.0) + expf(np.float32(-x)))


def lut_int8(
    in_scale: float, in_zero_point: int, out_scale: float, out_zero_point: int, fn: Callable
) -> np.ndarray:
    """TFLite's LUTPopulateInt8 for int8 -> int8: entry (uint8)q = quantised fn(dequantised q)."""
    table = np.zeros(256, dtype=np.int8)
    inverse_scale = np.float32(1.0) / np.float32(out_scale)
    for q in range(-128, 128):
        with np.errstate(over="ignore", invalid="ignore"):
            dequantized = np.float32(in_scale) * np.float32(q - in_zero_point)
            transformed = fn(dequantized)
            if not np.isfinite(transformed):
                quantized = -128
            else:
                rescaled = np.float32(round_half_away(float(np.float32(transformed * inverse_scale))))
                quantized = int(np.float32(rescaled + np.float32(out_zero_point)))
        table[q & 0xFF] = max(-128, min(127, quantized))
    return table


# ---- integer arithmetic, as TFLite's reference kernels do it -------------------------------------


def srdhm(a: int, b: int) -> int:
    """gemmlowp SaturatingRoundingDoublingHighMul for int32."""
    if a == b == -(2**31):
        return 2**31 - 1
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    return trunc_div(ab + nudge, 1 << 31)


def trunc_div(a: int, b: int) -> int:
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
    mult, shift = quantize_multiplier(f32_ratio(si, so))
    check_left_shift(shift, max(128 + zi, 127 - zi), "the input / output scale ratio")
    qmin = INT8_MIN if lo is None else max(INT8_MIN, quantize_value(lo, so, zo))
    qmax = INT8_MAX if hi is None else min(INT8_MAX, quantize_value(hi, so, zo))
    table = np.zeros(256, dtype=np.int8)
    for q in range(-128, 128):
        v = zo + mbqm(q - zi, mult, shift)
        table[q & 0xFF] = min(max(v, qmin), qmax)
    return table


def check_left_shift(shift: int, max_abs_x: int, what: str) -> None:
    """MultiplyByQuantizedMultiplier computes `x * (1 << shift)` in int32 before multiplying: from a
    shift where that can leave int32 for some |x| <= max_abs_x, TFLite's result is undefined C."""
    if shift > 0 and max_abs_x << shift > 2**31 - 1:
        raise Unsupported(f"{what} is 2^{shift - 1} or more: x * 2^{shift} leaves int32 in TFLite")


def leaky_relu_table(si: float, zi: int, so: float, zo: int, alpha: float) -> np.ndarray:
    """activations.cc LeakyReluPrepare (float32 products) + reference QuantizeLeakyRelu.

    A negative alpha: the interpreter's result is -MultiplyByQuantizedMultiplier(x, |m|, shift), not
    the same with the negative multiplier QuantizeMultiplier would give (the two differ where the
    high multiply ties: SaturatingRoundingDoublingHighMul rounds a negative tie toward zero and a
    positive one away). Measured on every input byte (tests/test_kernels_extra.py)."""
    if not math.isfinite(alpha):
        raise Unsupported(f"alpha {alpha!r} (expects a finite number)")
    alpha_real = float(np.float32(np.float32(si) * np.float32(alpha)) / np.float32(so))
    ma, sa = quantize_multiplier(abs(alpha_real))
    mi, shi = quantize_multiplier(f32_ratio(si, so))
    check_left_shift(shi, 127 - zi, "the input / output scale ratio")
    check_left_shift(sa, 128 + zi, "alpha times the input / output scale ratio")
    sign = -1 if alpha_real < 0 else 1
    table = np.zeros(256, dtype=np.int8)
    for q in range(-128, 128):
        x = q - zi
        v = zo + (mbqm(x, mi, shi) if x >= 0 else sign * mbqm(x, ma, sa))
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
    return trunc_div(ab + nudge, 1 << 15)


def _downscale16(m: int) -> int:
    """activations.cc DownScaleInt32ToInt16Multiplier."""
    if m >= 2**31 - 1 - (1 << 15):
        return 32767
    return (m + (1 << 15)) >> 16


def hard_swish_table(si: float, zi: int, so: float, zo: int) -> np.ndarray:
    """activations.cc HardSwishPrepare (float32 scales) + reference_ops::HardSwish (int16 fixed point)."""
    hires = np.float32(1.0 / 128.0) * np.float32(si)
    out_m32, out_exp = quantize_multiplier(float(hires / np.float32(so)))
    relu_m32, relu_exp = quantize_multiplier(float(hires / np.float32(3.0 / 32768.0)))
    if out_exp > 0:
        raise Unsupported("HARD_SWISH output multiplier above 1")
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
        prod = 32767 if saturated else int(np.int16(trunc_div(r * pre_out, 1 << 15)))
        v = int(np.int16(rdivpot(prod, -out_exp) + zo))
        table[q & 0xFF] = min(max(v, INT8_MIN), INT8_MAX)
    return table


def tanh_table(si: float, zi: int, so: float, zo: int) -> np.ndarray:
    """TANH int8: TFLite tabulates tanhf of the dequantised input (LUTPopulate)."""
    return lut_int8(si, zi, so, zo, tanhf)


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
    mult, shift = quantize_multiplier(real)
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


# ---- SOFTMAX ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SoftmaxParams:
    """The reference kernel's Q5.26 input scaling, or `table_only` where it has none."""

    input_multiplier: int
    input_left_shift: int
    diff_min: int
    table_only: bool  # input scale * beta <= 2^-26: only LiteRT's float32 arithmetic is defined


def softmax_params(input_scale: float, beta: float) -> SoftmaxParams:
    """activations.cc SoftmaxPrepare (kReference): PreprocessSoftmaxScaling with 5 integer bits and
    CalculateInputRadius. QuantizeMultiplierGreaterThanOne requires beta * scale * 2^26 > 1; below
    that the reference aborts and the kernel uses LiteRT's float table for every row."""
    real = min(beta * float(input_scale) * float(1 << 26), float(2**31 - 1))
    if not real > 1.0:
        return SoftmaxParams(0, 0, 0, True)
    mult, left_shift = quantize_multiplier(real)
    radius = math.floor(1.0 * ((1 << 5) - 1) * (1 << 26) / (1 << left_shift))
    return SoftmaxParams(mult, left_shift, -radius, False)


def softmax_exp_table(input_scale: float, beta: float) -> np.ndarray:
    """optimized_ops::PopulateSoftmaxLookupTable, indexed by k = max(row) - x: expf(scale * k) with
    scale = -input_scale * beta, every product in float32 and expf the C library's."""
    scale = np.float32(-np.float32(input_scale) * np.float32(beta))
    with np.errstate(under="ignore"):
        return np.array([expf(np.float32(scale * np.float32(k))) for k in range(256)], dtype=np.float32)
