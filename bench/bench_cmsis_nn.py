"""tinysched's kernels against CMSIS-NN's, layer by layer, in the same generated program on QEMU.

    PYTHONPATH=. python bench/bench_cmsis_nn.py --cmsis-nn DIR [--cmsis-core DIR] [--core m55]
        [--core m7] [--models DIR] [--model NAME ...] [--json FILE] [--keep DIR]

Per model: plan and generate with tinysched's default flags (exactly what `tinysched build` writes),
then build three images of that one program for the core's emulated board (m55: mps3-an547,
Cortex-M55 with Helium; m7: mps2-an500; m4: mps2-an386; m33: mps2-an505) with the board's compiler
flags (mps3-an547: -mcpu=cortex-m55 -mthumb -mfloat-abi=hard -O2 ..., which makes CMSIS-NN's
arm_nn_math_types.h define ARM_MATH_MVEI, so its Helium paths are the ones built):

  ts     the generated program as it is;
  cmsis  the same program with each CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, ADD,
         AVERAGE_POOL_2D and SOFTMAX step calling bench/cmsis_nn/tsb_cmsis_nn.c instead of
         tinysched's kernel: a wrapper that takes the kernel's own arguments (the generated parameter
         struct with its per-channel multipliers and shifts, the same weights and biases, the
         buffers the plan gave) and calls CMSIS-NN the way TFLite Micro's cmsis_nn kernels do
         (arm_convolve_wrapper_s8, arm_depthwise_conv_wrapper_s8, arm_fully_connected_wrapper_s8,
         arm_elementwise_add_s8, arm_avgpool_s8, arm_softmax_s8); a streamed chain of CONV_2D and
         DEPTHWISE_CONV_2D runs its layers whole, through static buffers, as CMSIS-NN would;
  check  the cmsis program where each swapped step also runs tinysched's call on the same arena
         and counts the output bytes that differ (written to a host file by semihosting).

CMSIS-NN's sources are compiled from the checkout given (never copied into tinysched): the files
that define what the wrapper calls, found by symbol, each with the same compiler and flags as the
generated program. Its scratch is a static buffer outside the arena. Where the plan puts a layer's
output over its input (tinysched's in-place variants), CMSIS-NN writes a static buffer that the
wrapper copies to the planned output; a fourth image that copies twice measures those copies, and
the CMSIS-NN column is the layer without them (the as-run count is in --json).

All run on QEMU with -icount (instructions, not cycles) on one seeded input; per-step counts from
the harness's TS_PROFILE_STEPS; outputs of the ts and cmsis images are compared byte for byte with
TFLite's. Nothing is fetched: the checkout is given. CMSIS-NN at PINNED_COMMIT (the commit the
M7 side by side used) is checked by its git tree id when git is there; another checkout runs with
a warning. Get it with

    git clone https://github.com/ARM-software/CMSIS-NN /work/cmsis-nn
    git -C /work/cmsis-nn checkout 4ab83cc3cc98fb85ed6dafb55e8ca02f1628dcae

At that commit CMSIS-NN needs no CMSIS-Core header (arm_nn_compiler.h includes arm_mve.h and
arm_acle.h from the compiler); --cmsis-core DIR (a CMSIS_6 checkout) only adds its
CMSIS/Core/Include to the include path.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

WRAPPER_DIR = REPO / "bench" / "cmsis_nn"
PINNED_COMMIT = "4ab83cc3cc98fb85ed6dafb55e8ca02f1628dcae"
PINNED_TREE = "a9c20186ed352c085b3165c00b16779d50d9d0c6"  # git rev-parse 4ab83cc3^{tree}
CORES = {"m55": "mps3-an547", "m7": "mps2-an500", "m4": "mps2-an386", "m33": "mps2-an505"}
DEFAULT_MODELS = ("mlperf_ic_resnet8_int8", "mlperf_vww_mbv1_025_96_int8", "mlperf_kws_dscnn_int8")

SWAPPED_TYPES = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "ADD", "AVERAGE_POOL_2D", "SOFTMAX")
# tinysched kernel -> its wrapper (the same arguments), per operator type
WRAPPED = {
    "CONV_2D": (
        "ts_conv2d_s8",
        "ts_conv2d_s8_staged",
        "ts_conv2d_s8_wide",
        "ts_conv2d_s8_pixels",
        "ts_conv2d_s8_pixel_rows",
        "ts_conv2d_s8_pixels_own",
    ),
    "DEPTHWISE_CONV_2D": ("ts_depthwise_conv2d_s8", "ts_depthwise_conv2d_s8_staged"),
    "FULLY_CONNECTED": ("ts_fully_connected_s8",),
    "ADD": ("ts_add_s8",),
    "AVERAGE_POOL_2D": ("ts_avg_pool2d_s8",),
    "SOFTMAX": ("ts_softmax_s8",),
}
STREAM_KERNELS = ("ts_conv2d_s8", "ts_depthwise_conv2d_s8")  # chain members the wrapper runs whole
# a chain member's row call -> the kernel whose wrapper runs its layer whole (codegen.lower_stream
# calls the kernels with their checks made once, a CONV_2D with a strip for the widened path; on a
# Helium core the _layer entries: the same with the generator's layer table, an argument after the
# ones the wrapper takes)
STREAM_ROW_CALLS = {
    "ts_conv2d_s8_checked": "ts_conv2d_s8",
    "ts_conv2d_s8_strip": "ts_conv2d_s8",
    "ts_conv2d_s8_strip_lone": "ts_conv2d_s8",
    "ts_conv2d_s8_pixel_widened": "ts_conv2d_s8",
    "ts_conv2d_s8_layer": "ts_conv2d_s8",
    "ts_conv2d_s8_pixels_checked": "ts_conv2d_s8",
    "ts_conv2d_s8_pixel_rows_checked": "ts_conv2d_s8",
    "ts_conv2d_s8_pixels_own_checked": "ts_conv2d_s8",
    "ts_depthwise_conv2d_s8_checked": "ts_depthwise_conv2d_s8",
    "ts_depthwise_conv2d_s8_layer": "ts_depthwise_conv2d_s8",
}
SCRATCH_BYTES = 32768  # CMSIS-NN's ctx.buf; the models here need at most a few KiB

WRAPPER_INCLUDE = (
    '#include "tsb_cmsis_nn.h" /* bench/bench_cmsis_nn.py: CMSIS-NN in place of the kernels */\n'
)


# ---- the generated program, step by step ---------------------------------------------------------------


@dataclass
class Step:
    """One step of the generated invoke: its operator, its source lines and what the bench does."""

    index: int
    op: int
    type: str
    head: str  # the step's comment, as generated
    body: str  # its statement(s), as generated
    swapped: str | None = None  # the CMSIS-NN statement(s), or None (tinysched's kernel runs)
    note: str = ""  # why a step of a swapped type keeps tinysched's kernel
    params: list[dict[str, int]] = field(default_factory=list)  # the parameter structs its calls take
    kernels: list[str] = field(default_factory=list)  # tinysched kernels it calls


_STEP_HEAD = re.compile(r"^    /\* step (\d+): operator (\d+) (.*)$")
_STEP_DONE = re.compile(r"^    TS_STEP_DONE\((\d+)u, .*\);$")
_PARAMS = re.compile(r"^static const (ts_\w+_params) (\w+) = \{\n(.*?)^\};", re.M | re.S)
_FIELD = re.compile(r"^\s+\.(\w+) = (-?\d+),$", re.M)
_CALL = re.compile(r"\b(ts_\w+)\(&(\w+),")


def parameter_structs(text: str) -> dict[str, dict[str, int]]:
    """Every `static const ts_..._params NAME = {...}` of a generated module: its integer fields."""
    return {m.group(2): {k: int(v) for k, v in _FIELD.findall(m.group(3))} for m in _PARAMS.finditer(text)}


def split_steps(text: str) -> tuple[list[str], list[Step | str]]:
    """The module's lines cut into the invoke's steps: (lines, pieces), a piece being a run of
    lines (str) or a Step (its comment head and its statements up to TS_STEP_DONE)."""
    lines = text.splitlines(keepends=True)
    pieces: list[Step | str] = []
    i = 0
    while i < len(lines):
        m = _STEP_HEAD.match(lines[i].rstrip("\n"))
        if not m:
            pieces.append(lines[i])
            i += 1
            continue
        j = i
        while not lines[j].rstrip().endswith("*/"):
            j += 1
        k = j + 1
        while not _STEP_DONE.match(lines[k].rstrip("\n")):
            k += 1
        done = _STEP_DONE.match(lines[k].rstrip("\n"))
        assert done and int(done.group(1)) == int(m.group(1)), f"step {m.group(1)}: no TS_STEP_DONE"
        pieces.append(
            Step(
                index=int(m.group(1)),
                op=int(m.group(2)),
                type=m.group(3).strip(),
                head="".join(lines[i : j + 1]),
                body="".join(lines[j + 1 : k]),
            )
        )
        pieces.append(lines[k])
        i = k + 1
    return lines, pieces


def _swap_plain(step: Step, structs: dict[str, dict[str, int]]) -> None:
    names = WRAPPED[step.type]
    calls = [(k, s) for k, s in _CALL.findall(step.body) if k in names]
    if len(calls) != 1:
        step.note = f"kept: {len(calls)} calls of {'/'.join(names)} in the step"
        return
    kernel, struct = calls[0]
    step.kernels = [kernel]
    step.params = [structs[struct]]
    step.swapped = re.sub(rf"\b{kernel}\(", f"tsb{kernel[2:]}(", step.body, count=1)


def _swap_stream(step: Step, structs: dict[str, dict[str, int]]) -> None:
    """A streamed chain: its layers whole, one after the other, the tensors between them in tsb_mid."""
    body = step.body
    stage_params = dict(re.findall(r"ts_\w+_params p(\d+) = (\w+);", body))
    stages = [
        (STREAM_ROW_CALLS.get(k, k), *rest)
        for k, *rest in re.findall(r"\b(ts_\w+)\(&p(\d+), rows, (\w+), (\w+), ", body)
    ]
    # the stage's one outer input (a stage reading several, a residual block, is kept)
    outer = re.findall(r"const int8_t \*const (?:input|x\d+) = \(const int8_t \*\)\(arena \+ (\d+)\);", body)
    source = re.search(r"const int8_t \*const (?:input|x\d+) = \(const int8_t \*\)\(arena \+ (\d+)\);", body)
    sink = re.search(r"int8_t \*const output = \(int8_t \*\)\(arena \+ (\d+)\);", body)
    code = re.search(r"return (\d+);", body)
    if (
        not stages
        or any(k not in STREAM_KERNELS for k, *_ in stages)
        or [int(s) for _, s, *_ in stages] != list(range(len(stages)))
        or not (source and sink and code)
        or len(outer) != 1
    ):
        step.note = "kept: a streamed chain with operators the wrapper does not run"
        return
    out = ["    { /* bench_cmsis_nn: the chain layer by layer, its tensors whole in tsb_mid() */\n"]
    for k, (kernel, s, weights, bias) in enumerate(stages):
        src = f"(const int8_t *)(arena + {source.group(1)})" if k == 0 else f"tsb_mid({k - 1})"
        dst = f"(int8_t *)(arena + {sink.group(1)})" if k == len(stages) - 1 else f"tsb_mid({k})"
        out += [
            f"        if (tsb{kernel[2:]}(&{stage_params[s]}, {src}, {weights}, {bias}, {dst}) != TS_OK) {{\n",
            f"            return {code.group(1)};\n",
            "        }\n",
        ]
        step.kernels.append(kernel)
        step.params.append(structs[stage_params[s]])
    out.append("    }\n")
    step.swapped = "".join(out)


def plan_swaps(text: str) -> tuple[list[Step | str], list[Step]]:
    """The module cut into steps, each step of a swapped type given its CMSIS-NN statement."""
    structs = parameter_structs(text)
    _lines, pieces = split_steps(text)
    steps = [p for p in pieces if isinstance(p, Step)]
    for step in steps:
        if step.type in SWAPPED_TYPES:
            _swap_plain(step, structs)
        elif step.type.endswith(" (streamed)"):
            members = step.type[: -len(" (streamed)")].split("+")
            if all(m in ("CONV_2D", "DEPTHWISE_CONV_2D") for m in members):
                _swap_stream(step, structs)
            else:
                step.note = "kept: a streamed chain with operators the wrapper does not run"
    return pieces, steps


def _assemble(pieces: Sequence[Step | str], render: Any) -> str:
    out = []
    for piece in pieces:
        out.append(piece if isinstance(piece, str) else piece.head + render(piece))
    return "".join(out)


def _with_include(text: str) -> str:
    marker = '#include "ts_kernels.h"\n'
    assert marker in text, "the generated module does not include ts_kernels.h"
    return text.replace(marker, marker + WRAPPER_INCLUDE, 1)


def cmsis_source(pieces: Sequence[Step | str]) -> str:
    """The module with every swapped step calling the wrappers."""
    return _with_include(_assemble(pieces, lambda s: s.swapped if s.swapped is not None else s.body))


def check_source(pieces: Sequence[Step | str], arena_bytes: int, outputs: dict[int, tuple[int, int]]) -> str:
    """The module whose swapped steps run tinysched's call and the wrapper on the same arena and
    count the output bytes that differ (`outputs`: step -> (arena offset, bytes) of its output)."""

    def render(s: Step) -> str:
        if s.swapped is None:
            return s.body
        offset, nbytes = outputs[s.index]
        return (
            f"    tsb_check_save(arena, {arena_bytes}u);\n{s.body}"
            f"    tsb_check_keep(arena + {offset}, {nbytes}u);\n"
            f"    tsb_check_restore(arena, {arena_bytes}u);\n{s.swapped}"
            f"    tsb_check_compare({s.index}u, arena + {offset}, {nbytes}u);\n"
        )

    text = _assemble(pieces, render)
    steps = sum(isinstance(p, Step) for p in pieces)
    # the steps' function (`<prefix>_steps`, which both invokes call) ends just before the first invoke
    invoke = re.search(r"^int \w+_invoke\(", text, flags=re.M)
    at = text.rfind("\n    return ", 0, invoke.start() if invoke else 0) + 1
    assert at > 0, "the steps' final return was not found"
    text = text[:at] + f"    tsb_check_report({steps}u);\n" + text[at:]
    return _with_include(text)


# ---- which CMSIS-NN function runs (the selection of its wrappers at PINNED_COMMIT) -------------------


def cmsis_path(kernel: str, p: dict[str, int], mve: bool) -> str:
    """The CMSIS-NN function the wrapper for `kernel` ends in, for parameters `p` (as
    arm_convolve_wrapper_s8.c, arm_depthwise_conv_wrapper_s8.c etc. choose)."""
    if kernel.startswith("ts_conv2d_s8"):
        pointwise = (
            p["filter_h"] == 1 and p["filter_w"] == 1 and p["dilation_h"] == 1 and p["dilation_w"] == 1
        )
        if pointwise and p["pad_top"] == 0 and p["pad_left"] == 0:
            fast = p["stride_h"] == 1 and p["stride_w"] == 1
            return "arm_convolve_1x1_s8_fast" if fast else "arm_convolve_1x1_s8"
        if (
            p["in_h"] == 1
            and p["dilation_w"] == 1
            and p["filter_h"] == 1
            and p["stride_w"] * p["in_c"] % 4 == 0
        ):
            return "arm_convolve_1_x_n_s8"
        return "arm_convolve_s8"
    if kernel.startswith("ts_depthwise_conv2d_s8"):
        if mve and p["in_c"] == 1 and p["out_c"] > 8:
            return "arm_depthwise_conv_to_conv_s8"
        if p["depth_multiplier"] == 1 and p["batches"] == 1 and p["dilation_h"] == 1 and p["dilation_w"] == 1:
            if (
                not mve
                and p["filter_h"] == 3
                and p["filter_w"] == 3
                and p["pad_top"] <= 1
                and p["pad_left"] <= 1
            ):
                return "arm_depthwise_conv_3x3_s8"
            return "arm_depthwise_conv_s8_opt"
        return "arm_depthwise_conv_s8"
    if kernel == "ts_fully_connected_s8":
        return "arm_fully_connected_per_channel_s8" if p["per_channel"] else "arm_fully_connected_s8"
    if kernel == "ts_add_s8":
        return "arm_elementwise_add_s8"  # the generated ADDs here never broadcast (checked by the outputs)
    if kernel == "ts_avg_pool2d_s8":
        return "arm_avgpool_s8"
    if kernel == "ts_softmax_s8":
        return "arm_softmax_s8"
    return "?"


def shape_text(kernel: str, p: dict[str, int]) -> str:
    """The layer's geometry, short: input -> output, filter, stride, pads."""
    if kernel.startswith(("ts_conv2d", "ts_depthwise")):
        return (
            f"{p['in_h']}x{p['in_w']}x{p['in_c']} -> {p['out_h']}x{p['out_w']}x{p['out_c']}, "
            f"{p['filter_h']}x{p['filter_w']} s{p['stride_h']} p{p['pad_top']}"
        )
    if kernel == "ts_fully_connected_s8":
        return f"{p['in_depth']} -> {p['out_depth']}"
    if kernel == "ts_avg_pool2d_s8":
        return f"{p['in_h']}x{p['in_w']}x{p['channels']} -> {p['out_h']}x{p['out_w']}, {p['filter_h']}x{p['filter_w']}"
    if kernel == "ts_softmax_s8":
        return f"{p['outer']}x{p['depth']}"
    return ""  # ADD: its element count is the table's MACs


