"""Column tiles (tinysched.memory.stream.column_tiles, issue 33 part 2): a stage whose rows are too
wide runs once per tile of its sink's output columns, each window a tile's columns, the halo columns
computed again. The columns, windows, arenas and added MACs by hand; the halo charged against --mac-budget and the tilings offered, cheapest per byte first; the generated
loops bit-exact on the host (ASan/UBSan) and measured on QEMU with the painted high-water equal to
the plan, with the input streamed from the application too (one pass over its rows per tile); the
module compiles -std=c99 -pedantic -Werror for four cores at three levels. The kernels' paths under
the narrowed parameters on the M7, M55, M4 and M33: fast-path models stream_column_tiles and
stream_column_tiles_conv (tests/fast_path_models.py, the second this file's `_conv_sink`)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import (
    built_graph,
    generate_for_measure,
    measured_equal_on_qemu,
    model_c_text,
    saved_model,
    streamed_input_on_qemu,
)
from tiers import needs_gcc, require

from tinysched.build.sources import write_sources
from tinysched.device.verify import verify
from tinysched.memory.expand import expansion_of, macs_added
from tinysched.memory.stream import members, stream_of
from tinysched.model.modelgen import ModelBuilder
from tinysched.model.reader import parse_model
from tinysched.pipeline import PlanOptions, generate, plan, tile_macs_added, tile_offers


def _conv_sink(b: ModelBuilder) -> None:
    """stream_column_tiles_conv's layers: 8x29x3 -> 1x1 -> 8x29x32 -> 3x3 stride 2 SAME -> 4x15x7."""
    x = b.input("x", (1, 8, 29, 3), zero_point=7)
    t = b.conv2d(x, 32, (1, 1), activation="RELU", name="head_1x1_3_to_32")
    b.output(b.conv2d(t, 7, (3, 3), (2, 2), "SAME", activation="RELU6", name="k3_s2_tiled_sink"))


def _camera(b: ModelBuilder) -> None:
    """A frame of 24 rows of 48x3 into a 3x3 stride-2 SAME convolution (padding right 1 only), a 3x3
    depthwise and a 1x1 24 -> 16 whose 12x24x16 output a global MEAN reads whole."""
    x = b.input("frame", (1, 24, 48, 3), zero_point=-3)
    t = b.conv2d(x, 24, (3, 3), stride=(2, 2), padding="SAME", activation="RELU6", name="conv1")
    t = b.depthwise_conv2d(t, (3, 3), activation="RELU6", name="dw1")
    t = b.conv2d(t, 16, (1, 1), name="pw1")
    b.output(b.mean(t, (1, 2), keepdims=True, name="gap"))


def _pool(b: ModelBuilder) -> None:
    """The input's rows into a 1x1 head 8 -> 32, a 3x3 depthwise dilated 2 along the columns (a
    window 5 columns wide, padding left 2), and a 3x3 stride-2 SAME MAX_POOL_2D (padding left 1
    over 71 columns)."""
    x = b.input("x", (1, 12, 71, 8), zero_point=3)
    t = b.conv2d(x, 32, (1, 1), activation="RELU", name="head")
    t = b.depthwise_conv2d(t, (3, 3), padding="SAME", dilation=(1, 2), name="dw_dilated")
    b.output(b.max_pool2d(t, (3, 3), (2, 2), padding="SAME", name="pool_s2"))


def _wide_halo(b: ModelBuilder) -> None:
    """A 1x1 8 -> 64 into a 7x7 stride-2 SAME depthwise (padding left 2): two tiles of its 10
    output columns read the head's columns [0, 13) and [8, 20), 5 of its 20 computed again."""
    x = b.input("x", (1, 12, 20, 8))
    t = b.conv2d(x, 64, (1, 1), activation="RELU", name="head")
    b.output(b.depthwise_conv2d(t, (7, 7), (2, 2), padding="SAME", name="dw7_s2"))


def _padded_tail(b: ModelBuilder) -> None:
    """mcunet_vww_int8's stage 29 -> 31 -> 30 -> 32 on its shapes: a 1x1 10x10x24 -> 144, a PAD
    (top 3 bottom 2 left 3 right 2, fused into the depthwise), a 7x7 stride-2 VALID depthwise to
    5x5x144 and a 1x1 to 40: two tiles split the 5 output columns 0-1, 2-4."""
    x = b.input("x", (1, 10, 10, 24), zero_point=-5)
    t = b.conv2d(x, 144, (1, 1), activation="RELU6", name="expand")
    t = b.pad(t, [(0, 0), (3, 2), (3, 2), (0, 0)], name="pad")
    t = b.depthwise_conv2d(t, (7, 7), (2, 2), padding="VALID", activation="RELU6", name="dw7_s2")
    b.output(b.conv2d(t, 40, (1, 1), name="project"))


