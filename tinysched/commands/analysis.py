"""`analyze`, `schedule` and `plan`: the model's memory, its best order, and the arena."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from tinysched.arena.placement import STOCK_TFLM_PLACER, greedy_plan
from tinysched.commands.common import (
    TerminalProgress,
    certificate_line,
    format_bytes,
    print_json,
    read_bytes,
    read_checked_model,
    read_order_file,
    shown,
)
from tinysched.errors import TinyschedError
from tinysched.files import write_atomic
from tinysched.memory.tensor import MemoryProfile, alias_saving, profile
from tinysched.model.graph import Graph
from tinysched.model.writer import rewrite_model
from tinysched.order.recompute import summary_lines as recompute_summary
from tinysched.order.scheduler import schedule
from tinysched.pipeline import PlanOptions, add_plan_arguments, options_from_args, tensor_model_optimum
from tinysched.pipeline import plan as pipeline_plan
from tinysched.report.format import headline
from tinysched.text import printable

# ---- analyze -----------------------------------------------------------------------------------


def analysis_json(graph: Graph, prof: MemoryProfile, stored_peak: int) -> dict[str, Any]:
    return {
        "model": graph.source,
        "sha256": graph.sha256,
        "ops": len(graph.operators),
        "order": list(prof.order),
        "peak_bytes": prof.peak_bytes,
        "peak_step": prof.peak_step,
        "peak_tensors": list(prof.peak_tensors),
        "stored_order_peak_bytes": stored_peak,
        "persistent_bytes": graph.persistent_bytes,
        "weights_bytes": graph.weights_bytes,
        "op_types": graph.op_types,
        "steps": [
            {
                "step": s.step,
                "op": s.op,
                "type": graph.operators[s.op].opcode,
                "live_bytes": s.live_bytes,
                "born": list(s.born),
                "freed": list(s.freed),
            }
            for s in prof.steps
        ],
    }


def cmd_analyze(args: argparse.Namespace) -> int:
    graph = read_checked_model(args.model)
    stored = profile(graph)
    prof = profile(graph, read_order_file(args.order)) if args.order else stored
    if args.json:
        print_json(analysis_json(graph, prof, stored.peak_bytes))
        return 0
    print(f"model       {shown(graph.source)}  (sha256 {graph.sha256[:16]}...)")
    if graph.description:
        print(f"description {printable(graph.description, 200)}")
    print(f"operators   {len(graph.operators)}: " + ", ".join(f"{k} x{v}" for k, v in graph.op_types.items()))
    print(f"order       {'from ' + args.order if args.order else 'stored order'}")
    print()
    print(f"{'step':>4} {'op':>4} {'type':<28} {'live bytes':>12}  born / freed")
    for s in prof.steps:
        mark = " <- peak" if s.step == prof.peak_step else ""
        print(
            f"{s.step:>4} {s.op:>4} {graph.operators[s.op].opcode:<28} {s.live_bytes:>12,}  "
            f"+{list(s.born)} -{list(s.freed)}{mark}"
        )
    print()
    print(f"peak (activations, rw)    {format_bytes(prof.peak_bytes)} at step {prof.peak_step}")
    for t in prof.peak_tensors:
        tensor = graph.tensors[t]
        print(
            f"    tensor {t:>4} {tensor.nbytes:>10,} B  {tensor.dtype}{list(tensor.shape)}  {printable(tensor.name)}"
        )
    if args.order:
        print(f"stored-order peak         {format_bytes(stored.peak_bytes)}")
    print(f"weights (ro, flash)       {format_bytes(graph.weights_bytes)}")
    print(f"persistent state          {format_bytes(graph.persistent_bytes)}")
    return 0


# ---- schedule ----------------------------------------------------------------------------------


def schedule_json(graph: Graph, sched: Any) -> dict[str, Any]:
    """`schedule --json`: the order (operator indices of the input file) and its proof."""
    cert = sched.certificate
    return {
        "model": graph.source,
        "sha256": graph.sha256,
        "ops": len(graph.operators),
        "order": list(sched.order),
        "peak_bytes": sched.peak_bytes,
        "stored_order_peak_bytes": sched.stored_order_peak_bytes,
        "saving_bytes": sched.stored_order_peak_bytes - sched.peak_bytes,
        "lower_bound_bytes": sched.lower_bound_bytes,
        "gap_bytes": sched.gap_bytes,
        "gap_percent": round(sched.gap_percent, 4),
        "certified": sched.certified,
        "certificate": (
            {"kind": cert.kind, "lower_bound_bytes": cert.lower_bound_bytes, "witness": cert.witness}
            if cert
            else None
        ),
        "method": sched.method,
        "seconds": round(sched.seconds, 4),
        "memory_model": sched.memory_model,
    }


def _schedule_recompute(args: argparse.Namespace, graph: Graph, options: PlanOptions) -> int:
    """`schedule --recompute K`: the sequence (operators may repeat) and what it saves and costs."""
    assert options.recompute is not None
    rplan = options.recompute.plan(graph, options.time_limit)
    if args.output:
        if rplan.recomputed:
            raise TinyschedError(
                "-o writes a .tflite, which runs each operator once: it cannot hold a sequence with "
                "recomputed operators (use `tinysched build --recompute K` for the generated C)"
            )
        write_atomic(args.output, rewrite_model(read_bytes(args.model), order=rplan.sequence))
    if args.json:
        print_json(
            {"model": graph.source, "sha256": graph.sha256, "ops": len(graph.operators)} | rplan.as_json()
        )
        return 0
    print(f"model             {shown(graph.source)}  ({len(graph.operators)} operators)")
    if rplan.stored_order_peak_bytes is not None:
        print(f"stored order peak {format_bytes(rplan.stored_order_peak_bytes)}")
    print("\n".join(recompute_summary(rplan, format_bytes)))
    print(f"sequence          {' '.join(map(str, rplan.sequence))}")
    if args.output:
        print(f"\nwrote the reordered model to {shown(args.output)}")
    return 0


def cmd_schedule(args: argparse.Namespace) -> int:
    """Scheduling only: the whole --time-limit goes to the order search."""
    options = options_from_args(args)
    graph = read_checked_model(args.model)
    if options.recomputing:
        return _schedule_recompute(args, graph, options)
    progress = TerminalProgress()
    try:
        sched = schedule(graph, time_limit=options.time_limit, progress=progress)
    finally:
        progress.close()
    if args.output:
        write_atomic(args.output, rewrite_model(read_bytes(args.model), order=sched.order))
    if args.json:
        print_json(schedule_json(graph, sched))
        return 0
    saving = sched.stored_order_peak_bytes - sched.peak_bytes
    share = 100 * saving / sched.stored_order_peak_bytes if sched.stored_order_peak_bytes else 0.0
    print(f"model             {shown(graph.source)}  ({len(graph.operators)} operators)")
    print(
        "memory model      tensor (the file's own operators, each tensor its own bytes, for any "
        "runtime; `plan` and `build` use the refined model)"
    )
    print(f"stored order peak {format_bytes(sched.stored_order_peak_bytes)}")
    print(f"best order peak   {format_bytes(sched.peak_bytes)}  (found by {sched.method})")
    print(f"saving            {format_bytes(saving)}  ({share:.1f}%)")
    print(f"lower bound       {format_bytes(sched.lower_bound_bytes)}")
    print(f"certificate       {certificate_line(sched, graph)}")
    print(f"time              {sched.seconds:.3f} s")
    if args.output:
        print(f"\nwrote the reordered model to {shown(args.output)}")
    return 0


# ---- plan --------------------------------------------------------------------------------------


def plan_json(graph: Graph, sched: Any, plan: Any, stock: Any) -> dict[str, Any]:
    """`plan --json`: the schedule, the placement and every activation tensor's offset."""
    return {
        "model": graph.source,
        "sha256": graph.sha256,
        "order": list(plan.order),
        "peak_bytes": sched.peak_bytes,
        "lower_bound_bytes": sched.lower_bound_bytes,
        "certified": sched.certified,
        "stored_order_peak_bytes": sched.stored_order_peak_bytes,
        "schedule_method": sched.method,
        "schedule_seconds": round(sched.seconds, 4),
        "alignment": plan.alignment,
        "arena_bytes": plan.arena_bytes,
        "arena_lower_bound_bytes": plan.lower_bound_bytes,
        "arena_optimal": plan.optimal,
        "placement_method": plan.method,
        "placement_seconds": round(plan.seconds, 4),
        "stock_tflm_greedy_arena_bytes": stock.arena_bytes,
        "tensors": [p.as_json() for p in plan.buffers],
    }


