"""Arena placement: random interval sets against a brute-force optimum, the checker against broken
plans, the shared models (arena == aligned bound, under 1 s), and the `--tflm` drop-in run in the
tflite-micro interpreter (bit-identical outputs, TFLM's head == our arena)."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import shared_manifest, shared_model, shared_model_params
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinysched.arena.check import check_plan
from tinysched.arena.placement import (
    GREEDY_PLACERS,
    PLACERS,
    STOCK_TFLM_PLACER,
    ArenaPlan,
    Block,
    aligned_lower_bound,
    arena_buffers,
    extent,
    greedy_plan,
    placer,
    plan_arena,
    plan_model,
)
from tinysched.arena.tflm import (
    OFFLINE_PLAN_METADATA,
    SCRATCH_KERNELS,
    parse_offline_plan,
    run_tflm,
    tflm_model,
)
from tinysched.cli import main
from tinysched.device.reference import random_inputs
from tinysched.errors import TinyschedError
from tinysched.model.graph import Graph, make_graph
from tinysched.model.modelgen import tiny_demo_model
from tinysched.model.reader import parse_model, read_model
from tinysched.order import scheduler

MLPERF_TINY = (
    "mlperf_vww_mbv1_025_96_int8",
    "mlperf_ic_resnet8_int8",
    "mlperf_kws_dscnn_int8",
    "mlperf_ad01_fc_ae_int8",
    "mlperf_sww_dscnn_int8",
)


def interval_graph(intervals: list[tuple[int, int, int]]) -> Graph:
    """A graph whose only order is the stored one and whose tensor i lives exactly over steps
    first_i..last_i with size_i bytes: op s produces the tensors born at s and reads those dying at
    s; zero-byte tensors chain op s to op s+1 so no other order exists."""
    n_steps = max((last for _, _, last in intervals), default=0) + 1
    sizes = [size for size, _, _ in intervals] + [0] * (n_steps - 1)
    chain = {s: len(intervals) + s for s in range(n_steps - 1)}  # op s -> op s+1
    ops = []
    for s in range(n_steps):
        reads = [i for i, (_, first, last) in enumerate(intervals) if last == s and first < s]
        writes = [i for i, (_, first, _) in enumerate(intervals) if first == s]
        if s > 0:
            reads.append(chain[s - 1])
        if s < n_steps - 1:
            writes.append(chain[s])
        ops.append((reads, writes))
    return make_graph(sizes, ops)


def brute_force_minimum(blocks: tuple[Block, ...]) -> int:
    """The optimal arena in units: lowest-fit over every insertion order. Complete, because placing
    the blocks of an optimal packing bottom-up, each at its lowest free offset, never goes higher."""
    from tinysched.arena.placement import _first_fit, _place_in_order

    return min(
        extent(blocks, _place_in_order(blocks, perm, _first_fit))
        for perm in itertools.permutations(range(len(blocks)))
    )


intervals_strategy = st.lists(
    st.tuples(st.integers(0, 40), st.integers(0, 5), st.integers(0, 3)).map(
        lambda t: (t[0], t[1], t[1] + t[2])
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(intervals=intervals_strategy, alignment=st.sampled_from([1, 4, 16]))
def test_random_interval_sets_place_optimally_and_pass_the_checker(intervals, alignment) -> None:
    graph = interval_graph(intervals)
    plan = plan_arena(graph, alignment=alignment, time_limit=5.0)
    check_plan(graph, plan)
    buffers = arena_buffers(graph, plan.order, alignment)
    assert {(b.bytes, b.first_step, b.last_step) for b in buffers if b.index < len(intervals)} == set(
        intervals
    )
    assert plan.arena_bytes >= plan.lower_bound_bytes == aligned_lower_bound(buffers)
    blocks = tuple(
        Block(b.aligned_bytes // alignment, b.first_step, b.last_step, b.index) for b in buffers if b.bytes
    )
    best = brute_force_minimum(blocks) * alignment
    assert plan.arena_bytes >= best
    if best == plan.lower_bound_bytes:
        assert plan.arena_bytes == plan.lower_bound_bytes and plan.optimal
    if plan.optimal:
        assert plan.arena_bytes == best
    for name in GREEDY_PLACERS:
        check_plan(graph, greedy_plan(graph, plan.order, name, alignment))


def test_greedy_misses_where_the_exact_search_reaches_the_bound() -> None:
    # Steps 1 and 4 each pin a 16-byte tensor to an end of the 64-byte bound; both live at step 2,
    # so they take opposite ends, and the 48-byte tensors must sit next to "their" small one.
    # Largest-first puts both big tensors at 0 and then needs 80 bytes.
    graph = interval_graph([(48, 4, 4), (48, 1, 1), (16, 2, 4), (16, 0, 2)])
    greedy = {name: greedy_plan(graph, graph.stored_order(), name).arena_bytes for name in GREEDY_PLACERS}
    assert min(greedy.values()) == 80 and greedy[STOCK_TFLM_PLACER] == 80
    plan = plan_arena(graph)
    check_plan(graph, plan)
    assert (plan.arena_bytes, plan.lower_bound_bytes, plan.optimal, plan.method) == (64, 64, True, "cp-sat")
    assert plan.greedy_bytes == 80
    assert plan_arena(graph, methods=GREEDY_PLACERS).arena_bytes == 80
    out_of_time = plan_arena(graph, time_limit=0.0)
    check_plan(graph, out_of_time)
    assert (out_of_time.arena_bytes, out_of_time.optimal) == (80, False)


def test_other_optimal_orders_are_tried_when_the_placement_misses_the_bound() -> None:
    # With only TFLM's greedy placer, the scheduler's order packs into 240 B, above its 208 B peak;
    # another order with the same certified peak packs into 208 B.
    sizes = [48, 16, 16, 64, 16, 80, 64, 16, 80]
    ops = [([0], [1]), ([1], [2]), ([1], [3, 4]), ([0], [5]), ([1], [6]), ([2, 5], [7, 8])]
    graph = make_graph(sizes, ops, inputs=[0], outputs=[3])
    sched = scheduler.schedule(graph, time_limit=2.0)
    assert sched.certified
    first_try = plan_arena(graph, sched.order, methods=[STOCK_TFLM_PLACER])
    assert first_try.arena_bytes > first_try.lower_bound_bytes
    placed_sched, plan = plan_model(graph, methods=[STOCK_TFLM_PLACER])
    check_plan(graph, plan)
    assert plan.arena_bytes == plan.lower_bound_bytes == sched.peak_bytes
    assert placed_sched.order == plan.order != sched.order
    assert placed_sched.peak_bytes == sched.peak_bytes and placed_sched.certified


def test_unknown_placer_lists_the_valid_ones() -> None:
    with pytest.raises(
        TinyschedError, match="unknown placement method 'magic'; valid: tflm-greedy-by-size, "
    ):
        placer("magic")
    assert "cp-sat" in PLACERS and PLACERS["cp-sat"].exact
    with pytest.raises(TinyschedError, match="alignment must be a positive"):
        plan_arena(interval_graph([(8, 0, 1)]), alignment=0)


# ---- the checker -------------------------------------------------------------------------------


def _sample_plan() -> tuple[Graph, ArenaPlan]:
    graph = interval_graph([(40, 0, 1), (20, 1, 2), (16, 0, 0), (8, 2, 2)])
    plan = plan_arena(graph)
    check_plan(graph, plan)
    return graph, plan


def _with(plan: ArenaPlan, tensor: int, **changes) -> ArenaPlan:
    return replace(
        plan, buffers=tuple(replace(p, **changes) if p.index == tensor else p for p in plan.buffers)
    )


def test_checker_reports_each_kind_of_violation() -> None:
    graph, plan = _sample_plan()
    t0, t1 = plan.placement(0), plan.placement(1)
    cases = {
        "overlap in memory while both live at step 1": _with(plan, 1, offset=t0.offset),
        "not a non-negative multiple of the alignment 16": _with(plan, 1, offset=t1.offset + 8),
        "past the": replace(plan, arena_bytes=plan.arena_bytes - 16),
        "unplaced": replace(plan, buffers=plan.buffers[1:]),
        "twice": replace(plan, buffers=plan.buffers + plan.buffers[:1]),
        "memory model says 0..1": _with(plan, 0, last_step=0),
        "the graph says 40": _with(plan, 0, bytes=30),
        "claims a lower bound": replace(plan, lower_bound_bytes=plan.lower_bound_bytes - 16),
    }
    for message, broken in cases.items():
        with pytest.raises(TinyschedError, match=message):
            check_plan(graph, broken)


# ---- shared models -----------------------------------------------------------------------------


@pytest.mark.parametrize("path", shared_model_params())
def test_shared_model_arena_equals_the_aligned_bound(path: Path) -> None:
    graph = read_model(path)
    sched, plan = plan_model(graph, schedule_time_limit=2.0)
    check_plan(graph, plan)
    assert plan.arena_bytes == plan.lower_bound_bytes and plan.optimal
    assert plan.peak_bytes == sched.peak_bytes <= plan.arena_bytes < sched.peak_bytes + 16 * len(plan.buffers)
    assert plan.seconds < 1.0
    stock_head = shared_manifest().get(path.stem, {}).get("tflm_arena_head_bytes")
    if stock_head:
        assert plan.arena_bytes <= int(stock_head)
        if not SCRATCH_KERNELS & set(graph.op_types):
            # our TFLM-like greedy on the stored order is exactly what stock TFLM reports
            assert greedy_plan(graph, graph.stored_order()).arena_bytes == int(stock_head)


# ---- the TFLM drop-in --------------------------------------------------------------------------


def _assert_drop_in(model_bytes: bytes, tmp_path: Path, name: str) -> dict:
    """`plan --tflm` on the model; TFLM runs both, outputs bit-identical, head == arena_bytes."""
    pytest.importorskip("tflite_micro")
    source = tmp_path / f"{name}.tflite"
    source.write_bytes(model_bytes)
    out = tmp_path / f"{name}.planned.tflite"
    assert main(["plan", str(source), "--tflm", "-o", str(out), "--time-limit", "2"]) == 0
    # the plan --tflm writes is the tensor model's (stock TFLM's kernels need whole tensors)
    json_plan = ["plan", str(source), "--json", "-o", str(tmp_path / "plan.json"), "--time-limit", "2"]
    assert main([*json_plan, "--memory-model", "tensor"]) == 0
    report = json.loads((tmp_path / "plan.json").read_text())
    written = out.read_bytes()
    graph = parse_model(written)
    version, subgraph, offsets = parse_offline_plan(graph.metadata[OFFLINE_PLAN_METADATA])
    assert (version, subgraph, len(offsets)) == (1, 0, len(graph.tensors))
    placed = {t["index"]: t["offset"] for t in report["tensors"]}
    assert {i: o for i, o in enumerate(offsets) if o >= 0} == placed
    assert all(graph.tensors[i].is_activation for i in placed)
    inputs = random_inputs(model_bytes, seed=7, count=1)[0]
    stock = run_tflm(model_bytes, inputs)
    ours = run_tflm(written, inputs)
    for a, b in zip(stock.outputs, ours.outputs, strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert ours.head_bytes == report["arena_bytes"] == report["arena_lower_bound_bytes"]
    assert ours.head_bytes <= stock.head_bytes
    return {"stock_head": stock.head_bytes, "head": ours.head_bytes}


@pytest.mark.parametrize("name", MLPERF_TINY)
def test_tflm_drop_in_on_mlperf_tiny(name: str, tmp_path: Path) -> None:
    heads = _assert_drop_in(shared_model(name).read_bytes(), tmp_path, name)
    manifest_head = shared_manifest().get(name, {}).get("tflm_arena_head_bytes")
    if manifest_head:
        assert heads["stock_head"] == int(manifest_head)
    if name == "mlperf_vww_mbv1_025_96_int8":
        assert (heads["stock_head"], heads["head"]) == (73728, 55296)  # the numbers


def test_tflm_drop_in_on_a_reordered_model(tmp_path: Path) -> None:
    """The demo model's stored order is not the best one: TFLM must run the reordered operators."""
    model = tiny_demo_model()
    graph = parse_model(model)
    sched, plan = plan_model(graph, schedule_time_limit=2.0)
    assert plan.order != tuple(graph.stored_order())
    heads = _assert_drop_in(model, tmp_path, "demo")
    assert heads["head"] == plan.arena_bytes < heads["stock_head"]


