"""Kernel variants (tinysched.memory.variants, tinysched.memory.inplace): the staged in-place CONV_2D / DEPTHWISE_CONV_2D
kernels' shifts for hand-computed shapes, which operators the refined model gives them, check_plan
refusing one byte more than a variant's order allows, and generated models bit-exact against TFLite on
the host (ASan/UBSan, portable C) and on an emulated Cortex-M7 (DSP paths) with the painted arena
high-water equal to the plan."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from helpers import (
    built_graph,
    first_op,
    generate_for_measure,
    host_verify,
    measured_equal_on_qemu,
    model_c_text,
    planned_c_text,
    saved_model,
)
from tiers import needs_gcc, require

from tinysched.arena.check import check_plan
from tinysched.codegen.lower_conv import (
    conv_quads_table,
    conv_stem_table,
    depthwise_blocks,
    rq_fields,
    rq_table,
)
from tinysched.errors import TinyschedError
from tinysched.memory.inplace import candidate, select_variants
from tinysched.memory.overlap import max_shift, memory_model, variant_shift
from tinysched.memory.variants import KernelVariant, variant_of, with_variants
from tinysched.model.graph import Graph
from tinysched.model.modelgen import ModelBuilder
from tinysched.model.reader import parse_model
from tinysched.pipeline import PlanOptions, generate, plan

# ---- the shifts, against hand-computed ones --------------------------------------------------------


def test_depthwise_ring_lag_is_the_row_above_plus_one() -> None:
    # 3x3 stride 1 SAME on 4x40x8: once pixel k is computed, pixel k+1 still reads from (y-1, x-1) on,
    # 41 pixels back; copying out pixel k - lag must not pass that: lag 41 gives D = 0 exactly, one
    # pixel less leaves the output 8 bytes below its input.
    def build(b: ModelBuilder) -> None:
        b.output(b.depthwise_conv2d(b.input("x", (1, 4, 40, 8)), (3, 3), name="dw"))

    g = built_graph(build)
    op = first_op(g, "DEPTHWISE_CONV_2D")
    assert variant_shift(g, op, "staged", 41) == 0
    assert variant_shift(g, op, "staged", 40) == -8
    assert variant_shift(g, op, "staged", 160) == 4 * 40 * 8  # all copied out after the last read
    assert candidate(g, op) == KernelVariant("DEPTHWISE_CONV_2D", "staged", 41, 42 * 8)
    assert max_shift(g, op, 0) == -72 * 8  # the default kernel's (DSP chunks of 32)


def test_staged_pointwise_shifts_follow_the_channel_counts() -> None:
    # chunks are read whole before written: D = min_g (lows of later chunks - end of chunk g)
    def build(b: ModelBuilder) -> None:
        x = b.input("x", (1, 48, 48, 8))
        t = b.conv2d(x, 16, (1, 1), name="widen")  # 8 -> 16
        t = b.conv2d(t, 16, (1, 1), name="same")  # 16 -> 16
        b.output(b.conv2d(t, 4, (1, 1), name="narrow"))  # 16 -> 4

    g = built_graph(build)
    widen, same, narrow = (op for op in g.operators if op.opcode == "CONV_2D")
    # widening: the output must end at the input's end or later: D = 18432 - 36864 and the two
    # share the whole input (the default kernel's chunks of 16 leave the output 128 bytes past it)
    assert variant_shift(g, widen, "staged", 16) == -18432
    assert max_shift(g, widen, 0) == -18560
    assert variant_shift(g, same, "staged", 16) == 0  # in place
    assert variant_shift(g, narrow, "staged", 6) == 6 * (16 - 4)  # after the first chunk
    assert candidate(g, same) == KernelVariant("CONV_2D", "staged", 16, 16 * 16)
    # a 3x3 convolution has no staged variant
    g3 = built_graph(lambda b: b.output(b.conv2d(b.input("x", (1, 8, 8, 4)), 4, (3, 3))))
    assert candidate(g3, first_op(g3, "CONV_2D")) is None


def test_rq_fields_match_ts_rq_prepare() -> None:
    # ts_simd.h: left = max(shift, 0), r = max(-shift, 0); base = 2^(r-1) + out_off * 2^r (r > 0)
    assert rq_fields(1 << 30, 2, -5) == (1 << 30, 3, -5, 0)
    assert rq_fields(1 << 30, -3, -5) == (1 << 30, 1, 4 - 40, 3 | 256)
    # a pruned channel (shift -23): the formula's one value over the accumulators' range, as a constant
    assert rq_fields(1 << 30, -23, 7, bias=1 << 29, reach=1 << 20) == (0, 1, 32 + 7, 0)
    # where that range spans two values, neither form: zeros the kernel's check never lets it read
    assert rq_fields(1 << 30, -23, 7, bias=1 << 29, reach=1 << 23) == (0, 0, 0, 0)


def test_depthwise_blocks_hold_biases_rq_fields_and_the_widened_filter() -> None:
    """ts_kernels.h "Blocks": per four channels 4 biases, 4 x 4 ts_rq fields, then per tap the
    filter as two words of 16-bit lanes [c | c+2], [c+1 | c+3]; tail channels are not in it."""

    def dw(b: ModelBuilder, multiplier: int = 1, kernel: tuple[int, int] = (2, 3)) -> None:
        x = b.input("x", (1, 5, 5, 6), zero_point=3)
        b.output(b.depthwise_conv2d(x, kernel, depth_multiplier=multiplier, name="dw"))

    g = built_graph(dw)
    op = first_op(g, "DEPTHWISE_CONV_2D")
    mults, shifts = [1 << 30] * 6, [-3] * 6
    table = depthwise_blocks(g, op, mults, shifts, -7)
    assert table is not None and len(table) == 20 + 2 * 2 * 3  # one block: 6 channels, 2x3 taps
    bias = [int(v) for v in g.tensors[op.inputs[2]].data]
    assert table[:4] == bias[:4]
    assert table[4:20] == rq_table(g, op, mults, shifts, -7)[:16]
    w = g.tensors[op.inputs[1]].data.reshape(6, 6)  # [tap][channel]

    def lanes(word: int) -> list[int]:  # the low and the high signed 16-bit half
        return [((word & 0xFFFF) ^ 0x8000) - 0x8000, word >> 16]

    for tap in range(6):
        assert lanes(table[20 + 2 * tap]) == [int(w[tap, 0]), int(w[tap, 2])]
        assert lanes(table[21 + 2 * tap]) == [int(w[tap, 1]), int(w[tap, 3])]
    # a depth multiplier, a filter wider than 3, a channel the formula must take: no blocks
    g2 = built_graph(lambda b: dw(b, multiplier=2))
    assert depthwise_blocks(g2, first_op(g2, "DEPTHWISE_CONV_2D"), [1 << 30] * 12, [-3] * 12, 0) is None
    g5 = built_graph(lambda b: dw(b, kernel=(3, 5)))
    assert depthwise_blocks(g5, first_op(g5, "DEPTHWISE_CONV_2D"), mults, shifts, 0) is None
    assert depthwise_blocks(g, op, mults, [30] + shifts[1:], -7) is None  # shift 30: outside ts_rq


def test_conv_quads_table_holds_bias_widened_filter_and_rq_fields() -> None:
    """ts_kernels.h CONV_2D quads: per output channel its bias, its K bytes rounded up to words with
    zeros as 16-bit lanes [w_4g | w_4g+2], [w_4g+1 | w_4g+3], then its four ts_rq fields."""

    def conv(b: ModelBuilder, kernel: tuple[int, int] = (3, 3), channels: int = 3) -> None:
        x = b.input("x", (1, 8, 8, channels), zero_point=-128)
        b.output(b.conv2d(x, 5, kernel, (2, 2), "SAME", activation="RELU", name="c"))

    g = built_graph(conv)
    op = first_op(g, "CONV_2D")
    mults, shifts = [1 << 30] * 5, [-4] * 5
    table = conv_quads_table(g, op, mults, shifts, -128)
    k4 = 28  # 3 x 3 x 3 = 27 bytes, one zero
    assert table is not None and len(table) == 5 * (5 + k4 // 2)
    bias = [int(v) for v in g.tensors[op.inputs[2]].data]
    fields = rq_table(g, op, mults, shifts, -128)
    w = [[int(v) for v in row] + [0] for row in g.tensors[op.inputs[1]].data.reshape(5, 27)]

    def lanes(word: int) -> list[int]:
        return [((word & 0xFFFF) ^ 0x8000) - 0x8000, word >> 16]

    for o in range(5):
        at = o * (5 + k4 // 2)
        assert table[at] == bias[o]
        for gr in range(k4 // 4):
            assert lanes(table[at + 1 + 2 * gr]) == [w[o][4 * gr], w[o][4 * gr + 2]]
            assert lanes(table[at + 2 + 2 * gr]) == [w[o][4 * gr + 1], w[o][4 * gr + 3]]
        assert table[at + 1 + k4 // 2 : at + 5 + k4 // 2] == fields[4 * o : 4 * o + 4]
    # a 1x1 filter (the pointwise paths), eight input channels, a channel the formula must take: none
    for build in (lambda b: conv(b, kernel=(1, 1)), lambda b: conv(b, channels=8)):
        other = built_graph(build)
        assert conv_quads_table(other, first_op(other, "CONV_2D"), mults, shifts, -128) is None
    assert conv_quads_table(g, op, mults, [30] + shifts[1:], -128) is None


def test_conv_stem_table_holds_doubled_sums_filter_rows_and_rq_fields() -> None:
    """ts_kernels.h CONV_2D stem: per group of four output channels their doubled biases plus
    input_offset * sum(w), the rows' ninth filter bytes, each row's two words as lanes for the four
    channels, their ts_rq m, base, rr and the group word; a constant channel's filter and bias zero;
    none for other shapes or a channel without a right shift."""

    def conv(b: ModelBuilder, kernel: tuple[int, int] = (3, 3), channels: int = 3) -> None:
        x = b.input("x", (1, 8, 8, channels), zero_point=-5)
        b.output(b.conv2d(x, 6, kernel, (2, 2), "SAME", activation="RELU", name="c"))

    g = built_graph(conv)
    op = first_op(g, "CONV_2D")
    mults, shifts = [1 << 30] * 6, [-4, -5, -4, -6, -4, -4]
    table = conv_stem_table(g, op, mults, shifts, -128)
    group = 4 + 4 + 2 + 3 * 2 * 8 + 4 * 3 + 1
    assert table is not None and len(table) == 2 * group
    bias = [int(v) for v in g.tensors[op.inputs[2]].data]
    fields = rq_table(g, op, mults, shifts, -128)
    w = [[int(v) for v in row] for row in g.tensors[op.inputs[1]].data.reshape(6, 27)]

    def lanes(word: int) -> list[int]:
        return [((word & 0xFFFF) ^ 0x8000) - 0x8000, word >> 16]

    for c in range(6):
        at, k = (c // 4) * group, c % 4
        assert table[at + k] == 2 * (bias[c] + 5 * sum(w[c]))  # input_offset 5
        assert lanes(table[at + 4 + k]) == [2 * w[c][8], 2 * w[c][17]]
        assert lanes(table[at + 8 + k // 2])[k % 2] == 2 * w[c][26]
        for ky in range(3):
            for j in range(2):
                pair = at + 10 + 8 * (2 * ky + j) + 2 * k
                t = w[c][9 * ky + 4 * j : 9 * ky + 4 * j + 4]
                assert lanes(table[pair]) == [2 * t[0], 2 * t[2]]
                assert lanes(table[pair + 1]) == [2 * t[1], 2 * t[3]]
        m, _, base, rr = fields[4 * c : 4 * c + 4]
        assert table[at + 58 + 3 * k : at + 61 + 3 * k] == [m, base, rr]
    assert table[group - 1] == 0 and table[2 * group - 1] == 1 + 2  # another group; a last of two
    assert table[group + 6 : group + 8] == [0, 0]  # the missing channels' biases
    # a pruned channel whose output is one constant: filter and bias zero, m zero, base its value
    pruned = [-31] + shifts[1:]
    m0, l1, value, rr0 = rq_table(g, op, mults, pruned, -128)[:4]
    assert (m0, l1, rr0) == (0, 1, 0)  # RQ_CONST
    const = conv_stem_table(g, op, mults, pruned, -128)
    assert const is not None and const[0] == 0 and const[58:61] == [0, value, 0]
    assert lanes(const[4])[0] == 0 and all(lanes(v)[0] == 0 for v in const[10:58:8])
    # no right shift (shift >= 0), a 1x1 or 3x3x4 filter: none
    assert conv_stem_table(g, op, mults, [0] + shifts[1:], -128) is None
    for build in (lambda b: conv(b, kernel=(1, 1)), lambda b: conv(b, channels=4)):
        other = built_graph(build)
        assert conv_stem_table(other, first_op(other, "CONV_2D"), mults, shifts, -128) is None


def test_dsp_tables_only_where_the_core_reads_them() -> None:
    """The DSP cores' kernels read the depthwise blocks and the quads' tables; a Helium core's
    (mps3-an547) take their own paths, so its sources carry neither (flash they would never read)
    and the same arena."""

    def dw(b: ModelBuilder) -> None:
        x = b.input("x", (1, 6, 6, 3), zero_point=-128)
        t = b.conv2d(x, 8, (3, 3), activation="RELU", name="c")
        b.output(b.depthwise_conv2d(t, (3, 3), activation="RELU", name="dw"))

    g = built_graph(dw)
    texts = {}
    for core in ("cortex-m7", "cortex-m55"):
        planned = plan(g, PlanOptions(core=core, time_limit=2.0))
        module = generate(planned)
        texts[core] = "".join(module.files.values())
        assert module.arena_bytes == planned.arena.arena_bytes
    # (the 3x3 layer over 3 channels: the stem table, in place of the quads')
    assert ".blocks = " in texts["cortex-m7"] and ".stem = " in texts["cortex-m7"]
    assert ".quads = " not in texts["cortex-m7"]
    assert "blocks" not in texts["cortex-m55"] and "quads" not in texts["cortex-m55"]
    assert "stem" not in texts["cortex-m55"]


# ---- which operators get one -----------------------------------------------------------------------


def _kws_like(b: ModelBuilder, channels: int = 16, blocks: int = 2) -> None:
    x = b.input("x", (1, 20, 6, 1))
    t = b.conv2d(x, channels, (4, 3), stride=(2, 2), activation="RELU", name="c0")
    for k in range(blocks):
        t = b.depthwise_conv2d(t, (3, 3), activation="RELU", name=f"dw{k}")
        t = b.conv2d(t, channels, (1, 1), activation="RELU", name=f"pw{k}")
    t = b.mean(t, (1, 2), keepdims=True, name="pool")  # (a global pool would end a stream)
    t = b.reshape(t, (1, channels), name="flat")
    b.output(b.fully_connected(t, 5, name="fc"))


def test_refined_plan_runs_the_staged_variants_in_place() -> None:
    g = built_graph(_kws_like)
    tensor = plan(g, PlanOptions(memory_model="tensor", time_limit=2.0))
    refined = plan(g, PlanOptions(memory_model="refined", time_limit=2.0))
    assert tensor.variants == {}  # the tensor model keeps today's kernels
    chosen = refined.variants
    assert (
        sorted(refined.graph.operators[v].opcode for v in chosen)
        == ["CONV_2D", "CONV_2D"] + ["DEPTHWISE_CONV_2D"] * 2
    )
    # each staged operator's output sits exactly over its input, its scratch elsewhere
    at = {p.index: p for p in refined.arena.buffers}
    for v in chosen:
        op = refined.graph.operators[v]
        assert at[op.outputs[0]].offset == at[op.inputs[0]].offset
        assert refined.graph.tensors[op.outputs[-1]].nbytes == chosen[v].scratch_bytes
    # 10x3x16 activations (480 bytes): the arena is one of them plus the largest ring (lag 4: 80 B)
    assert refined.arena.arena_bytes == 480 + 80
    assert select_variants(g, "refined", prefer="speed") == {}
    assert select_variants(g, "tensor") == {}
    # --prefer speed: the refined model with the default kernels only, no scratch, a larger arena
    speed = plan(g, PlanOptions(memory_model="refined", time_limit=2.0, prefer="speed"))
    assert speed.variants == {} and speed.arena.arena_bytes > refined.arena.arena_bytes
    # (scratch only for the widened CONV_2D kernels, in bytes the arena had free at their step)
    assert {t.name for t in speed.graph.tensors if t.name.endswith("/scratch")} == {
        speed.graph.tensors[speed.graph.operators[v].outputs[-1]].name for v in speed.wide_variants
    }
    assert [v["model_op"] for v in refined.variants_json()] == [
        refined.source_operator(v) for v in sorted(chosen)
    ]
    assert "4 operator(s) run in place" in refined.variants_summary()
    assert speed.variants_summary().startswith("default kernels everywhere (--prefer speed)")
    with pytest.raises(TinyschedError, match="--prefer must be one of memory, speed"):
        PlanOptions(prefer="fast")


def test_plan_and_build_say_which_kernels_run_in_place(tmp_path: Path, capsys) -> None:
    import json

    from tinysched.cli import main

    path = saved_model(tmp_path / "kws_like.tflite", _kws_like, seed=0)
    assert main(["plan", str(path), "--json"]) == 0
    variants = json.loads(capsys.readouterr().out)["kernel_variants"]
    assert sorted(v["opcode"] for v in variants) == ["CONV_2D"] * 2 + ["DEPTHWISE_CONV_2D"] * 2
    assert all(v["variant"] == "staged" and v["scratch_bytes"] > 0 for v in variants)
    assert main(["plan", str(path), "--prefer", "speed"]) == 0
    assert "kernels      default kernels everywhere (--prefer speed)" in capsys.readouterr().out
    out = tmp_path / "host"
    assert (
        main(["build", str(path), "--board", "host", "-o", str(out), "--no-report", "--prefer", "speed"]) == 0
    )
    record = json.loads((out / "kws_like_metadata.json").read_text())["build"]
    assert record["kernel_variants"] == [] and record["plan_options"]["prefer"] == "speed"


def test_check_plan_refuses_one_byte_past_a_variants_shift() -> None:
    g = built_graph(_kws_like)
    planned = plan(g, PlanOptions(memory_model="refined", time_limit=2.0, alignment=1))
    graph, arena = planned.graph, planned.arena
    model = memory_model(graph, "refined")
    v = next(v for v, var in planned.variants.items() if var.opcode == "DEPTHWISE_CONV_2D")
    pair = model.pairs[v]
    assert pair.shift == 0 and variant_of(graph, graph.operators[v]) is not None
    check_plan(graph, arena)
    moved = tuple(replace(p, offset=p.offset + 1) if p.index == pair.output else p for p in arena.buffers)
    # the next operator's input moves with it (its own pair then still holds): only this step breaks
    with pytest.raises(TinyschedError, match="overlap in memory beyond what the refined model allows"):
        check_plan(graph, replace(arena, buffers=moved, arena_bytes=arena.arena_bytes + 1))
    # the same plan claimed with the default kernels recorded is refused too (their D is negative)
    plain = with_variants(replace_options(graph), {})
    with pytest.raises(TinyschedError, match="overlap in memory beyond what the refined model allows"):
        check_plan(plain, arena)


def replace_options(graph: Graph) -> Graph:
    """`graph` with every recorded variant dropped (the scratch tensors stay)."""
    from tinysched.memory.variants import VARIANT_OPTION, VARIANT_PARAM_OPTION

    ops = tuple(
        replace(
            op,
            options={k: x for k, x in op.options.items() if k not in (VARIANT_OPTION, VARIANT_PARAM_OPTION)},
        )
        for op in graph.operators
    )
    return graph.derived(graph.tensors, ops)


# ---- realised: bit-exact ----------------------------------------------------------------------------


def _odd_shapes(b: ModelBuilder) -> None:
    x = b.input("x", (1, 11, 9, 3))
    t = b.conv2d(x, 7, (3, 3), stride=(2, 2), activation="RELU6", name="c0")  # 6x5x7
    t = b.depthwise_conv2d(t, (3, 3), activation="RELU", name="dw_same")  # odd channels: a tail of 3
    t = b.conv2d(t, 7, (1, 1), name="pw_7_7")
    t = b.conv2d(t, 5, (1, 1), activation="RELU", name="pw_7_5")  # in_c > out_c
    t = b.conv2d(t, 9, (1, 1), name="pw_5_9")  # in_c < out_c
    t = b.depthwise_conv2d(t, (5, 5), activation="RELU6", name="dw_5x5")  # the tap-rectangle path
    t = b.depthwise_conv2d(t, (3, 3), stride=(2, 2), padding="VALID", name="dw_s2")  # 2x2x9
    b.output(b.conv2d(t, 9, (1, 1), name="pw_9_9"))


@needs_gcc
@pytest.mark.host
@pytest.mark.parametrize("build", [_odd_shapes, _kws_like], ids=["odd_shapes", "kws_like"])
def test_staged_variants_bit_exact_on_the_host(build, tmp_path: Path) -> None:
    path = tmp_path / "model.tflite"
    saved_model(path, build, seed=3)
    planned = plan(parse_model(path.read_bytes()), PlanOptions(memory_model="refined", time_limit=2.0))
    kinds = {planned.graph.operators[v].opcode for v in planned.variants}
    assert kinds == {"CONV_2D", "DEPTHWISE_CONV_2D"}
    c_source = planned_c_text(planned)
    assert "ts_depthwise_conv2d_s8_staged(" in c_source and "ts_conv2d_s8_staged(" in c_source
    result = host_verify(path, n_inputs=3, seed=1, opt="-O1", sanitize=True, memory_model="refined")
    assert result.mismatches == [] and result.outputs_match


def _kws_like_32(b: ModelBuilder) -> None:
    _kws_like(b, channels=32, blocks=3)


def _kws_like_29(b: ModelBuilder) -> None:
    """29 channels: the Helium staged depthwise's pass of two blocks, then a whole block and a
    predicated tail of 5 (firmware/kernels/ts_mve.h ts_mve_dw_pixel)."""
    _kws_like(b, channels=29, blocks=2)


def _kws_25x5(b: ModelBuilder) -> None:
    """KWS's own geometry at 16 channels: 25x5 activations, so the pointwise chunks (6 pixels, 96 B)
    hold three pixels' widened inputs (ts_kernels.h "CONV_2D staged": widened in place)."""
    x = b.input("x", (1, 49, 10, 1), zero_point=83)
    t = b.conv2d(x, 16, (10, 4), stride=(2, 2), activation="RELU", name="c0")
    for k in range(2):
        t = b.depthwise_conv2d(t, (3, 3), activation="RELU", name=f"dw{k}")
        t = b.conv2d(t, 16, (1, 1), activation="RELU", name=f"pw{k}")
    t = b.mean(t, (1, 2), keepdims=True, name="pool")  # (a global pool would end a stream)
    t = b.reshape(t, (1, 16), name="flat")
    b.output(b.fully_connected(t, 5, name="fc"))


