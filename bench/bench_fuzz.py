"""Fuzz the command line with structure-aware mutants of small models, for as long as one likes.

    PYTHONPATH=. python bench/bench_fuzz.py --models 2000 --seed 1 [--keep DIR] [--markdown]

Each mutant (`tests/model_fuzz.py`: one to three edits of a seed model's dimensions, options,
quantisation, operand indices, constants, operator codes or tensor types) goes through
`tinysched verify MODEL --sanitize --inputs 1` (read, validate, plan, generate, compile under
ASan/UBSan, run, compare with TFLite's reference) and `tinysched schedule MODEL --time-limit 1`
(judged for overruns). Every run must end in exit 0, `verify`'s exit 1 (outputs differ), or exit 2
with one `tinysched: error:` line. The table counts models tried, clean exits, tracebacks,
crashes (signals, other exit codes), sanitizer reports, time-limit overruns (longer than the limit
plus 10% plus start-up: 2 s, or what `tinysched --version` takes just before when the machine is
loaded; the faster of two runs), several-line errors, output mismatches, and how many mutants
`build` accepted (their generated code ran). Runs are sequential: one core. `--keep DIR` saves
every mutant that did not end cleanly, with a note of its edits and the run's last line.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from model_fuzz import mutate, schedule_timed, seed_models, verify_sanitized  # noqa: E402

COLUMNS = (
    ("tried", "models tried"),
    ("accepted", "accepted by build (generated code ran)"),
    ("clean", "clean exits"),
    ("traceback", "tracebacks"),
    ("crash", "crashes"),
    ("sanitizer", "sanitizer reports"),
    ("overrun", "time-limit overruns"),
    ("several-lines", "errors of more than one line"),
    ("mismatch", "outputs differing from the reference"),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=200, help="mutants to try (default 200)")
    parser.add_argument("--seed", type=int, default=0, help="first mutation seed (default 0)")
    parser.add_argument("--time-limit", type=float, default=1.0, help="--time-limit of each verb")
    parser.add_argument("--keep", type=Path, help="save mutants that did not end cleanly here")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--quiet", action="store_true", help="no line per faulty run")
    parser.add_argument("--progress", type=int, default=100, metavar="N", help="counts on stderr every N")
    args = parser.parse_args(argv)

    seeds = seed_models()
    names = sorted(seeds)
    counts: collections.Counter[str] = collections.Counter()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tinysched-fuzz-") as tmp:
        for i in range(args.models):
            seed = args.seed + i
            name = names[seed % len(names)]
            data, edits = mutate(seeds[name], seed)
            path = Path(tmp) / f"{name}_{seed}.tflite"
            path.write_bytes(data)
            timed = schedule_timed(path, args.time_limit)
            if timed.kind == "overrun":  # once more, so that a load spike on a shared machine does not count
                timed = min(timed, schedule_timed(path, args.time_limit), key=lambda o: o.seconds)
            outcomes = [verify_sanitized(path, args.time_limit), timed]
            counts["tried"] += 1
            counts["accepted"] += outcomes[0].returncode in (0, 1)
            kinds = {o.kind for o in outcomes}
            bad = sorted(kinds - {"clean"})
            if not bad:
                counts["clean"] += 1
            for kind in bad:
                counts[kind] += 1
            if bad:
                note = {"seed": seed, "model": name, "edits": edits, "runs": [o.summary() for o in outcomes]}
                if not args.quiet:
                    print(json.dumps(note), file=sys.stderr, flush=True)
                if args.keep:
                    args.keep.mkdir(parents=True, exist_ok=True)
                    (args.keep / path.name).write_bytes(data)
                    (args.keep / f"{path.stem}.json").write_text(json.dumps(note, indent=2) + "\n")
            if args.progress and counts["tried"] % args.progress == 0:
                running = ", ".join(f"{key} {counts[key]}" for key, _ in COLUMNS)
                print(
                    f"progress: {running} ({time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True
                )
    seconds = time.perf_counter() - start
    command = f"PYTHONPATH=. python bench/bench_fuzz.py --models {args.models} --seed {args.seed}"
    if args.markdown:
        print(f"`{command}` ({seconds / 60:.1f} min, one core)\n")
        print("| " + " | ".join(label for _, label in COLUMNS) + " |")
        print("|" + "---:|" * len(COLUMNS))
        print("| " + " | ".join(f"{counts[key]:,}" for key, _ in COLUMNS) + " |")
    else:
        print(f"{command}  ({seconds:.0f} s)")
        for key, label in COLUMNS:
            print(f"{label:<40} {counts[key]:>8,}")
    faults = sum(counts[k] for k in ("traceback", "crash", "sanitizer", "overrun", "several-lines"))
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main())
