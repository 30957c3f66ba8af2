"""Streamed pairs (tinysched.memory.stream): which producer/consumer pairs stream and with how many rows, the
shift their fused loop allows (check_plan refusing one byte more), the arena they save, and generated
models bit-exact against TFLite on the host (ASan/UBSan, outputs placed exactly at the shift) and on an
emulated Cortex-M7 with the painted arena high-water equal to the plan."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from conftest import shared_model
from helpers import (
    built_graph,
    generate_for_measure,
    host_verify,
    measured_equal_on_qemu,
    model_c_text,
    planned_c_text,
    residual_blocks,
    saved_model,
)
from tiers import needs_gcc, require

from tinysched.arena.check import check_plan
from tinysched.errors import TinyschedError
from tinysched.memory.overlap import max_shift, memory_model
from tinysched.memory.stream import (
    STREAM_OPCODE,
    candidates,
    chain_shift,
    flattening_view,
    fuse,
    members,
    pixel_widened_members,
    row_dense,
    row_pad,
    row_schedule,
    row_sink,
    staged_members,
    stream_of,
    stream_shift,
    two_pass,
)
from tinysched.model.modelgen import ModelBuilder
from tinysched.model.reader import parse_model
from tinysched.pipeline import PlanOptions, generate, plan


def _expand_dw(b: ModelBuilder) -> None:
    """An inverted residual: the expanding 1x1 convolution's output is the largest tensor."""
    x = b.input("x", (1, 12, 10, 4))
    t = b.conv2d(x, 24, (1, 1), activation="RELU6", name="expand")  # 12x10x24: 2,880 B
    t = b.depthwise_conv2d(t, (3, 3), stride=(2, 2), activation="RELU6", name="dw")  # 6x5x24
    b.output(b.conv2d(t, 8, (1, 1), name="project"))


def _expand_dw_pair(b: ModelBuilder) -> None:
    """The block without its projection: the pair alone, whose output must start below its input."""
    x = b.input("x", (1, 12, 10, 4))
    t = b.conv2d(x, 24, (1, 1), activation="RELU6", name="expand")
    b.output(b.depthwise_conv2d(t, (3, 3), stride=(2, 2), activation="RELU6", name="dw"))


def _conv_pool(b: ModelBuilder) -> None:
    """A first layer and its pooling, with odd sizes, dilation and a 3-row pooling window."""
    x = b.input("x", (1, 13, 7, 3))
    t = b.conv2d(x, 16, (3, 3), dilation=(2, 1), activation="RELU", name="conv")  # 13x7x16
    t = b.max_pool2d(t, (3, 3), (2, 2), padding="SAME", name="pool")  # 7x4x16
    t = b.conv2d(t, 5, (3, 3), stride=(2, 2), name="conv2")  # 4x2x5
    b.output(b.average_pool2d(t, (2, 2), (1, 1), name="avg"))


def _long_chain(b: ModelBuilder) -> None:
    """Four operators in one stream: odd heights, a dilated depthwise, a pooling at the end."""
    x = b.input("x", (1, 17, 5, 3))
    t = b.conv2d(x, 32, (1, 1), activation="RELU", name="expand")
    t = b.depthwise_conv2d(t, (3, 3), dilation=(2, 1), activation="RELU6", name="dw_dilated")
    t = b.conv2d(t, 12, (1, 1), name="project")  # larger than the input: the pool had better stream
    b.output(b.max_pool2d(t, (3, 2), (2, 2), padding="SAME", name="pool"))


def _branch_add(b: ModelBuilder) -> None:
    """Two branches summed: the depthwise branch streams into the ADD, row by row, in place."""
    x = b.input("x", (1, 10, 8, 8))
    a = b.conv2d(x, 8, (1, 1), name="a")
    t = b.depthwise_conv2d(x, (3, 3), activation="RELU", name="t")
    s = b.add(t, a, name="sum")
    p = b.average_pool2d(x, (3, 3), (1, 1), padding="SAME", name="p")
    b.output(b.mul(s, p, name="gate"))


def _streams(planned) -> list:
    return [s for op in planned.graph.operators if (s := stream_of(op)) is not None]


def test_candidates_name_the_chains_and_their_windows() -> None:
    g = built_graph(_expand_dw)
    found = {tuple(op.opcode for op in s.operators): s for s in candidates(g)}
    pair = found[("CONV_2D", "DEPTHWISE_CONV_2D")]
    assert pair.position == 0 and (pair.rows, pair.row_bytes, pair.tensor_bytes) == ((3,), (240,), (2880,))
    assert found[("DEPTHWISE_CONV_2D", "CONV_2D")].rows == (1,)  # a 1x1 reader: one row
    block = found[("CONV_2D", "DEPTHWISE_CONV_2D", "CONV_2D")]  # the whole inverted residual block
    assert block.rows == (3, 1) and block.window_bytes == 3 * 240 + 120 and block.window_offset(1) == 720
    g2 = built_graph(_branch_add)
    adds = sorted(
        (s.producer.opcode, s.position, s.rows) for s in candidates(g2) if s.consumer.opcode == "ADD"
    )
    # either ADD operand streams, or both: a stage of the two branches, each a window of one row
    assert adds == [("CONV_2D", 0, (1, 1)), ("CONV_2D", 1, (1,)), ("DEPTHWISE_CONV_2D", 0, (1,))]


def test_streamed_shift_against_the_first_operators_input() -> None:
    # expand (1x1, 12 rows of 40 B in, 240 B out) -> dw (3x3 stride 2 SAME: pad 0 on top, 6 rows of
    # 120 B): output row r is written once rows below hi(r) = min(2r + 3, 12) are computed, and the
    # producer next reads input row hi(r): D = min_r (40 hi(r) - 120 (r + 1)), after the last row
    # nothing is left to read (the input's end, 480)
    g = built_graph(_expand_dw)
    found = {tuple(op.opcode for op in s.operators): s for s in candidates(g)}

    def expected(out_row: int) -> int:
        return min((480 if 2 * r + 3 >= 12 else 40 * (2 * r + 3)) - out_row * (r + 1) for r in range(6))

    assert chain_shift(g, found[("CONV_2D", "DEPTHWISE_CONV_2D")]) == expected(120) == -240
    # the whole block writes 40 B rows of the project's output, after the same expand rows: D = 80,
    # the output lies inside its input
    assert chain_shift(g, found[("CONV_2D", "DEPTHWISE_CONV_2D", "CONV_2D")]) == expected(40) == 80
    planned = plan(g, PlanOptions(alignment=1, time_limit=2.0))
    fused = next(op for op in planned.graph.operators if op.opcode == STREAM_OPCODE)
    assert max_shift(planned.graph, fused, 0) == chain_shift(planned.graph, stream_of(fused))


def test_check_plan_refuses_one_byte_past_a_streams_shift() -> None:
    planned = plan(built_graph(_expand_dw_pair), PlanOptions(alignment=1, time_limit=2.0))
    graph, arena = planned.graph, planned.arena
    pair = next(p for v, p in memory_model(graph, "refined").pairs.items() if stream_of(graph.operators[v]))
    at = {b.index: b.offset for b in arena.buffers}
    assert at[pair.output] - at[pair.root] == pair.shift  # placed exactly at the shift
    check_plan(graph, arena)
    moved = tuple(replace(b, offset=b.offset + 1) if b.index == pair.output else b for b in arena.buffers)
    with pytest.raises(TinyschedError, match="overlap in memory beyond what the refined model allows"):
        check_plan(graph, replace(arena, buffers=moved, arena_bytes=arena.arena_bytes + 1))


@pytest.mark.parametrize(
    "build", [_expand_dw, _conv_pool, _branch_add], ids=["expand_dw", "conv_pool", "add"]
)
def test_streams_lower_the_arena_only_in_the_refined_model_with_prefer_memory(build) -> None:
    g = built_graph(build)
    streamed = plan(g, PlanOptions(time_limit=2.0))
    speed = plan(g, PlanOptions(time_limit=2.0, prefer="speed"))
    tensor = plan(g, PlanOptions(time_limit=2.0, memory_model="tensor"))
    assert _streams(streamed) and not _streams(speed) and not _streams(tensor)
    assert streamed.arena.arena_bytes < speed.arena.arena_bytes < tensor.arena.arena_bytes
    kinds = [r.kind for r in streamed.rewriting.rewrites]
    assert "stream" in kinds
    # the certificate names the model's operators: the fused one stands for every operator it runs
    s = _streams(streamed)[0]
    fused = next(op.index for op in streamed.graph.operators if stream_of(op) is s)
    assert set(streamed.operator_sources[fused]) == {op.index for op in s.operators}