def test_tflm_needs_a_multiple_of_16_and_an_output(tmp_path: Path, capsys) -> None:
    source = tmp_path / "demo.tflite"
    source.write_bytes(tiny_demo_model())
    assert main(["plan", str(source), "--tflm"]) == 2
    assert "--tflm writes a model" in capsys.readouterr().err
    assert main(["plan", str(source), "--tflm", "--alignment", "8", "-o", str(tmp_path / "x.tflite")]) == 2
    assert "multiple of 16" in capsys.readouterr().err
    assert not (tmp_path / "x.tflite").exists()
    with pytest.raises(TinyschedError, match="offline plan .* does not match"):
        parse_offline_plan(np.asarray([1, 0, 5, 0], "<i4").tobytes())
    graph = parse_model(tiny_demo_model())
    plan = plan_arena(graph, alignment=32)
    assert (
        parse_offline_plan(parse_model(tflm_model(tiny_demo_model(), plan)).metadata[OFFLINE_PLAN_METADATA])[
            2
        ][plan.buffers[0].index]
        == plan.buffers[0].offset
    )


def test_plan_cli_human_and_json(tmp_path: Path, capsys) -> None:
    source = tmp_path / "demo.tflite"
    source.write_bytes(tiny_demo_model())
    assert main(["plan", str(source), "--time-limit", "2", "--memory-model", "tensor"]) == 0
    assert "tensor-model peak" in capsys.readouterr().out
    assert main(["plan", str(source), "--time-limit", "2"]) == 0  # the default: the refined model
    text = capsys.readouterr().out
    for words in (
        "memory model refined",
        "refined-model peak",
        "tensor-model optimum",
        "aligned lower bound",
        "tinysched arena",
        "proven optimal",
        "stock-TFLM-like",
        "saved",
    ):
        assert words in text
    assert main(["plan", str(source), "--json", "--alignment", "4"]) == 0
    report = json.loads(capsys.readouterr().out)
    graph = parse_model(tiny_demo_model())
    assert report["alignment"] == 4 and report["certified"] is True
    assert report["peak_bytes"] == report["lower_bound_bytes"] <= report["arena_bytes"]
    # the model's activations, plus one scratch tensor per operator that runs an in-place variant
    # or a streamed chain (its windows) or the widened CONV_2D kernel, less the chains' tensors
    scratch = [t["index"] for t in report["tensors"] if t["name"].endswith("/scratch")]
    assert len(scratch) == len(report["kernel_variants"]) + len(report["streams"]) + len(
        report["wide_kernels"]
    )
    # and a strip for a chain's CONV_2D members where its step leaves bytes free (arena.scratch)
    strips = [t["index"] for t in report["tensors"] if t["name"].endswith("/strip")]
    assert len(strips) <= len(report["streams"])
    streamed = {t for chain in report["streams"] for t in chain["tensors"]}
    assert sorted(
        t["index"] for t in report["tensors"] if t["index"] not in scratch and t["index"] not in strips
    ) == sorted(set(graph.activation_tensors) - streamed)
    assert set(report["tensors"][0]) == {"index", "name", "offset", "bytes", "first_step", "last_step"}
    assert all(t["offset"] % 4 == 0 for t in report["tensors"])
    assert main(["plan", str(source), "--alignment", "0"]) == 2