def _kws_threes(b: ModelBuilder, channels: int, rows: int) -> None:
    """KWS's geometry at `channels` channels over `rows` input rows: the staged pointwise widens its
    pixels in threes and, on DSP cores, takes every channel of a three from the generator's table
    (ts_kernels.h "CONV_2D staged"); 20 channels: five groups of four (one a loop turn), 24: six (two
    a turn); 51 rows: 26x5 pixels, a last pixel alone (the C loop), 49: 25x5, a last pair."""
    x = b.input("x", (1, rows, 10, 1), zero_point=-7)
    t = b.conv2d(x, channels, (10, 4), stride=(2, 2), activation="RELU", name="c0")
    for k in range(2):
        t = b.depthwise_conv2d(t, (3, 3), activation="RELU", name=f"dw{k}")
        # pw1: RELU6 to [-10, 110] (the clamp); pw0: RELU over all of int8 (none needed)
        quant = (0.05, -10) if k else None
        t = b.conv2d(
            t, channels, (1, 1), activation="RELU6" if k else "RELU", output_quant=quant, name=f"pw{k}"
        )
    t = b.mean(t, (1, 2), keepdims=True, name="pool")  # (a global pool would end a stream)
    t = b.reshape(t, (1, channels), name="flat")
    b.output(b.fully_connected(t, 5, name="fc"))