# ---- CMSIS-NN's sources: the files that define what the wrapper calls ----------------------------------


def checkout_tree(directory: Path) -> str | None:
    """The git tree id of the files under `directory` (as `git rev-parse COMMIT^{tree}` names a
    commit's), without touching it: staged into a scratch index. None without git."""
    if shutil.which("git") is None:
        return None
    with tempfile.TemporaryDirectory(prefix="tsb-tree-") as tmp:
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        base = ["git", f"--git-dir={tmp}/r.git", f"--work-tree={directory}"]
        try:
            subprocess.run(["git", "init", "-q", "--bare", f"{tmp}/r.git"], check=True, capture_output=True)
            subprocess.run([*base, "add", "-A"], check=True, capture_output=True, env=env)
            out = subprocess.run([*base, "write-tree"], check=True, capture_output=True, text=True, env=env)
        except subprocess.CalledProcessError:
            return None
    return out.stdout.strip()


def _symbols(nm: str, obj: Path) -> tuple[set[str], set[str]]:
    out = subprocess.run([nm, "--defined-only", "-g", str(obj)], capture_output=True, text=True, check=True)
    defined = {line.split()[-1] for line in out.stdout.splitlines() if line.strip()}
    out = subprocess.run([nm, "-u", str(obj)], capture_output=True, text=True, check=True)
    undefined = {line.split()[-1] for line in out.stdout.splitlines() if line.strip()}
    return defined, undefined


