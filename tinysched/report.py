"""`tinysched report`: one page that says whether a model fits a board, what it needs, why, and what
could still be saved.

Everything the page shows comes from one versioned metadata document (`collect_metadata`, schema
in docs/report-schema.md). `build` writes that document beside the firmware as
`<name>_metadata.json` (through `write_beside_firmware`), and the HTML and Markdown forms render
from it alone (`render_html`, `render_markdown`), so a report can be rendered again later from the
JSON without the model.

The charts are inline SVG drawn here (`svg_timeline`, `svg_arena_map`, `svg_bar`): no scripts, no
network, readable in print. Every name that comes from the model is escaped.
"""

from __future__ import annotations

import html
import json
import math
import shutil
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import Any

from tinysched import __version__
from tinysched.errors import TinyschedError
from tinysched.graph import Graph

SCHEMA = "tinysched.metadata"
SCHEMA_VERSION = 1
TIGHT_MARGIN = 0.05  # below 5 % free a region is "tight" (as in firmware.TIGHT_MARGIN)
DEFAULT_RECOMPUTE_KS = (0, 1, 2)
DEFAULT_RECOMPUTE_TIME_LIMIT = 1.0  # seconds per k
FORMATS = ("html", "md", "json")

# What each placement key of a board puts into its region, in the firmware lead's words.
PLACEMENT_ROLES = {
    "text": "code",
    "rodata": "weights and constants",
    "data": "data, bss, stack",
    "arena": "arena",
}


# ---- small helpers -------------------------------------------------------------------------------


def fmt_bytes(n: int | None) -> str:
    """18,432 B (18.0 KiB); '-' for unknown."""
    if n is None:
        return "-"
    if abs(n) < 1024:
        return f"{n:,} B"
    if abs(n) < 1024 * 1024:
        return f"{n:,} B ({n / 1024:.1f} KiB)"
    return f"{n:,} B ({n / 1048576:.2f} MiB)"