def _kws_threes_20(b: ModelBuilder) -> None:
    _kws_threes(b, 20, 51)


def _kws_threes_24(b: ModelBuilder) -> None:
    _kws_threes(b, 24, 49)


def _kws_threes_32(b: ModelBuilder) -> None:
    """Eight groups a turn, with the clamp (RELU6) and without it where RELU's range is int8's."""
    _kws_threes(b, 32, 47)


def _pointwise_channels(b: ModelBuilder) -> None:
    """Staged pointwise layers of whole words of channels, 16 -> 16 -> 24 -> 8 -> 16 over 8x4
    pixels, chunks of one or two: the DSP path that widens one pixel into the scratch and writes
    its output straight over the input (staged_wide1) where each output pixel ends before the next
    input pixel, the chunked path where an output shifted past its input would not."""
    x = b.input("x", (1, 8, 4, 16), zero_point=-3)
    t = b.conv2d(x, 16, (1, 1), activation="RELU", name="pw_16_16")
    t = b.depthwise_conv2d(t, (3, 3), activation="RELU", name="dw0")
    t = b.conv2d(t, 24, (1, 1), activation="RELU6", name="pw_16_24")
    t = b.conv2d(t, 8, (1, 1), name="pw_24_8")
    t = b.conv2d(t, 16, (1, 1), activation="RELU", name="pw_8_16")
    t = b.mean(t, (1, 2), keepdims=True, name="pool")  # (a global pool would end a stream)
    b.output(b.fully_connected(b.reshape(t, (1, 16), name="flat"), 3, name="fc"))


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an500", "mps3-an547"])  # DSP loops; Helium (ts_mve.h)
@pytest.mark.parametrize(
    "build",
    [
        _kws_like_32,
        _odd_shapes,
        _kws_25x5,
        _kws_like_29,
        _pointwise_channels,
        _kws_threes_20,
        _kws_threes_24,
        _kws_threes_32,
    ],
    ids=[
        "kws_like",
        "odd_shapes",
        "kws_25x5",
        "kws_like_29",
        "pointwise_channels",
        "threes_20",
        "threes_24",
        "threes_32",
    ],
)
def test_staged_variants_measured_equal_on_qemu(build, board: str, tmp_path: Path) -> None:
    require("qemu")
    path = tmp_path / "model.tflite"
    saved_model(path, build, seed=0)
    gen = generate_for_measure(path, tmp_path / "gen", 2, memory_model="refined")
    model_c = model_c_text(gen)
    assert "ts_depthwise_conv2d_s8_staged(" in model_c and "ts_conv2d_s8_staged(" in model_c
    if build is _kws_like_32:  # one 10x3x32 activation and a ring of 5 pixels
        assert gen.arena_bytes_planned == 960 + 5 * 32
    if build in (
        _kws_25x5,
        _kws_threes_20,
        _kws_threes_24,
        _kws_threes_32,
    ):  # chunks of at least 6 pixels: the
        # staged pointwise widens in place, in threes, from the generator's table on DSP cores
        planned = plan(parse_model(path.read_bytes()), PlanOptions(memory_model="refined", time_limit=2.0))
        chunks = [v.param for v in planned.variants.values() if v.opcode == "CONV_2D"]
        assert len(chunks) == 2 and min(chunks) >= 6
        assert model_c_text(gen).count(".quads = ") == 3  # the 10x4 layer and both pointwise ones
    measured_equal_on_qemu(gen, tmp_path / "qemu", board)