def cmsis_sources(cmsis: Path, includes: Sequence[Path], board: Any, work: Path) -> list[Path]:
    """The CMSIS-NN .c files the wrapper needs, transitively: each non-float source compiled once
    with the board's flags, then the files defining the wrapper's undefined symbols, theirs, ..."""
    from tinysched.build.firmware import COMMON_CFLAGS, require_toolchain

    gcc = require_toolchain()
    nm = str(Path(gcc).with_name(Path(gcc).name.replace("gcc", "nm")))
    flags = [*board.cflags, *COMMON_CFLAGS, *[f"-I{p}" for p in includes]]
    work.mkdir(parents=True, exist_ok=True)
    candidates = sorted(p for p in (cmsis / "Source").rglob("*.c") if not re.search(r"_f(16|32)\.c$", p.name))
    defined_by: dict[str, Path] = {}
    needs: dict[Path, set[str]] = {}
    for k, src in enumerate(candidates):
        obj = work / f"{k:03d}_{src.stem}.o"
        proc = subprocess.run([gcc, *flags, "-c", str(src), "-o", str(obj)], capture_output=True, text=True)
        if proc.returncode != 0:
            continue  # a source this core or compiler does not build: never needed below, or the link says so
        defined, undefined = _symbols(nm, obj)
        for s in defined:
            defined_by.setdefault(s, src)
        needs[src] = undefined
    wrapper_obj = work / "tsb_cmsis_nn.o"
    subprocess.run(
        [gcc, *flags, f"-I{REPO / 'firmware' / 'include'}", f"-I{WRAPPER_DIR}", "-c",
         str(WRAPPER_DIR / "tsb_cmsis_nn.c"), "-o", str(wrapper_obj)],
        check=True, capture_output=True,
    )  # fmt: skip
    todo = list(_symbols(nm, wrapper_obj)[1])
    chosen: set[Path] = set()
    while todo:
        src = defined_by.get(todo.pop())
        if src is not None and src not in chosen:
            chosen.add(src)
            todo += needs[src]
    return sorted(chosen)


