"""The lowering of a streamed pair (tinysched.memory.stream): one loop over the consumer's output rows that
calls the producer's and the consumer's own kernels on row ranges (ts_kernels.h, "Streamed pairs")."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tinysched.arena.scratch import STREAM_STRIP_OPTION, WIDE_BLOCK_PIXELS, member_strip, stage_member_wide
from tinysched.codegen.context import KernelCall, LoweringContext
from tinysched.codegen.errors import Unsupported
from tinysched.codegen.lower_conv import (
    mve_dw_eff_table,
    mve_layer_table,
    pixel_path,
    pixel_table,
    pixel_widened_table,
    rq_table,
    staged_pointwise_table,
)
from tinysched.codegen.table import lower, lowering
from tinysched.memory.expand import EXPAND_OPCODE, opcode_text
from tinysched.memory.stream import (
    ROW_REDUCTIONS,
    STREAM_OPCODE,
    WINDOWED,
    RowSchedule,
    RowWindow,
    broadcast_gate,
    loop_rows,
    pixel_widened_members,
    row_arg,
    row_inputs,
    row_pad,
    row_resize,
    row_schedule,
    row_sink,
    row_window,
    staged_members,
    stream_of,
)
from tinysched.memory.variants import KernelVariant
from tinysched.model.graph import Graph, Operator


def _with_args(call: KernelCall, replacements: dict[int, str]) -> list[str]:
    """`call.args` with the arguments at the given positions (negative: from the end) replaced. The
    windowed lowerings pass (input, [filter, bias,] output), the elementwise ones (a, b, output)."""
    expected = {
        "CONV_2D": 4,
        "DEPTHWISE_CONV_2D": 4,
        "AVERAGE_POOL_2D": 2,
        "MAX_POOL_2D": 2,
        "MEAN": 2,
        "PAD": 2,
        "PADV2": 2,
        "FULLY_CONNECTED": 4,
        "RESIZE_BILINEAR": 2,
        "RESIZE_NEAREST_NEIGHBOR": 2,
        "ARG_MAX": 2,
        "ARG_MIN": 2,
    }.get(call.opcode, 3)
    if len(call.args) != expected:
        raise Unsupported(f"the {call.opcode} call of a streamed pair takes {len(call.args)} arguments")
    args = list(call.args)
    for position, text in replacements.items():
        args[position] = text
    return args


# the field of a row-by-row member's parameters that holds how many rows one call computes: the
# elementwise kernels' broadcast shape [1, 1, 1, H, W, C] (dims[3]); a row-wise MEAN's kept
# dimensions [1, 1, 1, 1, H, C] (out_dims[4]) (two-pass stages, tinysched.memory.stream.TwoPass)
ROWS_FIELD = {"MEAN": "out_dims[4]"}
ELEMENTWISE_ROWS_FIELD = "shape.dims[3]"


def _rows_field(member: Operator) -> str:
    return ROWS_FIELD.get(member.opcode, ELEMENTWISE_ROWS_FIELD)


# A row-summing sink (tinysched.memory.stream.ROW_SINKS) runs its by-rows kernel once per loop
# iteration on that iteration's input row: opcode -> (kernel, the arguments between the row's count
# and the sums, from its whole call's arguments and the row's bytes). ts_kernels.h documents each.
ROW_SINK_CALLS = {
    "AVERAGE_POOL_2D": ("ts_avg_pool2d_s8_rows", lambda args, row_len: []),
    "FULLY_CONNECTED": ("ts_fully_connected_s8_rows", lambda args, row_len: [f"{row_len}", args[1], args[2]]),
}


# A resize heading a stage (tinysched.memory.stream.row_resize) computes the rows its window lacks with
# its kernel's row-range entry: whole kernel -> (params, input, row, count, output) (ts_kernels.h)
RESIZE_ROWS_CALLS = {
    "ts_resize_bilinear_s8": "ts_resize_bilinear_s8_rows",
    "ts_resize_bilinear_float_s8": "ts_resize_bilinear_float_s8_rows",
    "ts_resize_nearest": "ts_resize_nearest_rows",
}


def _geometry(graph, s) -> list[RowWindow]:
    """Each operator's row window over the tensors it reads by rows (elementwise: one row)."""
    windows = [row_window(graph, op) for op in s.operators]
    if any(w is None for w in windows):
        raise Unsupported("the row geometry of a streamed chain")
    return windows  # type: ignore[return-value]


def _schedule(graph, s) -> RowSchedule:
    sched = row_schedule(graph, s.operators, s.source)
    if sched is None or sched.rows != s.rows:
        raise Unsupported("a streamed stage whose windows are not its loop's")
    return sched


def source_rows_read(graph, s) -> int:
    """How many of the input's rows from the top a chain headed by the input reads in all (the rows
    below them, which no output row reads, the generated code requests after its loop all the same:
    each row once)."""
    return _schedule(graph, s).ends[0]


