"""`tinysched` command line: one sub-command per stage of the pipeline.

Every user-fixable problem arrives here as a TinyschedError and leaves as one line on stderr with exit
code 2; nothing the user did can produce a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tinysched import __version__
from tinysched.errors import TinyschedError
from tinysched.graph import Graph
from tinysched.memory import MemoryProfile, profile
from tinysched.reader import read_model


def format_bytes(n: int) -> str:
    return f"{n:,} B" if n < 1024 else f"{n:,} B ({n / 1024:.1f} KiB)"


def print_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2)
    sys.stdout.write("\n")


def read_order_file(path: str | Path) -> list[int]:
    """A JSON list of operator indices, or an object with an `order` list (as `schedule --json` prints)."""
    try:
        payload = json.loads(Path(path).read_text())
    except OSError as err:
        raise TinyschedError(f"{path}: cannot read order file: {err.strerror or err}") from None
    except json.JSONDecodeError as err:
        raise TinyschedError(f"{path}: not JSON: {err.msg} at line {err.lineno}") from None
    if isinstance(payload, dict):
        payload = payload.get("order")
    if not isinstance(payload, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in payload
    ):
        raise TinyschedError(f"{path}: an order is a JSON list of operator indices")
    return payload


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
    graph = read_model(args.model)
    stored = profile(graph)
    prof = profile(graph, read_order_file(args.order)) if args.order else stored
    if args.json:
        print_json(analysis_json(graph, prof, stored.peak_bytes))
        return 0
    print(f"model       {graph.source}  (sha256 {graph.sha256[:16]}...)")
    if graph.description:
        print(f"description {graph.description}")
    print(f"operators   {len(graph.operators)}: "
          + ", ".join(f"{k} x{v}" for k, v in graph.op_types.items()))
    print(f"order       {'from ' + args.order if args.order else 'stored order'}")
    print()
    print(f"{'step':>4} {'op':>4} {'type':<28} {'live bytes':>12}  born / freed")
    for s in prof.steps:
        mark = " <- peak" if s.step == prof.peak_step else ""
        print(f"{s.step:>4} {s.op:>4} {graph.operators[s.op].opcode:<28} {s.live_bytes:>12,}  "
              f"+{list(s.born)} -{list(s.freed)}{mark}")
    print()
    print(f"peak (activations, rw)    {format_bytes(prof.peak_bytes)} at step {prof.peak_step}")
    for t in prof.peak_tensors:
        tensor = graph.tensors[t]
        print(f"    tensor {t:>4} {tensor.nbytes:>10,} B  {tensor.dtype}{list(tensor.shape)}  {tensor.name}")
    if args.order:
        print(f"stored-order peak         {format_bytes(stored.peak_bytes)}")
    print(f"weights (ro, flash)       {format_bytes(graph.weights_bytes)}")
    print(f"persistent state          {format_bytes(graph.persistent_bytes)}")
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
    from tinysched.arena import (
        DEFAULT_SCHEDULE_TIME_LIMIT,
        DEFAULT_TIME_LIMIT,
        STOCK_TFLM_PLACER,
        greedy_plan,
        plan_model,
    )
    from tinysched.check import check_plan
    from tinysched.files import write_atomic

    if args.tflm and not args.output:
        raise TinyschedError("--tflm writes a model: give its path with -o OUT.tflite")
    limit = args.time_limit
    if limit is not None and not limit >= 0:
        raise TinyschedError(f"--time-limit must be a non-negative number of seconds, got {limit}")
    graph = read_model(args.model)
    sched, plan = plan_model(
        graph,
        alignment=args.alignment,
        time_limit=DEFAULT_TIME_LIMIT if limit is None else limit,
        schedule_time_limit=DEFAULT_SCHEDULE_TIME_LIMIT if limit is None else limit,
    )
    check_plan(graph, plan)
    stock = greedy_plan(graph, graph.stored_order(), STOCK_TFLM_PLACER, args.alignment)
    payload = plan_json(graph, sched, plan, stock)
    if args.tflm:
        from tinysched.tflm import SCRATCH_KERNELS, tflm_model

        write_atomic(args.output, tflm_model(Path(args.model).read_bytes(), plan))
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
    print(f"model        {graph.source}")
    print(
        f"order        {certified}: peak {format_bytes(sched.peak_bytes)}, "
        f"lower bound {format_bytes(sched.lower_bound_bytes)} ({sched.method}, {sched.seconds:.2f} s)"
    )
    print(f"stored order peak {format_bytes(sched.stored_order_peak_bytes)}")
    print()
    print(f"{'':22}{'bytes':>12}")
    print(f"{'tensor-model peak':22}{plan.peak_bytes:>12,}  live bytes at the worst step, unaligned")
    print(
        f"{'aligned lower bound':22}{plan.lower_bound_bytes:>12,}  peak of live sizes rounded up to "
        f"{plan.alignment} B"
    )
    print(f"{'tinysched arena':22}{plan.arena_bytes:>12,}  {proof} ({plan.method}, {plan.seconds:.3f} s)")
    print(f"{'stock-TFLM-like':22}{stock.arena_bytes:>12,}  stored order, TFLM greedy-by-size placement")
    if stock.arena_bytes:
        saved = stock.arena_bytes - plan.arena_bytes
        print(f"{'saved':22}{saved:>12,}  {100 * saved / stock.arena_bytes:.1f}% of the stock arena")
    if args.output:
        what = "model with OfflineMemoryAllocation" if args.tflm else "plan"
        print(f"\nwrote {what} to {args.output}")
    return 0


# ---- entry point -------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tinysched",
        description="Certified peak-memory deployment of int8 TFLite models on microcontrollers.",
    )
    parser.add_argument("--version", action="version", version=f"tinysched {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    analyze = sub.add_parser("analyze", help="per-step live memory of a model under an order")
    analyze.add_argument("model", help=".tflite file")
    analyze.add_argument("--order", help="JSON list of operator indices to evaluate instead of the stored order")
    analyze.add_argument("--json", action="store_true", help="print one JSON object")
    analyze.set_defaults(func=cmd_analyze)

    plan = sub.add_parser("plan", help="lowest-peak order plus a fixed offset for every tensor in one arena")
    plan.add_argument("model", help=".tflite file")
    plan.add_argument("--json", action="store_true", help="print one JSON object")
    plan.add_argument("-o", "--output", help="write the plan as JSON (with --tflm: the model) atomically")
    plan.add_argument(
        "--alignment", type=int, default=16, help="tensor offset alignment in bytes (default 16)"
    )
    plan.add_argument(
        "--time-limit",
        type=float,
        metavar="S",
        help="seconds for scheduling and for placement each (default 5 and 1)",
    )
    plan.add_argument(
        "--tflm",
        action="store_true",
        help="write the reordered model with an OfflineMemoryAllocation entry for stock TFLM",
    )
    plan.set_defaults(func=cmd_plan)

    from tinysched.hostbuild import register_commands as register_codegen_commands

    register_codegen_commands(sub)  # build, verify

    from tinysched.device import add_commands as register_device_commands

    register_device_commands(sub)  # boards, measure
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except TinyschedError as err:
        print(f"tinysched: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tinysched: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