def fmt_int(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def esc(text: Any) -> str:
    """Text for HTML or SVG content and attribute values (quotes included)."""
    return html.escape(str(text), quote=True)


_MD_SPECIAL = set("\\`*_[]<>|&~")


def md_escape(text: Any) -> str:
    """Text for a Markdown table cell: punctuation that means something is backslash-escaped."""
    out = []
    for ch in str(text).replace("\r", " ").replace("\n", " "):
        out.append("\\" + ch if ch in _MD_SPECIAL else ch)
    return "".join(out)


def _percent(part: int, whole: int) -> float | None:
    return round(100.0 * part / whole, 2) if whole else None


def _witness_text(witness: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in witness.items())


# ---- what is computed from the model -----------------------------------------------------------------


def kernels_by_op(graph: Graph) -> dict[int, str | None]:
    """The C kernel the code generator calls for each operator (None: not supported)."""
    from tinysched import codegen

    return codegen.kernels_by_op(graph)


def plan_for_report(
    graph: Graph, alignment: int = 16, time_limit: float = 1.0
) -> tuple[Graph, Any, Any, str | None]:
    """(graph as placed, schedule, plan, why the code generator cannot take it or None).

    A model the code generator supports is planned exactly as `build` plans it (scratch tensors
    included), so the report's arena is the firmware's; any other model is planned as `plan` does."""
    from tinysched import codegen
    from tinysched.arena import plan_model

    try:
        planned, sched, plan = codegen.plan_for_codegen(graph, alignment=alignment, time_limit=time_limit)
    except TinyschedError as err:
        sched, plan = plan_model(
            graph, alignment=alignment, time_limit=time_limit, schedule_time_limit=time_limit
        )
        return graph, sched, plan, str(err)
    return planned, sched, plan, None


def stock_tflm_arena(model_bytes: bytes | None) -> dict[str, Any]:
    """Stock TFLM's arena for the model as stored, from the tflite-micro interpreter when installed."""
    if model_bytes is None:
        return {"available": False, "reason": "model file not given"}
    try:
        import importlib.util

        if importlib.util.find_spec("tflite_micro") is None:
            return {"available": False, "reason": "the tflite-micro package is not installed"}
    except (ImportError, ValueError):
        return {"available": False, "reason": "the tflite-micro package is not installed"}
    from tinysched.reference import random_inputs
    from tinysched.tflm import run_tflm

    try:
        run = run_tflm(model_bytes, random_inputs(model_bytes, seed=0, count=1)[0], timeout=120.0)
    except TinyschedError as err:
        return {"available": False, "reason": str(err)}
    return {
        "available": True,
        "arena_bytes": run.head_bytes,
        "head_bytes": run.head_bytes,
        "tail_bytes": run.tail_bytes,
        "total_bytes": run.total_bytes,
        "source": "tflite-micro interpreter, stored order, its own planner",
    }


def recompute_tradeoff(
    graph: Graph, ks: Sequence[int] = DEFAULT_RECOMPUTE_KS, time_limit: float = DEFAULT_RECOMPUTE_TIME_LIMIT
) -> list[Any]:
    """One RecomputePlan per cap k."""
    from tinysched.recompute import plan_recompute

    return [plan_recompute(graph, k, time_limit=time_limit) for k in ks]


def _recompute_entry(p: Any) -> dict[str, Any]:
    return {
        "k": p.k,
        "peak_bytes": p.peak_bytes,
        "baseline_peak_bytes": p.baseline_peak_bytes,
        "saving_bytes": p.saving_bytes,
        "saving_percent": round(p.saving_percent, 3),
        "lower_bound_bytes": p.lower_bound_bytes,
        "extra_macs": p.extra_macs,
        "extra_macs_percent": round(p.extra_macs_percent, 4),
        "total_macs": p.total_macs,
        "recomputed": list(p.recomputed),
        "sequence": list(p.sequence),
        "method": p.method,
        "optimal": p.optimal,
        "seconds": round(p.seconds, 4),
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
        "percent_used": _percent(used, size),
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


def fit_estimate(board: Any, weights_bytes: int, arena_bytes: int, note: str) -> dict[str, Any]:
    """Without an ELF: what is known to land in each region (weights, arena, stack), code unknown."""
    roles = _region_roles(board)
    used = {r.name: 0 for r in board.memory}
    used[board.placement["rodata"]] += weights_bytes
    used[board.placement["arena"]] += arena_bytes
    used[board.placement["data"]] += board.stack_bytes
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


def cross_build_size(planned: Graph, schedule: Any, plan: Any, board: Any, out_dir: Path) -> dict[str, Any]:
    """Generate the C module and cross-compile it for `board` exactly as `measure` builds it; the
    size report (SizeReport.to_json()), also when the image does not fit."""
    from tinysched.codegen import generate
    from tinysched.firmware import DoesNotFit, build_firmware
    from tinysched.hostbuild import write_sources

    module = generate(planned, plan, schedule=schedule)
    directory = Path(out_dir) / "model"
    write_sources(module, planned, directory)
    sources = [directory / f"{module.prefix}.c", directory / f"{module.prefix}_weights.c"]
    sources += [directory / "tinysched" / "kernels" / f"{k}.c" for k in module.kernels]
    includes = [directory, directory / "tinysched" / "include", directory / "tinysched" / "kernels"]
    try:
        image = build_firmware(
            sources, includes, f"{module.prefix}_info", board, Path(out_dir) / "firmware", name=module.prefix
        )
    except DoesNotFit as err:
        return err.report.to_json()
    return image.size.to_json()


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
    return out


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
    graph: Graph,
    board: Any = None,
    *,
    model_bytes: bytes | None = None,
    planned: tuple[Graph, Any, Any] | None = None,
    codegen_note: str | None = None,
    size: dict[str, Any] | None = None,
    size_note: str | None = None,
    stock_tflm: dict[str, Any] | bool = True,
    recompute_ks: Sequence[int] | None = DEFAULT_RECOMPUTE_KS,
    recompute_time_limit: float = DEFAULT_RECOMPUTE_TIME_LIMIT,
    recompute_plan: Any = None,
    measured: dict[str, Any] | None = None,
    alignment: int = 16,
    time_limit: float = 1.0,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The versioned metadata document every form of the report renders from.

    `graph` is the model as read; `board` a boards.Board (None: no board, no fit); `planned` the
    (graph as placed, schedule, plan) triple when the caller already planned (build does), else the
    model is planned here like build plans it; `size` the firmware size report
    (SizeReport.to_json()) when an image was built; `stock_tflm` a precomputed `stock_tflm_arena`
    result, True to run tflite-micro on `model_bytes` when installed, False to skip;
    `recompute_ks` the caps of the trade-off (None: skip); `recompute_plan` a RecomputePlan to
    draw on the timeline; `measured` the JSON of `tinysched measure`; `extra` keys a caller (build)
    adds under "build".
    """
    from tinysched.arena import STOCK_TFLM_PLACER, align_up, greedy_plan
    from tinysched.memory import profile, sequence_profile
    from tinysched.recompute import macs

    started = time.perf_counter()
    if planned is None:
        placed, sched, plan, codegen_note = plan_for_report(graph, alignment, time_limit)
    else:
        placed, sched, plan = planned
    n_ops = len(placed.operators)
    if hasattr(sched, "sequence"):  # build ran with --recompute: `sched` is its RecomputePlan
        from tinysched.scheduler import schedule as run_scheduler

        recompute_plan = recompute_plan or sched
        sched = run_scheduler(placed, time_limit=time_limit)
    kernels = kernels_by_op(placed) if codegen_note is None else {v: None for v in range(n_ops)}
    stored = profile(placed)
    best = profile(placed, sched.order)
    run = sequence_profile(placed, plan.order)  # what the firmware runs: an order or a sequence
    run_is_order = len(plan.order) == n_ops
    stock_greedy = greedy_plan(placed, placed.stored_order(), STOCK_TFLM_PLACER, plan.alignment)
    # stock TFLM runs in a child process: let it run while the trade-off is searched
    pool = ThreadPoolExecutor(max_workers=1)
    if isinstance(stock_tflm, dict):
        stock_job = pool.submit(dict, stock_tflm)
    elif stock_tflm:
        stock_job = pool.submit(stock_tflm_arena, model_bytes)
    else:
        stock_job = pool.submit(dict, available=False, reason="not run (--no-tflm)")
    pool.shutdown(wait=False)

    tensors = placed.tensors
    op_macs = [macs(placed, v) for v in range(n_ops)]
    total = sum(op_macs)
    cert = sched.certificate

    tradeoff = None
    if recompute_ks:
        tradeoff_plans = recompute_tradeoff(placed, recompute_ks, recompute_time_limit)
        tradeoff = {
            "time_limit_seconds": recompute_time_limit,
            "plans": [_recompute_entry(p) for p in tradeoff_plans],
        }
        if recompute_plan is None:
            saving = [p for p in tradeoff_plans if p.saving_bytes > 0]
            if saving:
                recompute_plan = min(saving, key=lambda p: (p.peak_bytes, p.extra_macs, p.k))
    timeline_recompute = None
    if recompute_plan is not None:
        seq = sequence_profile(placed, recompute_plan.sequence)
        timeline_recompute = {
            "k": recompute_plan.k,
            "sequence": list(seq.sequence),
            "live_bytes": [s.live_bytes for s in seq.steps],
            "peak_bytes": seq.peak_bytes,
            "peak_step": seq.peak_step,
            "extra_macs": recompute_plan.extra_macs,
            "built": not run_is_order,
        }

    stock = stock_job.result()
    weights = placed.weights_bytes
    state = placed.persistent_bytes
    if board is None:
        fit = None
    elif size is not None:
        fit = fit_from_size_report(board, size)
        fit["note"] = size_note
    else:
        fit = fit_estimate(board, weights, plan.arena_bytes, size_note or "firmware not built")

    def name(t: int, instance: int = 0) -> str:
        return tensors[t].name + (f" #{instance}" if instance else "")

    operators = []
    for s in run.steps:
        op = placed.operators[s.op]
        operators.append(
            {
                "step": s.step,
                "op": s.op,
                "type": op.opcode,
                "execution": s.execution,
                "macs": op_macs[s.op],
                "live_bytes": s.live_bytes,
                "born": [name(t, i) for t, i in s.born],
                "freed": [name(t, i) for t, i in s.freed],
                "kernel": kernels.get(s.op),
            }
        )

    peak_set = set(run.live_at(run.peak_step)) if run.steps else set()
    summary = {
        "macc": total,
        "weights_ro_bytes": weights,
        "activations_rw_bytes": plan.arena_bytes,
        "ram_total_bytes": plan.arena_bytes + state,
        "flash_image_bytes": size.get("flash_total") if size else None,
        "ram_image_bytes": size.get("ram_total") if size else None,
        "arena_lower_bound_bytes": plan.lower_bound_bytes,
        "certified": sched.certified,
        "certificate_kind": cert.kind if cert else None,
        "stock_tflm_arena_bytes": stock.get("arena_bytes") if stock.get("available") else None,
        "fit_verdict": fit["verdict"] if fit else None,
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
            "inputs": [_tensor_brief(graph.tensors[t]) for t in graph.inputs],
            "outputs": [_tensor_brief(graph.tensors[t]) for t in graph.outputs],
            "weights_bytes": weights,
            "state_bytes": state,
            "codegen_supported": codegen_note is None,
            "codegen_note": codegen_note,
        },
        "board": _board_section(board),
        "summary": summary,
        "fit": fit,
        "schedule": {
            "order": list(sched.order),
            "run_sequence": list(plan.order),
            "stored_order_peak_bytes": stored.peak_bytes,
            "stored_order_peak_step": stored.peak_step,
            "peak_bytes": best.peak_bytes,
            "saving_bytes": stored.peak_bytes - best.peak_bytes,
            "lower_bound_bytes": sched.lower_bound_bytes,
            "certified": sched.certified,
            "certificate": (
                {
                    "kind": cert.kind,
                    "lower_bound_bytes": cert.lower_bound_bytes,
                    "witness": dict(cert.witness),
                }
                if cert
                else None
            ),
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
            "method": plan.method,
            "seconds": round(plan.seconds, 4),
            "stock_tflm_greedy_arena_bytes": stock_greedy.arena_bytes,
            "stock_tflm": stock,
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
            "certified_live_bytes": [s.live_bytes for s in best.steps],
            "stored_live_bytes": [s.live_bytes for s in stored.steps],
            "peak_step": run.peak_step,
            "peak_bytes": run.peak_bytes,
            "peak_tensors": [
                {"index": t, "instance": i, "name": name(t, i), "bytes": tensors[t].nbytes}
                for t, i in sorted(peak_set)
            ],
            "stored_peak_step": stored.peak_step,
            "recompute": timeline_recompute,
        },
        "operators": operators,
        "recompute_tradeoff": tradeoff,
        "measured": measured_section(measured, plan.arena_bytes) if measured else None,
        "build": extra or None,
        "seconds": round(time.perf_counter() - started, 3),
    }
    return doc


def metadata_for_model(
    model: str | Path,
    board_name: str | None,
    *,
    build_firmware: bool | None = None,
    measured_path: str | Path | None = None,
    stock_tflm: bool = True,
    recompute_ks: Sequence[int] | None = DEFAULT_RECOMPUTE_KS,
    recompute_time_limit: float = DEFAULT_RECOMPUTE_TIME_LIMIT,
    recompute_k: int | None = None,
    alignment: int = 16,
    time_limit: float = 1.0,
) -> dict[str, Any]:
    """What `tinysched report` does: read, plan, cross-build when arm-none-eabi-gcc is present
    (`build_firmware` None: when present; False: never), and collect the metadata."""
    from tinysched.boards import get_board
    from tinysched.reader import read_model

    board = get_board(board_name) if board_name else None
    measured = read_measured(measured_path) if measured_path else None
    try:
        model_bytes = Path(model).read_bytes()
    except OSError as err:
        raise TinyschedError(f"{model}: cannot read: {err.strerror or err}") from None
    graph = read_model(model)
    placed, sched, plan, codegen_note = plan_for_report(graph, alignment, time_limit)
    size, size_note = None, None
    if board is not None:
        from tinysched.firmware import CC

        if codegen_note is not None:
            size_note = "firmware not built: the code generator does not support this model"
        elif build_firmware is False:
            size_note = "firmware not built (--no-build)"
        elif shutil.which(CC) is None:
            size_note = f"firmware not built: {CC} not found"
        else:
            with tempfile.TemporaryDirectory(prefix="tinysched-report-") as tmp:
                try:
                    size = cross_build_size(placed, sched, plan, board, Path(tmp))
                except TinyschedError as err:
                    size_note = f"firmware build failed: {str(err).splitlines()[0]}"
            if size is not None:
                size_note = f"read from the ELF of the firmware built with {CC} for {board.name}"
    rc_plan = None
    if recompute_k is not None:
        from tinysched.recompute import plan_recompute

        rc_plan = plan_recompute(placed, recompute_k, time_limit=max(recompute_time_limit, 1.0))
    return collect_metadata(
        graph,
        board,
        model_bytes=model_bytes,
        planned=(placed, sched, plan),
        codegen_note=codegen_note,
        size=size,
        size_note=size_note,
        stock_tflm=stock_tflm,
        recompute_ks=recompute_ks,
        recompute_time_limit=recompute_time_limit,
        recompute_plan=rc_plan,
        measured=measured,
        alignment=alignment,
        time_limit=time_limit,
    )


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


# ---- SVG charts ------------------------------------------------------------------------------------

PALETTE = (
    "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2",
    "#edc948", "#9c755f", "#bab0ac", "#86bcb6", "#d4a6c8",
)  # fmt: skip
PEAK_COLOUR = "#e15759"
SERIES_STYLE = {
    "certified": ("#1f5fa8", ""),
    "stored": ("#8c8c8c", "6 4"),
    "recompute": ("#2e9e44", "2 3"),
}


def _nice_step(span: float, ticks: int = 5) -> float:
    if span <= 0:
        return 1.0
    raw = span / ticks
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def _byte_step(span: float, ticks: int = 5) -> float:
    """A tick step in whole B, KiB or MiB multiples of 1, 2, 2.5 or 5, so labels stay short."""
    unit = 1048576 if span >= 4 * 1048576 else 1024 if span >= 4 * 1024 else 1
    return max(_nice_step(span / unit, ticks) * unit, 1.0)


def _axis_label(n: float, step: float = 1.0) -> str:
    """A tick label in the unit its step was chosen in (see `_byte_step`)."""
    if step >= 1048576 and n:
        return f"{n / 1048576:g} MiB"
    if step >= 1024 and n:
        return f"{n / 1024:g} KiB"
    return f"{n:,.0f} B"


def _svg_open(width: int, height: int, title: str) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label="{esc(title)}" font-family="sans-serif" font-size="11">',
        f"<title>{esc(title)}</title>",
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
    ]


def svg_timeline(
    series: Sequence[dict[str, Any]],
    *,
    peak_step: int | None = None,
    peak_tensors: Sequence[dict[str, Any]] = (),
    lower_bound: int | None = None,
    width: int = 900,
    height: int = 300,
) -> str:
    """Live bytes per step as step lines: one series each ({"key", "label", "values"}), the peak
    step's tensors stacked as a highlighted bar, the lower bound as a dashed rule."""
    left, right, top, bottom = 70, 20, 28, 40
    pw, ph = width - left - right, height - top - bottom
    n = max((len(s["values"]) for s in series), default=0)
    ymax = max([max(s["values"], default=0) for s in series] + [lower_bound or 0, 1])
    step = _byte_step(ymax)
    ytop = math.ceil(ymax / step) * step
    out = _svg_open(width, height, "memory timeline: live bytes per step")

    def x(s: float) -> float:
        return left + pw * s / max(n, 1)

    def y(v: float) -> float:
        return top + ph - ph * v / ytop

    # grid and axes
    v = 0.0
    while v <= ytop + 1e-9:
        out.append(
            f'<line x1="{left}" y1="{y(v):.1f}" x2="{left + pw}" y2="{y(v):.1f}" stroke="#e3e3e3"/>'
            f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end" fill="#444">{esc(_axis_label(v, step))}</text>'
        )
        v += step
    xstep = max(1, int(_nice_step(n, 10)))
    for s in range(0, n + 1, xstep):
        out.append(
            f'<line x1="{x(s):.1f}" y1="{top + ph}" x2="{x(s):.1f}" y2="{top + ph + 4}" stroke="#444"/>'
            f'<text x="{x(s):.1f}" y="{top + ph + 16}" text-anchor="middle" fill="#444">{s}</text>'
        )
    out.append(
        f'<text x="{left + pw / 2:.1f}" y="{height - 6}" text-anchor="middle" fill="#222">step</text>'
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="#444"/>'
        f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#444"/>'
    )
    # the peak step: its live tensors stacked, each with its name on hover
    if peak_step is not None and 0 <= peak_step < n:
        base = 0
        for i, t in enumerate(sorted(peak_tensors, key=lambda t: -t["bytes"])):
            y0, y1 = y(base + t["bytes"]), y(base)
            colour = PEAK_COLOUR if i % 2 == 0 else "#f4a3a4"
            out.append(
                f'<rect x="{x(peak_step):.1f}" y="{y0:.1f}" width="{max(x(peak_step + 1) - x(peak_step), 3):.1f}" '
                f'height="{max(y1 - y0, 0.5):.1f}" fill="{colour}" stroke="#ffffff" stroke-width="0.5">'
                f"<title>{esc(t['name'])}: {t['bytes']:,} B</title></rect>"
            )
            base += t["bytes"]
        out.append(
            f'<text x="{x(peak_step + 0.5):.1f}" y="{max(y(base) - 6, 12):.1f}" text-anchor="middle" '
            f'fill="{PEAK_COLOUR}" font-weight="bold">peak {base:,} B (step {peak_step})</text>'
        )
    if lower_bound is not None:
        out.append(
            f'<line x1="{left}" y1="{y(lower_bound):.1f}" x2="{left + pw}" y2="{y(lower_bound):.1f}" '
            f'stroke="#000" stroke-dasharray="1 3"><title>lower bound {lower_bound:,} B</title></line>'
        )
    # the series, as steps; the first given (the stored order, dashed) drawn last so it stays visible
    for s in [*series[1:], *series[:1]]:
        colour, dash = SERIES_STYLE.get(s["key"], ("#333", ""))
        pts = []
        for i, val in enumerate(s["values"]):
            pts += [f"{x(i):.1f},{y(val):.1f}", f"{x(i + 1):.1f},{y(val):.1f}"]
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(
            f'<polyline points="{" ".join(pts)}" fill="none" stroke="{colour}" stroke-width="2"{dash_attr}>'
            f"<title>{esc(s['label'])}</title></polyline>"
        )
    # legend
    lx = left + 8
    for s in series:
        colour, dash = SERIES_STYLE.get(s["key"], ("#333", ""))
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        label = esc(s["label"])
        out.append(
            f'<line x1="{lx}" y1="{top - 12}" x2="{lx + 22}" y2="{top - 12}" stroke="{colour}" '
            f'stroke-width="2"{dash_attr}/><text x="{lx + 26}" y="{top - 8}" fill="#222">{label}</text>'
        )
        lx += 34 + 6.2 * len(s["label"])
    if lower_bound is not None:
        out.append(
            f'<line x1="{lx}" y1="{top - 12}" x2="{lx + 22}" y2="{top - 12}" stroke="#000" stroke-dasharray="1 3"/>'
            f'<text x="{lx + 26}" y="{top - 8}" fill="#222">lower bound</text>'
        )
    out.append("</svg>")
    return "\n".join(out)


def svg_arena_map(
    tensors: Sequence[dict[str, Any]],
    arena_bytes: int,
    steps: int,
    *,
    lower_bound: int | None = None,
    width: int = 900,
    height: int = 340,
) -> str:
    """Each tensor a rectangle: lifetime across (steps), offset up (bytes); peak tensors in red."""
    left, right, top, bottom = 70, 20, 14, 40
    pw, ph = width - left - right, height - top - bottom
    n = max(steps, 1)
    ymax = max(arena_bytes, lower_bound or 0, 1)
    ystep = _byte_step(ymax)
    out = _svg_open(width, height, "arena map: tensor offset against lifetime")

    def x(s: float) -> float:
        return left + pw * s / n

    def y(v: float) -> float:
        return top + ph - ph * v / ymax

    v = 0.0
    while v <= ymax + 1e-9:
        out.append(
            f'<line x1="{left}" y1="{y(v):.1f}" x2="{left + pw}" y2="{y(v):.1f}" stroke="#eeeeee"/>'
            f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end" fill="#444">{esc(_axis_label(v, ystep))}</text>'
        )
        v += ystep
    xstep = max(1, int(_nice_step(n, 10)))
    for s in range(0, n + 1, xstep):
        out.append(f'<text x="{x(s):.1f}" y="{top + ph + 16}" text-anchor="middle" fill="#444">{s}</text>')
    out.append(
        f'<text x="{left + pw / 2:.1f}" y="{height - 6}" text-anchor="middle" fill="#222">step (lifetime)</text>'
        f'<text x="14" y="{top + ph / 2:.1f}" transform="rotate(-90 14 {top + ph / 2:.1f})" '
        f'text-anchor="middle" fill="#222">offset</text>'
    )
    for t in tensors:
        x0, x1 = x(t["first_step"]), x(t["last_step"] + 1)
        y0, y1 = y(t["offset"] + t["aligned_bytes"]), y(t["offset"])
        colour = PEAK_COLOUR if t.get("at_peak") else PALETTE[t["index"] % len(PALETTE)]
        tip = (
            f"{t['name']}: {t['bytes']:,} B at offset {t['offset']:,}, "
            f"steps {t['first_step']}-{t['last_step']}" + (" (live at the peak)" if t.get("at_peak") else "")
        )
        out.append(
            f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{max(x1 - x0, 1):.1f}" height="{max(y1 - y0, 0.5):.1f}" '
            f'fill="{colour}" fill-opacity="0.75" stroke="#333" stroke-width="0.6"><title>{esc(tip)}</title></rect>'
        )
        label = t["name"]
        room = (x1 - x0) / 6.0
        if y1 - y0 >= 12 and (room >= 10 or room >= len(label)):
            if len(label) > room:
                label = "…" + label[-int(room) + 1 :]
            out.append(
                f'<text x="{x0 + 3:.1f}" y="{(y0 + y1) / 2 + 4:.1f}" fill="#111" font-size="10">{esc(label)}</text>'
            )
    out.append(
        f'<line x1="{left}" y1="{y(arena_bytes):.1f}" x2="{left + pw}" y2="{y(arena_bytes):.1f}" '
        f'stroke="#000" stroke-width="1.5"/>'
        f'<text x="{left + pw}" y="{y(arena_bytes) - 3:.1f}" text-anchor="end" fill="#000">'
        f"arena {arena_bytes:,} B</text>"
    )
    out.append(
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="#444"/>'
        f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#444"/>'
    )
    out.append("</svg>")
    return "\n".join(out)


def svg_bar(percent: float | None, status: str, width: int = 160, height: int = 12) -> str:
    """A region's fill as a small bar (green, amber when tight, red over 100 %)."""
    colour = {"overflow": "#d62728", "tight": "#e8a33d"}.get(status, "#3a9d5d")
    share = 0.0 if percent is None else min(max(percent, 0.0), 100.0) / 100.0
    label = "unknown" if percent is None else f"{percent:.1f}% used"
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{esc(label)}"><rect x="0.5" y="0.5" width="{width - 1}" height="{height - 1}" '
        f'fill="#f2f2f2" stroke="#999"/><rect x="0.5" y="0.5" width="{(width - 1) * share:.1f}" '
        f'height="{height - 1}" fill="{colour}"/></svg>'
    )


def sparkline(values: Sequence[int], width: int = 60) -> str:
    """Live bytes as a line of block characters, for Markdown (down-sampled to `width` by max)."""
    if not values:
        return ""
    blocks = "▁▂▃▄▅▆▇█"
    if len(values) > width:
        per = len(values) / width
        values = [max(values[int(i * per) : max(int((i + 1) * per), int(i * per) + 1)]) for i in range(width)]
    top = max(values) or 1
    return "".join(blocks[min(int(v / top * (len(blocks) - 1) + 0.5), len(blocks) - 1)] for v in values)


# ---- rendering ------------------------------------------------------------------------------------


@cache
def _environment(kind: str) -> Any:
    import jinja2

    from tinysched.resources import resource

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resource("templates") / "report")),
        undefined=jinja2.StrictUndefined,
        autoescape=kind == "html",
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["bytes"] = fmt_bytes
    env.filters["int"] = fmt_int
    env.filters["md"] = md_escape
    env.filters["witness"] = _witness_text
    env.filters["hex"] = lambda n: f"{n:#010x}"
    env.filters["pct"] = lambda p: "-" if p is None else f"{p:.1f}%"
    return env


