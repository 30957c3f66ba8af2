"""The scheduler's loops in C (tinysched.order.native): the exact decision's layer expansion gives the
same states, floors and orders as the numpy loop (forward and backward), the precedence tree the same kind of bound as
the Python tree (never above the optimum, rechecked with OR-Tools); the library is built once into
its cache, and Python alone runs when it cannot be built."""

from __future__ import annotations

import os

import pytest
from random_dags import narrow_dag, random_dag, small_randwire
from tiers import require

from tinysched.order import native
from tinysched.order.bounds import LowerBound, OrderingProblem, lower_bound, precedence_tree_bound, recheck
from tinysched.order.layered import layered_search
from tinysched.order.scheduler import cut_operators, peak_stage, plain_downset_dp


@pytest.fixture
def fresh_native(tmp_path, monkeypatch):
    """native.library() as a first use in an empty cache; the process's own library afterwards."""
    monkeypatch.setenv("TINYSCHED_CACHE", str(tmp_path / "cache"))
    native.library.cache_clear()
    yield tmp_path / "cache"
    native.library.cache_clear()


def _decisions(problem: OrderingProblem, start: int, ops: int, caps: set[int]):
    """(cap, dominance and direction, [numpy's result, C's result]) for each cap, both ways."""
    for cap in sorted(caps):
        for dominance in (True, False):
            for backward in (False, True):
                yield (
                    cap,
                    (dominance, backward),
                    [
                        layered_search(
                            problem,
                            start,
                            ops,
                            cap,
                            dominance=dominance,
                            max_states=200_000,
                            use_native=c,
                            backward=backward,
                        )
                        for c in (False, True)
                    ],
                )


def equivalence_graph(seed: int):
    """The sweep's graph for `seed`: random DAGs of 6-19 operators below 30, chains with dead ends of
    70-250 operators from 30 on (bench/bench_equivalence.py runs seeds 0-39 and more)."""
    return random_dag(seed, 6 + seed % 14) if seed < 30 else narrow_dag(seed, 70 + 20 * (seed % 10))


