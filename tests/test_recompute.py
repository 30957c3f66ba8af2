"""Recomputation: instance lifetimes of sequences with repeated operators, and the capped planner
checked against brute force, hand-worked graphs and generated late-reuse models."""

from __future__ import annotations

import importlib.util
import math
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from random_dags import small_dags

from tinysched.errors import TinyschedError
from tinysched.memory.tensor import profile, sequence_profile
from tinysched.model.graph import Graph, make_graph
from tinysched.model.modelgen import ModelBuilder
from tinysched.model.reader import parse_model
from tinysched.order.recompute import (
    _Evaluator,
    cannot_gain,
    macs,
    plan_recompute,
    sequence_lower_bound,
    total_macs,
)

REPO = Path(__file__).resolve().parents[1]
SHARED_MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_recompute", REPO / "bench" / "bench_recompute.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# x (10 B) -> A (100 B) -> B (20) -> C (200) -> D (200) -> E (10); F reads A and E: A waits under the peak.
LATE_REUSE = make_graph(
    [10, 100, 20, 200, 200, 10, 10],
    [([0], [1]), ([1], [2]), ([2], [3]), ([3], [4]), ([4], [5]), ([1, 5], [6])],
    inputs=[0],
    outputs=[6],
)


# ---- memory model for sequences ------------------------------------------------------------------


def test_instances_follow_the_documented_rules() -> None:
    prof = sequence_profile(LATE_REUSE, [0, 1, 2, 3, 0, 4, 5])
    spans = {(life.tensor, life.instance): (life.first_step, life.last_step) for life in prof.instances}
    # x is read by both runs of op 0; A's first instance dies at its read by op 1, the second
    # instance is born at step 4 and read by op 5 at step 6.
    assert spans == {
        (0, 0): (0, 4),
        (1, 0): (0, 1),
        (1, 1): (4, 6),
        (2, 0): (1, 2),
        (3, 0): (2, 3),
        (4, 0): (3, 5),
        (5, 0): (5, 6),
        (6, 0): (6, 6),
    }
    assert [s.live_bytes for s in prof.steps] == [110, 130, 230, 410, 310, 310, 120]
    assert prof.peak_bytes == 410 and prof.peak_step == 3
    assert prof.steps[6].reads == ((1, 1), (5, 0))
    assert prof.steps[4].execution == 1 and prof.repeated == (0,)
    # the order without repeats keeps A under the peak
    assert profile(LATE_REUSE).peak_bytes == 500


def test_graph_output_final_instance_lives_to_the_end() -> None:
    # op0: x -> y (graph output, also read by op1); op1: y -> z (big, unread); running op0 again
    # last lets the first y die at its read.
    graph = make_graph([1, 50, 100], [([0], [1]), ([1], [2])], inputs=[0], outputs=[1])
    prof = sequence_profile(graph, [0, 1, 0])
    spans = {(life.tensor, life.instance): (life.first_step, life.last_step) for life in prof.instances}
    assert spans == {(0, 0): (0, 2), (1, 0): (0, 1), (1, 1): (2, 2), (2, 0): (1, 1)}
    assert [s.live_bytes for s in prof.steps] == [51, 151, 51]


def test_invalid_sequences_are_rejected() -> None:
    with pytest.raises(TinyschedError, match="operator 1 .* has not run yet"):
        sequence_profile(LATE_REUSE, [1, 0, 2, 3, 4, 5])
    with pytest.raises(TinyschedError, match="misses operators \\[5\\]"):
        sequence_profile(LATE_REUSE, [0, 1, 2, 3, 4])
    with pytest.raises(TinyschedError, match="names operator 9"):
        sequence_profile(LATE_REUSE, [0, 9])


@settings(max_examples=150, deadline=None)
@given(small_dags())
def test_single_execution_is_profile(graph: Graph) -> None:
    order = profile(graph).order
    single, seq = profile(graph, order), sequence_profile(graph, order)
    assert [s.live_bytes for s in seq.steps] == [s.live_bytes for s in single.steps]
    assert (seq.peak_bytes, seq.peak_step) == (single.peak_bytes, single.peak_step)
    assert [(i.tensor, i.instance, i.first_step, i.last_step) for i in seq.instances] == [
        (life.tensor, 0, life.first_step, life.last_step) for life in single.lifetimes
    ]


@st.composite
def graphs_with_sequences(draw: st.DrawFn) -> tuple[Graph, list[int]]:
    graph = draw(small_dags(max_ops=6))
    n = len(graph.operators)
    ran: set[int] = set()
    seq: list[int] = []
    while len(ran) < n or (len(seq) < 3 * n and draw(st.integers(0, 3)) == 3):
        ready = [v for v in range(n) if graph.predecessors[v] <= ran]
        v = draw(st.sampled_from(ready))
        seq.append(v)
        ran.add(v)
    return graph, seq


