"""The lowering of a streamed pair (tinysched.memory.stream): one loop over the consumer's output rows that
calls the producer's and the consumer's own kernels on row ranges (ts_kernels.h, "Streamed pairs")."""

from __future__ import annotations

from tinysched.codegen.context import KernelCall, LoweringContext
from tinysched.codegen.errors import Unsupported
from tinysched.codegen.table import lower, lowering
from tinysched.memory.stream import STREAM_OPCODE, WINDOWED, RowWindow, row_window, stream_of
from tinysched.model.graph import Operator


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


def _geometry(graph, s) -> list[RowWindow]:
    """Each operator's row window over the tensor it streams from (elementwise last: one row)."""
    windows = [row_window(graph, op) for op in s.operators]
    if any(w is None for w in windows):
        raise Unsupported("the row geometry of a streamed chain")
    return windows  # type: ignore[return-value]


def source_rows_read(graph, s) -> int:
    """How many of the input's rows from the top a chain headed by the input reads in all (the rows
    below them, which no output row reads, the generated code requests after its loop all the same:
    each row once)."""
    windows = _geometry(graph, s)
    heights = [int(graph.tensors[t].shape[1]) for t in s.tensors]
    need = int(graph.tensors[s.consumer.outputs[0]].shape[1])  # rows of the output, all of them
    for k in range(len(s.tensors) - 1, -1, -1):
        w = windows[k]  # the operator reading tensor k
        need = min(heights[k], (need - 1) * w.stride - w.pad_top + w.span)
    return need


ROWS_ERROR = "ERROR_INPUT_ROWS"  # <PREFIX>_ERROR_INPUT_ROWS: the application's read_rows failed


