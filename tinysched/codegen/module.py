"""Plan -> C: the generated module, its state buffer and the checks before any code is written.

`generate(graph, plan)` lowers every operator to one call of a kernel in `firmware/kernels/`
(`table.lower`), with the tensors at the plan's offsets, and renders the Jinja2 templates in
`templates/` around those calls. `docs/codegen.md` describes the generated module."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from tinysched import __version__
from tinysched.arena.placement import DEFAULT_ALIGNMENT
from tinysched.codegen.cgen import (
    C_TYPES,
    c_array_lines,
    c_comment,
    c_float,
    c_float32,
    c_identifier,
    c_string,
    check_prefix,
    float_lines,
)
from tinysched.codegen.context import ConstArray, LoweringContext
from tinysched.codegen.edges import edge_lifetimes, input_note, output_note, stream_note
from tinysched.codegen.table import lower, lowered_ops, stateful_ops, supported_ops
from tinysched.errors import TinyschedError
from tinysched.memory.expand import EXPAND_OPCODE, expansion_of
from tinysched.memory.expand import scratch_bytes as expansion_scratch
from tinysched.memory.stream import STREAM_OPCODE, operator_type, stream_of, streamed_input
from tinysched.model.graph import Graph, Operator, Tensor
from tinysched.model.uint8 import uint8_refusal
from tinysched.text import quoted

# Kernel functions that live in another function's file (variants sharing one implementation);
# every other kernel `ts_x` is in `firmware/kernels/ts_x.c`.
KERNEL_SOURCE = {
    "ts_conv2d_filter_offset_s8": "ts_legacy_uint8",
    "ts_depthwise_conv2d_filter_offset_s8": "ts_legacy_uint8",
    "ts_avg_pool2d_half_up_s8": "ts_legacy_uint8",
    "ts_resize_bilinear_float_s8_rows": "ts_resize_bilinear_float_s8",
    "ts_softmax_s8_s16": "ts_softmax_s8",
    "ts_conv2d_s8_staged": "ts_conv2d_s8",
    "ts_conv2d_s8_wide": "ts_conv2d_s8",
    "ts_conv2d_s8_pixels": "ts_conv2d_s8",
    "ts_conv2d_s8_pixels_checked": "ts_conv2d_s8",
    "ts_conv2d_s8_pixel_rows": "ts_conv2d_s8",
    "ts_conv2d_s8_pixel_rows_checked": "ts_conv2d_s8",
    "ts_conv2d_s8_pixels_own": "ts_conv2d_s8",
    "ts_conv2d_s8_pixels_own_checked": "ts_conv2d_s8",
    "ts_conv2d_s8_checked": "ts_conv2d_s8",
    "ts_conv2d_s8_wide_checked": "ts_conv2d_s8",
    "ts_conv2d_s8_strip": "ts_conv2d_s8",
    "ts_conv2d_s8_strip_lone": "ts_conv2d_s8",
    "ts_conv2d_s8_pixel_widened": "ts_conv2d_s8",
    "ts_conv2d_s8_layer": "ts_conv2d_s8",
    "ts_depthwise_conv2d_s8_staged": "ts_depthwise_conv2d_s8",
    "ts_depthwise_conv2d_s8_checked": "ts_depthwise_conv2d_s8",
    "ts_depthwise_conv2d_s8_layer": "ts_depthwise_conv2d_s8",
    "ts_avg_pool2d_s8_rows": "ts_avg_pool2d_s8",
    "ts_fully_connected_s8_rows": "ts_fully_connected_s8",
    "ts_conv2d_s8_staged_checked": "ts_conv2d_s8",
    "ts_conv2d_s8_staged_layer": "ts_conv2d_s8",
    "ts_resize_bilinear_s8_rows": "ts_resize_bilinear_s8",
    "ts_resize_nearest_rows": "ts_resize_nearest",
}

# Kernel files whose functions call another file's (linked with it): the legacy uint8 convolutions
# run int8 paths on their tables on DSP cores (ts_conv2d_s8_pixel_table, ts_depthwise_conv2d_s8_blocks);
# the expansion-then-depthwise kernel is made of calls of the two (ts_conv2d_s8, ts_depthwise_conv2d_s8).
KERNEL_FILE_NEEDS = {
    "ts_legacy_uint8": ("ts_conv2d_s8", "ts_depthwise_conv2d_s8"),
    "ts_expand_dw_s8": ("ts_conv2d_s8", "ts_depthwise_conv2d_s8"),
}


@dataclass(frozen=True)
class GeneratedModule:
    """The generated sources of one model, ready to write."""

    prefix: str
    files: dict[str, str]  # file name -> text
    kernels: tuple[str, ...]  # kernel file stems used, sorted
    arena_bytes: int
    alignment: int
    order: tuple[int, ...]
    input_bytes: tuple[int, ...]
    output_bytes: tuple[int, ...]
    input_dtypes: tuple[str, ...]
    output_dtypes: tuple[str, ...]
    input_shapes: tuple[tuple[int, ...], ...]
    output_shapes: tuple[tuple[int, ...], ...]
    weights_bytes: int  # the model's constant tensors (filters, biases, tables of the model)
    parameter_bytes: int  # per-operator arrays the generator adds: multipliers, shifts, lookup tables
    op_kernels: tuple[tuple[int, str], ...] = ()  # (operator, C kernel function), each operator once
    # <prefix>_invoke_streamed (--stream-input): rows, row_bytes, whole (the input stays whole in the
    # arena), window_rows, window_bytes; None: no such entry
    streamed: dict[str, Any] | None = None


# Bytes per element of the C types arrays are declared with (a ConstArray's values may be wider).
CTYPE_BYTES = {"int8_t": 1, "uint8_t": 1, "int16_t": 2, "int32_t": 4, "uint32_t": 4, "int64_t": 8, "float": 4}


def _expansion_scratch(graph: Graph, op: Operator) -> int:
    pair = expansion_of(op)
    return 0 if pair is None else expansion_scratch(graph, pair)


def _stream_window(graph: Graph, op: Operator) -> int:
    stream = stream_of(op)
    return 0 if stream is None else stream.window_bytes


# Kernels that need scratch memory declare it here: opcode -> bytes needed for one operator. The
# generator adds the scratch as an extra (unread) output tensor of that operator before planning,
# which the memory model keeps live during that step only, so the arena stays exact. A streamed
# pair's window is such scratch (the in-place variants' scratch comes with the variant).
SCRATCH_BYTES: dict[str, Callable[[Graph, Operator], int]] = {
    STREAM_OPCODE: _stream_window,
    EXPAND_OPCODE: _expansion_scratch,
}


def scratch_needs(graph: Graph) -> dict[int, int]:
    return {
        op.index: SCRATCH_BYTES[op.opcode](graph, op) for op in graph.operators if op.opcode in SCRATCH_BYTES
    }


def refuse_known_gaps(graph: Graph) -> None:
    """One clear line for what tinysched refuses on purpose: a legacy uint8 model with an operator
    that cannot be computed exactly as int8 (the pipeline computes the others as int8,
    tinysched.model.uint8; uint8 is otherwise accepted only at the model's edges, through QUANTIZE).
    (int8 SUM, once refused here, is lowered by `lower_sum` against the optimised kernel.)"""
    refusal = uint8_refusal(graph)
    if refusal is not None:
        raise TinyschedError(refusal)


def state_layout(graph: Graph, alignment: int) -> tuple[dict[int, int], int]:
    """Offsets of the variable tensors operators read, in one state buffer outside the arena."""
    offsets: dict[int, int] = {}
    total = 0
    for t in graph.tensors:
        if t.is_variable and graph.consumers.get(t.index):
            offsets[t.index] = total
            total += -(-t.nbytes // alignment) * alignment
    return offsets, total


def state_init(graph: Graph, offsets: dict[int, int]) -> list[dict[str, Any]]:
    """How reset() fills each state tensor: TFLite's ResetVariableTensor puts int8 state at its zero
    point and everything else at 0."""
    rows = []
    for t, off in sorted(offsets.items(), key=lambda kv: kv[1]):
        tensor = graph.tensors[t]
        q = tensor.quantization
        fill = q.zero_point[0] & 0xFF if tensor.dtype == "int8" and q is not None else 0
        note = c_comment(f"{tensor.name} {tensor.dtype}{list(tensor.shape)}", 100)
        rows.append({"tensor": t, "offset": off, "bytes": tensor.nbytes, "fill": fill, "note": note})
    return rows


def _checking_context(graph: Graph, prefix: str, state_offsets: dict[int, int]) -> LoweringContext:
    """A context that places every activation at 0: enough to lower, and so to check, any operator."""
    return LoweringContext(
        graph,
        prefix,
        {t: 0 for t in graph.activation_tensors},
        {t.index: "c" for t in graph.tensors if t.is_constant},
        state_offsets,
    )


def check_supported(graph: Graph) -> None:
    """Refuse, in one line naming the operator, anything the generator cannot lower."""
    refuse_known_gaps(graph)  # legacy uint8 models: one clear line
    inputs = _model_inputs(graph)
    for role, tensors in (("inputs", inputs), ("outputs", graph.outputs)):
        if not tensors:
            raise TinyschedError(
                f"the model has no {role}: the generated code would have nothing to {'read' if role == 'inputs' else 'return'}"
            )
    supported, stateful = supported_ops(), stateful_ops()
    for op in graph.operators:
        if op.opcode not in lowered_ops():
            raise TinyschedError(
                f"operator {op.index} ({op.opcode}) is not supported by the code generator; "
                f"supported: {', '.join(supported)}"
            )
    for t in graph.tensors:
        readers = [graph.operators[v].opcode for v in graph.consumers.get(t.index, ())]
        if t.is_variable and any(r not in stateful for r in readers):
            raise TinyschedError(
                f"tensor {t.index} ({quoted(t.name)}) is persistent state; "
                f"only {', '.join(stateful)} keep state in the code generator"
            )
    ctx = _checking_context(graph, "check", state_layout(graph, DEFAULT_ALIGNMENT)[0])
    for op in graph.operators:
        lower(ctx, op, 0)
    for t in (*inputs, *graph.outputs):
        tensor = graph.tensors[t]
        if tensor.dtype not in C_TYPES or not tensor.is_activation:
            raise TinyschedError(
                f"graph input/output tensor {t} ({tensor.dtype}) is not supported by the code generator"
            )


def _model_inputs(graph: Graph) -> tuple[int, ...]:
    """The model's inputs: the graph's, or the one a streamed chain takes row by row from the
    application (--stream-input: the planned graph no longer lists it, the arena never holds it)."""
    x = streamed_input(graph)
    return graph.inputs if x is None else (*graph.inputs, x)


def _streamed_entry(graph: Graph, inputs: list[dict[str, Any]]) -> dict[str, Any]:
    """What the header and the module say about `<prefix>_invoke_streamed` (--stream-input): the
    rows of input 0 and, when a chain takes them, the rows its window holds (else the input is whole
    in the arena and the entry reads every row into it)."""
    e = inputs[0]
    shape = e["shape"]
    rows = int(shape[1]) if len(shape) > 1 else 1
    chain = next((s for op in graph.operators if (s := stream_of(op)) is not None and s.source), None)
    return {
        "rows": rows,
        "row_bytes": e["bytes"] // max(rows, 1),
        "whole": chain is None,
        "window_rows": rows if chain is None else chain.rows[0],
        "window_bytes": e["bytes"] if chain is None else chain.window_offset(1),
        # passes over the rows: one per column tile of the chain they head (tinysched.memory.stream)
        "passes": 1 if chain is None or chain.tiles is None else chain.tiles.count,
    }


def kernels_by_op(graph: Graph) -> dict[int, str | None]:
    """The C kernel the code generator calls for each operator (None: not supported). Stateful
    operators see their state placed as `generate` places it, so they report their kernel too."""
    ctx = _checking_context(graph, "report", state_layout(graph, DEFAULT_ALIGNMENT)[0])
    kernels: dict[int, str | None] = {}
    for op in graph.operators:
        kernel = None
        if op.opcode in lowered_ops():
            try:
                kernel = "+".join(part.kernel for part in lower(ctx, op, 0).emitted) or None
            except TinyschedError:
                kernel = None
        kernels[op.index] = kernel
    return kernels


# ---- the module ----------------------------------------------------------------------------------


def _step_output(ctx: LoweringContext, op: Operator) -> str:
    """TS_STEP_DONE's output arguments for a step: its operator's first output where it lies in the
    arena (a measuring harness checks those bytes against TFLite's tensor), else none."""
    outs = [t for t in op.outputs if t >= 0]
    if not outs or outs[0] not in ctx.offsets or ctx.tensor(outs[0]).is_variable:
        return "NULL, 0u"
    return f"{ctx.ptr(outs[0])}, {ctx.tensor(outs[0]).nbytes}u"


def _tensor_note(graph: Graph, index: int, offsets: dict[int, int], ctx: LoweringContext) -> str:
    t = graph.tensors[index]
    where = ctx.place(offsets[index], "+") if index in offsets else ("const" if t.is_constant else "?")
    return f"t{index} {c_comment(t.name, 80)!s} {t.dtype}{list(t.shape)} @{where}"


def _quant_note(t: Tensor) -> str:
    q = t.quantization
    if q is None:
        return ""
    if q.per_channel:
        return f", per-channel scales on axis {q.axis}"
    return f", scale {c_float(q.scale[0])}, zero point {q.zero_point[0]}"


@cache
def _environment() -> Any:
    import jinja2

    from tinysched.resources import resource

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resource("templates"))),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["c_comment"] = c_comment
    env.filters["c_string"] = c_string
    return env