# ---- PAD: the default kernel's order lets its input lie inside its output -------------------------


def _padded(b: ModelBuilder) -> None:
    x = b.input("x", (1, 9, 7, 5))
    t = b.conv2d(x, 6, (1, 1), activation="RELU", name="c0")
    t = b.pad(t, [(0, 0), (1, 2), (2, 1), (0, 0)], name="pad")
    b.output(b.logistic(t, name="sig"))  # (a pooling or convolution consumer would absorb the PAD)


def test_pad_shift_is_the_padding_before_its_last_input_element() -> None:
    # 3x4x2 -> 5x7x2 (rows 1 + 1, columns 1 + 2): the last input element (23) is output element
    # 3 * 14 + 4 * 2 + 1 = 51, written when no input is left to read: D = 24 - 52; the padding after
    # it constrains nothing. So the 24 input bytes fit inside the 70 output bytes.
    def build(b: ModelBuilder) -> None:
        b.output(b.pad(b.input("x", (1, 3, 4, 2)), [(0, 0), (1, 1), (1, 2), (0, 0)]))

    g = built_graph(build)
    assert max_shift(g, first_op(g, "PAD"), 0) == -28
    pair = memory_model(g, "refined").pairs  # the graph input dies at the PAD
    assert next(iter(pair.values())).saving() == 24


