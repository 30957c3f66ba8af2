"""Every parameter range a kernel checks at run time, checked on the parameters the generator emits.

A kernel returns TS_ERR_PARAMS (and the firmware stops: "invoke failed at step N") when its
parameters are out of the range its arithmetic is written for. Nothing a model can hold should get
that far: `check_call` applies, to each kernel call as generated, the same conditions as the kernel's
C (firmware/kernels/*.c, named beside each check), plus the ranges the shared arithmetic assumes
(ts_fixedpoint.h: a requantisation shift in [-31, 31], [-31, 30] for FULLY_CONNECTED's single
rounding; a multiplier in [0, 2^31)). A failed check raises `Unsupported`, which `table.lower`
turns into the one-line `operator N (OPCODE) is not supported by the code generator: <reason>`.

Not checkable here: GATHER's index range when the indices are computed at run time (TFLite refuses
an out-of-range index at run time too); constant indices are checked in the lowering.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from tinysched.codegen.context import KernelCall
from tinysched.codegen.errors import Unsupported

INT32_MAX = 2**31 - 1


class _Params:
    """A call's designated initializers, read back as numbers (arrays by their local name)."""

    def __init__(self, call: KernelCall) -> None:
        self.values = dict(call.params)
        self.arrays = {a.name: a.values for a in call.local_arrays}

    def has(self, key: str) -> bool:
        return key in self.values and self.values[key] != "NULL"

    def int(self, key: str, default: int = 0) -> int:
        text = self.values.get(key)
        return default if text is None else int(text, 0)

    def ints(self, key: str) -> list[int]:
        """An int, a `{a, b, ...}` initializer, or a local array by name."""
        text = self.values[key].strip()
        if text in self.arrays:
            return [int(v) for v in np.asarray(self.arrays[text]).reshape(-1)]
        if text.startswith("{"):
            return [int(v, 0) for v in text.strip("{}").split(",") if v.strip()]
        return [int(text, 0)]

    def float(self, key: str) -> float:
        return float(self.values[key].rstrip("f"))


def _at_least(p: _Params, minimum: int, *keys: str) -> None:
    for key in keys:
        if p.int(key) < minimum:
            raise Unsupported(f"{key} {p.int(key)} (the kernel needs at least {minimum})")


def _requant(p: _Params, multiplier_key: str, shift_key: str, single_rounding: bool = False) -> None:
    """ts_requantize: x << max(shift, 0), a rounding right shift of max(-shift, 0) <= 31, any int32
    multiplier but INT32_MIN (SUB negates one); ts_requantize_single: shift <= 30, multiplier >= 0."""
    highest = 30 if single_rounding else 31
    for shift in p.ints(shift_key):
        if not -31 <= shift <= highest:
            raise Unsupported(
                f"a requantisation shift of {shift} (the kernel's arithmetic covers -31 to {highest}:"
                " a scale ratio of 2^31 or more)"
            )
    lowest = 0 if single_rounding else -INT32_MAX
    for mult in p.ints(multiplier_key):
        if not lowest <= mult <= INT32_MAX:
            raise Unsupported(f"a requantisation multiplier of {mult}")


def _add(p: _Params) -> None:  # ts_add_s8.c: left_shift in [0, 20]
    _shift_in(p, "left_shift", 0, 20)
    for n in ("input1", "input2", "output"):
        _requant(p, f"{n}_multiplier", f"{n}_shift")


def _squared_difference(p: _Params) -> None:  # ts_squared_difference_s8.c: left_shift in [0, 7]
    _shift_in(p, "left_shift", 0, 7)
    for n in ("input1", "input2", "output"):
        _requant(p, f"{n}_multiplier", f"{n}_shift")


def _shift_in(p: _Params, key: str, lo: int, hi: int) -> None:
    if not lo <= p.int(key) <= hi:
        raise Unsupported(f"{key} {p.int(key)} (the kernel covers {lo} to {hi})")


