"""How far an operator's output may share bytes with its input: one table, from the kernels' access order.

The tensor model (`tinysched.memory.tensor`) gives every tensor its own bytes for its whole lifetime. Our
kernels are more forgiving, and `firmware/include/ts_kernels.h` documents how: each walks its output
in increasing address order in *groups* (an element, a pixel, a chunk of pixels, a batch row) and,
while a group is written, reads only that group's own receptive field. So an output placed at offset
o may overlap an input at offset i that dies at that operator as long as every output byte written
so far lies below every input byte still to be read. With R(k) the lowest input offset the kernel
may still read once it starts writing group k, and W(k) the end of the output bytes written once
group k is done, that is o + W(k) <= i + R(k) for every k:

    o - i <= D := min_k (R(k) - W(k))            (or the two do not overlap at all)

`OVERLAP` maps an opcode to the function that computes D (bytes) for one (input, output) pair, or
None when the kernel tolerates no overlap; `VARIANT_OVERLAP` does the same for the kernel variants
(tinysched.memory.variants: another kernel for the opcode with its own documented order), which an operator
gets when it records one. Nothing is inferred from C source: each entry says which
documented order it relies on. Where the header leaves a choice open (how pixels pair up, which fast
path a board takes), D is the minimum over every possibility, so one plan is safe on every build.

Some outputs need no bytes of their own at all: they are *aliases*, (root, byte offset) ranges of
another tensor's buffer (`ALIAS_RULES`, opcode -> layout rule). RESHAPE, SQUEEZE and EXPAND_DIMS
outputs are their input's bytes; a SPLIT / SPLIT_V / UNPACK / SLICE / STRIDED_SLICE output that is
one contiguous range of its input sits at that range; a CONCATENATION whose inputs are each one
contiguous range of its output is built in place: every producer writes its slice, nothing copies.
Each needs the same type and quantisation on both sides (else the kernel requantises: it keeps its
copy).

`refine(graph)` turns this into a memory model the planner can use (`MODELS`, name -> function):

- `storage`: the graph with every alias given 0 bytes and its readers also reading the buffer
  that holds it, so the buffer lives until the alias's last reader (same operators, same orders);
  an in-place concatenation's buffer is born before its first slice is written, through a
  synthetic no-code operator every slice producer depends on (the scheduler and the bounds see a
  graph with it; every order outside is over the graph's own operators: `Refinement.lifetimes`);
- `pairs`: operator -> the one (input, output) overlap it gets, only where the input's storage has
  that operator as its only reader (then the input dies there in *every* order, so the saving does
  not depend on the order and the cut bounds stay exact);
- the step that runs such an operator costs its live bytes less `Pair.saving()`: the most the two
  buffers can overlap, which is exactly what the placers put them at.

docs/memory-model.md states the refined model in prose.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from tinysched.errors import TinyschedError
from tinysched.memory.stream import STREAM_OPCODE, WINDOWED, stream_of, stream_shift, whole_bytes_saved
from tinysched.memory.tensor import Lifetime, lifetimes, profile
from tinysched.memory.variants import variant_of
from tinysched.model.fold import NotFoldable, strided_slice_index
from tinysched.model.graph import Graph, Operator
from tinysched.model.resize import resize_source_rows
from tinysched.model.rewrite import explicit_padding
from tinysched.model.shapes import window_padding

__all__ = [
    "ALIAS_RULES",
    "MODELS",
    "OVERLAP",
    "VARIANT_OVERLAP",
    "VIEW_OPS",
    "Alias",
    "Pair",
    "Refinement",
    "StepSaving",
    "contiguous_range",
    "max_shift",
    "memory_model",
    "refine",
    "step_savings_report",
    "tensor_model",
    "variant_shift",
]

VIEW_OPS = ("RESHAPE", "SQUEEZE", "EXPAND_DIMS")
MEMORY_MODEL_NAMES = ("tensor", "refined")


# ---- D from groups ----------------------------------------------------------------------------


def _suffix_min(values: np.ndarray) -> np.ndarray:
    return np.minimum.accumulate(values[::-1])[::-1]


def _d_groups(in_lo: np.ndarray, out_end: np.ndarray, read_first: bool, in_bytes: int) -> int:
    """min_k (R(k) - W(k)) over groups in output order.

    `in_lo[k]`: lowest input byte group k reads; `out_end[k]`: end of group k's output bytes (groups
    are consecutive ranges). `read_first`: the group's reads all happen before its first write (an
    elementwise kernel), so R(k) is the lowest byte of the *later* groups; otherwise the writes of a
    group are interleaved with its reads and R(k) includes group k's own field."""
    lows = _suffix_min(in_lo.astype(np.int64))
    if read_first:
        lows = np.concatenate((lows[1:], [in_bytes]))
    return int((lows - out_end.astype(np.int64)).min())


def _chunked(in_lo: np.ndarray, out_end: np.ndarray, group: np.ndarray, in_bytes: int) -> int:
    """D when pixels are written in the groups numbered by `group` (non-decreasing), each group's
    writes interleaved with its reads."""
    starts = np.flatnonzero(np.concatenate(([True], group[1:] != group[:-1])))
    lows = np.minimum.reduceat(in_lo, starts)
    ends = np.maximum.reduceat(out_end, starts)
    return _d_groups(lows, ends, False, in_bytes)


def _any_runs(in_lo: np.ndarray, out_end: np.ndarray, size: int) -> int:
    """D for *any* split of the pixels into runs of at most `size` consecutive pixels (the k x k
    convolution pairs pixels where their tap rectangles agree, which the header leaves open): while
    pixel p's run is written, at most the next size-1 pixels' bytes are written and at most the
    previous size-1 pixels' fields are still read."""
    n = len(in_lo)
    lows = _suffix_min(in_lo.astype(np.int64))
    idx = np.arange(n)
    reach = out_end[np.minimum(idx + size - 1, n - 1)].astype(np.int64)
    pending = lows[np.maximum(idx - size + 1, 0)]
    return int((pending - reach).min())


