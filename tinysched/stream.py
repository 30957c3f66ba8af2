"""Streamed fusion: a producer and its only consumer run row by row, so the tensor between them is
never whole.

A windowed operator (convolution, depthwise convolution, pooling) computes each output row from a
band of its input's rows, and an elementwise one (ADD, SUB, MUL on equal shapes) from one row of each
input. When tensor T is written by a windowed producer P and read only by such a consumer C, the two
can run as one loop over C's output rows: before C's row r, P computes the rows of T that row reads
and that are not there yet, into a *window* of as many rows as C's window spans; rows C no longer
needs are dropped from its bottom. T then takes the window's bytes instead of its own, which is what
TinyEngine and MCUNetV2 gain by patch- and row-based execution, here derived from the same kernels
called on row ranges (firmware/include/ts_kernels.h, "Streamed pairs").

`candidates(graph)` finds every such pair, `fuse(graph, streams)` replaces each by one operator
`STREAM_OPCODE` (a rewrite of kind "stream", with the pair recorded in its options) whose scratch is
the window. The pipeline (tinysched.pipeline) streams the pairs whose operators run at the peak step,
round by round, keeping a round only when it lowers the arena; and only in the refined memory
model with `--prefer memory`:
the tensor model stays the whole-tensor, black-box-kernel model it is compared with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tinysched.graph import Graph, Operator
from tinysched.rewrite import Match, RewriteResult, apply_matches, no_rewrites, window_pads

__all__ = [
    "ELEMENTWISE",
    "STREAM_OPCODE",
    "STREAM_OPTION",
    "WINDOWED",
    "RowWindow",
    "Stream",
    "candidates",
    "fuse",
    "row_window",
    "stream_of",
]

STREAM_OPCODE = "TS_STREAM"
STREAM_OPTION = "stream"
WINDOWED = ("CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "MAX_POOL_2D")
ELEMENTWISE = ("ADD", "SUB", "MUL")  # their kernels walk a ts_broadcast_shape (rows: dims[3])


@dataclass(frozen=True)
class RowWindow:
    """Which input rows output row r of an operator reads: [r * stride - pad_top, ... + span),
    clipped to the input."""

    span: int  # rows one output row reads: (kernel - 1) * dilation + 1
    stride: int
    pad_top: int


@dataclass(frozen=True)
class Stream:
    """A producer/consumer pair run row by row (operators as in the graph before fusion)."""

    producer: Operator
    consumer: Operator
    tensor: int  # the streamed tensor: the producer's output, read only by the consumer
    position: int  # where the tensor enters the consumer
    rows: int  # rows of the tensor the window holds
    row_bytes: int
    tensor_bytes: int

    @property
    def window_bytes(self) -> int:
        return self.rows * self.row_bytes

    @property
    def saving(self) -> int:
        return self.tensor_bytes - self.window_bytes


def _nhwc1(graph: Graph, t: int) -> tuple[int, int, int] | None:
    """(h, w, c) of an int8 NHWC activation of batch 1, else None."""
    tensor = graph.tensors[t]
    if tensor.dtype != "int8" or not tensor.is_activation or len(tensor.shape) != 4 or tensor.shape[0] != 1:
        return None
    h, w, c = (int(d) for d in tensor.shape[1:])
    return (h, w, c) if h > 0 and w > 0 and c > 0 else None


def _kernel_hw(graph: Graph, op: Operator) -> tuple[int, int] | None:
    if op.opcode in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        if len(op.inputs) < 2 or op.inputs[1] < 0 or len(graph.tensors[op.inputs[1]].shape) != 4:
            return None
        shape = graph.tensors[op.inputs[1]].shape
        return int(shape[1]), int(shape[2])
    return int(op.options.get("filter_height", 0)), int(op.options.get("filter_width", 0))


def row_window(graph: Graph, op: Operator) -> RowWindow | None:
    """The row geometry of a windowed operator over its first input (elementwise: one row each)."""
    if op.opcode in ELEMENTWISE:
        return RowWindow(1, 1, 0)
    if op.opcode not in WINDOWED or not op.inputs or not op.outputs:
        return None
    x, y = _nhwc1(graph, op.inputs[0]), _nhwc1(graph, op.outputs[0])
    kernel = _kernel_hw(graph, op)
    if x is None or y is None or kernel is None or min(kernel) < 1:
        return None
    pads = window_pads(op, (x[0], x[1]), (y[0], y[1]), kernel)
    stride = int(op.options.get("stride_h", 1))
    pooling = op.opcode in ("AVERAGE_POOL_2D", "MAX_POOL_2D")
    dilation = 1 if pooling else int(op.options.get("dilation_hfactor", 1) or 1)
    if pads is None or stride < 1 or dilation < 1 or pads[0] < 0:
        return None
    return RowWindow((kernel[0] - 1) * dilation + 1, stride, pads[0])


def _elementwise_rows(graph: Graph, op: Operator, t: int) -> bool:
    """An ADD/SUB/MUL whose two inputs and output all have T's shape (no broadcast), T read once."""
    if op.opcode not in ELEMENTWISE or len(op.inputs) != 2 or len(op.outputs) != 1:
        return False
    shape = graph.tensors[t].shape
    return (
        op.inputs.count(t) == 1
        and all(graph.tensors[u].shape == shape for u in (*op.inputs, op.outputs[0]))
        and all(_nhwc1(graph, u) is not None for u in (*op.inputs, op.outputs[0]))
    )