@lowering(STREAM_OPCODE, internal=True)
def lower_stream(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    """Stage j of the loop writes streamed tensor j (the last: the output) and reads tensor j - 1: the
    chain's operators, or with an input streamed from the application (`Stream.source`) the
    application's rows as stage 0 and the operators after it."""
    s = stream_of(op)
    if s is None:
        raise Unsupported("a fused operator that records no chain")
    scratch = op.outputs[-1]
    if len(op.outputs) < 2 or ctx.tensor(scratch).nbytes < s.window_bytes:
        raise Unsupported(f"a streamed chain needs its {s.window_bytes}-byte windows as its last output")
    graph, n = ctx.graph, len(s.tensors)
    base = ctx.offsets[scratch]
    inner = ctx.at_step({**ctx.offsets, **{t: base + s.window_offset(k) for k, t in enumerate(s.tensors)}})
    lowered = [
        lower(inner, member, call.step, f"op{op.index}_stage{k + s.source}")
        for k, member in enumerate(s.operators)
    ]
    for part in lowered:
        if part.pre or not part.kernel or not part.params_type:
            raise Unsupported(f"the {part.opcode} of a streamed chain must be one kernel call")
    operator_windows = _geometry(graph, s)
    for part, rows_of in zip(lowered, operator_windows, strict=True):
        fields = dict(part.params)
        if part.opcode in WINDOWED and (fields["pad_top"], fields["stride_h"]) != (
            str(rows_of.pad_top),
            str(rows_of.stride),
        ):
            raise Unsupported(f"the {part.opcode}'s padding differs from its row geometry")
    parts: list[KernelCall | None] = [None] * s.source + lowered  # stage j's call (None: the application)
    windows: list[RowWindow | None] = [None] * s.source + operator_windows  # stage j's rows over tensor j - 1
    y = s.consumer.outputs[0]
    heights = [int(graph.tensors[t].shape[1]) for t in s.tensors]
    out_h = int(graph.tensors[y].shape[1])
    out_row = graph.tensors[y].nbytes // out_h
    fail = f"return {call.step + 1};"
    whole = [f"{ctx.prefix}_{part.symbol}" if part is not None else "" for part in parts]

    def kernel_call(k: int, args: list[str]) -> list[str]:
        part = parts[k]
        assert part is not None
        return [f"if ({part.kernel}(&p{k}, {', '.join(args)}) != TS_OK) {{", f"    {fail}", "}"]

    def with_args(k: int, replacements: dict[int, str]) -> list[str]:
        part = parts[k]
        assert part is not None
        return _with_args(part, replacements)

    def bounds(k: int, row: str) -> list[str]:
        """lo{k}, hi{k}: the rows of tensor k that row `row` of stage k + 1 reads."""
        w = windows[k + 1]
        assert w is not None
        return [
            f"const int32_t top{k} = {row} * {w.stride} - {w.pad_top};",
            f"const int32_t lo{k} = top{k} > 0 ? top{k} : 0;",
            f"const int32_t hi{k} = top{k} + {w.span} < {heights[k]} ? top{k} + {w.span} : {heights[k]};",
        ]

    def read_rows(first: str, count: str, at: str) -> list[str]:
        return [
            f"if ({ctx.prefix}_rows_source({first}, {count}, {at}, {ctx.prefix}_rows_context) != 0) {{",
            f"    return {ctx.prefix.upper()}_{ROWS_ERROR};",
            "}",
        ]

    def ensure(k: int) -> list[str]:
        """Rows [lo{k}, hi{k}) of tensor k in its window: the lower ones dropped, the new computed."""
        rb = f"{s.row_bytes[k]}u"
        out_at = f"w{k} + (size_t)(next{k} - first{k}) * {rb}"
        lines = [f"ts_window_slide(w{k}, {rb}, {s.rows[k]}, &first{k}, &next{k}, lo{k});"]
        if k == 0 and s.source:  # the application's rows, requested in order, each once
            skips = any(w is not None and w.stride > w.span for w in windows)
            skipped = (
                [
                    "while (next0 < lo0) { /* rows no output row reads: requested all the same, then dropped */",
                    f"    const int32_t count = lo0 - next0 < {s.rows[0]} ? lo0 - next0 : {s.rows[0]};",
                    *(f"    {line}" for line in read_rows("next0", "count", "w0")),
                    "    next0 += count;",
                    "    first0 = next0;",
                    "}",
                ]
                if skips
                else []
            )
            return [
                *skipped,
                *lines,
                f"if (next0 < hi0) {{ /* rows [next0, hi0) of input t{s.tensors[0]}, from the application */",
                *(f"    {line}" for line in read_rows("next0", "hi0 - next0", out_at)),
                "    next0 = hi0;",
                "}",
            ]
        if k == 0:  # the first operator computes all new rows from its whole input in one call
            x = s.producer.inputs[0]
            in_h = int(graph.tensors[x].shape[1])
            in_row = graph.tensors[x].nbytes // in_h
            return lines + [
                f"if (next0 < hi0) {{ /* rows [next0, hi0) of t{s.tensors[0]} */",
                f"    rows = TS_ROWS(p0, {whole[0]}, input, 0, {in_h}, {in_row}u, next0, hi0 - next0);",
                *(f"    {line}" for line in kernel_call(0, with_args(0, {0: "rows", -1: out_at}))),
                "    next0 = hi0;",
                "}",
            ]
        below = f"next{k - 1} - first{k - 1}"
        return lines + [
            f"for (; next{k} < hi{k}; ++next{k}) {{ /* row next{k} of t{s.tensors[k]} */",
            *(f"    {line}" for line in bounds(k - 1, f"next{k}")),
            *(f"    {line}" for line in ensure(k - 1)),
            f"    rows = TS_ROWS(p{k}, {whole[k]}, w{k - 1}, first{k - 1}, {below}, {s.row_bytes[k - 1]}u, next{k}, 1);",
            *(f"    {line}" for line in kernel_call(k, with_args(k, {0: "rows", -1: out_at}))),
            "}",
        ]

    last = n
    out_at = f"output + (size_t)row * {out_row}u"
    if s.consumer.opcode in WINDOWED:
        below = f"next{n - 1} - first{n - 1}"
        consume = [
            f"rows = TS_ROWS(p{last}, {whole[last]}, w{n - 1}, first{n - 1}, {below}, {s.row_bytes[-1]}u, row, 1);",
            *kernel_call(last, with_args(last, {0: "rows", -1: out_at})),
        ]
        setup = []
    else:  # ADD / SUB / MUL on equal shapes: row `row` of each operand
        other = s.consumer.inputs[1 - s.position]
        other_at = f"{inner.ptr(other)} + (size_t)row * {s.row_bytes[-1]}u"
        consume = kernel_call(
            last, with_args(last, {s.position: f"w{n - 1}", 1 - s.position: other_at, -1: out_at})
        )
        setup = [f"p{last}.shape.dims[3] = 1; /* one row of [1, H, W, C] per call */"]
    tail = []
    if s.source and (read := source_rows_read(graph, s)) < heights[0]:
        tail = [
            f"while (next0 < {heights[0]}) {{ /* rows {read} to {heights[0] - 1}, which no output row reads: requested all the same */",
            f"    const int32_t count = {heights[0]} - next0 < {s.rows[0]} ? {heights[0]} - next0 : {s.rows[0]};",
            *(f"    {line}" for line in read_rows("next0", "count", "w0")),
            "    next0 += count;",
            "}",
        ]
    body = [
        *(f"{part.params_type} p{k} = {whole[k]};" for k, part in enumerate(parts) if part is not None),
        *(
            f"int8_t *const w{k} = (int8_t *)({ctx.place(base + s.window_offset(k))}); /* rows "
            f"[first{k}, next{k}) of t{t}, at most {s.rows[k]} of {s.row_bytes[k]} B */"
            for k, t in enumerate(s.tensors)
        ),
        *([] if s.source else [f"const int8_t *const input = {inner.ptr(s.producer.inputs[0])};"]),
        f"int8_t *const output = {inner.ptr(y, const=False)};",
        "const int8_t *rows;",
        f"int32_t {', '.join(f'first{k} = 0, next{k} = 0' for k in range(n))}, row;",
        *setup,
        f"for (row = 0; row < {out_h}; ++row) {{",
        *(f"    {line}" for line in bounds(n - 1, "row")),
        *(f"    {line}" for line in ensure(n - 1)),
        *(f"    {line}" for line in consume),
        "}",
        *tail,
    ]
    call.pre = ["{", *(f"    {line}" for line in body), "}"]
    call.parts = lowered
    names = "input rows -> " * s.source + " -> ".join(member.opcode for member in s.operators)
    tensors = ", ".join(f"t{t} {list(graph.tensors[t].shape)}" for t in s.tensors)
    whose = " (the input, its rows from the application's read_rows)" if s.source else ""
    call.comment.append(
        f"streamed chain: {names} row by row; {tensors}{whose} ({sum(s.tensor_bytes)} B) never whole: windows "
        f"of {'/'.join(map(str, s.rows))} row(s) ({s.window_bytes} B) at t{scratch} hold the rows the next "
        "operator still reads (ts_kernels.h)"
    )
