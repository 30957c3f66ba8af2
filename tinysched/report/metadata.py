"""The metadata document: one versioned JSON record of a planned (and maybe built and measured)
model, from which every form of the report renders (schema in docs/report-schema.md).

`build` writes it beside the firmware as `<name>_metadata.json`; `report` builds it the same way.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tinysched import __version__
from tinysched.arena.pools import certificate as pool_certificate
from tinysched.errors import TinyschedError
from tinysched.memory.stream import operator_type
from tinysched.report.format import percent

SCHEMA = "tinysched.metadata"
SCHEMA_VERSION = 1
TIGHT_MARGIN = 0.05  # below 5 % free a region is "tight" (as in build.elfsize.TIGHT_MARGIN)
FORMATS = ("html", "md", "json")

# What each placement key of a board puts into its region, in the firmware lead's words.
PLACEMENT_ROLES = {
    "text": "code",
    "rodata": "weights and constants",
    "data": "data, bss, stack",
    "arena": "arena",
}


# ---- flash and RAM per region ---------------------------------------------------------------------


def _region_roles(board: Any) -> dict[str, list[str]]:
    roles: dict[str, list[str]] = {r.name: [] for r in board.memory}
    for key, region in board.placement.items():
        if key in PLACEMENT_ROLES and region in roles and PLACEMENT_ROLES[key] not in roles[region]:
            roles[region].append(PLACEMENT_ROLES[key])
    return roles


def _region_entry(
    name: str, kind: str, origin: int, size: int, used: int, holds: list[str], complete: bool
) -> dict[str, Any]:
    free = size - used
    if used > size:
        status = "overflow"
    elif size and free < TIGHT_MARGIN * size and used:
        status = "tight"
    else:
        status = "ok"
    return {
        "name": name,
        "kind": kind,
        "origin": origin,
        "size_bytes": size,
        "used_bytes": used,
        "free_bytes": free,
        "percent_used": percent(used, size),
        "status": status,
        "used_complete": complete,
        "holds": holds,
    }


def fit_from_size_report(board: Any, size: dict[str, Any]) -> dict[str, Any]:
    """The fit section from a firmware size report (firmware.SizeReport.to_json())."""
    roles = _region_roles(board)
    regions = [
        _region_entry(
            r["name"], r["kind"], r["origin"], r["length"], r["used"], roles.get(r["name"], []), True
        )
        for r in size["regions"]
    ]
    return _fit(regions, "elf", size.get("flash_code"), None, size)


def fit_estimate(
    board: Any,
    weights_bytes: int,
    arena_bytes: int,
    note: str,
    stack_bytes: int | None = None,
    arena_regions: Any = (),
) -> dict[str, Any]:
    """Without an ELF: what is known to land in each region (weights, arena, the stack reserved:
    the build's, else the board's), code unknown. A split arena (`arena_regions`, the plan's
    pools) is charged region by region."""
    roles = _region_roles(board)
    used = {r.name: 0 for r in board.memory}
    used[board.placement["rodata"]] += weights_bytes
    if arena_regions:
        for pool in arena_regions:
            if pool.region in used:
                used[pool.region] += pool.bytes
                if "arena" not in roles[pool.region]:
                    roles[pool.region].append("arena")
    else:
        used[board.placement["arena"]] += arena_bytes
    used[board.placement["data"]] += board.stack_bytes if stack_bytes is None else stack_bytes
    regions = []
    for r in board.memory:
        holds = roles[r.name]
        complete = not holds  # a region holding nothing of ours is complete at 0; others lack code/.data
        regions.append(_region_entry(r.name, r.kind, r.origin, r.length, used[r.name], holds, complete))
    return _fit(regions, "estimate", None, note, None)


def _fit(
    regions: list[dict[str, Any]],
    source: str,
    code_bytes: int | None,
    note: str | None,
    size: dict[str, Any] | None,
) -> dict[str, Any]:
    overflow = [r["name"] for r in regions if r["status"] == "overflow"]
    tight = [r["name"] for r in regions if r["status"] == "tight"]
    if overflow:
        verdict, text = "does-not-fit", f"does not fit: {', '.join(overflow)} overflow"
    elif source != "elf":
        verdict = "unknown"
        text = "weights, arena and stack fit; code size unknown (firmware not built)"
    elif tight:
        verdict, text = "tight", f"fits, tight in {', '.join(tight)} (under {TIGHT_MARGIN:.0%} free)"
    else:
        verdict, text = "fits", "fits"
    return {
        "verdict": verdict,
        "fits": False if overflow else (True if source == "elf" else None),
        "text": text,
        "source": source,
        "note": note,
        "code_bytes": code_bytes,
        "regions": regions,
        "size_report": size,
    }


# ---- measured on the device ---------------------------------------------------------------------------


MEASURED_KEYS = (
    "board",
    "ran_on",
    "emulated_by",
    "arena_bytes_planned",
    "arena_bytes_measured",
    "arena_bytes_touched",
    "stack_bytes_measured",
    "stack_bytes_total",
    "outputs_match",
    "inputs",
    "cycles",
    "instructions",
    "count_unit",
    "latency_estimate_ms",
    "image_sha256",
    "stack_reserved_bytes",
)


def read_measured(path: str | Path) -> dict[str, Any]:
    """The JSON `tinysched measure --json` prints, checked for the keys the report uses."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as err:
        raise TinyschedError(f"{path}: cannot read measurement: {err.strerror or err}") from None
    except json.JSONDecodeError as err:
        raise TinyschedError(f"{path}: not JSON: {err.msg} at line {err.lineno}") from None
    if not isinstance(data, dict) or "arena_bytes_measured" not in data:
        raise TinyschedError(f"{path}: not the JSON of `tinysched measure --json` (no arena_bytes_measured)")
    return data