@needs_gcc
@pytest.mark.host
def test_pad_in_place_bit_exact_on_the_host(tmp_path: Path) -> None:
    path = tmp_path / "padded.tflite"
    saved_model(path, _padded, seed=2)
    planned = plan(parse_model(path.read_bytes()), PlanOptions(memory_model="refined", time_limit=2.0))
    pad = first_op(planned.graph, "PAD")
    at = {p.index: p for p in planned.arena.buffers}
    x, y = at[pad.inputs[0]], at[pad.outputs[0]]
    assert y.offset <= x.offset and x.offset + x.bytes <= y.offset + y.bytes  # the input inside
    result = host_verify(path, n_inputs=3, seed=1, opt="-O1", sanitize=True, memory_model="refined")
    assert result.mismatches == [] and result.outputs_match


def _wide_then_narrow(b: ModelBuilder) -> None:
    """A wide first block (the peak: 16x16x8 in, 16x16x32 out) and a narrow depthwise-separable tail
    whose steps stay far below it with the default kernels."""
    x = b.input("x", (1, 16, 16, 8))
    t = b.conv2d(x, 32, (3, 3), activation="RELU", name="wide")
    t = b.conv2d(t, 16, (3, 3), stride=(2, 2), activation="RELU", name="down")
    for k in range(2):
        t = b.depthwise_conv2d(t, (3, 3), activation="RELU", name=f"dw{k}")
        t = b.conv2d(t, 16, (1, 1), activation="RELU", name=f"pw{k}")
    b.output(t)