# ---- building and measuring ---------------------------------------------------------------------------


@dataclass
class Variant:
    name: str
    instructions: int | None
    steps: list[int]
    outputs_match: bool | None
    mismatches: list[str]


def _measure(
    sources: Any, board: Any, out: Path, defines: Sequence[str], werror: bool, io: dict[str, Any]
) -> Variant:
    from tinysched.build.firmware import build_firmware
    from tinysched.device.runner import invoke_instructions_estimate, measure_image

    image = build_firmware(sources, board, out, defines=list(defines), werror=werror)
    r = measure_image(
        image, board, io["inputs"], io["expected"], io["arena_bytes"],
        arena_high_water_planned=io["high_water"], expected_image_id=image.image_id,
        invoke_instructions=4 * invoke_instructions_estimate(macs=io["macs"]), semihost_inputs=True,
    )  # fmt: skip
    return Variant(out.name, r.instructions, list(r.step_counts), r.outputs_match, list(r.mismatches))


def _sources(base: Any, extra_c: Iterable[Path], extra_inc: Iterable[Path]) -> Any:
    from tinysched.build.sources import SourceSet

    return SourceSet(
        directory=base.directory,
        c_files=(*base.c_files, *extra_c),
        include_dirs=(*base.include_dirs, *extra_inc),
        model_info_symbol=base.model_info_symbol,
    )


