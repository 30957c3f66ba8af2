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

from collections.abc import Sequence
from dataclasses import dataclass, replace

from tinysched.model.graph import Graph, Operator
from tinysched.model.rewrite import Match, RewriteResult, apply_matches, no_rewrites, window_pads

__all__ = [
    "ELEMENTWISE",
    "STREAM_OPCODE",
    "STREAM_OPTION",
    "WINDOWED",
    "RowWindow",
    "Stream",
    "MAX_CHAIN",
    "candidates",
    "chain_shift",
    "choose",
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
        """Where tensor k's window starts in the fused operator's scratch (windows end to end)."""
        return sum(r * b for r, b in zip(self.rows[:k], self.row_bytes[:k], strict=True))

    @property
    def window_bytes(self) -> int:
        return self.window_offset(len(self.tensors))

    @property
    def saving(self) -> int:
        return sum(self.tensor_bytes) - self.window_bytes


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


MAX_CHAIN = 4  # operators in one stream at most


def _link(graph: Graph, producer: Operator) -> tuple[Operator, int, int] | None:
    """(consumer, position, window rows) when the producer's output can stream into its reader."""
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
    row_bytes = tuple(int(graph.tensors[t].shape[2] * graph.tensors[t].shape[3]) for t in tensors)
    stream = Stream(
        tuple(ops),
        tensors,
        position,
        tuple(rows),
        row_bytes,
        tuple(graph.tensors[t].nbytes for t in tensors),
        source,
    )
    return stream if stream.saving > 0 else None


def candidates(graph: Graph) -> list[Stream]:
    """Every chain that can stream (2 to MAX_CHAIN operators; they may share operators), in the
    stored order of their last operator, shorter first."""
    found = [s for op in graph.operators for s in _extend(graph, [op], [], source=False)]
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
    if _nhwc1(graph, x) is None:
        return [], f"input 0 ({shape}) is not an image of batch 1 (1 x rows x columns x channels)"
    readers = graph.consumers.get(x, ())
    if x in graph.outputs:
        return [], "input 0 is also an output of the model"
    if len(readers) != 1:
        who = ", ".join(f"{v} ({graph.operators[v].opcode})" for v in readers)
        return [], f"input 0 is read by {len(readers)} operators ({who}); its rows stream into one"
    first = graph.operators[readers[0]]
    window = row_window(graph, first) if first.opcode in WINDOWED else None
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
    return frozenset(op.index for op in stream.operators) | ({-1} if stream.source else frozenset())


def chain_shift(graph: Graph, stream: Stream) -> int | None:
    """D of the fused operator's output against its first operator's data input: output row r is
    written once the first operator has computed every row of its output that row needs (rows
    below hi_1(r), composed down the chain) and before it reads the input rows of row hi_1(r)."""
    windows = [row_window(graph, op) for op in stream.operators]
    if stream.source or any(w is None for w in windows):
        return None  # an input streamed from the application shares no bytes with the output
    x, y = graph.tensors[stream.producer.inputs[0]], graph.tensors[stream.consumer.outputs[0]]
    if len(x.shape) != 4 or len(y.shape) != 4:
        return None
    in_h, out_h = int(x.shape[1]), int(y.shape[1])
    in_row, out_row = x.nbytes // in_h, y.nbytes // out_h
    heights = [int(graph.tensors[t].shape[1]) for t in stream.tensors]
    best = None
    for r in range(out_h):
        need = r + 1  # rows below `need` of the next tensor up must be there
        for k in range(len(stream.tensors) - 1, -1, -1):
            w = windows[k + 1]
            assert w is not None
            need = min(heights[k], (need - 1) * w.stride - w.pad_top + w.span)
        first = windows[0]
        assert first is not None
        low = (
            x.nbytes
            if need >= heights[0]
            else min(max(need * first.stride - first.pad_top, 0), in_h - 1) * in_row
        )
        shift = low - (r + 1) * out_row
        best = shift if best is None else min(best, shift)
    return best


def local_bytes(graph: Graph, stream: Stream) -> int:
    """The fused step's own bytes: the chain's outer inputs and output, its windows, less the most
    its output can share with the first operator's input (a rough score for choosing chains)."""
    tensors = set(stream.tensors)
    outer = {
        u for op in stream.operators for u in op.input_tensors if graph.tensors[u].is_activation
    } - tensors
    in_bytes = sum(graph.tensors[u].nbytes for u in outer)
    x, y = graph.tensors[stream.producer.inputs[0]].nbytes, graph.tensors[stream.consumer.outputs[0]].nbytes
    shift = chain_shift(graph, stream)
    shared = 0 if shift is None else max(0, min(x, y, y + shift))  # None with `source`: nothing shared
    return in_bytes + stream.window_bytes + y - shared


def choose(graph: Graph, found: Sequence[Stream], chosen: Sequence[Stream], peak: set[int]) -> list[Stream]:
    """`chosen` plus, for the operators at the peak, the chains with the fewest own bytes that
    touch them; a new chain replaces the chosen ones it contains and must not cut into others."""
    score = {members(s): local_bytes(graph, s) for s in (*found, *chosen)}  # a chain is its operators
    result = list(chosen)
    for s in sorted(
        (s for s in found if members(s) & peak), key=lambda s: (score[members(s)], s.consumer.index)
    ):
        inside = [c for c in result if members(c) <= members(s)]
        if any(members(c) & members(s) for c in result if c not in inside) or s in result:
            continue
        if inside and all(score[members(c)] <= score[members(s)] for c in inside):
            continue
        result = [c for c in result if c not in inside] + [s]
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
        return op.opcode
    head = "input rows+" if stream.source else ""
    return head + "+".join(member.opcode for member in stream.operators) + " (streamed)"


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
        names = "input rows -> " * s.source + " -> ".join(op.opcode for op in s.operators)
        shapes = ", ".join(_shape_text(graph, t) for t in s.tensors)
        detail = (
            f"{names} streamed row by row: the {shapes} tensor(s) between them ({sum(s.tensor_bytes):,} B) "
            f"are never whole, windows of {'/'.join(map(str, s.rows))} row(s) ({s.window_bytes:,} B) hold "
            "what the next operator still reads"
        )
        removed = tuple(op.index for op in s.operators[:-1])
        matches.append(Match("stream", c.index, op, removed, s.tensors, detail))
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