def test_variants_that_lower_no_peak_are_dropped() -> None:
    """Each variant costs flash (its requantisation table) and on some cores speed: the plan keeps
    only those whose step would rise above the peak with the default kernel."""
    g = built_graph(_wide_then_narrow)
    candidates = select_variants(g, "refined")
    assert {g.operators[v].opcode for v in candidates} >= {"DEPTHWISE_CONV_2D"}
    planned = plan(g, PlanOptions(memory_model="refined", time_limit=2.0))
    assert len(planned.variants) < len(candidates)
    speed = plan(g, PlanOptions(memory_model="refined", time_limit=2.0, prefer="speed"))
    assert planned.arena.arena_bytes <= speed.arena.arena_bytes
    check_plan(planned.graph, planned.arena)


# ---- the widened CONV_2D kernel: scratch only where the placed arena has room -----------------------


def test_wide_variant_takes_only_bytes_the_arena_leaves_free() -> None:
    from fast_path_models import conv_widened

    from tinysched.arena.placement import aligned_lower_bound, arena_buffers, step_savings

    g = parse_model(conv_widened())
    planned = plan(g, PlanOptions(time_limit=2.0))
    wide = planned.wide_variants
    names = {v: planned.graph.operators[v].outputs[0] for v in wide}
    # the peak convolution keeps the default kernel; the later ones get scratch, sized by K and blocks
    assert sorted(wide) == [2, 3, 4, 5] and planned.graph.operators[0].opcode == "CONV_2D"
    assert variant_of(planned.graph, planned.graph.operators[0]) is None
    k = {2: 3 * 3 * 4, 3: 5 * 5 * 7, 4: 9, 5: 3 * 3 * 8}
    for v, variant in wide.items():
        assert variant.kernel == "ts_conv2d_s8_wide" and 1 <= variant.param <= 8
        assert variant.scratch_bytes == variant.param * 6 * (-(-k[v] // 4) * 4) * 2
        scratch = planned.graph.operators[v].outputs[-1]
        assert scratch != names[v] and planned.graph.tensors[scratch].nbytes == variant.scratch_bytes
    check_plan(planned.graph, planned.arena)  # the scratch is a tensor of the plan like any other
    # the arena, its high-water and its lower bound are those of the default kernels' plan
    order = planned.arena.order
    base = planned.default_kernels_graph
    model = memory_model(base, "refined")
    bound = aligned_lower_bound(arena_buffers(base, order, 16, model), step_savings(model, order, 16))
    assert planned.arena.lower_bound_bytes == bound == planned.arena.arena_bytes
    top = max(p.offset + p.bytes for p in planned.arena.buffers if p.index < len(base.tensors))
    assert max(p.offset + p.bytes for p in planned.arena.buffers) == top
    assert {w["model_op"] for w in planned.wide_json()} == {planned.source_operator(v) for v in wide}
    assert "4 CONV_2D operator(s) run the widened kernel" in planned.variants_summary()
    # generated calls: the variant with its scratch and ts_rq table, the default kernel elsewhere
    text = "\n".join(generate(planned).files.values())
    assert text.count("ts_conv2d_s8_wide(&") == 4 and text.count("ts_conv2d_s8(&") == 1
    # the tensor model (what --tflm hands to stock TFLM) keeps the model's own tensors
    assert plan(g, PlanOptions(time_limit=2.0, memory_model="tensor")).wide_variants == {}
