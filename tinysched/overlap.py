"""How far an operator's output may share bytes with its input: one table, from the kernels' access order.

The tensor model (`tinysched.memory`) gives every tensor its own bytes for its whole lifetime. Our
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
(tinysched.variants: another kernel for the opcode with its own documented order), which an operator
gets when it records one. Nothing is inferred from C source: each entry says which
documented order it relies on. Where the header leaves a choice open (how pixels pair up, which fast
path a board takes), D is the minimum over every possibility, so one plan is safe on every build.

RESHAPE, SQUEEZE and EXPAND_DIMS are *views*: the output is the input's bytes (same offset, no
copy); the pair of tensors shares one buffer that lives until the last reader of either.

`refine(graph)` turns this into a memory model the planner can use (`MODELS`, name -> function):

- `storage`: the graph with every view's output given 0 bytes and its readers also reading the
  view's root, so the root lives until the view's last reader (same operators, same orders);
- `pairs`: operator -> the one (input, output) overlap it gets, only where the input's storage has
  that operator as its only reader (then the input dies there in *every* order, so the saving does
  not depend on the order and the cut bounds stay exact);
- the step that runs such an operator costs its live bytes less `Pair.saving()`: the most the two
  buffers can overlap, which is exactly what the placers put them at.

docs/memory-model.md states the refined model in prose.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from tinysched.codegen.quant import window_padding
from tinysched.errors import TinyschedError
from tinysched.graph import Graph, Operator
from tinysched.rewrite import explicit_padding
from tinysched.variants import variant_of

__all__ = [
    "MODELS",
    "OVERLAP",
    "VARIANT_OVERLAP",
    "VIEW_OPS",
    "Pair",
    "Refinement",
    "StepSaving",
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


def _conv(graph: Graph, op: Operator, position: int, out: int) -> int | None:
    """CONV_2D (ts_kernels.h, CONV_2D "Read/write order"): groups of one or two horizontally
    adjacent pixels of a row (patch and run paths, pairing left open: any runs of <= 2); aligned pairs
    of the flat pixel order (pointwise path); chunks of up to 16 pixels of a row, or of the flat order
    for a stride-1 pointwise conv (1x1 DSP path). Reads and writes interleave within a group."""
    if position != 0 or out != 0:
        return None
    w = graph.tensors[op.inputs[1]]
    fh, fw = w.shape[1], w.shape[2]
    dh = int(op.options.get("dilation_hfactor", 1) or 1)
    dw = int(op.options.get("dilation_wfactor", 1) or 1)
    px = _pixels(graph, op, (fh, fw), (dh, dw))
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
    32 pixels of one row (DSP path), channel blocks interleaved with reads within a group."""
    if position != 0 or out != 0:
        return None
    w = graph.tensors[op.inputs[1]]
    dh = int(op.options.get("dilation_hfactor", 1) or 1)
    dw = int(op.options.get("dilation_wfactor", 1) or 1)
    px = _pixels(graph, op, (w.shape[1], w.shape[2]), (dh, dw))
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


def _first_only(fn: Callable[[Graph, Operator, int, int], int | None]):
    def only_first(graph: Graph, op: Operator, position: int, out: int) -> int | None:
        return fn(graph, op, position, out) if position == 0 else None

    only_first.__doc__ = fn.__doc__
    return only_first


def _quantize(graph: Graph, op: Operator, position: int, out: int) -> int | None:
    """QUANTIZE / DEQUANTIZE: the elementwise loops above (float32 -> int8, int8 -> float32, between
    integer types)."""
    return _elementwise(graph, op, position, out) if position == 0 else None


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
}