def render(template: str, **context: Any) -> str:
    return _environment().get_template(template).render(**context)


def model_name(graph: Graph) -> str:
    return Path(graph.source).stem if graph.source else (graph.name or "model")


def default_prefix(graph: Graph) -> str:
    return c_identifier(model_name(graph))


def step_offsets(graph: Graph, plan: Any) -> tuple[list[dict[int, int]], dict[int, int], dict[int, int]]:
    """Where each step's tensors are: (per step, tensor -> offset of the instance that step reads or
    writes; tensor -> offset of instance 0; tensor -> offset of its final instance).

    In a plain order every tensor has the one instance 0. In a recomputation sequence a step reads
    the instances `memory.instance_lifetimes` says it reads and writes new ones (docs/recomputation.md),
    and the graph outputs are copied out of their final instance."""
    from tinysched.memory.tensor import instance_lifetimes

    by_key = {(p.index, getattr(p, "instance", 0)): p.offset for p in plan.buffers}
    base = {t: offset for (t, i), offset in by_key.items() if i == 0}
    order = list(plan.order)
    if len(set(order)) == len(order):
        return [base] * len(order), base, base
    _, reads = instance_lifetimes(graph, order)
    activation = set(graph.activation_tensors)
    written: dict[int, int] = {}
    final = dict(base)
    per_step = []

    def where(t: int, i: int) -> int:
        if (t, i) not in by_key:
            raise TinyschedError(f"the arena plan places no offset for tensor {t} instance {i}")
        return by_key[(t, i)]

    for step, v in enumerate(order):
        here = dict(base)
        for t, i in reads[step]:
            here[t] = where(t, i)
        for t in dict.fromkeys(graph.operators[v].outputs):
            if t in activation:
                i = written.get(t, 0)
                written[t] = i + 1
                here[t] = final[t] = where(t, i)
        per_step.append(here)
    return per_step, base, final


