"""The long equivalence sweeps the suite samples, run whole: C against numpy stage decisions.

tests/test_native.py runs seeds 0-31 of the C-vs-numpy decision sweep; this runs every seed asked
(default 0-39: the 30 small random DAGs and the ten chains with dead ends of 70-250 operators) and
prints a table: operators, decisions compared (caps x dominance x direction), time. A disagreement
stops the run with the seed, cap and mode that differ.

    PYTHONPATH=$PWD python bench/bench_equivalence.py [--seeds 0-39]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_native import check_c_decision_matches_numpy, equivalence_graph  # noqa: E402

from tinysched.order import native  # noqa: E402


def seed_range(text: str) -> list[int]:
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=seed_range, default=seed_range("0-39"), help="e.g. 30-39")
    args = parser.parse_args()
    if native.library() is None:
        print("no C compiler: the C decisions cannot be built", file=sys.stderr)
        return 2
    print("| seed | operators | decisions compared | agree | seconds |")
    print("|--:|--:|--:|---|--:|")
    total = 0.0
    for seed in args.seeds:
        start = time.perf_counter()
        compared = check_c_decision_matches_numpy(seed)
        seconds = time.perf_counter() - start
        total += seconds
        ops = len(equivalence_graph(seed).operators)
        print(f"| {seed} | {ops} | {compared} | yes | {seconds:.1f} |", flush=True)
    print(f"\n{len(args.seeds)} seeds, every decision the same in C and numpy, {total:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
