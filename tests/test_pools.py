"""Memory pools: the arena split over a board's RAM regions (tinysched.arena.pools), never a tensor across
two; its code, its image and its measurement region by region."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from tiers import needs_gcc, require

from tinysched.arena.check import check_plan
from tinysched.arena.pools import access_bytes, certificate, pool_request
from tinysched.boards import get_board
from tinysched.cli import main
from tinysched.device import reference
from tinysched.errors import TinyschedError
from tinysched.model import modelgen
from tinysched.model.reader import read_model
from tinysched.pipeline import PlanOptions, generate, plan

# The demo's arena is 18,432 B (its aligned lower bound); its tensors are 10 B .. 8 KiB.
DEMO_ARENA = 18_432

# An emulated MPS2 (AN386, Cortex-M4) whose RAM is cut into regions at different addresses, every
# one memory QEMU models: the FPGA block RAM (16 KiB at 0x01000000) and SSRAM2/3 cut in two, its
# first 12 KiB for the arena, the rest for data and the stack. The demo's arena (18,432 B) is
# larger than either arena region and fits their sum.
CUT_BOARD = """
boards:
  mps2-an386-cut:
    description: MPS2 AN386 with its RAM cut into arena regions (test board)
    mcu: AN386
    family: cmsdk
    core: cortex-m4
    fpu: fpv4-sp-d16
    float_abi: hard
    cflags: [-mcpu=cortex-m4, -mthumb, -mfpu=fpv4-sp-d16, -mfloat-abi=hard]
    clock: {hz: 25000000, source: fpga}
    memory:
      - {name: ssram1, origin: 0x00000000, length: 4194304, kind: ram}
      - {name: blockram, origin: 0x01000000, length: 16384, kind: ram, speed: 1}
      - {name: sram_lo, origin: 0x20000000, length: 12288, kind: ram, speed: 2}
      - {name: sram_hi, origin: 0x20003000, length: 4182016, kind: ram}
    placement: {text: ssram1, rodata: ssram1, data: sram_hi, arena: sram_lo}
    stack_bytes: 16384
    uart: {peripheral: UART0, base: 0x40004000, baud: 115200, clock_hz: 25000000}
    counter: systick-icount
    qemu: {machine: mps2-an386, cpu: cortex-m4, icount_shift: 6}
    usb: []
