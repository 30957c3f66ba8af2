"""Lower bounds (tinysched.order.bounds): valid for exactly memory.py's model, and exact where they claim.

Random small DAGs are checked against brute force over all their topological orders. A single-
operator cut is not just a bound: it must equal the least live bytes at that operator's step over
all orders, and a conditioned cut the least over the orders meeting its condition.
"""

from __future__ import annotations

import time
from dataclasses import FrozenInstanceError
from itertools import islice

import pytest
from conftest import shared_model_params
from hypothesis import HealthCheck, given, settings
from random_dags import brute_force_optimum, peak_of, small_dags, topological_orders

from tinysched.memory.tensor import profile
from tinysched.model.graph import make_graph
from tinysched.model.reader import read_model
from tinysched.order.bounds import (
    CutNetwork,
    LowerBound,
    OrderingProblem,
    first_step_bound,
    iter_bits,
    lower_bound,
    precedence_tree_bound,
    recheck,
    stage_bound,
    trivial_bound,
)

FAST = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


def step_at(problem: OrderingProblem, order: tuple[int, ...], op: int) -> int:
    return problem.step_profile(order)[order.index(op)]


@FAST
@given(small_dags())
def test_set_model_matches_memory_profile(graph):
    problem = OrderingProblem(graph)
    for order in islice(topological_orders(graph), 30):
        steps = problem.step_profile(order)
        assert steps == [s.live_bytes for s in profile(graph, order).steps]
        executed = 0
        for step, v in enumerate(order):
            assert problem.step_bytes(executed, v) == steps[step]
            executed |= 1 << v


@settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck))
@given(small_dags())
def test_every_bound_is_at_most_the_optimum(graph):
    optimum = brute_force_optimum(graph)
    problem = OrderingProblem(graph)
    for bound in (
        trivial_bound(problem),
        first_step_bound(problem),
        lower_bound(problem, pairs=False),
        lower_bound(problem),
        lower_bound(problem, orders=list(islice(topological_orders(graph), 3))),
    ):
        assert bound.bytes <= optimum, bound
        assert recheck(graph, bound), bound


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(small_dags(max_ops=8))
def test_precedence_tree_never_exceeds_the_optimum_and_rechecks(graph):
    optimum = brute_force_optimum(graph)
    problem = OrderingProblem(graph)
    order = next(iter(topological_orders(graph)))
    net = CutNetwork(problem)
    cuts = max((net.op_bound(v) for v in range(problem.n_ops)), default=0)
    for target, nodes in ((10**12, 3), (10**12, 40), (problem.peak_bytes(order), 400)):
        tree = precedence_tree_bound(problem, order, target, max_nodes=nodes)
        assert tree.kind == "precedence_tree" and tree.witness["nodes"] <= nodes
        assert cuts <= tree.bytes <= optimum, tree  # at least every single-operator cut
        assert recheck(graph, tree)
    assert not recheck(graph, LowerBound(optimum + 1, tree.kind, tree.witness))


@FAST
@given(small_dags())
def test_op_cuts_are_exact_per_operator(graph):
    problem = OrderingProblem(graph)
    net = CutNetwork(problem)
    orders = list(topological_orders(graph))
    for v in range(problem.n_ops):
        least = min(step_at(problem, o, v) for o in orders)
        cut = net.op_bound(v)
        assert cut <= least
        # the cut drops only the step-0-only bytes (unread graph inputs), when v can run first
        if not problem.predecessors[v] or not problem.first_step_only_bytes:
            assert cut >= least - problem.first_step_only_bytes
        if problem.predecessors[v]:
            assert cut == least


@FAST
@given(small_dags(max_ops=6))
def test_conditioned_cuts_are_exact(graph):
    problem = OrderingProblem(graph)
    net = CutNetwork(problem)
    orders = list(topological_orders(graph))
    for u in range(problem.n_ops):
        for v in range(problem.n_ops):
            if not problem.incomparable(u, v):
                continue
            u_first = [o for o in orders if o.index(u) < o.index(v)]
            after = net.op_bound_after(v, u)  # v's step with u done
            before = net.op_bound_before(u, v)  # u's step with v pending
            assert after == min(step_at(problem, o, v) for o in u_first)
            least_u = min(step_at(problem, o, u) for o in u_first)
            assert before <= least_u
            if problem.predecessors[u] or not problem.first_step_only_bytes:
                assert before == least_u


