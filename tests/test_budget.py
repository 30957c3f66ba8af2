"""The planning budget (tinysched.budget): the default --time-limit plans what a long one plans
wherever the long one is quick, whatever the machine's load, and says what a longer limit would try
where it falls short. No test here reads the clock for its verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import shared_model

from tinysched import budget as budget_module
from tinysched.arena.placement import PLACERS, Block, Problem
from tinysched.budget import Budget
from tinysched.model.modelgen import random_branching_model
from tinysched.model.reader import parse_model, read_model
from tinysched.pipeline import PlanOptions, plan


def _branching() -> bytes:
    # A model whose streamed plans need CP-SAT: about 0.2 s of solving on this machine, which the
    # fixed shares of the default limit never gave it (29,952 B, streams of a greedy placement)
    return random_branching_model(2, 12, (1, 24, 24, 8))


def _offsets(planned) -> list[tuple[int, int, int]]:
    return [(p.index, p.instance, p.offset) for p in planned.arena.buffers]


def test_default_limit_plans_the_long_limits_arena_on_a_generated_model() -> None:
    graph = parse_model(_branching(), source="branching")
    default, long = plan(graph), plan(graph, PlanOptions(time_limit=60.0))
    assert default.arena.arena_bytes == long.arena.arena_bytes == 23_040
    assert default.arena.optimal and default.shortfalls == ()
    assert _offsets(default) == _offsets(long) and default.run_order == long.run_order


def test_default_limit_plans_the_long_limits_arena_on_mcunet_vww_int8() -> None:
    graph = read_model(shared_model("mcunet_vww_int8"))
    planned = plan(graph, PlanOptions(io="int8"))
    # the fixed shares gave 38,400 B and one stream; --time-limit 19 and more 21,760 B, four streams
    assert planned.arena.arena_bytes == 21_760 and len(planned.streams_json()) == 4
    assert planned.shortfalls == ()


def test_stream_rounds_go_on_past_a_placement_above_its_bound() -> None:
    # With no time at all nothing but one greedy placer runs: the round with three streams places
    # in 38,400 B like the one with one (above its 26,272 B bound), and the rounds used to stop
    # there; the next round, four streams, places in 21,760 B even greedily.
    graph = read_model(shared_model("mcunet_vww_int8"))
    planned = plan(graph, PlanOptions(io="int8", time_limit=0.0))
    assert planned.arena.arena_bytes == 21_760 and len(planned.streams_json()) == 4


def test_a_loaded_machine_plans_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    # The budget's clock running three times as fast stands for a machine three times as slow:
    # allowances are work, so nothing but the wall-clock safety stop reads it.
    graph = parse_model(_branching(), source="branching")
    idle = plan(graph)

    class Loaded:
        start = budget_module.time.perf_counter()

        @classmethod
        def perf_counter(cls) -> float:
            import time

            return cls.start + 3.0 * (time.perf_counter() - cls.start)

    monkeypatch.setattr(budget_module, "time", Loaded)
    loaded = plan(graph)
    assert loaded.arena.arena_bytes == idle.arena.arena_bytes
    assert _offsets(loaded) == _offsets(idle) and loaded.run_order == idle.run_order


def test_cp_sat_is_limited_in_its_own_deterministic_time() -> None:
    # test_arena's interval graph in units: largest-first needs 5 units, CP-SAT proves 4
    blocks = (Block(3, 4, 4, 0), Block(3, 1, 1, 1), Block(1, 2, 4, 2), Block(1, 0, 2, 3))
    runs = [PLACERS["cp-sat"].run(Problem(blocks, 0, None, 1.0)) for _ in range(2)]
    assert runs[0] == runs[1] and runs[0].arena == 4 and runs[0].stopped is None
    assert 0 < runs[0].work < 1.0  # charged its deterministic time, in work seconds
    for allowance in (0.0, 1e-9):
        starved = PLACERS["cp-sat"].run(Problem(blocks, 0, None, allowance))
        assert starved.stopped == "limit" and starved.arena == 5


def test_budgets_flow_what_a_share_leaves() -> None:
    ledger = Budget(6.0)
    first = ledger.part(3)
    assert first.seconds == pytest.approx(2.0)
    first.spend(0.5)
    assert ledger.left == pytest.approx(5.5)
    assert ledger.part(2).seconds == pytest.approx(2.75)  # the first share's unused 1.5 s flowed on


def test_plan_says_what_a_longer_limit_would_try(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from tinysched.cli import main

    path = tmp_path / "branching.tflite"
    path.write_bytes(_branching())
    planned = plan(parse_model(path.read_bytes(), source=str(path)), PlanOptions(time_limit=0.0))
    assert planned.arena.arena_bytes > 23_040
    assert {s.stage for s in planned.shortfalls} >= {"cp-sat"}
    assert min(s.bound_bytes for s in planned.shortfalls) == 23_040
    assert main(["plan", str(path), "--time-limit", "0", "--json"]) == 0
    shortfalls = json.loads(capsys.readouterr().out)["time_limit_shortfalls"]
    assert shortfalls and all(s["bound_bytes"] < planned.arena.arena_bytes for s in shortfalls)
    assert main(["plan", str(path), "--time-limit", "0"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("time limit"))
    assert "a longer --time-limit (now 0 s) would run more cp-sat" in line
    assert "an arena down to 23,040 B may exist" in line
    assert main(["plan", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["time_limit_shortfalls"] == []