def _pair(graph: Graph, producer: Operator) -> Stream | None:
    if producer.opcode not in WINDOWED or len(producer.outputs) != 1 or row_window(graph, producer) is None:
        return None
    t = producer.outputs[0]
    hwc = _nhwc1(graph, t)
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
        rows = min(window.span, hwc[0])
    elif _elementwise_rows(graph, consumer, t):
        rows = 1
    else:
        return None
    if producer.inputs[0] in consumer.inputs:
        return None  # one tensor read by both halves: its overlap would need both orders
    row_bytes = hwc[1] * hwc[2]
    stream = Stream(producer, consumer, t, consumer.inputs.index(t), rows, row_bytes, graph.tensors[t].nbytes)
    return stream if stream.saving > 0 else None


def candidates(graph: Graph) -> list[Stream]:
    """Every pair that can stream, largest saving first, no operator in two of them."""
    found = [s for op in graph.operators if (s := _pair(graph, op)) is not None]
    found.sort(key=lambda s: (-s.saving, s.consumer.index))
    used: set[int] = set()
    chosen = []
    for s in found:
        if {s.producer.index, s.consumer.index} & used:
            continue
        used |= {s.producer.index, s.consumer.index}
        chosen.append(s)
    return sorted(chosen, key=lambda s: s.consumer.index)


def stream_of(op: Operator) -> Stream | None:
    """The pair a fused operator runs (None: not a fused operator)."""
    stream = op.options.get(STREAM_OPTION) if op.opcode == STREAM_OPCODE else None
    return stream if isinstance(stream, Stream) else None


def _shape_text(graph: Graph, t: int) -> str:
    return "x".join(str(d) for d in graph.tensors[t].shape[1:])


def fuse(graph: Graph, streams: Sequence[Stream]) -> RewriteResult:
    """`graph` with each stream one operator at the consumer's place (a "stream" rewrite)."""
    if not streams:
        return no_rewrites(graph)
    matches = []
    for s in streams:
        p, c = s.producer, s.consumer
        others = [u for k, u in enumerate(c.inputs) if k != s.position]
        inputs = tuple(dict.fromkeys(u for u in (*p.inputs, *others) if u >= 0))
        op = Operator(c.index, STREAM_OPCODE, inputs, c.outputs, {STREAM_OPTION: s}, 1)
        detail = (
            f"{p.opcode} streamed into {c.opcode} row by row: the {_shape_text(graph, s.tensor)} tensor "
            f"between them ({s.tensor_bytes:,} B) is never whole, a window of {s.rows} row(s) "
            f"({s.window_bytes:,} B) holds what the {c.opcode} still reads"
        )
        matches.append(Match("stream", c.index, op, (p.index,), (s.tensor,), detail))
    return apply_matches(graph, matches)