def run_model(model: Path, board: Any, cmsis: Path, core_inc: Path | None, work: Path, cmsis_c: list[Path],
              check: bool = True, prefer: str = "memory", log: Any = print) -> dict[str, Any]:  # fmt: skip
    """Every number of one model on one board (see the module's docstring); planned with the
    default options (`prefer` aside: the default, memory, or speed)."""
    from tinysched.build.sources import write_sources
    from tinysched.commands.common import read_checked_model
    from tinysched.device.reference import interface_inputs, reference_io
    from tinysched.memory.stream import operator_type, stream_of
    from tinysched.order.recompute import macs, total_macs
    from tinysched.pipeline import DEFAULT_PLAN_OPTIONS, generate, plan

    t0 = time.monotonic()
    graph = read_checked_model(model)
    # planned for the board's core, as `tinysched build --board` plans (a Helium core's code takes
    # the generator's Helium tables: pipeline.generate's dsp_tables)
    planned = plan(graph, replace(DEFAULT_PLAN_OPTIONS, prefer=prefer, core=board.core))
    if planned.recompute is not None or planned.arena.pools:
        raise SystemExit(f"{model.name}: recomputation or a split arena: not what this bench compares")
    module = generate(planned, None)
    g = planned.graph
    offsets = planned.arena.offsets
    ts_src = write_sources(module, work / "src-ts")
    text = (ts_src.directory / f"{module.prefix}.c").read_text()
    pieces, steps = plan_swaps(text)
    outputs, copies, mid = {}, {}, 4
    for s in steps:
        op = g.operators[s.op]
        if s.type != operator_type(op):
            raise SystemExit(
                f"{model.name} step {s.index}: the C says {s.type}, the plan {operator_type(op)}"
            )
        out_t = op.outputs[0]
        if s.swapped is not None:
            outputs[s.index] = (offsets[out_t], g.tensors[out_t].nbytes)
        if (stream := stream_of(op)) is not None:
            mid = max(mid, *stream.tensor_bytes)
        copies[s.index] = 0
        if s.swapped is not None and stream is None:
            o0, n0 = outputs[s.index]
            for t in [t for t in op.inputs if t >= 0 and t in offsets][: 2 if s.type == "ADD" else 1]:
                i0, n1 = offsets[t], g.tensors[t].nbytes
                exact = s.type == "ADD" and i0 == o0
                if i0 < o0 + n0 and o0 < i0 + n1 and not exact:
                    copies[s.index] = n0
    max_out = max(n for _o, n in outputs.values())
    defines = [f"-DTSB_SCRATCH_BYTES={SCRATCH_BYTES}", f"-DTSB_OUT_BYTES={max_out}", f"-DTSB_MID_BYTES={mid}"]
    cms_src = write_sources(module, work / "src-cmsis")
    (cms_src.directory / f"{module.prefix}.c").write_text(cmsis_source(pieces), encoding="ascii")
    includes = [WRAPPER_DIR, cmsis / "Include", *([core_inc] if core_inc else [])]
    extra_c = [WRAPPER_DIR / "tsb_cmsis_nn.c", *cmsis_c]
    cms_set = _sources(cms_src, extra_c, includes)

    edges = planned.interface.edges
    sets = interface_inputs(model, edges, 0, 1)
    io = {
        "inputs": [[a.tobytes() for a in s] for s in sets],
        "expected": [[a.tobytes() for a in outs] for outs in reference_io(model, edges, sets)[1]],
        "arena_bytes": int(planned.arena.arena_bytes),
        "high_water": int(planned.arena.high_water_bytes),
        "macs": total_macs(g),
    }
    log(f"{model.stem}: planned and generated ({time.monotonic() - t0:.0f} s); measuring tinysched")
    ts = _measure(ts_src, board, work / "ts", [], True, io)
    log(f"{model.stem}: tinysched {ts.instructions:,}; measuring CMSIS-NN")
    cms = _measure(cms_set, board, work / "cmsis", defines, False, io)
    twice = None
    if any(copies.values()):
        log(f"{model.stem}: CMSIS-NN {cms.instructions:,} as run; measuring its copies")
        twice = _measure(cms_set, board, work / "cmsis-copy2", [*defines, "-DTSB_COPY_TWICE"], False, io)
    diffs: dict[int, tuple[int, int]] = {}
    if check:
        log(f"{model.stem}: checking every swapped layer against tinysched's")
        chk_src = write_sources(module, work / "src-check")
        (chk_src.directory / f"{module.prefix}.c").write_text(
            check_source(pieces, module.arena_bytes, outputs), encoding="ascii"
        )
        report = work / "check.txt"
        report.unlink(missing_ok=True)
        chk_defines = [*defines, "-DTSB_CHECK", f"-DTSB_ARENA_BYTES={module.arena_bytes}",
                       f'-DTSB_CHECK_PATH="{report}"']  # fmt: skip
        chk = _measure(_sources(chk_src, extra_c, includes), board, work / "check", chk_defines, False, io)
        if report.exists():
            for line in report.read_text().splitlines():
                k, d, n = map(int, line.split())
                diffs[k] = (d, n)
        else:
            log(f"{model.stem}: the check image wrote no report ({'; '.join(chk.mismatches[:3])})")

    mve = "cortex-m55" in " ".join(board.cflags) or "cortex-m85" in " ".join(board.cflags)
    rows = []
    for s in steps:
        copy = (twice.steps[s.index] - cms.steps[s.index]) if twice is not None else 0
        rows.append(
            {
                "step": s.index,
                "op": s.op,
                "type": s.type,
                "swapped": s.swapped is not None,
                "note": s.note,
                "kernels": s.kernels,
                "paths": [cmsis_path(k, p, mve) for k, p in zip(s.kernels, s.params, strict=True)],
                "shape": "; ".join(shape_text(k, p) for k, p in zip(s.kernels, s.params, strict=True)),
                "macs": macs(g, s.op),
                "ts": ts.steps[s.index],
                "cmsis_as_run": cms.steps[s.index],
                "copy": copy,
                "copy_bytes": copies[s.index],
                "cmsis": cms.steps[s.index] - copy,
                "diff_bytes": diffs.get(s.index, (None, None))[0],
                "out_bytes": outputs.get(s.index, (0, 0))[1],
            }
        )
    copy_total = sum(r["copy"] for r in rows)
    return {
        "model": model.stem,
        "board": board.name,
        "prefer": prefer,
        "cflags": list(board.cflags),
        "arena_bytes": module.arena_bytes,
        "macs": io["macs"],
        "ts_total": ts.instructions,
        "cmsis_total_as_run": cms.instructions,
        "copy_total": copy_total,
        "cmsis_total": (cms.instructions or 0) - copy_total,
        "ts_outputs_match": ts.outputs_match,
        "cmsis_outputs_match": cms.outputs_match,
        "cmsis_mismatches": [m for m in cms.mismatches if m.startswith("input")],
        "checked": check and bool(diffs),
        "steps": rows,
        "seconds": round(time.monotonic() - t0, 1),
    }