def _conv(p: _Params) -> None:  # ts_conv2d_s8.c, ts_transpose_conv_s8.c: strides (dilations) >= 1
    _at_least(p, 1, *(k for k in ("stride_h", "stride_w", "dilation_h", "dilation_w") if k in p.values))
    _requant(p, "multiplier", "shift")


def _depthwise(p: _Params) -> None:  # ts_depthwise_conv2d_s8.c: also out_c == in_c * depth_multiplier
    _conv(p)
    _at_least(p, 1, "depth_multiplier")
    if p.int("out_c") != p.int("in_c") * p.int("depth_multiplier"):
        raise Unsupported(
            f"{p.int('out_c')} output channels for {p.int('in_c')} x {p.int('depth_multiplier')}"
        )


def _expand_dw(p: _Params) -> None:
    """ts_expand_dw_s8.c: group >= 1 and depth multiplier 1; its inner calls refuse what
    ts_conv2d_s8 / ts_depthwise_conv2d_s8 refuse (their fields as `expand.x` / `depthwise.x`)."""
    _at_least(p, 1, *(k for k in ("group", "stride_h") if k in p.values))
    for prefix, check in (("expand.", _conv), ("depthwise.", _depthwise)):
        inner = _Params.__new__(_Params)
        inner.values = {k[len(prefix) :]: v for k, v in p.values.items() if k.startswith(prefix)}
        inner.arrays = p.arrays
        if inner.values:
            check(inner)
    if p.int("depthwise.depth_multiplier", 1) != 1:
        raise Unsupported(f"depth multiplier {p.int('depthwise.depth_multiplier')} (the kernel needs 1)")


def _fully_connected(p: _Params) -> None:  # ts_requantize_single: shift in [-31, 30]
    _requant(p, "multiplier", "shift", single_rounding=True)


def _avg_pool(p: _Params) -> None:
    """ts_avg_pool2d_s8.c: every output's window, clipped to the input, holds an element."""
    for size, out, filt, stride, pad in (("in_h", "out_h", "filter_h", "stride_h", "pad_top"),
                                         ("in_w", "out_w", "filter_w", "stride_w", "pad_left")):  # fmt: skip
        starts = np.arange(p.int(out), dtype=np.int64) * p.int(stride) - p.int(pad)
        first = np.maximum(0, -starts)
        end = np.minimum(p.int(filt), p.int(size) - starts)
        if np.any(end <= first):
            raise Unsupported(f"an average pool window outside the input ({out.replace('out_', '')})")


def _max_pool(p: _Params) -> None:
    """ts_max_pool2d_s8.c: strides and filter sizes of at least 1."""
    for name in ("stride_h", "stride_w", "filter_h", "filter_w"):
        if p.int(name) < 1:
            raise Unsupported(f"max pool {name.replace('_', ' ')} {p.int(name)} (must be at least 1)")


def _count_matches(p: _Params) -> None:  # ts_mean_s8.c, ts_sum_s8.c
    count, n_red = p.int("count"), math.prod(p.ints("red_dims"))
    if count < 1 or count != n_red or count >= 1 << 23:
        raise Unsupported(f"a reduction over {count} elements (the kernel covers 1 to 2^23 - 1)")


def _mean(p: _Params) -> None:
    _count_matches(p)
    _requant(p, "multiplier", "shift")


def _sum(p: _Params) -> None:  # ts_sum_s8.c: the threshold table fits the int8 range
    _count_matches(p)
    base, n = p.int("base"), p.int("n_thresholds")
    if n < 0 or base < -128 or base + n > 127 or (n > 0 and not p.has("thresholds")):
        raise Unsupported(f"{n} output thresholds from {base} (outside the int8 range)")


def _reduce_max(p: _Params) -> None:  # ts_reduce_max_s8.c
    if math.prod(p.ints("red_dims")) < 1:
        raise Unsupported("a maximum over no elements")


def _arg_minmax(p: _Params) -> None:  # ts_arg_minmax_s8.c
    _at_least(p, 1, "axis_size")


