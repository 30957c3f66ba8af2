"""The exact decision's layer expansion in C (tinysched.native): the same states, floors and orders
as the numpy loop, built once into its cache, and numpy alone when it cannot be built."""

from __future__ import annotations

import os

import pytest
from random_dags import narrow_dag, random_dag, small_randwire
from tiers import require

from tinysched import native
from tinysched.bounds import OrderingProblem
from tinysched.layered import layered_search
from tinysched.scheduler import cut_operators, plain_downset_dp


@pytest.fixture
def fresh_native(tmp_path, monkeypatch):
    """native.downsets() as a first use in an empty cache; the process's own library afterwards."""
    monkeypatch.setenv("TINYSCHED_CACHE", str(tmp_path / "cache"))
    native.downsets.cache_clear()
    yield tmp_path / "cache"
    native.downsets.cache_clear()


def _decisions(problem: OrderingProblem, start: int, ops: int, caps: set[int]):
    for cap in sorted(caps):
        for dominance in (True, False):
            yield (
                cap,
                dominance,
                [
                    layered_search(
                        problem, start, ops, cap, dominance=dominance, max_states=200_000, use_native=c
                    )
                    for c in (False, True)
                ],
            )


@pytest.mark.parametrize("seed", range(40))
def test_c_decision_matches_numpy_on_random_graphs(seed):
    require("host")
    assert native.downsets() is not None
    graph = random_dag(seed, 6 + seed % 14) if seed < 30 else narrow_dag(seed, 70 + 20 * (seed % 10))
    problem = OrderingProblem(graph)
    optimum = plain_downset_dp(problem).peak_bytes if problem.n_ops <= 20 else None
    stored = problem.peak_bytes(problem.topological_order)
    caps = {stored, stored - 1, stored // 2, *(() if optimum is None else (optimum, optimum - 1))}
    for cap, dominance, (numpy_result, c_result) in _decisions(problem, 0, problem.full_mask, caps):
        assert c_result == numpy_result, (cap, dominance)
        if optimum is not None and numpy_result.complete:
            assert (numpy_result.order is not None) == (cap >= optimum)


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
    for cap, dominance, (numpy_result, c_result) in _decisions(problem, start, ops, {peak, peak - 1}):
        assert c_result == numpy_result, (cap, dominance)
        assert c_result.complete
        if c_result.order is None:
            assert cap < peak < c_result.floor_bytes + 1
        else:
            assert sorted(c_result.order) == sorted(order[lo:hi]) and c_result.peak_bytes <= cap
            graph.check_order(order[:lo] + list(c_result.order) + order[hi:])


def test_the_library_is_built_once_into_its_cache(fresh_native):
    require("host")
    assert native.downsets() is not None
    built = list(fresh_native.iterdir())
    assert [p.suffix for p in built] == [".so"] and built[0].name.startswith("downsets-")
    stamp = built[0].stat().st_mtime_ns
    native.downsets.cache_clear()
    assert native.downsets() is not None
    assert list(fresh_native.iterdir()) == built and built[0].stat().st_mtime_ns == stamp


@pytest.mark.parametrize("how", ["disabled", "failing compiler"])
def test_without_the_library_the_decision_runs_in_numpy(fresh_native, monkeypatch, how):
    if how == "disabled":
        monkeypatch.setenv("TINYSCHED_NATIVE", "0")
    else:
        monkeypatch.setenv("CC", "false")  # on PATH, and every compile fails
    assert native.downsets() is None
    assert not fresh_native.exists() or not any(fresh_native.iterdir())  # nothing half-written
    graph = random_dag(7, 12)
    problem = OrderingProblem(graph)
    optimum = plain_downset_dp(problem).peak_bytes
    found = layered_search(problem, 0, problem.full_mask, optimum)
    assert found.order is not None and found.peak_bytes == optimum
    short = layered_search(problem, 0, problem.full_mask, optimum - 1)
    assert short.complete and short.order is None and short.floor_bytes == optimum


def test_the_cache_path_names_source_compiler_and_flags(monkeypatch, tmp_path):
    monkeypatch.setenv("TINYSCHED_CACHE", str(tmp_path))
    gcc, cc = native.library_path("gcc"), native.library_path("cc")
    assert gcc.parent == tmp_path and gcc != cc
    monkeypatch.delenv("TINYSCHED_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert native.library_path("gcc").parent == tmp_path / "xdg" / "tinysched"
    assert os.path.basename(native.library_path("gcc")) == gcc.name
