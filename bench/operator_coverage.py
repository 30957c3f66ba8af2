"""Operator coverage of the code generator on the shared models: which build and verify bit-exact on
the host, what compile-time folding removed, and which boards' memories they fit.

    PYTHONPATH=. python bench/operator_coverage.py [--models DIR] [--inputs N] [--markdown]

For every shared model: `check_supported` (the one-line refusal if not), then `tinysched verify
--board host` (seeded inputs, every output byte against ai-edge-litert's BUILTIN_REF kernels), the
number of operators folded at compile time, the planned arena, the persistent state of stateful
operators and the constant data. A model "fits" a board when its arena fits the board's arena region,
its state the data region (both, if they are one region) and its weights the region holding read-only
data (code, stack and the harness are not counted: `tinysched build --board B` gives the exact
figure).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tinysched.boards import all_boards  # noqa: E402
from tinysched.codegen import check_supported, state_layout  # noqa: E402
from tinysched.device.verify import verify  # noqa: E402
from tinysched.errors import TinyschedError  # noqa: E402
from tinysched.memory.tensor import alias_saving  # noqa: E402
from tinysched.model.fold import fold_constants  # noqa: E402
from tinysched.model.reader import read_model  # noqa: E402
from tinysched.pipeline import generate, plan  # noqa: E402


def coverage(path: Path, n_inputs: int) -> dict:
    graph = read_model(path)
    row: dict = {"model": path.stem, "ops": len(graph.operators)}
    folding = fold_constants(graph)
    row["folded"] = folding.count
    try:
        check_supported(folding.graph)
    except TinyschedError as err:
        row["status"] = "refused"
        row["reason"] = str(err).split(";")[0]
        return row
    planned = plan(graph)
    module = generate(planned)
    arena = planned.arena
    row["arena_bytes"] = arena.arena_bytes
    row["weights_bytes"] = module.weights_bytes
    row["state_bytes"] = state_bytes = state_layout(planned.graph, arena.alignment)[1]
    row["reshape_alias_saving_bytes"] = alias_saving(planned.graph, arena.order).saving_bytes
    result = verify(path, planned, module, n_inputs=n_inputs, seed=0)
    row["status"] = "bit-exact" if result.outputs_match else f"{len(result.mismatches)} outputs differ"
    row["reference"] = result.reference
    row["fits"] = [
        b.name
        for b in all_boards()
        if _fits_ram(b, arena.arena_bytes, state_bytes) and module.weights_bytes <= b.placed("rodata").length
    ]
    return row


def _fits_ram(board, arena: int, state: int) -> bool:
    """The arena in its region, the persistent state (static data) in the data region."""
    arena_region, data_region = board.placed("arena"), board.placed("data")
    if arena_region.name == data_region.name:
        return arena + state <= arena_region.length
    return arena <= arena_region.length and state <= data_region.length


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--models",
        default=os.environ.get("TINYSCHED_MODELS") or str(REPO.parent / "shared" / "models"),
        help="folder of .tflite files",
    )
    parser.add_argument("--inputs", type=int, default=3, help="seeded input sets per model (default 3)")
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = parser.parse_args(argv)
    rows = [coverage(p, args.inputs) for p in sorted(Path(args.models).glob("*.tflite"))]
    if not args.markdown:
        print(json.dumps(rows, indent=2))
        return 0
    print(
        "| model | ops | folded | host verify | arena (B) | state (B) | weights (B) | fits (RAM and flash) |"
    )
    print("| --- | ---: | ---: | --- | ---: | ---: | ---: | --- |")
    for r in rows:
        if r["status"] == "refused":
            print(f"| {r['model']} | {r['ops']} | {r['folded']} | refused: {r['reason']} | | | | |")
            continue
        fits = ", ".join(r["fits"]) or "none"
        print(
            f"| {r['model']} | {r['ops']} | {r['folded']} | {r['status']} | {r['arena_bytes']:,} | "
            f"{r['state_bytes']:,} | {r['weights_bytes']:,} | {fits} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