def cmd_plan(args: argparse.Namespace) -> int:
    if args.tflm and not args.output:
        raise TinyschedError("--tflm writes a model: give its path with -o OUT.tflite")
    if args.tflm_header and not args.tflm:
        raise TinyschedError("--tflm-header goes with --tflm (the arena for the model it writes)")
    # --tflm reorders the file's own operators, so it plans them all (no folding)
    options = options_from_args(args, fold=not args.tflm)
    if args.tflm and options.recomputing:
        raise TinyschedError("--tflm cannot carry --recompute: TFLM runs each operator once")
    if args.tflm and options.io != "model":
        raise TinyschedError("--tflm cannot carry --io int8: TFLM runs the model's own interface")
    if args.tflm and options.stream_input:
        raise TinyschedError("--tflm cannot carry --stream-input: TFLM takes the whole input")
    if args.tflm:
        options = tflm_options(options, explicit=getattr(args, "memory_model", None))
    original = read_checked_model(args.model)
    planned = pipeline_plan(original, options)
    graph, plan = planned.graph, planned.arena
    sched = planned.recompute if planned.recompute is not None else planned.schedule
    request = planned.recompute
    folding = planned.folding if options.fold else None
    # Stock TFLM runs every operator of the file, foldable ones included.
    stock = greedy_plan(original, original.stored_order(), STOCK_TFLM_PLACER, options.alignment)
    payload = plan_json(graph, sched, plan, stock)
    payload["memory_model"] = planned.memory_model
    payload["memory_model_asked"] = options.memory_model
    payload["memory_model_note"] = options.memory_model_note
    refined = planned.memory_model != "tensor"
    whole = tensor_model_optimum(planned, min(options.time_limit, 5.0)) if refined else None
    if whole is not None:
        payload["tensor_model_optimum_bytes"] = whole.peak_bytes
        payload["tensor_model_optimum_certified"] = whole.certified
    if request is not None:
        payload.update({k: v for k, v in sched.as_json().items() if k not in payload})
        for entry, placement in zip(payload["tensors"], plan.buffers, strict=True):
            entry["instance"] = placement.instance
    # `order` and the tensors' steps are over the planned graph's operators; these keys say which
    # operators of the input model each planned operator is (docs/report-schema.md, "plan --json").
    payload["model_order"] = planned.model_order(plan.order)
    payload["operator_model_ops"] = [list(ops) for ops in planned.operator_sources]
    payload["rewrites"] = planned.rewrites_json()
    payload["rewritten_operator_indices"] = list(planned.rewritten_operators)
    payload["io"] = planned.interface.as_json()
    payload["kernel_variants"] = planned.variants_json()
    payload["streams"] = planned.streams_json()
    payload["stream_macs"] = planned.stream_macs_json()
    payload["certificate_scope"] = planned.certificate_scope()
    payload["arena_without_streams_bytes"] = planned.unstreamed_arena_bytes
    # --stream-input: the arena both ways, and why the input stays whole when it does (else absent)
    if planned.input_streaming is not None:
        payload["input_streaming"] = planned.input_streaming.as_json()
    payload["time_limit_shortfalls"] = planned.shortfalls_json()
    payload["wide_kernels"] = planned.wide_json()
    if planned.recompute is None and planned.codegen_note is None:
        payload["instructions_estimate"] = planned.instructions_estimate
    payload["arena_budget"] = planned.budget.as_json() if planned.budget is not None else None
    if planned.recompute is None and planned.codegen_note is None:
        for r in payload["streams"]:  # the chain's estimate against its operators whole
            streamed, unstreamed = planned.stream_overhead(r["operator"]) or (0, 0)
            r["instructions_estimate"], r["unstreamed_estimate"] = streamed, unstreamed
    if folding is not None:
        payload["folded_operators"] = folding.count
        payload["folded_operator_indices"] = list(folding.folded)
        if not plan.repeats:
            payload["reshape_alias"] = alias_saving(graph, plan.order).as_json()
    if args.tflm:
        from tinysched.arena.tflm import SCRATCH_KERNELS, tflm_model

        rewritten = tflm_model(read_bytes(args.model), plan)
        write_atomic(args.output, rewritten)
        payload["tflm_arena"] = tflm_arena_size(rewritten, plan.arena_bytes)
        if args.tflm_header:
            write_atomic(args.tflm_header, tflm_header(Path(args.model).stem, payload["tflm_arena"]))
        scratch = sorted(SCRATCH_KERNELS & set(graph.op_types))
        if scratch:
            print(
                f"tinysched: note: {', '.join(scratch)} kernels request scratch buffers, which TFLM "
                "plans online around this plan: its arena head can exceed arena_bytes",
                file=sys.stderr,
            )
    elif args.output:
        write_atomic(args.output, json.dumps(payload, indent=2) + "\n")
    if args.json:
        print_json(payload)
        return 0
    certified = "certified optimal" if sched.certified else "not proven optimal"
    proof = "proven optimal for this order" if plan.optimal else "not proven optimal (time limit)"
    print(f"model        {shown(graph.source)}")
    print(
        headline(
            arena_bytes=plan.arena_bytes,
            arena_lower_bound_bytes=plan.lower_bound_bytes,
            order_certified=sched.certified,
        )
    )
    print(f"memory model {memory_model_line(planned)}")
    print(
        f"order        {certified}: peak {format_bytes(sched.peak_bytes)}, "
        f"lower bound {format_bytes(sched.lower_bound_bytes)} ({sched.method}, {sched.seconds:.2f} s)"
    )
    if planned.recompute is None:
        print(f"certificate  {certificate_line(sched, graph, planned)}")
        if planned.streams_json():  # what it covers: the chains are fixed (issue 33)
            print(f"    it covers {planned.certificate_scope()}")
            saved = (planned.unstreamed_arena_bytes or plan.arena_bytes) - plan.arena_bytes
            print(
                f"    the streams save {format_bytes(saved)}: {format_bytes(planned.unstreamed_arena_bytes or 0)} "
                "with no chain streamed"
            )
    print(f"stored order peak {format_bytes(sched.stored_order_peak_bytes)}")
    if request is not None:
        print("\n".join(recompute_summary(request, format_bytes)))
    if folding is not None and folding.count:
        print(f"folding      {folding.summary()}; the order, plan and certificate are for the folded graph")
    if planned.rewriting.count:
        print(f"rewrites     {planned.rewriting.summary()}; the plan is for the rewritten graph")
        for r in payload["rewrites"]:
            print(
                f"    model operators {r['model_ops']} -> operator {r['operator']}: {r['detail']} "
                f"(removes {r['removed_bytes']:,} B of tensors)"
            )
    if options.io != "model" or planned.interface.retyping is not None:
        print(f"io           {planned.interface.summary()}")
        for edge in planned.interface.edges:
            print(f"    {edge.line()}")
    if planned.memory_model != "tensor":
        print(f"kernels      {planned.variants_summary()}")
    if planned.stream_macs_summary() is not None:
        print(f"stream MACs  {planned.stream_macs_summary()}")
    if planned.stream_costs_summary() is not None:
        print(f"stream cost  {planned.stream_costs_summary()}")
    if planned.budget is not None:
        print(f"budget       {planned.budget.summary()}")
    if planned.input_streaming is not None:
        print(f"input        {planned.input_streaming.summary()}")
    if planned.shortfalls_summary() is not None:
        print(f"time limit   {planned.shortfalls_summary()}")
    print()
    print(f"{'':22}{'bytes':>12}")
    label = "refined-model peak" if refined else "tensor-model peak"
    print(f"{label:22}{plan.peak_bytes:>12,}  live bytes at the worst step, unaligned")
    if whole is not None:
        print(
            f"{'tensor-model optimum':22}{whole.peak_bytes:>12,}  the least peak of any order with whole, "
            f"separate tensors ({'certified' if whole.certified else 'not proven'}); the refined model lets "
            "outputs overlap their dying inputs as the kernels' read/write order allows"
        )
    print(
        f"{'aligned lower bound':22}{plan.lower_bound_bytes:>12,}  peak of live sizes rounded up to "
        f"{plan.alignment} B"
    )
    print(f"{'tinysched arena':22}{plan.arena_bytes:>12,}  {proof} ({plan.method}, {plan.seconds:.3f} s)")
    streaming = planned.input_streaming
    if streaming is not None:
        print(
            f"{'  with whole input':22}{streaming.whole_input_arena_bytes:>12,}  the same flags without "
            f"--stream-input (lower bound {streaming.whole_input_lower_bound_bytes:,} B)"
        )
        if streaming.streamed_arena_bytes is not None:
            print(
                f"{'  with input streamed':22}{streaming.streamed_arena_bytes:>12,}  the input's rows through a "
                f"window (lower bound {streaming.streamed_lower_bound_bytes:,} B)"
            )
    print(f"{'stock-TFLM-like':22}{stock.arena_bytes:>12,}  stored order, TFLM greedy-by-size placement")
    if stock.arena_bytes:
        saved = stock.arena_bytes - plan.arena_bytes
        print(f"{'saved':22}{saved:>12,}  {100 * saved / stock.arena_bytes:.1f}% of the stock arena")
    if folding is not None and "reshape_alias" in payload and payload["reshape_alias"]["saving_bytes"]:
        alias = payload["reshape_alias"]
        print(
            f"{'if reshapes aliased':22}{alias['aliased_peak_bytes']:>12,}  peak of this order if "
            f"{len(alias['operators'])} RESHAPE/SQUEEZE/EXPAND_DIMS shared their input's bytes "
            f"(-{alias['saving_bytes']:,} B; not in the plan)"
        )
    if args.tflm:
        print(tflm_arena_line(payload["tflm_arena"]))
    if args.output:
        what = "model with OfflineMemoryAllocation" if args.tflm else "plan"
        print(f"\nwrote {what} to {shown(args.output)}")
    if args.tflm and args.tflm_header:
        print(f"wrote the arena size for TFLM's MicroInterpreter to {shown(args.tflm_header)}")
    return 0


