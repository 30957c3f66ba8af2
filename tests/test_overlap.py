"""The refined memory model (tinysched.memory.overlap): the table's shifts for hand-computed shapes, the
plan it gives (views at their root, overlaps within the shift), check_plan refusing one byte more,
and generated models bit-exact under ASan/UBSan in it."""

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
    planned_c_text,
    saved_model,
)
from tiers import needs_gcc, require

from tinysched.arena.check import check_plan
from tinysched.arena.placement import plan_arena
from tinysched.errors import TinyschedError
from tinysched.memory.overlap import max_shift, memory_model, refine
from tinysched.memory.tensor import profile
from tinysched.model.modelgen import ModelBuilder, random_branching_model
from tinysched.model.reader import parse_model
from tinysched.order.scheduler import schedule
from tinysched.pipeline import PlanOptions, plan


def _chain(b: ModelBuilder, shape=(1, 4, 40, 8)):
    x = b.input("x", shape)
    y = b.depthwise_conv2d(x, (3, 3), name="dw")
    b.output(y)


# ---- the table, against hand-computed shifts ----------------------------------------------------


def test_depthwise_shift_is_the_row_above_plus_a_chunk() -> None:
    # 3x3 stride 1 SAME on 4x40x8. Portable path, pixel by pixel: pixel (y, x) is written while
    # (y-1, x-1) is still to be read: 42 pixels. DSP path, chunks of up to 32 pixels of a row: the
    # first chunk of row y is written (its end: pixel (y, 31)) while row y-1 from column 0 is
    # still to be read: 40 + 32 = 72 pixels of 8 bytes.
    g = built_graph(_chain)
    assert max_shift(g, first_op(g, "DEPTHWISE_CONV_2D"), 0) == -72 * 8


def test_expanding_pointwise_ends_one_chunk_past_the_input() -> None:
    # 1x1 conv 48x48x8 -> 48x48x16. DSP path: chunks of 16 pixels of the flat order, each chunk's
    # channel pairs written while the chunk's input is still read, so after chunk k the output
    # reaches 16(k+1) * 16 while input 16k * 8 is pending: min at the last chunk (k = 143):
    # 143 * 128 - 144 * 256 = -18560. The output's end then lies 128 bytes past the input's end.
    def build(b: ModelBuilder) -> None:
        x = b.input("x", (1, 48, 48, 8))
        b.output(b.conv2d(x, 16, (1, 1), name="pw"))

    g = built_graph(build)
    op = first_op(g, "CONV_2D")
    assert max_shift(g, op, 0) == -18560
    pair = refine(g).pairs[op.index]  # the graph input dies here: its bytes may be overwritten
    assert pair.saving() == 36864 - 18560  # output bytes + shift: what the two can share
    assert pair.input_bytes + pair.output_bytes - pair.saving() == 36864 + 128


def test_elementwise_and_quantize_shifts() -> None:
    def build(b: ModelBuilder) -> None:
        x = b.input("x", (1, 10), dtype="float32")
        q = b.quantize(x, 0.05, 3, name="q")
        r = b.logistic(q, name="sig")
        b.output(b.dequantize(r, name="dq"))

    g = built_graph(build)
    # float32 -> int8: element k (1 byte) is written after reading element k (4 bytes), so the
    # output may start up to 3 bytes behind the input's start
    assert max_shift(g, first_op(g, "QUANTIZE"), 0) == 3
    assert max_shift(g, first_op(g, "LOGISTIC"), 0) == 0  # same element size: in place
    # int8 -> float32: 4 bytes written per byte read: the output must end at or past the input's end
    assert max_shift(g, first_op(g, "DEQUANTIZE"), 0) == -30


def test_single_batch_fully_connected_cannot_overlap() -> None:
    def build(b: ModelBuilder) -> None:
        x = b.input("x", (1, 64))
        b.output(b.fully_connected(x, 10, name="fc"))

    g = built_graph(build)
    op = first_op(g, "FULLY_CONNECTED")
    assert max_shift(g, op, 0) == -10  # its one output row is written while its one input row is read


