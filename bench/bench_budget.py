"""Time-limit benchmark: the default --time-limit against --time-limit 60 on every shared model
(with the model's own interface and with --io int8) and on generated models.

Per model and limit: the arena, its aligned lower bound, the streamed chains, what the plan says a
longer limit would try (`time_limit_shortfalls`), and the planning time (`pipeline.plan`: folding,
order search, placement, check). Target (docs/pipeline.md, "The time budget"): the default arena
equals the long limit's arena wherever the long limit is quick, or the default plan lists what a
longer limit would try. Planning times are wall time on this machine, noisy under load; the arenas
are not (the budget is counted in work).

    PYTHONPATH=. python bench/bench_budget.py [--models DIR] [--update-doc docs/BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from tinysched.errors import TinyschedError  # noqa: E402
from tinysched.model.reader import parse_model  # noqa: E402
from tinysched.pipeline import DEFAULT_TIME_LIMIT, PlanOptions, plan  # noqa: E402

COMMAND = "PYTHONPATH=. .venv/bin/python bench/bench_budget.py --update-doc docs/BENCHMARKS.md"
LONG_LIMIT = 60.0
# random_branching_model(seed, blocks, input shape): the ones whose streamed plans need CP-SAT
# (seed 2 and 8 with 12 blocks on 24x24, seed 4 with 8 blocks on 32x32) and the default shape
GENERATED = ((2, 12, (1, 24, 24, 8)), (8, 12, (1, 24, 24, 8)), (4, 8, (1, 32, 32, 8)), (1, 5, (1, 16, 16, 8)))
HEADER = (
    f"| model | --io | default ({DEFAULT_TIME_LIMIT:g} s) arena B (bound) | streams | shortfalls | plan s "
    f"| --time-limit {LONG_LIMIT:g} arena B (bound) | streams | plan s | equal |"
)


def sources(models: Path) -> list[tuple[str, Callable[[], bytes], tuple[str, ...]]]:
    """(name, loader, --io modes): the shared models with both interfaces, then the generated ones."""
    from tinysched.model.modelgen import random_branching_model, tiny_demo_model

    items: list[tuple[str, Callable[[], bytes], tuple[str, ...]]] = [
        (p.stem, p.read_bytes, ("model", "int8")) for p in sorted(models.glob("*.tflite"))
    ]
    for seed, blocks, shape in GENERATED:
        items.append(
            (
                f"random_branching_model({seed}, {blocks}, {'x'.join(map(str, shape[1:]))})",
                lambda s=seed, b=blocks, sh=shape: random_branching_model(s, b, sh),
                ("model",),
            )
        )
    items.append(("tiny_demo_model", tiny_demo_model, ("model",)))
    return items


def run(name: str, data: bytes, io: str, limit: float) -> dict[str, object]:
    graph = parse_model(data, source=name)
    started = time.perf_counter()
    try:
        planned = plan(graph, PlanOptions(io=io, time_limit=limit))
    except TinyschedError as err:
        return {"error": str(err).splitlines()[0]}
    return {
        "arena": planned.arena.arena_bytes,
        "bound": planned.arena.lower_bound_bytes,
        "streams": len(planned.streams_json()),
        "shortfalls": len(planned.shortfalls),
        "seconds": time.perf_counter() - started,
        "offsets": [(p.index, p.instance, p.offset) for p in planned.arena.buffers],
    }


def cell(r: dict[str, object]) -> str:
    return f"{r['arena']:,} ({r['bound']:,})"


def row(name: str, io: str, short: dict[str, object], long: dict[str, object]) -> tuple[str, bool]:
    if "error" in short or "error" in long:
        why = short.get("error") or long.get("error")
        return f"| {name} | {io} | refused: {why} | | | | | | | |", True
    equal = short["arena"] == long["arena"]
    listed = equal or short["shortfalls"]  # short of the long arena, but the plan says what it would try
    verdict = ("yes" if short["offsets"] == long["offsets"] else "arena") if equal else "no"
    return (
        f"| {name} | {io} | {cell(short)} | {short['streams']} | {short['shortfalls']} | {short['seconds']:.2f} "
        f"| {cell(long)} | {long['streams']} | {long['seconds']:.2f} | {verdict} |",
        bool(listed),
    )


def section(rows: list[str], misses: list[str], seconds: float) -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return "\n".join(
        [
            "## Time limit",
            "",
            f"The default `--time-limit` ({DEFAULT_TIME_LIMIT:g} s) against `--time-limit {LONG_LIMIT:g}`, "
            "default options otherwise (refined memory model, `--prefer memory`), on every shared model "
            "with its own interface and with `--io int8`, and on generated models "
            "(`tinysched.model.modelgen.random_branching_model`). The budget is counted in work, not wall "
            'time (docs/pipeline.md, "The time budget"), so the arenas do not depend on the machine\'s '
            f"load; the planning times do (this run: {os.cpu_count()} cores, load average {load:.1f} at "
            f"the end, {seconds:.0f} s in all). Command: `{COMMAND}`.",
            "",
            "*plan s*: `pipeline.plan` wall time (folding, order search, placement, check). "
            "*shortfalls*: steps the plan lists as what a longer limit would try (`time_limit_shortfalls`), "
            "0 when a longer limit gives the same plan. *equal*: yes = the same arena and the same "
            "offsets, arena = the same arena, no = the default is larger.",
            "",
            HEADER,
            "|" + "---|" * HEADER.count(" | ") + "---|",
            *rows,
            "",
            "Every default arena equals the long limit's, or its plan lists what a longer limit would try "
            "(a shortfall: on a loaded machine the wall clock can stop a step the work budget allowed)."
            if not misses
            else "Default arenas above the long limit's with no shortfall listed: " + ", ".join(misses) + ".",
            "",
            "Before the budget flowed (a8d9c39: fixed shares of the wall clock, CP-SAT limited in wall "
            "time; same machine, load about 2.4), the default plans were: tflm_mbv2_pytorch_int8 602,112 B "
            "(both interfaces), mcunetv2_large_int8 653,664 B and 439,040 B with `--io int8`, mcunet_vww_int8 "
            "`--io int8` 38,400 B (one stream), mlperf_vww_mbv1_025_96_int8 28,416 B, and "
            "random_branching_model(2, 12, 24x24x8) 29,952 B, (8, 12, 24x24x8) 20,736 B, (4, 8, 32x32x8) "
            "32,896 B: each the long limit's arena in this table or larger, by up to 196,800 B.",
            "",
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--models",
        type=Path,
        default=Path(os.environ.get("TINYSCHED_MODELS") or REPO.parent / "shared" / "models"),
    )
    parser.add_argument("--update-doc", type=Path, help="replace the '## Time limit' section of this file")
    args = parser.parse_args()
    started = time.perf_counter()
    rows, misses = [], []
    for name, load, modes in sources(args.models):
        data = load()
        for io in modes:
            short, long = run(name, data, io, DEFAULT_TIME_LIMIT), run(name, data, io, LONG_LIMIT)
            line, ok = row(name, io, short, long)
            print(line, flush=True)
            rows.append(line)
            if not ok:
                misses.append(f"{name} --io {io}")
    text = section(rows, misses, time.perf_counter() - started)
    if args.update_doc:
        from bench_arena import update_doc

        update_doc(args.update_doc, text, "Time limit")
    else:
        print()
        print(text)
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