def _tiled(planned) -> list:
    return [s for op in planned.graph.operators if (s := stream_of(op)) is not None and s.tiles is not None]


def test_a_stage_over_four_tiles_by_hand() -> None:
    """Output columns 0-2, 3-6, 7-10, 11-14 of the stride-2 sink (padding left 1) read the head's
    columns [0, 6), [5, 14), [13, 22), [21, 29): 32 of 29 computed, a window of 3 rows of 9 x 32 B."""
    planned = plan(built_graph(_conv_sink, seed=51), PlanOptions(time_limit=2.0))
    (s,) = _tiled(planned)
    assert s.tiles.count == 4
    assert [t[-1] for t in s.tiles.members] == [(0, 3), (3, 7), (7, 11), (11, 15)]
    assert [t[0] for t in s.tiles.tensors] == [(0, 6), (5, 14), (13, 22), (21, 29)]
    assert s.tiles.computed_columns(0) == 32 and s.rows == (3,) and s.window_bytes == 3 * 9 * 32
    assert tile_macs_added(planned.graph, s) == 3 * 8 * 32 * 3  # 3 columns x 8 rows x 32 x 3 MACs
    assert planned.stream_macs()[0] == 2304
    # the input (696 B), the windows (864 B) and the output (420 B), each to 16 B: the tiles rewrite
    # every output row, so the output shares no byte with the input
    assert planned.arena.arena_bytes == 704 + 864 + 432 and planned.schedule.certified
    untiled = plan(built_graph(_conv_sink, seed=51), PlanOptions(time_limit=2.0, stream_mac_budget=0))
    assert untiled.arena.arena_bytes == 3488 and not _tiled(untiled)


def test_the_halo_is_charged_against_the_mac_budget() -> None:
    """The stage is the whole model (311,040 MACs): two tiles add 5 of the head's 20 columns again
    (30,720 MACs, 9.9%), three add 10 (61,440, 19.8%). The untiled stage holds 7 rows of 20 x 64
    beside the 10x6x64 output (the 12x20x8 input overlaps it); each plan takes the least arena
    whose halo fits --mac-budget: none at 9%, two tiles at the default 10%, three at 100% (four
    save no more bytes than three, for more MACs)."""
    own = 12 * 20 * 8 * 64 + 6 * 10 * 64 * 49
    assert 9 * own < 100 * 30720 <= 10 * own < 100 * 61440
    arenas, tiles = {}, {}
    for budget in (9.0, None, 100.0):
        planned = plan(built_graph(_wide_halo), PlanOptions(time_limit=2.0, stream_mac_budget=budget))
        (s,) = [s for op in planned.graph.operators if (s := stream_of(op)) is not None]
        arenas[budget], tiles[budget] = planned.arena.arena_bytes, 1 if s.tiles is None else s.tiles.count
        halo = {9.0: 0, None: 30720, 100.0: 61440}[budget]
        assert tile_macs_added(planned.graph, s) == halo
        assert planned.stream_macs() == (halo, own)  # the model's MACs without the halo
    assert tiles == {9.0: 1, None: 2, 100.0: 3}
    # 7 x 20 x 64 = 8,960 B of window; over 2 tiles 7 x 13 x 64, over 3 tiles 7 x 11 x 64
    assert arenas == {9.0: 8960 + 3840, None: 5824 + 1920 + 3840, 100.0: 4928 + 1920 + 3840}


def test_tile_offers_cheapest_saving_first() -> None:
    """`tile_offers`: the halo MACs per window byte saved orders the tilings; the budget left drops
    the dearer ones; a peak that another step shares offers nothing (tiling one stage cannot lower
    it)."""
    planned = plan(built_graph(_wide_halo), PlanOptions(time_limit=2.0, stream_mac_budget=0))
    (s,) = [s for op in planned.graph.operators if (s := stream_of(op)) is not None]
    assert s.tiles is None and s.window_bytes == 8960
    peak = set(members(s))
    offers = tile_offers(planned.graph, [s], peak, 10**9, 1)
    assert [(o.tiles.tiles.count, o.saved, o.halo) for o in offers] == [
        (2, 8960 - 5824, 30720),
        (3, 8960 - 4928, 61440),
        (4, 8960 - 4928, 92160),
    ]
    assert [o.tiles.tiles.count for o in tile_offers(planned.graph, [s], peak, 61439, 1)] == [2]
    assert tile_offers(planned.graph, [s], peak | {max(peak) + 1}, 10**9, 1) == []


