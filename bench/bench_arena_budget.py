"""RAM budget (issue 34, part 3): the fastest plan that fits `--arena-budget BYTES`, measured.

    PYTHONPATH=. python bench/bench_arena_budget.py [--models DIR] [--board mps2-an500]
    PYTHONPATH=. python bench/bench_arena_budget.py --refresh-costs [--models DIR] [--board B]

The first form measures arm_kws_ds_cnn_l_int8 (MANIFEST.tsv) with the default flags (the least
memory) and with `--arena-budget 69296` on the board's QEMU stand-in (`tinysched measure MODEL
--board B --json --inputs 1`, one seeded input): arena planned and measured, instructions measured
(QEMU -icount: instructions, not cycles), the plan's estimate, outputs against TFLite, and checks
issue 34's target (>= 15% fewer instructions within the budget, bit-exact). It prints the
markdown table of docs/BENCHMARKS.md, "RAM budget (issue 34, part 3)".

`--refresh-costs` measures the models of REFRESH_MODELS (and one built here, `kws_like_model`) under the default flags, `--prefer speed`
and a generous budget (so every kernel the budget chooses among runs somewhere), and the runs of
REFRESH_EXTRA (mcunet with its input streamed: the expansions by channel groups), fits each
(opcode, kernel) line of tinysched/arena/kernel_costs.json to the per-operator counts by least
squares (instructions = per_mac x MACs + per_output x outputs + per_pixel x output pixels +
per_call, no coefficient negative; of the feature sets of one size, the best fit), each streamed
stage member's line to the members' own counts (protocol 6: per_call per row call) and the stage
loop's cost per member row call to what the chains count beyond their members, and rewrites the
board's core family in that file, printing each line's fit error and each chain's estimate.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tinysched.arena.cost import CORE_FAMILIES, COST_TABLE, FALLBACK_FAMILY, chain_estimate  # noqa: E402
from tinysched.boards import get_board  # noqa: E402

TARGET_MODEL = "arm_kws_ds_cnn_l_int8"
TARGET_BUDGET = 69_296
TARGET_SAVING = 0.15
REFRESH_MODELS = (
    "mlperf_kws_dscnn_int8",
    "mlperf_ic_resnet8_int8",
    "mlperf_vww_mbv1_025_96_int8",
    "arm_kws_ds_cnn_l_int8",
    "arm_har_cnn_int8",
    "st_yamnet_256_int8",
    # shapes the others lack: 1x1 layers of few output channels and 5x5 / 7x7 depthwise layers in
    # stages (mcunet), rows one pixel wide (sww), a 7x7 first layer over one channel into a PAD and
    # a pool, residual blocks of 64 channels (miniresnet)
    "mcunet_vww_int8",
    "mlperf_sww_dscnn_int8",
    "st_miniresnetv2_1stack_int8",
)
REFRESH_FLAGS = ((), ("--prefer", "speed"), ("--arena-budget", "1M"))
# runs of one model with flags of their own: mcunet's input streamed, where the 1x1 expansions run
# into their depthwise by channel groups (TS_EXPAND_DW: one alone, one in the input's stage)
REFRESH_EXTRA = (("mcunet_vww_int8", ("--io", "int8", "--stream-input")),)


def kws_like_model() -> bytes:
    """A model built here (modelgen) for shapes the shared models lack: a wide first layer streamed
    into a strided depthwise, then in-place 1x1 layers of 32 channels (the staged pointwise of short
    K, where each output's requantisation weighs more than over KWS-L's 276). tests/test_arena_budget.py
    plans the same model."""
    from tinysched.model.modelgen import ModelBuilder

    b = ModelBuilder(seed=34, description="kws-like: a wide first layer streamed into a strided depthwise")
    x = b.input("features", (1, 20, 10, 1))
    t = b.conv2d(x, 32, (5, 4), activation="RELU", name="first")
    t = b.depthwise_conv2d(t, (3, 3), stride=(2, 2), activation="RELU", name="dw1")
    t = b.conv2d(t, 32, (1, 1), activation="RELU", name="pw1")
    t = b.depthwise_conv2d(t, (3, 3), activation="RELU", name="dw2")
    t = b.conv2d(t, 32, (1, 1), activation="RELU", name="pw2")
    # a global MEAN (an AVERAGE_POOL_2D over the whole map would end a stage through the body)
    t = b.mean(t, (1, 2), keepdims=True, name="pool")
    t = b.reshape(t, (1, -1), name="flat")
    b.output(b.fully_connected(t, 8, name="fc"))
    return b.build()


COMMAND = "PYTHONPATH=. python bench/bench_arena_budget.py"


def models_dir(given: str | None) -> Path:
    return Path(given or os.environ.get("TINYSCHED_MODELS") or REPO.parent / "shared" / "models")


def measure(model: Path, board: str, flags: tuple[str, ...]) -> dict[str, Any]:
    """`tinysched measure MODEL --board B --json --inputs 1 FLAGS`, its JSON (exit 1 kept: the
    JSON says what differed)."""
    cmd = [sys.executable, "-m", "tinysched.cli", "measure", str(model), "--board", board, "--json"]
    cmd += ["--inputs", "1", *flags]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)}: exit {done.returncode}: {done.stderr.strip()}")
    return json.loads(done.stdout)


# ---- the comparison -----------------------------------------------------------------------------


def compare(models: Path, board: str) -> int:
    model = models / f"{TARGET_MODEL}.tflite"
    if not model.exists():
        print(f"skipped: {model} is absent")
        return 0
    started = time.perf_counter()
    runs = [
        ("default (least memory)", ()),
        (f"--arena-budget {TARGET_BUDGET}", ("--arena-budget", str(TARGET_BUDGET))),
    ]
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda r: measure(model, board, r[1]), runs))
    seconds = time.perf_counter() - started
    print(f"`{COMMAND}` (board `{board}`, one seeded input, {seconds:.0f} s)\n")
    print(
        "| flags | arena planned B | arena measured B (high-water) | instructions measured | "
        "estimate | estimate / measured | outputs |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for (name, _), r in zip(runs, results, strict=True):
        est, got = r.get("instructions_estimate"), r["instructions"]
        print(
            f"| {name} | {r['arena_bytes_planned']:,} | {r['arena_bytes_measured']:,} | {got:,} | "
            f"{est:,} | {est / got:.3f} | {'bit-exact' if r['outputs_match'] else 'DIFFER'} |"
        )
    base, budget = results
    choice = budget.get("arena_budget") or {}
    print()
    for c in choice.get("candidates", []):
        mark = " (chosen)" if c["chosen"] else ""
        print(
            f"- {c['label']}: arena {c['arena_bytes']:,} B, est. {c['instructions_estimate']:,}"
            f"{'' if c['fits'] else ', over the budget'}{mark}"
        )
    saving = 1 - budget["instructions"] / base["instructions"]
    within = (
        budget["arena_bytes_measured"] <= TARGET_BUDGET and budget["arena_bytes_planned"] <= TARGET_BUDGET
    )
    exact = budget["outputs_match"] and base["outputs_match"]
    met = saving >= TARGET_SAVING and within and exact
    print(
        f"\ntarget (>= {TARGET_SAVING:.0%} fewer instructions within {TARGET_BUDGET:,} B, bit-exact): "
        f"{'met' if met else 'MISSED'}: {100 * saving:.1f}% fewer, arena measured "
        f"{budget['arena_bytes_measured']:,} B, {'bit-exact' if exact else 'outputs differ'}"
    )
    return 0 if met else 1


# ---- the cost table -----------------------------------------------------------------------------

FEATURES = ("per_mac", "per_output", "per_pixel", "per_call")
COUNT = len(FEATURES)  # where a row holds the measured count
# the features fitted: per MAC and per output for an operator that computes, per output and per call
# for one that does not. per_pixel stays 0 (cost.py reads it): on the models measured it fitted the
# seen shapes better and the unseen ones worse (a small-K first layer, the streamed chains' operators)
FIT_MACS = (0, 1)
# an operator that computes, measured in more shapes than features: the subset of per MAC, per output
# and per pixel that best predicts shapes left out of its fit (fit_validated); a stage's member also
# per row call (its per_call: the call's checks, its row's borders)
FIT_SHAPES = (0, 1, 2)
FIT_ALL = (0, 1, 2, 3)
OWN_STRIP_MOST = 0.1  # a default CONV_2D widening more of its rows in its own output is not fitted
FIT_NO_MACS = (1, 3)


ABOUT = (
    "Instructions per kernel call on QEMU -icount: per_mac * MACs + per_output * output elements + "
    "per_pixel * output pixels + per_call (an operator: once; a streamed stage's member, OPCODE/member...: "
    "per row call, its sizes over the columns it computes); a streamed chain: its members' lines plus "
    "STREAM/streamed per_call per member row call (the stage loop; error: the largest |estimate / "
    "measured - 1| over the chains fitted). Written by bench/bench_arena_budget.py --refresh-costs "
    "(tinysched/arena/cost.py reads it)."
)
Row = tuple[float, float, float, float, float]  # macs, outputs, pixels, calls (1, or row calls), count


def _solve(rows: list[Row], use: tuple[int, ...]) -> list[float] | None:
    """Least squares of count on the features `use` (indices into FEATURES); None when a
    coefficient comes out negative or the rows cannot tell the features apart."""
    import numpy as np

    a = np.array([[r[i] for i in use] for r in rows], dtype=float)
    b = np.array([r[COUNT] for r in rows], dtype=float)
    if np.linalg.matrix_rank(a) < len(use):
        return None
    x, *_ = np.linalg.lstsq(a, b, rcond=None)
    return None if (x < 0).any() else [float(v) for v in x]


def fit_line(rows: list[Row], features: tuple[int, ...] | None = None) -> dict[str, float]:
    """The line with the most features the rows support, none negative (of the sets of one size,
    the least squared error). An operator that computes (MACs) gets no per-call constant: fitted
    over a few shapes it would swallow what differs between them and dwarf a small operator of the
    same kind. With `features` (indices into FEATURES) and more shapes measured than features:
    `fit_validated`'s line over them (each feature tried on shapes it was not fitted to)."""
    from itertools import combinations

    if features is not None and any(r[0] for r in rows) and len(_relative(rows)) > len(features):
        return fit_validated(rows, features, relative=features == FIT_ALL)
    candidates = FIT_MACS if any(r[0] for r in rows) else FIT_NO_MACS
    present = [i for i in candidates if any(r[i] for r in rows)]
    for k in range(len(present), 0, -1):
        best: tuple[float, list[float], tuple[int, ...]] | None = None
        for use in combinations(present, k):
            x = _solve(rows, use) if len(use) <= len(rows) else None
            if x is not None:
                err = sum((sum(v * r[i] for i, v in zip(use, x, strict=True)) - r[COUNT]) ** 2 for r in rows)
                if best is None or err < best[0] * (1 - 1e-9) - 1e-6:  # ties: the earlier features
                    best = (err, x, use)
        if best is not None:
            line = {name: 0.0 for name in FEATURES}
            for i, v in zip(best[2], best[1], strict=True):
                line[FEATURES[i]] = round(v, 4)
            return line
    return {**{name: 0.0 for name in FEATURES}, "per_call": round(sum(r[COUNT] for r in rows) / len(rows), 1)}