def arena_regions(plan: Any) -> list[dict[str, Any]]:
    """A split arena's regions as the templates use them: each its own static array, whose name
    ends in `_arena_<region>` so that the linker script puts it in that region's section."""
    rows = []
    for pool in getattr(plan, "pools", ()):
        name = c_identifier(pool.region)
        if name != pool.region:
            raise TinyschedError(f"region {pool.region!r} is not a C identifier: rename it in boards.yaml")
        rows.append(
            {
                "name": name,
                "NAME": name.upper(),
                "var": f"arena_{name}",
                "base": pool.base,
                "bytes": pool.bytes,
                "origin": f"0x{pool.origin:08x}",
                "speed": pool.speed,
                "high_water": pool.high_water_bytes,
                "tensors": pool.tensors,
            }
        )
    return rows


# Steps per generated function, where a model has more: gcc -O2 took 0.9 s on one function of 500
# steps, 2.1 s on 1,000, 6.2 s on 2,000 and more than 16 minutes on 10,000. Models of up to this
# many steps keep every call in `<prefix>_steps`.
STEPS_PER_FUNCTION = 256


def _names(name: str, lines: Sequence[str]) -> bool:
    return re.search(rf"\b{name}\b", "\n".join(lines)) is not None


def _pointers_used(
    pointers: Sequence[dict[str, Any]], lines: Sequence[str], key: str = "name"
) -> list[dict[str, Any]]:
    """The pointers (a region's, `state`; their C name under `key`) that `lines` of C name."""
    return [v for v in pointers if _names(v[key], lines)]


