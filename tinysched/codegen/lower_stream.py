"""The lowering of a streamed pair (tinysched.stream): one loop over the consumer's output rows that
calls the producer's and the consumer's own kernels on row ranges (ts_kernels.h, "Streamed pairs")."""

from __future__ import annotations

from tinysched.codegen.context import KernelCall, LoweringContext
from tinysched.codegen.errors import Unsupported
from tinysched.codegen.table import lower, lowering
from tinysched.graph import Operator
from tinysched.stream import STREAM_OPCODE, WINDOWED, RowWindow, row_window, stream_of


def _with_args(call: KernelCall, replacements: dict[int, str]) -> list[str]:
    """`call.args` with the arguments at the given positions (negative: from the end) replaced. The
    windowed lowerings pass (input, [filter, bias,] output), the elementwise ones (a, b, output)."""
    expected = {"CONV_2D": 4, "DEPTHWISE_CONV_2D": 4, "AVERAGE_POOL_2D": 2, "MAX_POOL_2D": 2}.get(
        call.opcode, 3
    )
    if len(call.args) != expected:
        raise Unsupported(f"the {call.opcode} call of a streamed pair takes {len(call.args)} arguments")
    args = list(call.args)
    for position, text in replacements.items():
        args[position] = text
    return args


@lowering(STREAM_OPCODE, internal=True)
def lower_stream(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    s = stream_of(op)
    if s is None:
        raise Unsupported("a fused operator that records no producer/consumer pair")
    window = op.outputs[-1]
    if len(op.outputs) < 2 or ctx.tensor(window).nbytes < s.window_bytes:
        raise Unsupported(f"a streamed pair needs its {s.window_bytes}-byte window as its last output")
    graph = ctx.graph
    inner = ctx.at_step({**ctx.offsets, s.tensor: ctx.offsets[window]})
    producer = lower(inner, s.producer, call.step, f"op{op.index}_producer")
    consumer = lower(inner, s.consumer, call.step, f"op{op.index}_consumer")
    for part in (producer, consumer):
        if part.pre or not part.kernel or not part.params_type:
            raise Unsupported(f"the {part.opcode} of a streamed pair must be one kernel call")
    produce = row_window(graph, s.producer)
    consume = row_window(graph, s.consumer) if s.consumer.opcode in WINDOWED else RowWindow(1, 1, 0)
    if produce is None or consume is None:
        raise Unsupported("the row geometry of a streamed pair")
    for part, window_rows in ((producer, produce), (consumer, consume)):
        fields = dict(part.params)
        if part.opcode in WINDOWED and (fields["pad_top"], fields["stride_h"]) != (
            str(window_rows.pad_top),
            str(window_rows.stride),
        ):
            raise Unsupported(f"the {part.opcode}'s padding differs from its row geometry")
    x, t, y = s.producer.inputs[0], s.tensor, s.consumer.outputs[0]
    in_h, mid_h, out_h = (int(graph.tensors[u].shape[1]) for u in (x, t, y))
    in_row, out_row = graph.tensors[x].nbytes // in_h, graph.tensors[y].nbytes // out_h
    rb = f"{s.row_bytes}u"
    produce_args = _with_args(producer, {0: "rows", -1: f"window + (size_t)(next - first) * {rb}"})
    out_at = f"output + (size_t)row * {out_row}u"
    if s.consumer.opcode in WINDOWED:
        consume_rows = [
            f"rows = TS_ROWS(consumer, {ctx.prefix}_{consumer.symbol}, window, first, next - first, {rb}, row, 1);"
        ]
        consume_args = _with_args(consumer, {0: "rows", -1: out_at})
        setup = []
    else:  # ADD / SUB / MUL on equal shapes: row `row` of each operand
        other = s.consumer.inputs[1 - s.position]
        consume_rows = []
        consume_args = _with_args(
            consumer,
            {s.position: "window", 1 - s.position: f"{inner.ptr(other)} + (size_t)row * {rb}", -1: out_at},
        )
        setup = ["consumer.shape.dims[3] = 1; /* one row of [1, H, W, C] per call */"]
    fail = f"return {call.step + 1};"
    body = [
        f"{producer.params_type} producer = {ctx.prefix}_{producer.symbol};",
        f"{consumer.params_type} consumer = {ctx.prefix}_{consumer.symbol};",
        f"int8_t *const window = {inner.ptr(t, const=False)}; /* rows [first, next) of t{t}, "
        f"at most {s.rows} of {s.row_bytes} B */",
        f"const int8_t *const input = {inner.ptr(x)};",
        f"int8_t *const output = {inner.ptr(y, const=False)};",
        "const int8_t *rows;",
        "int32_t first = 0, next = 0, row;",
        *setup,
        f"for (row = 0; row < {out_h}; ++row) {{",
        f"    const int32_t top = row * {consume.stride} - {consume.pad_top}; /* first row of t{t} it reads */",
        "    const int32_t lo = top > 0 ? top : 0;",
        f"    const int32_t hi = top + {consume.span} < {mid_h} ? top + {consume.span} : {mid_h};",
        f"    ts_window_slide(window, {rb}, &first, &next, lo);",
        "    if (next < hi) { /* the producer's rows [next, hi) */",
        f"        rows = TS_ROWS(producer, {ctx.prefix}_{producer.symbol}, input, 0, {in_h}, {in_row}u, next, hi - next);",
        f"        if ({producer.kernel}(&producer, {', '.join(produce_args)}) != TS_OK) {{",
        f"            {fail}",
        "        }",
        "        next = hi;",
        "    }",
        *(f"    {line}" for line in consume_rows),
        f"    if ({consumer.kernel}(&consumer, {', '.join(consume_args)}) != TS_OK) {{",
        f"        {fail}",
        "    }",
        "}",
    ]
    call.pre = ["{", *(f"    {line}" for line in body), "}"]
    call.parts = [producer, consumer]
    call.comment.append(
        f"streamed pair: {s.producer.opcode} -> {s.consumer.opcode} row by row; t{t} "
        f"{list(graph.tensors[t].shape)} ({s.tensor_bytes} B) is never whole: a window of {s.rows} row(s) "
        f"({s.window_bytes} B) at t{window} holds the rows the {s.consumer.opcode} still reads (ts_kernels.h)"
    )