def test_tensor_with_several_readers_counts_once():
    # t1 is read by ops 1, 2 and 3; while op 2 runs, t1 is live once (10 bytes), not three times
    graph = make_graph([1, 10, 1, 1, 1, 1], [([0], [1]), ([1], [2]), ([1], [3]), ([1, 2, 3], [4])], [0], [4])
    problem = OrderingProblem(graph)
    net = CutNetwork(problem)
    assert net.op_bound(2) == 10 + 1 + 0  # t1 + t3 (own output), t2 may still be unproduced
    assert net.op_bound(2) == min(step_at(problem, o, 2) for o in topological_orders(graph))


def test_graph_inputs_and_outputs_follow_the_memory_model():
    # t0: graph input read late (by op 2), so live from step 0; t3: graph output of op 1, live to
    # the end; op 0's output t1 is read by nobody: live in op 0's step only.
    graph = make_graph([100, 7, 5, 50, 3], [([], [1]), ([], [3]), ([0], [4])], [0], [3, 4])
    optimum = brute_force_optimum(graph)
    problem = OrderingProblem(graph)
    bound = lower_bound(problem)
    assert bound.bytes == optimum == 100 + 3  # op 2 must run first, while t0 is live anyway
    assert recheck(graph, bound)


def test_pair_bound_beats_single_cuts():
    # Two independent branches a (big intermediate) and b (big output kept for the join): whichever
    # runs second pays for the first's output, and no single operator sees both.
    sizes = [1, 40, 10, 30, 30, 1]
    ops = [([0], [1]), ([1], [2]), ([0], [3]), ([3], [4]), ([2, 4], [5])]
    graph = make_graph(sizes, ops, [0], [5])
    problem = OrderingProblem(graph)
    singles = lower_bound(problem, pairs=False)
    full = lower_bound(problem)
    optimum = brute_force_optimum(graph)
    assert singles.bytes < full.bytes <= optimum
    assert full.kind == "pair_cut" and recheck(graph, full)
    assert set(full.witness) >= {"ops", "cut_bytes"}


def test_known_orders_prune_cuts_without_changing_the_bound():
    sizes = [1, 40, 10, 30, 30, 1]
    ops = [([0], [1]), ([1], [2]), ([0], [3]), ([3], [4]), ([2, 4], [5])]
    problem = OrderingProblem(make_graph(sizes, ops, [0], [5]))
    plain = lower_bound(problem)
    orders = [list(o) for o in topological_orders(problem.graph)]
    pruned = lower_bound(problem, orders=orders)
    assert pruned.bytes == plain.bytes
    assert pruned.cuts <= plain.cuts


def test_recheck_rejects_inflated_bounds():
    graph = make_graph(
        [1, 40, 10, 30, 30, 1], [([0], [1]), ([1], [2]), ([0], [3]), ([3], [4]), ([2, 4], [5])], [0], [5]
    )
    bound = lower_bound(graph)
    assert recheck(graph, bound)
    inflated = LowerBound(bound.bytes + 1, bound.kind, bound.witness)
    assert not recheck(graph, inflated)
    with pytest.raises(FrozenInstanceError):
        bound.bytes = 0  # type: ignore[misc]


def test_empty_graph():
    graph = make_graph([4], [], [0], [0])  # no steps at all: memory.profile's peak is 0
    assert profile(graph).peak_bytes == 0
    assert lower_bound(graph).bytes == 0


@pytest.mark.parametrize("path", shared_model_params())
def test_shared_models_bound_quickly(path):
    graph = read_model(path)
    problem = OrderingProblem(graph)
    started = time.perf_counter()
    bound = lower_bound(problem)  # no orders to prune with: every single cut, pairs to the end
    elapsed = time.perf_counter() - started
    assert elapsed < 1.0, f"{path.name}: {elapsed:.2f} s"
    assert bound.bytes <= peak_of(graph, tuple(range(len(graph.operators))))
    assert recheck(graph, bound)