def test_mcunet_tail_stage_over_two_and_four_tiles_by_hand() -> None:
    """`_padded_tail`: untiled, 7 rows of 10 x 144 and one of 5 x 144 beside the 10x10x24 input (the
    5x5x40 output overlaps it). Its halo is 26% of this small model's MACs over two tiles (the
    head's columns [0, 6) and [1, 10): 5 of 10 again), 47% over three and 73% over four: --mac-budget
    30 takes two, 100 four (the least arena), the default none."""
    own = 10 * 10 * 24 * 144 + 5 * 5 * 144 * 49 + 5 * 5 * 144 * 40
    found = {}
    for budget in (None, 30.0, 100.0):
        planned = plan(
            built_graph(_padded_tail, seed=7), PlanOptions(time_limit=2.0, stream_mac_budget=budget)
        )
        (s,) = [s for op in planned.graph.operators if (s := stream_of(op)) is not None]
        halo = tile_macs_added(planned.graph, s)
        assert planned.stream_macs() == (halo, own)
        found[budget] = (
            planned.arena.arena_bytes,
            1 if s.tiles is None else s.tiles.count,
            s.window_bytes,
            halo,
        )
        if budget == 30.0:
            assert [t[-1] for t in s.tiles.members] == [(0, 2), (2, 5)]
            assert [t[0] for t in s.tiles.tensors] == [(0, 6), (1, 10)] and s.row_bytes == (9 * 144, 3 * 144)
    assert found == {
        None: (7 * 1440 + 720 + 2400, 1, 10800, 0),
        30.0: (7 * 1296 + 432 + 2400 + 1008, 2, 9504, 172800),  # the output no longer overlaps the input
        100.0: (7 * 1008 + 288 + 2400 + 1008, 4, 7344, 483840),
    }


def test_the_input_streamed_over_two_tiles_by_hand() -> None:
    """Tiles 0-11 and 12-23 of the 24 output columns read input columns [0, 27) and [22, 48): the
    input's window is 3 rows of 27 x 3 B and room for one whole row (63 B more), the convolution's 3
    rows of 13 x 24 B, the depthwise's one of 12 x 24 B: 1,530 B beside the 4,608 B output."""
    one_pass = plan(built_graph(_camera, seed=4), PlanOptions(time_limit=2.0, stream_input=True))
    assert not _tiled(one_pass)  # by default the application hands the rows over once
    assert one_pass.arena.arena_bytes > 4608 + 1536
    planned = plan(
        built_graph(_camera, seed=4), PlanOptions(time_limit=2.0, stream_input=True, input_passes=2)
    )
    (s,) = _tiled(planned)
    assert s.source and s.tiles.count == 2
    assert [t[0] for t in s.tiles.tensors] == [(0, 27), (22, 48)]
    assert s.row_bytes == (81, 312, 288) and s.tiles.source_slack == 63
    assert s.window_bytes == 3 * 81 + 63 + 3 * 312 + 288 == 1530
    assert planned.arena.arena_bytes == 4608 + 1536  # 6,912 B with the whole input
    assert planned.input_streaming.whole_input_arena_bytes == 6912
    assert planned.stream_macs()[0] == 2 * 12 * 24 * 27  # two columns of the convolution again
    assert (
        "column tiles computing their halo columns again: model operators 0 -> 1 -> 2 over 2 tiles (15,552)"
        in (planned.stream_macs_summary())
    )
    header = next(text for name, text in generate(planned).files.items() if name.endswith(".h"))
    assert "in 2 passes (one per column tile of the first stage)" in " ".join(header.split())


@needs_gcc
@pytest.mark.host
@pytest.mark.parametrize(
    "build",
    [_conv_sink, _camera, _pool, _padded_tail],
    ids=["conv_sink", "input_rows", "pool", "mcunet_tail"],
)
def test_tiled_stages_bit_exact_on_the_host(build, tmp_path: Path) -> None:
    """The host runner checks every pass over the input's rows comes in order, each row once."""
    path = saved_model(tmp_path / "model.tflite", build, seed=5)
    whole = build in (_conv_sink, _padded_tail)
    planned = plan(
        parse_model(path.read_bytes()),
        PlanOptions(
            time_limit=2.0,
            stream_input=not whole,
            input_passes=2,
            stream_mac_budget=30.0 if build is _padded_tail else None,
        ),
    )
    assert _tiled(planned)
    result = verify(path, planned, generate(planned), n_inputs=3, seed=1, opt="-O1", sanitize=True)
    assert result.mismatches == [] and result.outputs_match


