"""Streamed chains against the same operators unstreamed (issue 34, part 4): a chain may cost at
most 3% more instructions than its operators run whole.

    PYTHONPATH=. python bench/bench_chains.py [--models DIR] [--board nucleo-f767] [--model NAME ...]
                                              [--json FILE]

Each model is measured twice on QEMU (`-icount`, one seeded input, outputs compared with TFLite):
`tinysched measure MODEL --board B --json --inputs 1` (default flags: least memory, the chains
streamed) and the same with `--prefer speed` (nothing streamed). Each streamed operator of the first
is a chain; its members are matched to the second's operators by (opcode, MACs, outputs), in order,
and the chain's count is compared with the sum of theirs. The chain is named by the model operators
it covers (first-last). A chain over +3% is allowed where the default plan's `stream cost` note
names it (the issue: "where they do, say so in the plan and let the budget choose"); the last column
says whether it does (`Planned.costly_streams`, the same estimate). A run whose outputs differ or
whose measured arena is not the plan fails the bench.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

MODELS = (
    "mlperf_ic_resnet8_int8",
    "mlperf_vww_mbv1_025_96_int8",
    "arm_har_cnn_int8",
    "arm_kws_ds_cnn_l_int8",
    "st_yamnet_256_int8",
    "mlperf_kws_dscnn_int8",
    "mlperf_sww_dscnn_int8",
    "st_miniresnetv2_1stack_int8",
    "mcunet_vww_int8",
)
LIMIT = 1.03  # a chain's instructions over its operators' unstreamed
COMMAND = "PYTHONPATH=. python bench/bench_chains.py"

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_arena_budget import measure, models_dir  # noqa: E402  (the same `measure --json` runs)

from tinysched.model.reader import parse_model  # noqa: E402
from tinysched.pipeline import PlanOptions, plan  # noqa: E402


def named_chains(path: Path) -> set[int]:
    """The chains (planned operators) the default plan's `stream cost` note names: issue 34 lets a
    chain cost more than 3% where the plan says so and --arena-budget can choose."""
    planned = plan(parse_model(path.read_bytes()), PlanOptions())
    return {int(r["operator"]) for r, _ in planned.costly_streams()}


def key(row: dict[str, Any]) -> tuple[str, int, int]:
    return (row["opcode"] if "opcode" in row else row["type"], int(row["macs"]), int(row["outputs"]))


def chains(streamed: dict[str, Any], whole: dict[str, Any]) -> list[dict[str, Any]]:
    """Each streamed operator of `streamed` with its members' counts in `whole` (unmatched: None)."""
    free = [row for row in whole["per_operator"] if row.get("kernel") != "streamed"]
    found = []
    for row in streamed["per_operator"]:
        if row.get("kernel") != "streamed":
            continue
        ops = []
        for member in row.get("members", []):
            match = next((r for r in free if key(r) == key(member)), None)
            if match is None:
                ops = []
                break
            free.remove(match)
            ops.append(match)
        model_ops = sorted(int(r["model_op"]) for r in ops)
        found.append(
            {
                "chain": f"{model_ops[0]}-{model_ops[-1]}" if ops else f"op {row['op']}",
                "streamed": int(row["count"]),
                "unstreamed": sum(int(r["count"]) for r in ops) if ops else None,
                "operator": int(row["op"]),
            }
        )
    return found


def run(models: Path, board: str, names: list[str]) -> tuple[list[dict[str, Any]], list[str], bool]:
    """The chains' rows, each model's whole counts (a line of text) and whether every run was
    bit-exact with its measured arena equal to the plan."""
    rows: list[dict[str, Any]] = []
    totals: list[str] = []
    ok = True
    for name in names:
        path = models / f"{name}.tflite"
        if not path.exists():
            print(f"skipped: {path} is absent", file=sys.stderr)
            continue
        streamed, whole = measure(path, board, ()), measure(path, board, ("--prefer", "speed"))
        for result in (streamed, whole):
            if not (result.get("outputs_match") and result.get("arena_matches_plan")):
                ok = False
                print(f"{name}: outputs or arena differ ({result.get('mismatches')})", file=sys.stderr)
        named = named_chains(path)
        for chain in chains(streamed, whole):
            rows.append({"model": name, **chain, "named_in_plan": chain["operator"] in named})
        totals.append(
            f"{name}: {streamed['instructions']:,} at {streamed['arena_bytes_measured']:,} B (default), "
            f"{whole['instructions']:,} at {whole['arena_bytes_measured']:,} B (`--prefer speed`)"
        )
    return rows, totals, ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", help="folder of the .tflite models (default: $TINYSCHED_MODELS)")
    parser.add_argument("--board", default="nucleo-f767", help="an emulated board (default nucleo-f767)")
    parser.add_argument("--model", action="append", choices=MODELS, help="only this model (repeatable)")
    parser.add_argument("--json", help="write the rows to this file too")
    args = parser.parse_args(argv)
    rows, totals, ok = run(models_dir(args.models), args.board, args.model or list(MODELS))
    print(f"`{COMMAND}` (board `{args.board}`, one seeded input; instructions)\n")
    print(
        "| model | chain (model operators) | streamed | unstreamed | over | limit +3% | named by the plan's `stream cost` |"
    )
    print("| --- | --- | ---: | ---: | ---: | --- | --- |")
    for row in rows:
        whole = row["unstreamed"]
        named = "yes" if row["named_in_plan"] else "no"
        if whole:
            over = row["streamed"] / whole
            if over <= LIMIT:
                verdict = "met"
            else:  # issue 34: over 3% only where the plan says so (and the budget can choose)
                verdict = "over, said in the plan" if row["named_in_plan"] else "**missed** (not said)"
            text = f"{whole:,} | {100 * (over - 1):+.1f}% | {verdict} | {named}"
        else:
            text = f"- | - | (members not matched) | {named}"
        print(f"| {row['model']} | {row['chain']} | {row['streamed']:,} | {text} |")
    print("\nWhole models:\n")
    for line in totals:
        print(f"- {line}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