def _pixels(graph: Graph, op: Operator, kernel: tuple[int, int], dilation: tuple[int, int]):
    """Per output pixel in NHWC row-major order: the lowest input byte of its receptive field (its
    top-left tap, channel 0, clipped to the input: never above the real lowest read, so D stays
    conservative), the end of its output bytes, and its output row number (batch * out_h + y)."""
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if len(x.shape) != 4 or len(y.shape) != 4:
        return None
    n, ih, iw, ic = x.shape
    _, oh, ow, oc = y.shape
    opts = op.options
    sh, sw = int(opts.get("stride_h", 1)), int(opts.get("stride_w", 1))
    explicit = explicit_padding(op)
    if explicit is not None:
        pt, pl = explicit[0], explicit[2]
    else:
        pt = window_padding(ih, oh, kernel[0], sh, dilation[0])
        pl = window_padding(iw, ow, kernel[1], sw, dilation[1])
    ein = x.nbytes // max(math.prod(x.shape), 1)
    eout = y.nbytes // max(math.prod(y.shape), 1)
    b, yy, xx = np.meshgrid(np.arange(n), np.arange(oh), np.arange(ow), indexing="ij")
    b, yy, xx = b.ravel(), yy.ravel(), xx.ravel()
    row = np.clip(yy * sh - pt, 0, ih - 1)
    col = np.clip(xx * sw - pl, 0, iw - 1)
    in_lo = ((b * ih + row) * iw + col) * ic * ein
    out_end = (np.arange(n * oh * ow) + 1) * oc * eout
    return in_lo.astype(np.int64), out_end.astype(np.int64), (b * oh + yy).astype(np.int64), x.nbytes


def _filter_pixels(graph: Graph, op: Operator):
    """`_pixels` for a convolution: its window is the filter's height and width (input 1, OHWI or
    1HWC), dilated by the operator's dilation factors."""
    w = graph.tensors[op.inputs[1]]
    dh = int(op.options.get("dilation_hfactor", 1) or 1)
    dw = int(op.options.get("dilation_wfactor", 1) or 1)
    return _pixels(graph, op, (w.shape[1], w.shape[2]), (dh, dw))