def output_room(graph: Graph, s, offsets, sched: RowSchedule) -> list[tuple[int, int]]:
    """Per output row r of a stage: (offset from the output's start, bytes) of the largest
    word-aligned part of the stage's own output that iteration r may use as strip scratch (ts_kernels.h,
    "Streamed stages": the rows after r, not written yet, less every outer input's rows from the
    lowest any iteration from r on reads; an outer input overlaps the output only where it dies
    there, and no other tensor live at the step does)."""
    y = s.consumer.outputs[0]
    base, total = offsets[y], graph.tensors[y].nbytes
    out_rows = int(graph.tensors[y].shape[1])
    per_row = total // out_rows
    later = dict(sched.later)
    room = []
    for r in range(out_rows):
        busy = []
        for u, lows in later.items():
            rows = int(graph.tensors[u].shape[1])
            live = 0 if r == 0 else lows[r - 1]
            at = offsets[u] + live * (graph.tensors[u].nbytes // rows)
            busy.append((at, offsets[u] + graph.tensors[u].nbytes))
        best, at = (0, 0), base + (r + 1) * per_row
        for lo, hi in sorted(busy) + [(base + total, base + total)]:
            start = -(-at // 4) * 4
            end = min(lo, base + total)
            if end - start > best[1]:
                best = (start - base, end - start)
            at = max(at, hi)
        room.append(best)
    return room


def unread_room(s, sched: RowSchedule, base: int, j: int, readers: list[list[int]]) -> list[tuple[int, int]]:
    """Per output row r of a stage: (arena offset, bytes) of the largest word-aligned run of windows
    (at `base`) whose tensors no member reads once member j is called in iteration r
    (`RowSchedule.unread_from`, `readers`: per streamed tensor, its readers' member indices): their
    readers have made their last calls, so nothing slides, fills or reads those windows again."""
    unread = [sched.unread_from(j, readers[k]) for k in range(len(s.tensors))]
    room = []
    for r in range(len(sched.first_calls[j])):
        best, run = (0, 0), None
        for k in range(len(s.tensors)):
            lo, hi = base + s.window_offset(k), base + s.window_offset(k + 1)
            if unread[k] > r or hi == lo:
                run = None
                continue
            run = (run[0], hi) if run is not None else (lo, hi)
            start = -(-run[0] // 4) * 4
            if run[1] - start > best[1]:
                best = (start, run[1] - start)
        room.append(best)
    return room


def consumed_room(
    graph: Graph, s, base: int, j: int, windows: list[RowWindow], readers: list[list[int]]
) -> tuple[int, int]:
    """(arena offset, bytes) of the largest word-aligned run of window rows that hold nothing any
    call reads again whenever member j is called (0 bytes: none), in a chain without a source or
    column tiles: tensor k (k < j - 1) read by member k + 1 alone, whose window after that
    member's call q holds rows [top(q), end(q)) from its slot 0 (`ts_window_slide` moved row top(q)
    there; only the ensures before a call of k + 1 slide or fill it, and member j, downstream, is
    called only after them): its first top(q + 1) - top(q) slots (every row, after the last call)
    are never read again and stay so until member k + 1's next ensure, after member j returns."""
    if s.source or s.tiles is not None:
        return (0, 0)
    spans = []
    for k in range(max(j - 1, 0)):
        w = windows[k + 1]
        if readers[k] != [k + 1] or w.bounds:
            continue
        height = int(graph.tensors[s.tensors[k]].shape[1])
        calls = int(graph.tensors[s.operators[k + 1].outputs[0]].shape[1])
        dead = min(
            (w.end(q, height) if q + 1 == calls else min(w.top(q + 1), w.end(q, height))) - w.top(q)
            for q in range(calls)
        )
        lo = base + s.window_offset(k)
        if dead > 0:
            spans.append((lo, lo + min(dead, s.rows[k]) * s.row_bytes[k]))
    best, run = (0, 0), None
    for lo, hi in spans:  # ascending, windows end to end: a run goes on past a whole window only
        run = (run[0], hi) if run is not None and run[1] == lo else (lo, hi)
        start = -(-run[0] // 4) * 4
        if run[1] - start > best[1]:
            best = (start, run[1] - start)
    return best


# a member's kernel -> the kernel its rows call with the checks made once before the stage's loop,
# and the function that makes them (ts_kernels.h: the `_checked` kernels, ts_conv2d_s8_strip)
CHECKED_KERNELS = {
    "ts_conv2d_s8": ("ts_conv2d_s8_checked", "ts_conv2d_s8_checks"),
    "ts_conv2d_s8_strip": ("ts_conv2d_s8_strip", "ts_conv2d_s8_checks"),
    "ts_conv2d_s8_strip_lone": ("ts_conv2d_s8_strip_lone", "ts_conv2d_s8_checks"),
    "ts_conv2d_s8_pixel_widened": ("ts_conv2d_s8_pixel_widened", "ts_conv2d_s8_checks"),
    "ts_conv2d_s8_pixels": ("ts_conv2d_s8_pixels_checked", "ts_conv2d_s8_checks"),
    "ts_conv2d_s8_pixel_rows": ("ts_conv2d_s8_pixel_rows_checked", "ts_conv2d_s8_checks"),
    "ts_conv2d_s8_pixels_own": ("ts_conv2d_s8_pixels_own_checked", "ts_conv2d_s8_checks"),
    "ts_depthwise_conv2d_s8": ("ts_depthwise_conv2d_s8_checked", "ts_depthwise_conv2d_s8_checks"),
}

ROWS_ERROR = "ERROR_INPUT_ROWS"  # <PREFIX>_ERROR_INPUT_ROWS: the application's read_rows failed


def _call_arrays(part: KernelCall) -> dict[str, Any]:
    """A member call's arrays by their names' last word (multiplier, shift)."""
    return {a.name.rsplit("_", 1)[-1]: a.values for a in part.local_arrays}


def _member_rq(
    ctx: LoweringContext, part: KernelCall, member: Operator, arrays: dict[str, Any], zp: int
) -> str | None:
    """The member's ts_rq fields (`rq_table`) as an array of its call; None where rq_table refuses."""
    table = rq_table(ctx.graph, member, arrays["multiplier"], arrays["shift"], zp)
    if table is None:
        return None
    return ctx.array(part, "rq", "int32_t", table, "ts_rq fields per output channel: m, left + 1, base, rr")


@lowering(STREAM_OPCODE, internal=True)
def lower_stream(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    """Stage j of the loop writes streamed tensor j (the last: the output): the stage's operators in
    order, or with an input streamed from the application (`Stream.source`) the application's rows
    as stage 0 and the operators after it. Each output row ensures the rows its sink reads of each
    streamed operand (`ensure`, recursively up the stage), then computes that row; the loop is
    `stream.row_schedule`'s twin, which sized the windows."""
    s = stream_of(op)
    if s is None:
        raise Unsupported("a fused operator that records no chain")
    scratch = op.outputs[1] if len(op.outputs) > 1 else -1  # the windows (then a stage's strip, if any)
    strip_bytes = int(op.options.get(STREAM_STRIP_OPTION, 0))
    if strip_bytes and (len(op.outputs) < 3 or ctx.tensor(op.outputs[-1]).nbytes < strip_bytes):
        raise Unsupported(f"a streamed stage needs its {strip_bytes}-byte strip as its last output")
    if len(op.outputs) < 2 or ctx.tensor(scratch).nbytes < s.window_bytes:
        raise Unsupported(f"a streamed chain needs its {s.window_bytes}-byte windows as its last output")
    graph, n = ctx.graph, len(s.tensors)
    sched = _schedule(graph, s)
    base = ctx.offsets[scratch]
    inner = replace(
        ctx.at_step({**ctx.offsets, **{t: base + s.window_offset(k) for k, t in enumerate(s.tensors)}}),
        whole_layers=False,
    )
    lowered = [
        lower(inner, member, call.step, f"op{op.index}_stage{k + s.source}")
        for k, member in enumerate(s.operators)
    ]
    for part in lowered:
        if part.pre or not part.kernel or not part.params_type:
            raise Unsupported(f"the {part.opcode} of a streamed chain must be one kernel call")
    operator_windows = _geometry(graph, s)
    for part, rows_of, member in zip(lowered, operator_windows, s.operators, strict=True):
        fields = dict(part.params)
        if row_sink(graph, member):  # the sink adds each input row to its sums (ROW_SINK_CALLS)
            part.kernel = ROW_SINK_CALLS[member.opcode][0]
        elif row_resize(graph, member) is not None:  # a head: rows [row, row + count) of the whole
            if part.kernel not in RESIZE_ROWS_CALLS or any(u in s.tensors for u in row_inputs(graph, member)):
                raise Unsupported(f"the {part.opcode} of a streamed stage must read its input whole")
            part.kernel = RESIZE_ROWS_CALLS[part.kernel]
        elif part.opcode in WINDOWED and (fields["pad_top"], fields["stride_h"]) != (
            str(rows_of.pad_top),
            str(rows_of.stride),
        ):
            raise Unsupported(f"the {part.opcode}'s padding differs from its row geometry")
    parts: list[KernelCall | None] = [None] * s.source + lowered  # stage j's call (None: the application)
    # CONV_2D members take the widened path with a strip in the part of the stage's output that
    # iteration `row` leaves free (`output_room`), where one block fits in some iteration
    y = s.consumer.outputs[0]
    iterations = loop_rows(graph, s.consumer)  # the loop's rows: the sink's output's (a row sink: input's)
    # (column tiles: each tile writes every output row, so no part of the output is free; a member
    # takes the planned strip, or the windows this tile no longer reads, which the next tile fills
    # again before reading them)
    tiled = s.tiles is not None
    room = (
        output_room(graph, s, ctx.offsets, sched)
        if ctx.offsets[y] % 4 == 0 and not s.sums and not tiled
        else []
    )
    if tiled and ctx.offsets[y] % 4 == 0:
        room = [(0, 0)] * iterations
    if strip_bytes and ctx.offsets[op.outputs[-1]] % 4 == 0:  # the planned strip where it is more
        at = ctx.offsets[op.outputs[-1]] - ctx.offsets[y]
        room = [(at, strip_bytes) if strip_bytes > b else (a, b) for a, b in room] or [
            (at, strip_bytes)
        ] * iterations
    # 1x1 members the pixel path takes (ts_conv2d_s8_pixels with the generator's pixel table): their
    # rows pixel by pixel, each pixel held in registers for all of its channels, no strip needed
    # (not the narrow members: ts_conv2d_s8_staged_checked below, whose scratch the plan holds)
    pixel_tables: dict[int, list[str]] = {}  # stage j -> its pixel table (and own loop) arguments
    narrow = {k + s.source for k in staged_members(graph, s)}
    for j, part in enumerate(parts):
        member = None if part is None else s.operators[j - s.source]
        if (
            part is None
            or member is None
            or part.kernel != "ts_conv2d_s8"
            or not ctx.dsp_tables
            or j in narrow
        ):
            continue
        fields = dict(part.params)
        arrays = _call_arrays(part)
        act = (int(fields["act_min"]), int(fields["act_max"]))
        table = pixel_table(
            graph, member, arrays["multiplier"], arrays["shift"], int(fields["output_offset"]), act
        )
        if table is None:
            continue
        pixel_tables[j] = pixel_path(ctx, part, member, table)
    wide: dict[int, str] = {}  # stage j -> its ts_rq table (the member runs ts_conv2d_s8_strip)
    member_readers = [  # per streamed tensor: the members (indices in s.operators) that read it by rows
        [i for i, m in enumerate(s.operators) if t in row_inputs(graph, m)] for t in s.tensors
    ]
    rooms: dict[int, list[tuple[int, int]]] = {}  # stage j -> its own room per row, where it has more
    for j, part in enumerate(parts):
        member = None if part is None else s.operators[j - s.source]
        if part is None or member is None or part.kernel != "ts_conv2d_s8" or not room:
            continue
        if not stage_member_wide(graph, member):
            continue
        # late rows: the windows of tensors no member reads any more once j is called, where more
        dead = unread_room(s, sched, base, j - s.source, member_readers)
        at_call = consumed_room(graph, s, base, j - s.source, operator_windows, member_readers)
        dead = [max(d, at_call, key=lambda a: a[1]) for d in dead]
        own = [
            (at - ctx.offsets[y], n) if n > b else (a, b) for (a, b), (at, n) in zip(room, dead, strict=True)
        ]
        if not member_strip(graph, member, max(b for _, b in own)):
            continue
        if own != room:
            rooms[j] = own
        arrays = _call_arrays(part)
        zp = int(dict(part.params)["output_offset"])
        if (name := _member_rq(ctx, part, member, arrays, zp)) is None:
            continue
        # rows of 6 a + 1 pixels: the last pixel alone, not a block of six (ts_conv2d_s8_strip_lone)
        out_w = int(graph.tensors[member.outputs[0]].shape[2])
        in_c = int(graph.tensors[member.inputs[0]].shape[3])
        lone = out_w % WIDE_BLOCK_PIXELS == 1 and out_w > WIDE_BLOCK_PIXELS and in_c % 4 == 0
        part.kernel = "ts_conv2d_s8_strip_lone" if lone else "ts_conv2d_s8_strip"
        wide[j] = name
    member_rooms: dict[int, tuple[str, str]] = {}  # stage j -> its own room tables
    for j in wide:
        if j in rooms:
            part = parts[j]
            assert part is not None
            at = [a for a, _ in rooms[j]]
            size = [b for _, b in rooms[j]]
            member_rooms[j] = (
                ctx.array(
                    part, "strip_at", "int32_t", at, "its strip scratch per output row: where from the output"
                ),
                ctx.array(
                    part, "strip_bytes", "int32_t", size, "its strip scratch per output row: its bytes"
                ),
            )
    shared = any(j not in member_rooms for j in wide)  # a member takes the stage's room (`strip`, `room`)
    if shared:
        sink = lowered[-1]
        room_at = ctx.array(
            sink,
            "room_at",
            "int32_t",
            [a for a, _ in room],
            "strip scratch per output row: where in the output",
        )
        room_bytes = ctx.array(
            sink, "room_bytes", "int32_t", [b for _, b in room], "strip scratch per output row: its bytes"
        )
    # narrow 1x1 members (rows of 2, 3 or 5 pixels): ts_conv2d_s8_staged on their one row, its
    # widened threes in the stage's scratch after the windows (and sums)
    staged: dict[int, str] = {}  # stage j -> the arguments after the output
    staged_checks: list[str] = []  # their per-call checks, made once before the loop
    for k in staged_members(graph, s):
        j, member = k + s.source, s.operators[k]
        part = parts[j]
        if part is None or j in wide or part.kernel != "ts_conv2d_s8":
            continue
        out_c = int(graph.tensors[member.outputs[0]].shape[3])
        variant = KernelVariant("CONV_2D", "staged", s.staged // out_c, s.staged, out_c)
        arrays = _call_arrays(part)
        zp = int(dict(part.params)["output_offset"])
        mults, shifts = arrays["multiplier"], arrays["shift"]
        quads = staged_pointwise_table(graph, member, variant, mults, shifts, zp) if ctx.dsp_tables else None
        if quads is not None and "quads" not in dict(part.params):
            comment = f"per output channel: its bias, {len(quads) // out_c - 5} widened filter words, its ts_rq fields"
            part.params.append(("quads", ctx.array(part, "quads", "int32_t", quads, comment)))
        table = rq_table(graph, member, mults, shifts, zp)
        rq = (
            "NULL"
            if table is None
            else ctx.array(part, "rq", "int32_t", table, "ts_rq fields per output channel")
        )
        part.kernel = "ts_conv2d_s8_staged_checked"
        # its one row a call: in_h = out_h = 1 in its constant parameters, passed as they are
        part.params[:] = [(field, "1" if field in ("in_h", "out_h") else v) for field, v in part.params]
        staged[j] = f"staged, {variant.param}, {rq}, staged_checks{j}"
        offset = int(dict(part.params)["input_offset"])
        layer = None if ctx.dsp_tables else mve_layer_table(graph, member, mults, shifts, offset)
        if layer is not None:  # a Helium core: the layer table its calls would not make for a row
            comment = "per output channel: bias + input_offset * sum(w), multiplier, shift (Helium)"
            part.kernel = "ts_conv2d_s8_staged_layer"
            staged[j] += ", " + ctx.array(part, "layer", "int32_t", layer, comment)
        staged_checks.append(
            f"const int32_t staged_checks{j} = ts_conv2d_s8_staged_checks(&{ctx.prefix}_{part.symbol}, BIAS, {rq});"
        )
    # 1x1 members on rows one pixel wide (DSP cores): ts_conv2d_s8_pixel_widened with the ts_rq table,
    # each row's pixel widened once on the stack (no scratch: the plan is unchanged)
    widened: dict[int, str] = {}  # stage j -> its ts_rq table
    for k in pixel_widened_members(graph, s):
        j, member = k + s.source, s.operators[k]
        part = parts[j]
        if part is None or not ctx.dsp_tables or j in wide or j in staged or j in pixel_tables:
            continue
        if part.kernel != "ts_conv2d_s8":
            continue
        arrays = _call_arrays(part)
        zp = int(dict(part.params)["output_offset"])
        if (name := _member_rq(ctx, part, member, arrays, zp)) is None:
            continue
        lanes = pixel_widened_table(graph, member, arrays["multiplier"], arrays["shift"], zp)
        channels = (
            "NULL"
            if lanes is None
            else ctx.array(
                part,
                "channels",
                "int32_t",
                lanes,
                "per output channel: its bias, its filter widened to int16 lanes, its ts_rq fields",
            )
        )
        part.kernel = "ts_conv2d_s8_pixel_widened"
        widened[j] = f"{name}, {channels}"
    # the other CONV_2D and the DEPTHWISE_CONV_2D members: their kernel's per-call checks made once,
    # before the loop (CHECKED_KERNELS)
    checked: dict[int, str] = {}  # stage j -> the function making its checks
    for j, part in enumerate(parts):
        if part is not None and part.kernel in CHECKED_KERNELS:
            part.kernel, checked[j] = CHECKED_KERNELS[part.kernel]
    members: list[Operator | None] = [None] * s.source + list(s.operators)
    # on a Helium core, the depthwise members of 32 to 64 channels: the generator's whole-window
    # table (ts_mve_dw_eff_table's values), which a row call would otherwise make each time
    dw_layer: dict[int, str] = {}  # stage j -> the table's array (the depthwise, then the heads below)
    for j, part in enumerate(parts):
        member = members[j]
        if (
            ctx.dsp_tables
            or part is None
            or member is None
            or part.kernel != "ts_depthwise_conv2d_s8_checked"
        ):
            continue
        if str(dict(part.params).get("depth_multiplier")) != "1":
            continue
        eff = mve_dw_eff_table(graph, member, int(dict(part.params)["input_offset"]))
        if eff is not None:
            comment = (
                "whole-window starts: bias + input_offset * sum(w), ts_mve_dw_eff_table's order (Helium)"
            )
            part.kernel = "ts_depthwise_conv2d_s8_layer"
            dw_layer[j] = ctx.array(part, "layer", "int32_t", eff, comment)
    # on a Helium core, a CONV_2D member of small receptive field (the patch quads: in_c < 8, K <= 64
    # bytes, not 1x1, out_c <= 64; a DS-CNN's head): the generator's layer table, which a row call
    # would otherwise make each time (ts_conv2d_s8_layer)
    for j, part in enumerate(parts):
        member = members[j]
        if ctx.dsp_tables or part is None or member is None or part.kernel != "ts_conv2d_s8_checked":
            continue
        w_shape = graph.tensors[member.inputs[1]].shape
        offset = int(dict(part.params)["input_offset"])
        if len(w_shape) != 4 or int(w_shape[1]) * int(w_shape[2]) == 1 or int(w_shape[3]) >= 8:
            continue
        if int(w_shape[1]) * int(w_shape[2]) * int(w_shape[3]) > 64 or not -127 <= offset <= 128:
            continue
        arrays = _call_arrays(part)
        layer = mve_layer_table(graph, member, arrays["multiplier"], arrays["shift"], offset)
        if layer is not None:
            comment = "per output channel: bias + input_offset * sum(w), multiplier, shift (Helium)"
            part.kernel = "ts_conv2d_s8_layer"
            dw_layer[j] = ctx.array(part, "layer", "int32_t", layer, comment)
    # expansions into their depthwise (tinysched.memory.expand): their groups' rows in the staged scratch
    expansions = [m for m in s.operators if m.opcode == EXPAND_OPCODE]
    windows: list[RowWindow | None] = [None] * s.source + operator_windows  # stage j's rows
    index = {t: k for k, t in enumerate(s.tensors)}
    reads = [() if m is None else row_inputs(graph, m) for m in members]  # stage j's row operands
    readers = [[j for j in range(n + 1) if t in reads[j]] for t in s.tensors]
    heads = [m is not None and all(u not in index for u in reads[j]) for j, m in enumerate(members)]
    y = s.consumer.outputs[0]

    def height(t: int) -> int:
        return int(graph.tensors[t].shape[1])

    def row_bytes(t: int) -> int:
        return graph.tensors[t].nbytes // height(t)

    heights = [height(t) for t in s.tensors]
    out_h = iterations
    rbs = list(s.row_bytes)  # each window's row bytes: the tile's columns with column tiles (set per tile)
    fail = f"return {call.step + 1};"
    whole = [f"{ctx.prefix}_{part.symbol}" if part is not None else "" for part in parts]
    # the members whose parameters no call changes (the narrow 1x1s, a global-pool sink) take their
    # constant ones; the others a copy on the stack, its row fields set per call
    # (with column tiles every member's parameters are narrowed per tile: none fixed)
    fixed = set() if tiled else set(staged) | ({n} if s.sums else set())
    outer = [u for j in range(len(members)) for u in reads[j] if u not in index]
    names = {u: f"x{u}" for u in dict.fromkeys(outer)}
    # a squeeze-excitation gate a member's MUL reads whole (1x1x1xC), the same for every row
    gates = {g: f"g{g}" for m in members if m is not None and (g := broadcast_gate(graph, m)) is not None}

    def cur(j: int) -> str:
        return "row" if j == n else f"next{j}"

    def kernel_call(k: int, args: list[str]) -> list[str]:
        """Stage k's kernel, then the member hook (ts_model.h: counts each member on its own)."""
        part = parts[k]
        assert part is not None
        params = f"&{whole[k]}" if k in fixed else f"&p{k}"
        slot = ctx.first_member + k - s.source
        return [
            f"if ({part.kernel}({params}, {', '.join(args)}) != TS_OK) {{",
            f"    {fail}",
            "}",
            f"TS_MEMBER_DONE({call.step}u, {slot}u); /* {part.opcode} */",
        ]

    def with_args(k: int, replacements: dict[int, str]) -> list[str]:
        part = parts[k]
        assert part is not None
        return _with_args(part, replacements)

    def bounds(j: int, k: int, row: str) -> list[str]:
        """lo{k}, hi{k}: the rows of tensor k that row `row` of stage j reads."""
        w = windows[j]
        assert w is not None
        if w.bounds:
            raise Unsupported("a resize reading a streamed tensor")
        lowest = [f"const int32_t lo{k} = top{k} > 0 ? top{k} : 0;"] if len(readers[k]) == 1 else []
        return [
            f"const int32_t top{k} = {row} * {w.stride} - {w.pad_top};",
            *lowest,  # with two readers or more, the lowest row either still reads: `low`
            f"const int32_t hi{k} = top{k} + {w.span} < {heights[k]} ? top{k} + {w.span} : {heights[k]};",
        ]

    def low(k: int) -> str:
        """The lowest row of tensor k any of its readers still reads (ts_row_low: none once done)."""
        if len(readers[k]) == 1:
            return f"lo{k}"  # its one reader's, now
        terms = []
        for j in readers[k]:
            w = windows[j]
            assert w is not None
            member = members[j]
            assert member is not None
            done = height(member.outputs[0])
            terms.append(f"ts_row_low({cur(j)}, {done}, {w.stride}, {w.pad_top}, {heights[k]})")
        text = terms[0]
        for term in terms[1:]:
            text = f"ts_rows_min({text}, {term})"
        return text

    def read_rows(first: str, count: str, at: str) -> list[str]:
        return [
            f"if ({ctx.prefix}_rows_source({first}, {count}, {at}, {ctx.prefix}_rows_context) != 0) {{",
            f"    return {ctx.prefix.upper()}_{ROWS_ERROR};",
            "}",
        ]

    def operand(u: int, row: str) -> str:
        """Row `row` of tensor u: in its window, or in the whole outer input."""
        if u in index:
            k = index[u]
            return f"w{k} + (size_t)({row} - first{k}) * {rbs[k]}u"
        return f"{names[u]} + (size_t){row} * {row_bytes(u)}u"

    def compute(j: int, row: str, count: str, out_at: str) -> list[str]:
        """Stage j's kernel on its output rows [row, row + count), written at out_at."""
        member = members[j]
        assert member is not None
        top = row_pad(graph, member)
        if top is not None:  # a PAD: its output rows [row, row + count) from input rows [in_lo, in_hi)
            u = member.inputs[0]
            buf, first = (f"w{index[u]}", f"first{index[u]}") if u in index else (names[u], "0")
            h, rb = height(u), row_bytes(u)
            return [
                "{",
                f"    const int32_t in_lo = {row} - {top} > 0 ? {row} - {top} : 0;",
                f"    const int32_t in_hi = {row} + ({count}) - {top} < {h} ? {row} + ({count}) - {top} : {h};",
                f"    const int8_t *const src = in_hi > in_lo ? {buf} + (size_t)(in_lo - {first}) * {rb}u : {buf};",
                f"    p{j}.out_dims[3] = {count}; /* rows of [1, 1, 1, H, W, C] */",
                f"    p{j}.in_dims[3] = in_hi > in_lo ? in_hi - in_lo : 0;",
                f"    p{j}.pad_before[3] = in_lo - ({row} - {top});",
                *(f"    {line}" for line in kernel_call(j, with_args(j, {0: "src", -1: out_at}))),
                "}",
            ]
        if row_resize(graph, member) is not None:  # a head: its rows of the whole input, one call
            return kernel_call(j, [names[member.inputs[0]], row, count, out_at])
        if row_arg(graph, member):  # the sink: one row of its input (outer = its pixels, set before)
            return kernel_call(j, with_args(j, {0: operand(member.inputs[0], row), -1: out_at}))
        if j in staged:  # one row, in_h = out_h = 1 (set before the loop), straight from its window
            args = with_args(j, {0: operand(member.inputs[0], row), -1: out_at}) + [staged[j]]
            return kernel_call(j, args)
        if member.opcode in WINDOWED:
            u = member.inputs[0]
            if u in index:
                k = index[u]
                source = f"w{k}, first{k}, next{k} - first{k}, {rbs[k]}u"
            elif tiled:  # a 1x1 head in a tile: the tile's run of input row `row`, one row a call
                at = f"{names[u]} + (size_t){row} * {row_bytes(u)}u + {head_shift[j]}u"
                source = f"{at}, {row}, 1, {row_bytes(u)}u"
            else:
                source = f"{names[u]}, 0, {height(u)}, {row_bytes(u)}u"
            if member.opcode == EXPAND_OPCODE:  # its groups' rows in the stage's staged scratch
                args = with_args(j, {0: "rows", 1: out_at, 2: "staged"})
            else:
                args = with_args(j, {0: "rows", -1: out_at})
            if j in member_rooms:  # its own strip and bytes this iteration (ts_conv2d_s8_strip)
                at, size = member_rooms[j]
                args += [f"output + {at}[row]", f"{size}[row]", wide[j]]
            elif j in widened:  # its ts_rq and widened tables (ts_conv2d_s8_pixel_widened)
                args.append(widened[j])
            elif j in wide:  # the strip and its bytes this iteration leaves (ts_conv2d_s8_strip)
                args += ["strip", "room", wide[j]]
            elif j in pixel_tables:
                args += pixel_tables[j]
            if j in checked:
                args.append(f"checks{j}")
            if j in dw_layer:
                args.append(dw_layer[j])
            return [
                f"rows = TS_ROWS(p{j}, {whole[j]}, {source}, {row}, {count});",
                *kernel_call(j, args),
            ]
        # ADD / SUB / MUL on equal shapes (or a MUL by a gate, read whole), a row-wise MEAN: rows
        # [row, row + count) of each operand
        operands_of = member.inputs[:1] if member.opcode in ROW_REDUCTIONS else member.inputs[:2]
        args = {
            position: gates[u] if u in gates else operand(u, row) for position, u in enumerate(operands_of)
        }
        set_rows = (
            [] if count == "1" else [f"p{j}.{_rows_field(member)} = {count}; /* rows of [1, H, W, C] */"]
        )
        return set_rows + kernel_call(j, with_args(j, {**args, -1: out_at}))

    def ensure(k: int) -> list[str]:
        """Rows [lo{k}, hi{k}) of tensor k in its window: the rows no reader still needs dropped, the
        new ones computed (each operand of their stage ensured first)."""
        rb = f"{rbs[k]}u"
        out_at = f"w{k} + (size_t)(next{k} - first{k}) * {rb}"
        lines = [f"ts_window_slide(w{k}, {rb}, {s.rows[k]}, &first{k}, &next{k}, {low(k)});"]
        if k == 0 and s.source:  # the application's rows, requested in order, each once (per tile)
            skips = any(w is not None and w.stride > w.span for w in windows)
            most = 1 if tiled else s.rows[0]  # a tile's window has room for one whole row
            skipped = (
                [
                    "while (next0 < lo0) { /* rows no output row reads: requested all the same, then dropped */",
                    f"    const int32_t count = lo0 - next0 < {most} ? lo0 - next0 : {most};",
                    *(f"    {line}" for line in read_rows("next0", "count", "w0")),
                    "    next0 += count;",
                    "    first0 = next0;",
                    "}",
                ]
                if skips
                else []
            )
            if tiled:  # each row whole after the window's rows, then its tile's columns moved down
                shift = tile_source_shift[0]
                move = (
                    [f"    memmove(at, at + {shift}u, {rbs[0]}u); /* the tile's columns */"] if shift else []
                )
                return [
                    *skipped,
                    *lines,
                    f"for (; next0 < hi0; ++next0) {{ /* row next0 of input t{s.tensors[0]}, from the application */",
                    f"    int8_t *const at = {out_at};",
                    *(f"    {line}" for line in read_rows("next0", "1", "at")),
                    *move,
                    "}",
                ]
            return [
                *skipped,
                *lines,
                f"if (next0 < hi0) {{ /* rows [next0, hi0) of input t{s.tensors[0]}, from the application */",
                *(f"    {line}" for line in read_rows("next0", "hi0 - next0", out_at)),
                "    next0 = hi0;",
                "}",
            ]
        if heads[k] and not tiled:  # reading whole inputs only: all new rows in one call
            return lines + [
                f"if (next{k} < hi{k}) {{ /* rows [next{k}, hi{k}) of t{s.tensors[k]} */",
                *(f"    {line}" for line in compute(k, f"next{k}", f"hi{k} - next{k}", out_at)),
                f"    next{k} = hi{k};",
                "}",
            ]
        return lines + [
            f"for (; next{k} < hi{k}; ++next{k}) {{ /* row next{k} of t{s.tensors[k]} */",
            *(f"    {line}" for line in operands(k, f"next{k}")),
            *(f"    {line}" for line in compute(k, f"next{k}", "1", out_at)),
            "}",
        ]

    def operands(j: int, row: str) -> list[str]:
        """Each streamed operand of stage j made present for its row `row`, each in its own block."""
        lines = []
        for u in reads[j]:
            if u in index:
                k = index[u]
                block = [*bounds(j, k, row), *ensure(k)]
                lines += ["{", *(f"    {line}" for line in block), "}"]
        return lines

    out_row_bytes = graph.tensors[y].nbytes // height(y)
    out_at = f"output + (size_t)row * {out_row_bytes}u"
    tile_source_shift = [0]  # with column tiles: the bytes before the tile's columns in an input row
    head_shift: dict[int, int] = {}  # with column tiles: per 1x1 head (stage j), the same in its input
    sums = []  # a row-summing sink's int32 sums, after the windows
    if s.sums:
        sums = [
            f"int8_t *const sums = (int8_t *)({ctx.place(base + s.sums_offset)}); "
            f"/* {s.sums} int32 sums of the {s.consumer.opcode}'s input rows [0, row] */"
        ]
        u = s.consumer.inputs[0]
        extra = ROW_SINK_CALLS[s.consumer.opcode][1](with_args(n, {}), row_bytes(u))
        sink = kernel_call(n, [operand(u, "row"), "row", "1", *extra, "sums", "output"])
    else:
        sink = compute(n, "row", "1", out_at)

    def loop(c0: int) -> list[str]:
        """One tile's row loop: its sink writes each output row's columns from c0 on."""
        at = f"output + (size_t)row * {out_row_bytes}u + {c0 * out_row_bytes // int(graph.tensors[y].shape[2])}u"
        return [
            f"for (row = 0; row < {out_h}; ++row) {{",
            *(
                [
                    f"    int8_t *const strip = output + {room_at}[row]; /* the planned strip */",
                    f"    const int32_t room = {room_bytes}[row];",
                ]
                if shared
                else []
            ),
            *(f"    {line}" for line in operands(n, "row")),
            *(f"    {line}" for line in compute(n, "row", "1", at)),
            "}",
        ]

    setup = [
        f"p{j}.{_rows_field(m)} = 1; /* one row of [1, H, W, C] per call */"
        for j, m in enumerate(members)
        if m is not None
        and m.opcode not in WINDOWED
        and row_pad(graph, m) is None
        and not row_sink(graph, m)
        and not row_arg(graph, m)
        and not heads[j]
    ]
    setup += [  # an ARG_MAX sink: one row of its input per call
        f"p{j}.outer = {graph.tensors[m.inputs[0]].shape[2]}; /* one row's pixels per call */"
        for j, m in enumerate(members)
        if m is not None and row_arg(graph, m)
    ]
    tail = []
    if s.source and (read := source_rows_read(graph, s)) < heights[0]:
        most = 1 if tiled else s.rows[0]
        tail = [
            f"while (next0 < {heights[0]}) {{ /* rows {read} to {heights[0] - 1}, which no output row reads: requested all the same */",
            f"    const int32_t count = {heights[0]} - next0 < {most} ? {heights[0]} - next0 : {most};",
            *(f"    {line}" for line in read_rows("next0", "count", "w0")),
            "    next0 += count;",
            "}",
        ]
    out_ptr = inner.ptr(y, const=False)  # an ARG_MAX sink's int32 / int64 rows: by their bytes
    out_ptr = out_ptr if graph.tensors[y].dtype == "int8" else f"(int8_t *)({ctx.place(ctx.offsets[y])})"
    body = [
        *(
            f"{part.params_type} p{k} = {whole[k]};"
            for k, part in enumerate(parts)
            if part is not None and k not in fixed
        ),
        *(
            f"int8_t *const w{k} = (int8_t *)({ctx.place(base + s.window_offset(k))}); /* rows "
            f"[first{k}, next{k}) of t{t}, at most {s.rows[k]} of {s.row_bytes[k]} B */"
            for k, t in enumerate(s.tensors)
        ),
        *(f"const int8_t *const {name} = {inner.ptr(u)};" for u, name in names.items()),
        *(f"const int8_t *const {name} = {inner.ptr(u)}; /* the gate, whole */" for u, name in gates.items()),
        f"int8_t *const output = {out_ptr};",
        *sums,
        *(
            [
                f"int8_t *const staged = (int8_t *)({ctx.place(base + s.staged_offset)}); /* the 1x1 rows' threes */"
            ]
            if staged or expansions
            else []
        ),
        *(["const int8_t *rows;"] if any(m is not None and m.opcode in WINDOWED for m in members) else []),
        f"int32_t {', '.join(f'first{k} = 0, next{k} = 0' for k in range(n))}, row;",
        *(f"const int32_t checks{j} = {make}(&p{j}, {with_args(j, {})[2]});" for j, make in checked.items()),
        *(line.replace("BIAS", with_args(j, {})[2]) for j, line in zip(staged, staged_checks, strict=True)),
        *setup,
    ]
    if not tiled:
        body += [
            f"for (row = 0; row < {out_h}; ++row) {{",
            *(
                [
                    f"    int8_t *const strip = output + {room_at}[row]; /* not written yet, no input there */",
                    f"    const int32_t room = {room_bytes}[row];",
                ]
                if shared
                else []
            ),
            *(f"    {line}" for line in operands(n, "row")),
            *(f"    {line}" for line in sink),
            "}",
            *tail,
        ]
    else:
        body += _tile_loops(graph, s, parts, index, rbs, (tile_source_shift, head_shift), tail, loop)
    call.pre = ["{", *(f"    {line}" for line in body), "}"]
    call.parts = lowered
    names_text = "input rows -> " * s.source + " -> ".join(map(opcode_text, s.operators))
    tensors = ", ".join(f"t{t} {list(graph.tensors[t].shape)}" for t in s.tensors)
    whose = " (the input, its rows from the application's read_rows)" if s.source else ""
    call.comment.append(
        f"streamed chain: {names_text} row by row; {tensors}{whose} ({sum(s.tensor_bytes)} B) never whole: windows "
        f"of {'/'.join(map(str, s.rows))} row(s) ({s.window_bytes} B) at t{scratch} hold the rows the next "
        "operator still reads (ts_kernels.h)"
    )


def _tile_loops(graph, s, parts, index, rbs, shifts, tail, loop) -> list[str]:
    """A stage over column tiles (tinysched.memory.stream.ColumnTiles): per tile, each member's
    parameters narrowed to its columns (in_w, out_w: its window's and its own; pad_left: where its
    first output column's window starts in its window; a 1x1 head reading a whole input: its own
    columns, from their first byte in the row), the windows emptied, then the row loop (`loop`,
    writing the sink's columns of each output row) with each window's rows a tile's."""
    source_shift, head_shift = shifts
    tiles = s.tiles
    assert tiles is not None
    lines: list[str] = []
    for t in range(tiles.count):
        for k, (lo, hi) in enumerate(tiles.tensors[t]):
            rbs[k] = (hi - lo) * int(graph.tensors[s.tensors[k]].shape[3])
        if s.source:
            source_shift[0] = tiles.tensors[t][0][0] * int(graph.tensors[s.tensors[0]].shape[3])
        narrow = []
        for i, member in enumerate(s.operators):
            j = i + s.source
            part = parts[j]
            assert part is not None
            fields = dict(part.params)
            lo_out, hi_out = tiles.members[t][i]
            u = member.inputs[0]
            lo_in, hi_in = tiles.tensors[t][index[u]] if u in index else (lo_out, hi_out)
            if u not in index:  # a 1x1 head (stream.column_tiles)
                head_shift[j] = lo_out * int(graph.tensors[u].shape[3])
            stride = int(fields["stride_w"])
            pad = int(fields["pad_left"]) + lo_in - lo_out * stride
            narrow.append(
                f"p{j}.in_w = {hi_in - lo_in}; p{j}.out_w = {hi_out - lo_out}; p{j}.pad_left = {pad};"
            )
        c0, c1 = tiles.members[t][-1]
        reset = ", ".join(f"first{k} = 0, next{k} = 0" for k in range(len(s.tensors)))
        block = [*narrow, f"{reset};", *loop(c0), *tail]
        lines += [f"{{ /* column tile {t}: output columns [{c0}, {c1}) */", *(f"    {x}" for x in block), "}"]
    return lines