# ---- the model and the plan ------------------------------------------------------------------------


def _dw_chain(b: ModelBuilder) -> None:
    x = b.input("x", (1, 8, 8, 16))
    t = b.conv2d(x, 16, (3, 3), activation="RELU", name="c0")
    t = b.depthwise_conv2d(t, (3, 3), activation="RELU", name="dw")
    t = b.conv2d(t, 16, (1, 1), name="pw")
    t = b.reshape(t, (1, 64, 16), name="view")
    b.output(b.logistic(t, name="sig"))


def test_refined_plan_overlaps_within_the_shift_and_views_sit_at_their_root() -> None:
    g = built_graph(_dw_chain)
    model = refine(g)
    view = first_op(g, "RESHAPE")
    assert model.views == {view.outputs[0]: view.inputs[0]}
    sched = schedule(g, time_limit=2.0, model=model)
    tensor = schedule(g, time_limit=2.0)
    assert sched.certified and sched.memory_model == "refined"
    assert sched.peak_bytes < tensor.peak_bytes
    assert profile(g, sched.order, model).peak_bytes == sched.peak_bytes
    arena = plan_arena(g, sched.order, alignment=1, model=model)
    check_plan(g, arena)
    at = arena.offsets
    assert at[view.outputs[0]] == at[view.inputs[0]]
    overlapping = 0
    for pair in model.pairs.values():
        i, o = at[pair.root], at[pair.output]
        assert pair.allowed(i, o)
        overlapping += not (o >= i + pair.input_bytes or o + pair.output_bytes <= i)
    assert overlapping >= 2
    assert arena.arena_bytes < plan_arena(g, tensor.order, alignment=1).arena_bytes


def test_check_plan_refuses_one_byte_too_far() -> None:
    g = built_graph(_dw_chain)
    model = refine(g)
    dw = first_op(g, "DEPTHWISE_CONV_2D")
    pair = model.pairs[dw.index]
    order = schedule(g, time_limit=2.0, model=model).order
    arena = plan_arena(g, order, alignment=1, model=model)
    # put the depthwise output exactly at the shift, then one byte further; lift everything else
    # out of the way so that only this pair can meet
    base = arena.arena_bytes + 64
    i = base
    buffers = []
    top = base + pair.input_bytes + pair.output_bytes + 64
    for p in arena.buffers:
        if p.index == pair.root:
            buffers.append(replace(p, offset=i))
        elif p.index == pair.output:
            buffers.append(replace(p, offset=i + pair.shift))
        else:
            buffers.append(replace(p, offset=top))
            top += p.bytes
    views = model.views
    at = {p.index: p for p in buffers}
    buffers = [replace(p, offset=at[views[p.index]].offset) if p.index in views else p for p in buffers]
    at_shift = replace(arena, buffers=tuple(buffers), arena_bytes=top + 64)
    check_plan(g, at_shift)
    one_more = [replace(p, offset=p.offset + 1) if p.index == pair.output else p for p in buffers]
    one_more = [replace(p, offset=p.offset + 1) if views.get(p.index) == pair.output else p for p in one_more]
    with pytest.raises(TinyschedError, match="overlap in memory beyond what the refined model allows"):
        check_plan(g, replace(at_shift, buffers=tuple(one_more)))
    # claimed as a tensor-model plan it is refused (a view's root outlives its own readers there)
    with pytest.raises(TinyschedError, match="the memory model says"):
        check_plan(g, replace(at_shift, memory_model="tensor", lower_bound_bytes=0))