def memory_model_line(planned: Any) -> str:
    """Which memory model the plan is in, and why when it is not the one asked for."""
    name = planned.memory_model
    what = {
        "refined": "views, split outputs and in-place concatenations share one buffer, outputs overlap dying "
        "inputs as the kernels allow",
        "tensor": "every tensor its own bytes for its whole lifetime",
    }.get(name, name)
    note = planned.options.memory_model_note
    if note is None and name != planned.options.planned_memory_model:
        note = (
            f"{planned.options.planned_memory_model} asked: this graph has no views or overlaps, so both "
            "models give this plan"
        )
    return f"{name} ({what})" + (f"; {note}" if note else "")


def tflm_options(options: PlanOptions, explicit: str | None) -> PlanOptions:
    """`plan --tflm` plans in the tensor model: stock TFLM's kernels do not follow tinysched's
    read/write order, so an output over its dying input would be corrupted. Said in one line when
    the user asked for another model."""
    if explicit is not None and explicit != "tensor":
        print(
            f"tinysched: note: --tflm plans in the tensor memory model, not {explicit}: stock TFLM's "
            "kernels do not follow tinysched's read/write order",
            file=sys.stderr,
        )
    return replace(options, memory_model="tensor")


def tflm_arena_size(model_bytes: bytes, head_bytes: int) -> dict[str, Any]:
    """The arena to give TFLM's MicroInterpreter for the rewritten model: its head (this plan) plus
    the tail (persistent: interpreter structures, kernel data) that the tflite-micro interpreter
    allocates for it on this host."""
    from tinysched.arena.tflm import run_tflm
    from tinysched.device.reference import random_inputs

    try:
        run = run_tflm(model_bytes, random_inputs(model_bytes, seed=0, count=1)[0], timeout=120.0)
    except TinyschedError as err:
        return {"available": False, "reason": str(err), "head_bytes": head_bytes}
    return {
        "available": True,
        "head_bytes": run.head_bytes,
        "tail_bytes": run.tail_bytes,
        "total_bytes": run.total_bytes,
        "pointer_bytes": 8,
        "source": "tflite-micro interpreter (PyPI) on this 64-bit host",
    }