def _view(doc: dict[str, Any]) -> dict[str, Any]:
    """Derived values both templates use, computed once from the document alone."""
    s, arena, sched, timeline = doc["summary"], doc["arena"], doc["schedule"], doc["timeline"]
    fit = doc["fit"]
    cert = sched["certificate"]
    verdict = ("unknown", "no board: fit not checked") if fit is None else (fit["verdict"], fit["text"])
    stock = arena["stock_tflm"]
    stock_bytes = stock.get("arena_bytes") if stock.get("available") else None
    ref_stock = stock_bytes if stock_bytes is not None else arena["stock_tflm_greedy_arena_bytes"]
    saved = ref_stock - arena["arena_bytes"] if ref_stock else None
    certificate_text = (
        f"{cert['kind']} ({_witness_text(cert['witness'])})"
        if cert
        else "none: the order is not proven optimal"
    )
    tradeoff = doc["recompute_tradeoff"]
    best_rc = None
    if tradeoff:
        saving = [p for p in tradeoff["plans"] if p["saving_bytes"] > 0]
        best_rc = min(saving, key=lambda p: (p["peak_bytes"], p["extra_macs"])) if saving else None
    savings = []
    if sched["saving_bytes"] > 0:
        savings.append(
            f"reordering already saves {sched['saving_bytes']:,} B against the stored order "
            f"({sched['stored_order_peak_bytes']:,} B -> {sched['peak_bytes']:,} B)"
        )
    if sched["certified"]:
        savings.append("no other operator order has a lower peak (certified)")
    else:
        gap = sched["peak_bytes"] - sched["lower_bound_bytes"]
        savings.append(f"a better order might save up to {gap:,} B (not proven optimal)")
    if arena["arena_bytes"] > arena["lower_bound_bytes"]:
        savings.append(
            f"placement is {arena['arena_bytes'] - arena['lower_bound_bytes']:,} B above its bound"
            + (" (proven minimal)" if arena["optimal"] else "")
        )
    else:
        savings.append("the arena equals its lower bound: placement cannot do better")
    if best_rc:
        savings.append(
            f"recomputation (k={best_rc['k']}) lowers the peak by {best_rc['saving_bytes']:,} B "
            f"for {best_rc['extra_macs']:,} extra MACs ({best_rc['extra_macs_percent']:.2f}%)"
        )
    elif tradeoff:
        top_k = max(p["k"] for p in tradeoff["plans"])
        savings.append(f"recomputation (k up to {top_k}) cannot lower the peak")
    series = [
        {"key": "stored", "label": f"stored order (peak {sched['stored_order_peak_bytes']:,} B)",
         "values": timeline["stored_live_bytes"]},
        {"key": "certified", "label": f"certified order (peak {sched['peak_bytes']:,} B)",
         "values": timeline["certified_live_bytes"]},
    ]  # fmt: skip
    rc = timeline["recompute"]
    if rc:
        series.append(
            {"key": "recompute", "label": f"recomputation k={rc['k']} (peak {rc['peak_bytes']:,} B)",
             "values": rc["live_bytes"]}
        )  # fmt: skip
    return {
        "verdict": verdict,
        "certificate_text": certificate_text,
        "stock_bytes": stock_bytes,
        "saved_vs_stock": saved,
        "saved_vs_stock_percent": _percent(saved, ref_stock) if saved is not None and ref_stock else None,
        "savings": savings,
        "series": series,
        "regions_shown": [r for r in (fit["regions"] if fit else []) if r["used_bytes"] or r["holds"]],
        "spark_stored": sparkline(timeline["stored_live_bytes"]),
        "spark_certified": sparkline(timeline["certified_live_bytes"]),
        "spark_recompute": sparkline(rc["live_bytes"]) if rc else "",
        "summary": s,
        "op_type": {o["op"]: o["type"] for o in doc["operators"]},
    }