def test_a_model_without_overlaps_gets_the_tensor_plan() -> None:
    def build(b: ModelBuilder) -> None:
        x = b.input("x", (1, 64))
        b.output(b.fully_connected(x, 10, name="fc"))

    g = built_graph(build)
    assert not memory_model(g, "refined").refined
    assert plan(g, PlanOptions(memory_model="refined")).arena.memory_model == "tensor"


def test_unknown_memory_model_is_one_line() -> None:
    with pytest.raises(TinyschedError, match="--memory-model must be one of tensor, refined"):
        PlanOptions(memory_model="magic")


# ---- realised: bit-exact under the sanitizers ------------------------------------------------------


@needs_gcc
@pytest.mark.host
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_models_bit_exact_in_the_refined_model(seed: int, tmp_path: Path) -> None:
    path = tmp_path / f"random{seed}.tflite"
    path.write_bytes(random_branching_model(seed, n_blocks=5))
    g = parse_model(path.read_bytes())
    refined = plan(g, PlanOptions(memory_model="refined", time_limit=3.0))
    tensor = plan(g, PlanOptions(memory_model="tensor", time_limit=3.0))
    assert refined.arena.arena_bytes <= tensor.arena.arena_bytes
    result = host_verify(path, n_inputs=3, seed=seed, opt="-O1", sanitize=True, memory_model="refined")
    assert result.mismatches == [] and result.outputs_match


@needs_gcc
@pytest.mark.host
def test_views_generate_no_copy(tmp_path: Path) -> None:
    path = tmp_path / "chain.tflite"
    saved_model(path, _dw_chain, seed=0)
    g = parse_model(path.read_bytes())
    planned = plan(g, PlanOptions(memory_model="refined", time_limit=2.0))
    c_source = planned_c_text(planned)
    assert "ts_copy(" not in c_source and "view: the output is the input's bytes" in c_source
    result = host_verify(path, n_inputs=3, seed=5, opt="-O1", sanitize=True, memory_model="refined")
    assert result.outputs_match


@pytest.mark.qemu
def test_refined_plan_measured_equal_on_qemu(tmp_path: Path) -> None:
    require("qemu")
    path = tmp_path / "chain.tflite"
    saved_model(path, _dw_chain, seed=0)
    gen = generate_for_measure(path, tmp_path / "gen", 2, memory_model="refined")
    tensor = generate_for_measure(path, tmp_path / "gen_tensor", 1, memory_model="tensor")
    assert gen.arena_bytes_planned < tensor.arena_bytes_planned
    measured_equal_on_qemu(gen, tmp_path / "qemu")


# ---- certificates in the refined model ------------------------------------------------------------


@pytest.mark.parametrize("build", [_dw_chain, lambda b: _chain(b)])
def test_refined_certificate_rechecks_in_the_refined_model_only(build) -> None:
    from tinysched.order.bounds import LowerBound, recheck

    g = built_graph(build)
    sched = schedule(g, time_limit=2.0, model=refine(g))
    tensor = schedule(g, time_limit=2.0)
    cert = sched.certificate
    assert sched.certified and cert.kind == "lower_bound" and sched.memory_model == "refined"
    assert cert.lower_bound_bytes == sched.peak_bytes < tensor.peak_bytes
    witness = {k: v for k, v in cert.witness.items() if k != "bound"}
    bound = LowerBound(cert.lower_bound_bytes, cert.witness["bound"], witness)
    # re-derived from the kernels' table, not taken from the plan
    assert recheck(g, bound, refine(g))
    assert not recheck(g, replace(bound, bytes=bound.bytes + 1), refine(g))
    # the tensor model's optimum is rechecked in the tensor model; the refined bound is below it
    t = tensor.certificate
    tensor_bound = LowerBound(
        t.lower_bound_bytes, t.witness["bound"], {k: v for k, v in t.witness.items() if k != "bound"}
    )
    assert recheck(g, tensor_bound) and not recheck(g, tensor_bound, refine(g))


