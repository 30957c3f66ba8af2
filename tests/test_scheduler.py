"""The scheduler: exact where it claims, never a false certificate, and the `schedule` command.

Random small DAGs (tensors with several readers, operators with several or no outputs, graph
inputs read late or never, unread outputs) are checked against brute force over all topological
orders. Shared models (skipped when ../shared/models is absent) must all be certified quickly, and
a shuffled copy of each must come back to the optimum.
"""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import sys
import time
from itertools import islice

import numpy as np
import pytest
from conftest import REPO, shared_model, shared_model_params
from hypothesis import HealthCheck, given, settings
from random_dags import (
    brute_force_optimum,
    narrow_dag,
    peak_of,
    small_dags,
    small_randwire,
    topological_orders,
)

from tinysched.errors import TinyschedError
from tinysched.memory.tensor import profile
from tinysched.model.graph import Graph, make_graph
from tinysched.model.reader import parse_model, read_model
from tinysched.model.writer import rewrite_model
from tinysched.order.bounds import CutNetwork, OrderingProblem, lower_bound
from tinysched.order.scheduler import (
    HEURISTICS,
    Schedule,
    cp_sat_search,
    cut_operators,
    exact_search,
    greedy_step,
    improve_by_windows,
    optimal_orders,
    plain_downset_dp,
    schedule,
    staged_search,
)

MANY = settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck))
SOME = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))


def random_topological_order(graph: Graph, seed: int) -> list[int]:
    rng = random.Random(seed)
    done: set[int] = set()
    order: list[int] = []
    while len(order) < len(graph.operators):
        ready = [v for v in range(len(graph.operators)) if v not in done and graph.predecessors[v] <= done]
        v = rng.choice(ready)
        order.append(v)
        done.add(v)
    return order


def assert_valid(graph: Graph, sched: Schedule) -> None:
    graph.check_order(list(sched.order))
    assert profile(graph, sched.order).peak_bytes == sched.peak_bytes
    assert sched.lower_bound_bytes <= sched.peak_bytes <= sched.stored_order_peak_bytes
    assert sched.certified == (sched.certificate is not None)
    if sched.certified:
        assert sched.lower_bound_bytes == sched.peak_bytes == sched.certificate.lower_bound_bytes
        assert sched.certificate.kind in {"lower_bound", "exhaustive", "cp_sat"}
        assert sched.gap_bytes == 0 and sched.gap_percent == 0.0


# ---- random DAGs against brute force -------------------------------------------------------------


@MANY
@given(small_dags())
def test_exact_search_and_schedule_match_brute_force(graph):
    optimum = brute_force_optimum(graph)
    problem = OrderingProblem(graph)
    for dominance in (True, False):
        found = exact_search(problem, upper=problem.total_bytes + 1, dominance=dominance)
        assert found.complete and found.peak_bytes == optimum
        assert peak_of(graph, found.order) == optimum
    sched = schedule(graph, time_limit=5.0)
    assert_valid(graph, sched)
    assert sched.peak_bytes == optimum
    assert sched.certified  # tiny graphs always finish
    assert sched.lower_bound_bytes <= optimum


@SOME
@given(small_dags())
def test_certified_never_lies_under_any_budget(graph):
    optimum = brute_force_optimum(graph)
    for limit in (0.0, 0.01):
        sched = schedule(graph, time_limit=limit)
        assert_valid(graph, sched)
        assert sched.lower_bound_bytes <= optimum <= sched.peak_bytes
        if sched.certified:
            assert sched.peak_bytes == optimum