def _relative(rows: list[Row]) -> list[Row]:
    """The rows of distinct shapes (a shape measured in several runs: its mean count), each divided
    by its count: least squares on them weighs each shape's relative error alike, so a small
    layer's line is not a large one's."""
    counts: dict[tuple[float, ...], list[float]] = defaultdict(list)
    for r in rows:
        counts[r[:COUNT]].append(r[COUNT])
    return [(*(f / (sum(c) / len(c)) for f in shape), 1.0) for shape, c in counts.items() if sum(c) > 0]  # type: ignore[misc]


def fit_validated(rows: list[Row], features: tuple[int, ...], relative: bool = False) -> dict[str, float]:
    """The line over a subset of `features` whose leave-one-shape-out relative error is least (ties:
    fewer features, then the earlier), none negative: a feature enters only where it predicts the
    shapes it was not fitted to (with all four over a dozen shapes, a per-call constant fitted
    KWS-like shapes to 13,300 instructions a row call). One shape: per MAC (per output without
    MACs)."""
    from itertools import combinations

    shapes = _relative(rows)
    line = {name: 0.0 for name in FEATURES}
    present = [i for i in features if any(r[i] for r in shapes)]
    best: tuple[float, int, tuple[int, ...]] | None = None
    for k in range(1, len(present) + 1):
        for use in combinations(present, k):
            if len(shapes) <= len(use):
                continue
            errors = []
            for i in range(len(shapes)):
                x = _solve(shapes[:i] + shapes[i + 1 :], use)
                if x is None:
                    break
                errors.append(abs(sum(v * shapes[i][f] for f, v in zip(use, x, strict=True)) - 1))
            else:  # ties (features proportional on every shape measured: a depthwise's MACs and
                # outputs over 3x3 filters only): the fewer features, then the earlier (per MAC)
                score = round(sum(errors) / len(errors), 6)
                if best is None or (score, k) < best[:2]:
                    best = (score, k, use)
    use = best[2] if best is not None else (0,) if any(r[0] for r in shapes) else (1,)
    # the chosen features' coefficients: by least squares on each shape's relative error (`relative`:
    # a stage member's line, each chain's estimate against its own count), else on the counts
    # themselves (an operator's line: the large layers, which make up a model's count, weigh most)
    x = _solve(shapes if relative else rows, use) if len(shapes) >= len(use) else None
    x = x if x is not None or relative or len(shapes) < len(use) else _solve(shapes, use)
    if x is None:  # one shape the first feature alone
        use = use[:1]
        x = [len(shapes) / sum(r[use[0]] for r in shapes)] if any(r[use[0]] for r in shapes) else [0.0]
    for i, v in zip(use, x, strict=True):
        line[FEATURES[i]] = round(v, 4)
    return line