def _squeeze_excite(b: ModelBuilder) -> None:
    """A squeeze-excitation block on the input: the global pool reads the feature map first, the
    broadcast MUL scales it last."""
    x = b.input("x", (1, 8, 8, 16))  # 1,024 B, read by the MEAN and the MUL
    m = b.mean(x, (1, 2), keepdims=True, name="pool")  # 16 B
    g = b.logistic(b.conv2d(m, 16, (1, 1), name="fc"), name="gate")  # 16 B each
    y = b.mul(x, g, name="scale")  # 1,024 B
    b.output(b.conv2d(y, 4, (1, 1), name="project"))  # 256 B


def test_a_broadcast_mul_scales_in_place_after_the_global_pool() -> None:
    g = built_graph(_squeeze_excite)
    mul = first_op(g, "MUL")
    # the MEAN also reads x, but it is an ancestor of the MUL, so x dies at the MUL in every order
    pair = refine(g).pairs[mul.index]
    assert (pair.input, max_shift(g, mul, 0)) == (mul.inputs[0], 0)
    planned = plan(g, PlanOptions(alignment=1, time_limit=2.0))
    # x (1,024) with the pool's 16 B and the fc's 16 B (steps fc and gate: 1,056 B), the MUL's output
    # over x (1,024 + the gate's 16 = 1,040 B); before, the MUL held x, its output and the gate: 2,064 B
    assert planned.schedule.peak_bytes == planned.arena.arena_bytes == 1024 + 16 + 16
    assert planned.schedule.certified


@needs_gcc
@pytest.mark.host
def test_squeeze_excite_in_place_bit_exact_on_the_host(tmp_path: Path) -> None:
    path = saved_model(tmp_path / "se.tflite", _squeeze_excite, seed=4)
    result = host_verify(path, n_inputs=3, seed=1, opt="-O1", sanitize=True, alignment=1)
    assert result.mismatches == [] and result.outputs_match


# ---- ARG_MAX over its dying input (issue 33: deeplab's peak) --------------------------------------


def _class_map(b: ModelBuilder) -> None:
    """A segmentation head: 21 class scores per pixel of a 9x11 map, ARG_MAX into int64 (8 B a pixel)."""
    from fast_path_models import _arg_max

    x = b.input("x", (1, 9, 11, 8))
    b.output(_arg_max(b, b.conv2d(x, 21, (1, 1), name="scores"), "int64", "classes"))


def test_arg_max_output_starts_over_its_input_when_no_wider() -> None:
    g = built_graph(_class_map)
    arg = first_op(g, "ARG_MAX")
    # pixel p reads bytes [21p, 21p + 21) and then ends its output at 8(p + 1): D = 21 - 8
    assert max_shift(g, arg, 0) == 13
    pair = refine(g).pairs[arg.index]
    assert (pair.input_bytes, pair.output_bytes, pair.saving()) == (99 * 21, 99 * 8, 99 * 8)
    # whole tensors (--prefer speed: no streams; with them the conv streams into the ARG_MAX)
    planned = plan(g, PlanOptions(alignment=1, time_limit=2.0, prefer="speed"))
    at = planned.arena.offsets
    # the ARG_MAX step holds only the scores (2,079 B), its output inside them: the peak is the
    # convolution's step (its own output over its dying input), below the 2,871 B of the two apart
    assert 0 <= at[pair.output] - at[pair.root] <= 13
    steps = [
        s.live_bytes for s in profile(planned.graph, planned.schedule.order, refine(planned.graph)).steps
    ]
    assert steps[-1] == 99 * 21
    assert planned.arena.arena_bytes == planned.schedule.peak_bytes == max(steps) < 99 * 8 + 99 * 21
    check_plan(planned.graph, planned.arena)