def measured_section(measured: dict[str, Any], arena_bytes: int) -> dict[str, Any]:
    out = {k: measured.get(k) for k in MEASURED_KEYS}
    planned = out["arena_bytes_planned"]
    out["arena_matches_plan"] = out["arena_bytes_measured"] == planned
    out["same_plan_as_report"] = planned == arena_bytes
    out["ok"] = bool(
        out["arena_matches_plan"] and out["outputs_match"] is not False and measured.get("ok", True)
    )
    out["per_type"] = per_type(measured.get("per_operator") or [])
    return out


def budget_section(planned: Any, measured: dict[str, Any] | None) -> dict[str, Any] | None:
    """What --arena-budget considered and chose, with the measured point when `measured` ran this
    very plan (same arena bytes planned) and counted instructions."""
    if planned.budget is None:
        return None
    out = planned.budget.as_json()
    point = None
    if (
        measured
        and measured.get("arena_bytes_planned") == planned.arena.arena_bytes
        and measured.get("instructions")
    ):
        point = {
            "arena_bytes": int(measured["arena_bytes_measured"]),
            "instructions": int(measured["instructions"]),
        }
    out["measured"] = point
    return out


def per_type(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The timed invoke's count per operator type, largest first (from measure's per_operator)."""
    totals: dict[str, list[int]] = {}
    for s in steps:
        t = totals.setdefault(str(s.get("type")), [0, 0])
        t[0] += 1
        t[1] += int(s.get("count") or 0)
    whole = sum(c for _, c in totals.values()) or 1
    rows = [
        {"type": k, "operators": n, "count": c, "percent": round(100.0 * c / whole, 1)}
        for k, (n, c) in totals.items()
    ]
    return sorted(rows, key=lambda r: -r["count"])


# ---- the RAM an application pays --------------------------------------------------------------------


def _model_inputs(graph: Any) -> tuple[int, ...]:
    """The model's inputs: the planned graph's and the one it streams row by row (--stream-input),
    which the planned graph no longer lists."""
    from tinysched.memory.stream import streamed_input

    x = streamed_input(graph)
    return tuple(graph.inputs) if x is None else (*graph.inputs, x)


def _streams_summary(planned: Any, arena_bytes: int) -> dict[str, Any] | None:
    """What the streamed chains saved: the arena of the same plan with none streamed against this
    one, and per chain the bytes its steps hold less (its tensors whole against their windows);
    None when no chain was tried."""
    if planned.unstreamed_arena_bytes is None:
        return None
    return {
        "arena_without_streams_bytes": planned.unstreamed_arena_bytes,
        "arena_bytes": arena_bytes,
        "saved_bytes": planned.unstreamed_arena_bytes - arena_bytes,
        "chains": [
            {
                "model_ops": r["model_ops"],
                "opcodes": r["opcodes"],
                "input_rows": r.get("input_rows", False),
                "tensor_bytes": r["tensor_bytes"],
                "window_bytes": r["window_bytes"],
                "bytes_saved_at_its_steps": r["bytes_saved_at_its_steps"],
                "macs_added": r["macs_added"],
                "column_tiles": r["column_tiles"],  # 1: whole rows
            }
            for r in planned.streams_json()
        ],
    }


def application_ram(planned: Any, kernels: dict[int, str] | None, core: str | None = None) -> dict[str, Any]:
    """The RAM the generated module costs the application, both ways it can run it (the generated
    header's API): in place (`<prefix>_invoke_in_place`, inputs written and outputs read in the
    arena) the arena and the persistent state; copying (`<prefix>_invoke`) also the application's own
    input and output buffers. Plus the stack of one invoke, measured per kernel (on `core`, the
    board's, where measured; None: a kernel of the model was never measured, or no kernels are
    known)."""
    from tinysched.build.stack import invoke_stack
    from tinysched.codegen import KERNEL_SOURCE, state_layout

    graph, arena = planned.graph, planned.arena
    inputs = sum(graph.tensors[t].nbytes for t in _model_inputs(graph))  # a streamed input too: copying
    # invoke takes it whole from the application
    outputs = sum(graph.tensors[t].nbytes for t in graph.outputs)
    state = state_layout(graph, arena.alignment)[1]
    functions = {f for k in (kernels or {}).values() if k for f in k.split("+")}
    stack = invoke_stack({KERNEL_SOURCE.get(f, f) for f in functions}, core=core) if functions else None
    return {
        "arena_bytes": arena.arena_bytes,
        "alignment": arena.alignment,
        "state_bytes": state,
        "input_bytes": inputs,
        "output_bytes": outputs,
        "zero_copy_bytes": arena.arena_bytes + state,
        "copying_bytes": arena.arena_bytes + inputs + outputs + state,
        "invoke_stack_bytes": stack.bytes if stack is not None else None,
        "invoke_stack_basis": stack.basis if stack is not None else "not measured for this model's kernels",
    }


# ---- the metadata document -------------------------------------------------------------------------


def _tensor_brief(t: Any) -> dict[str, Any]:
    return {"name": t.name, "dtype": t.dtype, "shape": list(t.shape), "bytes": t.nbytes}


def _board_section(board: Any) -> dict[str, Any] | None:
    if board is None:
        return None
    return {
        "name": board.name,
        "description": board.description,
        "mcu": board.mcu,
        "core": board.core,
        "fpu": board.fpu,
        "clock_hz": board.cpu_hz,
        "stack_bytes": board.stack_bytes,
        "placement": dict(board.placement),
        "memory": [
            {"name": r.name, "origin": r.origin, "length": r.length, "kind": r.kind} for r in board.memory
        ],
    }


def collect_metadata(
    planned: Any,
    *,
    board: Any = None,
    kernels: dict[int, str] | None = None,
    size: dict[str, Any] | None = None,
    size_note: str | None = None,
    comparisons: dict[str, Any] | None = None,
    measured: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The versioned metadata document every form of the report renders from.

    Built from facts only, nothing is planned or compiled here: `planned` (a pipeline.Planned);
    `board` a boards.Board (None: no board, no fit); `kernels` the C kernel of each operator of the
    planned graph (from the generated module); `size` the firmware size report
    (SizeReport.to_json()) when an image was built; `comparisons` what `report.compare.compare`
    computed (None: not run); `measured` the JSON of `tinysched measure`; `extra` the build's own
    keys, kept under "build".
    """
    from tinysched.arena.placement import STOCK_TFLM_PLACER, align_up, greedy_plan
    from tinysched.memory.overlap import memory_model, step_savings_report
    from tinysched.memory.stream import whole_bytes_saved
    from tinysched.memory.tensor import profile, sequence_profile
    from tinysched.order.recompute import macs

    started = time.perf_counter()
    graph, placed, sched, plan = planned.source, planned.graph, planned.schedule, planned.arena
    codegen_note = planned.codegen_note
    recompute_plan = planned.recompute
    n_ops = len(placed.operators)
    kernels = kernels or {}
    # the memory model the schedule, certificate and arena are in (a recomputation sequence: tensor)
    model = memory_model(placed, planned.memory_model)
    stored = profile(placed, None, model)
    best = profile(placed, sched.order, model)
    run = sequence_profile(placed, plan.order)  # what the firmware runs: an order or a sequence
    run_is_order = len(plan.order) == n_ops
    # per step of the run order: tensor-model and refined live bytes, and what saved the difference
    savings = step_savings_report(placed, plan.order, model) if run_is_order and model.refined else None
    refined_run = profile(placed, plan.order, model) if savings is not None else None
    # stock TFLM runs the model as converted: every operator, foldable and rewritable ones included
    stock_greedy = greedy_plan(graph, graph.stored_order(), STOCK_TFLM_PLACER, plan.alignment)
    comparisons = comparisons or {}
    stock = comparisons.get("stock_tflm") or {"available": False, "reason": "not run"}
    tensors = placed.tensors
    op_macs = [macs(placed, v) for v in range(n_ops)]
    total = sum(op_macs)
    cert = sched.certificate

    tradeoff = comparisons.get("recompute_tradeoff")
    timeline_sequence, timeline_k, timeline_extra = None, None, None
    timeline_graph = placed  # the trade-off's sequences are over the default kernels' graph (no streams)
    if recompute_plan is not None:
        timeline_sequence = recompute_plan.sequence
        timeline_k, timeline_extra = recompute_plan.k, recompute_plan.extra_macs
    elif tradeoff:
        saving = [p for p in tradeoff["plans"] if p["saving_bytes"] > 0]
        if saving:
            best_rc = min(saving, key=lambda p: (p["peak_bytes"], p["extra_macs"], p["k"]))
            timeline_sequence = best_rc["sequence"]
            timeline_k, timeline_extra = best_rc["k"], best_rc["extra_macs"]
            timeline_graph = planned.default_kernels_graph or placed
    timeline_recompute = None
    if timeline_sequence is not None:
        seq = sequence_profile(timeline_graph, timeline_sequence)
        timeline_recompute = {
            "k": timeline_k,
            "sequence": list(seq.sequence),
            "live_bytes": [s.live_bytes for s in seq.steps],
            "peak_bytes": seq.peak_bytes,
            "peak_step": seq.peak_step,
            "extra_macs": timeline_extra,
            "built": not run_is_order,
        }

    weights = placed.weights_bytes
    state = placed.persistent_bytes
    if board is None:
        fit = None
    elif size is not None:
        fit = fit_from_size_report(board, size)
        fit["note"] = size_note
    else:
        reserved = (extra or {}).get("stack_reserved_bytes")
        fit = fit_estimate(
            board, weights, plan.arena_bytes, size_note or "firmware not built", reserved, plan.pools
        )

    def name(t: int, instance: int = 0) -> str:
        return tensors[t].name + (f" #{instance}" if instance else "")

    sources = planned.operator_sources  # planned operator -> the input model's operators
    fused = {r.operator: r for r in planned.rewriting.rewrites}  # planned operator -> its rewrite
    operators = []
    for s in run.steps:
        op = placed.operators[s.op]
        row = savings[s.step] if savings is not None else None
        operators.append(
            {
                "step": s.step,
                "op": s.op,
                "type": operator_type(op),
                "execution": s.execution,
                "macs": op_macs[s.op],
                "live_bytes": s.live_bytes if row is None else row.refined_bytes,
                "tensor_live_bytes": s.live_bytes if row is None else row.tensor_bytes,
                "saved": step_techniques(row, fused.get(s.op)),
                "born": [name(t, i) for t, i in s.born],
                "freed": [name(t, i) for t, i in s.freed],
                "kernel": kernels.get(s.op),
                "model_op": planned.source_operator(s.op),
                "model_ops": sorted(sources[s.op]),
            }
        )

    if refined_run is not None:
        peak_step = refined_run.peak_step
        peak_set = {(t, 0) for t in refined_run.live_at(peak_step) if model.storage.tensors[t].nbytes}
        peak_bytes = refined_run.peak_bytes
        peak_overlap = savings[peak_step].overlap_bytes if savings else 0
    else:
        peak_step, peak_bytes, peak_overlap = run.peak_step, run.peak_bytes, 0
        peak_set = set(run.live_at(run.peak_step)) if run.steps else set()
    tensor_optimum = comparisons.get("tensor_model") or None
    summary = {
        "macc": total,
        "weights_ro_bytes": weights,
        "activations_rw_bytes": plan.arena_bytes,
        "ram_total_bytes": plan.arena_bytes + state,
        "flash_image_bytes": size.get("flash_total") if size else None,
        "ram_image_bytes": size.get("ram_total") if size else None,
        "arena_lower_bound_bytes": plan.lower_bound_bytes,
        "certified": sched.certified,
        "memory_model": planned.memory_model,
        "certificate_kind": cert.kind if cert else None,
        "stock_tflm_arena_bytes": stock.get("arena_bytes") if stock.get("available") else None,
        "fit_verdict": fit["verdict"] if fit else None,
        # what the application pays: in place (arena + state) and copying (+ its input/output buffers)
        "application_ram": (
            application_ram(planned, kernels, board.core if board is not None else None)
            if codegen_note is None
            else None
        ),
        # --stream-input: the arena with the whole input and with it streamed (None: not asked)
        "input_streaming": None if planned.input_streaming is None else planned.input_streaming.as_json(),
        "streams": _streams_summary(planned, plan.arena_bytes),
    }
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "tinysched_version": __version__,
        "model": {
            "name": Path(graph.source).stem if graph.source else (graph.name or "model"),
            "source": graph.source,
            "sha256": graph.sha256,
            "description": graph.description,
            "operators": len(graph.operators),
            "op_types": graph.op_types,
            "inputs": [_tensor_brief(graph.tensors[t]) for t in _model_inputs(graph)],
            "outputs": [_tensor_brief(graph.tensors[t]) for t in graph.outputs],
            "weights_bytes": weights,
            "state_bytes": state,
            "codegen_supported": codegen_note is None,
            "codegen_note": codegen_note,
            "io": planned.interface.as_json(),  # the generated API's edges (--io int8: int8 in place of float)
        },
        "board": _board_section(board),
        "summary": summary,
        "fit": fit,
        "schedule": {
            "order": list(sched.order),
            "run_sequence": list(plan.order),
            "model_order": planned.model_order(sched.order),
            "model_run_sequence": planned.model_order(plan.order),
            "folded_model_ops": list(planned.folding.folded),
            "rewritten_model_ops": list(planned.rewritten_operators),
            "rewrites": planned.rewrites_json(),
            "stored_order_peak_bytes": stored.peak_bytes,
            "stored_order_peak_step": stored.peak_step,
            "peak_bytes": best.peak_bytes,
            "saving_bytes": stored.peak_bytes - best.peak_bytes,
            "lower_bound_bytes": sched.lower_bound_bytes,
            "certified": sched.certified,
            "memory_model": sched.memory_model,
            "memory_model_asked": planned.options.memory_model,
            "memory_model_note": planned.options.memory_model_note,
            "certificate_scope": planned.certificate_scope(),
            "certificate": (
                {
                    "kind": cert.kind,
                    "lower_bound_bytes": cert.lower_bound_bytes,
                    "memory_model": sched.memory_model,
                    "witness": dict(cert.witness),
                }
                if cert
                else None
            ),
            # the least peak of any order with whole, separate tensors, beside a refined certificate
            "tensor_model_optimum": tensor_optimum,
            "method": sched.method,
            "seconds": round(sched.seconds, 4),
        },
        "arena": {
            "arena_bytes": plan.arena_bytes,
            "high_water_bytes": getattr(plan, "high_water_bytes", plan.arena_bytes),
            "alignment": plan.alignment,
            "lower_bound_bytes": plan.lower_bound_bytes,
            "peak_bytes": plan.peak_bytes,
            "optimal": plan.optimal,
            "memory_model": plan.memory_model,
            "method": plan.method,
            "seconds": round(plan.seconds, 4),
            "stock_tflm_greedy_arena_bytes": stock_greedy.arena_bytes,
            "stock_tflm": stock,
            # a split arena (tinysched.arena.pools): what sits in which region; empty for one arena
            "regions": arena_regions(plan, name),
            "regions_certificate": pool_certificate(plan) if plan.pools else None,
            "tensors": [
                {
                    "index": p.index,
                    "instance": getattr(p, "instance", 0),
                    "name": name(p.index, getattr(p, "instance", 0)),
                    "offset": p.offset,
                    "bytes": p.bytes,
                    "aligned_bytes": align_up(p.bytes, plan.alignment),
                    "first_step": p.first_step,
                    "last_step": p.last_step,
                    "at_peak": (p.index, getattr(p, "instance", 0)) in peak_set,
                }
                for p in plan.buffers
            ],
        },
        "timeline": {
            "steps": len(run.steps),
            "run": "certified" if run_is_order else "recompute",
            "memory_model": model.name if model.refined else "tensor",
            "certified_live_bytes": [s.live_bytes for s in best.steps],
            "stored_live_bytes": [s.live_bytes for s in stored.steps],
            # the certified order in the tensor model (None when it is planned in that model)
            "tensor_live_bytes": (
                [
                    s.live_bytes + whole_bytes_saved(placed.operators[s.op])
                    for s in profile(placed, sched.order).steps
                ]
                if model.refined
                else None
            ),
            "peak_step": peak_step,
            "peak_bytes": peak_bytes,
            "peak_overlap_bytes": peak_overlap,
            "peak_tensors": [
                {"index": t, "instance": i, "name": name(t, i), "bytes": tensors[t].nbytes}
                for t, i in sorted(peak_set)
            ],
            "stored_peak_step": stored.peak_step,
            "recompute": timeline_recompute,
        },
        "operators": operators,
        "recompute_tradeoff": tradeoff,
        # --arena-budget: the plans considered (arena, estimated instructions), the chosen one
        "arena_budget": budget_section(planned, measured),
        "measured": measured_section(measured, plan.arena_bytes) if measured else None,
        "build": extra or None,
        "seconds": round(time.perf_counter() - started, 3),
    }
    return doc