# ---- D of the kernel variants (tinysched.variants) -------------------------------------------------


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
    w = graph.tensors[op.inputs[1]]
    dh = int(op.options.get("dilation_hfactor", 1) or 1)
    dw = int(op.options.get("dilation_wfactor", 1) or 1)
    px = _pixels(graph, op, (w.shape[1], w.shape[2]), (dh, dw))
    if px is None:
        return None
    in_lo, out_end, _, in_bytes = px
    n = len(in_lo)
    if lag >= n:
        return in_bytes  # every pixel is copied out after the last read
    later = np.concatenate((_suffix_min(in_lo)[1:], [in_bytes]))  # R(k + 1) for k = 0 .. n-1
    return int((later[lag:] - out_end[: n - lag]).min())


VariantShift = Callable[[Graph, Operator, int, int, int], "int | None"]

# (opcode, variant name) -> (graph, op, input position, output position, variant param) -> D
VARIANT_OVERLAP: dict[tuple[str, str], VariantShift] = {
    ("CONV_2D", "staged"): _conv_staged,
    ("DEPTHWISE_CONV_2D", "staged"): _depthwise_staged,
}


def variant_shift(graph: Graph, op: Operator, name: str, param: int, position: int = 0) -> int | None:
    """D of variant `name` (with its geometry number `param`) of `op`, whatever `op` records."""
    fn = VARIANT_OVERLAP.get((op.opcode, name))
    return None if fn is None else fn(graph, op, position, 0, param)


def max_shift(graph: Graph, op: Operator, position: int, out: int = 0) -> int | None:
    """D for input `position` and output `out` of `op`: the output may start at most D bytes above
    the input's start while they overlap (None: they must not overlap). An operator that records a
    kernel variant (tinysched.variants) gets that variant's D; the others their opcode's."""
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
class Refinement:
    """A memory model: which tensors are views of which buffer, and which operator may overlap which
    dying input with its output. The tensor model has neither."""

    name: str
    graph: Graph
    storage: Graph  # views at 0 bytes, their readers also reading the root
    views: Mapping[int, int] = field(default_factory=dict)  # view tensor -> root tensor
    pairs: Mapping[int, Pair] = field(default_factory=dict)  # operator -> its overlap

    def root(self, tensor: int) -> int:
        return self.views.get(tensor, tensor)

    def saving(self, op: int, alignment: int = 1) -> int:
        pair = self.pairs.get(op)
        return 0 if pair is None else pair.saving(alignment)

    def step_savings(self, alignment: int = 1) -> dict[int, tuple[int, int]]:
        """operator -> (storage tensor that dies there, bytes its step saves): what the ordering
        problem subtracts."""
        return {v: (p.root, p.saving(alignment)) for v, p in self.pairs.items() if p.saving(alignment) > 0}

    @property
    def refined(self) -> bool:
        return bool(self.views or self.pairs)


def tensor_model(graph: Graph) -> Refinement:
    """Today's model: every tensor its own bytes for its whole lifetime."""
    return Refinement("tensor", graph, graph)


def _view_roots(graph: Graph) -> dict[int, int]:
    activation = set(graph.activation_tensors)
    inputs = set(graph.inputs)
    roots: dict[int, int] = {}
    for v in graph.stored_order():
        op = graph.operators[v]
        if op.opcode not in VIEW_OPS or not op.inputs or len(op.outputs) != 1:
            continue
        x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        if x.index not in activation or y.index not in activation or y.index in inputs:
            continue
        if x.nbytes != y.nbytes or x.dtype != y.dtype or x.quantization != y.quantization:
            continue
        roots[y.index] = roots.get(x.index, x.index)
    return roots


def _storage_graph(graph: Graph, roots: Mapping[int, int]) -> Graph:
    """Views at 0 bytes; each reader of a view (a chained view operator too) also reads its root,
    so the root lives as long as any of its views; a view that is a graph output keeps its root
    live to the end."""
    if not roots:
        return graph
    tensors = tuple(replace(t, nbytes=0) if t.index in roots else t for t in graph.tensors)
    operators = []
    for op in graph.operators:
        extra = [roots[t] for t in op.input_tensors if t in roots]
        extra = [r for r in dict.fromkeys(extra) if r not in op.inputs]
        operators.append(replace(op, inputs=(*op.inputs, *extra)) if extra else op)
    outputs = tuple(dict.fromkeys((*graph.outputs, *(roots[t] for t in graph.outputs if t in roots))))
    return Graph(
        tensors,
        tuple(operators),
        graph.inputs,
        outputs,
        graph.name,
        graph.description,
        graph.metadata,
        graph.source,
        graph.sha256,
    )


