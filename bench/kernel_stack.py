"""Measures the stack every C kernel needs, on QEMU, and writes targets/kernel_stack.yaml.

`tinysched build` sizes a firmware's stack reservation from that table (tinysched/build/stack.py):
the deepest measured stack over the kernels the model calls, plus the harness's, plus a margin.

What is measured: every model here (the shared models of /work/shared/models that the code generator
supports, and a few generated ones) runs on the emulated boards through the device harness, which
paints the free stack and reports how deep the model's invoke went (`stack_bytes_measured`) and how
deep the harness went around it (`stack_bytes_total`). A kernel's entry is the deepest model stack
measured among the models that call it: the kernel's own frames plus the generated invoke function
and whatever other kernel of that model went deeper, so an upper bound of what the kernel needs.

    PYTHONPATH=. python bench/kernel_stack.py [--boards mps2-an386,mps2-an500,mps3-an547] [-j 2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from tinysched.boards import get_board
from tinysched.build.elfsize import DoesNotFit
from tinysched.build.sources import write_sources
from tinysched.device import reference
from tinysched.device.runner import invoke_instructions_estimate, measure_sources
from tinysched.errors import TinyschedError
from tinysched.model.modelgen import ModelBuilder, random_branching_model, tiny_demo_model
from tinysched.model.reader import read_model
from tinysched.order.recompute import total_macs
from tinysched.pipeline import DEFAULT_PLAN_OPTIONS, generate, plan

SHARED = Path("/work/shared/models")
SEMIHOST_ABOVE = 32 * 1024  # input bytes above which inputs go by semihosting (as the shared test does)
OUT = Path(__file__).resolve().parent.parent / "targets" / "kernel_stack.yaml"


def legacy_uint8_model() -> bytes:
    """A small legacy uint8 model (tinysched.model.uint8): the filter-offset CONV_2D and
    DEPTHWISE_CONV_2D, the half-up AVERAGE_POOL_2D and the edges' sign flips, which no shared model
    the boards can hold calls."""
    b = ModelBuilder(seed=5, legacy_uint8=True)
    x = b.input("x", (1, 16, 16, 3), scale=1 / 50, zero_point=9)
    t = b.conv2d(x, 16, (3, 3), (2, 2), "SAME", activation="RELU6", name="u8_conv")
    t = b.depthwise_conv2d(t, (3, 3), (1, 1), "SAME", activation="RELU6", name="u8_dw")
    t = b.average_pool2d(t, (2, 2), (2, 2), "VALID", name="u8_pool")
    b.output(b.conv2d(t, 5, (1, 1), name="u8_scores"))
    return b.build()


def expanding_model() -> bytes:
    """A frame into an inverted residual block whose 1x1 expansion a 3x3 stride-2 depthwise reads,
    then a 7x7 one: planned with --stream-input (STREAMED), both pairs run by channel groups
    (ts_expand_dw_s8, tinysched.memory.expand), one in the input's stage, one alone, which no
    default plan calls."""
    b = ModelBuilder(seed=3)
    x = b.input("frame", (1, 48, 40, 3))
    t = b.conv2d(x, 8, (3, 3), (2, 2), "SAME", activation="RELU6", name="conv1")
    t = b.conv2d(t, 48, (1, 1), activation="RELU6", name="expand1")
    t = b.depthwise_conv2d(t, (3, 3), (2, 2), "SAME", activation="RELU6", name="dw1")
    t = b.conv2d(t, 8, (1, 1), name="project1")
    t = b.conv2d(t, 36, (1, 1), activation="RELU6", name="expand2")
    t = b.depthwise_conv2d(t, (7, 7), (2, 2), "SAME", activation="RELU6", name="dw2")
    t = b.conv2d(t, 8, (1, 1), name="project2")
    b.output(b.mean(t, (1, 2), keepdims=True, name="gap"))
    return b.build()


# models also measured with their input streamed (their plans' options): the expansions by groups
STREAMED = {"expanding": replace(DEFAULT_PLAN_OPTIONS, stream_input=True, stream_mac_budget=40.0)}


def models(work: Path) -> list[Path]:
    """The shared models (when present) and generated ones covering the element-wise kernels and a
    legacy uint8 model's."""
    found = sorted(SHARED.glob("*.tflite")) if SHARED.is_dir() else []
    generated = {
        "demo": tiny_demo_model(),
        "legacy_uint8": legacy_uint8_model(),
        "expanding": expanding_model(),
    }
    for seed in (1, 3, 5, 7):
        generated[f"branching_{seed}"] = random_branching_model(seed=seed, n_blocks=6)
    for name, data in generated.items():
        path = work / f"{name}.tflite"
        path.write_bytes(data)
        found.append(path)
    return found


# Both memory models: the refined one (the default) calls the in-place variants and no copy for a
# view; the tensor one the default kernels and ts_copy for RESHAPE. Every kernel a build can call is measured.
MEMORY_MODELS = ("refined", "tensor")