def _step_lines(calls: Sequence[Any]) -> list[str]:
    return [line for c in calls for line in (*c.args, *c.pre)]


def step_functions(calls: Sequence[Any], pointers: Sequence[dict[str, str]]) -> list[dict[str, Any]]:
    """The steps in functions of at most STEPS_PER_FUNCTION steps, each declaring the pointers its
    calls name; none (every call in `<prefix>_steps`) when there are no more steps than that."""
    if len(calls) <= STEPS_PER_FUNCTION:
        return []
    functions = []
    for first in range(0, len(calls), STEPS_PER_FUNCTION):
        part = calls[first : first + STEPS_PER_FUNCTION]
        lines = _step_lines(part)
        functions.append(
            {
                "first": part[0].step,
                "last": part[-1].step,
                "calls": part,
                "pointers": _pointers_used(pointers, lines),
                "names_arena": _names("arena", lines),
            }
        )
    return functions


def _region_use(
    regions: list[dict[str, Any]],
    calls: Sequence[Any],
    inputs: list[dict[str, Any]],
    outputs: list[dict[str, Any]],
) -> dict[str, list[dict[str, Any]]]:
    """Per generated function of a split arena, the regions whose pointer its code names."""

    def used(lines: Sequence[str]) -> list[dict[str, Any]]:
        return _pointers_used(regions, lines, key="var")

    ins = [e["at"] for e in inputs if e["at"] is not None]  # a streamed input is not in the arena
    outs = [e["at"] for e in outputs]
    return {
        "steps": used(_step_lines(calls)),
        "invoke": used(ins + outs),
        "input": used(ins),
        "output": used(outs),
    }


