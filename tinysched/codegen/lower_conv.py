"""Lowerings of the windowed and weighted operators: convolutions, FULLY_CONNECTED and pooling."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tinysched.codegen.context import KernelCall, LoweringContext
from tinysched.codegen.errors import Unsupported
from tinysched.codegen.quant import (
    MAX_ACCUMULATED_PRODUCTS,
    activation_range,
    mbqm,
    quantize_multiplier,
)
from tinysched.codegen.table import lowering
from tinysched.memory.variants import KernelVariant, variant_of
from tinysched.model.graph import Graph, Operator
from tinysched.model.rewrite import explicit_padding
from tinysched.model.shapes import window_padding
from tinysched.model.uint8 import UINT8_ROUNDING, filter_offset


def _pads(
    op: Operator,
    in_hw: tuple[int, int],
    out_hw: tuple[int, int],
    kernel: tuple[int, int],
    strides: tuple[int, int],
    dilations: tuple[int, int],
) -> tuple[int, int]:
    """(pad_top, pad_left) the kernel offsets its windows by: TFLite's from the sizes for SAME/VALID
    (ComputePaddingWithOffset), or an EXPLICIT padding's top/left (tinysched.model.rewrite), whose
    bottom/right must give the output size (the kernels skip taps past the input's end)."""
    explicit = explicit_padding(op)
    if explicit is None:
        return tuple(  # type: ignore[return-value]
            window_padding(i, o, k, s, d)
            for i, o, k, s, d in zip(in_hw, out_hw, kernel, strides, dilations, strict=True)
        )
    for axis, (i, o, k, s, d) in enumerate(zip(in_hw, out_hw, kernel, strides, dilations, strict=True)):
        before, after = explicit[2 * axis], explicit[2 * axis + 1]
        if before < 0 or (i + before + after - (k - 1) * d - 1) // s + 1 != o:
            raise Unsupported(
                f"explicit padding {list(explicit)} does not give the output size {list(out_hw)}"
            )
    return explicit[0], explicit[2]


# |q - zero_point| * |w - filter zero point| <= 255 * 255 for a legacy uint8 model's filter
MAX_OFFSET_PRODUCTS = (2**31 - 1) // (255 * 255)
FILTER_OFFSET_KERNELS = {  # opcode -> (kernel, its parameters' type), ts_legacy_uint8.c
    "CONV_2D": ("ts_conv2d_filter_offset_s8", "ts_conv2d_offset_s8_params"),
    "DEPTHWISE_CONV_2D": ("ts_depthwise_conv2d_filter_offset_s8", "ts_depthwise_conv2d_offset_s8_params"),
}


def _conv_like(ctx: LoweringContext, op: Operator, call: KernelCall, depthwise: bool) -> None:
    x, w = op.inputs[0], op.inputs[1]
    b = op.inputs[2] if len(op.inputs) > 2 else -1
    y = op.outputs[0]
    ctx.expect(x, "int8")
    ctx.expect(y, "int8")
    ctx.expect(w, "int8")
    if not ctx.tensor(w).is_constant:
        raise Unsupported("non-constant filter")
    if b >= 0:
        ctx.expect(b, "int32")
    in_scale, in_zp = ctx.quant(x)
    out_scale, out_zp = ctx.quant(y)
    wq = ctx.tensor(w).quantization
    offset = filter_offset(ctx.graph, op)  # a legacy uint8 model's filter (tinysched.model.uint8)
    if wq is None or (any(z != 0 for z in wq.zero_point) and (len(wq.zero_point) != 1 or not offset)):
        raise Unsupported("filter must be symmetric int8 (zero point 0) or per-tensor quantised")
    n, ih, iw, ic = ctx.tensor(x).shape
    _, oh, ow, oc = ctx.tensor(y).shape
    fshape = ctx.tensor(w).shape
    fh, fw = fshape[1], fshape[2]
    if len(wq.scale) not in (1, oc):
        raise Unsupported(f"{len(wq.scale)} filter scales for {oc} output channels")
    scales = wq.scale if len(wq.scale) == oc else wq.scale * oc
    mults, shifts = zip(
        *(quantize_multiplier(float(in_scale) * float(s) / float(out_scale)) for s in scales),
        strict=True,
    )
    opts = op.options
    sh, sw = int(opts.get("stride_h", 1)), int(opts.get("stride_w", 1))
    dh, dw = int(opts.get("dilation_hfactor", 1) or 1), int(opts.get("dilation_wfactor", 1) or 1)
    if depthwise:
        dm = oc // ic if ic else 0
        if fshape[0] != 1 or fshape[3] != oc or dm * ic != oc:
            raise Unsupported(f"depthwise filter shape {list(fshape)} for {ic} -> {oc} channels")
        products = fh * fw
    else:
        if fshape[0] != oc or fshape[3] != ic:
            raise Unsupported(f"filter shape {list(fshape)} for {ic} -> {oc} channels (grouped conv)")
        products = fh * fw * ic
    if products >= (MAX_ACCUMULATED_PRODUCTS if not offset else MAX_OFFSET_PRODUCTS):
        raise Unsupported(f"{products} products per output could overflow an int32 accumulator")
    act_min, act_max = activation_range(opts.get("fused_activation_function", "NONE"), out_scale, out_zp)
    pad_top, pad_left = _pads(op, (ih, iw), (oh, ow), (fh, fw), (sh, sw), (dh, dw))
    params = [
        ("batches", n),
        ("in_h", ih),
        ("in_w", iw),
        ("in_c", ic),
        ("out_h", oh),
        ("out_w", ow),
        ("out_c", oc),
    ]
    if depthwise:
        params.append(("depth_multiplier", oc // ic))
    params += [
        ("filter_h", fh),
        ("filter_w", fw),
        ("stride_h", sh),
        ("stride_w", sw),
        ("dilation_h", dh),
        ("dilation_w", dw),
        ("pad_top", pad_top),
        ("pad_left", pad_left),
        ("input_offset", -in_zp),
        ("output_offset", out_zp),
        ("act_min", act_min),
        ("act_max", act_max),
    ]
    mult_name = ctx.array(call, "multiplier", "int32_t", mults, "per output channel")
    shift_name = ctx.array(call, "shift", "int32_t", shifts, "per output channel")
    call.params = [(k, str(v)) for k, v in params] + [("multiplier", mult_name), ("shift", shift_name)]
    call.args = [ctx.ptr(x), ctx.ptr(w), ctx.ptr(b) if b >= 0 else "NULL", ctx.ptr(y, const=False)]
    if offset:  # a legacy uint8 model's convolution: its own kernel, no variant
        call.kernel, call.params_type = FILTER_OFFSET_KERNELS[op.opcode]
        call.params.append(("filter_offset", str(offset)))
        # DSP cores: a DEPTHWISE_CONV_2D's int8 blocks, or the ts_rq fields of the kernel's passes of
        # four channels, both for the accumulators of w + filter_offset (its own formula elsewhere)
        offset_blocks = (
            depthwise_blocks(ctx.graph, op, mults, shifts, int(out_zp), offset)
            if depthwise and ctx.dsp_tables
            else None
        )
        offset_rq = (
            _table_fields(ctx.graph, op, mults, shifts, int(out_zp), oc, offset)
            if ctx.dsp_tables and offset_blocks is None and (not depthwise or oc == ic)
            else None
        )
        if offset_rq is not None:
            comment = (
                "ts_rq fields per output channel (accumulators of w + filter_offset): m, left + 1, base, rr"
            )
            call.params.append(("rq", ctx.array(call, "rq", "int32_t", offset_rq, comment)))
        offset_stem = (
            conv_stem_table(ctx.graph, op, mults, shifts, int(out_zp), offset)
            if not depthwise and ctx.dsp_tables
            else None
        )
        if offset_stem is not None:  # a 3x3 layer over 3 channels: the int8 stem path on w + filter_offset
            comment = (
                "per four output channels, doubled: biases + input_offset * sum(w + filter_offset), the stem "
                "table's words of w + filter_offset (ts_kernels.h CONV_2D stem)"
            )
            call.params.append(("stem", ctx.array(call, "stem", "int32_t", offset_stem, comment)))
        offset_pixels = (
            pixel_table(ctx.graph, op, mults, shifts, int(out_zp), (act_min, act_max), offset)
            if not depthwise and ctx.dsp_tables and (pad_top, pad_left) == (0, 0) and offset_stem is None
            else None
        )
        if offset_pixels is not None:  # a 1x1 layer: the int8 pixel path on w + filter_offset
            comment = pixel_table_comment(ic).replace("sum(w)", "sum(w + filter_offset)")
            call.params.append(
                ("pixel_table", ctx.array(call, "pixel_table", "int32_t", offset_pixels, comment))
            )
        if offset_blocks is not None:
            comment = (
                f"per four channels: 4 biases, 4 ts_rq (m, left + 1, base, rr), {fh * fw} taps x 2 "
                "widened words of filter + filter_offset"
            )
            call.params.append(("blocks", ctx.array(call, "blocks", "int32_t", offset_blocks, comment)))
        return
    blocks = (
        depthwise_blocks(ctx.graph, op, mults, shifts, int(out_zp)) if depthwise and ctx.dsp_tables else None
    )
    variant = variant_of(ctx.graph, op)
    stem = (
        conv_stem_table(ctx.graph, op, mults, shifts, int(out_zp))
        if not depthwise and ctx.dsp_tables
        else None
    )
    # a layer with the stem table runs the stem path on every call (ts_conv2d_s8.c stem_takes), so
    # the quads' table would be flash never read
    quads = (
        conv_quads_table(ctx.graph, op, mults, shifts, int(out_zp))
        if not depthwise and ctx.dsp_tables and stem is None
        else None
    )
    rq = blocks is None
    if quads is None and variant is not None and not depthwise and ctx.dsp_tables:
        quads = staged_pointwise_table(ctx.graph, op, variant, mults, shifts, int(out_zp))
        # the table holds every channel's ts_rq fields; where they are all ts_rq_prepare's (no
        # constant channel), the kernel's other paths prepare them and need no separate table
        rq = quads is None or not _all_rq_steps(ctx.graph, op, mults, shifts)
    if quads is not None:
        comment = (
            f"per output channel: its bias, {len(quads) // oc - 5} widened filter words, its ts_rq fields"
        )
        call.params.append(("quads", ctx.array(call, "quads", "int32_t", quads, comment)))
    if stem is not None:
        comment = (
            "per four output channels, doubled: biases + input_offset * sum(w), ninth bytes, 3 rows x 2 words x 4 "
            "channels of widened filter words, ts_rq m, base, rr, another group?"
        )
        call.params.append(("stem", ctx.array(call, "stem", "int32_t", stem, comment)))
    if blocks is not None:
        comment = f"per four channels: 4 biases, 4 ts_rq (m, left + 1, base, rr), {fh * fw} taps x 2 widened filter words"
        call.params.append(("blocks", ctx.array(call, "blocks", "int32_t", blocks, comment)))
    # (the planner gives such a layer no wide variant: own_path)
    pixels = (
        pixel_table(ctx.graph, op, mults, shifts, int(out_zp), (act_min, act_max))
        if quads is None
        and stem is None
        and variant is None
        and not depthwise
        and ctx.dsp_tables
        and ctx.whole_layers
        and (pad_top, pad_left) == (0, 0)
        else None
    )
    if pixels is not None:  # a whole layer whose pixel stays in registers (ts_kernels.h)
        call.args += pixel_path(ctx, call, op, pixels)
    if variant is not None:
        _staged(ctx, op, call, variant, mults, shifts, out_zp, rq=rq)


RQ_STEPS, RQ_CONST = 1, 2  # ts_rq's forms (firmware/kernels/ts_simd.h, ts_rq_form)


INT8_FILTER_REACH = 128  # the most |w| of an int8 filter (ts_simd.h ts_acc_reach's 128)


def acc_reach(products: int, input_offset: int, filter_reach: int = INT8_FILTER_REACH) -> int:
    """ts_acc_reach: how far a channel's accumulators get from its bias (|q + input_offset| *
    filter_reach per product: 128 for int8 filters, the most |w + filter_offset| of a legacy uint8
    layer's, up to 255, whose tables hold w + filter_offset)."""
    lo, hi = -128 + input_offset, 127 + input_offset
    return products * (max(-lo, hi) if lo < 0 else hi) * filter_reach


def offset_filter(graph: Graph, op: Operator, offset: int) -> np.ndarray | None:
    """A convolution's filter as the tables hold it: w + filter_offset (int64; the int8 filter itself
    for offset 0), or None where the filter is not a constant."""
    data = graph.tensors[op.inputs[1]].data
    return None if data is None else np.asarray(data).astype(np.int64) + offset


def filter_reach(graph: Graph, op: Operator, offset: int) -> int:
    """The most |w| a table of `op`'s filter holds: INT8_FILTER_REACH for an int8 filter (offset 0,
    as the kernels' run-time checks assume), else max |w + filter_offset| (<= 255)."""
    w = offset_filter(graph, op, offset) if offset else None
    return INT8_FILTER_REACH if w is None or w.size == 0 else int(np.abs(w).max())


def rq_form(multiplier: int, shift: int, bias: int, reach: int) -> int:
    """ts_rq_form: RQ_STEPS where the SMMLAR steps hold over [bias - reach, bias + reach], RQ_CONST
    where the formula gives one value there (a pruned channel), 0 otherwise."""
    b = abs(bias)
    if multiplier < 0 or not -31 <= shift <= 29 or reach < 0 or b + reach >= 1 << 31:
        return 0
    if shift >= -22 and (b + reach) << (max(shift, 0) + 1) < 1 << 31:
        return RQ_STEPS
    if shift <= 0:
        v = mbqm(bias - reach, multiplier, shift)
        if v == mbqm(bias + reach, multiplier, shift) and -(1 << 30) < v < 1 << 30:
            return RQ_CONST
    return 0


def rq_fields(
    multiplier: int, shift: int, output_offset: int, bias: int = 0, reach: int = 0
) -> tuple[int, int, int, int]:
    """ts_rq's fields (firmware/kernels/ts_simd.h: m, left + 1, base, rr) as int32 values, for the
    kernels' compile-time tables: ts_rq_prepare's for RQ_STEPS, the constant (m 0, base the value)
    for RQ_CONST, otherwise zeros: l1 0 sends the channel to the formula's own steps in the widened
    path, and the other kernels' checks refuse such a table."""
    form = rq_form(multiplier, shift, bias, reach)
    if form == RQ_CONST:
        return (0, 1, mbqm(bias, multiplier, shift) + output_offset, 0)
    left, right = max(shift, 0), max(-shift, 0)
    if form == 0 or right > 22:
        return (0, 0, 0, 0)
    base = (
        ((1 << (right - 1)) + (output_offset & 0xFFFFFFFF) * (1 << right)) & 0xFFFFFFFF
        if right
        else output_offset
    )
    base = base - (1 << 32) if base >= 1 << 31 else base
    return (multiplier, left + 1, base, right | (256 if right else 0))


def _all_rq_steps(graph: Graph, op: Operator, mults: Sequence[int], shifts: Sequence[int]) -> bool:
    """Whether every output channel of a CONV_2D takes ts_rq_prepare's fields (RQ_STEPS), so that
    ts_rq_ok holds without a compile-time table (a constant bias is required)."""
    x, w = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
    biases = _biases(graph, op, len(mults))
    if biases is None:
        return False
    zp = x.quantization.zero_point[0] if x.quantization is not None and x.quantization.zero_point else 0
    reach = acc_reach(w.shape[1] * w.shape[2] * w.shape[3], -int(zp))
    return all(
        rq_form(int(m), int(sh), bias, reach) == RQ_STEPS
        for m, sh, bias in zip(mults, shifts, biases, strict=True)
    )


def _biases(graph: Graph, op: Operator, channels: int) -> list[int] | None:
    """A convolution's biases (zeros without a bias), or None where the bias is not a constant."""
    b = op.inputs[2] if len(op.inputs) > 2 else -1
    if b < 0:
        return [0] * channels
    data = graph.tensors[b].data
    return None if data is None else [int(v) for v in data]


def rq_table(
    graph: Graph, op: Operator, mults: Sequence[int], shifts: Sequence[int], out_zp: int, offset: int = 0
) -> list[int] | None:
    """The ts_rq fields of every output channel of a CONV_2D or DEPTHWISE_CONV_2D, or None where the
    bias is not a constant (a constant channel's value is the bias's); `offset`, a legacy uint8
    layer's filter offset, for a table of w + offset (the accumulators' reach is then that filter's)."""
    x, w = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
    biases = _biases(graph, op, len(mults))
    if biases is None:
        return None
    fh, fw = w.shape[1], w.shape[2]
    products = fh * fw * (1 if op.opcode == "DEPTHWISE_CONV_2D" else x.shape[3])
    zp = x.quantization.zero_point[0] if x.quantization is not None and x.quantization.zero_point else 0
    reach = acc_reach(products, -int(zp), filter_reach(graph, op, offset))
    return [
        f
        for m, sh, bias in zip(mults, shifts, biases, strict=True)
        for f in rq_fields(int(m), int(sh), int(out_zp), bias, reach)
    ]


def _table_fields(
    graph: Graph,
    op: Operator,
    mults: Sequence[int],
    shifts: Sequence[int],
    out_zp: int,
    channels: int,
    offset: int = 0,
) -> list[int] | None:
    """rq_table's fields where the first `channels` channels all take ts_rq (a compile-time table
    holds no channel that needs the formula's own steps: l1 0), else None."""
    fields = rq_table(graph, op, mults, shifts, out_zp, offset)
    if fields is None or any(fields[4 * c + 1] == 0 for c in range(channels)):
        return None
    return fields


def _lanes(low: int, high: int) -> int:
    """Two int8 values as the int32 of two signed 16-bit lanes [low | high] (SXTB16's result)."""
    word = (low & 0xFFFF) | ((high & 0xFFFF) << 16)
    return word - (1 << 32) if word >= 1 << 31 else word


def depthwise_blocks(
    graph: Graph, op: Operator, mults: Sequence[int], shifts: Sequence[int], out_zp: int, offset: int = 0
) -> list[int] | None:
    """ts_depthwise_conv2d_s8's blocks (ts_kernels.h, "Blocks"): per four channels their biases,
    ts_rq fields and filter widened to 16-bit lanes; None where the kernel would not take them (a
    depth multiplier, dilation across, filters wider than 3, fewer than four channels) or could not
    (a bias not constant, a channel that needs the formula's own steps). With a legacy uint8 layer's
    filter offset the lanes hold w + offset (in [-255, 255]: ts_depthwise_conv2d_s8_blocks, for
    ts_depthwise_conv2d_filter_offset_s8), and in_c must be a multiple of 4: the tail channels'
    formula reads the raw filter."""
    x, w = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
    channels, (fh, fw) = x.shape[3], w.shape[1:3]
    dilation_w = int(op.options.get("dilation_wfactor", 1) or 1)
    if w.shape[3] != channels or dilation_w != 1 or fw > 3 or channels < 4 or w.data is None:
        return None
    if offset and channels % 4:
        return None
    groups = channels // 4
    fields = _table_fields(graph, op, mults, shifts, out_zp, 4 * groups, offset)
    biases = _biases(graph, op, channels)
    filt = offset_filter(graph, op, offset)
    if fields is None or biases is None or filt is None:
        return None
    taps = [[int(v) for v in row] for row in filt.reshape(fh * fw, channels)]
    table: list[int] = []
    for c in range(0, 4 * groups, 4):
        table += biases[c : c + 4] + fields[4 * c : 4 * c + 16]
        for tap in taps:
            table += [_lanes(tap[c], tap[c + 2]), _lanes(tap[c + 1], tap[c + 3])]
    return table


QUAD_K4 = 40  # ts_conv2d_s8.c TS_QUAD_K4: the largest K (rounded up to words) of the quads


def conv_quads_table(
    graph: Graph, op: Operator, mults: Sequence[int], shifts: Sequence[int], out_zp: int
) -> list[int] | None:
    """ts_conv2d_s8's table for the quads of small receptive fields (ts_kernels.h, CONV_2D): per
    output channel its bias, its filter rounded up to whole words with zeros and widened to 16-bit
    lanes, its ts_rq fields; None where the kernel would not take the quads (a 1x1 filter, K over
    QUAD_K4, eight input channels or more) or could not (a bias not constant, a channel that needs
    the formula's own steps)."""
    w = graph.tensors[op.inputs[1]]
    out_c, fh, fw, in_c = w.shape
    k = fh * fw * in_c
    k4 = (k + 3) & ~3
    # k4 <= QUAD_K4 also keeps K within ts_conv2d_s8.c's small fields (TS_CONV_PATCH_BYTES, 124)
    if fh * fw == 1 or in_c >= 8 or k4 > QUAD_K4 or w.data is None:
        return None
    return _widened_channels(graph, op, mults, shifts, out_zp)


STEM_GROUP = 4  # ts_conv2d_s8.c stem_pixels: output channels a pass


def conv_stem_table(
    graph: Graph, op: Operator, mults: Sequence[int], shifts: Sequence[int], out_zp: int, offset: int = 0
) -> list[int] | None:
    """ts_conv2d_s8's stem table (ts_kernels.h, "CONV_2D stem") for a 3x3 filter over 3 input
    channels with dilation 1, filter and biases doubled (every channel has a right shift, so ts_rq's
    s2 = acc << 1 is the kernel's accumulator): per group of four output channels (missing ones
    zero) their biases plus input_offset * sum(w) (so the kernel reads input bytes as they are), the
    ninth bytes of filter rows 0 and 1 as lanes per channel, row 2's two channels a word, per filter
    row its bytes 0-3 and 4-7 widened to lanes ([w0 | w2], [w1 | w3]) for the four channels, their
    ts_rq fields m, base, rr (a constant channel: filter, bias and m zero, base its value) and a
    word: 0 another group follows, 1 + t a last group of t < 4 channels, 1 a last of four. None
    where the kernel would not take it, a channel's ts_rq has no right shift (the kernel's steps
    assume one) or a channel needs the formula's own steps. `offset`: a legacy uint8 layer's filter
    offset; the table then holds w' = w + offset (doubled lanes in [-510, 510];
    ts_conv2d_s8_stem_table for ts_conv2d_filter_offset_s8) and fields for max|w'| per product."""
    x, w = graph.tensors[op.inputs[0]], graph.tensors[op.inputs[1]]
    if op.opcode != "CONV_2D" or w.data is None or len(w.shape) != 4 or tuple(w.shape[1:]) != (3, 3, 3):
        return None
    opts = op.options
    if int(opts.get("dilation_hfactor", 1) or 1) != 1 or int(opts.get("dilation_wfactor", 1) or 1) != 1:
        return None
    out_c = int(w.shape[0])
    biases = _biases(graph, op, out_c)
    fields = rq_table(graph, op, mults, shifts, out_zp, offset)
    filt = offset_filter(graph, op, offset)
    if biases is None or fields is None or filt is None:
        return None
    zp = x.quantization.zero_point[0] if x.quantization is not None and x.quantization.zero_point else 0
    if not -128 <= int(zp) <= 127:
        return None
    taps = [[2 * int(v) for v in row] for row in filt.reshape(out_c, 27)]
    rq: list[list[int]] = []
    acc0: list[int] = []  # the doubled accumulators' starts
    for c in range(out_c):
        m, l1, base, rr = fields[4 * c : 4 * c + 4]
        if m == 0 and rr == 0:  # a constant (RQ_CONST), or a zero multiplier: base whatever the sum
            taps[c] = [0] * 27
            acc0.append(0)
        elif l1 != 1 or rr == 0:  # the formula's own steps, or no right shift
            return None
        else:
            acc0.append(2 * (biases[c] - int(zp) * sum(taps[c]) // 2))
        rq.append([m, base, rr])
        if not -(1 << 31) <= acc0[-1] < 1 << 31:
            return None
    groups = (out_c + STEM_GROUP - 1) // STEM_GROUP
    pad = groups * STEM_GROUP - out_c
    taps += [[0] * 27] * pad
    acc0 += [0] * pad
    rq += [[0, 0, 0]] * pad
    table: list[int] = []
    for g in range(groups):
        cs = range(g * STEM_GROUP, (g + 1) * STEM_GROUP)
        table += [acc0[c] for c in cs]
        table += [_lanes(taps[c][8], taps[c][17]) for c in cs]
        table += [_lanes(taps[cs[0]][26], taps[cs[1]][26]), _lanes(taps[cs[2]][26], taps[cs[3]][26])]
        for ky in range(3):
            for j in (0, 4):
                for c in cs:
                    t = taps[c][9 * ky + j : 9 * ky + j + 4]
                    table += [_lanes(t[0], t[2]), _lanes(t[1], t[3])]
        for c in cs:
            table += rq[c]
        last = g == groups - 1
        table.append(0 if not last else 1 + (out_c % STEM_GROUP))
    return table


def _widened_channels(
    graph: Graph, op: Operator, mults: Sequence[int], shifts: Sequence[int], out_zp: int
) -> list[int] | None:
    """The quads' table format (ts_kernels.h, CONV_2D): per output channel its bias, its K filter
    bytes rounded up to whole words with zeros and widened to 16-bit lanes ([w_4g | w_4g+2],
    [w_4g+1 | w_4g+3] per group g), its ts_rq fields; None where a bias is not constant or a
    channel needs the formula's own steps."""
    w = graph.tensors[op.inputs[1]]
    out_c, fh, fw, in_c = w.shape
    k = fh * fw * in_c
    k4 = (k + 3) & ~3
    fields = _table_fields(graph, op, mults, shifts, out_zp, out_c)
    biases = _biases(graph, op, out_c)
    if fields is None or biases is None or w.data is None:
        return None
    rows = [[int(v) for v in row] + [0] * (k4 - k) for row in w.data.reshape(out_c, k)]
    table: list[int] = []
    for o, row in enumerate(rows):
        table.append(biases[o])
        for g in range(0, k4, 4):
            table += [_lanes(row[g], row[g + 2]), _lanes(row[g + 1], row[g + 3])]
        table += fields[4 * o : 4 * o + 4]
    return table


PIXEL_IN_C = (8, 12, 16)  # ts_conv2d_s8.c pixel_layer: the in_c whose pixel fits in registers
# ts_conv2d_s8.c pixel_steps32: in_c 32 in two halves, strided layers only, its partial sums on the stack
PIXEL32_MAX_OUT_C = 64
# int8 filter bytes << l1 stay int16 lanes (-128 << 8 = -32768); r >= 1 (no left shift) makes l1 1
PIXEL_MAX_L1 = 8


def _int32(value: int) -> int:
    """value wrapped to a signed 32-bit integer (the kernels' int32 arithmetic)."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _reads_inside(in_hw: Sequence[int], out_hw: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether a 1x1 filter without padding at these strides reads every output pixel's input from
    inside the input (ts_conv2d_s8.c pixel_layer's test): (out - 1) * stride < in on both axes."""
    return all(s >= 1 and o >= 1 and (o - 1) * s < i for i, o, s in zip(in_hw, out_hw, strides, strict=True))


def pixel_table(
    graph: Graph,
    op: Operator,
    mults: Sequence[int],
    shifts: Sequence[int],
    out_zp: int,
    act_range: tuple[int, int],
    offset: int = 0,
) -> list[int] | None:
    """ts_conv2d_s8's table for its pixel-in-registers path (ts_kernels.h, CONV_2D "pixel in
    registers"): per output channel (bias + input_offset * sum(w)) << l1, its filter widened to
    16-bit lanes ([w_4g | w_4g+2], [w_4g+1 | w_4g+3] per group g) each << l1, then m, base and rr
    (bit 9 set on the last channel). The SMLAD sum is then ts_rq's s2 with no shift. None where the
    path cannot hold: not a 1x1 layer without padding whose output pixels all read inside the input
    (any strides: the kernel steps stride_w * in_c bytes from pixel to pixel and stride_h input rows
    from row to row), in_c not 8, 12 or 16, out_c < in_c (the read/write order), an activation range
    narrower than int8
    (no clamp), a bias not constant, or a channel that is neither ts_rq's steps with a right shift
    (r >= 1: the negative correction is the sign bit) and l1 <= PIXEL_MAX_L1 nor a constant.
    `offset`: a legacy uint8 layer's filter offset; the table then holds w' = w + offset (in
    [-255, 255]; ts_conv2d_s8_pixel_table for ts_conv2d_filter_offset_s8), its ts_rq fields for
    accumulators reaching max|w'| per product, and every lane w' << l1 must stay an int16."""
    x, w, y = (graph.tensors[t] for t in (op.inputs[0], op.inputs[1], op.outputs[0]))
    out_c, fh, fw, in_c = w.shape
    opts = op.options
    if (
        op.opcode != "CONV_2D"
        or (fh, fw) != (1, 1)
        or not (
            in_c in PIXEL_IN_C
            or (
                in_c == 32
                and out_c <= PIXEL32_MAX_OUT_C
                and (opts.get("stride_h", 1), opts.get("stride_w", 1)) != (1, 1)
            )
        )
        or out_c < in_c
        or len(x.shape) != 4
        or len(y.shape) != 4
        or not _reads_inside(
            x.shape[1:3], y.shape[1:3], (int(opts.get("stride_h", 1)), int(opts.get("stride_w", 1)))
        )
        or any(explicit_padding(op) or ())
        or act_range != (-128, 127)
        or w.data is None
    ):
        return None
    fields = rq_table(graph, op, mults, shifts, out_zp, offset)
    biases = _biases(graph, op, out_c)
    filt = offset_filter(graph, op, offset)
    if fields is None or biases is None or filt is None:
        return None
    zp = x.quantization.zero_point[0] if x.quantization is not None and x.quantization.zero_point else 0
    table: list[int] = []
    for o, row in enumerate([int(v) for v in r] for r in filt.reshape(out_c, in_c)):
        m, l1, base, rr = fields[4 * o : 4 * o + 4]
        last = 512 if o == out_c - 1 else 0
        if m == 0 and rr == 0 and l1 == 1:  # a constant (rq_fields' RQ_CONST): s2 = 0 gives base
            table += [0] * (1 + in_c // 2) + [0, base, last]
            continue
        if l1 == 0 or rr & 255 == 0 or l1 > PIXEL_MAX_L1:
            return None
        if offset and not all(-(1 << 15) <= v << l1 < 1 << 15 for v in row):
            return None  # w + offset << l1 past an int16 lane
        table.append(_int32((biases[o] - int(zp) * sum(row)) << l1))
        for g in range(0, in_c, 4):
            table += [_lanes(row[g] << l1, row[g + 2] << l1), _lanes(row[g + 1] << l1, row[g + 3] << l1)]
        table += [m, base, rr | last]
    return table if in_c != 32 else _pixel32_halves(table, out_c)


def pixel_kernel(graph: Graph, op: Operator) -> str:
    """The kernel a 1x1 layer with a pixel table calls: ts_conv2d_s8_pixels where its output pixels'
    inputs are consecutive (stride 1), else ts_conv2d_s8_pixel_rows (row by row), so that the flat
    layers' calls test nothing more."""
    opts = op.options
    flat = (int(opts.get("stride_h", 1)), int(opts.get("stride_w", 1))) == (1, 1)
    return "ts_conv2d_s8_pixels" if flat else "ts_conv2d_s8_pixel_rows"


OWN_LOOP_IN_C = 8  # ts_kernels.h "own pixel loop": the in_c whose flat layers get a loop of their own
OWN_LOOP_MAX_OUT_C = 64  # its channels unrolled, 36 bytes of code each
OWN_LOOP_WORDS = 7  # per channel: acc0, 4 lane words, m, base (the pixel table's without rr)


def own_pixel_loop(graph: Graph, op: Operator, table: Sequence[int]) -> tuple[list[int], list[int]] | None:
    """The table and the right shifts of a layer's own pixel loop (ts_kernels.h, CONV_2D "own pixel
    loop"), from its pixel table: at in_c 8 the requantisation is most of a channel's work, so a
    flat layer (stride 1: ts_conv2d_s8_pixels) of 8 to OWN_LOOP_MAX_OUT_C channels gets every
    channel unrolled with its shift r as an SSAT immediate instead of an ASR by register. None for
    the other layers of the pixel path."""
    in_c = int(graph.tensors[op.inputs[0]].shape[3])
    out_c = int(graph.tensors[op.outputs[0]].shape[3])
    if (
        in_c != OWN_LOOP_IN_C
        or out_c > OWN_LOOP_MAX_OUT_C
        or pixel_kernel(graph, op) != "ts_conv2d_s8_pixels"
    ):
        return None
    words = 4 + in_c // 2
    channels = [list(table[words * o : words * o + words]) for o in range(out_c)]
    return [w for ch in channels for w in ch[:OWN_LOOP_WORDS]], [ch[-1] & 255 for ch in channels]


def own_loop_code(name: str, shifts: Sequence[int]) -> str:
    """The generated C of a layer's own pixel loop `name` (TS_PIXEL_OWN_LOOP, one TS_PIXEL_OWN_CHANNEL
    per output channel: SSAT's shift its r, or none for a constant channel)."""
    lines = [
        "/* its own pixel loop: every channel unrolled, SSAT shifting by the channel's r (ts_kernels.h, CONV_2D "
        '"own pixel loop") */',
        f"TS_PIXEL_OWN_LOOP({name}, {OWN_LOOP_WORDS * 4 * len(shifts)},",
    ]
    lines += [
        f'    TS_PIXEL_OWN_CHANNEL("{f"asr #{r}" if r else "lsl #0"}") /* channel {o} */'
        for o, r in enumerate(shifts)
    ]
    lines.append(")")
    return "\n".join(lines)


def pixel_path(ctx: LoweringContext, call: KernelCall, op: Operator, table: list[int]) -> list[str]:
    """Give `call` (a 1x1 layer, or a stage's member) the pixel path with its table (`pixel_table`):
    its kernel, its arrays (and its own loop where `own_pixel_loop` takes it) and the arguments
    they add to the call."""
    graph = ctx.graph
    in_c = int(graph.tensors[op.inputs[0]].shape[3])
    own = own_pixel_loop(graph, op, table)
    if own is None:
        call.kernel = pixel_kernel(graph, op)
        return [ctx.array(call, "pixel_table", "int32_t", table, pixel_table_comment(in_c))]
    own_table, shifts = own
    call.kernel = "ts_conv2d_s8_pixels_own"
    comment = "per output channel: (bias + input_offset * sum(w)) << l1, 4 filter words << l1, m, base"
    name = f"{ctx.prefix}_{call.symbol}_pixel_loop"
    call.local_code.append(own_loop_code(name, shifts))
    return [ctx.array(call, "pixel_table", "int32_t", own_table, comment), name]


def pixel_table_comment(in_c: int) -> str:
    """The generated C's comment on a pixel table of `in_c` input channels (its layout)."""
    if in_c == 32:
        return (
            "out_c * 4; per output channel from the last: (bias + input_offset * sum(w)) << l1, 8 filter words "
            "<< l1 (bytes 0-15); out_c * 4; per output channel: 8 filter words << l1 (bytes 16-31), m, base, rr"
        )
    return f"per output channel: (bias + input_offset * sum(w)) << l1, {in_c // 2} filter words << l1, m, base, rr"


def _pixel32_halves(table: list[int], out_c: int) -> list[int]:
    """The in_c 32 table (ts_conv2d_s8.c pixel_steps32) from the one-pass layout of 20 words a channel
    (acc0, 16 lane words, m, base, rr): out_c * 4, per channel from the last acc0 and the first 8
    lane words (bytes 0-15), out_c * 4 again, per channel from the first the last 8 lane words
    (bytes 16-31), m, base and rr."""
    channels = [table[20 * o : 20 * o + 20] for o in range(out_c)]
    first = [word for ch in reversed(channels) for word in ch[:9]]
    second = [word for ch in channels for word in ch[9:]]
    return [4 * out_c, *first, 4 * out_c, *second]


def own_path(graph: Graph, op: Operator) -> bool:
    """Whether the code generator runs `op` on DSP cores by a path of its own that needs no strip:
    the pixel in registers (ts_conv2d_s8_pixels / _pixel_rows, `pixel_table`) or the stem
    (`conv_stem_table`, taken before the widened path even where a strip is given). The planner
    then gives it no ``wide`` strip scratch, which would be planned bytes never touched
    (tinysched.arena.scratch, `keep_default`)."""
    if op.opcode != "CONV_2D" or len(op.inputs) < 2:
        return False
    x, w, y = (graph.tensors[t] for t in (op.inputs[0], op.inputs[1], op.outputs[0]))
    quants = (x.quantization, w.quantization, y.quantization)
    if any(t.dtype != "int8" for t in (x, w, y)) or any(q is None or len(q.scale) == 0 for q in quants):
        return False
    assert x.quantization is not None and w.quantization is not None and y.quantization is not None
    if any(z != 0 for z in w.quantization.zero_point) or len(w.shape) != 4:
        return False
    in_scale, out_scale = float(x.quantization.scale[0]), float(y.quantization.scale[0])
    out_zp = int(y.quantization.zero_point[0]) if len(y.quantization.zero_point) else 0
    scales = list(w.quantization.scale)
    scales = scales * w.shape[0] if len(scales) == 1 else scales
    if len(scales) != w.shape[0] or out_scale <= 0:
        return False
    mults, shifts = zip(*(quantize_multiplier(in_scale * float(s) / out_scale) for s in scales), strict=True)
    act = activation_range(op.options.get("fused_activation_function", "NONE"), out_scale, out_zp)
    return (
        pixel_table(graph, op, mults, shifts, out_zp, act) is not None
        or conv_stem_table(graph, op, mults, shifts, out_zp) is not None
    )


def staged_pointwise_table(
    graph: Graph,
    op: Operator,
    variant: KernelVariant,
    mults: Sequence[int],
    shifts: Sequence[int],
    out_zp: int,
) -> list[int] | None:
    """The staged 1x1 CONV_2D's table of widened channels (the quads' format, passed as `quads`;
    ts_kernels.h, "CONV_2D staged"), for a layer whose staged kernel widens its pixels in threes
    (in_c a multiple of 4 and at most out_c, chunk * out_c >= 6 * in_c); None otherwise or where
    the kernel could not use it (see _widened_channels)."""
    w = graph.tensors[op.inputs[1]]
    out_c, fh, fw, in_c = w.shape
    if (
        op.opcode != "CONV_2D"
        or variant.name != "staged"
        or (fh, fw) != (1, 1)
        or in_c % 4
        or in_c > out_c
        or variant.param * out_c < 6 * in_c
    ):
        return None
    return _widened_channels(graph, op, mults, shifts, out_zp)


def pixel_widened_table(
    graph: Graph, op: Operator, mults: Sequence[int], shifts: Sequence[int], out_zp: int
) -> list[int] | None:
    """The widened channels (the quads' table format) of a 1x1 CONV_2D whose rows one pixel wide
    ts_conv2d_s8_pixel_widened runs (a streamed stage's member): its LDM channel loop takes in_c a
    multiple of 8 (whole runs of four lane words); None otherwise or where _widened_channels gives
    none. Flash: 4 * (5 + in_c / 2) bytes a channel, about twice the int8 filter."""
    w = graph.tensors[op.inputs[1]]
    if op.opcode != "CONV_2D" or len(w.shape) != 4 or tuple(w.shape[1:3]) != (1, 1) or int(w.shape[3]) % 8:
        return None
    return _widened_channels(graph, op, mults, shifts, out_zp)


MVE_LAYER_CHANNELS = 64  # ts_mve.h TS_MVE_LAYER_CH: the most channels a Helium layer table holds


def mve_dw_eff_table(graph: Graph, op: Operator, input_offset: int) -> list[int] | None:
    """A DEPTHWISE_CONV_2D's Helium whole-window table (ts_mve.h ts_mve_dw_eff_table, made here once
    instead of on the kernel's calls): for each whole pair of 8-channel blocks c = 0, 16, ..., the
    even then the odd channels of c..c+7, then of c+8..c+15, each bias + input_offset * its filter
    summed over every tap (wrapped to int32, as the kernel's sum wraps); for
    ts_depthwise_conv2d_s8_layer (a streamed stage's depthwise member on a Helium core, called row by
    row). None unless depth multiplier 1 and 32 to MVE_LAYER_CHANNELS channels (ts_mve_depthwise_pixels'
    table) with constant weights and bias."""
    w = graph.tensors[op.inputs[1]]
    if op.opcode != "DEPTHWISE_CONV_2D" or w.data is None or len(w.shape) != 4:
        return None
    in_c = int(graph.tensors[op.inputs[0]].shape[3])
    out_c = int(w.shape[3])
    if out_c != in_c or not 32 <= in_c <= MVE_LAYER_CHANNELS:
        return None
    bias_t = op.inputs[2] if len(op.inputs) > 2 and op.inputs[2] >= 0 else None
    bias = graph.tensors[bias_t].data if bias_t is not None else None
    if bias_t is not None and bias is None:
        return None
    sums = w.data.reshape(-1, out_c).astype("int64").sum(axis=0)
    table = []
    for c in range(0, in_c - 15, 16):
        for h in (0, 8):
            for ch in [c + h + i for i in (0, 2, 4, 6)] + [c + h + i for i in (1, 3, 5, 7)]:
                b = int(bias.reshape(-1)[ch]) if bias is not None else 0
                v = (b + input_offset * int(sums[ch])) & 0xFFFFFFFF
                table.append(v - (1 << 32) if v >= 1 << 31 else v)
    return table


def mve_layer_table(
    graph: Graph, op: Operator, mults: Sequence[int], shifts: Sequence[int], input_offset: int
) -> list[int] | None:
    """A 1x1 CONV_2D's Helium layer table (ts_mve.h ts_mve_layer_table, made here once instead of
    on the kernel's calls): per output channel bias + input_offset * sum(w) (wrapped to int32, as
    the kernel's sum wraps), multiplier, shift; for ts_conv2d_s8_staged_layer (a streamed stage's
    narrow 1x1 member on a Helium core, called row by row: rows too short for the kernel to make
    the table itself). None over MVE_LAYER_CHANNELS channels or without constant weights."""
    w = graph.tensors[op.inputs[1]]
    if op.opcode != "CONV_2D" or w.data is None or len(w.shape) != 4 or w.shape[0] > MVE_LAYER_CHANNELS:
        return None
    out_c = int(w.shape[0])
    sums = w.data.reshape(out_c, -1).astype("int64").sum(axis=1)
    bias_t = op.inputs[2] if len(op.inputs) > 2 and op.inputs[2] >= 0 else None
    bias = graph.tensors[bias_t].data if bias_t is not None else None
    if bias_t is not None and bias is None:
        return None
    table = []
    for c in range(out_c):
        b = int(bias.reshape(-1)[c]) if bias is not None else 0
        v = (b + input_offset * int(sums[c])) & 0xFFFFFFFF
        table += [v - (1 << 32) if v >= 1 << 31 else v, int(mults[c]), int(shifts[c])]
    return table


def _staged(
    ctx: LoweringContext,
    op: Operator,
    call: KernelCall,
    variant: KernelVariant,
    mults: tuple[int, ...],
    shifts: tuple[int, ...],
    out_zp: int,
    rq: bool = True,
) -> None:
    """The operator's recorded in-place variant (tinysched.memory.variants): its kernel, the scratch tensor
    `with_scratch` added as its last output, its geometry number and the ts_rq table (NULL without
    `rq`: a depthwise layer's blocks hold its fields, and a staged 1x1 layer's table of widened
    channels holds them where every one is ts_rq_prepare's)."""
    scratch = op.outputs[-1]
    if len(op.outputs) < 2 or ctx.tensor(scratch).nbytes < variant.scratch_bytes:
        raise Unsupported(f"variant {variant.name} needs a scratch tensor of {variant.scratch_bytes} bytes")
    table = rq_table(ctx.graph, op, mults, shifts, int(out_zp)) if rq else None
    name = (
        "NULL"
        if table is None
        else ctx.array(call, "rq", "int32_t", table, "ts_rq fields per output channel: m, left + 1, base, rr")
    )
    call.kernel = variant.kernel
    call.args += [ctx.ptr(scratch, const=False), str(variant.param), name]
    call.comment.append(
        f"kernel variant {variant.name}: {variant.param_name} {variant.param}, "
        f"{variant.scratch_bytes} bytes of scratch (ts_kernels.h)"
    )


@lowering("CONV_2D")
def lower_conv_2d(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    call.kernel, call.params_type = "ts_conv2d_s8", "ts_conv2d_s8_params"
    _conv_like(ctx, op, call, depthwise=False)


@lowering("DEPTHWISE_CONV_2D")
def lower_depthwise_conv_2d(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    call.kernel, call.params_type = "ts_depthwise_conv2d_s8", "ts_depthwise_conv2d_s8_params"
    _conv_like(ctx, op, call, depthwise=True)


@lowering("TRANSPOSE_CONV")
def lower_transpose_conv(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    w, x = op.inputs[1], op.inputs[2]
    bias = op.inputs[3] if len(op.inputs) > 3 else -1
    y = op.outputs[0]
    ctx.expect(x, "int8")
    ctx.expect(y, "int8")
    ctx.expect(w, "int8")
    if not ctx.tensor(w).is_constant:
        raise Unsupported("non-constant filter")
    if bias >= 0:
        ctx.expect(bias, "int32")
    (si, zi), (so, zo) = ctx.quant(x), ctx.quant(y)
    wq = ctx.tensor(w).quantization
    if wq is None or any(z != 0 for z in wq.zero_point):
        raise Unsupported("filter must be symmetric int8 (zero point 0)")
    n, ih, iw, ic = ctx.nhwc(x)
    _, oh, ow, oc = ctx.nhwc(y)
    fo, fh, fw, fi = ctx.tensor(w).shape
    if fo != oc or fi != ic:
        raise Unsupported(f"filter shape {list(ctx.tensor(w).shape)} for {ic} -> {oc} channels")
    if len(wq.scale) not in (1, oc):
        raise Unsupported(f"{len(wq.scale)} filter scales for {oc} output channels")
    if fh * fw * ic >= MAX_ACCUMULATED_PRODUCTS:
        raise Unsupported("too many products per output for an int32 accumulator")
    scales = wq.scale if len(wq.scale) == oc else wq.scale * oc
    mults, shifts = zip(*(quantize_multiplier(float(si) * float(s) / float(so)) for s in scales), strict=True)
    sh, sw = int(op.options.get("stride_h", 1)), int(op.options.get("stride_w", 1))
    # transpose_conv.cc: padding as for a convolution from the output size to the input size.
    same = op.options.get("padding") == "SAME"
    pad_top = window_padding(oh, -(-oh // sh), fh, sh, 1) if same else 0
    pad_left = window_padding(ow, -(-ow // sw), fw, sw, 1) if same else 0
    act_min, act_max = activation_range(op.options.get("fused_activation_function", "NONE"), so, zo)
    params = [
        ("batches", n), ("in_h", ih), ("in_w", iw), ("in_c", ic), ("out_h", oh), ("out_w", ow),
        ("out_c", oc), ("filter_h", fh), ("filter_w", fw), ("stride_h", sh), ("stride_w", sw),
        ("pad_top", pad_top), ("pad_left", pad_left), ("input_offset", -zi), ("output_offset", zo),
        ("act_min", act_min), ("act_max", act_max),
    ]  # fmt: skip
    call.kernel, call.params_type = "ts_transpose_conv_s8", "ts_transpose_conv_s8_params"
    call.params = [(k, str(v)) for k, v in params] + [
        ("multiplier", ctx.array(call, "multiplier", "int32_t", mults, "per output channel")),
        ("shift", ctx.array(call, "shift", "int32_t", shifts, "per output channel")),
    ]
    call.args = [ctx.ptr(x), ctx.ptr(w), ctx.ptr(bias) if bias >= 0 else "NULL", ctx.ptr(y, const=False)]


@lowering("FULLY_CONNECTED")
def lower_fully_connected(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    call.kernel, call.params_type = "ts_fully_connected_s8", "ts_fully_connected_s8_params"
    x, w = op.inputs[0], op.inputs[1]
    b = op.inputs[2] if len(op.inputs) > 2 else -1
    y = op.outputs[0]
    ctx.expect(x, "int8")
    ctx.expect(y, "int8")
    ctx.expect(w, "int8")
    if not ctx.tensor(w).is_constant:
        raise Unsupported("non-constant weights")
    if b >= 0:
        ctx.expect(b, "int32")
    if op.options.get("weights_format", 0) not in (0, "DEFAULT"):
        raise Unsupported("shuffled weights format")
    in_scale, in_zp = ctx.quant(x)
    out_scale, out_zp = ctx.quant(y)
    wq = ctx.tensor(w).quantization
    if wq is None:
        raise Unsupported("unquantised weights")
    out_depth, in_depth = ctx.tensor(w).shape
    if in_depth >= MAX_ACCUMULATED_PRODUCTS:
        raise Unsupported(f"{in_depth} products per output could overflow an int32 accumulator")
    size = math.prod(ctx.tensor(x).shape)
    if size % in_depth:
        raise Unsupported(f"input of {size} elements is not a multiple of depth {in_depth}")
    per_channel = len(wq.scale) > 1
    if per_channel and (len(wq.scale) != out_depth or any(z != 0 for z in wq.zero_point)):
        raise Unsupported("per-channel weights need one scale per output and zero points 0")
    mults, shifts = zip(
        *(quantize_multiplier(float(in_scale) * float(s) / float(out_scale)) for s in wq.scale),
        strict=True,
    )
    act_min, act_max = activation_range(
        op.options.get("fused_activation_function", "NONE"), out_scale, out_zp
    )
    call.params = [
        ("batches", str(size // in_depth)),
        ("in_depth", str(in_depth)),
        ("out_depth", str(out_depth)),
        ("input_offset", str(-in_zp)),
        ("filter_offset", str(-wq.zero_point[0])),
        ("output_offset", str(out_zp)),
        ("act_min", str(act_min)),
        ("act_max", str(act_max)),
        ("per_channel", "1" if per_channel else "0"),
        (
            "multiplier",
            ctx.array(
                call,
                "multiplier",
                "int32_t",
                mults,
                "per output" if per_channel else "one for all outputs",
            ),
        ),
        (
            "shift",
            ctx.array(
                call, "shift", "int32_t", shifts, "per output" if per_channel else "one for all outputs"
            ),
        ),
    ]
    call.args = [ctx.ptr(x), ctx.ptr(w), ctx.ptr(b) if b >= 0 else "NULL", ctx.ptr(y, const=False)]


def _pool(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    x, y = op.inputs[0], op.outputs[0]
    ctx.expect(x, "int8")
    ctx.expect(y, "int8")
    if ctx.quant(x) != ctx.quant(y):
        raise Unsupported("input and output quantisation differ")
    out_scale, out_zp = ctx.quant(y)
    n, ih, iw, c = ctx.tensor(x).shape
    _, oh, ow, _ = ctx.tensor(y).shape
    opts = op.options
    fh, fw = int(opts["filter_height"]), int(opts["filter_width"])
    sh, sw = int(opts["stride_h"]), int(opts["stride_w"])
    act_min, act_max = activation_range(opts.get("fused_activation_function", "NONE"), out_scale, out_zp)
    pad_top, pad_left = _pads(op, (ih, iw), (oh, ow), (fh, fw), (sh, sw), (1, 1))
    call.params_type = "ts_pool2d_s8_params"
    call.params = [
        (k, str(v))
        for k, v in (
            ("batches", n),
            ("in_h", ih),
            ("in_w", iw),
            ("channels", c),
            ("out_h", oh),
            ("out_w", ow),
            ("filter_h", fh),
            ("filter_w", fw),
            ("stride_h", sh),
            ("stride_w", sw),
            ("pad_top", pad_top),
            ("pad_left", pad_left),
            ("act_min", act_min),
            ("act_max", act_max),
        )
    ]
    call.args = [ctx.ptr(x), ctx.ptr(y, const=False)]


@lowering("AVERAGE_POOL_2D")
def lower_average_pool_2d(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    # a legacy uint8 model's pool rounds as TFLite's uint8 kernel (tinysched.model.uint8)
    call.kernel = "ts_avg_pool2d_half_up_s8" if op.options.get(UINT8_ROUNDING) else "ts_avg_pool2d_s8"
    _pool(ctx, op, call)


@lowering("MAX_POOL_2D")
def lower_max_pool_2d(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    call.kernel = "ts_max_pool2d_s8"
    _pool(ctx, op, call)
