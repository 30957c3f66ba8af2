"""Aliases in the refined memory model (tinysched.memory.overlap): CONCATENATION built in place and SPLIT /
UNPACK / STRIDED_SLICE outputs as views at a byte offset. The layouts the model derives, the peaks
with and without, check_plan refusing a slice one byte off, certificates against every order, and
generated models bit-exact under ASan/UBSan (and one on QEMU)."""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
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
from tinysched.device.verify import verify
from tinysched.errors import TinyschedError
from tinysched.memory.overlap import contiguous_range, refine
from tinysched.memory.tensor import profile
from tinysched.model.graph import Graph
from tinysched.model.modelgen import ModelBuilder
from tinysched.model.modelgen import build_concat_slices as _concat3
from tinysched.model.modelgen import build_split_views as _split_views
from tinysched.model.reader import parse_model
from tinysched.order.scheduler import schedule
from tinysched.pipeline import PlanOptions, generate, plan


def _c_source(planned) -> str:
    return planned_c_text(planned)


def _concat_channels(b: ModelBuilder) -> None:
    x = b.input("x", (1, 8, 8, 8))
    p = b.max_pool2d(x, (3, 3), (1, 1), "SAME", name="p")
    q = b.average_pool2d(x, (3, 3), (1, 1), "SAME", name="q")
    b.output(b.conv2d(b.concatenation([p, q], axis=3, requantize=False), 8, (1, 1), name="head"))


def _concat_requantised(b: ModelBuilder) -> None:
    """Inputs quantised unlike each other (graph only: the kernel would requantise one)."""
    x = b.input("x", (1, 8, 8, 8))
    a = b.conv2d(x, 8, (3, 3), activation="RELU", name="a")
    c = b.conv2d(x, 8, (1, 1), name="c")
    assert a.quant != c.quant
    options = schema.ConcatenationOptionsT(axis=1)
    (cat,) = b.op("CONCATENATION", [a, c], [(1, 16, 8, 8)], options, 2, output_quant=a.quant)
    b.output(cat)


# ---- layouts ------------------------------------------------------------------------------------


def test_contiguous_range_from_shapes() -> None:
    assert contiguous_range((1, 8, 8, 8), (0, 2, 0, 0), (1, 4, 8, 8)) == 2 * 64
    assert contiguous_range((1, 8, 8, 8), (0, 2, 3, 0), (1, 1, 4, 8)) == 2 * 64 + 3 * 8
    assert contiguous_range((1, 8, 8, 8), (0, 2, 0, 0), (1, 4, 4, 8)) is None  # rows cut short
    assert contiguous_range((2, 8, 8, 8), (0, 2, 0, 0), (2, 4, 8, 8)) is None  # two batches
    assert contiguous_range((4, 3), (1, 0), (2, 3)) == 3


def test_concat_slices_are_ranges_of_the_output_and_its_buffer_born_with_the_first_producer() -> None:
    g = built_graph(_concat3)
    model = refine(g)
    cat = first_op(g, "CONCATENATION")
    p, q, r = cat.inputs
    y = cat.outputs[0]
    assert {t: (a.root, a.offset, a.kind) for t, a in model.aliases.items()} == {
        p: (y, 0, "concat"),
        q: (y, 512, "concat"),
        r: (y, 1024, "concat"),
    }
    assert cat.index in model.free_ops
    assert len(model.storage.operators) == len(g.operators) + 1  # the buffer's no-code writer
    producers = [g.producer[t] for t in (p, q, r)]
    for order in (g.stored_order(), schedule(g, time_limit=1.0, model=model).order):
        lives = {life.tensor: life for life in model.lifetimes(order)}
        steps = [order.index(v) for v in producers]
        assert lives[y].first_step == min(steps) and lives[y].nbytes == 1280
        assert all(lives[t].nbytes == 0 for t in (p, q, r))