@pytest.mark.qemu
def test_tiled_stage_measured_equal_on_qemu(tmp_path: Path) -> None:
    require("qemu")
    path = saved_model(tmp_path / "model.tflite", _conv_sink, seed=6)
    gen = generate_for_measure(path, tmp_path / "gen", 2)
    assert "column tile 3: output columns [11, 15)" in model_c_text(gen)
    measured_equal_on_qemu(gen, tmp_path / "qemu")


@pytest.mark.qemu
def test_mcunet_tail_over_two_tiles_measured_equal_on_qemu(tmp_path: Path) -> None:
    require("qemu")
    path = saved_model(tmp_path / "model.tflite", _padded_tail, seed=6)
    gen = generate_for_measure(path, tmp_path / "gen", 2, stream_mac_budget=30.0)
    assert "column tile 1: output columns [2, 5)" in model_c_text(gen)
    measured_equal_on_qemu(gen, tmp_path / "qemu")


@pytest.mark.qemu
@pytest.mark.parametrize("build", [_camera, _pool], ids=["input_rows", "pool"])
def test_input_rows_over_tiles_measured_equal_on_qemu(build, tmp_path: Path) -> None:
    """The harness feeds the rows twice (a pass per tile) from its buffer outside the arena."""
    require("qemu")
    path = saved_model(tmp_path / "model.tflite", build, seed=2)
    planned = plan(
        parse_model(path.read_bytes()), PlanOptions(time_limit=2.0, stream_input=True, input_passes=2)
    )
    assert _tiled(planned)
    streamed_input_on_qemu(path, planned, tmp_path)


CORES = {
    "m4": ["-mcpu=cortex-m4", "-mthumb", "-mfpu=fpv4-sp-d16", "-mfloat-abi=hard"],
    "m7": ["-mcpu=cortex-m7", "-mthumb", "-mfpu=fpv5-d16", "-mfloat-abi=hard"],
    "m33": ["-mcpu=cortex-m33", "-mthumb", "-mfpu=fpv5-sp-d16", "-mfloat-abi=hard"],
    "m55": ["-mcpu=cortex-m55", "-mthumb", "-mfloat-abi=hard"],
}


@pytest.mark.parametrize(
    "build", [_conv_sink, _camera, _padded_tail], ids=["conv_sink", "input_rows", "mcunet_tail"]
)
def test_tiled_module_compiles_strict_for_four_cores_and_three_levels(build, tmp_path: Path) -> None:
    if shutil.which("arm-none-eabi-gcc") is None:
        pytest.skip("arm-none-eabi-gcc is not installed")
    budget = 30.0 if build is _padded_tail else None
    options = PlanOptions(
        time_limit=2.0, stream_input=build is _camera, input_passes=2, stream_mac_budget=budget
    )
    planned = plan(built_graph(build, seed=5), options)
    assert _tiled(planned)
    module = generate(planned)
    sources = write_sources(module, tmp_path / "gen")
    model_c = next(p for p in sources.c_files if p.name == f"{module.prefix}.c")
    includes = [f"-I{d}" for d in sources.include_dirs]
    strict = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]
    for core, flags in CORES.items():
        for level in ("-O0", "-Os", "-O2"):
            command = ["arm-none-eabi-gcc", *flags, level, *strict, *includes, "-c", str(model_c)]
            proc = subprocess.run([*command, "-o", "/dev/null"], capture_output=True, text=True)
            assert proc.returncode == 0, (core, level, proc.stderr[:600])


def _random_wide_chain(b: ModelBuilder, rng) -> None:
    """Two or three windowed operators of random kernels (1, 3, 5 wide), strides, paddings and
    column dilations on rows of 16 to 39 columns."""
    h, w, c = (int(v) for v in rng.integers([4, 16, 1], [12, 40, 6]))
    t = b.input("x", (1, h, w, c), zero_point=int(rng.integers(-20, 20)))
    for k in range(int(rng.integers(2, 4))):
        stride = (int(rng.integers(1, 3)),) * 2
        padding = str(rng.choice(["SAME", "VALID"]))
        kind = str(rng.choice(["conv1", "conv3", "dw", "dw5", "pool"])) if min(t.shape[1:3]) >= 9 else "conv1"
        if kind == "conv1":
            t = b.conv2d(t, int(rng.integers(4, 24)), (1, 1), activation="RELU", name=f"c{k}")
        elif kind == "conv3":
            t = b.conv2d(t, int(rng.integers(1, 12)), (3, 3), stride=stride, padding=padding, name=f"c{k}")
        elif kind == "dw":
            dilation = (1, int(rng.integers(1, 3)))
            t = b.depthwise_conv2d(t, (3, 3), padding=padding, dilation=dilation, name=f"d{k}")
        elif kind == "dw5":
            t = b.depthwise_conv2d(t, (5, 5), stride=stride, padding=padding, name=f"d{k}")
        else:
            t = b.max_pool2d(t, (3, 3), stride, padding=padding, name=f"p{k}")
    b.output(t)