def test_arg_max_over_a_leading_axis_or_a_wider_element_shifts_less() -> None:
    from fast_path_models import _arg_max

    def narrow(b: ModelBuilder) -> None:  # int64 over 6 channels: 8 B written per 6 B read
        x = b.input("x", (1, 3, 4, 8))
        b.output(_arg_max(b, b.conv2d(x, 6, (1, 1), name="scores"), "int64", "classes"))

    g = built_graph(narrow)
    # pixel p ends its output at 8(p + 1) while later pixels still read from 6(p + 1); the last
    # pixel's reads are done when it writes: D = min(6(p + 1) - 8(p + 1)) over p < 11, and 72 - 96
    assert max_shift(g, first_op(g, "ARG_MAX"), 0) == -24


def test_deeplab_plans_its_arg_max_over_the_upsampled_scores() -> None:
    from conftest import shared_model

    g = parse_model(shared_model("coral_deeplabv3_mnv2_dm05_uint8").read_bytes())
    # --prefer speed: no chain streamed (tests/test_uint8.py has the streamed plan), the overlaps alone
    planned = plan(g, PlanOptions(time_limit=5.0, prefer="speed"))
    # the peak is now the last RESIZE_BILINEAR: 33x33x21 scores (22,869 B) into 513x513x21
    # (5,526,549 B); the ARG_MAX's 513x513 int64 output (2,105,352 B) sits inside the upsampled
    # scores, where before its step held both (7,631,901 B)
    arg = first_op(planned.graph, "ARG_MAX")
    model = refine(planned.graph)
    pair = model.pairs[arg.index]
    assert (pair.input_bytes, pair.output_bytes, pair.shift) == (5_526_549, 2_105_352, 13)
    assert 0 <= planned.arena.offsets[pair.output] - planned.arena.offsets[pair.root] <= 13
    # and the upsampled scores end past the start of their last source row (row 32 of 33, rows of
    # 693 B): they share 32 x 693 = 22,176 B with the scores they are made from
    resize = model.pairs[planned.graph.producer[arg.inputs[0]]]
    assert (resize.input_bytes, resize.shift, resize.saving()) == (22_869, 32 * 693 - 5_526_549, 22_176)
    assert planned.schedule.peak_bytes == 22_869 + 5_526_549 - 22_176
    assert planned.arena.arena_bytes == 5_527_264  # 16-byte aligned offsets
    check_plan(planned.graph, planned.arena)


def test_resize_output_ends_past_its_last_source_row() -> None:
    from fast_path_models import resize_over_input

    g = parse_model(resize_over_input())
    bilinear, nearest = (op for op in g.operators if op.opcode.startswith("RESIZE"))
    # bilinear half_pixel_centers 5 -> 11 rows: row v's first source row is trunc((465 v - 280) / 1024),
    # row 10's is 4; rows of 4 x 12 = 48 B in, 9 x 12 = 108 B out: D = 4 x 48 - 11 x 108
    assert max_shift(g, bilinear, 0) == 4 * 48 - 11 * 108
    # nearest align_corners 5 -> 3 rows reads rows 0, 2, 4 (rows of 24 B in, 42 B out): the first
    # output row ends 42 B past row 0's start, the others less far past theirs
    assert max_shift(g, nearest, 0) == -42


@needs_gcc
@pytest.mark.host
def test_resize_over_its_input_bit_exact_at_the_shift(tmp_path: Path) -> None:
    from fast_path_models import resize_over_input

    path = tmp_path / "resize_over_input.tflite"
    path.write_bytes(resize_over_input())
    planned = plan(parse_model(path.read_bytes()), PlanOptions(alignment=1, time_limit=2.0))
    at = planned.arena.offsets
    model = refine(planned.graph)
    resizes = [model.pairs[op.index] for op in planned.graph.operators if op.opcode.startswith("RESIZE")]
    assert [at[p.output] - at[p.root] for p in resizes] == [-996, -42]  # exactly at D: overlapping
    result = host_verify(path, n_inputs=3, seed=4, opt="-O1", sanitize=True, alignment=1)
    assert result.mismatches == [] and result.outputs_match