def check_c_decision_matches_numpy(seed: int) -> int:
    """C and numpy decide every cap alike (states, floors, orders); returns the decisions compared."""
    problem = OrderingProblem(equivalence_graph(seed))
    optimum = plain_downset_dp(problem).peak_bytes if problem.n_ops <= 20 else None
    stored = problem.peak_bytes(problem.topological_order)
    caps = {stored, stored - 1, stored // 2, *(() if optimum is None else (optimum, optimum - 1))}
    compared = 0
    for cap, how, (numpy_result, c_result) in _decisions(problem, 0, problem.full_mask, caps):
        assert c_result == numpy_result, (seed, cap, how)
        if optimum is not None and numpy_result.complete:
            assert (numpy_result.order is not None) == (cap >= optimum)
        compared += 1
    return compared


# The suite samples the sweep: every small graph and the two shortest chains (70 and 90 operators);
# the longer chains (110-250 operators, about 3 minutes) run in bench/bench_equivalence.py.
@pytest.mark.parametrize("seed", [*range(30), 30, 31])
def test_c_decision_matches_numpy_on_random_graphs(seed):
    require("host")
    assert native.library() is not None
    assert check_c_decision_matches_numpy(seed) > 0


def test_c_decision_matches_numpy_on_a_randwire_stage_after_its_start():
    require("host")
    graph = small_randwire(5, nodes=14, stages=2)
    problem = OrderingProblem(graph)
    order = list(plain_downset_dp(problem, max_states=200_000).order or problem.topological_order)
    # the second stage: after the first cut operator, with the first stage's tensors resident
    lo = min(order.index(c) + 1 for c in cut_operators(problem) if 2 < order.index(c) + 1 < len(order) - 8)
    hi = min(
        (order.index(c) + 1 for c in cut_operators(problem) if order.index(c) + 1 > lo + 8),
        default=len(order),
    )
    start, ops = sum(1 << v for v in order[:lo]), sum(1 << v for v in order[lo:hi])
    peak = max(problem.step_profile(order)[lo:hi])
    for cap, how, (numpy_result, c_result) in _decisions(problem, start, ops, {peak, peak - 1}):
        assert c_result == numpy_result, (cap, how)
        assert c_result.complete
        if c_result.order is None:
            assert cap < peak < c_result.floor_bytes + 1
        else:
            assert sorted(c_result.order) == sorted(order[lo:hi]) and c_result.peak_bytes <= cap
            graph.check_order(order[:lo] + list(c_result.order) + order[hi:])


def _leaves(tree: dict) -> list[dict]:
    stack, leaves = [tree], []
    while stack:
        node = stack.pop()
        if "split" in node:
            stack.extend(node["children"])
        else:
            leaves.append(node)
    return leaves


@pytest.mark.parametrize("seed", range(12))
def test_c_tree_bounds_like_the_python_tree(seed):
    require("host")
    assert native.library() is not None
    graph = small_randwire(seed, nodes=6 + seed % 5) if seed % 2 else random_dag(seed, 8 + seed)
    problem = OrderingProblem(graph)
    optimum = plain_downset_dp(problem).peak_bytes
    order = list(problem.stored_order)
    for target, nodes in ((optimum, 2000), (problem.peak_bytes(order), 7), (10**12, 40)):
        trees = [
            precedence_tree_bound(problem, order, target, max_nodes=nodes, use_native=c)
            for c in (False, True)
        ]
        for tree in trees:
            assert tree.kind == "precedence_tree" and tree.witness["nodes"] <= nodes
            assert tree.bytes <= optimum and recheck(graph, tree)
            assert len(_leaves(tree.witness["tree"])) == tree.witness["leaves"]
        if target == optimum:  # both close the gap the pair cuts leave, or neither
            assert (trees[0].bytes == optimum) == (trees[1].bytes == optimum)
    c_tree = trees[1]
    assert precedence_tree_bound(problem, order, 10**12, max_nodes=40) == c_tree  # deterministic
    assert not recheck(graph, LowerBound(optimum + 1, c_tree.kind, c_tree.witness))


def _depth(tree: dict) -> int:
    deepest, stack = 0, [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if "split" in node:
            stack.extend((child, depth + 1) for child in node["children"])
    return deepest


def test_trees_stop_at_their_depth_cap_and_the_witness_serialises(monkeypatch):
    import json

    from tinysched.order import bounds

    require("host")
    graph = small_randwire(0, nodes=6)
    problem = OrderingProblem(graph)
    order = list(problem.stored_order)
    deep = [precedence_tree_bound(problem, order, 10**12, max_nodes=400, use_native=c) for c in (False, True)]
    cap = bounds.TREE_MAX_DEPTH
    monkeypatch.setattr(bounds, "TREE_MAX_DEPTH", 2)
    for c, unbounded in zip((False, True), deep, strict=True):
        tree = precedence_tree_bound(problem, order, 10**12, max_nodes=400, use_native=c)
        assert _depth(unbounded.witness["tree"]) > 2
        assert _depth(tree.witness["tree"]) == 2 and recheck(graph, tree)
        assert tree.bytes <= unbounded.bytes
    # a witness as deep as the cap, inside a metadata document, is still JSON
    node = leaf = {}
    for _ in range(cap):
        leaf["split"], leaf["children"] = [0, 1], [{"op": 0, "cut_bytes": 1}, {}]
        leaf = leaf["children"][1]
    leaf.update({"op": 0, "cut_bytes": 1})
    doc = {"schedule": {"certificate": {"witness": {"bound": "precedence_tree", "tree": node}}}}
    assert json.loads(json.dumps(doc, indent=2)) == doc


def test_c_tree_bounds_a_stage_wider_than_the_c_decisions():
    # 300 operators: the decisions stay in numpy (at most 256), the tree does not
    require("host")
    graph = narrow_dag(3, 300)
    problem = OrderingProblem(graph)
    cuts = lower_bound(problem, pairs=False).bytes
    order = list(problem.stored_order)
    tree = precedence_tree_bound(problem, order, problem.peak_bytes(order), max_nodes=300)
    assert cuts <= tree.bytes and recheck(graph, tree)
    below = layered_search(problem, 0, problem.full_mask, tree.bytes - 1, max_states=2_000_000)
    assert below.complete and below.order is None  # no order peaks below the bound
    assert tree == precedence_tree_bound(problem, order, problem.peak_bytes(order), max_nodes=300)


def test_c_tree_proves_a_randwire_stage_the_pair_cuts_cannot():
    require("host")
    graph = small_randwire(6, nodes=14, stages=2)
    problem = OrderingProblem(graph)
    optimum = plain_downset_dp(problem, max_states=500_000).peak_bytes
    order = list(plain_downset_dp(problem, max_states=500_000).order)
    stage = peak_stage(problem, order)
    assert lower_bound(problem, orders=[order]).bytes < optimum
    tree = precedence_tree_bound(problem, order, optimum, within=stage)
    assert tree.bytes == optimum and recheck(graph, tree)
    ops = {v for v in range(problem.n_ops) if stage[1] >> v & 1}
    assert {leaf["op"] for leaf in _leaves(tree.witness["tree"])} <= ops


def test_the_library_is_built_once_into_its_cache(fresh_native):
    require("host")
    assert native.library() is not None
    built = list(fresh_native.iterdir())
    assert [p.suffix for p in built] == [".so"] and built[0].name.startswith("tinysched-")
    stamp = built[0].stat().st_mtime_ns
    native.library.cache_clear()
    assert native.library() is not None
    assert list(fresh_native.iterdir()) == built and built[0].stat().st_mtime_ns == stamp


@pytest.mark.parametrize("how", ["disabled", "failing compiler"])
def test_without_the_library_the_decision_and_the_tree_run_in_python(fresh_native, monkeypatch, how):
    if how == "disabled":
        monkeypatch.setenv("TINYSCHED_NATIVE", "0")
    else:
        monkeypatch.setenv("CC", "false")  # on PATH, and every compile fails
    assert native.library() is None
    assert not fresh_native.exists() or not any(fresh_native.iterdir())  # nothing half-written
    graph = random_dag(7, 12)
    problem = OrderingProblem(graph)
    optimum = plain_downset_dp(problem).peak_bytes
    found = layered_search(problem, 0, problem.full_mask, optimum)
    assert found.order is not None and found.peak_bytes == optimum
    short = layered_search(problem, 0, problem.full_mask, optimum - 1)
    assert short.complete and short.order is None and short.floor_bytes == optimum
    tree = precedence_tree_bound(problem, list(problem.stored_order), optimum, max_nodes=200)
    assert tree.bytes <= optimum and recheck(graph, tree)


def test_the_cache_path_names_source_compiler_and_flags(monkeypatch, tmp_path):
    monkeypatch.setenv("TINYSCHED_CACHE", str(tmp_path))
    gcc, cc = native.library_path("gcc"), native.library_path("cc")
    assert gcc.parent == tmp_path and gcc != cc
    monkeypatch.delenv("TINYSCHED_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert native.library_path("gcc").parent == tmp_path / "xdg" / "tinysched"
    assert os.path.basename(native.library_path("gcc")) == gcc.name