def _quantize(p: _Params) -> None:  # ts_quantize_f32_s8.c: scale > 0
    scale = p.float("scale")
    if not (math.isfinite(scale) and scale > 0.0):
        raise Unsupported(f"output scale {scale!r} (expects a positive number)")


_TYPES = ("TS_TYPE_INT8", "TS_TYPE_UINT8", "TS_TYPE_INT16", "TS_TYPE_INT32")


def _requantize_int(p: _Params) -> None:  # ts_requantize_int.c: a known output type
    if p.values.get("output_type") not in _TYPES:
        raise Unsupported(f"output type {p.values.get('output_type')}")
    _requant(p, "multiplier", "shift")


def _space_batch(p: _Params) -> None:
    """ts_space_batch_nd.c: blocks >= 1; BATCH_TO_SPACE_ND reads only inside its input."""
    _at_least(p, 1, "block_h", "block_w")
    if p.int("to_batch"):
        return
    bh, bw = p.int("block_h"), p.int("block_w")
    yy = np.arange(p.int("out_h"), dtype=np.int64) + p.int("offset_top")
    xx = np.arange(p.int("out_w"), dtype=np.int64) + p.int("offset_left")
    if yy.size == 0 or xx.size == 0 or p.int("out_batches") < 1:
        return
    src = ((yy[:, None] % bh) * bw + xx[None, :] % bw) * p.int("out_batches") + p.int("out_batches") - 1
    if (
        np.any(src >= p.int("in_batches"))
        or np.any(yy // bh >= p.int("in_h"))
        or np.any(xx // bw >= p.int("in_w"))
        or yy.min() < 0
        or xx.min() < 0
    ):
        raise Unsupported("crops that read outside the input")


def _svdf(p: _Params) -> None:  # ts_svdf_s8.c: rank >= 1 divides num_filters, memory >= 1
    _at_least(p, 1, "rank", "memory_size")
    if p.int("num_filters") % p.int("rank"):
        raise Unsupported(f"{p.int('num_filters')} filters for rank {p.int('rank')}")
    _requant(p, "multiplier_1", "shift_1")
    _requant(p, "multiplier_2", "shift_2")


def _lstm(p: _Params) -> None:  # ts_lstm_s8.c: cell state with 0 to 6 integer bits
    _at_least(p, 1, "cell_size", "input_size")
    bits = 15 + p.int("cell_scale_log2")
    if not 0 <= bits <= 6:
        raise Unsupported(f"a cell state with {bits} integer bits (the kernel covers 0 to 6)")
    _requant(p, "input_multiplier", "input_shift")
    _requant(p, "recurrent_multiplier", "recurrent_shift")
    _requant(p, "hidden_multiplier", "hidden_shift")


def _softmax(p: _Params) -> None:
    """ts_softmax_s8.c: a row, and either the exp table (table_only) or a Q5.26 input scaling."""
    _at_least(p, 1, "depth")
    if p.int("table_only"):
        if not p.has("exp_table"):
            raise Unsupported("no exp table for LiteRT's arithmetic")
        return
    _shift_in(p, "input_left_shift", 0, 31)
    if p.int("diff_min") > 0:
        raise Unsupported(f"diff_min {p.int('diff_min')}")
    if p.int("input_multiplier") < 0:
        raise Unsupported(f"input multiplier {p.int('input_multiplier')}")


def _mul(p: _Params) -> None:
    _requant(p, "output_multiplier", "output_shift")


def _prelu(p: _Params) -> None:
    _requant(p, "multiplier_pos", "shift_pos")
    _requant(p, "multiplier_neg", "shift_neg")


def _requantize_8bit(p: _Params) -> None:
    _requant(p, "multiplier", "shift")


# kernel -> its checks. tests/test_kernel_extremes.py checks that every kernel with a TS_ERR_PARAMS
# return is listed here.
KERNEL_CHECKS: dict[str, Callable[[_Params], None]] = {
    "ts_add_s8": _add,
    "ts_arg_minmax_s8": _arg_minmax,
    "ts_avg_pool2d_s8": _avg_pool,
    "ts_avg_pool2d_s8_rows": _avg_pool,  # a streamed stage's global-pool sink (codegen.lower_stream)
    "ts_max_pool2d_s8": _max_pool,
    "ts_conv2d_s8": _conv,
    "ts_depthwise_conv2d_s8": _depthwise,
    "ts_conv2d_filter_offset_s8": _conv,  # ts_legacy_uint8.c: the same strides, dilations, channels
    "ts_depthwise_conv2d_filter_offset_s8": _depthwise,
    "ts_avg_pool2d_half_up_s8": _avg_pool,
    "ts_conv2d_s8_staged": _conv,
    "ts_conv2d_s8_staged_checked": _conv,  # a streamed stage's narrow 1x1 member (codegen.lower_stream)
    "ts_conv2d_s8_staged_layer": _conv,  # the same on a Helium core, with its layer table
    "ts_conv2d_s8_wide": _conv,
    "ts_conv2d_s8_pixels": _conv,  # a whole 1x1 layer with the generator's pixel table (codegen.lower_conv)
    "ts_conv2d_s8_pixels_checked": _conv,  # a streamed stage's 1x1 member with one (codegen.lower_stream)
    "ts_conv2d_s8_pixel_rows": _conv,  # the same for a strided 1x1 layer (its rows one by one)
    "ts_conv2d_s8_pixel_rows_checked": _conv,
    "ts_conv2d_s8_pixels_own": _conv,  # with the layer's own pixel loop (codegen.lower_conv own_pixel_loop)
    "ts_conv2d_s8_pixels_own_checked": _conv,
    # a streamed stage's CONV_2D members (codegen.lower_stream): lowered and checked as ts_conv2d_s8,
    # then renamed; the same parameters refused the same way
    "ts_conv2d_s8_checked": _conv,
    "ts_conv2d_s8_strip": _conv,
    "ts_conv2d_s8_strip_lone": _conv,  # rows of 6 a + 1 pixels
    "ts_conv2d_s8_pixel_widened": _conv,  # a 1x1 member on rows one pixel wide
    "ts_conv2d_s8_layer": _conv,  # the same on a Helium core, a small-field member with its layer table
    "ts_conv2d_s8_wide_checked": _conv,
    "ts_depthwise_conv2d_s8_staged": _depthwise,
    "ts_depthwise_conv2d_s8_checked": _depthwise,  # a streamed stage's member (codegen.lower_stream)
    "ts_depthwise_conv2d_s8_layer": _depthwise,  # the same on a Helium core, with its whole-window table
    "ts_expand_dw_s8": _expand_dw,  # a 1x1 expansion and its depthwise by channel groups
    "ts_fully_connected_s8": _fully_connected,
    "ts_fully_connected_s8_rows": _fully_connected,  # a streamed stage's FULLY_CONNECTED sink (codegen.lower_stream)
    "ts_lstm_s8": _lstm,
    "ts_mean_s8": _mean,
    "ts_mul_s8": _mul,
    "ts_prelu_s8": _prelu,
    "ts_quantize_f32_s8": _quantize,
    "ts_reduce_max_s8": _reduce_max,
    "ts_requantize_8bit": _requantize_8bit,
    "ts_requantize_int": _requantize_int,
    "ts_softmax_s8": _softmax,
    "ts_softmax_s8_s16": _softmax,
    "ts_space_batch_nd": _space_batch,
    "ts_squared_difference_s8": _squared_difference,
    "ts_sum_s8": _sum,
    "ts_svdf_s8": _svdf,
    "ts_transpose_conv_s8": _conv,
}


def check_call(call: KernelCall) -> None:
    """Raise `Unsupported` if `call`'s parameters are outside what its kernel checks at run time."""
    check = KERNEL_CHECKS.get(call.kernel)
    if check is not None:
        check(_Params(call))