def step_techniques(row: Any, rewrite: Any) -> list[dict[str, Any]]:
    """What saved bytes at one step, by technique (overlap.StepSaving, the operator's rewrite):
    the output over its dying input, views sharing their root (negative where a root outlives
    its own readers), a fused PAD whose tensor the rewrite removed from the graph, and a streamed
    pair's tensor, which is never whole (its window is in the step's live bytes)."""
    out = []
    if row is not None and row.overlap_bytes:
        out.append({"technique": "overlap", "bytes": row.overlap_bytes})
    if row is not None and row.view_bytes:
        out.append({"technique": "views", "bytes": row.view_bytes})
    if rewrite is not None and rewrite.kind == "pad_fusion" and rewrite.removed_bytes:
        out.append({"technique": "pad_fusion", "bytes": rewrite.removed_bytes})
    if row is not None and row.stream_bytes:
        out.append({"technique": "stream", "bytes": row.stream_bytes})
    return out


def arena_regions(plan: Any, name: Any) -> list[dict[str, Any]]:
    """The report's region table: each region of a split arena with the tensors placed in it."""
    rows = []
    for pool in plan.pools:
        inside = [p for p in plan.buffers if p.bytes and plan.pool_of(p.offset, p.bytes) is pool]
        rows.append(
            {
                **pool.as_json(),
                "used_bytes": pool.bytes,
                "tensors": [
                    {"name": name(p.index, p.instance), "offset": p.offset - pool.base, "bytes": p.bytes}
                    for p in sorted(inside, key=lambda p: (p.offset, p.index))
                ],
            }
        )
    return rows


def check_metadata(doc: Any) -> dict[str, Any]:
    """Refuse a document this version cannot render (other schema, newer version)."""
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise TinyschedError(f"not a {SCHEMA} document")
    version = doc.get("schema_version")
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise TinyschedError(
            f"{SCHEMA} version {version!r} is newer than this tinysched reads ({SCHEMA_VERSION})"
        )
    return doc


def metadata_json(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2) + "\n"
