"""Streamed fusion: a chain of windowed operators run row by row, so the tensors between them are
never whole.

A windowed operator (convolution, depthwise convolution, pooling) computes each output row from a
band of its input's rows, and an elementwise one (ADD, SUB, MUL on equal shapes) from one row of each
input. When tensor T is written by a windowed producer P and read only by such a consumer C, the two
can run as one loop over C's output rows: before C's row r, P computes the rows of T that row reads
and that are not there yet, into a *window* of as many rows as C's window spans; rows C no longer
needs are dropped from its bottom. T then takes the window's bytes instead of its own. A chain of
such links (an inverted residual block: expand 1x1 -> depthwise -> project 1x1) runs the same way,
each intermediate tensor in its own window, each row computed when the next operator first needs
it. This is what TinyEngine and MCUNetV2 gain by patch- and row-based execution, here derived from
the same kernels called on row ranges (firmware/include/ts_kernels.h, "Streamed pairs").

A chain may be a small DAG (a *stage*, `_stages`): a residual block with its input on the skip path,
a tensor read by two members keeping the rows from the lowest either still reads to the highest asked
for; `row_schedule` is the generated loop's twin that sizes the windows and gives the fused operator's
D against each outer input.

A stage may end in a sink that sums its input row by row (`ROW_SINKS`, `row_sink`): a global average
pool (`global_pool`, issue 33 part 4: int32 sums per channel) or a FULLY_CONNECTED reading the flattened
map (`row_dense`: int32 sums per output unit; through a RESHAPE flattening the map, `flattening_view`,
which the stage absorbs). Its loop runs one turn per row of the sink's input, which the sink adds
into its sums (`Stream.sums`, after the windows), writing its output after the last row; the map
before it is never whole.

A PAD the rewrites could not fold into its reader is a member too (`row_pad`): its output row r is its
input row r - top, padded, or a row of the padding value.

A stage whose rows are too wide may run over column tiles (`column_tiles`, `ColumnTiles`): the loop
once per tile of its sink's output columns, each window a tile's columns, the halo columns computed
again (added MACs, limited by --mac-budget: tinysched.pipeline `_tile_rounds`).

A RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR reading a whole tensor heads a stage (`row_resize`): its
output row r reads the input rows TFLite's source-coordinate formula names (tinysched.model.resize),
so its window's rows are computed on demand like any head's; an ARG_MAX / ARG_MIN over the channels
ends one (`row_arg`: output row r from input row r alone). A segmentation head's upsampled class
scores are then never whole (deeplab: 513x513x21, one row of 10,773 B at a time).

`candidates(graph)` finds every chain of up to `MAX_CHAIN` operators, `choose` picks the ones to try
for the operators at a plan's peak, and `fuse(graph, streams)` replaces each by one operator
`STREAM_OPCODE` (a rewrite of kind "stream", with the chain recorded in its options) whose scratch
holds the windows. The pipeline (tinysched.pipeline) streams round by round, keeping a round only
when it lowers the arena, and only in the refined memory model with `--prefer memory`: the tensor
model stays the whole-tensor, black-box-kernel model it is compared with.

The application can be a chain's head too (`--stream-input`, `input_chains`): when the model's only
input is an int8 image read only by a windowed operator, the chain starts at the input, whose
window is filled by the application's row source (the generated `<prefix>_invoke_streamed` calls
its `read_rows` callback for the rows not there yet, rows ascending, each once) exactly where a
windowed producer would have computed them. The input is then never whole: it is one of the
chain's streamed tensors (`Stream.source`), and the fused graph no longer lists it among its inputs
(`fuse`), so no stage gives it bytes.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from tinysched.memory.expand import EXPAND_OPCODE, expansion_of, opcode_text
from tinysched.memory.expand import scratch_bytes as expansion_scratch
from tinysched.model.graph import Graph, Operator
from tinysched.model.resize import resize_source_rows
from tinysched.model.rewrite import PAD_OPS, Match, RewriteResult, apply_matches, no_rewrites, window_pads
from tinysched.model.uint8 import own_kernel_only

__all__ = [
    "ELEMENTWISE",
    "global_pool",
    "row_dense",
    "flattening_view",
    "row_sink",
    "ROW_SINKS",
    "row_pad",
    "row_arg",
    "row_resize",
    "staged_members",
    "loop_rows",
    "ROW_REDUCTIONS",
    "TwoPass",
    "ColumnTiles",
    "MAX_TILES",
    "column_tiles",
    "tiled",
    "broadcast_gate",
    "row_mean",
    "two_pass",
    "pass_bytes",
    "STREAM_OPCODE",
    "STREAM_OPTION",
    "WINDOWED",
    "RowSchedule",
    "RowWindow",
    "Stream",
    "MAX_CHAIN",
    "SHORT_CHAIN",
    "candidates",
    "chain_shift",
    "choose",
    "outer_inputs",
    "row_inputs",
    "row_schedule",
    "stream_shift",
    "fuse",
    "input_chains",
    "local_bytes",
    "members",
    "operator_type",
    "row_window",
    "stream_of",
    "streamed_input",
    "whole_bytes_saved",
]

STREAM_OPCODE = "TS_STREAM"
STREAM_OPTION = "stream"
# (EXPAND_OPCODE: a 1x1 expansion and its depthwise, tinysched.memory.expand, with the depthwise's geometry)
WINDOWED = ("CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "MAX_POOL_2D", EXPAND_OPCODE)
ELEMENTWISE = ("ADD", "SUB", "MUL")  # their kernels walk a ts_broadcast_shape (rows: dims[3])


@dataclass(frozen=True)
class RowWindow:
    """Which input rows output row r of an operator reads: [r * stride - pad_top, ... + span),
    clipped to the input; or, with `bounds` (a resize), [bounds[r][0], bounds[r][1])."""

    span: int  # rows one output row reads: (kernel - 1) * dilation + 1 (with bounds: the most)
    stride: int
    pad_top: int
    bounds: tuple[tuple[int, int], ...] = ()  # per output row: its input rows [lo, hi), non-decreasing

    def top(self, r: int) -> int:
        """The first input row output row r reads."""
        return self.bounds[r][0] if self.bounds else max(r * self.stride - self.pad_top, 0)

    def end(self, r: int, height: int) -> int:
        """One past the last input row output row r reads (of `height`)."""
        if self.bounds:
            return min(self.bounds[r][1], height)
        return min(r * self.stride - self.pad_top + self.span, height)


@dataclass(frozen=True)
class Stream:
    """A chain of operators run row by row (as in the graph before fusion): `operators[k]` writes
    `tensors[k]`, read only by `operators[k + 1]`; all but the last are windowed. With `source`, the
    chain's head is the application: `tensors[0]` is the graph input it delivers row by row (no
    operator writes it), and `operators[k]` reads `tensors[k]` and writes `tensors[k + 1]`."""

    operators: tuple[Operator, ...]
    tensors: tuple[int, ...]  # the streamed tensors: one fewer than the operators (with source: as many)
    position: int  # where the last streamed tensor enters the last operator
    rows: tuple[int, ...]  # rows of each streamed tensor its window holds
    row_bytes: tuple[int, ...]
    tensor_bytes: tuple[int, ...]
    source: bool = False  # tensors[0] is the graph input, its rows from the application (--stream-input)
    sums: int = 0  # a row-summing sink's int32 sums (`row_sink`): they follow the windows
    staged: int = 0  # bytes the narrow 1x1 members' ts_conv2d_s8_staged uses, after the sums
    # the flattening RESHAPEs the sink read its map through (`flattening_view`): the stage's sink reads
    # the map itself (a FULLY_CONNECTED flattens its input), and fusing removes them with the members
    absorbed: tuple[int, ...] = ()
    tiles: ColumnTiles | None = None  # run over column tiles, `row_bytes` a tile's widest (`tiled`)

    @property
    def producer(self) -> Operator:
        """The first operator (with `source`: the one that reads the input's rows)."""
        return self.operators[0]

    def reader(self, k: int) -> Operator:
        """The operator that reads streamed tensor k (its first input, or an elementwise operand)."""
        return self.operators[k if self.source else k + 1]

    @property
    def consumer(self) -> Operator:
        return self.operators[-1]

    def window_offset(self, k: int) -> int:
        """Where tensor k's window starts in the fused operator's scratch (windows end to end; with
        column tiles, the application's window has room for one whole row after its tile's rows)."""
        slack = self.tiles.source_slack if self.tiles is not None and self.source and k > 0 else 0
        return sum(r * b for r, b in zip(self.rows[:k], self.row_bytes[:k], strict=True)) + slack

    @property
    def sums_offset(self) -> int:
        """Where a row-summing sink's int32 sums start in the scratch: right after the windows (the
        kernel reads them at any alignment)."""
        return self.window_offset(len(self.tensors))

    @property
    def staged_offset(self) -> int:
        """Where the narrow 1x1 members' scratch starts: after the windows and sums, at a multiple of 4."""
        end = self.sums_offset + 4 * self.sums if self.sums else self.window_offset(len(self.tensors))
        return -(-end // 4) * 4

    @property
    def window_bytes(self) -> int:
        """The fused operator's scratch: the windows end to end, then the sink's sums and the narrow
        1x1 members' scratch, if any."""
        if self.staged:
            return self.staged_offset + self.staged
        return self.sums_offset + 4 * self.sums if self.sums else self.window_offset(len(self.tensors))

    @property
    def saving(self) -> int:
        return sum(self.tensor_bytes) - self.window_bytes


def _kernel_hw(graph: Graph, op: Operator) -> tuple[int, int] | None:
    if op.opcode in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        if len(op.inputs) < 2 or op.inputs[1] < 0 or len(graph.tensors[op.inputs[1]].shape) != 4:
            return None
        shape = graph.tensors[op.inputs[1]].shape
        return int(shape[1]), int(shape[2])
    return int(op.options.get("filter_height", 0)), int(op.options.get("filter_width", 0))


def row_resize(graph: Graph, op: Operator) -> tuple[tuple[int, int], ...] | None:
    """Per output row, the input rows [lo, hi) a resize of an int8 NHWC image of batch 1 reads
    (its size a constant, input and output of one type and quantisation); None for any other
    operator. A stage runs it as a head only (its input whole): ts_resize_*_rows computes output
    rows [row, row + count) from the whole input (ts_kernels.h "Streamed pairs")."""
    if len(op.inputs) != 2 or len(op.outputs) != 1 or op.inputs[1] < 0:
        return None
    x, y = op.inputs[0], op.outputs[0]
    hx, hy = graph.tensors[x].int8_image, graph.tensors[y].int8_image
    tx, ty = graph.tensors[x], graph.tensors[y]
    if hx is None or hy is None or hx[2] != hy[2] or graph.tensors[op.inputs[1]].data is None:
        return None
    if tx.dtype != ty.dtype or tx.quantization != ty.quantization:
        return None
    return resize_source_rows(graph, op)


def row_arg(graph: Graph, op: Operator) -> bool:
    """An ARG_MAX / ARG_MIN over the channels (the last axis, a constant) of an int8 NHWC image of
    batch 1 into [1, H, W] int32 or int64: output row r from input row r alone. It ends a stage
    (its output is no image a member reads by rows): ts_arg_minmax_s8 on one row, outer = W."""
    if op.opcode not in ("ARG_MAX", "ARG_MIN") or len(op.inputs) != 2 or len(op.outputs) != 1:
        return False
    x, y, axis = op.inputs[0], graph.tensors[op.outputs[0]], graph.tensors[op.inputs[1]]
    hwc = graph.tensors[x].int8_image
    if hwc is None or axis.data is None or axis.data.size != 1 or int(axis.data.reshape(-1)[0]) % 4 != 3:
        return False
    return y.dtype in ("int32", "int64") and tuple(y.shape) == (1, hwc[0], hwc[1]) and y.is_activation


def global_pool(graph: Graph, op: Operator) -> bool:
    """An AVERAGE_POOL_2D whose one window is its whole int8 NHWC input (1x1 output, no padding): as a
    stage's sink it adds its input's rows into int32 sums per channel as they arrive and writes its
    output from the sums after the last (`Stream.sums`; ts_kernels.h "AVERAGE_POOL_2D by rows")."""
    if op.opcode != "AVERAGE_POOL_2D" or len(op.inputs) != 1 or len(op.outputs) != 1:
        return False
    if own_kernel_only(graph, op):
        return False  # a legacy uint8 model's rounding: its own kernel, whole
    x, y = graph.tensors[op.inputs[0]].int8_image, graph.tensors[op.outputs[0]].int8_image
    if x is None or y is None or y != (1, 1, x[2]):
        return False
    kernel = (int(op.options.get("filter_height", 0)), int(op.options.get("filter_width", 0)))
    return kernel == (x[0], x[1]) and window_pads(op, (x[0], x[1]), (1, 1), kernel) == (0, 0, 0, 0)


def row_dense(graph: Graph, op: Operator) -> bool:
    """A FULLY_CONNECTED of one batch reading an int8 NHWC map flattened (constant weights [units,
    h * w * c], one int8 output row of the units): as a stage's sink it adds each input row's
    products into int32 sums per output unit as the row arrives and writes its output from the sums
    after the last (`Stream.sums`; ts_kernels.h "FULLY_CONNECTED by rows")."""
    if op.opcode != "FULLY_CONNECTED" or len(op.inputs) < 2 or len(op.outputs) != 1 or op.inputs[1] < 0:
        return False
    x, w, y = (
        graph.tensors[op.inputs[0]].int8_image,
        graph.tensors[op.inputs[1]],
        graph.tensors[op.outputs[0]],
    )
    if x is None or len(w.shape) != 2 or not w.is_constant or int(w.shape[1]) != x[0] * x[1] * x[2]:
        return False
    if any(u >= 0 and graph.tensors[u].is_activation for u in op.inputs[1:]):
        return False
    return y.dtype == "int8" and y.is_activation and y.nbytes == int(w.shape[0])


def flattening_view(graph: Graph, op: Operator) -> Operator | None:
    """The RESHAPE through which FULLY_CONNECTED `op` reads an int8 NHWC map of several rows flattened
    to one batch row [1, h * w * c] (a view: same bytes, type and quantisation; the view read only by
    `op`, the map only by the view, neither a graph output), else None. A FULLY_CONNECTED flattens its
    input itself, so as a stage's sink it reads the map's rows and the stage absorbs the view."""
    if op.opcode != "FULLY_CONNECTED" or not op.inputs or op.inputs[0] < 0:
        return None
    x = op.inputs[0]
    v = graph.producer.get(x)
    if v is None or graph.operators[v].opcode != "RESHAPE" or not graph.operators[v].inputs:
        return None
    view = graph.operators[v]
    m = view.inputs[0]
    hwc, tx, tm = graph.tensors[m].int8_image, graph.tensors[x], graph.tensors[m]
    if hwc is None or hwc[0] < 2 or len(view.outputs) != 1 or x in graph.outputs or m in graph.outputs:
        return None
    if list(graph.consumers.get(x, ())) != [op.index] or list(graph.consumers.get(m, ())) != [v]:
        return None
    if tuple(tx.shape) != (1, tm.nbytes) or tx.dtype != tm.dtype or tx.quantization != tm.quantization:
        return None
    return view


def _reading_the_map(graph: Graph, op: Operator) -> Operator:
    """`op`, or a FULLY_CONNECTED reading through a flattening view: the same operator reading the map."""
    view = flattening_view(graph, op)
    if view is None:
        return op
    return replace(op, inputs=(view.inputs[0], *op.inputs[1:]))


def _pool_sums(graph: Graph, op: Operator) -> int:
    return int(graph.tensors[op.inputs[0]].shape[3]) if global_pool(graph, op) else 0


def _dense_sums(graph: Graph, op: Operator) -> int:
    return int(graph.tensors[op.inputs[1]].shape[0]) if row_dense(graph, op) else 0


# The sinks that reduce their input row by row into int32 sums (opcode -> the sums it keeps, 0: not
# such a sink): a stage ending in one loops over the sink's input rows, the sink adding each row as it
# arrives and writing its output after the last; it only ends a stage (its output exists after the loop)
ROW_SINKS: dict[str, Callable[[Graph, Operator], int]] = {
    "AVERAGE_POOL_2D": _pool_sums,  # a global pool: per channel
    "FULLY_CONNECTED": _dense_sums,  # over a flattened map: per output unit
}


def row_sink(graph: Graph, op: Operator) -> int:
    """The int32 sums `op` keeps as a row-summing stage sink (`ROW_SINKS`), 0 for any other operator."""
    rule = ROW_SINKS.get(op.opcode)
    return 0 if rule is None else rule(graph, op)


def row_pad(graph: Graph, op: Operator) -> int | None:
    """The rows a PAD / PADV2 of an int8 NHWC image adds above it (None: not such a PAD): one whose
    padding is along the rows and columns only, with constant pads and value and one quantisation,
    so output row r is input row r - top with its columns padded, or a row of the value alone (a
    stage runs it row by row: ts_pad_s8 on the rows of a call, ts_kernels.h "Streamed pairs")."""
    if op.opcode not in PAD_OPS or len(op.inputs) < 2 or len(op.outputs) != 1:
        return None
    x, y = op.inputs[0], op.outputs[0]
    if graph.tensors[x].int8_image is None or graph.tensors[y].int8_image is None:
        return None
    if graph.tensors[x].quantization != graph.tensors[y].quantization:
        return None
    if any(u >= 0 and graph.tensors[u].data is None for u in op.inputs[1:]):
        return None
    pads = graph.tensors[op.inputs[1]].data
    if pads is None or pads.size != 8:
        return None
    flat = [int(v) for v in pads.reshape(-1)]
    if flat[0:2] != [0, 0] or flat[6:8] != [0, 0] or min(flat) < 0:
        return None
    return flat[2]


def loop_rows(graph: Graph, op: Operator) -> int:
    """The rows a stage member computes one by one: its output's, or for a row-summing sink (reading
    one input row per iteration) its input's."""
    t = op.inputs[0] if row_sink(graph, op) else op.outputs[0]
    return int(graph.tensors[t].shape[1])


def row_window(graph: Graph, op: Operator) -> RowWindow | None:
    """The row geometry of a windowed operator over its first input (elementwise: one row each; a
    row-summing sink: iteration r reads input row r)."""
    if op.opcode in ELEMENTWISE or row_mean(graph, op) or row_sink(graph, op) or row_arg(graph, op):
        return RowWindow(1, 1, 0)
    bounds = row_resize(graph, op)
    if bounds is not None:
        return RowWindow(max(hi - lo for lo, hi in bounds), 1, 0, bounds)
    top = row_pad(graph, op)
    if top is not None:
        return RowWindow(1, 1, top)  # output row r is input row r - top
    if op.opcode not in WINDOWED or not op.inputs or not op.outputs:
        return None
    return _axis_window(graph, op, 0)


def _axis_window(graph: Graph, op: Operator, axis: int) -> RowWindow | None:
    """A convolution's or pool's window along its input's rows (axis 0) or columns (axis 1): span,
    stride and the padding before the first row or column (None: a geometry no stream runs)."""
    x, y = graph.tensors[op.inputs[0]].int8_image, graph.tensors[op.outputs[0]].int8_image
    kernel = _kernel_hw(graph, op)
    if x is None or y is None or kernel is None or min(kernel) < 1:
        return None
    pads = window_pads(op, (x[0], x[1]), (y[0], y[1]), kernel)  # top, bottom, left, right
    side = "hw"[axis]
    stride = int(op.options.get(f"stride_{side}", 1))
    pooling = op.opcode in ("AVERAGE_POOL_2D", "MAX_POOL_2D")
    dilation = 1 if pooling else int(op.options.get(f"dilation_{side}factor", 1) or 1)
    if pads is None or stride < 1 or dilation < 1 or pads[2 * axis] < 0:
        return None
    return RowWindow((kernel[axis] - 1) * dilation + 1, stride, pads[2 * axis])


def _elementwise_rows(graph: Graph, op: Operator, t: int) -> bool:
    """An ADD/SUB/MUL whose two inputs and output all have T's shape (no broadcast), T read once."""
    if op.opcode not in ELEMENTWISE or len(op.inputs) != 2 or len(op.outputs) != 1:
        return False
    shape = graph.tensors[t].shape
    return (
        op.inputs.count(t) == 1
        and all(graph.tensors[u].shape == shape for u in (*op.inputs, op.outputs[0]))
        and all(graph.tensors[u].int8_image is not None for u in (*op.inputs, op.outputs[0]))
    )


# operators in one stream at most: a residual stage with its downsampling and its head; a DS-CNN's
# whole body (its head, four depthwise -> 1x1 blocks) into its global pool
MAX_CHAIN = 10
# Stages of up to SHORT_CHAIN operators are streamed first (tinysched.pipeline), the longer ones in
# rounds of their own from the same start, kept only where they give the smaller arena: rounds
# choose greedily, and a long stage kept in an early round can stop the rounds that would have
# streamed two shorter ones to a smaller arena.
SHORT_CHAIN = 8


def _link(graph: Graph, producer: Operator) -> tuple[Operator, int, int] | None:
    """(consumer, position, window rows) when the producer's output can stream into its reader."""
    if producer.opcode not in WINDOWED or len(producer.outputs) != 1 or row_window(graph, producer) is None:
        return None
    if row_sink(graph, producer):
        return None  # a sink only: its output is written after the loop
    t = producer.outputs[0]
    hwc = graph.tensors[t].int8_image
    readers = graph.consumers.get(t, ())
    if hwc is None or len(readers) != 1 or t in graph.outputs:
        return None
    consumer = graph.operators[readers[0]]
    if consumer.opcode in WINDOWED:
        if consumer.inputs[0] != t or t in consumer.inputs[1:] or len(consumer.outputs) != 1:
            return None
        window = row_window(graph, consumer)
        if window is None:
            return None
        return consumer, 0, min(window.span, hwc[0])
    if _elementwise_rows(graph, consumer, t):
        return consumer, consumer.inputs.index(t), 1
    return None


def _chain(
    graph: Graph, ops: Sequence[Operator], rows: Sequence[int], position: int, source: bool = False
) -> Stream | None:
    tensors = (ops[0].inputs[0],) * source + tuple(op.outputs[0] for op in ops[:-1])
    activations = {u for op in ops for u in op.input_tensors if graph.tensors[u].is_activation}
    if not source and ops[0].inputs[0] in ops[-1].inputs:
        return None  # one tensor read at both ends: its overlap would need both orders
    if len(activations - set(tensors)) > 2:
        return None  # the first operator's input and an elementwise last operator's other operand
    if any(u not in tensors for op in ops[1:-1] for u in op.input_tensors if graph.tensors[u].is_activation):
        return None  # an inner operator reads only the chain
    sched = row_schedule(graph, ops, source)
    if sched is None:
        return None
    # the windows are the loop's (`row_schedule`); for a chain, `rows` (its readers' spans) agree
    return _saving_stream(graph, ops, tensors, position, sched, source)


def _saving_stream(
    graph: Graph,
    ops: Sequence[Operator],
    tensors: tuple[int, ...],
    position: int,
    sched: RowSchedule,
    source: bool = False,
    absorbed: tuple[int, ...] = (),
) -> Stream | None:
    """The Stream running `ops` over the streamed `tensors` with the loop's windows (`sched`), its
    sink reading the last at input `position` (through the `absorbed` views); None when it saves
    nothing."""
    stream = Stream(
        tuple(ops),
        tensors,
        position,
        sched.rows,
        tuple(int(graph.tensors[t].shape[2] * graph.tensors[t].shape[3]) for t in tensors),
        tuple(graph.tensors[t].nbytes for t in tensors),
        source,
        _sums(graph, ops[-1]),
        _staged(graph, ops, tensors),
        absorbed,
    )
    return stream if stream.saving > 0 else None


STAGED_ROW_PIXELS = (2, 3, 5)  # rows ts_conv2d_s8_staged takes in threes and a last two (ts_kernels.h)


def _staged_bytes(graph: Graph, op: Operator) -> int:
    """The scratch of a stage's 1x1 CONV_2D run on one row by ts_conv2d_s8_staged (its widened
    threes: chunk * out_c >= 6 * in_c), for rows too narrow for ts_conv2d_s8_strip's blocks of six
    pixels, where the staged kernel's path through its threes takes them (in_c a multiple of 4, at
    most out_c); for an expansion into its depthwise (tinysched.memory.expand) its groups' scratch;
    0 for any other operator."""
    pair = expansion_of(op)
    if pair is not None:
        return expansion_scratch(graph, pair)
    if op.opcode != "CONV_2D" or len(op.inputs) < 2 or op.inputs[1] < 0 or len(op.outputs) != 1:
        return 0
    if own_kernel_only(graph, op):
        return 0  # a filter offset: the plain kernel of a legacy uint8 model, its rows as they are
    x, y, w = (
        graph.tensors[op.inputs[0]].int8_image,
        graph.tensors[op.outputs[0]].int8_image,
        graph.tensors[op.inputs[1]],
    )
    if x is None or y is None or len(w.shape) != 4 or not w.is_constant or tuple(w.shape[1:3]) != (1, 1):
        return 0
    strides = (int(op.options.get("stride_h", 1)), int(op.options.get("stride_w", 1)))
    in_c, out_c = x[2], y[2]
    if x[:2] != y[:2] or strides != (1, 1) or y[1] not in STAGED_ROW_PIXELS or in_c % 4 or in_c > out_c:
        return 0
    chunk = -(-6 * in_c // out_c)
    return chunk * out_c


def staged_members(graph: Graph, stream: Stream) -> tuple[int, ...]:
    """The members (positions in `stream.operators`) that run ts_conv2d_s8_staged on their one row
    (`_staged_bytes`): narrow 1x1 layers reading a streamed tensor (not heads: those compute
    several rows per call)."""
    if stream.tiles is not None:
        return ()  # a tile's rows are narrower: its 1x1 members run the default kernel
    tensors = set(stream.tensors)
    return tuple(
        k
        for k, op in enumerate(stream.operators)
        if op.opcode == "CONV_2D" and _staged_bytes(graph, op) and op.inputs[0] in tensors
    )


PIXEL_WIDENED_MAX_C = 288  # TS_PIXEL_WIDENED_C in firmware/kernels/ts_conv2d_s8.c: 576 B of stack


def pixel_widened_members(graph: Graph, stream: Stream) -> tuple[int, ...]:
    """The members (positions in `stream.operators`) whose row calls take ts_conv2d_s8_pixel_widened
    on DSP cores: 1x1 CONV_2D at stride 1 over rows one pixel wide (a [H, 1, C] map, in_c a multiple
    of 4 up to PIXEL_WIDENED_MAX_C) reading a streamed tensor, not staged. Why: the default kernel's
    pointwise path widens such a pixel once per channel pair and prepares ts_rq on every row call,
    which made sww's 28x1x40 chain 2.5 times its operators unstreamed."""
    if stream.tiles is not None:
        return ()
    tensors, staged = set(stream.tensors), set(staged_members(graph, stream))
    found = []
    for k, op in enumerate(stream.operators):
        if k in staged or op.opcode != "CONV_2D" or len(op.inputs) < 2 or op.inputs[1] < 0:
            continue
        if op.inputs[0] not in tensors or len(op.outputs) != 1 or own_kernel_only(graph, op):
            continue
        x, y, w = (
            graph.tensors[op.inputs[0]].int8_image,
            graph.tensors[op.outputs[0]].int8_image,
            graph.tensors[op.inputs[1]],
        )
        if x is None or y is None or len(w.shape) != 4 or not w.is_constant or tuple(w.shape[1:3]) != (1, 1):
            continue
        strides = (int(op.options.get("stride_h", 1)), int(op.options.get("stride_w", 1)))
        if (
            strides == (1, 1)
            and x[:2] == y[:2]
            and y[1] == 1
            and x[2] % 4 == 0
            and x[2] <= PIXEL_WIDENED_MAX_C
        ):
            found.append(k)
    return tuple(found)


def _staged(graph: Graph, ops: Sequence[Operator], tensors: Sequence[int]) -> int:
    """The scratch the stage's narrow 1x1 members and its expansions (wherever they read) share
    (they run one at a time)."""
    inside = set(tensors)
    return max(
        (_staged_bytes(graph, op) for op in ops if op.inputs[0] in inside or op.opcode == EXPAND_OPCODE),
        default=0,
    )


def _sums(graph: Graph, sink: Operator) -> int:
    """The int32 sums a stage's sink keeps (`row_sink`), else none."""
    return row_sink(graph, sink)


# ---- stages: streams through a small DAG (issue 33, part 2) -------------------------------------------


def row_inputs(graph: Graph, op: Operator) -> tuple[int, ...]:
    """The activations a streamable operator reads row by row: a windowed one's first input, an
    elementwise one's two operands, a row-summing sink's input."""
    if op.opcode in WINDOWED or op.opcode in ROW_REDUCTIONS or op.opcode in PAD_OPS or row_sink(graph, op):
        return (op.inputs[0],)
    if row_arg(graph, op) or row_resize(graph, op) is not None:
        return (op.inputs[0],)
    gate = broadcast_gate(graph, op)
    return tuple(u for u in op.inputs[:2] if u != gate)


def _streamable(graph: Graph, op: Operator) -> bool:
    """An operator a stage can run row by row: windowed over an int8 image (its other inputs
    constants), or elementwise on equal shapes, one int8 NHWC output either way; or a row-summing sink."""
    if row_sink(graph, op):
        return True  # a global pool, a FULLY_CONNECTED over the flattened map (`ROW_SINKS`)
    if row_arg(graph, op) or row_resize(graph, op) is not None:
        return True  # an ARG_MAX over the channels (a sink); a resize (a head)
    if len(op.outputs) != 1 or graph.tensors[op.outputs[0]].int8_image is None or not op.inputs:
        return False
    if op.opcode in WINDOWED:
        return (
            row_window(graph, op) is not None
            and graph.tensors[op.inputs[0]].int8_image is not None
            and not any(u >= 0 and graph.tensors[u].is_activation for u in op.inputs[1:])
        )
    if row_mean(graph, op) or broadcast_gate(graph, op) is not None:
        return True  # two-pass stages (below): a row-wise MEAN, a MUL by a squeeze-excitation gate
    if row_pad(graph, op) is not None:
        return True  # a PAD the rewrites could not fold into its reader (issue 33, part 4)
    return op.inputs[:1] != op.inputs[1:2] and _elementwise_rows(graph, op, op.inputs[0])


@dataclass(frozen=True)
class RowSchedule:
    """What running a stage's loop does (`row_schedule`, the generated loop's twin): each streamed
    tensor's window is as many rows as it ever holds at once, and for each outer input the lowest
    row any member still reads once output row r is written (its height: none)."""

    rows: tuple[int, ...]  # per streamed tensor: the most rows its window holds at once
    ends: tuple[int, ...]  # per streamed tensor: its rows [0, end) were computed (or read) in all
    later: tuple[tuple[int, tuple[int, ...]], ...]  # (outer input, per output row r: lowest row read after r)
    # the loop's kernel calls numbered in order: per member, per output row, its first call in that
    # row's iteration (0: none); per member, its last call
    first_calls: tuple[tuple[int, ...], ...] = ()
    last_calls: tuple[int, ...] = ()

    def unread_from(self, j: int, readers: Sequence[int]) -> int:
        """The first output row whose iteration calls member j only after every member in `readers`
        (a streamed tensor's) has made its last call: that tensor's window is never slid, filled or
        read again from then on. The output's height: no such row."""
        done = max(self.last_calls[i] for i in readers)
        return next((r for r, c in enumerate(self.first_calls[j]) if c > done), len(self.first_calls[j]))


# Per graph, the schedules already simulated, keyed by the stage's operator objects (kept alive
# beside the result, so their ids stay theirs): planning asks for the same stage's schedule once per
# outer input, per candidate and per round, and the simulation is the planner's costliest step.
_SCHEDULES: weakref.WeakKeyDictionary[
    Graph, dict[tuple[tuple[int, ...], bool], tuple[tuple[Operator, ...], RowSchedule | None]]
] = weakref.WeakKeyDictionary()


def row_schedule(graph: Graph, ops: Sequence[Operator], source: bool = False) -> RowSchedule | None:
    """`_simulate_rows`, once per graph and stage (a graph and its operators are never changed)."""
    known = _SCHEDULES.setdefault(graph, {})
    key = (tuple(map(id, ops)), source)
    if key not in known:
        known[key] = (tuple(ops), _simulate_rows(graph, ops, source))
    return known[key][1]


def _simulate_rows(graph: Graph, ops: Sequence[Operator], source: bool) -> RowSchedule | None:
    """Simulate the loop `lower_stream` generates (ts_kernels.h, "Streamed stages") over the stage
    `ops` (topological, the last the sink): per output row, each streamed operand's rows are made
    present (`ensure`: rows below the lowest any reader still needs dropped, then the missing ones
    computed, each operand of a member ensured first), a member reading only outer (whole) inputs
    computing all its new rows in one call, any other one row per call. None: a member's geometry."""
    last = len(ops) - 1
    tensors = (ops[0].inputs[0],) * source + tuple(op.outputs[0] for op in ops[:-1])
    index = {t: k for k, t in enumerate(tensors)}
    windows = [row_window(graph, op) for op in ops]
    if any(w is None for w in windows):
        return None
    inputs = [row_inputs(graph, op) for op in ops]
    height = {
        u: int(graph.tensors[u].shape[1]) for j, op in enumerate(ops) for u in (*inputs[j], op.outputs[0])
    }
    out_h = [loop_rows(graph, op) for op in ops]
    readers = [[j for j in range(len(ops)) if t in inputs[j]] for t in tensors]
    producer = [None if source and k == 0 else k - source for k in range(len(tensors))]
    heads = [all(u not in index for u in inputs[j]) for j in range(len(ops))]
    first, nxt, cap = [0] * len(tensors), [0] * len(tensors), [0] * len(tensors)
    first_calls = [[0] * out_h[last] for _ in ops]  # RowSchedule.first_calls: per loop row
    last_calls, clock = [0] * len(ops), [0]
    reads: dict[int, list[tuple[int, int]]] = {}
    row = 0

    def top(j: int, m: int) -> int:
        w = windows[j]
        assert w is not None
        return w.top(m)

    def end(j: int, m: int, u: int) -> int:
        w = windows[j]
        assert w is not None
        return w.end(m, height[u])

    def cur(j: int) -> int:
        return row if j == last else nxt[j + source]

    def read(j: int, m: int) -> None:
        clock[0] += 1
        last_calls[j] = clock[0]
        first_calls[j][row] = first_calls[j][row] or clock[0]
        for u in inputs[j]:
            if u not in index:
                reads.setdefault(u, []).append((row, top(j, m)))

    def ensure(k: int, hi: int) -> None:
        lo = min(top(j, cur(j)) if cur(j) < out_h[j] else height[tensors[k]] for j in readers[k])
        if lo > first[k]:  # ts_window_slide
            nxt[k] = max(nxt[k], lo)
            first[k] = lo
        j = producer[k]
        if nxt[k] < hi and (j is None or heads[j]):
            if j is not None:
                read(j, nxt[k])
            nxt[k] = hi
        while nxt[k] < hi:
            assert j is not None
            for u in inputs[j]:
                if u in index:
                    ensure(index[u], end(j, nxt[k], u))
            read(j, nxt[k])
            nxt[k] += 1
        cap[k] = max(cap[k], nxt[k] - first[k])

    for row in range(out_h[last]):
        for u in inputs[last]:
            if u in index:
                ensure(index[u], end(last, row, u))
        read(last, row)
    later = []
    for u, found in reads.items():
        lows = [height[u]] * out_h[last]
        for it, lo in found:
            for r in range(it):
                lows[r] = min(lows[r], lo)
        later.append((u, tuple(lows)))
    return RowSchedule(
        tuple(cap), tuple(nxt), tuple(later), tuple(map(tuple, first_calls)), tuple(last_calls)
    )


def stream_shift(graph: Graph, stream: Stream, x: int) -> int | None:
    """D of the fused operator's output against outer input x (not counting an elementwise sink's
    own reads of x in the row it writes: tinysched.memory.overlap adds its operator's D): output row
    r is written after every read of the rows its loop iteration makes and before those of the
    iterations after it, which start at the lowest row `row_schedule` names."""
    if stream.tiles is not None:
        return None  # each tile writes every output row again: the output shares no outer input's bytes
    sched = row_schedule(graph, stream.operators, stream.source)
    later = None if sched is None else dict(sched.later).get(x)
    y = graph.tensors[stream.consumer.outputs[0]]
    if later is None or len(y.shape) != 4 or stream.sums:
        return None  # (a row-summing sink's few output bytes share nothing: written after the loop)
    in_row = graph.tensors[x].nbytes // int(graph.tensors[x].shape[1])
    out_row = y.nbytes // int(y.shape[1])
    return min(low * in_row - (r + 1) * out_row for r, low in enumerate(later))


def _stage(graph: Graph, ops: Sequence[Operator], absorbed: tuple[int, ...] = ()) -> Stream | None:
    """The Stream running `ops` (topological, the last the sink), or None when it saves nothing."""
    tensors = tuple(op.outputs[0] for op in ops[:-1])
    sched = row_schedule(graph, ops)
    if sched is None:
        return None
    position = next((p for p, u in enumerate(ops[-1].inputs) if tensors and u == tensors[-1]), 0)
    return _saving_stream(graph, ops, tensors, position, sched, absorbed=absorbed)


def _stages(graph: Graph, sink: Operator, shared: frozenset[int] = frozenset()) -> list[Stream]:
    """The stages ending at `sink`, grown backwards: a member's row input joins (its producer with
    it) when the producer is streamable and every reader of it is a member (or it is `shared`: a
    two-pass stage's feature map, which the other pass computes again), up to MAX_CHAIN. A sink reading
    its map through a flattening view (`flattening_view`) reads the map itself, the view absorbed."""
    view = flattening_view(graph, sink)
    sink = _reading_the_map(graph, sink)
    absorbed = () if view is None else (view.index,)
    if not _streamable(graph, sink):
        return []
    start = frozenset([sink.index])
    seen, todo, found = {start}, [start], []
    while todo:
        group = todo.pop()
        for v in group:
            member = sink if v == sink.index else graph.operators[v]
            if row_resize(graph, member) is not None:
                continue  # a head: it reads its input whole
            for u in row_inputs(graph, member):
                p = graph.producer.get(u)
                if p is None or p in group or len(group) >= MAX_CHAIN or u in graph.outputs:
                    continue
                if not _streamable(graph, graph.operators[p]) or row_sink(graph, graph.operators[p]):
                    continue
                if row_arg(graph, graph.operators[p]):
                    continue  # a sink only
                if not set(graph.consumers.get(u, ())) <= group | set(absorbed) and u not in shared:
                    continue
                grown = group | {p}
                if grown not in seen:
                    seen.add(grown)
                    todo.append(grown)
                    stream = _stage(graph, _topological(graph, grown, sink), absorbed)
                    if stream is not None:
                        found.append(stream)
    return found


def _topological(graph: Graph, group: frozenset[int], sink: Operator) -> list[Operator]:
    """The members in an order in which every member comes after the members it reads from (`sink`
    as given: perhaps reading its map past a flattening view)."""
    order: list[Operator] = []
    placed: set[int] = set()
    while len(order) < len(group):
        for v in sorted(group - placed):
            op = sink if v == sink.index else graph.operators[v]
            if all(graph.producer.get(u) not in group - placed for u in op.inputs if u >= 0):
                order.append(op)
                placed.add(v)
                break
    return order


def candidates(graph: Graph) -> list[Stream]:
    """Every stage that can stream (2 to MAX_CHAIN operators; they may share operators), in the
    stored order of their last operator, smaller first."""
    found = [s for op in graph.operators for s in _stages(graph, op)]
    return sorted(found, key=lambda s: (s.consumer.index, len(s.operators)))


def _extend(graph: Graph, ops: list[Operator], rows: list[int], source: bool) -> list[Stream]:
    """The chains that continue `ops` (already `rows` of windows) link by link, up to MAX_CHAIN."""
    found = []
    while len(ops) < MAX_CHAIN and (link := _link(graph, ops[-1])) is not None:
        consumer, position, window_rows = link
        ops.append(consumer)
        rows.append(window_rows)
        stream = _chain(graph, ops, rows, position, source)
        if stream is not None:
            found.append(stream)
        if consumer.opcode not in WINDOWED:
            break
    return found


def input_chains(graph: Graph) -> tuple[list[Stream], str | None]:
    """The chains headed by the model's input, its rows delivered by the application (--stream-input):
    the input read alone by a windowed operator, then as many links as `candidates` would take (1 to
    MAX_CHAIN operators), shortest first; or none and the one line that says why."""
    if len(graph.inputs) != 1:
        return [], f"the model has {len(graph.inputs)} inputs; the rows streamed are a model's only input's"
    x = graph.inputs[0]
    tensor = graph.tensors[x]
    shape = "x".join(map(str, tensor.shape))
    if tensor.dtype != "int8":
        readers = [graph.operators[v].opcode for v in graph.consumers.get(x, ())]
        fix = " (--io int8 removes its QUANTIZE and takes int8 rows)" if readers == ["QUANTIZE"] else ""
        return [], f"input 0 is {tensor.dtype}; the rows streamed are int8{fix}"
    if graph.tensors[x].int8_image is None:
        return [], f"input 0 ({shape}) is not an image of batch 1 (1 x rows x columns x channels)"
    readers = graph.consumers.get(x, ())
    if x in graph.outputs:
        return [], "input 0 is also an output of the model"
    if len(readers) != 1:
        who = ", ".join(f"{v} ({graph.operators[v].opcode})" for v in readers)
        return [], f"input 0 is read by {len(readers)} operators ({who}); its rows stream into one"
    first = graph.operators[readers[0]]
    window = row_window(graph, first) if first.opcode in WINDOWED and not row_sink(graph, first) else None
    if window is None or first.inputs[0] != x or x in first.inputs[1:] or len(first.outputs) != 1:
        return [], (
            f"input 0's reader, operator {first.index} ({first.opcode}), does not read it row by row "
            "(CONV_2D, DEPTHWISE_CONV_2D, AVERAGE_POOL_2D and MAX_POOL_2D do)"
        )
    head = min(window.span, int(tensor.shape[1]))
    alone = _chain(graph, [first], [head], 0, source=True)  # the input's reader alone
    found = ([alone] if alone is not None else []) + _extend(graph, [first], [head], source=True)
    if not found:
        return [], f"input 0's window of {head} row(s) is no smaller than the input"
    return found, None


def members(stream: Stream) -> frozenset[int]:
    """The operators a chain runs, and -1 for the application's rows: no chain without the input as
    its head contains one with it."""
    own = frozenset(op.index for op in stream.operators) | frozenset(stream.absorbed)
    return own | ({-1} if stream.source else frozenset())


def chain_shift(graph: Graph, stream: Stream) -> int | None:
    """D of the fused operator's output against its first operator's data input (`stream_shift`):
    output row r is written once every row its iteration needs is computed and before the reads of
    the next iterations (None with the input streamed from the application: nothing shared)."""
    return None if stream.source else stream_shift(graph, stream, stream.producer.inputs[0])


def outer_inputs(graph: Graph, stream: Stream) -> tuple[int, ...]:
    """The activations the stage reads whole: read by members, written by none (and not streamed)."""
    tensors = set(stream.tensors)
    return tuple(
        dict.fromkeys(
            u
            for op in stream.operators
            for u in op.input_tensors
            if graph.tensors[u].is_activation and u not in tensors
        )
    )


def local_bytes(graph: Graph, stream: Stream, kept: bool = False) -> int:
    """The fused step's own bytes: the stage's outer inputs and output, its windows, less the most
    its output can share with one outer input (a rough score for choosing stages; `kept`: not with
    an input another operator reads after the stage, whose bytes stay)."""
    outer = outer_inputs(graph, stream)
    y = graph.tensors[stream.consumer.outputs[0]].nbytes
    inside = {op.index for op in stream.operators}
    shared = 0
    for x in outer:
        if kept and any(v not in inside for v in graph.consumers.get(x, ())):
            continue  # read after the stage too (a residual block's skip): its bytes stay
        shift = stream_shift(graph, stream, x)
        if shift is not None and x in stream.consumer.inputs:
            shift = min(shift, 0)  # an elementwise sink reads x's row as it writes its own
        if shift is not None:
            shared = max(shared, min(graph.tensors[x].nbytes, y, y + shift))
    return sum(graph.tensors[u].nbytes for u in outer) + stream.window_bytes + y - shared


def choose(
    graph: Graph, found: Sequence[Stream], chosen: Sequence[Stream], peak: set[int], by: str = "bytes"
) -> list[Stream]:
    """`chosen` plus, for the operators at the peak, the chains with the fewest own bytes that
    touch them (`by` "saving": the chains removing the most bytes of whole tensors, which leave no
    whole tensor next to the peak: a block's conv -> conv without its ADD leaves the ADD's operand
    whole; "kept": the fewest own bytes, an input read after the chain counted whole: the block's
    chain with its ADD then scores below the one without); a new chain replaces the chosen ones it
    contains and must not cut into others."""
    group = {id(s): members(s) for s in (*found, *chosen)}  # a chain is its operators
    touching = [s for s in found if group[id(s)] & peak]
    score = {group[id(s)]: local_bytes(graph, s, kept=by == "kept") for s in (*touching, *chosen)}
    result = list(chosen)

    def key(s: Stream) -> tuple[int, int]:
        return (score[group[id(s)]] if by != "saving" else -s.saving, s.consumer.index)

    for s in sorted(touching, key=key):
        mine = group[id(s)]
        inside = [c for c in result if group[id(c)] <= mine]
        outside = [c for c in result if not group[id(c)] <= mine]
        if any(group[id(c)] & mine for c in outside) or s in result:
            continue
        if inside and all(score[group[id(c)]] <= score[mine] for c in inside):
            continue
        result = [*outside, s]
    return sorted(result, key=lambda s: s.consumer.index)


def streamed_input(graph: Graph) -> int | None:
    """The graph input a fused operator takes row by row from the application (None: none)."""
    heads = [s.tensors[0] for op in graph.operators if (s := stream_of(op)) is not None and s.source]
    return heads[0] if heads else None


def stream_of(op: Operator) -> Stream | None:
    """The pair a fused operator runs (None: not a fused operator)."""
    stream = op.options.get(STREAM_OPTION) if op.opcode == STREAM_OPCODE else None
    return stream if isinstance(stream, Stream) else None


def operator_type(op: Operator) -> str:
    """An operator's type as users know it, in TFLite's names: its opcode, or for a streamed chain
    its operators' joined by + (`CONV_2D+DEPTHWISE_CONV_2D (streamed)`). STREAM_OPCODE is
    tinysched's own: every table, report and JSON that names a planned operator's type says this."""
    stream = stream_of(op)
    if stream is None:
        return opcode_text(op)
    head = "input rows+" if stream.source else ""
    return head + "+".join(map(opcode_text, stream.operators)) + " (streamed)"


def whole_bytes_saved(op: Operator) -> int:
    """What streaming saves at `op`'s step: its chain's tensors, which the tensor model holds whole,
    less their windows (0 for any other operator)."""
    stream = stream_of(op)
    return 0 if stream is None else stream.saving


def _shape_text(graph: Graph, t: int) -> str:
    return "x".join(str(d) for d in graph.tensors[t].shape[1:])


def fuse(graph: Graph, streams: Sequence[Stream]) -> RewriteResult:
    """`graph` with each stream one operator at its last operator's place (a "stream" rewrite)."""
    if not streams:
        return no_rewrites(graph)
    matches = []
    for s in streams:
        tensors = set(s.tensors)
        inputs = tuple(
            dict.fromkeys(u for op in s.operators for u in op.inputs if u >= 0 and u not in tensors)
        )
        c = s.consumer
        op = Operator(c.index, STREAM_OPCODE, inputs, c.outputs, {STREAM_OPTION: s}, 1)
        names = "input rows -> " * s.source + " -> ".join(map(opcode_text, s.operators))
        shapes = ", ".join(_shape_text(graph, t) for t in s.tensors)
        detail = (
            f"{names} streamed row by row: the {shapes} tensor(s) between them ({sum(s.tensor_bytes):,} B) "
            f"are never whole, windows of {'/'.join(map(str, s.rows))} row(s) ({s.window_bytes:,} B) hold "
            "what the next operator still reads"
        )
        if s.tiles is not None:
            edges = ", ".join(f"{lo}-{hi - 1}" for lo, hi in (t[-1] for t in s.tiles.members))
            detail += (
                f", over {s.tiles.count} column tiles of its output (columns {edges}), each window a tile's "
                "columns, the halo columns computed again"
            )
        removed = tuple(op.index for op in s.operators[:-1]) + s.absorbed
        views = tuple(graph.operators[v].outputs[0] for v in s.absorbed)  # read through by the sink
        matches.append(Match("stream", c.index, op, removed, s.tensors + views, detail))
    fused = apply_matches(graph, matches)
    heads = {s.tensors[0] for s in streams if s.source}
    if not heads:
        return fused
    g = fused.graph  # the input streamed from the application is no longer one the arena holds
    inputs = tuple(t for t in g.inputs if t not in heads)
    return replace(
        fused,
        graph=Graph(
            g.tensors, g.operators, inputs, g.outputs, g.name, g.description, g.metadata, g.source, g.sha256
        ),
    )


# ---- squeeze-excitation blocks by two passes (issue 33, part 2) ----------------------------------
#
# A squeeze-excitation block reads its feature map T twice: a global pool (MEAN over the width, then
# over the rows; or over both) whose result, through small layers, becomes a per-channel gate, and a
# broadcast MUL scaling T by that gate. The MUL cannot start before the pool has seen every row, so
# one stage cannot stream T. Two can: the first pass (`TwoPass.first`) computes T's rows from the
# block's input and feeds them to a row-wise MEAN (each row reduced over its width as it arrives,
# the rows dropped), the second (`TwoPass.second`) computes them again and runs the MUL and what
# follows it row by row. T is never whole; the producers of T run twice (`TwoPass.recomputed`),
# which the pipeline counts as added MACs and limits by --mac-budget. The row-wise MEAN is TFLite's
# MEAN of one row at a time: its int32 sum over the width and the requantisation are per output
# element, so the result is the same bytes.

ROW_REDUCTIONS = ("MEAN",)  # reductions a stage runs row by row: over the width only


def row_mean(graph: Graph, op: Operator) -> bool:
    """A MEAN over the width alone (axis 2, dims kept) of an int8 NHWC image: output row r is the
    mean of input row r over its columns."""
    if op.opcode != "MEAN" or len(op.inputs) != 2 or len(op.outputs) != 1 or not op.options.get("keep_dims"):
        return False
    x, y, axes = op.inputs[0], op.outputs[0], graph.tensors[op.inputs[1]]
    if graph.tensors[x].int8_image is None or graph.tensors[y].int8_image is None or axes.data is None:
        return False
    rank = 4
    wanted = sorted({int(a) % rank for a in list(axes.data.reshape(-1))})
    hx, hy = graph.tensors[x].shape, graph.tensors[y].shape
    return wanted == [2] and (hy[1], hy[2], hy[3]) == (hx[1], 1, hx[3])


def broadcast_gate(graph: Graph, op: Operator) -> int | None:
    """The gate of a MUL scaling an int8 NHWC image by a per-channel vector (1x1x1xC, an activation:
    a squeeze-excitation gate), which it reads whole; None for any other operator."""
    if op.opcode != "MUL" or len(op.inputs) != 2 or len(op.outputs) != 1 or op.inputs[0] == op.inputs[1]:
        return None
    y = op.outputs[0]
    if graph.tensors[y].int8_image is None:
        return None
    for x, g in (op.inputs, op.inputs[::-1]):
        gate = graph.tensors[g]
        if (
            graph.tensors[x].shape == graph.tensors[y].shape
            and graph.tensors[x].int8_image is not None
            and gate.is_activation
            and gate.dtype == "int8"
            and tuple(gate.shape) == (1, 1, 1, int(graph.tensors[y].shape[3]))
        ):
            return g
    return None


@dataclass(frozen=True)
class TwoPass:
    """A squeeze-excitation block streamed by two passes over the rows of `tensor`: `first` ends at
    the row-wise MEAN reading it, `second` recomputes its rows and runs the MUL by the gate (and what
    follows); the operators `first` runs before its MEAN run in both."""

    first: Stream
    second: Stream
    tensor: int
    between: frozenset[int] = frozenset()  # the operators that make the gate from the MEAN's rows

    @property
    def recomputed(self) -> tuple[Operator, ...]:
        return self.first.operators[:-1]


def _ancestors(graph: Graph, t: int) -> set[int]:
    """The operators tensor t depends on."""
    found: set[int] = set()
    todo = [t]
    while todo:
        p = graph.producer.get(todo.pop())
        if p is not None and p not in found:
            found.add(p)
            todo.extend(u for u in graph.operators[p].inputs if u >= 0)
    return found


def _downstream(graph: Graph, op: Operator, depth: int = 4) -> list[Operator]:
    """`op` and the operators reading its output, theirs, ... up to `depth` links down."""
    found, frontier = [op], [op]
    for _ in range(depth):
        frontier = [
            graph.operators[v] for o in frontier for t in o.outputs for v in graph.consumers.get(t, ())
        ]
        found += [o for o in frontier if o not in found]
    return found


def two_pass(graph: Graph) -> list[TwoPass]:
    """Every squeeze-excitation block that can stream by two passes: a feature map T read by a
    row-wise MEAN and by a MUL whose gate depends on that MEAN; the first pass a stage ending at the
    MEAN, the second a stage through the MUL whose operators above T are exactly the first's."""
    found = []
    for m in graph.operators:
        gate = broadcast_gate(graph, m)
        if gate is None:
            continue
        t = row_inputs(graph, m)[0]
        readers = graph.consumers.get(t, ())
        if len(readers) != 2 or t in graph.outputs or graph.producer.get(t) is None:
            continue
        r = graph.operators[next(v for v in readers if v != m.index)]
        if not row_mean(graph, r) or r.index not in _ancestors(graph, gate):
            continue
        upstream = _ancestors(graph, t)
        between = frozenset(_ancestors(graph, gate) - upstream - {r.index})
        firsts = {
            frozenset(op.index for op in s.operators[:-1]): s
            for s in _stages(graph, r, frozenset({t}))
            if t in s.tensors
        }
        for sink in _downstream(graph, m):
            for s in _stages(graph, sink, frozenset({t})):
                above = frozenset(op.index for op in s.operators if op.index in upstream)
                if t in s.tensors and m in s.operators and above in firsts:
                    found.append(TwoPass(firsts[above], s, t, between))
    return found


def pass_bytes(graph: Graph, stream: Stream) -> int:
    """`local_bytes` of one pass of a two-pass stream, its output sharing bytes only with an outer
    input that dies there (every reader of it a member): the other pass reads the block's input too."""
    outer = outer_inputs(graph, stream)
    y = graph.tensors[stream.consumer.outputs[0]].nbytes
    inside = {op.index for op in stream.operators}
    shared = 0
    for x in outer:
        if not set(graph.consumers.get(x, ())) <= inside or x in graph.outputs:
            continue
        shift = stream_shift(graph, stream, x)
        if shift is not None and x in stream.consumer.inputs:
            shift = min(shift, 0)
        if shift is not None:
            shared = max(shared, min(graph.tensors[x].nbytes, y, y + shift))
    return sum(graph.tensors[u].nbytes for u in outer) + stream.window_bytes + y - shared


# ---- column tiles: a stage whose rows are too wide (issue 33, part 2) --------------------------------
#
# A stage's windows hold whole rows: `rows[k]` rows of tensor k, each its full width. Where those
# windows are the peak (mcunet_vww_int8's first stage: 3 rows of 40x48 and of 40x16 beside its
# 20x20x16 output), the stage can run over column tiles instead, as MCUNetV2's patches do: the
# loop over the rows runs once per tile, each tile computing a range of the sink's output columns.
# Every member computes the columns of its output that its readers' column windows reach in that
# tile (the halo of a k x k window, computed again by the neighbouring tile: added MACs, counted
# and limited by --mac-budget), and each window holds a tile's columns only. The application's
# rows (a stage headed by the input) are asked for once per tile, each whole, into room for one
# row after the window's tile rows, their tile's columns then moved down.

MAX_TILES = 4  # column tiles a stage may run over: each adds its members' halo columns again


@dataclass(frozen=True)
class ColumnTiles:
    """The column tiles a stage runs over (`column_tiles`): per tile, the columns each member
    computes and each streamed tensor's window holds (both [lo, hi) of the whole tensor's)."""

    members: tuple[tuple[tuple[int, int], ...], ...]  # per tile, per member: its output columns
    tensors: tuple[tuple[tuple[int, int], ...], ...]  # per tile, per streamed tensor: its columns held
    source_slack: int = 0  # the application's window: a whole row's bytes less a tile row's (0: none)

    @property
    def count(self) -> int:
        return len(self.members)

    def computed_columns(self, j: int) -> int:
        """Member j's output columns over all tiles (its output's width, plus the halo recomputed)."""
        return sum(t[j][1] - t[j][0] for t in self.members)


def column_window(graph: Graph, op: Operator) -> RowWindow | None:
    """The column geometry of a tiled stage's member over its input (`RowWindow` across the
    columns): a convolution's or pool's; None for the members a tile does not run yet (elementwise
    ones, a global pool, a PAD, a row-wise MEAN)."""
    if op.opcode not in WINDOWED or row_sink(graph, op) or row_window(graph, op) is None:
        return None
    return _axis_window(graph, op, 1)


def column_tiles(graph: Graph, stream: Stream, count: int) -> Stream | None:
    """`stream` run over `count` column tiles of its sink's output (as even as the width allows),
    each window a tile's widest columns; None when a member cannot run on a column range (every
    member must read only the stage's streamed tensors: an outer input's rows are whole-width), a
    tile would compute nothing, or the windows are no smaller."""
    if count < 2 or stream.sums or stream.tiles is not None:
        return None
    if any(op.opcode == EXPAND_OPCODE for op in stream.operators):
        return None  # an expansion's scratch holds whole rows of its groups
    ops, tensors = stream.operators, stream.tensors
    index = {t: k for k, t in enumerate(tensors)}
    geometry = [column_window(graph, op) for op in ops]
    inputs = [row_inputs(graph, op) for op in ops]
    if any(g is None for g in geometry):
        return None
    for j, ins in enumerate(inputs):  # an outer input: read whole-width, so by a 1x1 head alone
        if any(u not in index for u in ins) and not _pointwise_head(graph, ops[j], ins, index):
            return None
    width = [int(graph.tensors[op.outputs[0]].shape[2]) for op in ops]
    tensor_width = [int(graph.tensors[t].shape[2]) for t in tensors]
    if count > width[-1]:
        return None
    producer = {t: j for j, op in enumerate(ops) for t in op.outputs}
    member_tiles, tensor_tiles = [], []
    for tile in range(count):
        cols: list[tuple[int, int] | None] = [None] * len(ops)
        held: list[tuple[int, int] | None] = [None] * len(tensors)
        cols[-1] = (tile * width[-1] // count, (tile + 1) * width[-1] // count)
        for j in reversed(range(len(ops))):
            mine, g = cols[j], geometry[j]
            assert g is not None
            if mine is None or mine[1] <= mine[0]:
                return None  # no reader in this tile reads the member's output
            for u in inputs[j]:
                if u not in index:
                    continue  # a 1x1 head's outer input: its row's columns [lo, hi) are the head's
                k = index[u]
                lo = max(mine[0] * g.stride - g.pad_top, 0)
                hi = min((mine[1] - 1) * g.stride - g.pad_top + g.span, tensor_width[k])
                was = held[k]
                held[k] = (lo, hi) if was is None else (min(lo, was[0]), max(hi, was[1]))
                if u in producer:
                    cols[producer[u]] = held[k]
        if any(h is None or h[1] <= h[0] for h in held):
            return None
        member_tiles.append(tuple(c for c in cols if c is not None))
        tensor_tiles.append(tuple(h for h in held if h is not None))
    channels = [int(graph.tensors[t].shape[3]) for t in tensors]
    row_bytes = tuple(
        max(hi - lo for lo, hi in (t[k] for t in tensor_tiles)) * channels[k] for k in range(len(tensors))
    )
    slack = tensor_width[0] * channels[0] - row_bytes[0] if stream.source else 0
    tiles = ColumnTiles(tuple(member_tiles), tuple(tensor_tiles), slack)
    result = replace(stream, row_bytes=row_bytes, tiles=tiles, staged=0)
    return result if result.window_bytes < stream.window_bytes else None


def _pointwise_head(graph: Graph, op: Operator, ins: Sequence[int], index: dict[int, int]) -> bool:
    """A member reading only outer inputs through a 1x1 window of stride 1 without padding (an
    expansion's 1x1 convolution): in a tile it reads one contiguous run of each input row, so it
    runs one row per call at the run's first byte."""
    one = RowWindow(1, 1, 0)
    return all(u not in index for u in ins) and row_window(graph, op) == one == column_window(graph, op)


def tiled(graph: Graph, stream: Stream) -> list[Stream]:
    """`stream` over 2 to MAX_TILES column tiles, each where it makes the windows smaller."""
    found = (column_tiles(graph, stream, n) for n in range(2, MAX_TILES + 1))
    return [s for s in found if s is not None]