# ---- stage bounds (exhaustive decisions between cut operators) ------------------------------------


def _stages(problem: OrderingProblem, order: list[int]) -> list[tuple[int, int]]:
    """(start, ops) masks of the stretches of `order` between cut operators."""
    from tinysched.order.scheduler import cut_operators

    position = {v: i for i, v in enumerate(order)}
    edges = sorted({0, len(order), *(position[c] + 1 for c in cut_operators(problem))})
    return [
        (sum(1 << v for v in order[:lo]), sum(1 << v for v in order[lo:hi]))
        for lo, hi in zip(edges, edges[1:], strict=False)
        if hi > lo
    ]


@pytest.mark.parametrize("backward", [False, True, None])  # None: the decision picks
@pytest.mark.parametrize("seed", range(10))
def test_stage_bound_is_exact_and_rechecks(seed, backward):
    from random_dags import small_randwire

    from tinysched.order.scheduler import plain_downset_dp

    graph = small_randwire(seed, nodes=5 + seed % 3)
    problem = OrderingProblem(graph)
    optimum = plain_downset_dp(problem).peak_bytes
    order = list(plain_downset_dp(problem).order)
    steps = problem.step_profile(order)
    raised = False
    for start, ops in _stages(problem, order):
        # the stage's own optimum: the least cap under which it fits
        stage_peak = max(steps[start.bit_count() : start.bit_count() + ops.bit_count()])
        assert stage_bound(problem, start, ops, stage_peak, backward=backward) is None  # fits at its peak
        below = stage_bound(problem, start, ops, stage_peak - 1, backward=backward)
        if below is None:
            continue  # fits lower: the optimal order's stage is not at its own optimum
        assert below.kind == "stage_exhaustive"
        if backward is not None:
            assert below.witness["direction"] == ("backward" if backward else "forward")
        assert stage_peak - 1 < below.bytes <= optimum
        assert recheck(graph, below)
        assert not recheck(graph, LowerBound(below.bytes + 1, below.kind, below.witness))
        raised = raised or below.bytes == optimum
    assert raised  # the bottleneck stage proves the optimum


@pytest.mark.parametrize("seed", range(10))
def test_precedence_tree_on_small_randwire_meets_the_dp_optimum(seed):
    from random_dags import small_randwire

    from tinysched.order.scheduler import plain_downset_dp

    graph = small_randwire(seed, nodes=6 + seed % 4)
    problem = OrderingProblem(graph)
    optimum = plain_downset_dp(problem).peak_bytes
    order = list(range(problem.n_ops))  # the stored order
    tree = precedence_tree_bound(problem, order, problem.peak_bytes(order), max_nodes=2000)
    assert tree.bytes <= optimum
    assert recheck(graph, tree)
    tampered = {**tree.witness, "tree": {"split": [0, 0], "children": [{"op": 0}, {"op": 0}]}}
    assert not recheck(graph, LowerBound(1, tree.kind, tampered))  # a split must name two operators


@pytest.mark.parametrize("seed", [0, 6, 7, 10, 13])
def test_precedence_tree_proves_what_a_pair_cannot(seed):
    from random_dags import small_randwire

    from tinysched.order.scheduler import plain_downset_dp

    graph = small_randwire(seed, nodes=6 + seed % 4)
    problem = OrderingProblem(graph)
    optimum = plain_downset_dp(problem).peak_bytes
    assert lower_bound(problem).bytes < optimum  # single and pair cuts fall short
    tree = precedence_tree_bound(problem, list(range(problem.n_ops)), optimum, max_nodes=2000)
    assert tree.bytes == optimum and recheck(graph, tree)


def test_stage_bound_refuses_a_stretch_that_is_not_a_stage():
    graph = make_graph([8, 8, 8, 8], [([0], [1]), ([0], [2]), ([1, 2], [3])], [0], [3])
    problem = OrderingProblem(graph)
    with pytest.raises(ValueError, match="not a stage"):
        stage_bound(problem, 0, 0b001, 100)  # op 1 may run before op 0's sibling
    fake = LowerBound(10**9, "stage_exhaustive", {"start_ops": [], "stage_ops": [1], "cap_bytes": 0})
    assert not recheck(graph, fake)