def test_expand_dw_arena_is_input_window_and_output() -> None:
    # the pair streamed: its step holds the input (480 B), a 3-row window (720 B) and the depthwise
    # output (720 B) starting 240 B below the input, so sharing all of it: 1,440 B
    pair = plan(built_graph(_expand_dw_pair), PlanOptions(alignment=1, time_limit=2.0))
    assert pair.schedule.peak_bytes == 720 + 720 and pair.schedule.certified
    # the whole block streamed (one operator): the input, windows of 3 expanded rows and 1 depthwise
    # row (840 B) and the project's 240 B output inside its input: 1,320 B (whole rows: with MACs
    # to add, column tiles lower it further, tests/test_column_tiles.py)
    block = plan(built_graph(_expand_dw), PlanOptions(alignment=1, time_limit=2.0, stream_mac_budget=0))
    assert [len(s.operators) for s in _streams(block)] == [3] and len(block.graph.operators) == 1
    assert block.schedule.peak_bytes == 480 + 840 and block.schedule.certified


@needs_gcc
@pytest.mark.host
@pytest.mark.parametrize(
    "build",
    [_expand_dw, _conv_pool, _branch_add, _long_chain],
    ids=["expand_dw", "conv_pool", "add", "long_chain"],
)
def test_streams_bit_exact_on_the_host(build, tmp_path: Path) -> None:
    path = tmp_path / "model.tflite"
    saved_model(path, build, seed=5)
    planned = plan(parse_model(path.read_bytes()), PlanOptions(alignment=1, time_limit=2.0))
    assert _streams(planned)
    if build is _long_chain:
        assert [len(s.operators) for s in _streams(planned)] == [4]
    c_source = planned_c_text(planned)
    assert "ts_window_slide(" in c_source and "TS_ROWS(" in c_source
    result = host_verify(path, n_inputs=3, seed=2, opt="-O1", sanitize=True, alignment=1)
    assert result.mismatches == [] and result.outputs_match


@pytest.mark.qemu
def test_streams_measured_equal_on_qemu(tmp_path: Path) -> None:
    require("qemu")
    path = tmp_path / "model.tflite"
    saved_model(path, _expand_dw, seed=1)
    gen = generate_for_measure(path, tmp_path / "gen", 2)
    model_c = model_c_text(gen)
    assert "ts_window_slide(" in model_c
    measured_equal_on_qemu(gen, tmp_path / "qemu")


@needs_gcc
def test_build_says_which_chains_stream(tmp_path: Path, capsys) -> None:
    import json

    from tinysched.cli import main

    path = tmp_path / "expand_dw.tflite"
    saved_model(path, _expand_dw, seed=0)
    out = tmp_path / "out"
    build = ["build", str(path), "--board", "host", "-o", str(out), "--no-report", "--mac-budget", "0"]
    assert main(build) == 0  # (no MACs to add: whole rows, no column tiles)
    printed = capsys.readouterr().out
    assert "streamed    1 chain(s) of operators run row by row" in printed
    assert "model operators 0 -> 1 -> 2 (3,600 B as windows of 840 B)" in printed
    assert "operator 2 (CONV_2D streamed from operator(s) 0 (CONV_2D), 1 (DEPTHWISE_CONV_2D))" in printed
    record = json.loads((out / "expand_dw_metadata.json").read_text())["build"]
    g = parse_model(path.read_bytes())
    streamed = [g.operators[0].outputs[0], g.operators[1].outputs[0]]  # expand's and dw's outputs
    assert record["streams"] == [
        {
            "operator": 0,
            "model_ops": [0, 1, 2],
            "opcodes": ["CONV_2D", "DEPTHWISE_CONV_2D", "CONV_2D"],
            "input_rows": False,  # not headed by the input's rows (--stream-input)
            "tensors": [streamed[0], streamed[1]],
            "tensor_bytes": 2880 + 720,
            "window_rows": [3, 1],
            "window_bytes": 720 + 120,
            "bytes_saved_at_its_steps": 2880 + 720 - (720 + 120),
            "two_pass": False,  # one pass: every row computed once
            "macs_added": 0,
            "column_tiles": 1,  # whole rows
            "tile_columns": [],
        }
    ]
    speed = tmp_path / "speed"
    assert (
        main(["build", str(path), "--board", "host", "-o", str(speed), "--no-report", "--prefer", "speed"])
        == 0
    )
    assert json.loads((speed / "expand_dw_metadata.json").read_text())["build"]["streams"] == []


# ---- every plan's window code compiles warning-free, as the default builds compile it -----------


def _one_row_window(b: ModelBuilder) -> None:
    """Two 1x1 convolutions, the second of stride 2: a window of one row, placed last in the arena."""
    x = b.input("x", (1, 7, 7, 5))
    t = b.conv2d(x, 8, (1, 1), activation="RELU", name="a")
    b.output(b.conv2d(t, 3, (1, 1), stride=(2, 2), name="b"))