def _conv(graph: Graph, op: Operator, position: int, out: int) -> int | None:
    """CONV_2D (ts_kernels.h, CONV_2D "Read/write order"): groups of one or two horizontally
    adjacent pixels of a row (patch and run paths, pairing left open: any runs of <= 2); aligned pairs
    of the flat pixel order (pointwise path); chunks of up to 16 pixels of a row, or of the flat order
    for a stride-1 pointwise conv (1x1 DSP and Helium paths). The Helium (MVE, Cortex-M55) paths keep
    these groups, so D needs no entry of its own. Reads and writes interleave within a group."""
    if position != 0 or out != 0:
        return None
    w = graph.tensors[op.inputs[1]]
    fh, fw = w.shape[1], w.shape[2]
    px = _filter_pixels(graph, op)
    if px is None:
        return None
    in_lo, out_end, rows, in_bytes = px
    flat = np.arange(len(in_lo))
    ow = graph.tensors[op.outputs[0]].shape[2]
    shifts = [_any_runs(in_lo, out_end, 2)]  # pairs of the flat order (pointwise) are such runs
    if fh == fw == 1:
        shifts.append(_chunked(in_lo, out_end, rows * ow + (flat % ow) // 16, in_bytes))
        shifts.append(_chunked(in_lo, out_end, flat // 16, in_bytes))
    return min(shifts)


def _depthwise(graph: Graph, op: Operator, position: int, out: int) -> int | None:
    """DEPTHWISE_CONV_2D (ts_kernels.h "Read/write order"): one pixel at a time, or chunks of up to
    32 pixels of one row (DSP and Helium paths), channel blocks interleaved with reads within a group."""
    if position != 0 or out != 0:
        return None
    px = _filter_pixels(graph, op)
    if px is None:
        return None
    in_lo, out_end, rows, in_bytes = px
    ow = graph.tensors[op.outputs[0]].shape[2]
    flat = np.arange(len(in_lo))
    return min(
        _chunked(in_lo, out_end, flat, in_bytes),
        _chunked(in_lo, out_end, rows * ow + (flat % ow) // 32, in_bytes),
    )


def _pool(graph: Graph, op: Operator, position: int, out: int) -> int | None:
    """AVERAGE_POOL_2D / MAX_POOL_2D (ts_avg_pool2d_s8.c, ts_max_pool2d_s8.c: one loop nest over
    batch, output row, output column, channel; each output byte written right after its window is
    read): groups of one pixel, channels interleaved with reads."""
    if position != 0 or out != 0:
        return None
    fh, fw = int(op.options["filter_height"]), int(op.options["filter_width"])
    px = _pixels(graph, op, (fh, fw), (1, 1))
    if px is None:
        return None
    in_lo, out_end, _, in_bytes = px
    return _chunked(in_lo, out_end, np.arange(len(in_lo)), in_bytes)


def _fully_connected(graph: Graph, op: Operator, position: int, out: int) -> int | None:
    """FULLY_CONNECTED (ts_kernels.h "Read/write order"): batch by batch, each batch's outputs
    interleaved with reads of its input row. With one batch the output can only sit below the input."""
    if position != 0 or out != 0:
        return None
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    out_depth = y.shape[-1] if y.shape else 1
    batches = max(math.prod(y.shape) // max(out_depth, 1), 1)
    if x.nbytes % batches or y.nbytes % batches:
        return None
    k = np.arange(batches, dtype=np.int64)
    return _d_groups(k * (x.nbytes // batches), (k + 1) * (y.nbytes // batches), False, x.nbytes)


def _pad(graph: Graph, op: Operator, position: int, out: int) -> int | None:
    """PAD / PADV2 (ts_kernels.h PAD "Read/write order"): groups of one output element in flat order,
    its one input element (none for padding) read before it is written. The output is larger, so the
    input can lie inside it: D is about minus the padding before the last input element."""
    if position != 0 or out != 0:
        return None
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    pads_t = graph.tensors[op.inputs[1]]
    if pads_t.data is None or x.nbytes != math.prod(x.shape) or y.nbytes != math.prod(y.shape):
        return None  # the 8-bit kernel only
    pads = np.asarray(pads_t.data).reshape(-1, 2).astype(np.int64)
    if len(pads) != len(x.shape) or len(x.shape) != len(y.shape) or (pads < 0).any() or y.nbytes == 0:
        return None
    index = np.indices(y.shape).reshape(len(y.shape), -1) - pads[:, :1]
    inside = ((index >= 0) & (index < np.asarray(x.shape).reshape(-1, 1))).all(axis=0)
    strides = np.cumprod((1, *x.shape[:0:-1]))[::-1].reshape(-1, 1)
    in_lo = np.where(inside, (index * strides).sum(axis=0), x.nbytes)
    reads = np.flatnonzero(inside)
    if len(reads) == 0:
        return None
    last = int(reads[-1]) + 1  # the padding written after the last read constrains nothing
    return _d_groups(in_lo[:last], np.arange(1, last + 1), True, x.nbytes)


def _elementwise(graph: Graph, op: Operator, position: int, out: int) -> int | None:
    """Elementwise kernels (ts_add_s8, ts_mul_s8, ts_minmax_s8, ts_squared_difference_s8,
    ts_prelu_s8's input, ts_lut_s8, ts_requantize_8bit, ts_requantize_int, ts_quantize_f32_s8,
    ts_dequantize_s8_f32): one loop k = 0, 1, ... writing output element k right after reading element
    k of each input (ADD: "Read/write order"; the others are that same single loop). Only an input
    that is not broadcast (as many elements as the output) can share. Equal element sizes give D = 0
    (in place); a narrowing one (float32 -> int8) may start up to the size difference behind; a
    widening one must end at the input's end or later."""
    if out != 0:
        return None
    x, y = graph.tensors[op.inputs[position]], graph.tensors[op.outputs[0]]
    count = math.prod(y.shape)
    if math.prod(x.shape) != count or count == 0:
        return None
    ein, eout = x.nbytes // count, y.nbytes // count
    if ein * count != x.nbytes or eout * count != y.nbytes:
        return None  # packed types (int4): not elementwise in bytes
    return (ein - eout) if ein >= eout else count * (ein - eout)


def _arg_minmax(graph: Graph, op: Operator, position: int, out: int) -> int | None:
    """ARG_MAX / ARG_MIN (ts_kernels.h ARG_MAX "Read/write order"): output element (o, i) in flat
    order, written after all its axis_size input elements (o, a, i) are read: groups of one output
    element, reads first. Over the last axis (inner 1) with int8 in and int32 / int64 out, element p
    reads bytes [p * axis, (p + 1) * axis) and ends its output at (p + 1) * out_size, so the output
    may start at the input's start whenever out_size <= axis."""
    if position != 0 or out != 0:
        return None
    x, y, axis_t = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]], graph.tensors[op.inputs[1]]
    if axis_t.data is None or not x.shape or x.nbytes != math.prod(x.shape):
        return None  # the 8-bit kernel only
    rank = len(x.shape)
    axis = int(np.asarray(axis_t.data).reshape(-1)[0])
    axis = axis + rank if axis < 0 else axis
    count = math.prod(y.shape)
    if not 0 <= axis < rank or count == 0 or y.nbytes % count:
        return None
    outer, size, inner = math.prod(x.shape[:axis]), x.shape[axis], math.prod(x.shape[axis + 1 :])
    k = np.arange(outer * inner, dtype=np.int64)
    in_lo = (k // inner) * size * inner + k % inner
    return _d_groups(in_lo, (k + 1) * (y.nbytes // count), True, x.nbytes)


def _resize(graph: Graph, op: Operator, position: int, out: int) -> int | None:
    """RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR (ts_kernels.h RESIZE "Read/write order"): output rows
    in flat order, batch by batch; row y's pixels are written as they are computed from input rows
    y0[y], y1[y] (nearest: y_map[y]) of its batch: groups of one output row, reads interleaved with
    writes, R(row) from its lowest source row (tinysched.model.resize)."""
    if position != 0 or out != 0:
        return None
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    bounds = resize_source_rows(graph, op)
    if bounds is None or x.shape[0] != y.shape[0] or x.shape[0] < 1:
        return None
    n, ih, oh = int(x.shape[0]), int(x.shape[1]), int(y.shape[1])
    if x.nbytes % (n * ih) or y.nbytes % (n * oh):
        return None
    in_row, out_row = x.nbytes // (n * ih), y.nbytes // (n * oh)
    lows = np.array([lo for lo, _ in bounds], dtype=np.int64)
    b = np.repeat(np.arange(n, dtype=np.int64), oh)
    in_lo = (b * ih + np.tile(lows, n)) * in_row
    out_end = (np.arange(n * oh, dtype=np.int64) + 1) * out_row
    return _d_groups(in_lo, out_end, False, x.nbytes)


def _first_only(fn: Callable[[Graph, Operator, int, int], int | None]):
    def only_first(graph: Graph, op: Operator, position: int, out: int) -> int | None:
        return fn(graph, op, position, out) if position == 0 else None

    only_first.__doc__ = fn.__doc__
    return only_first


def _quantize(graph: Graph, op: Operator, position: int, out: int) -> int | None:
    """QUANTIZE / DEQUANTIZE: the elementwise loops above (float32 -> int8, int8 -> float32, between
    integer types)."""
    return _elementwise(graph, op, position, out) if position == 0 else None


def _streamed(graph: Graph, op: Operator, position: int, out: int) -> int | None:
    """A streamed stage (tinysched.memory.stream; ts_kernels.h "Streamed pairs"): one group per output
    row r of its sink, whose bytes are written after every read its loop iteration makes (the rows
    its members compute for it) and before those of the iterations after it: against an outer
    input, R(r) is the lowest row any member reads in a later iteration (`stream.stream_shift`). An
    elementwise sink reading that input too reads its row as it writes its own, in increasing
    order as in the elementwise loop, whose D holds as well."""
    s = stream_of(op)
    if s is None or out != 0:
        return None
    t = op.inputs[position]
    shift = stream_shift(graph, s, t)
    if shift is not None and t in s.consumer.inputs and s.consumer.opcode not in WINDOWED:
        fn = OVERLAP.get(s.consumer.opcode)
        own = None if fn is None else fn(graph, s.consumer, s.consumer.inputs.index(t), 0)
        shift = None if own is None else min(shift, own)
    return shift


ShiftFunction = Callable[[Graph, Operator, int, int], "int | None"]

# opcode -> (graph, op, input position, output position) -> D in bytes, or None (no overlap)
OVERLAP: dict[str, ShiftFunction] = {
    "CONV_2D": _conv,
    "DEPTHWISE_CONV_2D": _depthwise,
    "AVERAGE_POOL_2D": _pool,
    "MAX_POOL_2D": _pool,
    "PAD": _pad,
    "PADV2": _pad,
    "FULLY_CONNECTED": _fully_connected,
    "ADD": _elementwise,
    "SUB": _elementwise,
    "MUL": _elementwise,
    "MAXIMUM": _elementwise,
    "MINIMUM": _elementwise,
    "SQUARED_DIFFERENCE": _elementwise,
    "PRELU": _first_only(_elementwise),
    "RELU": _first_only(_elementwise),
    "RELU6": _first_only(_elementwise),
    "RELU_N1_TO_1": _first_only(_elementwise),
    "LEAKY_RELU": _first_only(_elementwise),
    "HARD_SWISH": _first_only(_elementwise),
    "TANH": _first_only(_elementwise),
    "LOGISTIC": _first_only(_elementwise),
    "QUANTIZE": _quantize,
    "DEQUANTIZE": _quantize,
    "ARG_MAX": _arg_minmax,
    "ARG_MIN": _arg_minmax,
    "RESIZE_BILINEAR": _resize,
    "RESIZE_NEAREST_NEIGHBOR": _resize,
    STREAM_OPCODE: _streamed,
}


# ---- D of the kernel variants (tinysched.memory.variants) -------------------------------------------------


def _conv_staged(graph: Graph, op: Operator, position: int, out: int, chunk: int) -> int | None:
    """CONV_2D staged (ts_kernels.h "CONV_2D staged"): pointwise only; chunks of `chunk` flat pixels,
    each chunk's reads all done (its outputs go to scratch) before its output bytes are written."""
    if position != 0 or out != 0 or chunk < 1:
        return None
    w = graph.tensors[op.inputs[1]]
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if w.shape[1:3] != (1, 1) or len(x.shape) != 4 or x.shape[:3] != y.shape[:3]:
        return None
    if int(op.options.get("stride_h", 1)) != 1 or int(op.options.get("stride_w", 1)) != 1:
        return None
    px = _pixels(graph, op, (1, 1), (1, 1))
    if px is None:
        return None
    in_lo, out_end, _, in_bytes = px
    groups = np.arange(len(in_lo)) // chunk
    starts = np.flatnonzero(np.concatenate(([True], groups[1:] != groups[:-1])))
    lows = np.minimum.reduceat(in_lo, starts)
    ends = np.maximum.reduceat(out_end, starts)
    return _d_groups(lows, ends, True, in_bytes)


def _depthwise_staged(graph: Graph, op: Operator, position: int, out: int, lag: int) -> int | None:
    """DEPTHWISE_CONV_2D staged (ts_kernels.h "DEPTHWISE_CONV_2D staged"): pixel k computed into a
    ring slot, pixel k - lag copied out right after; so when output pixel j's bytes are written every
    later read lies in the fields of pixels j + lag + 1 on: D = min_k (R(k+1) - W(k - lag))."""
    if position != 0 or out != 0 or lag < 0:
        return None
    px = _filter_pixels(graph, op)
    if px is None:
        return None
    in_lo, out_end, _, in_bytes = px
    n = len(in_lo)
    if lag >= n:
        return in_bytes  # every pixel is copied out after the last read
    later = np.concatenate((_suffix_min(in_lo)[1:], [in_bytes]))  # R(k + 1) for k = 0 .. n-1
    return int((later[lag:] - out_end[: n - lag]).min())


def _conv_wide(graph: Graph, op: Operator, position: int, out: int, blocks: int) -> int | None:
    """CONV_2D wide (ts_kernels.h "CONV_2D wide"): strips of consecutive flat pixels, each strip's
    fields all read before any of its outputs is written; D of such groups is at least the default
    kernel's (its pairs with interleaved reads), so the default's D is kept: a plan made for the
    default kernel stays valid when the variant is chosen after placement."""
    return _conv(graph, op, position, out)


VariantShift = Callable[[Graph, Operator, int, int, int], "int | None"]

# (opcode, variant name) -> (graph, op, input position, output position, variant param) -> D
VARIANT_OVERLAP: dict[tuple[str, str], VariantShift] = {
    ("CONV_2D", "staged"): _conv_staged,
    ("DEPTHWISE_CONV_2D", "staged"): _depthwise_staged,
    ("CONV_2D", "wide"): _conv_wide,
}


def variant_shift(graph: Graph, op: Operator, name: str, param: int, position: int = 0) -> int | None:
    """D of variant `name` (with its geometry number `param`) of `op`, whatever `op` records."""
    fn = VARIANT_OVERLAP.get((op.opcode, name))
    return None if fn is None else fn(graph, op, position, 0, param)


def max_shift(graph: Graph, op: Operator, position: int, out: int = 0) -> int | None:
    """D for input `position` and output `out` of `op`: the output may start at most D bytes above
    the input's start while they overlap (None: they must not overlap). An operator that records a
    kernel variant (tinysched.memory.variants) gets that variant's D; the others their opcode's."""
    variant = variant_of(graph, op)
    if variant is not None:
        fn_variant = VARIANT_OVERLAP.get((op.opcode, variant.name))
        return None if fn_variant is None else fn_variant(graph, op, position, out, variant.param)
    fn = OVERLAP.get(op.opcode)
    return None if fn is None else fn(graph, op, position, out)


# ---- the refined memory model ------------------------------------------------------------------


def _floor_to(value: int, alignment: int) -> int:
    return (value // alignment) * alignment


@dataclass(frozen=True)
class Pair:
    """Operator `op` may write `output` over `input` (a dying input, by its storage root) as long as
    the output's offset minus the input's is at most `shift` bytes, or the two do not overlap."""

    op: int
    input: int  # the tensor the operator reads (may be a view)
    root: int  # the buffer holding it
    output: int
    input_bytes: int
    output_bytes: int
    shift: int  # D

    def aligned_shift(self, alignment: int) -> int:
        return _floor_to(self.shift, alignment)

    def saving(self, alignment: int = 1) -> int:
        """The most bytes the two buffers (sizes rounded up to `alignment`) can share with offsets
        that are multiples of `alignment`: output at `best_delta` from the input."""
        a = -(-self.input_bytes // alignment) * alignment
        b = -(-self.output_bytes // alignment) * alignment
        return max(0, min(a, b, b + self.aligned_shift(alignment)))

    def best_delta(self, alignment: int = 1) -> int:
        """Output offset minus input offset that reaches `saving` (the largest such, capped at 0)."""
        return min(self.aligned_shift(alignment), 0)

    def allowed(self, input_offset: int, output_offset: int) -> bool:
        """Whether the kernel's access order tolerates these offsets (real bytes)."""
        disjoint = (
            output_offset >= input_offset + self.input_bytes
            or output_offset + self.output_bytes <= input_offset
        )
        return disjoint or output_offset - input_offset <= self.shift


@dataclass(frozen=True)
class Alias:
    """A tensor that is bytes [offset, offset + its size) of `root`'s buffer: nothing copies it.

    kind "view": a RESHAPE-family output (offset 0); "split": an output of SPLIT, SPLIT_V, UNPACK,
    STRIDED_SLICE or SLICE that is one contiguous range of its input; "concat": an input of a
    CONCATENATION built in place (its producer writes straight into the output's slice)."""

    root: int
    offset: int  # bytes from the root's start
    kind: str


@dataclass(frozen=True)
class Refinement:
    """A memory model: which tensors are aliases (root, byte offset) of which buffer, and which
    operator may overlap which dying input with its output. The tensor model has neither.

    `storage` is what the ordering problem sees: aliases at 0 bytes, every reader of an alias also
    reading its buffer; an in-place concatenation's output has its bytes in a synthetic buffer
    tensor (index `buffers[root]`, past the graph's tensors) written by a synthetic no-code operator
    (index past the graph's operators) that every producer of a slice depends on. Orders and
    lifetimes outside this class are always over the graph's own operators and tensors:
    `storage_order` / `real_order` convert."""

    name: str
    graph: Graph
    storage: Graph
    aliases: Mapping[int, Alias] = field(default_factory=dict)  # alias tensor -> where its bytes are
    pairs: Mapping[int, Pair] = field(default_factory=dict)  # operator -> its overlap
    buffers: Mapping[int, int] = field(default_factory=dict)  # in-place concat output -> storage tensor
    free_ops: frozenset[int] = frozenset()  # operators that run no code (views, in-place concats)

    @property
    def views(self) -> dict[int, int]:
        """alias tensor -> root tensor (every kind of alias)."""
        return {t: a.root for t, a in self.aliases.items()}

    def root(self, tensor: int) -> int:
        alias = self.aliases.get(tensor)
        return tensor if alias is None else alias.root

    def offset_in_root(self, tensor: int) -> int:
        alias = self.aliases.get(tensor)
        return 0 if alias is None else alias.offset

    def buffer(self, tensor: int) -> int:
        """The storage tensor that holds `tensor`'s bytes."""
        root = self.root(tensor)
        return self.buffers.get(root, root)

    def saving(self, op: int, alignment: int = 1) -> int:
        pair = self.pairs.get(op)
        return 0 if pair is None else pair.saving(alignment)

    def step_savings(self, alignment: int = 1) -> dict[int, tuple[int, int]]:
        """operator -> (storage tensor that dies there, bytes its step saves): what the ordering
        problem subtracts."""
        return {
            v: (self.buffer(p.root), p.saving(alignment))
            for v, p in self.pairs.items()
            if p.saving(alignment) > 0
        }

    @property
    def refined(self) -> bool:
        return bool(self.aliases or self.pairs)

    # ---- orders and lifetimes over the graph's own operators --------------------------------

    def storage_order(self, order: Sequence[int]) -> list[int]:
        """`order` with each synthetic buffer operator right before the first operator that needs
        it (where it costs no more than that operator's step: it frees nothing and adds only its
        buffer, which that step holds anyway)."""
        n = len(self.graph.operators)
        if len(self.storage.operators) == n:
            return list(order)
        position = {v: k for k, v in enumerate(order)}
        before: dict[int, list[int]] = {}
        for s in range(n, len(self.storage.operators)):
            first = min(position[c] for c in self.storage.successors[s])
            before.setdefault(first, []).append(s)
        out: list[int] = []
        for k, v in enumerate(order):
            out.extend(before.get(k, ()))
            out.append(v)
        return out

    def real_order(self, order: Sequence[int]) -> list[int]:
        """A storage order without its synthetic operators."""
        n = len(self.graph.operators)
        return [v for v in order if v < n]

    def lifetimes(self, order: Sequence[int]) -> tuple[Lifetime, ...]:
        """Lifetime of every activation tensor of the graph under `order` in this model: aliases
        with 0 bytes and their own lifetime; a root from its birth (an in-place concatenation's
        output: from its first slice's producer) to the last reader of it or of any alias."""
        steps = self.storage_order(order)
        n = len(self.graph.operators)
        real_step, count = [], 0
        for v in steps:
            real_step.append(count)  # a synthetic operator maps to the real step after it
            count += v < n
        by_tensor = {}
        for life in lifetimes(self.storage, steps):
            by_tensor[life.tensor] = replace(
                life, first_step=real_step[life.first_step], last_step=real_step[life.last_step]
            )
        out = []
        for t in self.graph.activation_tensors:
            life = by_tensor[t]
            if t in self.buffers:
                held = by_tensor[self.buffers[t]]
                life = Lifetime(t, held.nbytes, held.first_step, held.last_step)
            out.append(life)
        return tuple(out)


def tensor_model(graph: Graph) -> Refinement:
    """Today's model: every tensor its own bytes for its whole lifetime."""
    return Refinement("tensor", graph, graph)


# ---- aliases: which outputs (or inputs) are a contiguous range of another tensor -------------------

# An aliasing rule: (graph, op) -> {alias tensor: (tensor it is part of, byte offset)}, or None when
# the operator's layout does not make every such tensor one contiguous range. The common checks
# (activations, types, quantisation, who produces what) are `_aliases`'.
AliasRule = Callable[[Graph, Operator], "dict[int, tuple[int, int]] | None"]


def _itemsize(graph: Graph, t: int) -> int | None:
    tensor = graph.tensors[t]
    count = math.prod(tensor.shape)
    if count == 0 or tensor.nbytes % count:
        return None
    return tensor.nbytes // count


def contiguous_range(shape: Sequence[int], begin: Sequence[int], size: Sequence[int]) -> int | None:
    """The element offset of the box `begin`, `size` in a row-major `shape` when the box is one
    contiguous range of it (every axis after its last partial one is whole, every axis before that
    one has size 1), else None."""
    if len(begin) != len(shape) or len(size) != len(shape):
        return None
    partial = [a for a in range(len(shape)) if size[a] != shape[a]]
    if partial and any(size[a] != 1 for a in range(partial[-1])):
        return None
    strides = [math.prod(shape[a + 1 :]) for a in range(len(shape))]
    return sum(b * s for b, s in zip(begin, strides, strict=True))


def _axis_parts(graph: Graph, whole: int, parts: Sequence[int], axis: int, keep_axis: bool):
    """Byte offsets of `parts` laid out one after another along `axis` of `whole`, when each is one
    contiguous range of it (every axis before `axis` has size 1)."""
    shape = graph.tensors[whole].shape
    axis = axis + len(shape) if axis < 0 else axis
    if not 0 <= axis < len(shape) or math.prod(shape[:axis]) != 1:
        return None
    sizes = [graph.tensors[p].shape[axis] if keep_axis else 1 for p in parts]
    if sum(sizes) != shape[axis]:
        return None
    item = _itemsize(graph, whole)
    if item is None:
        return None
    inner = math.prod(shape[axis + 1 :]) * item
    offsets, at = {}, 0
    for p, s in zip(parts, sizes, strict=True):
        if graph.tensors[p].nbytes != s * inner or p in offsets:
            return None
        offsets[p] = at
        at += s * inner
    return offsets


def _constant_int(graph: Graph, t: int) -> int | None:
    data = graph.tensors[t].data if t >= 0 else None
    if data is None or np.asarray(data).size != 1:
        return None
    return int(np.asarray(data).reshape(-1)[0])


def _view_alias(graph: Graph, op: Operator) -> dict[int, tuple[int, int]] | None:
    """RESHAPE, SQUEEZE, EXPAND_DIMS: the output is the input's bytes."""
    if not op.inputs or len(op.outputs) != 1:
        return None
    if graph.tensors[op.inputs[0]].nbytes != graph.tensors[op.outputs[0]].nbytes:
        return None
    return {op.outputs[0]: (op.inputs[0], 0)}


def _split_alias(data_position: int, axis_position: int | None):
    """SPLIT (axis input 0, data 1), SPLIT_V (data 0, axis input 2), UNPACK (axis option): output k
    is the k-th range along the axis, contiguous when every axis before it has size 1."""

    def rule(graph: Graph, op: Operator) -> dict[int, tuple[int, int]] | None:
        if len(op.inputs) <= data_position or not op.outputs:
            return None
        x = op.inputs[data_position]
        if axis_position is None:
            axis: int | None = int(op.options.get("axis", 0))
        else:
            axis = _constant_int(graph, op.inputs[axis_position]) if len(op.inputs) > axis_position else None
        if axis is None:
            return None
        offsets = _axis_parts(graph, x, op.outputs, axis, keep_axis=axis_position is not None)
        return None if offsets is None else {y: (x, o) for y, o in offsets.items()}

    return rule


def _slice_alias(graph: Graph, op: Operator) -> dict[int, tuple[int, int]] | None:
    """SLICE and STRIDED_SLICE with stride 1 whose box is one contiguous range of the input."""
    x, y = op.inputs[0], op.outputs[0]
    shape = list(graph.tensors[x].shape)
    consts = [graph.tensors[t].data if t >= 0 else None for t in op.inputs[1:]]
    if any(c is None for c in consts) or len(op.outputs) != 1:
        return None
    values = [np.asarray(c).reshape(-1).astype(np.int64).tolist() for c in consts]
    if op.opcode == "SLICE":
        if len(values) != 2:
            return None
        begin, size = values
        if len(begin) != len(shape) or len(size) != len(shape):
            return None
        size = [d - b if s < 0 else s for d, b, s in zip(shape, begin, size, strict=True)]
    else:
        if len(values) != 3:
            return None
        try:
            slices, _ = strided_slice_index(shape, *values, op.options)
        except NotFoldable:
            return None
        begin, size = [], []
        for d, sl in zip(shape, slices, strict=True):
            first, _, step = sl.indices(d)
            if step != 1:
                return None
            begin.append(first)
            size.append(len(range(*sl.indices(d))))
    if any(b < 0 or s <= 0 or b + s > d for d, b, s in zip(shape, begin, size, strict=True)):
        return None
    start = contiguous_range(shape, begin, size)
    item = _itemsize(graph, x)
    if start is None or item is None or graph.tensors[y].nbytes != math.prod(size) * item:
        return None
    return {y: (x, start * item)}


def _concat_alias(graph: Graph, op: Operator) -> dict[int, tuple[int, int]] | None:
    """CONCATENATION without a fused activation, along an axis with size-1 axes before it: each
    input is the next contiguous range of the output, so its producer can write it there."""
    if op.options.get("fused_activation_function", "NONE") not in ("NONE", None) or len(op.outputs) != 1:
        return None
    ins = [t for t in op.inputs if t >= 0]
    if len(set(ins)) != len(ins) or not ins:
        return None
    y = op.outputs[0]
    offsets = _axis_parts(graph, y, ins, int(op.options.get("axis", 0)), keep_axis=True)
    return None if offsets is None else {x: (y, o) for x, o in offsets.items()}


ALIAS_RULES: dict[str, AliasRule] = {
    **{opcode: _view_alias for opcode in VIEW_OPS},
    "SPLIT": _split_alias(1, 0),
    "SPLIT_V": _split_alias(0, 2),
    "UNPACK": _split_alias(0, None),
    "STRIDED_SLICE": _slice_alias,
    "SLICE": _slice_alias,
    "CONCATENATION": _concat_alias,
}


def _aliases(graph: Graph) -> tuple[dict[int, Alias], frozenset[int], set[int]]:
    """Every alias resolved to its final root, the operators that then run no code, and the
    outputs of in-place concatenations. Operators are taken in stored order; a concatenation whose
    input is a graph input or output, unproduced, another in-place concatenation's output (no
    nesting) or aliased other than as a view keeps its copy (an input that is a view moves with
    its root: a RESHAPEd convolution output is written into its slice directly)."""
    activation = set(graph.activation_tensors)
    inputs, outputs = set(graph.inputs), set(graph.outputs)
    parent: dict[int, tuple[int, int, str]] = {}
    free: set[int] = set()
    concat_roots: set[int] = set()
    for v in graph.stored_order():
        op = graph.operators[v]
        rule = ALIAS_RULES.get(op.opcode)
        if rule is None:
            continue
        try:
            found = rule(graph, op)
        except (KeyError, IndexError, ValueError, TypeError):
            found = None
        if not found:
            continue
        concat = op.opcode == "CONCATENATION"
        if concat:
            found = _slice_writers(parent, outputs, found)
            if found is None:
                continue
        ok = True
        for alias, (whole, _) in found.items():
            a, w = graph.tensors[alias], graph.tensors[whole]
            if alias not in activation or whole not in activation or alias in inputs or alias in parent:
                ok = False
            elif a.dtype != w.dtype or a.quantization != w.quantization:
                ok = False  # the kernel requantises (or converts): keep it
            elif concat and (
                alias in outputs or alias not in graph.producer or alias in concat_roots or whole in parent
            ):
                ok = False
            if not ok:
                break
        if not ok:
            continue
        kind = "concat" if concat else ("view" if op.opcode in VIEW_OPS else "split")
        for alias, (whole, offset) in found.items():
            parent[alias] = (whole, offset, kind)
        if concat:
            concat_roots.add(op.outputs[0])
        free.add(v)

    def resolve(t: int) -> Alias:
        whole, offset, kind = parent[t]
        while whole in parent:
            up, more, _ = parent[whole]
            whole, offset = up, offset + more
        return Alias(whole, offset, kind)

    return {t: resolve(t) for t in parent}, frozenset(free), concat_roots


def _slice_writers(
    parent: Mapping[int, tuple[int, int, str]], outputs: set[int], found: dict[int, tuple[int, int]]
) -> dict[int, tuple[int, int]] | None:
    """A concatenation's slices as the tensors their producers write: an input that is a view
    (RESHAPE family, offset 0, through any chain of views) moves with its root, which becomes the
    slice; an input aliased any other way, or a graph output, keeps the copy."""
    moved: dict[int, tuple[int, int]] = {}
    for x, place in found.items():
        if x in outputs:
            return None
        t = x
        while t in parent:
            whole, offset, kind = parent[t]
            if kind != "view" or offset != 0:
                return None
            t = whole
        if t in moved:
            return None
        moved[t] = place
    return moved


def _storage_graph(
    graph: Graph, aliases: Mapping[int, Alias], free: frozenset[int], concat_roots: set[int]
) -> tuple[Graph, dict[int, int]]:
    """Aliases at 0 bytes; each reader of an alias (a chained view operator too) also reads the
    buffer holding it, so the buffer lives as long as any of its aliases; an alias that is a graph
    output keeps its buffer live to the end. An in-place concatenation's output gets its bytes from
    a synthetic buffer tensor written by a synthetic operator, which every producer of a slice
    reads (so it runs first and the buffer is born before the first slice is written)."""
    if not aliases:
        return graph, {}
    n_tensors, n_ops = len(graph.tensors), len(graph.operators)
    buffers = {root: n_tensors + j for j, root in enumerate(sorted(concat_roots))}
    tensors = [replace(t, nbytes=0) if t.index in aliases or t.index in buffers else t for t in graph.tensors]
    for root, index in buffers.items():
        r = graph.tensors[root]
        tensors.append(replace(r, index=index, name=f"{r.name} (in-place buffer)"))

    def buffer(t: int) -> int:
        alias = aliases.get(t)
        root = t if alias is None else alias.root
        return buffers.get(root, root)

    operators = []
    for op in graph.operators:
        extra = [buffer(t) for t in op.input_tensors if buffer(t) != t]
        if op.index not in free:  # a producer writing a slice of an in-place buffer
            extra += [buffer(t) for t in op.outputs if buffer(t) != t]
        extra = [b for b in dict.fromkeys(extra) if b not in op.inputs]
        operators.append(replace(op, inputs=(*op.inputs, *extra)) if extra else op)
    for j, (root, index) in enumerate(buffers.items()):
        operators.append(Operator(n_ops + j, "IN_PLACE_BUFFER", (), (index,), {"for_tensor": root}))
    outputs = tuple(dict.fromkeys((*graph.outputs, *(buffer(t) for t in graph.outputs))))
    storage = graph.derived(tensors, operators, outputs=outputs)
    return storage, buffers


def _dies_at(storage: Graph, buffer: int, v: int) -> bool:
    """Whether storage tensor `buffer` dies at operator `v` in every order: every other reader must
    run before `v` (an ancestor of it), so none reads the buffer once `v` starts writing over it.
    Such readers may read its bytes (a squeeze-excitation block's global pool reads the feature
    map its broadcast MUL then scales in place), run no code, or produce one of its slices."""
    readers = storage.consumers.get(buffer, ())
    if v not in readers:
        return False
    others = [c for c in readers if c != v]
    if not others:
        return True
    ancestors: set[int] = set()
    stack = list(storage.predecessors[v])
    while stack:
        u = stack.pop()
        if u not in ancestors:
            ancestors.add(u)
            stack.extend(storage.predecessors[u])
    return all(c in ancestors for c in others)


def refine(graph: Graph) -> Refinement:
    """The refined model: aliases (views, split ranges, in-place concatenation slices) share their
    root's buffer; each operator whose input buffer dies there in every order (its other readers all
    run before it) may overlap it with its output as far as `OVERLAP` allows. Of several candidate
    inputs the one saving most is taken (ties: lowest position)."""
    aliases, free, concat_roots = _aliases(graph)
    storage, buffers = _storage_graph(graph, aliases, free, concat_roots)
    model = Refinement("refined", graph, storage, aliases, {}, buffers, free)
    activation = set(graph.activation_tensors)
    outputs = set(storage.outputs)
    pairs: dict[int, Pair] = {}
    for op in graph.operators:
        if op.index in free or op.opcode not in OVERLAP or not op.outputs:
            continue
        y = op.outputs[0]
        if y not in activation or y in aliases or y in buffers or graph.tensors[y].nbytes == 0:
            continue
        best: Pair | None = None
        for position, t in enumerate(op.inputs):
            if t < 0 or t not in activation:
                continue
            buffer = model.buffer(t)
            others = [model.buffer(u) for k, u in enumerate(op.inputs) if k != position and u >= 0]
            if buffer in others or buffer in outputs or not _dies_at(storage, buffer, op.index):
                continue
            if storage.tensors[buffer].nbytes == 0:
                continue
            try:
                shift = max_shift(graph, op, position, 0)
            except (KeyError, IndexError, ValueError, TypeError, ZeroDivisionError):
                shift = None  # operands the code generator would refuse anyway
            if shift is None:
                continue
            root = model.root(t)
            shift += model.offset_in_root(t)  # D is from the input's start; the pair is by its root
            pair = Pair(op.index, t, root, y, graph.tensors[root].nbytes, graph.tensors[y].nbytes, shift)
            if pair.saving() > 0 and (best is None or pair.saving() > best.saving()):
                best = pair
        if best is not None:
            pairs[op.index] = best
    return replace(model, pairs=pairs)


MODELS: dict[str, Callable[[Graph], Refinement]] = {"tensor": tensor_model, "refined": refine}


def memory_model(graph: Graph, name: str) -> Refinement:
    """The memory model `name` of `graph`; an unknown name lists the valid ones."""
    try:
        return MODELS[name](graph)
    except KeyError:
        raise TinyschedError(f"unknown memory model {name!r}; valid: {', '.join(MODELS)}") from None


# ---- what the report shows ---------------------------------------------------------------------


@dataclass(frozen=True)
class StepSaving:
    """One step under both models: live bytes, and which technique saved how many bytes there."""

    step: int
    op: int
    tensor_bytes: int  # live bytes in the tensor model
    refined_bytes: int  # live bytes in the refined model
    overlap_bytes: int  # the operator's output over its dying input
    view_bytes: int  # views sharing their root (negative where a root outlives its own readers)
    overlap: Pair | None
    stream_bytes: int = 0  # a streamed chain's tensors, whole in the tensor model, less its windows

    @property
    def saved_bytes(self) -> int:
        return self.tensor_bytes - self.refined_bytes


def step_savings_report(
    graph: Graph, order: list[int] | tuple[int, ...], model: Refinement
) -> list[StepSaving]:
    """Per step of `order`: tensor-model and refined live bytes, and the saving split by technique
    (for the report's timeline and per-operator table). At a streamed chain's step the tensor model
    holds the chain's tensors whole and no windows."""
    tensor = profile(graph, order)
    refined = profile(graph, order, model)
    rows = []
    for t, r in zip(tensor.steps, refined.steps, strict=True):
        pair = model.pairs.get(t.op)
        overlap = model.saving(t.op)
        streamed = whole_bytes_saved(graph.operators[t.op])
        rows.append(
            StepSaving(
                t.step,
                t.op,
                t.live_bytes + streamed,
                r.live_bytes,
                overlap,
                t.live_bytes - r.live_bytes - overlap,
                pair,
                streamed,
            )
        )
    return rows