@SOME
@given(small_dags())
def test_plain_dp_heuristics_windows_and_alternatives(graph):
    optimum = brute_force_optimum(graph)
    problem = OrderingProblem(graph)
    plain = plain_downset_dp(problem)
    assert plain.complete and plain.peak_bytes == optimum == peak_of(graph, plain.order)
    for name, heuristic in HEURISTICS.items():
        order = heuristic(problem)
        graph.check_order(order)
        improved = improve_by_windows(problem, order, lower=0, sizes=(2, 3, 4))
        graph.check_order(improved)
        assert optimum <= peak_of(graph, tuple(improved)) <= peak_of(graph, tuple(order)), name
    alternatives = optimal_orders(graph, optimum, limit=5)
    assert alternatives and len(set(alternatives)) == len(alternatives)
    for order in alternatives:
        graph.check_order(list(order))
        assert peak_of(graph, order) == optimum
    assert optimal_orders(graph, optimum - 1) == []


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(small_dags(max_ops=6))
def test_cp_sat_model_is_exact(graph):
    optimum = brute_force_optimum(graph)
    problem = OrderingProblem(graph)
    hint = random_topological_order(graph, 0)
    result = cp_sat_search(problem, hint, problem.peak_bytes(hint), 0, time.perf_counter() + 5.0)
    assert result.status == "OPTIMAL"
    assert result.peak_bytes == optimum == peak_of(graph, result.order)
    assert result.bound_bytes <= optimum


# ---- hand-made cases -----------------------------------------------------------------------------


def two_branches(width: int = 6) -> Graph:
    """`width` branches off one input, each expand (big) -> project (small), then a join."""
    sizes = [4]
    ops = []
    ends = []
    for b in range(width):
        sizes += [50 + 10 * b, 3 + b]
        ops += [([0], [len(sizes) - 2]), ([len(sizes) - 2], [len(sizes) - 1])]
        ends.append(len(sizes) - 1)
    sizes.append(8)
    ops.append((ends, [len(sizes) - 1]))
    # stored order: all expands first (a memory-hungry breadth-first order)
    stored = [2 * b for b in range(width)] + [2 * b + 1 for b in range(width)] + [2 * width]
    return make_graph(sizes, [ops[v] for v in stored], [0], [len(sizes) - 1])


def test_schedule_improves_and_certifies_a_branchy_graph():
    graph = two_branches(4)
    sched = schedule(graph)
    assert_valid(graph, sched)
    assert sched.certified
    assert sched.peak_bytes < sched.stored_order_peak_bytes
    assert sched.peak_bytes == brute_force_optimum(graph)


def test_search_stops_at_its_state_budget_with_a_valid_frontier():
    graph = two_branches(10)
    problem = OrderingProblem(graph)
    capped = exact_search(problem, upper=problem.total_bytes + 1, max_states=5, dominance=False)
    assert not capped.complete and capped.order is None
    full = exact_search(problem, upper=problem.total_bytes + 1)
    assert capped.frontier_bytes <= full.peak_bytes


def layered_recurrent(steps: int, layers: int, gates: int, hidden: int, seed: int) -> Graph:
    """An unrolled recurrent net: per layer and time step `gates` gates (two matmuls, an add, an
    activation each), then cell and hidden updates; layer l + 1 reads layer l's hidden states. The
    lowest peak runs one layer after the other."""
    rng = random.Random(seed)
    sizes = [steps * hidden]
    ops: list[tuple[list[int], list[int]]] = []

    def op(inputs: list[int], *output_bytes: int) -> list[int]:
        outs = list(range(len(sizes), len(sizes) + len(output_bytes)))
        sizes.extend(output_bytes)
        ops.append((inputs, outs))
        return outs

    xs = op([0], *([hidden] * steps))
    for _ in range(layers):
        h = op([], hidden)[0]
        cell = op([], 2 * hidden)[0]
        hs = []
        for t in range(steps):
            gate_outs = []
            for _ in range(gates):
                wx = op([xs[t]], hidden * rng.choice([2, 4]))[0]
                wh = op([h], hidden * rng.choice([2, 4]))[0]
                gate_outs.append(op([op([wx, wh], 2 * hidden)[0]], hidden)[0])
            cell = op([cell, *gate_outs[:-1]], 2 * hidden)[0]
            h = op([gate_outs[-1], op([cell], hidden)[0]], hidden)[0]
            hs.append(h)
        xs = hs
    out = op(xs, steps * hidden)[0]
    return make_graph(sizes, ops, [0], [out])