def render_html(doc: dict[str, Any]) -> str:
    """The self-contained page: inline CSS and SVG, no script, no network."""
    import markupsafe

    check_metadata(doc)
    view = _view(doc)
    timeline = doc["timeline"]
    charts = {
        "timeline": markupsafe.Markup(
            svg_timeline(
                view["series"],
                peak_step=timeline["peak_step"],
                peak_tensors=timeline["peak_tensors"],
                lower_bound=doc["schedule"]["lower_bound_bytes"],
            )
        ),
        "arena_map": markupsafe.Markup(
            svg_arena_map(
                doc["arena"]["tensors"],
                doc["arena"]["arena_bytes"],
                timeline["steps"],
                lower_bound=doc["arena"]["lower_bound_bytes"],
            )
        ),
        "bars": {
            r["name"]: markupsafe.Markup(svg_bar(r["percent_used"], r["status"]))
            for r in view["regions_shown"]
        },
    }
    return _environment("html").get_template("report.html.j2").render(doc=doc, view=view, charts=charts)


def render_markdown(doc: dict[str, Any]) -> str:
    """The same content as GitHub/GitLab-flavoured Markdown, for a merge request."""
    check_metadata(doc)
    return _environment("md").get_template("report.md.j2").render(doc=doc, view=_view(doc))