def test_refused_concatenations_keep_their_copy() -> None:
    # along channels (64 pixels before the axis), and inputs quantised unlike each other
    for build in (_concat_channels, _concat_requantised):
        g = built_graph(build)
        assert not any(a.kind == "concat" for a in refine(g).aliases.values())

    def graph_input(b: ModelBuilder) -> None:  # a graph input, and one tensor twice
        x = b.input("x", (1, 4, 8, 8))
        p = b.max_pool2d(x, (3, 3), (1, 1), "SAME", name="p")
        b.output(b.concatenation([x, p], axis=1), b.concatenation([p, p], axis=1, name="twice"))

    def fused(b: ModelBuilder) -> None:
        x = b.input("x", (1, 4, 8, 8))
        p = b.max_pool2d(x, (3, 3), (1, 1), "SAME", name="p")
        q = b.average_pool2d(x, (3, 3), (1, 1), "SAME", name="q")
        b.output(b.concatenation([p, q], axis=1, activation="RELU"))

    for build in (graph_input, fused):
        assert refine(built_graph(build)).aliases == {}

    def nested(b: ModelBuilder) -> None:  # an in-place output as an input, a split view as an input
        x = b.input("x", (1, 4, 8, 8))
        p = b.max_pool2d(x, (3, 3), (1, 1), "SAME", name="p")
        q = b.average_pool2d(x, (3, 3), (1, 1), "SAME", name="q")
        inner = b.concatenation([p, q], axis=1, name="inner")
        r = b.max_pool2d(x, (2, 1), (2, 1), name="r")
        top, _ = b.split(b.max_pool2d(x, (1, 1), (1, 1), name="s"), 2, axis=1)
        b.output(b.concatenation([inner, r], axis=1, name="outer"), b.concatenation([top, r], axis=1))

    g = built_graph(nested)
    model = refine(g)
    inner, outer, third = (op for op in g.operators if op.opcode == "CONCATENATION")
    assert {t for t, a in model.aliases.items() if a.kind == "concat"} == set(inner.inputs)
    assert inner.index in model.free_ops
    assert outer.index not in model.free_ops and third.index not in model.free_ops


def _reshaped_heads(b: ModelBuilder) -> None:
    """SSD-like: two heads RESHAPEd to (1, cells, 8) and concatenated along the cells. Each
    RESHAPE is a view, so its input (the pool's output) is written straight into its slice."""
    x = b.input("x", (1, 8, 8, 8))
    a = b.reshape(b.average_pool2d(x, (3, 3), (1, 1), "SAME", name="a"), (1, 64, 8), name="a_cells")
    c = b.reshape(b.max_pool2d(x, (2, 2), (2, 2), name="c"), (1, 16, 8), name="c_cells")
    b.output(b.logistic(b.concatenation([a, c], axis=1, name="cells"), name="scores"))


def test_a_view_input_moves_its_root_into_the_slice() -> None:
    g = built_graph(_reshaped_heads)
    model = refine(g)
    cat = first_op(g, "CONCATENATION")
    pools = [g.operators[g.producer[t]].inputs[0] for t in cat.inputs]  # the RESHAPEs' inputs
    y = cat.outputs[0]
    for t, offset in zip((*cat.inputs, *pools), (0, 512, 0, 512), strict=True):
        assert (model.aliases[t].root, model.aliases[t].offset) == (y, offset)
    assert schedule(g, time_limit=1.0, model=model).peak_bytes == 512 + 640  # x and the output


def test_split_unpack_and_strided_slice_outputs_are_views_at_their_offsets() -> None:
    g = built_graph(_split_views)
    model = refine(g)
    split = first_op(g, "SPLIT")
    assert [(model.aliases[t].root, model.aliases[t].offset) for t in split.outputs] == [
        (split.inputs[1], 0),
        (split.inputs[1], 256),
    ]
    unpack = first_op(g, "UNPACK")
    reshape_in = first_op(g, "RESHAPE").inputs[
        0
    ]  # the unpacked rows are views of the conv behind the reshape
    assert [model.aliases[t].offset for t in unpack.outputs] == [0, 64, 128, 192]
    assert {model.aliases[t].root for t in unpack.outputs} == {reshape_in}
    sl = first_op(g, "STRIDED_SLICE")
    assert (model.aliases[sl.outputs[0]].root, model.aliases[sl.outputs[0]].offset) == (sl.inputs[0], 128)
    assert {split.index, unpack.index, sl.index} <= model.free_ops