def _estimate(line: dict[str, float], macs: float, outputs: float, pixels: float, calls: float = 1) -> float:
    return (
        line.get("per_mac", 0) * macs
        + line.get("per_output", 0) * outputs
        + line.get("per_pixel", 0) * pixels
        + line.get("per_call", 0) * calls
    )


def line_features(key: str) -> tuple[int, ...]:
    """The features `fit_validated` chooses among for a line: every one for a stage member's line
    (per_call: per row call), per MAC, output and pixel for an operator's (no per-call constant)."""
    if key.startswith("CONV_2D+DEPTHWISE_CONV_2D (by groups)/"):  # two kernel calls per group and row
        return FIT_ALL
    return FIT_ALL if key.split("/", 1)[1].startswith("member") else FIT_SHAPES


def member_row(member: dict[str, Any]) -> Row:
    """A measured stage member as a row of its line's fit: its sizes over the columns it computes,
    its row calls (cost.member_estimate), its count."""
    halo = member["halo"]
    return (
        halo * member["macs"],
        halo * member["outputs"],
        halo * member["pixels"],
        member["row_calls"],
        member["count"],
    )


def _step_estimate(lines: dict[str, Any], step: dict[str, Any]) -> float:
    """tinysched.arena.cost's estimate of one measured step, from `lines` (the refitted table)."""

    def line(opcode: str, kernel: str) -> dict[str, float]:
        return lines.get(f"{opcode}/{kernel}") or lines.get(f"{opcode}/default") or lines["*"]

    if step.get("kernel") == "streamed":
        return chain_estimate(step["members"], lines)
    sizes = (step["macs"], step["outputs"], step["pixels"])
    cost = _estimate(line(step["type"], step["kernel"]), *sizes, step.get("calls", 1))
    share = step.get("own_strip") or 0.0
    return cost + share * (_estimate(line(step["type"], "wide"), *sizes) - cost)