def tflm_arena_line(arena: dict[str, Any]) -> str:
    if not arena["available"]:
        return (
            f"TFLM arena   head {arena['head_bytes']:,} B from this plan; the tail is unknown: "
            f"{arena['reason']}"
        )
    return (
        f"TFLM arena   give MicroInterpreter {arena['total_bytes']:,} B: head {arena['head_bytes']:,} B "
        f"(this plan) + tail {arena['tail_bytes']:,} B measured by the tflite-micro interpreter on this "
        "64-bit host; with 4-byte pointers (32-bit MCUs) the tail is smaller, so this is an upper bound"
    )


def tflm_header(name: str, arena: dict[str, Any]) -> str:
    from tinysched.codegen import c_comment, c_identifier

    macro = c_identifier(name).upper() + "_TFLM_ARENA_BYTES"
    total = arena.get("total_bytes", arena["head_bytes"])
    how = (
        f"head {arena['head_bytes']} B from tinysched's plan + tail {arena['tail_bytes']} B measured by the "
        "tflite-micro interpreter on a 64-bit host (an upper bound for 32-bit targets)"
        if arena["available"]
        else f"head {arena['head_bytes']} B from tinysched's plan only (tail unknown)"
    )
    guard = c_identifier(name).upper() + "_TFLM_ARENA_H"
    return (
        f"/* Generated by tinysched for {c_comment(name, 80)}: the tensor arena for TFLM's MicroInterpreter.\n"
        f" * {how}. */\n#ifndef {guard}\n#define {guard}\n#define {macro} {total}u\n#endif\n"
    )