def measure_one(path: Path, boards: list[str], work: Path) -> list[dict[str, Any]]:
    rows = []
    for model in MEMORY_MODELS:
        rows += measure_model(path, boards, work / model, replace(DEFAULT_PLAN_OPTIONS, memory_model=model))
    if path.stem in STREAMED:
        rows += measure_model(path, boards, work / "streamed", STREAMED[path.stem])
    return rows


def measure_model(path: Path, boards: list[str], work: Path, options: Any) -> list[dict[str, Any]]:
    try:
        planned = plan(read_model(path), options)
        module = generate(planned)
    except TinyschedError as err:
        print(f"{path.stem}: skipped ({str(err)[:100]})", file=sys.stderr)
        return []
    sources = write_sources(module, work / path.stem / "src")
    input_sets = [list(s) for s in reference.random_inputs(path, 0, 1)]
    expected = [[a.tobytes() for a in r.outputs] for r in reference.run_reference_many(path, input_sets)]
    inputs = [[a.tobytes() for a in s] for s in input_sets]
    semihost = sum(len(x) for x in inputs[0]) > SEMIHOST_ABOVE
    rows = []
    for board in boards:
        try:
            result = measure_sources(
                sources, board, inputs, expected, planned.arena.arena_bytes, work / path.stem / board,
                arena_high_water_planned=planned.arena.high_water_bytes, semihost_inputs=semihost,
                invoke_instructions=invoke_instructions_estimate(macs=total_macs(planned.graph)),
            )  # fmt: skip
        except DoesNotFit:
            continue
        except TinyschedError as err:  # e.g. the harness's buffers do not fit that board's free RAM
            print(f"{path.stem} on {board}: not measured ({str(err)[:120]})", file=sys.stderr)
            continue
        row = {
            "model": path.stem,
            "board": board,
            "kernels": list(module.kernels),
            "stack": result.stack_bytes_measured,
            "total": result.stack_bytes_total,
            "ok": result.ok,
        }
        print(
            f"{path.stem:34} {board:11} {options.memory_model:8} model {row['stack']:6} B  with harness "
            f"{row['total']:6} B",
            flush=True,
        )
        rows.append(row)
    return rows


def table(rows: list[dict[str, Any]], boards: list[str]) -> dict[str, Any]:
    core = {b: get_board(b).core for b in boards}
    kernels: dict[str, dict[str, Any]] = {}
    for r in rows:
        for k in r["kernels"]:
            entry = kernels.setdefault(k, {"bytes": 0, "deepest_in": "", "by_core": {}})
            if r["stack"] > entry["bytes"]:
                entry.update(bytes=r["stack"], deepest_in=f"{r['model']} on {r['board']}")
            by_core = entry["by_core"]
            by_core[core[r["board"]]] = max(by_core.get(core[r["board"]], 0), r["stack"])
    for entry in kernels.values():
        entry["by_core"] = dict(sorted(entry["by_core"].items()))
    return {
        "measured_on": boards,
        "models": sorted({r["model"] for r in rows}),
        "harness_bytes": max(r["total"] - r["stack"] for r in rows),
        "kernels": dict(sorted(kernels.items())),
    }


HEADER = """\
# Stack measured per C kernel on QEMU, by bench/kernel_stack.py (do not edit: rerun it).
#
# bytes: the deepest stack a model's invoke reached (painted-stack high-water, the device harness's
# stack_bytes_measured) among the measured models that call the kernel: the kernel's frames plus the
# generated invoke function, so an upper bound of what that kernel needs; by_core: the same on the
# boards of each core (a build for one of these cores takes its own figure, other cores `bytes`, the
# deepest of all: Helium's kernels keep blocks on the stack that the DSP cores' do not).
# harness_bytes: the deepest the harness itself went around an invoke (stack_bytes_total -
# stack_bytes_measured). tinysched/build/stack.py sizes `build`'s default stack reservation from it:
# max over the model's kernels + harness_bytes, plus 25 % and 256 B; a kernel missing here falls
# back to the board's stack_bytes.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", default="mps2-an386,mps2-an500,mps3-an547")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("-o", "--output", type=Path, default=OUT)
    args = parser.parse_args(argv)
    boards = args.boards.split(",")
    with tempfile.TemporaryDirectory(prefix="tinysched-stack-") as tmp:
        work = Path(tmp)
        paths = sorted(models(work), key=lambda p: -p.stat().st_size)
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            rows = [r for rs in pool.map(lambda p: measure_one(p, boards, work), paths) for r in rs]
    bad = [f"{r['model']} on {r['board']}" for r in rows if not r["ok"]]
    if bad:
        print(f"not measured as planned (outputs or arena differ): {', '.join(bad)}", file=sys.stderr)
        return 1
    doc = table(rows, boards)
    doc["runs"] = [{k: r[k] for k in ("model", "board", "stack", "total")} for r in rows]
    args.output.write_text(HEADER + yaml.safe_dump(doc, sort_keys=False, width=110))
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