@pytest.mark.parametrize("seed", range(6))
def test_precedence_tree_holds_with_refined_step_savings(seed):
    # the refined memory model's overlaps (overlap.Refinement.step_savings): each single-input
    # operator that is its input's only reader saves half of it; the tree stays under that
    # model's optimum
    from random_dags import small_randwire

    from tinysched.order.scheduler import plain_downset_dp

    graph = small_randwire(seed, nodes=6 + seed % 3)
    savings = _savings(graph)
    assert savings
    problem = OrderingProblem(graph, savings)
    optimum = plain_downset_dp(problem).peak_bytes
    assert optimum <= plain_downset_dp(OrderingProblem(graph)).peak_bytes
    tree = precedence_tree_bound(problem, list(range(problem.n_ops)), optimum, max_nodes=2000)
    assert 0 < tree.bytes <= optimum


@pytest.mark.parametrize("seed", range(6))
def test_decisions_both_ways_are_exact_with_refined_step_savings(seed):
    # the same overlaps as above: a step costs less than its live bytes at those operators, and
    # the decisions (forward, and backward with its mirrored free move) still meet the DP optimum
    from random_dags import small_randwire

    from tinysched.order.layered import layered_search
    from tinysched.order.scheduler import plain_downset_dp

    graph = small_randwire(seed, nodes=6 + seed % 3)
    savings = _savings(graph)
    problem = OrderingProblem(graph, savings)
    optimum = plain_downset_dp(problem).peak_bytes
    for backward in (False, True):
        fits = layered_search(problem, 0, problem.full_mask, optimum, backward=backward)
        assert fits.order is not None and problem.peak_bytes(fits.order) == fits.peak_bytes <= optimum
        short = layered_search(problem, 0, problem.full_mask, optimum - 1, backward=backward)
        assert short.order is None and short.complete and short.floor_bytes == optimum


def test_precedence_tree_certificate_reads_as_a_sentence():
    from random_dags import small_randwire

    from tinysched.report.format import certificate_sentence

    graph = small_randwire(0, nodes=6)
    problem = OrderingProblem(graph)
    tree = precedence_tree_bound(problem, list(range(problem.n_ops)), 99)
    assert tree.bytes == 99  # the optimum (the pair bound reaches 82)
    certificate = {
        "kind": "lower_bound",
        "lower_bound_bytes": tree.bytes,
        "witness": {"bound": tree.kind, **tree.witness},
    }
    text = certificate_sentence(certificate, {})
    assert text.startswith("optimal: no order can need less, because splitting the orders")
    assert f"{tree.witness['leaves']:,} groups of orders" in text and "99 B" in text


# ---- cut networks of one stage ------------------------------------------------------------------


