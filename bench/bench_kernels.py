"""Kernels near the core's limit (issue 34, part 1): per layer, instructions per multiply-accumulate
on an emulated DSP core, against the issue's per-layer targets and CMSIS-NN's per-inference totals.

    PYTHONPATH=. python bench/bench_kernels.py [--models DIR] [--board mps2-an500] [--json FILE]
                                               [MODEL_NAME ...]

Each model (default: the three MLPerf Tiny models of ../shared/models) is built with the default
flags (refined memory model, `--prefer memory`) and measured on QEMU (`-icount`, one seeded input:
instructions, not cycles; outputs compared byte for byte with TFLite). The per-layer table is
measure's `per_operator` (`tinysched measure MODEL --board B --json`): operator, type, shapes,
MACs (tinysched.order.recompute.macs of the planned operator), instructions, instructions per MAC
and the kernel the plan gave it ("default": the type's own kernel, which picks its fast path at run
time; otherwise the variant: staged in place, or wide). A streamed stage (one step running several
operators row by row) is followed by its members, step.k, each with its own count (the harness's
members' pass, TS_MEMBER_DONE after each row-kernel call: a member's count holds its calls and the
loop's work for its rows, the hook's own measured cost taken off) and the members' sum against the
stage's count (the timed run's hooks return at once: 5 to 9 instructions a call in the step counts).
The per-layer targets (members included): 1x1 and 3x3 CONV_2D <= 1.3 instructions per MAC,
DEPTHWISE_CONV_2D <= 4.0; per model <= 0.55x CMSIS-NN's instructions per inference measured on the
M7 (../shared/benchmarks/cmsis_nn_side_by_side.md).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tinysched.commands.build import build_model  # noqa: E402
from tinysched.commands.device import measure_build, per_operator  # noqa: E402

MODELS = ("mlperf_ic_resnet8_int8", "mlperf_vww_mbv1_025_96_int8", "mlperf_kws_dscnn_int8")
# CMSIS-NN at 4ab83cc3 swapped into the same generated code, mps2-an500 (Cortex-M7), per inference
CMSIS_NN_M7 = {
    "mlperf_ic_resnet8_int8": 30_028_289,
    "mlperf_vww_mbv1_025_96_int8": 24_041_942,
    "mlperf_kws_dscnn_int8": 7_644_752,
}
MODEL_RATIO_TARGET = 0.55
CONV_TARGET = 1.3  # instructions per MAC, 1x1 and 3x3 CONV_2D
DEPTHWISE_TARGET = 4.0


def layer_target(row: dict[str, Any]) -> float | None:
    """The issue's instructions-per-MAC target for this layer (None: the layer has none)."""
    f = row.get("filter_shape")
    if row["type"] == "DEPTHWISE_CONV_2D":
        return DEPTHWISE_TARGET
    if row["type"] == "CONV_2D" and f and len(f) == 4 and (f[1], f[2]) in ((1, 1), (3, 3)):
        return CONV_TARGET
    return None


def shape_text(row: dict[str, Any]) -> str:
    def dims(s: list[int] | None) -> str:
        return "x".join(str(d) for d in s) if s else "-"

    f = row.get("filter_shape")
    middle = f" * {f[1]}x{f[2]}" if f and len(f) == 4 else ""
    return f"{dims(row.get('input_shape'))}{middle} -> {dims(row.get('output_shape'))}"