def test_split_v_and_slice_views_and_their_refusals() -> None:
    def build(b: ModelBuilder) -> None:
        x = b.input("x", (1, 6, 4, 8))
        t = b.max_pool2d(x, (1, 1), (1, 1), name="t")
        sizes = b.constant(np.array([1, 3, 2], dtype=np.int32), name="sizes")
        axis = b.constant(np.array([1], dtype=np.int32), name="axis")
        b.output(*b.op("SPLIT_V", [t, sizes, axis], [(1, 1, 4, 8), (1, 3, 4, 8), (1, 2, 4, 8)], name="sv"))
        begin = b.constant(np.array([0, 2, 1, 0], dtype=np.int32), name="begin")
        size = b.constant(np.array([1, 1, 2, -1], dtype=np.int32), name="size")
        b.output(*b.op("SLICE", [t, begin, size], [(1, 1, 2, 8)], name="row_part"))
        cut = b.constant(np.array([0, 0, 0, 2], dtype=np.int32), name="cut")
        b.output(*b.op("SLICE", [t, cut, size], [(1, 1, 2, 6)], name="channels"))  # strided: copy
        axis3 = b.constant(np.array([3], dtype=np.int32), name="axis3")
        b.output(*b.op("SPLIT", [axis3, t], [(1, 6, 4, 4)] * 2, name="by_channel"))  # strided: copy

    g = built_graph(build)
    model = refine(g)
    split_v, row_part, channels, by_channel = g.operators[1:]
    assert [model.aliases[t].offset for t in split_v.outputs] == [0, 32, 128]
    assert model.aliases[row_part.outputs[0]].offset == 2 * 32 + 8
    assert not set(channels.outputs) & set(model.aliases) and not set(by_channel.outputs) & set(model.aliases)


def test_a_pair_on_a_view_input_is_stated_in_its_root_offsets() -> None:
    # the sliced rows 2..5 of a tensor nobody else reads: its logistic may overwrite the root
    # from the root's start, 128 bytes below the view it reads (shift = D + offset = 0 + 128)
    def build(b: ModelBuilder) -> None:
        x = b.input("x", (1, 8, 8, 8))
        t = b.conv2d(x, 8, (3, 3), name="c0")
        b.output(b.logistic(b.strided_slice(t, (0, 2, 0, 0), (1, 6, 8, 8), name="mid"), name="sig"))

    g = built_graph(build)
    model = refine(g)
    sig = first_op(g, "LOGISTIC")
    pair = model.pairs[sig.index]
    assert (pair.root, pair.shift, pair.input_bytes) == (first_op(g, "CONV_2D").outputs[0], 128, 512)


# ---- planner numbers, certificates -------------------------------------------------------------


def _topological_orders(graph: Graph):
    n = len(graph.operators)
    preds = graph.predecessors
    for perm in itertools.permutations(range(n)):
        seen: set[int] = set()
        ok = True
        for v in perm:
            if not preds[v] <= seen:
                ok = False
                break
            seen.add(v)
        if ok:
            yield list(perm)


