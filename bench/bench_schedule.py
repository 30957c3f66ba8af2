"""Scheduling benchmark: `tinysched.order.scheduler.schedule` on the shared models, the same models with
their operators stored in a random topological order, and generated stress graphs of 200 to 2,000
operators, side by side with the plain exhaustive dynamic programme over down-sets (the published
approach to TFLite operator reordering) where that finishes within its cap.

    PYTHONPATH=. python bench/bench_schedule.py            # print the table
    PYTHONPATH=. python bench/bench_schedule.py --write    # and put it in docs/BENCHMARKS.md

Times are wall-clock seconds of one call (imports excluded). Memory is the Python heap peak under
tracemalloc in a second, traced run (OR-Tools' C++ allocations are not seen), taken only when the
untraced run was short; "states" are the down-sets each search held.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from stress_graphs import (  # noqa: E402
    long_chain,
    nas_cells,
    randwire_suite,
    recurrent_unrolled,
    shuffled,
    unet,
    wide_branches,
)

from tinysched.arena.placement import plan_arena  # noqa: E402
from tinysched.memory.tensor import profile  # noqa: E402
from tinysched.model.graph import Graph  # noqa: E402
from tinysched.model.reader import read_model  # noqa: E402
from tinysched.order.bounds import OrderingProblem  # noqa: E402
from tinysched.order.scheduler import plain_downset_dp, schedule  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SHARED_MODELS = Path(os.environ.get("TINYSCHED_MODELS") or REPO.parent / "shared" / "models")
COMMAND = "PYTHONPATH=. python bench/bench_schedule.py --write"
MODEL_TIME_LIMIT = 5.0
STRESS_TIME_LIMIT = 10.0
DP_MAX_STATES = 1_500_000
DP_MAX_SECONDS = 15.0
TRACE_IF_UNDER_SECONDS = 2.0
SHUFFLE_SEED = 1
RANDWIRE_COUNT = 30
RANDWIRE_SEED = 0
# The RandWire tables: the generator and the draws of `stress_graphs.randwire_suite`, and how many
# graphs each runs by default. "large" covers the "up to 1,000 operators".
RANDWIRE_SUITES: dict[str, dict[str, Any]] = {
    "paper": {"variant": "paper"},
    "hard": {"variant": "hard"},
    "large": {"variant": "paper", "min_ops": 600, "max_ops": 1000, "stages": (4, 5), "nodes": (64, 128)},
}
RANDWIRE_COUNTS = {"paper": RANDWIRE_COUNT, "hard": RANDWIRE_COUNT, "large": 10}  # graphs run by default
RANDWIRE_TIME_LIMIT = 10.0
RANDWIRE_DP_SECONDS = 3.0
TIME_LIMITS = (1.0, 5.0)
TIME_SLACK_SECONDS = 1.0  # allowed over the budget: 10 % plus this constant


def stress_graphs() -> list[Graph]:
    """Each stored in a random topological order (seeded), like a converter that ignores memory."""
    graphs = [
        nas_cells(10, 6, 3),
        nas_cells(20, 8, 4),
        nas_cells(30, 10, 3),
        nas_cells(50, 12, 3),
        recurrent_unrolled(10, 1),
        recurrent_unrolled(12, 2, hidden=128),
        recurrent_unrolled(24, 2),
        recurrent_unrolled(90, 1),
        unet(4, 3),
        unet(5, 6, 4),
        unet(6, 10, 4),
        unet(6, 13, 5),
    ]
    return [shuffled(g, SHUFFLE_SEED) for g in graphs]


def traced_peak_mib(fn: Callable[[], Any]) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def run_case(name: str, group: str, graph: Graph, time_limit: float) -> dict[str, Any]:
    sched = schedule(graph, time_limit=time_limit)
    assert profile(graph, sched.order).peak_bytes == sched.peak_bytes
    row: dict[str, Any] = {
        "group": group,
        "name": name,
        "ops": len(graph.operators),
        "stored": sched.stored_order_peak_bytes,
        "best": sched.peak_bytes,
        "saving": 100 * (1 - sched.peak_bytes / sched.stored_order_peak_bytes)
        if sched.stored_order_peak_bytes
        else 0.0,
        "lower": sched.lower_bound_bytes,
        "certified": sched.certified,
        "kind": sched.certificate.kind if sched.certificate else "",
        "bound_kind": sched.stats.get("bound_kind", ""),
        "gap": sched.gap_percent,
        "seconds": sched.seconds,
        "method": sched.method,
        "cuts": sched.stats.get("cuts", 0),
        "states": sched.stats.get("search_states", 0),
        "mib": None,
    }
    if sched.seconds < TRACE_IF_UNDER_SECONDS:
        row["mib"] = traced_peak_mib(lambda: schedule(graph, time_limit=time_limit))
    problem = OrderingProblem(graph)
    started = time.perf_counter()
    dp = plain_downset_dp(problem, max_states=DP_MAX_STATES, deadline=started + DP_MAX_SECONDS)
    row["dp_seconds"] = time.perf_counter() - started
    row["dp_states"] = dp.states
    row["dp_done"] = dp.complete
    row["dp_mib"] = None
    if dp.complete:
        assert dp.peak_bytes == sched.peak_bytes if sched.certified else dp.peak_bytes <= sched.peak_bytes
        if row["dp_seconds"] < TRACE_IF_UNDER_SECONDS:
            row["dp_mib"] = traced_peak_mib(lambda: plain_downset_dp(problem, max_states=DP_MAX_STATES))
    return row


def cases() -> list[tuple[str, str, Graph, float]]:
    result = []
    paths = sorted(SHARED_MODELS.glob("*.tflite")) if SHARED_MODELS.is_dir() else []
    for path in paths:
        result.append((path.stem, "model", read_model(path), MODEL_TIME_LIMIT))
    for path in paths:
        result.append(
            (path.stem, "shuffled model", shuffled(read_model(path), SHUFFLE_SEED), MODEL_TIME_LIMIT)
        )
    for graph in stress_graphs():
        result.append((graph.name, "stress", graph, STRESS_TIME_LIMIT))
    return result


def fmt_mib(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| group | graph | ops | stored peak | best peak | saving % | lower bound | certified | seconds | found by "
        "| search states | MiB | plain DP s | plain DP states | plain DP MiB |\n"
        "|---|---|--:|--:|--:|--:|--:|---|--:|---|--:|--:|--:|--:|--:|\n"
    )
    lines = []
    for r in rows:
        how = f"{r['kind']}: {r['bound_kind']}" if r["bound_kind"] else r["kind"]
        certified = f"yes ({how})" if r["certified"] else f"no, gap {r['gap']:.2f}%"
        dp_seconds = f"{r['dp_seconds']:.3f}" if r["dp_done"] else f"> cap ({r['dp_seconds']:.0f} s)"
        dp_states = f"{r['dp_states']:,}" if r["dp_done"] else f"> {r['dp_states']:,}"
        lines.append(
            f"| {r['group']} | {r['name']} | {r['ops']} | {r['stored']:,} | {r['best']:,} | {r['saving']:.1f} "
            f"| {r['lower']:,} | {certified} | {r['seconds']:.3f} | {r['method']} | {r['states']:,} "
            f"| {fmt_mib(r['mib'])} | {dp_seconds} | {dp_states} | {fmt_mib(r['dp_mib'])} |"
        )
    return head + "\n".join(lines) + "\n"


def summary(rows: list[dict[str, Any]]) -> str:
    out = []
    for group, label in (
        ("model", "models"),
        ("shuffled model", "shuffled models"),
        ("stress", "stress graphs"),
    ):
        rs = [r for r in rows if r["group"] == group]
        if not rs:
            continue
        times = [r["seconds"] for r in rs]
        certified = sum(r["certified"] for r in rs)
        worst_gap = max((r["gap"] for r in rs), default=0.0)
        out.append(
            f"- {label}: {certified}/{len(rs)} certified, worst gap {worst_gap:.2f}%, "
            f"median {statistics.median(times):.3f} s, max {max(times):.3f} s"
        )
    dp = [r for r in rows if r["dp_done"]]
    out.append(
        f"- plain DP finished on {len(dp)}/{len(rows)} graphs within {DP_MAX_STATES:,} states / "
        f"{DP_MAX_SECONDS:.0f} s; where it did, it took {sum(r['dp_seconds'] for r in dp):.2f} s in total "
        f"against {sum(r['seconds'] for r in dp):.2f} s for `schedule`"
    )
    return "\n".join(out) + "\n"


# ---- RandWire (issue 20) ------------------------------------------------------------------------


def randwire_rows(count: int, time_limit: float, suite: str = "paper") -> list[dict[str, Any]]:
    """`schedule` on seeded RandWire graphs (`RANDWIRE_SUITES[suite]`); the plain DP (the exact
    optimum) where it finishes, and a check that no bound ever exceeds it."""
    rows = []
    for graph in randwire_suite(count, RANDWIRE_SEED, **RANDWIRE_SUITES[suite]):
        sched = schedule(graph, time_limit=time_limit)
        assert profile(graph, sched.order).peak_bytes == sched.peak_bytes
        graph.check_order(list(sched.order))
        started = time.perf_counter()
        dp = plain_downset_dp(
            OrderingProblem(graph), max_states=DP_MAX_STATES, deadline=started + RANDWIRE_DP_SECONDS
        )
        optimum = dp.peak_bytes if dp.complete else None
        if optimum is not None:
            assert sched.lower_bound_bytes <= optimum <= sched.peak_bytes
        row = {
            "name": graph.name,
            "ops": len(graph.operators),
            "stored": sched.stored_order_peak_bytes,
            "best": sched.peak_bytes,
            "lower": sched.lower_bound_bytes,
            "certified": sched.certified,
            "kind": sched.certificate.kind if sched.certificate else "",
            "gap": sched.gap_percent,
            "over": sched.above_optimum_percent,
            "seconds": sched.seconds,
            "method": sched.method,
            "bound_kind": sched.stats.get("bound_kind", ""),
            "optimum": optimum,
        }
        rows.append(row)
        verdict = "certified" if row["certified"] else f"gap {row['gap']:.2f}%"
        print(
            f"randwire {graph.name:34} {row['ops']:5} ops  {verdict:>12}  {row['seconds']:.2f} s",
            file=sys.stderr,
        )
    return rows


RANDWIRE_DESCRIPTIONS = {
    "paper": "as the paper builds them: one n-ary ADD and one ReLU-conv per node, output nodes averaged",
    "hard": "the first, harder generator: ADD chains per node and over the output nodes",
}


def randwire_table(rows: list[dict[str, Any]], time_limit: float, suite: str = "paper") -> str:
    gaps = [r["gap"] for r in rows]
    over = [r["over"] for r in rows]
    certified = sum(r["certified"] for r in rows)
    draws = RANDWIRE_SUITES[suite]
    arguments = ", ".join(f"{key}={value!r}" for key, value in draws.items())
    stages = "-".join(str(k) for k in draws.get("stages", (2, 3)))
    low, high = draws.get("nodes", (32, 96))
    sizes = f"{draws.get('min_ops', 300)}-{draws.get('max_ops', 500)} operators"
    out = [
        f"RandWire graphs (`stress_graphs.randwire_suite({len(rows)}, seed={RANDWIRE_SEED}, {arguments})`, "
        f"{RANDWIRE_DESCRIPTIONS[draws['variant']]}; WS k=4 p=0.75 and "
        f"ER p=0.2 wirings, {stages} stages of {low}-{high} nodes, {sizes}, stored in a random "
        "topological order), time limit "
        f"{time_limit:.0f} s: "
        f"{certified}/{len(rows)} certified, worst gap {max(gaps, default=0):.2f}%, median gap "
        f"{statistics.median(gaps) if gaps else 0:.2f}%, at most {max(over, default=0):.1f}% above the optimum, "
        f"max {max((r['seconds'] for r in rows), default=0):.2f} s. "
        f"`optimum` is the plain down-set DP's where it finished within {RANDWIRE_DP_SECONDS:.0f} s.",
        "",
        "| graph | ops | stored peak | best peak | lower bound | certified | seconds | found by | optimum |",
        "|---|--:|--:|--:|--:|---|--:|---|--:|",
    ]
    for r in rows:
        how = f"{r['kind']}: {r['bound_kind']}" if r["bound_kind"] else r["kind"]
        certified = f"yes ({how})" if r["certified"] else f"no, gap {r['gap']:.2f}%"
        optimum = "—" if r["optimum"] is None else f"{r['optimum']:,}"
        out.append(
            f"| {r['name']} | {r['ops']} | {r['stored']:,} | {r['best']:,} | {r['lower']:,} | {certified} "
            f"| {r['seconds']:.2f} | {r['method']} | {optimum} |"
        )
    return "\n".join(out) + "\n"


# ---- time limits (issue 13 item 4) ---------------------------------------------------------------


def time_limit_graphs() -> list[Graph]:
    return [
        wide_branches(10_000, "concat"),
        wide_branches(5_000, "add"),
        shuffled(wide_branches(2_500, "add", depth=3), SHUFFLE_SEED),
        long_chain(10_000),
    ]


def time_limit_rows(limits: tuple[float, ...]) -> list[dict[str, Any]]:
    """Wall-clock seconds of `schedule` and of `plan_arena` on the best order, against their budget."""
    rows = []
    for graph in time_limit_graphs():
        for limit in limits:
            started = time.perf_counter()
            sched = schedule(graph, time_limit=limit)
            seconds = time.perf_counter() - started
            graph.check_order(list(sched.order))
            started = time.perf_counter()
            plan = plan_arena(graph, sched.order, time_limit=limit)
            plan_seconds = time.perf_counter() - started
            allowed = 1.1 * limit + TIME_SLACK_SECONDS
            rows.append(
                {
                    "name": graph.name,
                    "ops": len(graph.operators),
                    "limit": limit,
                    "seconds": seconds,
                    "certified": sched.certified,
                    "gap": sched.gap_percent,
                    "within": seconds <= allowed,
                    "plan_seconds": plan_seconds,
                    "plan_within": plan_seconds <= allowed,
                    "arena": plan.arena_bytes,
                }
            )
            print(
                f"time-limit {graph.name:24} {limit:4.0f} s: schedule {seconds:.2f} s, plan {plan_seconds:.2f} s",
                file=sys.stderr,
            )
    return rows


def time_limit_table(rows: list[dict[str, Any]]) -> str:
    out = [
        f"Time limits: wall-clock seconds of `schedule(graph, time_limit)` and of `plan_arena(graph, order, "
        f"time_limit=...)` on its order; within budget means at most 110 % of the limit plus "
        f"{TIME_SLACK_SECONDS:.0f} s.",
        "",
        "| graph | ops | limit s | schedule s | within | certified | arena plan s | within |",
        "|---|--:|--:|--:|---|---|--:|---|",
    ]
    for r in rows:
        certified = "yes" if r["certified"] else f"no, gap {r['gap']:.2f}%"
        out.append(
            f"| {r['name']} | {r['ops']} | {r['limit']:.0f} | {r['seconds']:.2f} | {'yes' if r['within'] else 'NO'} "
            f"| {certified} | {r['plan_seconds']:.2f} | {'yes' if r['plan_within'] else 'NO'} |"
        )
    return "\n".join(out) + "\n"


def write_section(markdown: str, path: Path) -> None:
    """Replace (or append) the `## Scheduling` section, leaving other sections alone."""
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    start = text.find("\n## Scheduling\n")
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + markdown
    else:
        end = text.find("\n## ", start + 1)
        text = text[: start + 1] + markdown + (text[end:] if end >= 0 else "")
    path.write_text(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="also write the section into docs/BENCHMARKS.md")
    parser.add_argument(
        "--only",
        choices=("all", "main", "randwire", "time-limit"),
        default="all",
        help="run one table only (default: all of them)",
    )
    parser.add_argument(
        "--randwire-count",
        type=int,
        default=None,
        help=f"RandWire graphs to run per table (default: {RANDWIRE_COUNT}, {RANDWIRE_COUNTS['large']} large ones)",
    )
    parser.add_argument(
        "--randwire-variant",
        choices=(*RANDWIRE_SUITES, "both", "all"),
        default="both",
        help="RandWire tables: as the paper builds them (300-500 operators), the first harder "
        "generator, the paper's of 600-1,000 operators, paper and hard (both) or all three",
    )
    parser.add_argument(
        "--limits",
        type=float,
        nargs="+",
        default=list(TIME_LIMITS),
        help="time limits for the time-limit table",
    )
    args = parser.parse_args()
    schedule(stress_graphs()[0], time_limit=1.0)  # warm-up: OR-Tools imports
    extra = ""
    if args.only != "main":
        if args.only in ("all", "randwire"):
            suites = {"both": ("paper", "hard"), "all": tuple(RANDWIRE_SUITES)}.get(
                args.randwire_variant, (args.randwire_variant,)
            )
            for suite in suites:
                count = RANDWIRE_COUNTS[suite] if args.randwire_count is None else args.randwire_count
                rows = randwire_rows(count, RANDWIRE_TIME_LIMIT, suite)
                extra += ("\n" if extra else "") + randwire_table(rows, RANDWIRE_TIME_LIMIT, suite)
        if args.only in ("all", "time-limit"):
            extra += ("\n" if extra else "") + time_limit_table(time_limit_rows(tuple(args.limits)))
        print(extra)
        if args.only != "all":
            return 0
    rows = []
    started = time.perf_counter()
    for name, group, graph, limit in cases():
        row = run_case(name, group, graph, limit)
        rows.append(row)
        verdict = "certified" if row["certified"] else f"gap {row['gap']:.2f}%"
        print(
            f"{group:15} {name:34} {row['ops']:5} ops  peak {row['best']:>10,}  {verdict:>12}  {row['seconds']:.3f} s",
            file=sys.stderr,
        )
    total = time.perf_counter() - started
    markdown = (
        "## Scheduling\n\n"
        f"Made by `{COMMAND}` ({total:.0f} s in all) on {os.cpu_count()} CPU cores, "
        f"Python {platform.python_version()}, {platform.machine()}. Time limits: {MODEL_TIME_LIMIT:.0f} s per "
        f"model, {STRESS_TIME_LIMIT:.0f} s per stress graph. Shuffled models and stress graphs store their "
        f"operators in a random topological order (seed {SHUFFLE_SEED}). `search states` are the down-sets "
        "tinysched's exact search expanded (0 when the cut bound already proved the order); MiB is the Python "
        "heap peak under tracemalloc (— when the run took over "
        f"{TRACE_IF_UNDER_SECONDS:.0f} s or did not finish). The plain DP enumerates every down-set layer by "
        f"layer without bounds (cap {DP_MAX_STATES:,} states or {DP_MAX_SECONDS:.0f} s).\n\n"
        + summary(rows)
        + "\n"
        + table(rows)
        + ("\n" + extra if extra else "")
    )
    print(markdown)
    if args.write:
        write_section(markdown, REPO / "docs" / "BENCHMARKS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