def register(sub: Any) -> None:
    analyze = sub.add_parser("analyze", help="per-step live memory of a model under an order")
    analyze.add_argument("model", help=".tflite file")
    analyze.add_argument(
        "--order", help="JSON list of operator indices to evaluate instead of the stored order"
    )
    analyze.add_argument("--json", action="store_true", help="print one JSON object")
    analyze.set_defaults(func=cmd_analyze)

    sched = sub.add_parser(
        "schedule", help="lowest-peak operator order, with a proof of optimality or the gap"
    )
    sched.add_argument("model", help=".tflite file")
    sched.add_argument("--json", action="store_true", help="print one JSON object")
    sched.add_argument(
        "-o", "--output", help="write the model with its operators in the new order (atomically)"
    )
    add_plan_arguments(sched, placement=False)
    sched.set_defaults(func=cmd_schedule)

    plan = sub.add_parser("plan", help="lowest-peak order plus a fixed offset for every tensor in one arena")
    plan.add_argument("model", help=".tflite file")
    plan.add_argument("--json", action="store_true", help="print one JSON object")
    plan.add_argument("-o", "--output", help="write the plan as JSON (with --tflm: the model) atomically")
    plan.add_argument(
        "--tflm",
        action="store_true",
        help="write the reordered model with an OfflineMemoryAllocation entry for stock TFLM",
    )
    plan.add_argument(
        "--tflm-header",
        metavar="FILE",
        help="with --tflm: also write a C header defining the arena size to give TFLM's MicroInterpreter",
    )
    add_plan_arguments(plan)
    plan.set_defaults(func=cmd_plan)