def generate(
    graph: Graph,
    plan: Any,
    prefix: str | None = None,
    schedule: Any = None,
    edge_notes: dict[int, str] | None = None,
    stream_entry: bool = False,
    dsp_tables: bool = True,
) -> GeneratedModule:
    """C sources for `graph` run in `plan.order` with tensors at `plan`'s offsets.

    `graph` must already hold any scratch tensors the plan was made with (see `with_scratch`);
    `edge_notes` (edge tensor -> text) go into the header above that input's or output's constants.
    `stream_entry` (--stream-input) adds `<prefix>_invoke_streamed`, which a graph whose input a chain
    takes row by row (tinysched.memory.stream) needs; a model of one input only. `dsp_tables` False
    (a core whose kernels take the Helium paths) leaves out the tables only the DSP paths read."""
    check_supported(graph)
    prefix = check_prefix(prefix) if prefix is not None else default_prefix(graph)
    name = model_name(graph)
    per_step, offsets, final_offsets = step_offsets(graph, plan)
    missing = [t for t in graph.activation_tensors if t not in offsets]
    if missing:
        raise TinyschedError(f"the arena plan places no offset for tensors {missing[:8]}")

    # Constants: one array per model buffer (tensors may share a buffer), named by first tensor.
    const_names: dict[int, str] = {}
    const_arrays: list[ConstArray] = []
    by_buffer: dict[int, str] = {}
    for t in graph.tensors:
        if not t.is_constant:
            continue
        used = any(t.index in op.inputs for op in graph.operators)
        if t.dtype not in C_TYPES or not used:
            continue
        key = t.buffer or -t.index - 1
        if key not in by_buffer:
            by_buffer[key] = f"{prefix}_t{t.index}"
            ctype = C_TYPES[t.dtype]
            const_arrays.append(
                ConstArray(
                    by_buffer[key],
                    ctype,
                    np.asarray(t.data),
                    f"t{t.index} {c_comment(t.name, 100)} {t.dtype}{list(t.shape)}{_quant_note(t)}",
                    is_float=t.dtype == "float32",
                )
            )
        const_names[t.index] = by_buffer[key]

    state_offsets, state_bytes = state_layout(graph, plan.alignment)
    regions = arena_regions(plan)
    ctx = LoweringContext(
        graph,
        prefix,
        offsets,
        const_names,
        state_offsets,
        tuple((r["var"], r["base"], r["bytes"]) for r in regions),
        dsp_tables,
    )
    calls = []
    runs: dict[int, int] = {}
    members = 0  # slots of the streamed members so far (TS_MEMBER_DONE)
    for step, op_index in enumerate(plan.order):
        op = graph.operators[op_index]
        here = per_step[step]  # the instances this step reads and writes
        call = lower(replace(ctx.at_step(here), first_member=members), op, step)
        chain = stream_of(op)
        members += len(chain.operators) if chain is not None else 0
        call.first_run = op_index not in runs
        runs[op_index] = runs.get(op_index, 0) + 1
        again = "" if call.first_run else f" (recomputed, run {runs[op_index]})"
        notes = list(call.comment)  # what the lowering said (a view: why there is no call)
        call.comment = [f"step {step}: operator {op.index} {operator_type(op)}{again}"]
        ins = [t for t in op.inputs if t >= 0]
        call.comment += [f"  in  {_tensor_note(graph, t, here, ctx)}" for t in ins]
        call.comment += [f"  out {_tensor_note(graph, t, here, ctx)}" for t in op.outputs]
        call.comment += [f"  {note}" for note in notes]
        call.output = _step_output(ctx.at_step(here), op)
        calls.append(call)

    def edge(role: str, tensors: Sequence[int], offsets: dict[int, int] = offsets) -> list[dict[str, Any]]:
        rows = []
        for k, t in enumerate(tensors):
            tensor = graph.tensors[t]
            q = tensor.quantization
            placed = t in offsets  # not: an input streamed row by row, never whole in the arena
            rows.append(
                {
                    "role": role,
                    "position": k,
                    "tensor": t,
                    "name": c_comment(tensor.name, 100),
                    "ctype": C_TYPES[tensor.dtype],
                    "dtype": tensor.dtype,
                    "shape": list(tensor.shape),
                    "rank": len(tensor.shape),
                    "bytes": tensor.nbytes,
                    "offset": offsets[t] if placed else None,
                    # arena + offset (in a split arena: its region's pointer); None: streamed
                    "at": ctx.place(offsets[t]) if placed else None,
                    "at_note": ctx.place(offsets[t], "+") if placed else None,
                    "scale": c_float32(q.scale[0]) if q is not None and not q.per_channel else None,
                    "zero_point": q.zero_point[0] if q is not None and not q.per_channel else None,
                    "note": c_comment((edge_notes or {}).get(t, ""), 200),
                }
            )
        return rows

    inputs = edge("input", _model_inputs(graph))
    outputs = edge("output", graph.outputs, final_offsets)  # the final instance of each
    entry = stream_entry or streamed_input(graph) is not None
    if entry and len(inputs) != 1:
        raise TinyschedError(
            f"--stream-input: the model has {len(inputs)} inputs; the streamed entry takes the rows "
            "of a model's only input"
        )
    streamed = _streamed_entry(graph, inputs) if entry else None
    in_arena = [r for r in inputs if r["offset"] is not None]
    lifetimes = edge_lifetimes(
        graph,
        plan,
        [(r["tensor"], r["offset"], r["bytes"]) for r in in_arena],
        [(r["tensor"], r["offset"], r["bytes"]) for r in outputs],
    )
    for r, reuse in zip(in_arena, lifetimes.inputs, strict=True):
        r["in_place"] = input_note(prefix, r["position"], reuse)
    for r in inputs:
        if streamed is not None:
            r["in_place"] = r.get("in_place", []) + stream_note(prefix, r["position"], streamed)
    for r, shared in zip(outputs, lifetimes.outputs, strict=True):
        r["in_place"] = output_note(prefix, r["position"], shared)
    run = [part for c in calls for part in c.emitted]  # every kernel call, fused operators' parts too
    files = {KERNEL_SOURCE.get(c.kernel, c.kernel) for c in run if c.kernel}
    kernels = tuple(sorted(files.union(*(KERNEL_FILE_NEEDS.get(f, ()) for f in files))))
    header_guard = c_identifier(prefix).upper() + "_H"
    # what a function of many steps declares; the arena itself is its parameter (one arena)
    pointers = [{"name": r["var"], "value": f"{prefix}_arena_{r['name']}"} for r in regions]
    if state_bytes:
        pointers.append({"name": "state", "value": f"{prefix}_state"})
    functions = step_functions(calls, pointers)
    context = {
        "version": __version__,
        "model": c_comment(name, 100),
        "model_string": c_string(name),
        "sha256": graph.sha256 or "unknown",
        "build_id": c_string(f"{__version__}-{(graph.sha256 or '0' * 16)[:16]}"),
        "prefix": prefix,
        "PREFIX": prefix.upper(),
        "guard": header_guard,
        "arena_bytes": plan.arena_bytes,
        "alignment": plan.alignment,
        "lower_bound_bytes": getattr(plan, "lower_bound_bytes", plan.arena_bytes),
        "peak_bytes": getattr(plan, "peak_bytes", plan.arena_bytes),
        "certified": bool(getattr(schedule, "certified", False)) if schedule is not None else None,
        "order": list(plan.order),
        "inputs": inputs,
        "outputs": outputs,
        "calls": calls,
        "kernels": kernels,
        "const_arrays": const_arrays,
        "array_lines": c_array_lines,
        "float_lines": float_lines,
        "n_ops": len(graph.operators),
        "weights_bytes": sum(a.values.nbytes for a in const_arrays),
        # Persistent state (variable tensors of stateful operators), outside the arena; 0 if none.
        "state_bytes": state_bytes,
        "state_tensors": state_init(graph, state_offsets),
        "regions": regions,  # a split arena's regions (tinysched.arena.pools); empty: one arena
        # the regions' pointers each function of a split arena uses (it declares only those)
        "region_use": _region_use(regions, calls, inputs, outputs),
        "step_functions": functions,  # the steps in functions (many steps); empty: all in `_steps`
        "steps_per_function": STEPS_PER_FUNCTION,
        "streamed": streamed,  # <prefix>_invoke_streamed (--stream-input); None: no such entry
        "num_members": members,  # the streamed stages' members (ts_model_info.num_members)
    }
    files = {
        f"{prefix}.h": render("model.h.j2", **context),
        f"{prefix}.c": render("model.c.j2", **context),
        f"{prefix}_weights.h": render("weights.h.j2", **context),
        f"{prefix}_weights.c": render("weights.c.j2", **context),
    }
    return GeneratedModule(
        prefix=prefix,
        files=files,
        kernels=kernels,
        arena_bytes=plan.arena_bytes,
        alignment=plan.alignment,
        order=tuple(plan.order),
        input_bytes=tuple(r["bytes"] for r in inputs),
        output_bytes=tuple(r["bytes"] for r in outputs),
        input_dtypes=tuple(r["dtype"] for r in inputs),
        output_dtypes=tuple(r["dtype"] for r in outputs),
        input_shapes=tuple(tuple(r["shape"]) for r in inputs),
        output_shapes=tuple(tuple(r["shape"]) for r in outputs),
        weights_bytes=context["weights_bytes"],
        parameter_bytes=sum(
            a.values.size * CTYPE_BYTES[a.ctype]
            for c in calls
            if c.first_run
            for part in c.emitted
            for a in part.local_arrays
        ),
        op_kernels=tuple(
            (c.op, "+".join(part.kernel for part in c.emitted)) for c in calls if c.first_run and c.emitted
        ),
        streamed=streamed,
    )