def refresh(models: Path, board: str, runs_file: Path | None, refit: bool) -> int:
    family = CORE_FAMILIES.get(get_board(board).core, FALLBACK_FAMILY)
    started = time.perf_counter()
    if refit:  # the measurements a previous --runs FILE saved
        assert runs_file is not None
        results = [((Path(p), tuple(f)), r) for p, f, r in json.loads(runs_file.read_text())]
    else:
        jobs = [(models / f"{m}.tflite", flags) for m in REFRESH_MODELS for flags in REFRESH_FLAGS]
        jobs += [(models / f"{m}.tflite", flags) for m, flags in REFRESH_EXTRA]
        jobs = [(p, f) for p, f in jobs if p.exists()]
        if not jobs:
            print(f"skipped: none of {', '.join(REFRESH_MODELS)} is in {models}")
            return 0
        generated = Path(tempfile.mkdtemp(prefix="tinysched-costs-")) / "generated_kws_like_32.tflite"
        generated.write_bytes(kws_like_model())
        jobs += [(generated, flags) for flags in REFRESH_FLAGS]
        with ThreadPoolExecutor(2) as pool:
            results = list(pool.map(lambda j: (j, measure(j[0], board, j[1])), jobs))
        if runs_file is not None:
            runs_file.write_text(json.dumps([[str(p), list(f), r] for (p, f), r in results]))
    seconds = time.perf_counter() - started
    steps: dict[str, list[Row]] = defaultdict(list)
    chains: list[tuple[str, list[dict[str, Any]], int]] = []  # (run and step, its members, its count)
    for (path, flags), r in results:
        if not r.get("ok"):
            print(f"warning: {path.stem} {' '.join(flags)}: measurement not ok, left out", file=sys.stderr)
            continue
        for s in r.get("per_operator") or []:
            if "kernel" not in s:
                continue
            if s["kernel"] == "streamed":
                if all("count" in m for m in s["members"]):  # each member counted (protocol 6)
                    chains.append(
                        (
                            f"{path.stem} {' '.join(flags) or '(default)'} step {s['step']}",
                            s["members"],
                            s["count"],
                        )
                    )
                    for m in s["members"]:
                        steps[f"{m['opcode']}/{m['kernel']}"].append(member_row(m))
                continue
            opcode = s["type"]  # (an expansion by groups: its users' name, as the table keys it)
            if (s.get("own_strip") or 0) > OWN_STRIP_MOST:  # largely the widened path: neither line's
                continue
            calls = s.get("calls", 1)  # an expansion by groups: its group calls (cost.step_features)
            steps[f"{opcode}/{s['kernel']}"].append((s["macs"], s["outputs"], s["pixels"], calls, s["count"]))
    table = json.loads(COST_TABLE.read_text())
    lines = dict(table["families"].get(family, {}))
    print(f"fitted to {sum(map(len, steps.values()))} operators of {len(results)} runs ({seconds:.0f} s):")
    for key in sorted(steps):
        rows = steps[key]
        lines[key] = fit_line(rows, line_features(key))
        got = sum(r[COUNT] for r in rows)
        est = sum(_estimate(lines[key], *r[:COUNT]) for r in rows)
        print(f"  {key:<32} {len(rows):3} operators  {lines[key]}  estimate/measured {est / got:.3f}")
    if chains:  # the stage loop's own instructions: what a chain counts beyond its members, per row call
        calls = sum(m["row_calls"] for _, members, _ in chains for m in members)
        loop = sum(count - sum(m["count"] for m in members) for _, members, count in chains)
        lines["STREAM/streamed"] = {"per_call": round(max(loop, 0) / calls, 4)}
        errors = []
        print("streamed chains, the refitted estimate (members' lines + the loop's) against the count:")
        for name, members, count in chains:
            est = chain_estimate(members, lines)
            errors.append(abs(est / count - 1))
            print(f"  {name:<58} measured {count:>11,} estimate {round(est):>11,} ({est / count:.3f})")
        lines["STREAM/streamed"]["error"] = round(max(errors), 4)
        print(
            f"  {'STREAM/streamed':<32} {len(chains):3} chains     loop {lines['STREAM/streamed']['per_call']} per "
            f"member row call, largest error {max(errors):.4f}"
        )
    print("per run, the refitted estimate against the measured count:")
    for (path, flags), r in results:
        if not r.get("ok"):
            continue
        est = sum(_step_estimate(lines, s) for s in r.get("per_operator") or [])
        print(
            f"  {path.stem:<30} {' '.join(flags) or '(default)':<20} arena {r['arena_bytes_planned']:>9,} B "
            f"measured {r['instructions']:>12,} estimate {round(est):>12,} ({est / r['instructions']:.3f})"
        )
    table["about"] = ABOUT
    table["families"][family] = dict(sorted(lines.items()))
    names = sorted({p.stem for (p, _), _ in results})
    table.setdefault("measured", {})[family] = {
        "board": board,
        "models": names,
        "flags": [" ".join(f) or "(default)" for f in REFRESH_FLAGS],
        "date": time.strftime("%Y-%m-%d"),
    }
    COST_TABLE.write_text(json.dumps(table, indent=2) + "\n")
    print(f"wrote {COST_TABLE.relative_to(REPO)} ({family} family)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help="folder of the shared models (default ../shared/models)")
    parser.add_argument("--board", default="mps2-an500")
    parser.add_argument("--refresh-costs", action="store_true", help="measure and refit the cost table")
    parser.add_argument("--runs", type=Path, help="with --refresh-costs: save the measurements to this file")
    parser.add_argument(
        "--refit", action="store_true", help="with --runs FILE: fit the table to the measurements saved there"
    )
    args = parser.parse_args()
    models = models_dir(args.models)
    if args.refresh_costs:
        return refresh(models, args.board, args.runs, args.refit)
    return compare(models, args.board)


if __name__ == "__main__":
    sys.exit(main())
