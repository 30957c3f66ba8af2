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
from tinysched.recompute import add_recompute_arguments, request_from_args
from tinysched.recompute import summary_lines as recompute_summary


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
        print(f"    tensor {t:>4} {tensor.nbytes:>10,} B  {tensor.dtype}{list(tensor.shape)}  {tensor.name}")
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
    }


class TerminalProgress:
    """Progress lines on stderr, only on a terminal and only once a solve has run for a second."""

    DELAY = 1.0

    def __init__(self) -> None:
        import threading
        import time

        self._clock = time.perf_counter
        self._started = self._clock()
        self._latest: str | None = None
        self._printed: str | None = None
        self._timer = threading.Timer(self.DELAY, self._flush) if sys.stderr.isatty() else None
        if self._timer is not None:
            self._timer.daemon = True
            self._timer.start()

    def __call__(self, message: str) -> None:
        self._latest = message
        if self._timer is not None and self._clock() - self._started >= self.DELAY:
            self._flush()

    def _flush(self) -> None:
        message = self._latest
        if message is not None and message != self._printed:
            self._printed = message
            elapsed = self._clock() - self._started
            print(f"tinysched: [{elapsed:5.1f} s] {message}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()


def _schedule_recompute(args: argparse.Namespace, graph: Graph, request: Any) -> int:
    """`schedule --recompute K`: the sequence (operators may repeat) and what it saves and costs."""
    from tinysched.files import write_atomic
    from tinysched.writer import rewrite_model

    rplan = request.plan(graph)
    if args.output:
        if rplan.recomputed:
            raise TinyschedError(
                "-o writes a .tflite, which runs each operator once: it cannot hold a sequence with "
                "recomputed operators (use `tinysched build --recompute K` for the generated C)"
            )
        model_bytes = Path(args.model).read_bytes()
        write_atomic(args.output, rewrite_model(model_bytes, order=rplan.sequence))
    if args.json:
        print_json(
            {"model": graph.source, "sha256": graph.sha256, "ops": len(graph.operators)} | rplan.as_json()
        )
        return 0
    print(f"model             {graph.source}  ({len(graph.operators)} operators)")
    if rplan.stored_order_peak_bytes is not None:
        print(f"stored order peak {format_bytes(rplan.stored_order_peak_bytes)}")
    print("\n".join(recompute_summary(rplan, format_bytes)))
    print(f"sequence          {' '.join(map(str, rplan.sequence))}")
    if args.output:
        print(f"\nwrote the reordered model to {args.output}")
    return 0


def cmd_schedule(args: argparse.Namespace) -> int:
    from tinysched.files import write_atomic
    from tinysched.scheduler import schedule
    from tinysched.writer import rewrite_model

    limit = args.time_limit
    if not 0 <= limit < float("inf"):
        raise TinyschedError(f"--time-limit must be a non-negative number of seconds, got {limit}")
    graph = read_model(args.model)
    request = request_from_args(args, limit)
    if request is not None:
        return _schedule_recompute(args, graph, request)
    progress = TerminalProgress()
    try:
        sched = schedule(graph, time_limit=limit, progress=progress)
    finally:
        progress.close()
    if args.output:
        try:
            model_bytes = Path(args.model).read_bytes()
        except OSError as err:
            raise TinyschedError(f"{args.model}: cannot read: {err.strerror or err}") from None
        write_atomic(args.output, rewrite_model(model_bytes, order=sched.order))
    if args.json:
        print_json(schedule_json(graph, sched))
        return 0
    saving = sched.stored_order_peak_bytes - sched.peak_bytes
    share = 100 * saving / sched.stored_order_peak_bytes if sched.stored_order_peak_bytes else 0.0
    print(f"model             {graph.source}  ({len(graph.operators)} operators)")
    print(f"stored order peak {format_bytes(sched.stored_order_peak_bytes)}")
    print(f"best order peak   {format_bytes(sched.peak_bytes)}  (found by {sched.method})")
    print(f"saving            {format_bytes(saving)}  ({share:.1f}%)")
    print(f"lower bound       {format_bytes(sched.lower_bound_bytes)}")
    if sched.certified:
        cert = sched.certificate
        witness = ", ".join(f"{k} {v}" for k, v in cert.witness.items())
        print(f"certified         optimal: {cert.kind} ({witness})")
    else:
        gap = f"{format_bytes(sched.gap_bytes)} ({sched.gap_percent:.2f}% of the peak)"
        print(f"certified         no: gap {gap}")
    print(f"time              {sched.seconds:.3f} s")
    if args.output:
        print(f"\nwrote the reordered model to {args.output}")
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
    graph = original = read_model(args.model)
    folding = None
    if not args.tflm:  # --tflm reorders the file's own operators, so it plans them all
        from tinysched.fold import fold_constants

        folding = fold_constants(graph)
        graph = folding.graph
    request = request_from_args(args, DEFAULT_SCHEDULE_TIME_LIMIT if limit is None else limit)
    if request is not None:  # --recompute K: the arena places each execution's instances
        from tinysched.arena import plan_arena

        if args.tflm:
            raise TinyschedError("--tflm cannot carry --recompute: TFLM runs each operator once")
        sched = request.plan(graph)
        plan = plan_arena(
            graph, sched.sequence, args.alignment, DEFAULT_TIME_LIMIT if limit is None else limit
        )
    else:
        sched, plan = plan_model(
            graph,
            alignment=args.alignment,
            time_limit=DEFAULT_TIME_LIMIT if limit is None else limit,
            schedule_time_limit=DEFAULT_SCHEDULE_TIME_LIMIT if limit is None else limit,
        )
    check_plan(graph, plan)
    # Stock TFLM runs every operator of the file, foldable ones included.
    stock = greedy_plan(original, original.stored_order(), STOCK_TFLM_PLACER, args.alignment)
    payload = plan_json(graph, sched, plan, stock)
    if request is not None:
        payload.update({k: v for k, v in sched.as_json().items() if k not in payload})
        for entry, placement in zip(payload["tensors"], plan.buffers, strict=True):
            entry["instance"] = placement.instance
    if folding is not None:
        from tinysched.fold import alias_saving

        payload["folded_operators"] = folding.count
        payload["folded_operator_indices"] = list(folding.folded)
        if not plan.repeats:
            payload["reshape_alias"] = alias_saving(graph, plan.order).as_json()
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
    if request is not None:
        print("\n".join(recompute_summary(sched, format_bytes)))
    if folding is not None:
        print(f"folding      {folding.summary()}; the order, plan and certificate are for the folded graph")
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
    if folding is not None and "reshape_alias" in payload:
        alias = payload["reshape_alias"]
        print(
            f"{'if reshapes aliased':22}{alias['aliased_peak_bytes']:>12,}  peak of this order if "
            f"{len(alias['operators'])} RESHAPE/SQUEEZE/EXPAND_DIMS shared their input's bytes "
            f"(-{alias['saving_bytes']:,} B; not in the plan)"
        )
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
        "--time-limit", type=float, default=5.0, metavar="S", help="seconds for the whole search (default 5)"
    )
    sched.add_argument(
        "-o", "--output", help="write the model with its operators in the new order (atomically)"
    )
    add_recompute_arguments(sched)
    sched.set_defaults(func=cmd_schedule)

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
    add_recompute_arguments(plan)
    plan.set_defaults(func=cmd_plan)

    from tinysched.hostbuild import register_commands as register_codegen_commands

    register_codegen_commands(sub)  # build, verify

    from tinysched.device import add_commands as register_device_commands

    register_device_commands(sub)  # boards, measure

    from tinysched.report import register_commands as register_report_commands

    register_report_commands(sub)  # report
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