def test_concat_in_place_lowers_the_peak_and_the_certificate_holds_over_every_order() -> None:
    g = built_graph(_concat3)
    model = refine(g)
    tensor = schedule(g, time_limit=2.0)
    refined = schedule(g, time_limit=2.0, model=model)
    assert refined.certified and sorted(refined.order) == list(range(len(g.operators)))
    assert refined.certificate.witness["in_place_buffer_ops"] == [len(g.operators)]  # bound's own ops
    # tensor model: p, q, r (512 + 512 + 256 B) and the 1,280 B output at the copy; in place: the
    # head's step, 1,280 + 320 B beside side's 256 B (x and the output while the pools run: 1,792 B)
    assert (tensor.peak_bytes, refined.peak_bytes) == (2560, 1856)
    best = min(profile(g, order, model).peak_bytes for order in _topological_orders(g))
    assert best == refined.peak_bytes == refined.lower_bound_bytes
    assert profile(g, refined.order, model).peak_bytes == refined.peak_bytes
    stored = profile(g, g.stored_order(), model).peak_bytes
    assert refined.stored_order_peak_bytes == stored
    planned = plan(g, PlanOptions(memory_model="refined", time_limit=2.0))
    assert (
        planned.arena.arena_bytes
        < plan(g, PlanOptions(time_limit=2.0, memory_model="tensor")).arena.arena_bytes
    )
    assert planned.model_order(planned.run_order) == list(planned.run_order)  # no synthetic operator


def test_split_views_lower_the_peak() -> None:
    def build(b: ModelBuilder) -> None:
        x = b.input("x", (1, 8, 8, 2))
        top, bottom = b.split(b.conv2d(x, 8, (3, 3), name="c0"), 2, axis=1)
        b.output(b.conv2d(top, 2, (1, 1), name="top"), b.conv2d(bottom, 2, (1, 1), name="bottom"))

    g = built_graph(build)
    model = refine(g)
    # tensor model: the 512 B tensor and its two 256 B halves at the split; views: at most the
    # 512 B tensor with the input (128 B) or with both 64 B outputs
    assert schedule(g, time_limit=1.0).peak_bytes == 1024
    refined = schedule(g, time_limit=1.0, model=model)
    assert refined.certified and refined.peak_bytes == 640


def test_check_plan_refuses_a_slice_one_byte_off() -> None:
    g = built_graph(_concat3)
    model = refine(g)
    cat = first_op(g, "CONCATENATION")
    arena = plan_arena(g, schedule(g, time_limit=1.0, model=model).order, alignment=16, model=model)
    check_plan(g, arena)
    at = arena.offsets
    q = cat.inputs[1]
    assert at[q] == at[cat.outputs[0]] + 512
    off = tuple(replace(p, offset=p.offset + 1) if p.index == q else p for p in arena.buffers)
    with pytest.raises(TinyschedError, match=r"is a concat alias of tensor .* not its root's .* \+ 512"):
        check_plan(g, replace(arena, buffers=off))
    # the same plan claimed in the tensor model: the slices would overlap their concatenation
    with pytest.raises(TinyschedError, match="the memory model says|overlap in memory"):
        check_plan(g, replace(arena, memory_model="tensor"))


# ---- realised: bit-exact, no copy ------------------------------------------------------------------


@needs_gcc
@pytest.mark.host
@pytest.mark.parametrize("producers", [(0, 1, 2), (2, 1, 0), (1, 2, 0)])
def test_concat_in_place_bit_exact_in_any_producer_order(producers: tuple[int, ...], tmp_path: Path) -> None:
    # the run order itself puts the three producers in the given order (the side convolution,
    # which also reads the first input, right after its producer), the file stores them shuffled
    path = saved_model(tmp_path / "concat.tflite", _concat3, order_seed=sum(producers))
    planned = plan(parse_model(path.read_bytes()), PlanOptions(memory_model="refined", time_limit=2.0))
    g = planned.graph
    cat = first_op(g, "CONCATENATION")
    writers = [g.producer[cat.inputs[k]] for k in producers]
    side = next(op.index for op in g.operators if op.opcode == "CONV_2D" and cat.inputs[0] in op.inputs)
    order = [v for w in writers for v in ((w, side) if w == g.producer[cat.inputs[0]] else (w,))]
    order += [v for v in g.stored_order() if v not in order]
    g.check_order(order)
    model = refine(g)
    arena = plan_arena(g, order, planned.options.alignment, model=model)
    check_plan(g, arena)
    assert arena.peak_bytes < plan_arena(g, order, planned.options.alignment).peak_bytes
    forced = replace(planned, arena=arena)
    module = generate(forced)
    source = next(text for name, text in module.files.items() if name.endswith(".c"))
    assert "ts_concatenation(" not in source and "in place: each input's producer wrote its slice" in source
    result = verify(path, forced, module, n_inputs=3, seed=3, opt="-O1", sanitize=True)
    assert result.mismatches == [] and result.outputs_match