@pytest.mark.parametrize(("steps", "gates", "seed"), [(3, 3, 1), (4, 2, 1), (4, 2, 2)])
def test_shuffled_layered_recurrent_graph_certified_at_optimum(steps, gates, seed):
    layered = layered_recurrent(steps, 2, gates, 16, seed)
    graph = layered.reordered(random_topological_order(layered, seed))
    assert 60 <= len(graph.operators) <= 100
    started = time.perf_counter()
    sched = schedule(graph, time_limit=2.0)
    assert time.perf_counter() - started < 2.0
    assert_valid(graph, sched)
    assert sched.certified
    # independently: the exhaustive search finds no order below the peak
    problem = OrderingProblem(graph)
    below = exact_search(problem, upper=sched.peak_bytes)
    assert below.complete and below.order is None
    # the cut bisection reaches the optimum by itself, whatever order the file stores
    assert problem.peak_bytes(HEURISTICS["cut_bisection"](problem)) == sched.peak_bytes


@SOME
@given(small_dags())
def test_min_downset_is_a_cheapest_downset(graph):
    problem = OrderingProblem(graph)
    net = CutNetwork(problem)
    for v in range(problem.n_ops):
        found = net.min_downset(problem.predecessors[v], (v,))
        assert found is not None
        value, downset = found
        assert value == net.min_resident(problem.predecessors[v], (v,))
        assert not downset >> v & 1 and problem.predecessor_mask[v] & ~downset == 0
        assert all(
            problem.predecessor_mask[u] & ~downset == 0 for u in range(problem.n_ops) if downset >> u & 1
        )
        assert (
            problem.resident_bytes(downset)
            - problem.always_bytes
            - (problem.first_step_only_bytes if not downset else 0)
            == value
        )


def test_stored_order_must_be_topological():
    graph = make_graph([1, 1, 1], [([1], [2]), ([0], [1])], [0], [2])
    with pytest.raises(TinyschedError, match="stored operator order"):
        schedule(graph)


def test_graph_without_operators():
    sched = schedule(make_graph([3], [], [0], [0]))
    assert sched.order == () and sched.peak_bytes == 0 and sched.certified


# ---- shared models -------------------------------------------------------------------------------


@pytest.mark.parametrize("path", shared_model_params())
def test_shared_model_certified(path):
    graph = read_model(path)
    sched = schedule(graph, time_limit=5.0)
    assert_valid(graph, sched)
    assert sched.certified, f"{path.name}: gap {sched.gap_bytes} B"
    assert sched.seconds < 1.0


@pytest.mark.parametrize("path", shared_model_params())
def test_shuffled_shared_model_back_to_optimum(path):
    graph = read_model(path)
    optimum = schedule(graph).peak_bytes
    shuffled = graph.reordered(random_topological_order(graph, 11))
    sched = schedule(shuffled, time_limit=5.0)
    assert_valid(shuffled, sched)
    assert sched.certified and sched.peak_bytes == optimum


def test_shared_models_median_time():
    paths = [p.values[0] for p in shared_model_params() if p.values[0] is not None]
    if not paths:
        pytest.skip("no shared models")
    graphs = [read_model(p) for p in paths]
    schedule(graphs[0])  # warm-up: imports
    times = [schedule(g).seconds for g in graphs]
    assert statistics.median(times) < 0.1


# ---- the command line ----------------------------------------------------------------------------


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tinysched.cli", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )


def test_cli_schedule_json_fields_are_consistent():
    path = shared_model("mlperf_ic_resnet8_int8")
    result = run_cli("schedule", str(path), "--json")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # progress only on a terminal
    payload = json.loads(result.stdout)
    for key in (
        "ops",
        "order",
        "peak_bytes",
        "stored_order_peak_bytes",
        "lower_bound_bytes",
        "certified",
        "certificate",
        "seconds",
    ):
        assert key in payload
    graph = read_model(path)
    assert payload["ops"] == len(graph.operators)
    assert sorted(payload["order"]) == list(range(len(graph.operators)))
    assert profile(graph, payload["order"]).peak_bytes == payload["peak_bytes"]
    assert profile(graph).peak_bytes == payload["stored_order_peak_bytes"]
    assert payload["certified"] is True
    assert payload["certificate"]["kind"] in {"lower_bound", "exhaustive", "cp_sat"}
    assert "witness" in payload["certificate"]
    assert payload["lower_bound_bytes"] == payload["peak_bytes"]