def _savings(graph) -> dict[int, tuple[int, int]]:
    """Refined-model style overlaps: each single-input operator that is its input's only reader
    saves half of it."""
    savings = {}
    for v, op in enumerate(graph.operators):
        inputs = list(op.input_tensors)
        if len(inputs) == 1 and graph.consumers.get(inputs[0], ()) == (v,) and inputs[0] in graph.producer:
            savings[v] = (inputs[0], graph.tensors[inputs[0]].nbytes // 2)
    return savings


@pytest.mark.parametrize("seed", range(8))
def test_stage_network_cuts_equal_the_whole_graphs(seed):
    # a stage's network (`within`) drops everything outside the stage; its conditioned cuts at the
    # stage's operators must be the whole graph's, under precedences too, in both memory models
    import random

    from random_dags import small_randwire

    graph = small_randwire(seed, nodes=5 + seed % 3, stages=3)
    rng = random.Random(seed)
    for problem in (OrderingProblem(graph), OrderingProblem(graph, _savings(graph))):
        order = problem.topological_order
        full = CutNetwork(problem)
        stages = [stage for stage in _stages(problem, order) if stage[1].bit_count() > 2]
        assert stages
        for start, ops in stages:
            net = CutNetwork(problem, within=(start, ops))
            members = [v for v in range(problem.n_ops) if ops >> v & 1]
            for w in members:
                assert net.conditioned_step(w) == full.conditioned_step(w) == full.op_bound(w)
            for _ in range(40):
                w, x, y = (rng.choice(members) for _ in range(3))
                pairs = [(a, b) for a, b in [tuple(rng.sample(members, 2))] if problem.incomparable(a, b)]
                mine, theirs = net.with_precedences(pairs), full.with_precedences(pairs)
                assert mine.conditioned_step(w, done=(x,), pending=(y,)) == theirs.conditioned_step(
                    w, done=(x,), pending=(y,)
                )
            later = next((v for v in range(problem.n_ops) if not (start | ops) >> v & 1), None)
            if later is not None:  # an operator after the stage is never done at a stage step
                assert net.conditioned_step(members[0], done=(later,)) is None


def test_stage_network_refuses_a_stretch_that_is_not_a_stage():
    graph = make_graph([8, 8, 8, 8], [([0], [1]), ([0], [2]), ([1, 2], [3])], [0], [3])
    with pytest.raises(ValueError, match="not a stage"):
        CutNetwork(OrderingProblem(graph), within=(0, 0b001))


@pytest.mark.parametrize("seed", range(10))
def test_precedence_tree_within_the_peak_stage_stays_under_the_optimum(seed):
    from random_dags import small_randwire

    from tinysched.order.scheduler import peak_stage, plain_downset_dp

    graph = small_randwire(seed, nodes=6 + seed % 4, stages=3)
    for problem, model in (
        (OrderingProblem(graph), None),
        (OrderingProblem(graph, _savings(graph)), "refined"),
    ):
        optimum = plain_downset_dp(problem).peak_bytes
        order = list(problem.stored_order)
        start, ops = peak_stage(problem, order)
        steps = problem.step_profile(order)
        assert steps.index(max(steps)) in range(start.bit_count(), start.bit_count() + ops.bit_count())
        whole = precedence_tree_bound(problem, order, problem.peak_bytes(order), max_nodes=400)
        tree = precedence_tree_bound(
            problem, order, problem.peak_bytes(order), max_nodes=400, within=(start, ops)
        )
        assert tree.bytes <= optimum
        assert set(tree.witness["tree"].get("split", [])) <= {v for v in range(problem.n_ops) if ops >> v & 1}
        if model is None:  # recheck works in the tensor model here (no refinement object)
            assert recheck(graph, tree)
            assert not recheck(graph, LowerBound(2 * problem.total_bytes, tree.kind, tree.witness))
        assert whole.bytes <= optimum


@pytest.mark.parametrize("seed", range(8))
def test_conditioned_cut_names_a_down_set_that_reaches_it(seed):
    # the precedence tree keeps each cut's down-set and skips the re-solve when a new precedence
    # leaves it legal: the down-set must be a legal one at w's step, cost exactly the cut, and a
    # precedence it obeys must leave the cut where it was
    import random

    from random_dags import small_randwire

    graph = small_randwire(seed, nodes=6 + seed % 3)
    rng = random.Random(seed)
    for problem in (OrderingProblem(graph), OrderingProblem(graph, _savings(graph))):
        net = CutNetwork(problem)
        pairs = [
            (a, b) for a in range(problem.n_ops) for b in range(problem.n_ops) if problem.incomparable(a, b)
        ]
        for w in range(problem.n_ops):
            done = tuple(rng.sample(range(problem.n_ops), 1)) if seed % 2 else ()
            found = net.conditioned_cut(w, done=done)
            assert (found is None) == (net.conditioned_step(w, done=done) is None)
            if found is None:
                continue
            value, downset = found
            assert value == net.conditioned_step(w, done=done)
            assert not downset >> w & 1 and all(downset >> v & 1 for v in (*problem.predecessors[w], *done))
            assert all(downset >> p & 1 for v in iter_bits(downset) for p in problem.predecessors[v])
            assert problem.step_bytes(downset, w) == value
            for a, b in rng.sample(pairs, min(len(pairs), 6)):
                if downset >> b & 1 and not downset >> a & 1 or b == w and not downset >> a & 1:
                    continue  # the down-set breaks a-before-b
                assert net.with_precedences([(a, b)]).conditioned_step(w, done=done) == value
