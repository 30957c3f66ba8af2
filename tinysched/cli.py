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