def measure_model(path: Path, board: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-kernels-") as tmp:
        out = Path(tmp) / "build"
        build_model(path, out, board, report=False)  # `tinysched build`, default flags
        result, record = measure_build(out, port=None, emulate=True, n_inputs=1)
    rows = per_operator(result, record)
    return {
        "model": path.stem,
        "board": board,
        "instructions": result.instructions,
        "outputs_match": result.outputs_match,
        # every step's output against TFLite's tensor of its name (measure's step check)
        "steps_compared": result.steps_compared,
        "steps_differing": result.steps_differing,
        "arena_matches_plan": result.arena_matches_plan,
        "arena_bytes": result.arena_bytes_measured,
        "stack_bytes": result.stack_bytes_total,
        "stack_reserved_bytes": record.get("stack_reserved_bytes"),
        "per_operator": rows,
    }


def verdict(row: dict[str, Any]) -> str:
    """The layer's target check ("" where it has no target or no count per MAC)."""
    per_mac, target = row.get("instructions_per_mac"), layer_target(row)
    if target is None or per_mac is None:
        return ""
    return f"<= {target}: " + ("met" if per_mac <= target else "missed")


def layers(m: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every layer with a count: the steps, and after a streamed stage its counted members ("s.k")."""
    out = []
    for r in m["per_operator"]:
        out.append((str(r["step"]), r))
        members = r.get("members") or []
        out += [(f"{r['step']}.{k}", x) for k, x in enumerate(members) if "count" in x]
    return out


def target_summary(m: dict[str, Any]) -> str:
    """How many layers with a target met it, the streamed stages' members among them."""
    checked = [(name, verdict(r)) for name, r in layers(m) if verdict(r)]
    missed = [name for name, v in checked if v.endswith("missed")]
    inside = sum(1 for name, _ in checked if "." in name)
    return (
        f"per-layer targets: {len(checked) - len(missed)} met, {len(missed)} missed of {len(checked)} "
        f"layers ({inside} inside streamed stages)" + (f"; missed: {', '.join(missed)}" if missed else "")
    )


def report_lines(m: dict[str, Any]) -> list[str]:
    lines = [
        f"### {m['model']} on {m['board']}: {m['instructions']:,} instructions per inference, outputs "
        + ("bit-exact" if m["outputs_match"] else "DIFFER")
        + (
            f", {m.get('steps_compared', 0)} step outputs bit-exact"
            if not m.get("steps_differing")
            else f", steps {m['steps_differing']} DIFFER"
        )
        + f"; arena {m.get('arena_bytes') or 0:,} B (plan: "
        + ("equal" if m.get("arena_matches_plan") else "DIFFERS")
        + f"), stack {m.get('stack_bytes') or 0:,} B of {m.get('stack_reserved_bytes') or 0:,} B reserved",
        "",
        "| step | type | shape | MACs | instructions | instr/MAC | target | kernel |",
        "| ---: | --- | --- | ---: | ---: | ---: | --- | --- |",
    ]
    gaps = []
    for name, r in layers(m):
        per_mac = r.get("instructions_per_mac")
        member = "." in name
        kernel = f"in the stage, {r['calls']:,} calls" if member else r.get("kernel_function") or "default"
        lines.append(
            f"| {name} | {'. ' if member else ''}{r['type']} | {shape_text(r)} | {r.get('macs') or 0:,} | "
            f"{r['count']:,} | {'-' if per_mac is None else f'{per_mac:.2f}'} | {verdict(r)} | {kernel} |"
        )
        counted = [x for x in r.get("members") or [] if "count" in x]
        if not member and counted:
            total, calls = sum(x["count"] for x in counted), sum(x["calls"] for x in counted)
            gaps.append(
                f"step {name}: members {total:,} of the stage's {r['count']:,} (gap {r['count'] - total:,}: "
                f"the timed run's {calls:,} member hooks returning at once, and the loop after its last member)"
            )
    lines += ["", target_summary(m), *gaps]
    cmsis = CMSIS_NN_M7.get(m["model"])
    if cmsis and m["instructions"]:
        ratio = m["instructions"] / cmsis
        lines += [
            "",
            f"total {m['instructions']:,} = {ratio:.3f}x CMSIS-NN's {cmsis:,} (M7); target <= "
            f"{MODEL_RATIO_TARGET}x ({int(MODEL_RATIO_TARGET * cmsis):,}): "
            + ("met" if ratio <= MODEL_RATIO_TARGET else "missed"),
        ]
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help=f"model names in --models (default: {', '.join(MODELS)})")
    ap.add_argument(
        "--models", default=os.environ.get("TINYSCHED_MODELS", str(REPO.parent / "shared" / "models"))
    )
    ap.add_argument(
        "--board", default="mps2-an500", help="a QEMU board with a DSP core (default mps2-an500, M7)"
    )
    ap.add_argument("--json", help="also write the measurements to this file")
    args = ap.parse_args(argv)
    folder = Path(args.models)
    results = []
    for name in args.names or MODELS:
        path = folder / f"{name}.tflite"
        if not path.is_file():
            print(f"skip {name}: {path} not found", file=sys.stderr)
            continue
        m = measure_model(path, args.board)
        results.append(m)
        print("\n".join(report_lines(m)) + "\n", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0 if all(m["outputs_match"] and not m.get("steps_differing") for m in results) else 1


if __name__ == "__main__":
    sys.exit(main())