@settings(max_examples=150, deadline=None)
@given(graphs_with_sequences())
def test_planner_evaluator_agrees_with_sequence_profile(case: tuple[Graph, list[int]]) -> None:
    graph, seq = case
    costs = _Evaluator(graph).step_costs(seq)
    assert costs == [s.live_bytes for s in sequence_profile(graph, seq).steps]
    assert max(costs, default=0) >= sequence_lower_bound(graph)


# ---- brute force ---------------------------------------------------------------------------------


def _prefix_peak(graph: Graph, seq: list[int]) -> int:
    """Peak of a prefix counting only what every completion also holds: a produced graph output is
    counted up to its last read (a later run may replace it), everything else as in memory.py."""
    activation = set(graph.activation_tensors)
    spans: dict[tuple[int, int], list[int]] = {}
    current: dict[int, tuple[int, int]] = {}
    for t in activation - set(graph.producer):
        current[t] = (t, 0)
        spans[(t, 0)] = [0, len(seq) - 1 if t in graph.outputs else 0]
    runs: dict[int, int] = {}
    for s, v in enumerate(seq):
        for t in graph.operators[v].input_tensors:
            if t in activation:
                spans[current[t]][1] = max(spans[current[t]][1], s)
        for t in set(graph.operators[v].outputs) & activation:
            current[t] = (t, runs.get(v, 0))
            spans[current[t]] = [s, s]
        runs[v] = runs.get(v, 0) + 1
    costs = [0] * len(seq)
    for (t, _), (first, last) in spans.items():
        for s in range(first, last + 1):
            costs[s] += graph.tensors[t].nbytes
    return max(costs, default=0)


def brute_force_peak(graph: Graph, k: int) -> int:
    """Least peak over every valid sequence running each operator 1..1+k times (branch and bound)."""
    n = len(graph.operators)
    best = [profile(graph).peak_bytes]

    def extend(seq: list[int], counts: list[int]) -> None:
        if all(counts):
            best[0] = min(best[0], sequence_profile(graph, seq).peak_bytes)
        for v in range(n):
            if counts[v] <= k and all(counts[u] for u in graph.predecessors[v]):
                seq.append(v)
                counts[v] += 1
                if _prefix_peak(graph, seq) < best[0]:
                    extend(seq, counts)
                counts[v] -= 1
                seq.pop()

    extend([], [0] * n)
    return best[0]


def _check_against_brute_force(graph: Graph, k: int = 1) -> None:
    plan = plan_recompute(graph, k, time_limit=5.0)
    assert plan.optimal
    assert plan.peak_bytes == brute_force_peak(graph, k)
    assert sequence_profile(graph, plan.sequence).peak_bytes == plan.peak_bytes
    counts = [plan.sequence.count(v) for v in range(len(graph.operators))]
    assert all(1 <= c <= 1 + k for c in counts)


def test_brute_force_confirms_hand_built_graphs() -> None:
    assert brute_force_peak(LATE_REUSE, 1) == 410
    _check_against_brute_force(LATE_REUSE)
    # two cheap values reused late, one of them through a two-operator chain
    graph = make_graph(
        [4, 60, 8, 80, 150, 150, 4, 4],
        [([0], [1]), ([0], [2]), ([2], [3]), ([1, 3], [4]), ([4], [5]), ([5, 1, 3], [6])],
        inputs=[0],
        outputs=[6],
    )
    _check_against_brute_force(graph)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
@given(small_dags(max_ops=5))
def test_brute_force_confirms_the_planner_for_k1(graph: Graph) -> None:
    assume(not cannot_gain(graph))  # those exit early (a separate test covers that rule)
    _check_against_brute_force(graph, 1)


@settings(max_examples=40, deadline=None)
@given(small_dags(max_ops=5))
def test_graphs_without_fan_out_cannot_gain(graph: Graph) -> None:
    if cannot_gain(graph):
        assert brute_force_peak(graph, 1) == profile(graph, plan_recompute(graph, 0).sequence).peak_bytes


# ---- planner on chains and late-reuse models -----------------------------------------------------


def test_chain_reports_no_gain_quickly() -> None:
    graph = make_graph(
        [64 + (i % 7) * 13 for i in range(301)], [([i], [i + 1]) for i in range(300)], [0], [300]
    )
    assert cannot_gain(graph)
    started = time.perf_counter()
    plan = plan_recompute(graph, 2)
    assert time.perf_counter() - started < 1.0
    assert plan.peak_bytes == plan.baseline_peak_bytes and plan.saving_bytes == 0
    assert plan.recomputed == () and plan.extra_macs == 0 and plan.optimal