"""


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("pools") / "demo.tflite"
    path.write_bytes(modelgen.tiny_demo_model())
    return path


@pytest.fixture(scope="module")
def cut_board(tmp_path_factory):
    path = tmp_path_factory.mktemp("board") / "boards.yaml"
    path.write_text(CUT_BOARD)
    return get_board("mps2-an386-cut", path)


def split_plan(demo: Path, *pools: str, pins: tuple[str, ...] = (), memory_model: str = "tensor", board=None):
    request = pool_request(board or get_board("mps2-an500"), pools, pins)
    return plan(read_model(demo), PlanOptions(pools=request, memory_model=memory_model))


def inside(plan_, placement):
    pool = plan_.pool_of(placement.offset, placement.bytes)
    assert pool is not None, f"{placement.name} straddles regions"
    return pool.region


# ---- the planner ------------------------------------------------------------------------------


def test_a_pool_limit_forces_a_split_and_no_tensor_straddles(demo):
    planned = split_plan(demo, "ssram23=8K")
    arena = planned.arena
    assert [(p.region, p.base, p.bytes, p.limit) for p in arena.pools] == [
        ("ssram23", 0, 8192, 8192),
        ("psram", 8192, 10240, 16 << 20),
    ]
    assert arena.arena_bytes == sum(p.bytes for p in arena.pools) == DEMO_ARENA
    assert arena.lower_bound_bytes == DEMO_ARENA and arena.optimal  # the split costs nothing here
    for p in arena.buffers:
        if p.bytes:
            pool = arena.pool_of(p.offset, p.bytes)
            assert pool is not None and pool.base <= p.offset and p.offset + p.bytes <= pool.base + pool.bytes
    for pool in arena.pools:  # each region's high-water is its own top buffer
        tops = [
            p.offset - pool.base + p.bytes
            for p in arena.buffers
            if p.bytes and inside(arena, p) == pool.region
        ]
        assert pool.high_water_bytes == max(tops) and pool.high_water_bytes <= pool.bytes <= pool.limit
    check_plan(planned.graph, arena)
    assert certificate(arena).startswith(
        "split arena ssram23 8,192 B + psram 10,240 B = 18,432 B equals the single-arena lower bound"
    )


def test_a_tight_limit_costs_bytes_and_the_certificate_says_how_many(demo):
    arena = split_plan(demo, "ssram23=4K").arena
    assert arena.pools[0].bytes <= 4096 and arena.arena_bytes > arena.lower_bound_bytes and not arena.optimal
    gap = arena.arena_bytes - arena.lower_bound_bytes
    assert f"{gap:,} B above the single-arena lower bound {arena.lower_bound_bytes:,} B" in certificate(arena)


def test_the_most_accessed_tensor_goes_to_the_fastest_region(demo):
    planned = split_plan(demo, "ssram23=8K")
    access = access_bytes(planned.graph)
    hottest = max(access, key=lambda t: (access[t], -t))
    assert inside(planned.arena, planned.arena.placement(hottest)) == "ssram23"
    fast, slow = planned.arena.pools
    assert fast.speed < slow.speed
    assert fast.access_bytes / fast.bytes > slow.access_bytes / slow.bytes  # denser traffic in the fast one


def test_a_pinned_tensor_sits_in_its_region(demo):
    planned = split_plan(demo, "ssram23=8K", pins=("a/expand=psram", "head/fc=psram"))
    by_name = {p.name: p for p in planned.arena.buffers}
    assert inside(planned.arena, by_name["a/expand"]) == "psram"
    assert inside(planned.arena, by_name["head/fc"]) == "psram"
    check_plan(planned.graph, planned.arena)


def test_a_pin_alone_splits_even_when_the_arena_fits(demo):
    planned = split_plan(demo, pins=("image=psram",))
    assert [p.region for p in planned.arena.pools] == ["ssram23", "psram"]
    assert inside(planned.arena, planned.arena.placement(planned.graph.inputs[0])) == "psram"


def test_no_pools_or_a_fitting_arena_keeps_the_single_arena_byte_for_byte(demo):
    graph = read_model(demo)
    alone = plan(graph, PlanOptions())
    with_board = plan(graph, PlanOptions(pools=pool_request(get_board("mps2-an500"))))
    assert with_board.arena == replace(alone.arena, seconds=with_board.arena.seconds)
    assert not with_board.arena.pools
    a, b = generate(alone), generate(with_board)
    assert a.files == b.files


def test_the_refined_model_keeps_views_and_overlaps_inside_one_region(demo):
    from tinysched.memory.overlap import memory_model

    planned = split_plan(demo, "ssram23=8K", memory_model="refined")
    check_plan(planned.graph, planned.arena)  # views at their root's offset, overlaps as allowed
    model = memory_model(planned.graph, "refined")
    assert model.views or model.pairs
    region = {p.index: inside(planned.arena, p) for p in planned.arena.buffers if p.bytes}
    for view in model.views:
        assert region[view] == region[model.root(view)]
    for pair in model.pairs.values():
        if pair.root in region and pair.output in region:
            assert region[pair.root] == region[pair.output]


def test_check_plan_refuses_a_tensor_across_two_regions(demo):
    planned = split_plan(demo, "ssram23=8K")
    arena = planned.arena
    first, second = arena.pools
    # move the boundary 16 B down: a tensor that ended at the top of the first region now crosses it
    moved = replace(
        arena,
        pools=(
            replace(first, bytes=first.bytes - 16),
            replace(second, base=second.base - 16, bytes=second.bytes + 16),
        ),
    )
    with pytest.raises(TinyschedError, match=r"is not inside one region of the split arena"):
        check_plan(planned.graph, moved)
    over = replace(arena, pools=(replace(first, limit=first.bytes - 16), second))
    with pytest.raises(
        TinyschedError, match=r"region ssram23 holds 8192 bytes of the arena, above its limit"
    ):
        check_plan(planned.graph, over)


def test_an_arena_larger_than_every_region_is_split_over_them(demo, cut_board):
    assert all(r.length < DEMO_ARENA for r in cut_board.pool_regions)
    planned = split_plan(demo, board=cut_board)  # no --pool: it does not fit sram_lo, so it splits
    assert [p.region for p in planned.arena.pools] == ["blockram", "sram_lo"]
    assert planned.arena.pools[0].bytes <= 16384 and planned.arena.pools[1].bytes <= 12288
    assert planned.arena.arena_bytes == DEMO_ARENA


@pytest.mark.parametrize(
    "argv,message",
    [
        (
            ["--pool", "dtcm=4K"],
            "--pool dtcm=4K: board mps2-an500 has no arena region 'dtcm' (arena regions: ssram23, psram)",
        ),
        (
            ["--pool", "ssram23=lots"],
            "--pool ssram23=lots: 'lots' is not a byte count (e.g. 65536, 64K or 1M)",
        ),
        (["--pool", "ssram23"], "--pool 'ssram23': expected NAME=BYTES (e.g. dtcm=65536 or dtcm=64K)"),
        (
            ["--pool", "ssram23=8M"],
            "--pool ssram23=8M: region ssram23 of mps2-an500 has only 4,177,920 B for the arena",
        ),
        (
            ["--pin", "image=flash"],
            "--pin image=flash: board mps2-an500 has no arena region 'flash' (arena regions: ssram23, psram)",
        ),
        (["--pin", "nope=psram"], "--pin nope=psram: the model has no activation tensor named 'nope'"),
        (["--pool", "ssram23=1K", "--pool", "psram=1K"], "the arena does not fit the regions"),
        (
            ["--pool", "ssram23=4K", "--pin", "a/depthwise=ssram23"],
            "--pin: the tensors pinned to ssram23 need",  # their bytes depend on the kernels chosen
        ),
    ],
    ids=[
        "unknown-region",
        "bad-size",
        "no-equals",
        "too-big",
        "pin-region",
        "pin-tensor",
        "too-small",
        "pin-too-big",
    ],
)
def test_bad_pool_and_pin_flags_are_one_line(demo, tmp_path, capsys, argv, message):
    code = main(
        ["build", str(demo), "--board", "mps2-an500", "--no-compile", "-o", str(tmp_path / "o"), *argv]
    )
    err = capsys.readouterr().err.strip()
    expected = 3 if message.startswith("the arena does not fit") else 2  # 3: does not fit the board
    assert code == expected and len(err.splitlines()) == 1 and message in err, err


def test_pool_without_a_board_is_refused(demo, tmp_path, capsys):
    assert main(["build", str(demo), "--pool", "ssram23=8K", "-o", str(tmp_path / "o")]) == 2
    assert "--pool needs --board" in capsys.readouterr().err


# ---- the code, on the host ------------------------------------------------------------------------


def test_generated_code_has_one_array_per_region(demo):
    module = generate(split_plan(demo, "ssram23=8K"))
    c, h = module.files["demo.c"], module.files["demo.h"]
    assert "static uint8_t demo_arena_ssram23[DEMO_ARENA_SSRAM23_BYTES] TS_ALIGNED(16);" in c
    assert "static uint8_t demo_arena_psram[DEMO_ARENA_PSRAM_BYTES] TS_ALIGNED(16);" in c
    assert "#define DEMO_ARENA_SSRAM23_BYTES 8192u" in h and "#define DEMO_ARENA_PSRAM_BYTES 10240u" in h
    assert "#define DEMO_ARENA_BYTES 18432u" in h
    assert "demo_arena[" not in c and "(arena +" not in c  # every pointer names its region


@needs_gcc
def test_a_split_arena_is_bit_exact_on_the_host(demo):
    from tinysched.device.verify import verify

    for pools, pins in ((("ssram23=8K",), ()), (("ssram23=4K",), ("head/fc=ssram23", "a/expand=psram"))):
        planned = split_plan(demo, *pools, pins=pins)
        assert len(planned.arena.pools) == 2
        result = verify(demo, planned, generate(planned), n_inputs=8)
        assert result.outputs_match and not result.mismatches


# ---- the image and the emulated board ---------------------------------------------------------------


def _measure(demo: Path, board, planned, out: Path, n_inputs: int = 2):
    from tinysched.build.firmware import build_firmware
    from tinysched.build.sources import write_sources
    from tinysched.device.runner import measure_image

    sources = write_sources(generate(planned), out / "src")
    image = build_firmware(sources, board, out / board.name)
    input_sets = [list(s) for s in reference.random_inputs(demo, 0, n_inputs)]
    expected = [[a.tobytes() for a in r.outputs] for r in reference.run_reference_many(demo, input_sets)]
    result = measure_image(
        image, board, [[a.tobytes() for a in s] for s in input_sets], expected, planned.arena.arena_bytes,
        arena_high_water_planned=planned.arena.high_water_bytes,
        regions_planned=[p.as_json() for p in planned.arena.pools],
    )  # fmt: skip
    return image, result


def test_the_image_puts_each_region_array_at_its_region(demo, cut_board, tmp_path):
    require("qemu")
    from tinysched.build.firmware import build_firmware
    from tinysched.build.sources import write_sources

    planned = split_plan(demo, board=cut_board)
    image = build_firmware(write_sources(generate(planned), tmp_path / "src"), cut_board, tmp_path / "fw")
    rows = [(a["region"], a["memory"], a["bytes"]) for a in image.size.arena_regions]
    assert rows == [
        (p.region, p.region, p.bytes) for p in sorted(planned.arena.pools, key=lambda p: p.origin)
    ]
    assert image.size.ram_arena == DEMO_ARENA
    use = {r.name: r.used for r in image.size.regions}
    assert use["blockram"] == planned.arena.pools[0].bytes
    script = image.linker_script.read_text()
    assert ".ts_arena_blockram (NOLOAD)" in script and "} > BLOCKRAM" in script
    assert "split arena: 2 regions" in "\n".join(image.size.lines())


def test_a_split_arena_runs_bit_exact_on_qemu_with_each_region_at_its_planned_high_water(
    demo, cut_board, tmp_path
):
    require("qemu")
    planned = split_plan(demo, board=cut_board)
    _, result = _measure(demo, cut_board, planned, tmp_path)
    assert result.outputs_match and result.outputs_agree_on_device
    assert [(r["region"], r["high_water_measured"]) for r in result.regions] == [
        (p.region, p.high_water_bytes) for p in planned.arena.pools
    ]
    assert [r["address"] for r in result.regions] == [p.origin for p in planned.arena.pools]
    assert result.arena_bytes_measured == planned.arena.high_water_bytes and result.arena_matches_plan
    assert result.ok and not result.mismatches


def test_measure_with_a_pool_limit_on_mps2_an500(demo, tmp_path, capsys):
    require("qemu")
    import json

    code = main(
        ["measure", str(demo), "--board", "mps2-an500", "--pool", "ssram23=8K", "--inputs", "2", "--json"]
        + ["--memory-model", "tensor"]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["ok"] and out["outputs_match"]
    assert [(r["region"], r["address"] >> 28, r["high_water_measured"]) for r in out["regions"]] == [
        ("ssram23", 0x2, 8192),
        ("psram", 0x6, 10240),
    ]


def test_pool_zero_keeps_the_arena_out_of_a_region(demo):
    arena = split_plan(demo, "ssram23=0").arena
    assert [(p.region, p.bytes) for p in arena.pools] == [("psram", DEMO_ARENA)]


def test_a_recomputation_sequence_is_split_too(demo):
    from tinysched.order.recompute import request_from_values

    request = pool_request(get_board("mps2-an500"), ["ssram23=4K"])
    planned = plan(read_model(demo), PlanOptions(pools=request, recompute=request_from_values(1, None, None)))
    assert len(planned.arena.pools) == 2 and planned.arena.pools[0].bytes <= 4096
    check_plan(planned.graph, planned.arena)


def test_the_report_has_a_region_table(demo):
    from tinysched.report import (
        CompareOptions,
        collect_metadata,
        render_html,
        render_markdown,
        run_comparisons,
    )

    planned = split_plan(demo, "ssram23=8K")
    doc = collect_metadata(
        planned,
        board=get_board("mps2-an500"),
        comparisons=run_comparisons(planned, None, CompareOptions(stock_tflm=False, recompute_ks=())),
    )
    rows = doc["arena"]["regions"]
    assert [(r["region"], r["origin"], r["used_bytes"]) for r in rows] == [
        ("ssram23", 0x20000000, 8192),
        ("psram", 0x60000000, 10240),
    ]
    names = {t["name"] for r in rows for t in r["tensors"]}
    assert names == {p.name for p in planned.arena.buffers if p.bytes}  # every tensor in exactly one row
    assert sum(len(r["tensors"]) for r in rows) == len(names)
    assert doc["arena"]["regions_certificate"] == certificate(planned.arena)
    fit = {r["name"]: r for r in doc["fit"]["regions"]}
    assert fit["psram"]["used_bytes"] == 10240 and "arena" in fit["psram"]["holds"]
    md, html = render_markdown(doc), render_html(doc)
    assert "| `psram` | 0x60000000 | 16,777,216 B | 10,240 B | 10,240 B |" in md
    assert '<table id="arena-regions">' in html and "<code>psram</code>" in html


def test_a_real_boards_split_runs_on_its_stand_in(demo, tmp_path):
    """nucleo-f767's regions (DTCM, SRAM1) are not mps2-an500's: the stand-in image links the
    region arrays into its .bss and still measures each region against the plan."""
    require("qemu")
    from tinysched.build import BuildOptions
    from tinysched.commands.build import build_model
    from tinysched.commands.device import measure_build
    from tinysched.report import CompareOptions

    request = pool_request(get_board("nucleo-f767"), ["dtcm=8K"])
    built = build_model(
        demo,
        tmp_path / "fw",
        "nucleo-f767",
        options=PlanOptions(pools=request, memory_model="tensor"),
        build=BuildOptions(),
        comparisons=CompareOptions(stock_tflm=False, recompute_ks=()),
        report=False,
    )
    assert [a["memory"] for a in built.image.size.arena_regions] == ["dtcm", "sram1"]  # the real board's
    result, _ = measure_build(built.directory, port=None, emulate=True, n_inputs=1)
    assert result.ran_on == "mps2-an500" and result.outputs_match and result.ok
    assert [(r["region"], r["high_water_measured"]) for r in result.regions] == [
        ("dtcm", 8192),
        ("sram1", 10240),
    ]