def render(doc: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return metadata_json(check_metadata(doc))
    if fmt == "md":
        return render_markdown(doc)
    if fmt == "html":
        return render_html(doc)
    raise TinyschedError(f"unknown report format {fmt!r}; choose one of {', '.join(FORMATS)}")


def write_beside_firmware(directory: str | Path, name: str, doc: dict[str, Any]) -> dict[str, Path]:
    """`<name>_metadata.json`, `<name>_report.html` and `<name>_report.md` in `directory`, each atomically.
    `build` calls this with the document from `collect_metadata` (its own keys under `extra`)."""
    from tinysched.files import write_atomic

    directory = Path(directory)
    return {
        "json": write_atomic(directory / f"{name}_metadata.json", metadata_json(check_metadata(doc))),
        "html": write_atomic(directory / f"{name}_report.html", render_html(doc)),
        "md": write_atomic(directory / f"{name}_report.md", render_markdown(doc)),
    }


def write_build_report(
    directory: str | Path,
    name: str,
    model: str | Path,
    planned: tuple[Graph, Any, Any],
    *,
    board: Any = None,
    size: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
    recompute_time_limit: float = 0.5,
) -> dict[str, Path]:
    """What `build` calls once its output is written: the one metadata document for this build
    (`<name>_metadata.json`) and the report rendered from it, beside the firmware.

    `planned` is build's (graph as placed, schedule or RecomputePlan, arena plan); `board` a
    boards.Board for an MCU build (None for host); `size` its firmware size report
    (SizeReport.to_json()); `extra` build's own keys, kept under "build"."""
    from tinysched.reader import read_model

    try:
        model_bytes = Path(model).read_bytes()
    except OSError as err:
        raise TinyschedError(f"{model}: cannot read: {err.strerror or err}") from None
    note = None
    if board is not None:
        note = "read from the ELF of this build" if size is not None else "firmware not built"
    doc = collect_metadata(
        read_model(model),
        board,
        model_bytes=model_bytes,
        planned=planned,
        size=size,
        size_note=note,
        recompute_time_limit=recompute_time_limit,
        alignment=planned[2].alignment,
        extra=extra,
    )
    return write_beside_firmware(directory, name, doc)


# ---- command line (registered by tinysched.cli) -----------------------------------------------------


def format_for(path: str | None, fmt: str | None) -> str:
    if fmt:
        return fmt
    suffix = Path(path).suffix.lower() if path else ""
    return {".md": "md", ".markdown": "md", ".json": "json"}.get(suffix, "html")


def cmd_report(args: Any) -> int:
    import sys

    from tinysched.files import write_atomic

    fmt = format_for(args.output, args.format)
    if args.recompute_time_limit is not None and not 0 <= args.recompute_time_limit < float("inf"):
        raise TinyschedError("--recompute-time-limit must be a non-negative number of seconds")
    if args.from_metadata:
        try:
            doc = check_metadata(json.loads(Path(args.model).read_text()))
        except (OSError, json.JSONDecodeError) as err:
            raise TinyschedError(f"{args.model}: cannot read metadata: {err}") from None
    else:
        if not args.board:
            raise TinyschedError("report needs --board B (see `tinysched boards`)")
        doc = metadata_for_model(
            args.model,
            args.board,
            build_firmware=False if args.no_build else None,
            measured_path=args.measured,
            stock_tflm=not args.no_tflm,
            recompute_ks=DEFAULT_RECOMPUTE_KS if args.recompute_tradeoff else None,
            recompute_time_limit=(
                DEFAULT_RECOMPUTE_TIME_LIMIT
                if args.recompute_time_limit is None
                else args.recompute_time_limit
            ),
            recompute_k=args.recompute,
            alignment=args.alignment,
            time_limit=args.time_limit,
        )
    text = render(doc, fmt)
    if args.output:
        write_atomic(args.output, text)
        verdict = doc["fit"]["text"] if doc["fit"] else "no board"
        print(
            f"wrote {fmt} report to {args.output}: arena {doc['arena']['arena_bytes']:,} B "
            f"(lower bound {doc['arena']['lower_bound_bytes']:,} B), {verdict}",
            file=sys.stderr,
        )
    else:
        sys.stdout.write(text)
    return 0


def register_commands(sub: Any) -> None:
    """Add `report` to the CLI's sub-command parser."""
    import argparse

    p = sub.add_parser(
        "report",
        help="one page: does the model fit the board, RAM and flash per region, why, what else saves",
    )
    p.add_argument("model", help=".tflite file (or, with --from-metadata, a <name>_metadata.json)")
    p.add_argument("--board", help="board name or alias (see `tinysched boards`)")
    p.add_argument("-o", "--output", help="write the report here (atomically); default: stdout")
    p.add_argument(
        "--format", choices=FORMATS, help="html (default, or from the -o suffix), md or json (the metadata)"
    )
    p.add_argument("--measured", metavar="FILE", help="the JSON of `tinysched measure --json` for this model")
    p.add_argument(
        "--recompute-tradeoff",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="peak against extra MACs for k = 0, 1, 2 (default on)",
    )
    p.add_argument(
        "--recompute-time-limit", type=float, metavar="S", help="seconds per k for the trade-off (default 1)"
    )
    p.add_argument(
        "--recompute", type=int, metavar="K", help="draw the recomputation plan with cap K on the timeline"
    )
    p.add_argument("--no-build", action="store_true", help="do not cross-compile; code size is then unknown")
    p.add_argument(
        "--no-tflm", action="store_true", help="do not run stock TFLM (tflite-micro) for its arena"
    )
    p.add_argument("--alignment", type=int, default=16, help="arena and tensor alignment (default 16)")
    p.add_argument(
        "--time-limit", type=float, default=1.0, metavar="S", help="planning time limit (default 1)"
    )
    p.add_argument(
        "--from-metadata",
        action="store_true",
        help="render MODEL, a metadata JSON written by build or report",
    )
    p.set_defaults(func=cmd_report)