def _conv_chain_model() -> bytes:
    b = ModelBuilder(seed=3)
    t = b.input("input", (1, 16, 16, 4))
    for i in range(6):
        t = b.conv2d(t, 8 + 4 * (i % 2), (3, 3), activation="RELU", name=f"conv{i}")
        t = b.depthwise_conv2d(t, (3, 3), name=f"dw{i}")
    b.output(b.fully_connected(b.mean(t, (1, 2), keepdims=False), 4))
    return b.build()


def test_tflite_chain_reports_no_gain_quickly() -> None:
    graph = parse_model(_conv_chain_model())
    started = time.perf_counter()
    plan = plan_recompute(graph, 1)
    assert time.perf_counter() - started < 1.0
    assert plan.saving_bytes == 0 and plan.recomputed == () and plan.method in ("single_use", "lower_bound")


@pytest.mark.parametrize("name", ["gen_gated_skip", "gen_long_skip", "gen_nested_skip", "gen_pyramid_head"])
def test_late_reuse_model_gains_with_k1(name: str) -> None:
    graph = _bench().late_reuse_graph(name)
    plan = plan_recompute(graph, 1, time_limit=5.0)
    assert plan.peak_bytes < plan.baseline_peak_bytes
    assert sequence_profile(graph, plan.sequence).peak_bytes == plan.peak_bytes
    counts = [plan.sequence.count(v) for v in range(len(graph.operators))]
    assert all(1 <= c <= 2 for c in counts)
    assert plan.recomputed == tuple(v for v, c in enumerate(counts) if c > 1)
    assert plan.extra_macs == sum(macs(graph, v) * (c - 1) for v, c in enumerate(counts))
    assert 0 < plan.extra_macs_percent < 10
    assert plan.lower_bound_bytes <= plan.peak_bytes
    data = plan.as_json()
    assert data["order"] == list(plan.sequence) and data["recomputed"] == list(plan.recomputed)


def test_ram_budget_and_mac_budget() -> None:
    graph = _bench().late_reuse_graph("gen_nested_skip")
    best = plan_recompute(graph, 1)
    assert best.optimal and best.peak_bytes < best.baseline_peak_bytes
    # a budget between the two peaks needs fewer extra MACs than the lowest peak
    middle = (best.peak_bytes + best.baseline_peak_bytes) // 2
    fit = plan_recompute(graph, 1, ram_budget=middle)
    assert fit.meets_ram_budget and fit.peak_bytes <= middle
    assert 0 < fit.extra_macs <= best.extra_macs
    assert plan_recompute(graph, 1, ram_budget=best.baseline_peak_bytes).extra_macs == 0
    impossible = plan_recompute(graph, 1, ram_budget=best.peak_bytes - 1)
    assert not impossible.meets_ram_budget and impossible.peak_bytes == best.peak_bytes
    # no MAC budget: no recomputation that costs MACs
    none = plan_recompute(graph, 1, mac_budget_percent=0.0)
    assert none.extra_macs == 0


def test_k0_is_the_best_order() -> None:
    plan = plan_recompute(LATE_REUSE, 0)
    assert plan.sequence == profile(LATE_REUSE, plan.sequence).order
    assert plan.peak_bytes == plan.baseline_peak_bytes == 500 and plan.recomputed == ()


# ---- MACs ------------------------------------------------------------------------------------


def test_macs_from_shapes() -> None:
    b = ModelBuilder(seed=1)
    x = b.input("x", (1, 8, 8, 3))
    c = b.conv2d(x, 4, (3, 3), (2, 2))  # 4x4x4 outputs, 3*3*3 taps each
    d = b.depthwise_conv2d(c, (3, 3))  # 4x4x4 outputs, 9 taps each
    p = b.average_pool2d(d, (2, 2), (2, 2))  # 2x2x4 outputs, 4 taps each
    s = b.add(p, p)
    r = b.reshape(s, (1, 16))
    f = b.fully_connected(r, 5)  # 5 outputs, 16 inputs each
    m = b.mean(d, (1, 2))  # reads 64 elements
    b.output(f, m)
    graph = parse_model(b.build())
    assert [macs(graph, v) for v in range(len(graph.operators))] == [64 * 27, 64 * 9, 16 * 4, 16, 0, 80, 64]
    assert total_macs(graph) == 64 * 27 + 64 * 9 + 64 + 16 + 80 + 64


@pytest.mark.skipif(not SHARED_MODELS.is_dir(), reason=f"no shared models at {SHARED_MODELS}")
def test_shared_models_have_plausible_macs() -> None:
    path = SHARED_MODELS / "mlperf_ic_resnet8_int8.tflite"
    if not path.is_file():
        pytest.skip("resnet8 not available")
    from tinysched.model.reader import read_model

    graph = read_model(path)
    # MLPerf Tiny's ResNet-8 is about 12.5 M MACs
    assert math.isclose(total_macs(graph), 12.5e6, rel_tol=0.05)
    assert np.all([macs(graph, v) >= 0 for v in range(len(graph.operators))])