def _compile_warning_free(planned, directory: Path, sizes: bool = True) -> None:
    """The model's C file compiled as the host runner (-O2) and the firmware (-O2 for the Cortex-M7
    boards; and -Os with `sizes`) compile it, warnings as errors; gcc's first error line on failure."""
    import shutil
    import subprocess

    from tinysched.boards import get_board
    from tinysched.build.firmware import COMMON_CFLAGS, WARNINGS
    from tinysched.build.host import HOST_CFLAGS
    from tinysched.build.sources import write_sources
    from tinysched.text import first_error_line

    sources = write_sources(generate(planned), directory)
    includes = [f"-I{d}" for d in sources.include_dirs]
    runs = [["gcc", *HOST_CFLAGS, "-O2"]]
    if shutil.which("arm-none-eabi-gcc"):
        target = [*get_board("nucleo-f767").cflags, *COMMON_CFLAGS, *WARNINGS, "-Werror"]
        runs += [["arm-none-eabi-gcc", *target], *([["arm-none-eabi-gcc", *target, "-Os"]] if sizes else [])]
    for command in runs:
        proc = subprocess.run(
            [*command, *includes, "-c", str(sources.c_files[0]), "-o", "/dev/null"],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, (command[0], first_error_line(proc.stderr))


@needs_gcc
@pytest.mark.host
def test_a_one_row_window_ending_the_arena_compiles_warning_free_and_is_bit_exact(tmp_path: Path) -> None:
    """gcc 12 at -O2 inlined the window's slide and refused the move of a row from past a one-row
    window that ends the arena (-Werror=array-bounds), a path that never runs: verify and build
    stopped with exit 2 on a plain model, with the default flags."""
    require("qemu", ("arm-none-eabi-gcc",))
    path = saved_model(tmp_path / "model.tflite", _one_row_window)
    planned = plan(parse_model(path.read_bytes()), PlanOptions())
    (s,) = _streams(planned)
    assert s.rows == (1,)
    (op,) = planned.graph.operators
    window = next(p for p in planned.arena.buffers if p.index == op.outputs[-1])
    align = planned.arena.alignment
    assert window.offset + -(-window.bytes // align) * align == planned.arena.arena_bytes  # it ends the arena
    _compile_warning_free(planned, tmp_path / "c")
    result = host_verify(path, n_inputs=3, seed=1)  # the host runner's own flags, -O2
    assert result.mismatches == [] and result.outputs_match


def _random_windowed_chain(b: ModelBuilder, rng) -> None:
    """Two or three windowed operators of random kernels, strides and paddings on a small input."""
    h, w, c = (int(v) for v in rng.integers([2, 1, 1], [12, 8, 8]))
    t = b.input("x", (1, h, w, c))
    for k in range(int(rng.integers(2, 4))):
        stride = (int(rng.integers(1, 3)),) * 2
        padding = str(rng.choice(["SAME", "VALID"]))
        kind = str(rng.choice(["conv1", "conv3", "dw", "pool"])) if min(t.shape[1:3]) >= 3 else "conv1"
        if kind == "conv1":
            t = b.conv2d(t, int(rng.integers(1, 16)), (1, 1), stride=stride, activation="RELU", name=f"c{k}")
        elif kind == "conv3":
            t = b.conv2d(t, int(rng.integers(1, 16)), (3, 3), stride=stride, padding=padding, name=f"c{k}")
        elif kind == "dw":
            t = b.depthwise_conv2d(t, (3, 3), stride=stride, padding=padding, name=f"d{k}")
        else:
            t = b.max_pool2d(t, (2, 2), stride, padding=padding, name=f"p{k}")
    b.output(t)


@needs_gcc
@pytest.mark.host
def test_window_code_of_random_stream_geometries_compiles_warning_free(tmp_path: Path) -> None:
    """A short sweep of stream geometries (window rows, strides, paddings) and arena positions
    (alignments 1, 4 and 16): before the slide knew its window's rows, 2 of the 18 that stream
    here failed on the host gcc at -O2."""
    import numpy as np

    rng = np.random.default_rng(0)
    compiled = 0
    for n in range(40):
        b = ModelBuilder(seed=n)
        _random_windowed_chain(b, rng)
        alignment = int(rng.choice([1, 4, 16]))
        planned = plan(parse_model(b.build()), PlanOptions(alignment=alignment, time_limit=2.0))
        if _streams(planned):
            _compile_warning_free(planned, tmp_path / f"m{n}", sizes=False)
            compiled += 1
    assert compiled >= 12


@needs_gcc
@pytest.mark.host
def test_a_compiler_failure_says_the_compilers_first_error_line(tmp_path: Path) -> None:
    """The host runner's and the firmware's compile errors name gcc's own error line (the message
    stopped at `In function ...` context lines before), in one line."""
    from tinysched.boards import get_board
    from tinysched.build.firmware import build_firmware
    from tinysched.build.host import compile_runner, write_runner
    from tinysched.build.sources import write_sources

    planned = plan(built_graph(_one_row_window), PlanOptions())
    module = generate(planned)
    sources = write_sources(module, tmp_path / "src")
    write_runner(module, sources, "model", "")
    model_c = sources.c_files[0]
    model_c.write_text(model_c.read_text() + "\nint broken(void) { return no_such_name; }\n")
    expected = r"error: .no_such_name. undeclared"
    with pytest.raises(
        TinyschedError, match=rf"^host compiler failed: [^\n]*{model_c.name}:\d+:\d+: {expected}"
    ):
        compile_runner(sources)
    require("qemu", ("arm-none-eabi-gcc",))
    with pytest.raises(
        TinyschedError, match=rf"^compiling {model_c.name} for nucleo-f767 failed: [^\n]*{expected}"
    ):
        build_firmware(sources, get_board("nucleo-f767"), tmp_path / "fw")


# ---- streams through residual stages (issue 33, part 2) --------------------------------------------


def _residual_stage(b: ModelBuilder) -> None:
    """`residual_blocks` on a 12x8x3 input (head 12x8x8: 768 B; down1 6x4x16: 384 B)."""
    b.output(residual_blocks(b, b.input("x", (1, 12, 8, 3))))


def test_a_residual_blocks_input_keeps_the_rows_both_paths_still_read() -> None:
    g = built_graph(_residual_stage)
    found = {tuple(op.index for op in s.operators): s for s in candidates(g)}
    # the block with its input whole: windows of 3 rows (main1's output, read by a 3x3) and 1 (main2's,
    # read by the ADD); the ADD writes its row r over the input's row r: after it, main1 next reads
    # the input from row r + 1 (for its row r + 2) and the ADD reads row r + 1, so D = 0 (in place)
    block = found[(1, 2, 3)]
    assert block.rows == (3, 1) and stream_shift(g, block, g.operators[0].outputs[0]) == 0
    # with the head: the head's output is read by main1 (3 rows, r - 1 .. r + 1) and the ADD (row r),
    # whose window keeps from the ADD's row to main1's highest: 3 rows, computed once each
    with_head = found[(0, 1, 2, 3)]
    assert with_head.rows == (3, 3, 1) and with_head.tensors[0] == g.operators[0].outputs[0]
    # the downsampling block: the sum read by down1 (3x3 stride 2) and the projection (1x1 stride 2)
    down = found[(4, 5, 6, 7)]
    assert down.rows == (3, 1, 1)
    whole = found[tuple(range(8))]  # the whole stage: the sum in a window of 3 rows too
    assert whole.rows == (3, 3, 1, 3, 3, 1, 1) and whole.window_bytes == 960
    sched = row_schedule(g, whole.operators)
    assert sched is not None and sched.ends == (12, 12, 12, 12, 6, 6, 6)  # every row computed, once


def test_residual_stage_plans_below_its_whole_tensors() -> None:
    g = built_graph(_residual_stage)
    planned = plan(g, PlanOptions(alignment=1, time_limit=2.0))
    speed = plan(g, PlanOptions(alignment=1, time_limit=2.0, prefer="speed"))
    # the whole stage is one operator: the input (288 B), its windows (960 B) and the output (384 B),
    # which may start 96 B below the input (its rows of 64 B against the input's of 24 B): 1,344 B
    assert [[op.index for op in s.operators] for s in _streams(planned)] == [list(range(8))]
    assert (speed.arena.arena_bytes, planned.arena.arena_bytes) == (1632, 288 + 960 + 384 - 288)
    assert planned.schedule.certified
    fused = planned.graph.operators[0]
    assert max_shift(planned.graph, fused, 0) == -96


@needs_gcc
@pytest.mark.host
def test_residual_streams_bit_exact_on_the_host(tmp_path: Path) -> None:
    path = tmp_path / "model.tflite"
    saved_model(path, _residual_stage, seed=7)
    planned = plan(parse_model(path.read_bytes()), PlanOptions(alignment=1, time_limit=2.0))
    assert [len(s.operators) for s in _streams(planned)] == [8]
    c_source = planned_c_text(planned)
    assert "ts_row_low(" in c_source  # a tensor read by two members
    result = host_verify(path, n_inputs=3, seed=2, opt="-O1", sanitize=True, alignment=1)
    assert result.mismatches == [] and result.outputs_match


@pytest.mark.qemu
def test_residual_stage_measured_equal_on_qemu(tmp_path: Path) -> None:
    require("qemu")
    path = tmp_path / "model.tflite"
    saved_model(path, _residual_stage, seed=3)
    gen = generate_for_measure(path, tmp_path / "gen", 2)
    assert "ts_row_low(" in model_c_text(gen)
    assert gen.arena_bytes_planned == 1344  # as with alignment 1 (test_residual_stage_plans_below_...)
    measured_equal_on_qemu(gen, tmp_path / "qemu")


# ---- squeeze-excitation blocks by two passes (issue 33, part 2) -------------------------------------


def _squeeze_excite_block(b: ModelBuilder) -> None:
    """mcunetv2's squeeze-excitation block in small: expand 1x1 -> depthwise 3x3 -> the feature map t
    (8x6x16, 768 B), read by a MEAN over the width then one over the rows (the gate's source) and by
    the MUL by the gate; project 1x1 and the ADD with the block's input x (8x6x4, 192 B)."""
    x = b.input("x", (1, 8, 6, 4))
    t = b.conv2d(x, 16, (1, 1), activation="RELU6", name="expand")  # 3,072 MACs
    t = b.depthwise_conv2d(t, (3, 3), activation="RELU6", name="dw")  # 6,912 MACs
    m = b.mean(b.mean(t, (2,), keepdims=True, name="pool_w"), (1,), keepdims=True, name="pool_h")
    g = b.logistic(b.conv2d(m, 16, (1, 1), name="fc"), name="gate")
    y = b.conv2d(b.mul(t, g, name="scale"), 4, (1, 1), name="project")
    b.output(b.add(y, x, name="sum"))


def test_two_pass_streams_a_squeeze_excitation_block_within_the_mac_budget() -> None:
    g = built_graph(_squeeze_excite_block)  # 15,184 MACs in all
    passes = [p for p in two_pass(g) if len(p.second.operators) == 5]
    assert [[op.index for op in p.first.operators] for p in passes] == [[0, 1, 2]]
    assert [op.index for op in passes[0].second.operators] == [0, 1, 6, 7, 8]
    # a budget under the 9,984 MACs of expand and dw run again (65%: 9,869) declines the two passes:
    # the pool over the rows holds x (192), t (768), the width means (128) and their mean (16)
    declined = plan(g, PlanOptions(alignment=1, time_limit=2.0, stream_mac_budget=65.0))
    assert declined.arena.arena_bytes == 192 + 768 + 128 + 16 and declined.stream_macs() == (0, 15184)
    planned = plan(g, PlanOptions(alignment=1, time_limit=2.0, stream_mac_budget=66.0))  # 10,021
    # pass 1: x, windows of 3 expanded rows and 1 depthwise row (288 + 96 B), the 128 B of width
    # means: 704 B; pass 2: x and the gate (16 B), windows of 3 + 1 + 1 rows of 96 B and one projected
    # row (24 B), the ADD's output over x (in place): 192 + 16 + 504 = 712 B, the arena
    assert planned.arena.arena_bytes == planned.schedule.peak_bytes == 712 and planned.schedule.certified
    assert planned.stream_macs() == (3072 + 6912, 15184)
    rows = planned.streams_json()
    assert [(r["model_ops"], r["two_pass"], r["macs_added"]) for r in rows] == [
        ([0, 1, 2], True, 0),
        ([0, 1, 6, 7, 8], True, 9984),
    ]


def _stage_then_tail(b: ModelBuilder) -> None:
    """A residual stage (as `_residual_stage`, 16x12) whose step leaves bytes free once it streams:
    the tail convolution's step is the peak then."""
    y = residual_blocks(b, b.input("x", (1, 16, 12, 3)))
    y = b.conv2d(y, 56, (3, 3), name="tail")  # 8x6x56: the peak after the stage streams
    # the global average as a MEAN over both axes, which no stage ends at (a global AVERAGE_POOL_2D
    # would stream the tail into its sums, and the tail's step would no longer be the peak)
    b.output(b.mean(y, (1, 2), keepdims=True, name="avg"))


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an500", "mps2-an386", "mps2-an505", "mps3-an547"])
def test_stage_quad_blocks_measured_equal_on_qemu(tmp_path: Path, board: str) -> None:
    """The stage of `_stage_then_tail` on the DSP cores (M7, M4, M33; the M55 has no quad path): main1, main2 and down1 run the strip's
    quad blocks (ts_conv2d_s8_strip where a six-pixel block does not fit the room), down1's 6-pixel
    rows as a whole quad and a short one; bit-exact, the painted arena equal to the plan."""
    require("qemu")
    path = tmp_path / "model.tflite"
    saved_model(path, _stage_then_tail, seed=5)
    gen = generate_for_measure(path, tmp_path / "gen", 2)
    text = model_c_text(gen)
    assert all(f"ts_conv2d_s8_strip(&p{j}, rows, " in text for j in (1, 2, 4))
    measured_equal_on_qemu(gen, tmp_path / "qemu", board)


def _stage_rows_16(b: ModelBuilder) -> None:
    """A residual stage over 32-pixel rows, then 16-pixel ones (resnet8's widths at 4 to 12
    channels): 3x3 filters over 4 channels (K = 36: nine groups, 1 past a multiple of 4) and 12 (K =
    108: 27 groups, 3 past)."""
    x = b.input("x", (1, 32, 32, 3))
    h = b.conv2d(x, 4, (3, 3), activation="RELU", name="head")
    t = b.conv2d(h, 4, (3, 3), activation="RELU", name="main1")
    t = b.conv2d(t, 4, (3, 3), name="main2")
    s = b.add(h, t, activation="RELU", name="sum")
    d = b.conv2d(s, 12, (3, 3), stride=(2, 2), activation="RELU", name="down1")
    d = b.conv2d(d, 8, (3, 3), name="down2")
    p = b.conv2d(s, 8, (1, 1), stride=(2, 2), name="project")
    y = b.add(p, d, activation="RELU", name="sum2")
    y = b.conv2d(y, 24, (3, 3), name="tail")  # 16x16x24: the peak, the stage's step has bytes free
    b.output(b.average_pool2d(y, (16, 16), (1, 1), name="avg"))


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an500", "mps2-an386", "mps2-an505", "mps3-an547"])
def test_stage_rows_end_in_quad_blocks_measured_equal_on_qemu(tmp_path: Path, board: str) -> None:
    """Rows of 32 pixels (24 in six-pixel blocks, the last 8 two quad blocks) and of 16 (12 and a
    quad block) where the room holds a six-pixel block (ts_conv2d_s8_strip), down2's rows (K = 108)
    in quad blocks only (its six-pixel block is more than the room), on the DSP cores (M7, M4, M33)
    and the M55 (its own paths): bit-exact, the painted arena equal to the plan."""
    require("qemu")
    path = tmp_path / "model.tflite"
    saved_model(path, _stage_rows_16, seed=7)
    gen = generate_for_measure(path, tmp_path / "gen", 2)
    text = model_c_text(gen)
    assert all(f"ts_conv2d_s8_strip(&p{j}, rows, " in text for j in (1, 2, 4, 5))
    measured_equal_on_qemu(gen, tmp_path / "qemu", board)


def _pointwise_chain(b: ModelBuilder) -> None:
    """A chain CONV_2D -> DEPTHWISE -> 1x1 CONV_2D -> DEPTHWISE (stride 2) over 16-pixel rows whose
    room (the output's rows not written yet) shrinks to 64 bytes: the 1x1 layer's rows take six-pixel
    blocks and a quad, then (row 10, less than a quad block's 128 B) the pair path's fields on the
    stack, then (the last row) the windows no member reads any more. Its output zero point above
    -128 makes the RELU's range narrower than int8, which keeps the 1x1 layer off the pixel table
    (ts_conv2d_s8_pixels, which needs no room)."""
    x = b.input("x", (1, 24, 16, 4))
    h = b.conv2d(x, 16, (3, 3), activation="RELU", name="c1")
    h = b.depthwise_conv2d(h, (3, 3), (1, 1), "SAME", activation="RELU", name="dw")
    h = b.conv2d(h, 32, (1, 1), activation="RELU", output_quant=(0.03, -100), name="pw")
    h = b.depthwise_conv2d(h, (3, 3), (2, 2), "SAME", activation="RELU", name="dw2")
    b.output(b.mean(h, (1, 2), keepdims=True, name="avg"))  # a MEAN: no stage ends in it


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an500", "mps2-an386", "mps2-an505", "mps3-an547"])
def test_pointwise_rows_without_room_measured_equal_on_qemu(tmp_path: Path, board: str) -> None:
    require("qemu")
    path = tmp_path / "model.tflite"
    saved_model(path, _pointwise_chain, seed=3)
    gen = generate_for_measure(path, tmp_path / "gen", 2)
    text = model_c_text(gen)
    assert "ts_conv2d_s8_strip(&p2, rows, " in text and "_op0_stage2_strip_bytes[row], " in text
    assert "320, 192, 64, 768," in text  # the 1x1 layer's room in the last rows (bytes)
    measured_equal_on_qemu(gen, tmp_path / "qemu", board)


@needs_gcc
@pytest.mark.host
def test_two_pass_stream_bit_exact_on_the_host(tmp_path: Path) -> None:
    path = saved_model(tmp_path / "se.tflite", _squeeze_excite_block, seed=3)
    planned = plan(parse_model(path.read_bytes()), PlanOptions(alignment=1, stream_mac_budget=66.0))
    c_source = planned_c_text(planned)
    assert "out_dims[4] = 1" in c_source and "/* the gate, whole */" in c_source  # MEAN and MUL by rows
    result = host_verify(
        path, n_inputs=3, seed=2, opt="-O1", sanitize=True, alignment=1, stream_mac_budget=66.0
    )
    assert result.mismatches == [] and result.outputs_match


@pytest.mark.qemu
def test_two_pass_stream_measured_equal_on_qemu(tmp_path: Path) -> None:
    require("qemu")
    path = saved_model(tmp_path / "se.tflite", _squeeze_excite_block, seed=1)
    gen = generate_for_measure(path, tmp_path / "gen", 2, stream_mac_budget=66.0)
    assert gen.arena_bytes_planned == 720  # 712 B with every offset aligned to 16 B
    measured_equal_on_qemu(gen, tmp_path / "qemu")


@needs_gcc
@pytest.mark.host
def test_stage_members_get_the_wide_kernels_strip_in_free_bytes(tmp_path: Path) -> None:
    from tinysched.arena.scratch import STREAM_STRIP_OPTION

    path = tmp_path / "model.tflite"
    saved_model(path, _stage_then_tail, seed=5)
    planned = plan(parse_model(path.read_bytes()), PlanOptions(alignment=1, time_limit=2.0))
    fused = planned.graph.operators[0]
    assert [len(s.operators) for s in _streams(planned)] == [8]
    # the tail's step is the peak (2,848 B); the stage's leaves 640 B free, where its strip goes: six
    # blocks of the projection's (6 pixels x 8 bytes of filter x 2), more than one of the head's (336 B)
    strip = planned.graph.tensors[fused.outputs[-1]]
    assert planned.arena.arena_bytes == 2848 and fused.options[STREAM_STRIP_OPTION] == 576 == strip.nbytes
    check_plan(planned.graph, planned.arena)
    assert planned.arena.lower_bound_bytes == planned.arena.arena_bytes  # the arena did not grow
    c_source = planned_c_text(planned)
    loop = c_source[c_source.index("/* step 0: operator 0") : c_source.index("TS_STEP_DONE(0u,")]
    # the head (blocks of 6 x 28 x 2 = 336 B) takes the strip the row leaves (ts_conv2d_s8_strip: as
    # many wide blocks as fit); main1, main2 and down1 (864 B a wide block) take quad blocks (4 x 72 x
    # 2 = 576 B); down2 (a quad block of 1,152 B, its pair fields on the stack) keeps the default
    # kernel; the stride-2 projection (K = 8) takes the pixel table row by row, no strip
    for j in (0, 1, 2, 4):
        assert f"ts_conv2d_s8_strip(&p{j}, rows, " in loop and f"bytes_op0_stage{j}_rq, checks{j})" in loop
    assert (
        "ts_conv2d_s8_pixel_rows_checked(&p6, rows, " in loop
        and "bytes_op0_stage6_pixel_table, checks6)" in loop
    )
    assert "strip, room, bytes_op0_stage1_rq, checks1)" in loop  # the stage's room, row by row
    # down1 runs after the 16x12 part's last calls in the last iterations: the windows of its tensors
    # (no member reads them again) are its own then, a room of its own
    sched = row_schedule(planned.graph, _streams(planned)[0].operators)
    # (head's output, read by main1 and sum: unread from row 6 when down1 is called; sum's, read by
    # down1 itself and the projection: never, 8)
    assert sched is not None and sched.unread_from(4, [1, 3]) == 6 and sched.unread_from(4, [4, 6]) == 8
    assert "output + bytes_op0_stage4_strip_at[row], bytes_op0_stage4_strip_bytes[row], " in loop
    assert "ts_conv2d_s8_checked(&p5, " in loop and "ts_conv2d_s8_strip(&p5, " not in loop
    assert "const int32_t checks5 = ts_conv2d_s8_checks(&p5, " in loop  # once, before the row loop
    result = host_verify(path, n_inputs=2, seed=1, opt="-O1", sanitize=True, alignment=1)
    assert result.mismatches == [] and result.outputs_match


# ---- a stage ending in a global average pool (issue 33, part 4) -------------------------------------


def _ds_cnn(b: ModelBuilder) -> None:
    """mlperf_kws_dscnn in small: a head convolution, one depthwise -> 1x1 block on rows of 5 pixels,
    a global average pool (its window the whole 12x5 map) and a fully connected layer."""
    x = b.input("x", (1, 12, 5, 2))  # 120 B
    h = b.conv2d(x, 8, (3, 3), activation="RELU", name="head")  # 12x5x8: 480 B, rows of 40 B
    t = b.depthwise_conv2d(h, (3, 3), activation="RELU", name="dw")
    t = b.conv2d(t, 8, (1, 1), activation="RELU", name="pw")  # rows of 5 pixels: ts_conv2d_s8_staged
    p = b.average_pool2d(t, (12, 5), (1, 1), name="pool")  # 1x1x8
    b.output(b.fully_connected(b.reshape(p, (1, 8)), 4, name="fc"))


def test_a_global_pool_ends_a_stage_with_its_sums() -> None:
    g = built_graph(_ds_cnn)
    found = {tuple(op.index for op in s.operators): s for s in candidates(g)}
    whole = found[(0, 1, 2, 3)]
    # windows: 3 head rows for the 3x3 depthwise (120 B), 1 depthwise row for the 1x1 (40 B), 1 row of
    # the 1x1's output for the pool, which adds it to its sums as it arrives (40 B); then the pool's
    # 8 int32 sums (32 B) and the 1x1's widened threes, chunk 6 x 8 channels (48 B): 280 B
    assert whole.rows == (3, 1, 1) and (whole.sums, whole.sums_offset) == (8, 200)
    assert (whole.staged_offset, whole.staged, whole.window_bytes) == (232, 48, 280)
    assert staged_members(g, whole) == (2,)  # the head reads the whole input: not staged
    sched = row_schedule(g, whole.operators)
    assert sched is not None and sched.ends == (12, 12, 12)  # one loop turn per pool input row
    assert stream_shift(g, whole, g.inputs[0]) is None  # the 8 output bytes share nothing
    # the pool alone cannot head or continue a stage: its one output row is written after the loop
    assert not any(s.producer.index == 3 for s in candidates(g) if len(s.operators) > 1)


def test_global_pool_stage_plans_below_every_whole_map() -> None:
    g = built_graph(_ds_cnn)
    planned = plan(g, PlanOptions(alignment=1, time_limit=2.0))
    speed = plan(g, PlanOptions(alignment=1, time_limit=2.0, prefer="speed"))
    # the stage's step holds the input (120 B), its scratch (280 B) and the pool's 8 B: 408 B; with
    # whole tensors every step holds a 12x5x8 map (480 B) and more: 688 B once the default kernels'
    # outputs have drifted down the arena (their shifts are negative, docs/memory-model.md)
    assert [[op.index for op in s.operators] for s in _streams(planned)] == [[0, 1, 2, 3]]
    assert (speed.arena.arena_bytes, planned.arena.arena_bytes) == (688, 120 + 280 + 8)
    assert planned.schedule.certified
    check_plan(planned.graph, planned.arena)


@needs_gcc
@pytest.mark.host
def test_global_pool_stage_bit_exact_on_the_host(tmp_path: Path) -> None:
    path = saved_model(tmp_path / "ds.tflite", _ds_cnn, seed=4)
    planned = plan(parse_model(path.read_bytes()), PlanOptions(alignment=1, time_limit=2.0))
    assert [len(s.operators) for s in _streams(planned)] == [4]
    c_source = planned_c_text(planned)
    # the pool and the 1x1 (on its one row) take their constant parameters: no call changes them
    assert "ts_avg_pool2d_s8_rows(&bytes_op0_stage3, " in c_source and ", row, 1, sums, output)" in c_source
    assert "ts_conv2d_s8_staged_checked(&bytes_op0_stage2, " in c_source
    assert "const int32_t staged_checks2 = ts_conv2d_s8_staged_checks(&bytes_op0_stage2, " in c_source
    assert " p2 = " not in c_source and " p3 = " not in c_source  # no copies of them on the stack
    result = host_verify(path, n_inputs=3, seed=2, opt="-O1", sanitize=True, alignment=1)
    assert result.mismatches == [] and result.outputs_match


@pytest.mark.qemu
def test_global_pool_stage_measured_equal_on_qemu(tmp_path: Path) -> None:
    require("qemu")
    path = saved_model(tmp_path / "ds.tflite", _ds_cnn, seed=6)
    gen = generate_for_measure(path, tmp_path / "gen", 2)
    assert "ts_avg_pool2d_s8_rows(" in model_c_text(gen)
    # aligned to 16 B: the input 128 B, the scratch 288 B, the pool's output 16 B
    assert gen.arena_bytes_planned == 128 + 288 + 16
    measured_equal_on_qemu(gen, tmp_path / "qemu")


def _ds_cnn_body(b: ModelBuilder) -> None:
    """mlperf_kws_dscnn's whole body in small: a head convolution, four depthwise -> 1x1 blocks on rows
    of 5 pixels and the global average pool: ten operators, one stage (MAX_CHAIN)."""
    x = b.input("x", (1, 25, 5, 1))  # 125 B
    t = b.conv2d(x, 16, (3, 3), activation="RELU", name="head")  # 25x5x16: 2,000 B, rows of 80 B
    for k in range(4):
        t = b.depthwise_conv2d(t, (3, 3), activation="RELU", name=f"dw{k}")
        t = b.conv2d(t, 16, (1, 1), activation="RELU", name=f"pw{k}")
    p = b.average_pool2d(t, (25, 5), (1, 1), name="pool")  # 1x1x16
    b.output(b.fully_connected(b.reshape(p, (1, 16)), 4, name="fc"))


def test_a_ds_cnn_body_streams_as_one_stage_of_ten_operators() -> None:
    g = built_graph(_ds_cnn_body)
    planned = plan(g, PlanOptions(alignment=1, time_limit=2.0))
    (stage,) = _streams(planned)
    assert [op.index for op in stage.operators] == list(range(10))
    # windows of 80 B rows: 3 head rows for the first depthwise, then per block 1 depthwise row for
    # its 1x1 and 3 rows of the 1x1's output for the next depthwise (the last: 1 for the pool): 17
    # rows, 1,360 B; the pool's 16 int32 sums (64 B), the 1x1s' widened threes (6 x 16 channels, 96 B)
    assert stage.rows == (3, 1, 3, 1, 3, 1, 3, 1, 1) and stage.window_bytes == 1360 + 64 + 96
    # the step holds the input, the scratch and the pool's 16 B (a 2,000 B map whole: more)
    assert planned.arena.arena_bytes == 125 + 1520 + 16 and planned.schedule.certified
    check_plan(planned.graph, planned.arena)


def test_longer_stages_are_kept_only_where_the_arena_is_smaller() -> None:
    """`_stage_rows_16` has a ten-operator stage (the residual stage and its tail), which a first
    round keeps (6,080 B); rounds from the eight-operator stage stream the tail with its pool too,
    to less. The pipeline streams stages of up to SHORT_CHAIN operators first, the longer ones in
    rounds of their own, and keeps the smaller arena."""
    g = built_graph(_stage_rows_16, seed=7)
    assert max(len(s.operators) for s in candidates(g)) == 10
    planned = plan(g, PlanOptions(time_limit=2.0))
    assert [[op.index for op in s.operators] for s in _streams(planned)] == [list(range(8)), [8, 9]]
    assert planned.arena.arena_bytes == 5184


@pytest.mark.qemu
@pytest.mark.parametrize(("board", "core"), [("mps2-an500", "cortex-m7"), ("mps3-an547", "cortex-m55")])
def test_a_ds_cnn_body_stage_measured_equal_on_qemu(tmp_path: Path, board: str, core: str) -> None:
    """The ten-operator stage on the M7 (the head's rows of 5 pixels a quad and a lone pixel from the
    table, quad_channels_few; the 1x1 rows a three and a last two) and on the M55, generated for it
    (the 1x1 rows against the generator's layer table, ts_conv2d_s8_staged_layer); the depthwise rows
    through their hoisted checks, the pool's rows in 16-bit lanes; bit-exact, the painted arena
    equal to the plan."""
    require("qemu")
    path = saved_model(tmp_path / "body.tflite", _ds_cnn_body, seed=8)
    gen = generate_for_measure(path, tmp_path / "gen", 2, core=core)
    text = model_c_text(gen)
    staged = "ts_conv2d_s8_staged_layer" if core == "cortex-m55" else "ts_conv2d_s8_staged_checked"
    assert all(f"ts_depthwise_conv2d_s8_checked(&p{j}, rows, " in text for j in (1, 3, 5, 7))
    assert all(f"{staged}(&body_op0_stage{j}, " in text for j in (2, 4, 6, 8))
    measured_equal_on_qemu(gen, tmp_path / "qemu", board)


@needs_gcc
@pytest.mark.host
def test_global_pool_stage_headed_by_the_input_bit_exact_on_the_host(tmp_path: Path) -> None:
    from tinysched.device.verify import verify

    path = saved_model(tmp_path / "ds.tflite", _ds_cnn, seed=3)
    g = parse_model(path.read_bytes())
    planned = plan(g, PlanOptions(alignment=1, time_limit=2.0, stream_input=True))
    (chain,) = _streams(planned)
    # the input's window of 3 rows (30 B), the head's 120 B, 40 + 40 B, the sums (32 B) ending at 262,
    # the threes from 264 (a multiple of 4) for 48 B: 312 B of scratch, and the pool's 8 B
    assert chain.source and [op.index for op in chain.operators] == [0, 1, 2, 3]
    assert (chain.window_bytes, planned.arena.arena_bytes) == (312, 312 + 8)
    # under UBSan with the sums at any byte offset (the kernel reads them by memcpy)
    result = verify(path, planned, generate(planned), n_inputs=3, seed=1, opt="-O1", sanitize=True)
    assert result.mismatches == [] and result.outputs_match


# ---- a FULLY_CONNECTED reading the flattened map as a stage's sink --------------------------------


def _dw_fc(b: ModelBuilder) -> None:
    """tflm_micro_speech in small: a depthwise 3x3 stride 2 over one channel into 8 (depth multiplier
    8), its 6x5x8 map read flattened by a FULLY_CONNECTED of 4 units, then a SOFTMAX."""
    x = b.input("x", (1, 12, 10, 1))  # 120 B
    t = b.depthwise_conv2d(x, (3, 3), (2, 2), depth_multiplier=8, activation="RELU", name="dw")  # 240 B
    f = b.fully_connected(t, 4, flatten=True, name="fc")
    b.output(b.softmax(f))


def test_a_fully_connected_ends_a_stage_with_its_sums() -> None:
    g = built_graph(_dw_fc)
    assert row_sink(g, g.operators[1]) == 4 and row_dense(g, g.operators[1])
    found = {tuple(op.index for op in s.operators): s for s in candidates(g)}
    assert list(found) == [(0, 1)]  # the FULLY_CONNECTED only ends a stage
    whole = found[(0, 1)]
    # one row of the depthwise's output (5 x 8 = 40 B) for the FULLY_CONNECTED, which adds it to its 4
    # int32 sums (16 B, right after the window) as it arrives: 56 B for the 240 B map
    assert (whole.rows, whole.sums, whole.sums_offset, whole.window_bytes) == ((1,), 4, 40, 56)
    sched = row_schedule(g, whole.operators)
    assert sched is not None and sched.ends == (6,)  # one loop turn per row of the map
    assert stream_shift(g, whole, g.inputs[0]) is None  # the 4 output bytes share nothing


def test_fully_connected_stage_plans_below_the_whole_map() -> None:
    g = built_graph(_dw_fc)
    planned = plan(g, PlanOptions(alignment=1, time_limit=2.0))
    tensor = plan(g, PlanOptions(alignment=1, time_limit=2.0, memory_model="tensor"))
    # the stage's step: the input (120 B), the window and sums (56 B), the 4 output bytes: 180 B;
    # with whole tensors the depthwise's step holds the input and the map: 360 B
    assert [[op.index for op in s.operators] for s in _streams(planned)] == [[0, 1]]
    assert (tensor.arena.arena_bytes, planned.arena.arena_bytes) == (120 + 240, 120 + 56 + 4)
    assert planned.schedule.certified
    check_plan(planned.graph, planned.arena)


@needs_gcc
@pytest.mark.host
def test_fully_connected_stage_bit_exact_on_the_host(tmp_path: Path) -> None:
    path = saved_model(tmp_path / "dwfc.tflite", _dw_fc, seed=5)
    planned = plan(parse_model(path.read_bytes()), PlanOptions(alignment=1, time_limit=2.0))
    assert [len(s.operators) for s in _streams(planned)] == [2]
    c_source = planned_c_text(planned)
    assert "ts_fully_connected_s8_rows(&bytes_op0_stage1, " in c_source and ", row, 1, 40, " in c_source
    # under UBSan with the sums at byte offset 40 + 120 (the kernel reads them by memcpy)
    result = host_verify(path, n_inputs=3, seed=2, opt="-O1", sanitize=True, alignment=1)
    assert result.mismatches == [] and result.outputs_match


def test_micro_speech_streams_its_depthwise_into_the_fully_connected() -> None:
    g = parse_model(shared_model("tflm_micro_speech_int8").read_bytes())
    planned = plan(g, PlanOptions(time_limit=2.0))
    (stage,) = _streams(planned)
    # 49x40x1 -> DEPTHWISE_CONV_2D 10x8 stride 2 -> 25x20x8 (4,000 B) -> FULLY_CONNECTED 4000 -> 4: the
    # map is never whole; the step holds the input (1,960 B, 1,968 aligned), one row of the map (160 B)
    # and the 4 sums (16 B), and the 4 output bytes (16 aligned): 2,160 B against 4,192 B with whole maps
    assert [op.opcode for op in stage.operators] == ["DEPTHWISE_CONV_2D", "FULLY_CONNECTED"]
    assert (stage.rows, stage.row_bytes, stage.sums, stage.window_bytes) == ((1,), (160,), 4, 176)
    assert (planned.arena.arena_bytes, planned.unstreamed_arena_bytes) == (2_160, 4_192)
    check_plan(planned.graph, planned.arena)


@pytest.mark.qemu
def test_micro_speech_fully_connected_stage_measured_equal_on_qemu(tmp_path: Path) -> None:
    require("qemu")
    gen = generate_for_measure(shared_model("tflm_micro_speech_int8"), tmp_path / "gen", 2)
    assert "ts_fully_connected_s8_rows(" in model_c_text(gen)
    assert gen.arena_bytes_planned == 2_160
    result = measured_equal_on_qemu(gen, tmp_path / "qemu")
    assert result.steps_compared > 0 and result.steps_differing == []  # every step against TFLite's


def _conv_pool_flatten_fc(b: ModelBuilder) -> None:
    """arm_har_cnn in small: a 2x2 convolution and a 2x2 stride-2 max pool, flattened by a RESHAPE
    into a FULLY_CONNECTED of 6 units."""
    x = b.input("x", (1, 12, 3, 1))  # 36 B
    t = b.conv2d(x, 32, (2, 2), padding="VALID", activation="RELU", name="conv")  # 11x2x32: 704 B
    t = b.max_pool2d(t, (2, 2), (2, 2), "VALID", name="pool")  # 5x1x32: 160 B
    b.output(b.fully_connected(b.reshape(t, (1, 160), name="flatten"), 6, name="fc"))


def test_a_flattening_view_is_absorbed_by_the_fully_connected_sink() -> None:
    g = built_graph(_conv_pool_flatten_fc)
    fc = g.operators[3]
    view = flattening_view(g, fc)
    assert view is not None and view.index == 2 and row_sink(g, fc) == 0  # as stored, it reads the view
    found = {tuple(op.index for op in s.operators): s for s in candidates(g)}
    whole = found[(0, 1, 3)]
    # the sink reads the pool's rows itself: two conv rows for the 2x2 pool (2 x 64 B), one pool row
    # (32 B), then 6 int32 sums (24 B): 184 B of scratch for 704 + 160 B of maps
    assert whole.operators[-1].inputs[0] == g.operators[1].outputs[0] and whole.absorbed == (2,)
    assert (whole.rows, whole.sums, whole.window_bytes) == ((2, 1), 6, 184)
    assert members(whole) == {0, 1, 2, 3}
    fused = fuse(g, [whole])
    assert [op.opcode for op in fused.graph.operators] == [STREAM_OPCODE]  # the RESHAPE goes with it
    assert fused.graph.operators[0].inputs == (g.inputs[0],) + tuple(
        u for u in (*g.operators[0].inputs[1:], *fc.inputs[1:]) if u >= 0
    )
    assert fused.rewrites[0].sources == (3, 0, 1, 2)


@needs_gcc
@pytest.mark.host
def test_flattening_view_stage_bit_exact_on_the_host(tmp_path: Path) -> None:
    path = saved_model(tmp_path / "flat.tflite", _conv_pool_flatten_fc, seed=7)
    planned = plan(parse_model(path.read_bytes()), PlanOptions(alignment=1, time_limit=2.0))
    (stage,) = _streams(planned)
    assert stage.absorbed == (2,)
    # the input (36 B), the scratch (184 B) and the 6 output bytes; streaming the pool's map whole
    # instead holds it (160 B) beside the input and the conv's two rows: 36 + 128 + 160 - 36 (the pool's
    # output over the dying input)
    assert (planned.arena.arena_bytes, planned.unstreamed_arena_bytes) == (36 + 184 + 6, 704 + 36)
    c_source = planned_c_text(planned)
    assert "ts_fully_connected_s8_rows(&bytes_op0_stage2, " in c_source and ", row, 1, 32, " in c_source
    result = host_verify(path, n_inputs=3, seed=2, opt="-O1", sanitize=True, alignment=1)
    assert result.mismatches == [] and result.outputs_match


def test_har_streams_its_first_layer_into_the_fully_connected() -> None:
    g = parse_model(shared_model("arm_har_cnn_int8").read_bytes())
    planned = plan(g, PlanOptions(time_limit=2.0))
    (stage,) = _streams(planned)
    # CONV_2D 2x2 -> 89x2x128 -> MAX_POOL_2D 2x2/2 -> 44x1x128 -> RESHAPE [1, 5632] -> FULLY_CONNECTED
    # 5632 -> 128: windows of two conv rows (512 B) and one pool row (128 B), 128 sums (512 B); the
    # step holds them, the 270 B input (272 aligned) and the 128 output bytes: 1,552 B against 22,928 B
    # with no stream (and 6,160 B streaming CONV_2D -> MAX_POOL_2D alone, the pool's 5,632 B map whole)
    assert [op.opcode for op in stage.operators] == ["CONV_2D", "MAX_POOL_2D", "FULLY_CONNECTED"]
    assert (stage.rows, stage.sums, stage.window_bytes, stage.absorbed) == ((2, 1), 128, 1_152, (2,))
    assert (planned.arena.arena_bytes, planned.unstreamed_arena_bytes) == (1_552, 22_928)
    check_plan(planned.graph, planned.arena)


@pytest.mark.qemu
def test_har_fully_connected_stage_measured_equal_on_qemu(tmp_path: Path) -> None:
    require("qemu")
    gen = generate_for_measure(shared_model("arm_har_cnn_int8"), tmp_path / "gen", 2)
    assert "ts_fully_connected_s8_rows(" in model_c_text(gen) and gen.arena_bytes_planned == 1_552
    result = measured_equal_on_qemu(gen, tmp_path / "qemu")
    assert result.steps_compared > 0 and result.steps_differing == []


# ---- a PAD the rewrites cannot fold, streamed row by row (issue 33, part 4) -------------------------


def _conv_pad_pool(b: ModelBuilder) -> None:
    """st_miniresnetv2's head in small: a convolution without an activation (so values below the
    zero point), a PAD of its zero point, a 3x3 stride-2 MAX_POOL_2D: the PAD cannot be the pool's
    padding (a max over padding of the zero point is not a max over the values alone)."""
    x = b.input("x", (1, 10, 6, 2))  # 120 B, rows of 12 B
    c = b.conv2d(x, 8, (3, 3), padding="VALID", output_quant=(0.05, 5), name="conv")  # 8x4x8: 256 B
    p = b.pad(c, [(0, 0), (1, 1), (1, 1), (0, 0)], name="pad")  # 10x6x8: 480 B, rows of 48 B
    b.output(b.max_pool2d(p, (3, 3), (2, 2), "VALID", name="pool"))  # 4x2x8: 64 B, rows of 16 B


def test_a_pad_streams_its_rows_between_a_convolution_and_a_pool() -> None:
    g = built_graph(_conv_pad_pool)
    assert [op.opcode for op in g.operators] == ["CONV_2D", "PAD", "MAX_POOL_2D"]  # not folded
    assert row_pad(g, g.operators[1]) == 1
    found = {tuple(op.index for op in s.operators): s for s in candidates(g)}
    whole = found[(0, 1, 2)]
    # windows: one convolution row for the PAD (32 B), three padded rows for the 3x3 pool (144 B)
    assert whole.rows == (1, 3) and whole.window_bytes == 32 + 144
    sched = row_schedule(g, whole.operators)
    # every convolution row once; padded rows 0 to 8 (row 9, padding, no pool row reads)
    assert sched is not None and sched.ends == (8, 9)
    # pool row r is written once its padded rows 2r .. 2r + 2 exist: input rows up to 2r + 3 read,
    # the next turn reading from row 2r + 2; D = min_r (12 (2r + 2) - 16 (r + 1)) = 8, at r = 0
    assert stream_shift(g, whole, g.inputs[0]) == 8
    planned = plan(g, PlanOptions(alignment=1, time_limit=2.0))
    # the input (120 B), the windows (176 B), the pool's 64 B inside the input (D >= 0): 296 B
    assert [len(s.operators) for s in _streams(planned)] == [3]
    assert planned.arena.arena_bytes == 120 + 176 + 64 - 64 and planned.schedule.certified
    check_plan(planned.graph, planned.arena)


@needs_gcc
@pytest.mark.host
def test_streamed_pad_bit_exact_on_the_host(tmp_path: Path) -> None:
    path = saved_model(tmp_path / "pad.tflite", _conv_pad_pool, seed=5)
    planned = plan(parse_model(path.read_bytes()), PlanOptions(alignment=1, time_limit=2.0))
    assert [len(s.operators) for s in _streams(planned)] == [3]
    c_source = planned_c_text(planned)
    assert "ts_pad_s8(&p1, src, " in c_source and "p1.pad_before[3] = in_lo - " in c_source
    result = host_verify(path, n_inputs=3, seed=2, opt="-O1", sanitize=True, alignment=1)
    assert result.mismatches == [] and result.outputs_match


@pytest.mark.qemu
def test_streamed_pad_measured_equal_on_qemu(tmp_path: Path) -> None:
    require("qemu")
    path = saved_model(tmp_path / "pad.tflite", _conv_pad_pool, seed=8)
    gen = generate_for_measure(path, tmp_path / "gen", 2)
    assert "ts_pad_s8(&p1, src, " in model_c_text(gen)
    # aligned to 16 B: the input 128 B, the windows 176 B, the pool's 64 B inside the input
    assert gen.arena_bytes_planned == 128 + 176 + 64 - 64
    measured_equal_on_qemu(gen, tmp_path / "qemu")


# ---- strip room in the windows a stage's members have consumed (issue 34, part 4) --------------------


def test_yamnet_projections_take_the_window_rows_already_consumed(tmp_path: Path) -> None:
    from tinysched.codegen.lower_stream import _geometry, consumed_room

    path = shared_model("st_yamnet_256_int8")
    planned = plan(parse_model(path.read_bytes()), PlanOptions(time_limit=2.0))
    fused = planned.graph.operators[1]
    s = stream_of(fused)
    assert s is not None and len(s.operators) == 8 and planned.arena.arena_bytes == 37_888
    readers = [[k + 1] for k in range(len(s.tensors))]
    windows = _geometry(planned.graph, s)
    # the 1x1 128 -> 128 (member 6) and 64 -> 128 (member 4) are called after the 1x1 32 -> 64 has
    # read its one-row window (1,024 B) and the stride-2 depthwise the first two of its three rows
    # (2 x 2,048 B, the third its next call's first): 5,120 B, five blocks of 6 x 128 x 2 B, where
    # the output's unwritten rows leave as little as 768 B in the last iterations
    base = next(p.offset for p in planned.arena.buffers if p.index == fused.outputs[1])
    for j in (4, 6):
        assert consumed_room(planned.graph, s, base, j, windows, readers) == (
            base + s.window_offset(1),
            5_120,
        )
    assert consumed_room(planned.graph, s, base, 2, windows, readers) == (0, 0)  # its input's window is read
    c_source = planned_c_text(planned)
    assert (
        "strip_bytes[12] = { /* its strip scratch per output row: its bytes */\n    5120, 5376, 5120,"
        in c_source
    )
    result = host_verify(path, n_inputs=1, seed=1)
    assert result.mismatches == [] and result.outputs_match


def _one_pixel_rows_30(b: ModelBuilder) -> None:
    """sww's first chain with in_c 30 (not a multiple of 4)."""
    x = b.input("x", (1, 30, 1, 30), zero_point=3)
    t = b.depthwise_conv2d(x, (3, 1), (1, 1), "VALID", name="dw3x1_30")
    b.output(b.conv2d(t, 64, (1, 1), name="pw30_64"))


def test_one_pixel_rows_take_the_widened_pixel_path() -> None:
    """A stage's 1x1 member on rows one pixel wide (sww's [H, 1, C] maps) calls
    ts_conv2d_s8_pixel_widened with its ts_rq table on the DSP cores, on Helium cores the checked
    kernel; no scratch, so the plan is the one without it; in_c not a multiple of 4 keeps
    ts_conv2d_s8_checked."""
    from fast_path_models import FAST_PATH_MODELS

    tables = {  # the widened table where in_c is a multiple of 8 (40, 24), not for 44
        "stream_one_pixel_rows": "_op0_stage1_rq, bytes_op0_stage1_channels, checks1) != TS_OK",
        "stream_one_pixel_rows_full_range": "_op0_stage1_rq, bytes_op0_stage1_channels, checks1) != TS_OK",
        "stream_one_pixel_rows_narrowing": "_op0_stage1_rq, NULL, checks1) != TS_OK",
    }
    for name, call_end in tables.items():
        graph = parse_model(FAST_PATH_MODELS[name]())
        m7 = plan(graph, PlanOptions(core="cortex-m7", time_limit=2.0))
        (stage,) = _streams(m7)
        assert [op.opcode for op in stage.operators] == ["DEPTHWISE_CONV_2D", "CONV_2D"]
        assert pixel_widened_members(m7.graph, stage) == (1,)
        text = planned_c_text(m7)
        assert text.count("ts_conv2d_s8_pixel_widened(&p1, rows, ") == 1, name
        assert call_end in text, name
        assert "const int32_t checks1 = ts_conv2d_s8_checks(&p1, " in text
        m55 = plan(graph, PlanOptions(core="cortex-m55", time_limit=2.0))
        assert m55.arena.arena_bytes == m7.arena.arena_bytes
        text = planned_c_text(m55)
        assert "ts_conv2d_s8_pixel_widened" not in text and "ts_conv2d_s8_checked(&p1, rows, " in text
    odd = plan(built_graph(_one_pixel_rows_30), PlanOptions(core="cortex-m7", time_limit=2.0))
    (stage,) = _streams(odd)
    assert pixel_widened_members(odd.graph, stage) == ()
    text = planned_c_text(odd)
    assert "ts_conv2d_s8_pixel_widened" not in text and "ts_conv2d_s8_checked(&p1, rows, " in text


def test_rows_of_six_plus_one_pixels_take_the_lone_pixel_strip() -> None:
    """A stage's members whose rows are 6 a + 1 pixels wide (st_miniresnetv2's 13) call
    ts_conv2d_s8_strip_lone, which takes the row's last pixel alone, where in_c is a multiple of 4;
    the others keep ts_conv2d_s8_strip (no added test on their calls)."""
    from fast_path_models import FAST_PATH_MODELS

    planned = plan(
        parse_model(FAST_PATH_MODELS["stream_rows_six_plus_one"]()),
        PlanOptions(core="cortex-m7", time_limit=2.0),
    )
    text = planned_c_text(planned)
    assert text.count("ts_conv2d_s8_strip_lone(&p0, rows, ") == 1  # 1x1 32 -> 37
    assert text.count("ts_conv2d_s8_strip(&p1, rows, ") == 1  # 1x1 37 -> 36: in_c 37
    assert text.count("ts_conv2d_s8_strip_lone(&p2, rows, ") == 1  # 3x3 36 -> 32
