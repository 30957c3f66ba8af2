"""Time `tinysched build --board host` on a model of many operators: one operator copied side by side
(`modelgen.wide_model`, 2 x COPIES operators; 5,000 copies are the issue's 10,000-operator graph).

    PYTHONPATH=. python bench/bench_build.py [--copies 5000] [--board host] [--runs 1]

Each run is the command line as a user runs it (default flags, report and comparisons included, a
fresh output folder), with `-v`: the stage times it prints, then the wall time. Also prints gcc's time
on the generated model file alone and how many step functions it holds
(codegen.module.STEPS_PER_FUNCTION steps each).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tinysched.model.modelgen import wide_model  # noqa: E402

TARGET_SECONDS = 120.0  # issue 30: the 10,000-operator build on 2 cores


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=5000, help="operator copies (2x operators)")
    parser.add_argument("--board", default="host")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-build-") as tmp:
        model = Path(tmp) / f"wide_{args.copies}.tflite"
        started = time.perf_counter()
        model.write_bytes(wide_model(args.copies))
        print(f"model: {2 * args.copies:,} operators, written in {time.perf_counter() - started:.1f} s")
        for run in range(args.runs):
            out = Path(tmp) / f"out{run}"
            command = [sys.executable, "-m", "tinysched.cli", "build", str(model), "--board", args.board]
            started = time.perf_counter()
            done = subprocess.run([*command, "-o", str(out), "-v"], capture_output=True, text=True, cwd=REPO)
            wall = time.perf_counter() - started
            for line in done.stderr.splitlines():
                if line.startswith("tinysched: ") and line.rstrip().endswith(" s"):
                    print(f"  {line.removeprefix('tinysched: ')}")
            verdict = (
                "ok" if done.returncode == 0 else f"exit {done.returncode}: {done.stderr.strip()[-300:]}"
            )
            print(f"build --board {args.board}: {wall:.1f} s wall ({verdict}; target {TARGET_SECONDS:.0f} s)")
            source = out / f"wide_{args.copies}.c"
            if done.returncode == 0 and source.is_file():
                functions = len(
                    re.findall(r"^static TS_NOINLINE int \w+_steps_\d+", source.read_text(), re.M)
                )
                include = ["-I", str(out / "tinysched" / "include"), "-I", str(out)]
                started = time.perf_counter()
                subprocess.run(
                    ["gcc", "-std=c99", "-O2", *include, "-c", str(source), "-o", str(Path(tmp) / "m.o")],
                    check=True,
                )
                print(
                    f"  gcc -O2 on {source.name} alone: {time.perf_counter() - started:.1f} s "
                    f"({functions} step functions)"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