@needs_gcc
@pytest.mark.host
def test_random_tiled_geometries_bit_exact_on_the_host(tmp_path: Path) -> None:
    """A sweep of random stages with --mac-budget 100 (every tiling that lowers the arena is taken),
    the input streamed or whole: every tiled plan bit-exact under ASan/UBSan."""
    import numpy as np

    rng = np.random.default_rng(3)
    checked = 0
    for n in range(60):
        b = ModelBuilder(seed=n)
        _random_wide_chain(b, rng)
        path = tmp_path / f"m{n}.tflite"
        path.write_bytes(b.build())
        options = PlanOptions(time_limit=2.0, stream_input=bool(n % 2), stream_mac_budget=100)
        planned = plan(parse_model(path.read_bytes()), options)
        if not _tiled(planned):
            continue
        result = verify(path, planned, generate(planned), n_inputs=2, seed=n, opt="-O1", sanitize=True)
        assert result.mismatches == [] and result.outputs_match, n
        checked += 1
        if checked == 8:
            break
    assert checked == 8


def test_input_passes_out_of_range_is_one_line(capsys) -> None:
    from tinysched.cli import main

    assert main(["plan", "missing.tflite", "--stream-input", "--input-passes", "0"]) != 0
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--input-passes must be a whole number from 1 to 4, got 0" in err


def test_mcunet_input_streamed_once_and_twice() -> None:
    """Issue 33's mcunet target (<= 12,000 B streamed). One pass (the default: a camera's frame)
    keeps the first stage whole-width; its widest window, the 1x1 40x40x8 -> 48 into a 3x3 stride-2
    depthwise (3 rows of 1,920 B), goes when that pair runs by groups of 2 channels inside the stage
    (the 8-channel rows it reads, 3 of 320 B, and 280 B of scratch instead), and the 1x1 20x20x16 ->
    48 into a 7x7 stride-2 depthwise that then bounds the arena runs by groups of 4 on its own (its
    7-row window of 6,720 B gone): 11,888 B, with two later stages over column tiles. The stage
    member computes 19 of the expansion's 40 rows twice (the rows consecutive output rows share).
    Two passes: 11,984 B, the first stage over two column tiles instead of its pair by groups."""
    from conftest import shared_model

    path = shared_model("mcunet_vww_int8")
    graph = parse_model(path.read_bytes())
    # a planning budget that lets every round finish on a loaded machine (the default is 6 s)
    once = plan(graph, PlanOptions(io="int8", stream_input=True, time_limit=120.0))
    twice = plan(graph, PlanOptions(io="int8", stream_input=True, input_passes=2, time_limit=120.0))
    assert once.arena.arena_bytes == 11_888 and twice.arena.arena_bytes == 11_984
    assert [s.tiles.count for s in _tiled(once)] == [2, 3]
    assert [s.tiles.count for s in _tiled(twice)] == [2, 2, 3]
    regrouped = 19 * 40 * 8 * 48  # rows computed again x width x in_c x out_c
    assert _expansions(once) == [(True, 2, regrouped), (False, 4, 0)]
    assert _expansions(twice) == [(False, 4, 0)]
    # within --mac-budget's 10% of the model's MACs, as with the input whole
    assert once.stream_macs()[1] == twice.stream_macs()[1] == 11_602_264
    assert regrouped < once.stream_macs()[0] <= 0.1 * 11_602_264


def _expansions(planned) -> list[tuple[bool, int, int]]:
    """(in a stage, channels per group, MACs added) of each expansion run by groups."""
    found = []
    for op in planned.graph.operators:
        chain = stream_of(op)
        for member in chain.operators if chain is not None else (op,):
            pair = expansion_of(member)
            if pair is not None:
                added = macs_added(planned.graph, pair) if chain is not None else 0
                found.append((chain is not None, pair.group, added))
    return found