def test_cli_schedule_text_and_errors(tmp_path):
    path = shared_model("mlperf_ic_resnet8_int8")
    text = run_cli("schedule", str(path), "--time-limit", "2")
    assert text.returncode == 0, text.stderr
    assert "optimal: no order can need less, because" in text.stdout and "lower bound" in text.stdout
    missing = run_cli("schedule", str(tmp_path / "absent.tflite"))
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1
    bad_limit = run_cli("schedule", str(path), "--time-limit", "-1")
    assert bad_limit.returncode == 2 and "time-limit" in bad_limit.stderr


def test_cli_schedule_output_runs_bit_identically(tmp_path):
    from tinysched.device.reference import random_inputs, run_reference_many

    original = shared_model("mlperf_ic_resnet8_int8").read_bytes()
    graph = parse_model(original)
    shuffled_bytes = rewrite_model(original, order=random_topological_order(graph, 3))
    shuffled_path = tmp_path / "shuffled.tflite"
    shuffled_path.write_bytes(shuffled_bytes)
    out = tmp_path / "scheduled.tflite"
    result = run_cli("schedule", str(shuffled_path), "-o", str(out), "--json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    rescheduled = read_model(out)
    # the operator vector is the shuffled model's in the printed order, everything else unchanged
    shuffled_graph = parse_model(shuffled_bytes)
    assert [o.opcode for o in rescheduled.operators] == [
        shuffled_graph.operators[v].opcode for v in payload["order"]
    ]
    assert [(o.inputs, o.outputs) for o in rescheduled.operators] == [
        (shuffled_graph.operators[v].inputs, shuffled_graph.operators[v].outputs) for v in payload["order"]
    ]
    assert [(t.name, t.dtype, t.shape) for t in rescheduled.tensors] == [
        (t.name, t.dtype, t.shape) for t in shuffled_graph.tensors
    ]
    assert profile(rescheduled).peak_bytes == payload["peak_bytes"]
    inputs = random_inputs(original, seed=5, count=3)
    expected = run_reference_many(original, inputs, resolvers=("BUILTIN_REF",))
    actual = run_reference_many(out.read_bytes(), inputs, resolvers=("BUILTIN_REF",))
    for want, got in zip(expected, actual, strict=True):
        assert len(want.outputs) == len(got.outputs)
        for a, b in zip(want.outputs, got.outputs, strict=True):
            assert a.dtype == b.dtype and np.array_equal(a, b)


# ---- stages, status text, large graphs under a time limit ---------------------------------------


@SOME
@given(small_dags())
def test_staged_search_is_exact_and_cut_operators_are_fixed(graph):
    optimum = brute_force_optimum(graph)
    problem = OrderingProblem(graph)
    orders = list(islice(topological_orders(graph), 200))
    for c in cut_operators(problem):
        assert len({order.index(c) for order in orders}) == 1
    start = random_topological_order(graph, 1)
    staged = staged_search(problem, start, lower=0)
    assert staged.complete and problem.peak_bytes(staged.order) == optimum
    graph.check_order(list(staged.order))
    capped = staged_search(problem, start, lower=0, max_states=2)
    assert capped.frontier_bytes <= optimum <= problem.peak_bytes(capped.order) <= problem.peak_bytes(start)


@pytest.mark.parametrize("seed", range(4))
def test_staged_search_reports_each_better_order_and_stops_when_asked(seed):
    # the precedence tree beside the search restarts on each better order (`on_better`) and ends
    # the search once it proves the order optimal (`stop`)
    graph = small_randwire(seed, nodes=11 + seed % 3, stages=3)
    problem = OrderingProblem(graph)
    start = random_topological_order(graph, seed)
    seen: list[list[int]] = []
    staged = staged_search(problem, start, lower=0, on_better=seen.append)
    peaks = [problem.peak_bytes(start)] + [problem.peak_bytes(o) for o in seen]
    for before, after in zip(peaks, peaks[1:], strict=False):
        assert after <= before  # a stage's peak came down, the whole order's never went up
    for order in seen:
        graph.check_order(order)
    assert not seen or problem.peak_bytes(staged.order) <= problem.peak_bytes(seen[-1])
    assert seen and peaks[-1] < peaks[0]  # these stored orders are all beaten
    asked = []

    def stop() -> bool:
        asked.append(1)
        return True

    stopped = staged_search(problem, start, lower=0, stop=stop)
    assert asked and not stopped.complete and list(stopped.order) == list(start)


def test_precedence_tree_beside_the_search_certifies_and_rechecks():
    # 143 operators: the pair bound falls short and the stage decision would not finish soon; with
    # a second core the tree grows in a child process beside the search and proves the order.
    # The native library is built first: built inside the 3 s budget (a fresh TINYSCHED_CACHE, the
    # first scheduling call of a worker) it left no time to start the tree, and the stage search
    # proved the order alone (seen in 1 run of 3-5 of the suite)
    import os

    from tinysched.order import native
    from tinysched.order.bounds import LowerBound, recheck

    native.library()
    graph = small_randwire(11, nodes=18, stages=2)
    sched = schedule(graph, time_limit=3.0)
    assert_valid(graph, sched)
    assert sched.certified and sched.certificate.witness["bound"] == "precedence_tree"
    witness = dict(sched.certificate.witness)
    kind = witness.pop("bound")
    assert recheck(graph, LowerBound(sched.certificate.lower_bound_bytes, kind, witness))
    assert sched.seconds < 3.0
    if len(os.sched_getaffinity(0)) >= 2:
        assert "started" in sched.stats["tree_beside"]


@pytest.mark.parametrize("seed", range(12))
def test_small_randwire_bounds_never_exceed_the_optimum(seed):
    graph = small_randwire(seed, nodes=5 + seed % 3)
    problem = OrderingProblem(graph)
    optimum = plain_downset_dp(problem).peak_bytes
    assert optimum == brute_force_optimum(graph) if len(graph.operators) <= 9 else optimum is not None
    assert lower_bound(problem).bytes <= optimum
    for limit in (0.0, 0.05, 2.0):
        sched = schedule(graph, time_limit=limit)
        assert_valid(graph, sched)
        assert sched.lower_bound_bytes <= optimum <= sched.peak_bytes
        assert sched.certified == (sched.peak_bytes == sched.lower_bound_bytes)
    assert sched.certified and sched.peak_bytes == optimum


@pytest.mark.parametrize("seed", range(8))
def test_multi_stage_randwire_certificates_recheck_and_stay_under_the_dp(seed):
    # three stages of 11-13 nodes: the stage search, the stage-network tree and the wide beams all
    # take part; whatever the budget, the bound stays under the DP optimum and a certificate's
    # bound is re-derived by bounds.recheck from its witness
    from tinysched.order.bounds import LowerBound, recheck

    graph = small_randwire(seed, nodes=11 + seed % 3, stages=3)
    problem = OrderingProblem(graph)
    optimum = plain_downset_dp(problem, max_states=5_000_000).peak_bytes
    assert optimum is not None
    for limit in (0.05, 0.5, 3.0):
        sched = schedule(graph, time_limit=limit)
        assert_valid(graph, sched)
        assert sched.lower_bound_bytes <= optimum <= sched.peak_bytes
        if sched.certified and sched.certificate.kind == "lower_bound":
            witness = dict(sched.certificate.witness)
            kind = witness.pop("bound")
            assert recheck(graph, LowerBound(sched.certificate.lower_bound_bytes, kind, witness))


def test_status_text_says_what_is_known():
    certified = schedule(two_branches(4))
    assert certified.status_text().startswith("optimal: peak ")
    open_case = Schedule(
        order=certified.order,
        peak_bytes=1053,
        stored_order_peak_bytes=1100,
        lower_bound_bytes=1000,
        certified=False,
        certificate=None,
        method="stored",
        seconds=0.0,
    )
    assert open_case.above_optimum_percent == pytest.approx(5.3)
    text = open_case.status_text()
    assert text.startswith("within 5.3% of optimal") and "1,000 B" in text and "1,053 B" in text
    rounded_up = Schedule((), 1001, 1001, 1000, False, None, "stored", 0.0)
    assert rounded_up.status_text().startswith("within 0.1% of optimal")


def wide_graph(branches: int, join: str) -> Graph:
    """`branches` one-operator branches off one input, joined by one concatenation or an ADD chain."""
    sizes = [64]
    ops: list[tuple[list[int], list[int]]] = []
    ends = []
    for i in range(branches):
        sizes.append(64 * (1 + i % 3))
        ops.append(([0], [len(sizes) - 1]))
        ends.append(len(sizes) - 1)
    if join == "concat":
        sizes.append(64 * branches)
        ops.append((ends, [len(sizes) - 1]))
    else:
        acc = ends[0]
        for e in ends[1:]:
            sizes.append(64)
            ops.append(([acc, e], [len(sizes) - 1]))
            acc = len(sizes) - 1
    return make_graph(sizes, ops, [0], [len(sizes) - 1])


@pytest.mark.parametrize(("branches", "join"), [(10_000, "concat"), (5_000, "add")])
def test_ten_thousand_operators_under_a_short_time_limit(branches, join):
    """Catches hangs only (timings are the benchmark's job: bench/bench_schedule.py --only time-limit)."""
    graph = wide_graph(branches, join)
    assert len(graph.operators) >= 9_999
    started = time.perf_counter()
    sched = schedule(graph, time_limit=1.0)
    assert time.perf_counter() - started < 30
    assert_valid(graph, sched)
    assert sched.certified == (sched.lower_bound_bytes == sched.peak_bytes)
    from tinysched.arena.placement import plan_arena

    started = time.perf_counter()
    plan = plan_arena(graph, sched.order, time_limit=1.0)
    assert time.perf_counter() - started < 30
    assert plan.arena_bytes >= plan.lower_bound_bytes >= sched.peak_bytes // 2


# ---- the layered (vectorised) stage search ---------------------------------------------------------


@SOME
@given(small_dags())
def test_layered_decision_is_exact_and_beams_are_valid(graph):
    from tinysched.order.layered import layered_search

    optimum = brute_force_optimum(graph)
    problem = OrderingProblem(graph)
    for backward in (False, True):
        fits = layered_search(problem, 0, problem.full_mask, optimum, backward=backward)
        assert fits.order is not None and fits.complete
        graph.check_order(list(fits.order))
        assert peak_of(graph, fits.order) == fits.peak_bytes <= optimum
        short = layered_search(problem, 0, problem.full_mask, optimum - 1, backward=backward)
        assert short.order is None and short.complete
        assert short.floor_bytes == optimum  # the cheapest cut step is the optimum itself
    for width in (1, 3):
        beam = layered_search(problem, 0, problem.full_mask, 10**12, width=width)
        graph.check_order(list(beam.order))
        assert peak_of(graph, beam.order) == beam.peak_bytes >= optimum


def test_layered_search_orders_a_stretch_after_its_start():
    from tinysched.order.layered import layered_search

    graph = small_randwire(3, nodes=7)
    problem = OrderingProblem(graph)
    order = list(plain_downset_dp(problem).order)
    lo = min(order.index(c) + 1 for c in cut_operators(problem) if order.index(c) + 1 < len(order) - 2)
    start = sum(1 << v for v in order[:lo])
    rest = problem.full_mask & ~start
    found = layered_search(problem, start, rest, 10**12, width=8)
    assert sorted(found.order) == sorted(order[lo:])
    graph.check_order(order[:lo] + list(found.order))
    steps = problem.step_profile(order[:lo] + list(found.order))
    assert max(steps[lo:]) == found.peak_bytes


@pytest.mark.parametrize("seed", range(4))
def test_layered_search_is_exact_past_one_word(seed):
    # 90 operators: down-sets take two 64-bit words, deduplicated through one hash of them
    from tinysched.order.layered import layered_search

    graph = narrow_dag(seed, 90)
    problem = OrderingProblem(graph)
    optimum = exact_search(problem, upper=10**12).peak_bytes
    for backward in (False, True):
        fits = layered_search(problem, 0, problem.full_mask, optimum, backward=backward)
        assert fits.order is not None and fits.complete and peak_of(graph, fits.order) <= optimum
        short = layered_search(problem, 0, problem.full_mask, optimum - 1, backward=backward)
        assert short.order is None and short.complete and short.floor_bytes == optimum
    for width in (2, 16):
        beam = layered_search(problem, 0, problem.full_mask, 10**12, width=width)
        graph.check_order(list(beam.order))
        assert peak_of(graph, beam.order) == beam.peak_bytes >= optimum


def _stage_optimum(problem: OrderingProblem, start: int, ops: int, cap: int, backward: bool):
    """Decisions from `cap` down until the stage no longer fits: (its optimum, the last decision's
    floor, down-sets held over all of them)."""
    from tinysched.order.layered import layered_search

    held = 0
    while True:
        found = layered_search(problem, start, ops, cap, backward=backward, max_states=10_000_000)
        held += found.states
        assert found.complete
        if found.order is None:
            return cap + 1, found.floor_bytes, held
        assert sorted(found.order) == [v for v in range(problem.n_ops) if ops >> v & 1]
        cap = found.peak_bytes - 1


@pytest.mark.parametrize("seed", range(4))
def test_backward_decisions_agree_with_forward_on_watts_strogatz_stages(seed):
    # a RandWire WS stage of 40 nodes (64-68 operators): both directions find the same stage
    # optimum, and the backward one holds far fewer down-sets (most operators keep what they free,
    # so they can be run last)
    sys.path.insert(0, str(REPO / "bench"))
    from stress_graphs import randwire

    graph = randwire([40], "ws", seed=seed)
    problem = OrderingProblem(graph)
    order = greedy_step(problem)
    position = {v: i for i, v in enumerate(order)}
    edges = sorted({0, len(order), *(position[c] + 1 for c in cut_operators(problem))})
    lo, hi = max(zip(edges, edges[1:], strict=False), key=lambda edge: edge[1] - edge[0])
    start, ops = sum(1 << v for v in order[:lo]), sum(1 << v for v in order[lo:hi])
    peak = max(problem.step_profile(order)[lo:hi])
    forward = _stage_optimum(problem, start, ops, peak, backward=False)
    backward = _stage_optimum(problem, start, ops, peak, backward=True)
    assert forward[:2] == backward[:2] and forward[0] == forward[1]  # the floor is the optimum
    assert 3 * backward[2] < forward[2]
    if seed == 3:  # 152,263 down-sets forward, 2,084 backward
        assert 50 * backward[2] < forward[2]
    from tinysched.order.layered import layered_search

    chosen = layered_search(problem, start, ops, forward[0] - 1, backward=None)
    assert chosen.backward and chosen.complete and chosen.floor_bytes == forward[0]


def test_decisions_choose_forward_on_a_chain_of_dead_ends():
    # narrow_dag leaves many operators' outputs unread: backward every such dead end can be the
    # last one run, so the backward down-sets multiply; the short try of both directions keeps
    # the forward decision, with the forward answer
    from tinysched.order.layered import PROBE_STATES, layered_search

    graph = narrow_dag(39, 250)
    problem = OrderingProblem(graph)
    cap = problem.peak_bytes(problem.topological_order) // 2
    forward = layered_search(problem, 0, problem.full_mask, cap)
    assert forward.complete and forward.order is not None and forward.states < PROBE_STATES
    backward = layered_search(problem, 0, problem.full_mask, cap, backward=True, max_states=PROBE_STATES)
    assert not backward.complete
    chosen = layered_search(problem, 0, problem.full_mask, cap, backward=None)
    assert not chosen.backward and chosen.complete and chosen.order == forward.order


def test_unique_rows_keeps_the_first_of_each_row():
    from tinysched.order.layered import _unique_rows  # noqa: PLC2701 (the module's own helper, tested here)

    rng = np.random.default_rng(0)
    rows = rng.integers(0, 4, size=(500, 3)).astype(np.uint64)
    first = _unique_rows(rows)
    seen: dict[tuple[int, ...], int] = {}
    for i, row in enumerate(map(tuple, rows.tolist())):
        seen.setdefault(row, i)
    assert sorted(first.tolist()) == sorted(seen.values())


@SOME
@given(small_dags())
def test_staged_search_giving_up_stays_exact(graph):
    # deciding below the peak first, and giving up only when short of time: with time enough it
    # finds the optimum as the climbing decisions do
    optimum = brute_force_optimum(graph)
    problem = OrderingProblem(graph)
    start = random_topological_order(graph, 2)
    staged = staged_search(problem, start, lower=0, give_up=True, deadline=time.perf_counter() + 60)
    assert staged.complete and problem.peak_bytes(staged.order) == optimum
    graph.check_order(list(staged.order))


@pytest.mark.parametrize("seed", range(8))
def test_staged_search_bound_below_the_peak_rechecks(seed):
    # a stage decided at once below the best order's peak: a stage_exhaustive bound whose cap is
    # the peak less one byte, never above the DP optimum, and that recheck re-derives
    from tinysched.order.bounds import recheck

    graph = small_randwire(seed, nodes=6 + seed % 3)
    problem = OrderingProblem(graph)
    optimum = plain_downset_dp(problem).peak_bytes
    start = list(problem.stored_order)
    staged = staged_search(problem, start, lower=0, give_up=True, deadline=time.perf_counter() + 60)
    assert staged.complete and problem.peak_bytes(staged.order) == optimum
    if staged.bound is not None:
        assert staged.bound.bytes <= optimum and recheck(graph, staged.bound)


def test_paper_randwire_generator_matches_the_description():
    sys.path.insert(0, str(REPO / "bench"))
    from stress_graphs import randwire, randwire_suite

    graph = randwire([40, 40], "ws", seed=5)
    again = randwire([40, 40], "ws", seed=5)  # seeded
    assert [(op.input_tensors, op.outputs) for op in graph.operators] == [
        (op.input_tensors, op.outputs) for op in again.operators
    ]
    problem = OrderingProblem(graph)
    cuts = cut_operators(problem)
    assert len(cuts) >= 4  # stem, one average per stage, pooling, head
    # no two-input ADD chains: every operator with several inputs reads node outputs (one ADD
    # per node, the stage's average), and each ReLU-conv has a single input
    many = [op for op in graph.operators if len(op.input_tensors) > 2]
    assert many
    suite = randwire_suite(4, seed=0)
    assert all(300 <= len(g.operators) <= 500 for g in suite)
    assert {g.name.split("_")[1] for g in suite} == {"ws", "er"}
    hard = randwire_suite(2, seed=0, variant="hard")
    assert all(g.name.startswith("randwire_hard_") for g in hard)
    # the benchmark's large table: up to 1,000 operators, 4-5 stages of 64-128 nodes
    large = randwire_suite(2, seed=0, min_ops=600, max_ops=1000, stages=(4, 5), nodes=(64, 128))
    for g in large:
        stages = [int(n) for n in g.name.split("_")[2:-1]]
        assert 600 <= len(g.operators) <= 1000 and len(stages) in (4, 5)
        assert all(64 <= n <= 128 for n in stages)