# ---- tables -----------------------------------------------------------------------------------------


def _n(v: int | None) -> str:
    return "-" if v is None else f"{v:,}"


def _per(v: int, m: int) -> str:
    return f"{v / m:.2f}" if m else "-"


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.2f}" if b else "-"


def _paths(rows: Sequence[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for r in rows:
        key = " + ".join(r["paths"]) if r["swapped"] else "tinysched's kernel (" + r["note"] + ")"
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{k} x{n}" for k, n in counts.items())


def tables(results: Sequence[dict[str, Any]]) -> str:
    out = [
        "| model | layer type | n | MACs | tinysched instr | CMSIS-NN instr | ts instr/MAC | CMSIS instr/MAC "
        "| ratio ts/CMSIS | CMSIS-NN paths |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|---|",
    ]
    for res in results:
        rows = [r for r in res["steps"] if r["swapped"] or r["note"]]
        types: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            types.setdefault(r["type"], []).append(r)
        for t, rs in types.items():
            m, a, b = (sum(r[k] for r in rs) for k in ("macs", "ts", "cmsis"))
            out.append(
                f"| {res['model']} | {t} | {len(rs)} | {m:,} | {a:,} | {b:,} | {_per(a, m)} | {_per(b, m)} "
                f"| {_ratio(a, b)} | {_paths(rs)} |"
            )
        m, a, b = (sum(r[k] for r in rows) for k in ("macs", "ts", "cmsis"))
        out.append(
            f"| **{res['model']}** | **all these layers** | {len(rows)} | {m:,} | {a:,} | {b:,} | {_per(a, m)} "
            f"| {_per(b, m)} | **{_ratio(a, b)}** | |"
        )
    out += [
        "",
        "| model | board | tinysched whole invoke | CMSIS-NN swapped into the same invoke | ratio | copies "
        "(in-place outputs, not counted) | outputs vs TFLite (ts / CMSIS-NN) | layers whose output differs "
        "(CMSIS-NN vs ts) |",
        "|---|---|--:|--:|--:|--:|---|---|",
    ]
    for res in results:
        swapped = [r for r in res["steps"] if r["swapped"]]
        bad = [
            f"step {r['step']} ({r['diff_bytes']} of {r['out_bytes']} B)" for r in swapped if r["diff_bytes"]
        ]
        verdict = ("none" if not bad else ", ".join(bad)) if res["checked"] else "not checked"
        eq = {True: "bit-exact", False: "**differ**", None: "not compared"}
        out.append(
            f"| {res['model']} | {res['board']} | {_n(res['ts_total'])} | {_n(res['cmsis_total'])} "
            f"| **{_ratio(res['ts_total'] or 0, res['cmsis_total'])}** | {res['copy_total']:,} "
            f"| {eq[res['ts_outputs_match']]} / {eq[res['cmsis_outputs_match']]} | {verdict} |"
        )
    out += [
        "",
        "| model | step | type | CMSIS-NN path | MACs | ts instr | CMSIS instr | ts/MAC | CMSIS/MAC | ratio "
        "| copy instr (B) | shape |",
        "|---|--:|---|---|--:|--:|--:|--:|--:|--:|--:|---|",
    ]
    for res in results:
        for r in res["steps"]:
            if not (r["swapped"] or r["note"]):
                continue
            path = " + ".join(r["paths"]) if r["swapped"] else r["note"]
            copy = f"{r['copy']:,} ({r['copy_bytes']:,})" if r["copy_bytes"] else "-"
            out.append(
                f"| {res['model']} | {r['step']} | {r['type']} | {path} | {r['macs']:,} | {r['ts']:,} "
                f"| {r['cmsis']:,} | {_per(r['ts'], r['macs'])} | {_per(r['cmsis'], r['macs'])} "
                f"| {_ratio(r['ts'], r['cmsis'])} | {copy} | {r['shape']} |"
            )
    return "\n".join(out) + "\n"


# ---- command line ---------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.splitlines()[2:]),
    )  # fmt: skip
    parser.add_argument("--cmsis-nn", required=True, type=Path, metavar="DIR", help="a CMSIS-NN checkout")
    parser.add_argument("--cmsis-core", type=Path, metavar="DIR", help="a CMSIS_6 checkout (optional)")
    parser.add_argument("--core", action="append", choices=sorted(CORES), help="default: m55 (repeatable)")
    parser.add_argument(
        "--models",
        type=Path,
        default=Path(os.environ.get("TINYSCHED_MODELS") or REPO.parent / "shared" / "models"),
        help="folder of .tflite models (default: ../shared/models or $TINYSCHED_MODELS)",
    )
    parser.add_argument(
        "--model", action="append", help=f"model file stem (default: {', '.join(DEFAULT_MODELS)})"
    )
    parser.add_argument(
        "--prefer",
        choices=("memory", "speed"),
        default="memory",
        help="planning's --prefer (default: memory)",
    )
    parser.add_argument("--no-check", action="store_true", help="skip the per-layer check image")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write every number to FILE")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="keep the sources and images in DIR")
    args = parser.parse_args(argv)

    from tinysched.boards import get_board

    cmsis = args.cmsis_nn.resolve()
    if not (cmsis / "Include" / "arm_nnfunctions.h").is_file():
        parser.error(f"{cmsis} is not a CMSIS-NN checkout (no Include/arm_nnfunctions.h)")
    core_inc = None
    if args.cmsis_core:
        core_inc = args.cmsis_core.resolve() / "CMSIS" / "Core" / "Include"
        if not core_inc.is_dir():
            parser.error(f"{args.cmsis_core} is not a CMSIS_6 checkout (no CMSIS/Core/Include)")
    tree = checkout_tree(cmsis)
    if tree != PINNED_TREE:
        print(
            f"warning: {cmsis} is not CMSIS-NN {PINNED_COMMIT[:8]} (tree {tree or 'unknown'}, "
            f"pinned {PINNED_TREE}): the numbers are for that checkout",
            file=sys.stderr,
        )
    names = args.model or list(DEFAULT_MODELS)
    models = [args.models / f"{n}.tflite" for n in names]
    missing = [str(m) for m in models if not m.is_file()]
    if missing:
        parser.error(f"no such model: {', '.join(missing)}")
    work_ctx = tempfile.TemporaryDirectory(prefix="tsb-cmsis-nn-") if args.keep is None else None
    work = Path(work_ctx.name) if work_ctx else args.keep.resolve()
    results = []
    try:
        for core in args.core or ["m55"]:
            board = get_board(CORES[core])
            includes = [WRAPPER_DIR, cmsis / "Include", *([core_inc] if core_inc else [])]
            print(f"{board.name}: finding the CMSIS-NN sources the wrappers need", file=sys.stderr)
            cmsis_c = cmsis_sources(cmsis, includes, board, work / board.name / "cmsis-objects")
            print(
                f"{board.name}: {len(cmsis_c)} CMSIS-NN files: " + " ".join(p.name for p in cmsis_c),
                file=sys.stderr,
            )
            for m in models:
                results.append(
                    run_model(m, board, cmsis, core_inc, work / board.name / m.stem, cmsis_c,
                              check=not args.no_check, prefer=args.prefer, log=lambda s: print(s, file=sys.stderr))
                )  # fmt: skip
    finally:
        if work_ctx:
            work_ctx.cleanup()
    print(f"CMSIS-NN {cmsis} (tree {tree}); {time.strftime('%Y-%m-%d')}\n")
    print(tables(results))
    if args.json:
        args.json.write_text(json.dumps({"cmsis_nn_tree": tree, "results": results}, indent=1) + "\n")
    bad = [r["model"] for r in results if r["cmsis_outputs_match"] is False or r["ts_outputs_match"] is False]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