@needs_gcc
@pytest.mark.host
def test_split_views_bit_exact_and_no_copy(tmp_path: Path) -> None:
    path = saved_model(tmp_path / "split.tflite", _split_views)
    planned = plan(parse_model(path.read_bytes()), PlanOptions(memory_model="refined", time_limit=2.0))
    source = _c_source(planned)
    assert "ts_split(" not in source and "ts_transpose(" not in source
    assert source.count("views: each output is its range of the input") == 2  # SPLIT, UNPACK
    assert "view: the output is bytes 128.. of the input" in source  # STRIDED_SLICE
    result = host_verify(path, n_inputs=3, seed=4, opt="-O1", sanitize=True, memory_model="refined")
    assert result.mismatches == [] and result.outputs_match


@needs_gcc
@pytest.mark.host
def test_reshaped_heads_in_place_bit_exact(tmp_path: Path) -> None:
    path = saved_model(tmp_path / "heads.tflite", _reshaped_heads)
    planned = plan(parse_model(path.read_bytes()), PlanOptions(memory_model="refined", time_limit=2.0))
    source = _c_source(planned)
    assert "ts_concatenation(" not in source and "ts_copy(" not in source
    result = host_verify(path, n_inputs=3, seed=6, opt="-O1", sanitize=True, memory_model="refined")
    assert result.mismatches == [] and result.outputs_match


def _chained_slices(b: ModelBuilder) -> None:
    """One slice's producer reads another slice of the same output (written first, placed after)."""
    x = b.input("x", (1, 4, 8, 8))
    first = b.max_pool2d(x, (3, 3), (1, 1), "SAME", name="first")
    second = b.average_pool2d(first, (3, 3), (1, 1), "SAME", name="second")
    b.output(b.concatenation([second, first], axis=1, name="cat"))


@needs_gcc
@pytest.mark.host
def test_a_producer_reading_another_slice_bit_exact(tmp_path: Path) -> None:
    path = saved_model(tmp_path / "chained.tflite", _chained_slices)
    g = parse_model(path.read_bytes())
    model = refine(g)
    cat = first_op(g, "CONCATENATION")
    assert [model.aliases[t].offset for t in cat.inputs] == [0, 256]
    planned = plan(g, PlanOptions(memory_model="refined", time_limit=2.0))
    assert planned.arena.arena_bytes == 256 + 512  # x and the output: the slices cost nothing
    assert "ts_concatenation(" not in _c_source(planned)
    result = host_verify(path, n_inputs=3, seed=7, opt="-O1", sanitize=True, memory_model="refined")
    assert result.mismatches == [] and result.outputs_match


@needs_gcc
@pytest.mark.host
def test_refused_concatenation_still_copies_and_matches(tmp_path: Path) -> None:
    path = saved_model(tmp_path / "channels.tflite", _concat_channels)
    planned = plan(parse_model(path.read_bytes()), PlanOptions(memory_model="refined", time_limit=2.0))
    assert "ts_concatenation(" in _c_source(planned)
    result = host_verify(path, n_inputs=3, seed=5, opt="-O1", sanitize=True, memory_model="refined")
    assert result.mismatches == [] and result.outputs_match


@pytest.mark.qemu
@pytest.mark.parametrize("build", [_concat3, _split_views], ids=["concat", "split"])
def test_aliases_measured_equal_on_qemu(build, tmp_path: Path) -> None:
    require("qemu")
    path = saved_model(tmp_path / "aliases.tflite", build)
    gen = generate_for_measure(path, tmp_path / "gen", 2, memory_model="refined")
    tensor = generate_for_measure(path, tmp_path / "gen_tensor", 1, memory_model="tensor")
    assert gen.arena_bytes_planned < tensor.arena_bytes_planned
    measured_equal_on_qemu(gen, tmp_path / "qemu")
