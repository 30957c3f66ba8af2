"""Host benchmark of the generated C: invoke time against the tflite-micro Python interpreter and
ai-edge-litert, and total RAM against stock TFLM's arena, every shared model measured in one run.

    PYTHONPATH=. python bench/bench_host.py [--models DIR] [--markdown]

For every shared model the code generator supports: the generated code is built with
`tinysched build --board host` flags (-O2), timed inside its runner on one seeded input; the same input
runs through tflite-micro's Python interpreter (reference kernels) and ai-edge-litert (optimised
builtin kernels, one thread, no delegates) in child processes, timed around `invoke()` only. Every
engine reports its fastest invoke over about `--budget` seconds: the least disturbed by other load. RAM of
the generated program is the arena plus every other byte of .data/.bss its objects define, read with
`size` from the Cortex-M4 objects; stock TFLM's total arena is what its interpreter reports.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tinysched.build.host import bench_runner  # noqa: E402
from tinysched.codegen import check_supported  # noqa: E402
from tinysched.commands.build import build_model  # noqa: E402
from tinysched.device.reference import random_inputs  # noqa: E402
from tinysched.errors import TinyschedError  # noqa: E402
from tinysched.model.reader import read_model  # noqa: E402

_TIMER_CHILD = r"""
import sys, time, json
import numpy as np
kind, model, inputs, budget = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
with np.load(inputs) as f:
    arrays = [f[k] for k in sorted(f.files, key=lambda k: int(k[4:]))]
if kind == "tflm":
    from tflite_micro.python.tflite_micro import runtime
    data = open(model, "rb").read()
    it = runtime.Interpreter.from_bytes(data, arena_size=10 * len(data) + (16 << 20))
    def run():
        for i, a in enumerate(arrays):
            it.set_input(a, i)
        t = time.perf_counter(); it.invoke(); return time.perf_counter() - t
else:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    it = Interpreter(model_path=model, num_threads=1,
                     experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    it.allocate_tensors()
    details = it.get_input_details()
    def run():
        for d, a in zip(details, arrays):
            it.set_tensor(d["index"], a)
        t = time.perf_counter(); it.invoke(); return time.perf_counter() - t
run()  # warm-up
times, spent = [], 0.0
while len(times) < 3 or (spent < budget and len(times) < 1000):
    times.append(run()); spent += times[-1]
print(json.dumps({"ns": float(np.min(times)) * 1e9, "runs": len(times)}))
"""


def time_child(kind: str, model: Path, inputs: list[np.ndarray], budget: float) -> float | None:
    with tempfile.TemporaryDirectory(prefix="tinysched-bench-") as tmp:
        npz = Path(tmp) / "inputs.npz"
        np.savez(npz, *inputs)
        proc = subprocess.run(
            [sys.executable, "-c", _TIMER_CHILD, kind, str(model), str(npz), str(budget)],
            capture_output=True,
            text=True,
            check=False,
            timeout=900,
        )
    if proc.returncode != 0:
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])["ns"]


def static_ram(directory: Path, prefix: str, kernels: tuple[str, ...]) -> int | None:
    """Bytes of .data + .bss of the generated module and its kernels, compiled for Cortex-M4."""
    if shutil.which("arm-none-eabi-gcc") is None or shutil.which("arm-none-eabi-size") is None:
        return None
    objects = []
    sources = [f"{prefix}.c", f"{prefix}_weights.c", *(f"tinysched/kernels/{k}.c" for k in kernels)]
    for k, src in enumerate(sources):
        obj = directory / f"bench_{k}.o"
        subprocess.run(
            ["arm-none-eabi-gcc", "-std=c99", "-O2", "-mcpu=cortex-m4", "-mthumb", "-c", "-I.",
             "-Itinysched/include", "-Itinysched/kernels", src, "-o", str(obj)],
            cwd=directory, check=True,
        )  # fmt: skip
        objects.append(str(obj))
    out = subprocess.run(
        ["arm-none-eabi-size", "-t", *objects], capture_output=True, text=True, check=True
    ).stdout
    text, data, bss = (int(v) for v in out.strip().splitlines()[-1].split()[:3])
    return data + bss


def tflm_total_arena(model: Path) -> int | None:
    from tinysched.arena.tflm import run_tflm

    data = model.read_bytes()
    try:
        return run_tflm(data, random_inputs(data, seed=0, count=1)[0]).total_bytes
    except (TinyschedError, AttributeError):
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--models", default=str(Path(os.environ.get("TINYSCHED_MODELS") or REPO.parent / "shared" / "models"))
    )
    parser.add_argument("--budget", type=float, default=1.0, help="seconds of timing per model and engine")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    rows = []
    for path in sorted(Path(args.models).glob("*.tflite")):
        try:
            check_supported(read_model(path))
        except TinyschedError:
            continue
        inputs = random_inputs(path, seed=0, count=1)[0]
        with tempfile.TemporaryDirectory(prefix="tinysched-bench-") as tmp:
            started = time.perf_counter()
            result = build_model(path, Path(tmp) / "build", "host", report=False)
            build_s = time.perf_counter() - started
            probe = bench_runner(result.runner, result.module, inputs, 1)
            iterations = max(3, min(2000, int(args.budget * 1e9 / max(probe, 1.0))))
            ours = bench_runner(result.runner, result.module, inputs, iterations)
            ram = static_ram(result.directory, result.module.prefix, result.module.kernels)
        rows.append(
            {
                "model": path.stem,
                "ops": len(result.graph.operators),
                "generated_us": ours / 1e3,
                "tflm_us": (t / 1e3) if (t := time_child("tflm", path, inputs, args.budget)) else None,
                "litert_us": (t / 1e3) if (t := time_child("litert", path, inputs, args.budget)) else None,
                "arena": result.module.arena_bytes,
                "static_ram": ram,
                "tflm_arena": tflm_total_arena(path),
                "build_s": build_s,
            }
        )
        print(json.dumps(rows[-1]), file=sys.stderr)
    if args.markdown:
        print(markdown(rows))
    else:
        print(json.dumps(rows, indent=2))
    return 0


def _fmt(v: float | None, digits: int = 0) -> str:
    return "n/a" if v is None else f"{v:,.{digits}f}"


def markdown(rows: list[dict]) -> str:
    lines = [
        "| model | ops | generated C (µs) | tflite-micro Python (µs) | ai-edge-litert (µs) | vs TFLM | vs LiteRT "
        "| generated RAM (B) | stock TFLM arena (B) | RAM saved |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        # .data + .bss of the generated objects already include the arena (a static array).
        ram = r["static_ram"] if r["static_ram"] is not None else r["arena"]
        speed_tflm = f"{r['tflm_us'] / r['generated_us']:.1f}x" if r["tflm_us"] else "n/a"
        speed_litert = f"{r['litert_us'] / r['generated_us']:.2f}x" if r["litert_us"] else "n/a"
        saved = f"{100 * (1 - ram / r['tflm_arena']):.0f}%" if r["tflm_arena"] else "n/a"
        lines.append(
            f"| {r['model']} | {r['ops']} | {_fmt(r['generated_us'], 1)} | {_fmt(r['tflm_us'], 1)} "
            f"| {_fmt(r['litert_us'], 1)} | {speed_tflm} | {speed_litert} | {ram:,} | {_fmt(r['tflm_arena'])} | {saved} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