def _dies_at(storage: Graph, roots: Mapping[int, int], root: int, v: int) -> bool:
    """Whether buffer `root` dies at operator `v` in every order: every other reader is a view
    operator (it reads no bytes) that must run before `v`."""
    readers = storage.consumers.get(root, ())
    if v not in readers:
        return False
    others = [c for c in readers if c != v]
    if not others:
        return True
    for c in others:
        op = storage.operators[c]
        if op.opcode not in VIEW_OPS or not op.outputs or op.outputs[0] not in roots:
            return False
    ancestors: set[int] = set()
    stack = list(storage.predecessors[v])
    while stack:
        u = stack.pop()
        if u not in ancestors:
            ancestors.add(u)
            stack.extend(storage.predecessors[u])
    return all(c in ancestors for c in others)


def refine(graph: Graph) -> Refinement:
    """The refined model: views share their root's buffer; each operator whose input buffer dies
    there in every order (it is that buffer's only reader) may overlap it with its output as far as
    `OVERLAP` allows. Of several candidate inputs the one saving most is taken (ties: lowest position)."""
    roots = _view_roots(graph)
    storage = _storage_graph(graph, roots)
    activation = set(graph.activation_tensors)
    outputs = set(storage.outputs)
    pairs: dict[int, Pair] = {}
    for op in graph.operators:
        if op.opcode in VIEW_OPS or op.opcode not in OVERLAP or not op.outputs:
            continue
        y = op.outputs[0]
        if y not in activation or y in roots or graph.tensors[y].nbytes == 0:
            continue
        best: Pair | None = None
        for position, t in enumerate(op.inputs):
            if t < 0 or t not in activation:
                continue
            root = roots.get(t, t)
            others = [roots.get(u, u) for k, u in enumerate(op.inputs) if k != position and u >= 0]
            if root in others or root in outputs or not _dies_at(storage, roots, root, op.index):
                continue
            if storage.tensors[root].nbytes == 0:
                continue
            try:
                shift = max_shift(graph, op, position, 0)
            except (KeyError, IndexError, ValueError, TypeError, ZeroDivisionError):
                shift = None  # operands the code generator would refuse anyway
            if shift is None:
                continue
            pair = Pair(op.index, t, root, y, graph.tensors[root].nbytes, graph.tensors[y].nbytes, shift)
            if pair.saving() > 0 and (best is None or pair.saving() > best.saving()):
                best = pair
        if best is not None:
            pairs[op.index] = best
    return Refinement("refined", graph, storage, roots, pairs)


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

    @property
    def saved_bytes(self) -> int:
        return self.tensor_bytes - self.refined_bytes


def step_savings_report(
    graph: Graph, order: list[int] | tuple[int, ...], model: Refinement
) -> list[StepSaving]:
    """Per step of `order`: tensor-model and refined live bytes, and the saving split by technique
    (for the report's timeline and per-operator table)."""
    from tinysched.memory import profile

    tensor = profile(graph, order)
    refined = profile(graph, order, model)
    rows = []
    for t, r in zip(tensor.steps, refined.steps, strict=True):
        pair = model.pairs.get(t.op)
        overlap = model.saving(t.op)
        rows.append(
            StepSaving(
                t.step,
                t.op,
                t.live_bytes,
                r.live_bytes,
                overlap,
                t.live_bytes - r.live_bytes - overlap,
                pair,
            )
        )
    return rows
