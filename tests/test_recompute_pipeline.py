"""Recomputation downstream: the arena places execution instances, the checker re-derives them, the
generated C runs the repeated calls, and the CLI reports what was recomputed.

Tiers: planning and the CLI always run; host builds need a C compiler; the QEMU test needs
qemu-system-arm and arm-none-eabi-gcc (skipped with the reason when missing, failed when
TINYSCHED_REQUIRE names `qemu`).
"""

from __future__ import annotations

import importlib.util
import json
import time
from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest
from helpers import generate_for_measure, host_verify, plan_for_codegen
from tiers import require

from tinysched.arena.check import check_plan
from tinysched.arena.placement import aligned_lower_bound, arena_buffers, plan_arena
from tinysched.build.host import compile_runner, run_runner, write_runner
from tinysched.build.sources import write_sources
from tinysched.cli import main
from tinysched.codegen import generate
from tinysched.device import reference
from tinysched.device.runner import measure_sources
from tinysched.device.verify import compare_outputs
from tinysched.errors import TinyschedError
from tinysched.memory.tensor import sequence_profile
from tinysched.model.modelgen import ModelBuilder
from tinysched.model.reader import parse_model
from tinysched.order.recompute import RecomputeRequest, plan_recompute

REPO = Path(__file__).resolve().parents[1]
PLAN_SECONDS = 1.5  # recompute search per model: the late-reuse models are proven well within it
QEMU_BOARD = "mps2-an386"


@cache
def _bench():
    spec = importlib.util.spec_from_file_location("bench_recompute", REPO / "bench" / "bench_recompute.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _model_file(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(_bench().LATE_REUSE_MODELS[name]())
    return path


def _chain_model() -> bytes:
    b = ModelBuilder(seed=5, description="a plain chain: nothing to recompute")
    t = b.input("input", (1, 12, 12, 4))
    for i in range(5):
        t = b.conv2d(t, 8 + 4 * (i % 2), (3, 3), activation="RELU", name=f"conv{i}")
        t = b.depthwise_conv2d(t, (3, 3), name=f"dw{i}")
    b.output(b.fully_connected(b.mean(t, (1, 2), keepdims=False), 4))
    return b.build()


def _request(k: int = 1) -> RecomputeRequest:
    return RecomputeRequest(k, time_limit=PLAN_SECONDS)


# ---- the arena places instances ------------------------------------------------------------------

ALL_LATE_REUSE = [
    "gen_gated_skip",
    "gen_long_skip",
    "gen_nested_skip",
    "gen_pyramid_head",
    "gen_deep_nested_skip",
]


@pytest.mark.parametrize("name", ALL_LATE_REUSE)
def test_recomputation_lowers_the_peak_and_the_arena_meets_the_instance_bound(name: str) -> None:
    graph = _bench().late_reuse_graph(name)
    rplan = plan_recompute(graph, 1, time_limit=PLAN_SECONDS)
    assert rplan.recomputed and rplan.peak_bytes < rplan.baseline_peak_bytes
    plan = plan_arena(graph, rplan.sequence)
    check_plan(graph, plan)
    assert plan.repeats and plan.order == rplan.sequence
    assert plan.peak_bytes == rplan.peak_bytes == sequence_profile(graph, rplan.sequence).peak_bytes
    bound = aligned_lower_bound(arena_buffers(graph, rplan.sequence, plan.alignment))
    assert plan.arena_bytes == plan.lower_bound_bytes == bound and plan.optimal
    baseline = plan_arena(graph, plan_recompute(graph, 0).sequence)
    assert plan.arena_bytes < baseline.arena_bytes
    # one buffer per instance: a recomputed operator's outputs have instances 0 and 1
    instances = {(p.index, p.instance) for p in plan.buffers}
    assert len(instances) == len(plan.buffers)
    for v in rplan.recomputed:
        for t in graph.operators[v].outputs:
            assert {(t, 0), (t, 1)} <= instances


def test_plain_orders_are_instance_zero_everywhere() -> None:
    graph = _bench().late_reuse_graph("gen_long_skip")
    order = plan_recompute(graph, 0).sequence
    plan = plan_arena(graph, order)
    check_plan(graph, plan)
    assert not plan.repeats and {p.instance for p in plan.buffers} == {0}
    assert plan.instance_offsets == {(t, 0): offset for t, offset in plan.offsets.items()}
    assert set(plan.buffers[0].as_json()) == {"index", "name", "offset", "bytes", "first_step", "last_step"}


def test_checker_catches_a_misplaced_instance() -> None:
    graph = _bench().late_reuse_graph("gen_nested_skip")
    rplan = plan_recompute(graph, 1, time_limit=PLAN_SECONDS)
    plan = plan_arena(graph, rplan.sequence)
    again = next(p for p in plan.buffers if p.instance == 1)
    # put the recomputed instance onto the graph input, which is live until the recomputation reads it
    source = plan.placement(graph.inputs[0])
    moved = replace(
        plan, buffers=tuple(replace(p, offset=source.offset) if p == again else p for p in plan.buffers)
    )
    with pytest.raises(TinyschedError, match="instance 1"):
        check_plan(graph, moved)
    dropped = replace(plan, buffers=tuple(p for p in plan.buffers if p != again))
    with pytest.raises(TinyschedError, match="unplaced: .*instance 1"):
        check_plan(graph, dropped)
    with pytest.raises(TinyschedError, match="sequence is not valid"):
        plan_arena(graph, (1, *rplan.sequence))


# ---- generated C: host ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["gen_gated_skip", "gen_nested_skip", "gen_pyramid_head"])
def test_host_build_with_recomputation_is_bit_exact(tmp_path: Path, name: str) -> None:
    require("host")
    path = _model_file(tmp_path, name)
    result = host_verify(path, n_inputs=4, recompute=_request())
    assert result.outputs_match, result.mismatches
    rplan = result.recompute
    assert rplan is not None and rplan.recomputed and rplan.peak_bytes < rplan.baseline_peak_bytes
    # recomputation is planned in the tensor model: it is compared with that model's plan
    assert result.arena_bytes < host_verify(path, n_inputs=1, memory_model="tensor").arena_bytes


def test_every_operator_run_twice_is_bit_exact(tmp_path: Path) -> None:
    """The whole network run twice (every operator repeated, CONCATENATION's pointer list included):
    the second pass reads only second-pass instances and the outputs come from the final ones."""
    require("host")
    path = _model_file(tmp_path, "gen_pyramid_head")
    graph, schedule, _ = plan_for_codegen(parse_model(path.read_bytes(), source=str(path)))
    sequence = tuple(schedule.order) * 2
    plan = plan_arena(graph, sequence)
    check_plan(graph, plan)
    module = generate(graph, plan)
    source = module.files[f"{module.prefix}.c"]
    assert source.count("recomputed, run 2") == len(graph.operators)
    sources = write_sources(module, tmp_path / "build")
    write_runner(module, sources, path.stem, graph.sha256)
    runner = compile_runner(sources)
    inputs = [list(s) for s in reference.random_inputs(path, 1, 3)]
    ours = run_runner(runner, module, inputs)
    theirs = [r.outputs for r in reference.run_reference_many(path, inputs)]
    assert compare_outputs(ours, theirs, ["out"] * len(graph.outputs)) == []


# ---- generated C: QEMU ---------------------------------------------------------------------------


def test_qemu_run_with_recomputation_is_bit_exact_and_uses_the_planned_arena(tmp_path: Path) -> None:
    require("qemu")
    path = _model_file(tmp_path, "gen_nested_skip")
    gen = generate_for_measure(path, tmp_path / "model", 2, recompute=_request())
    rplan = gen.recompute
    assert rplan is not None and rplan.peak_bytes < rplan.baseline_peak_bytes
    result = measure_sources(
        gen.sources, QEMU_BOARD, gen.inputs, gen.expected,
        gen.arena_bytes_planned, tmp_path / "fw",
        expected_steps=gen.expected_steps,
    )  # fmt: skip
    assert result.outputs_match is True and result.outputs_agree_on_device, result.mismatches
    graph, _, plan = plan_for_codegen(parse_model(path.read_bytes(), source=str(path)), recompute=_request())
    assert plan.order == rplan.sequence
    high_water = getattr(plan, "high_water_bytes", plan.arena_bytes)
    assert result.arena_bytes_measured == high_water
    assert result.arena_bytes_planned == plan.arena_bytes == rplan.peak_bytes


# ---- chains and the CLI ----------------------------------------------------------------------------


def test_chain_reports_no_gain_in_well_under_a_second(tmp_path: Path, capsys) -> None:
    graph = parse_model(_chain_model())
    started = time.perf_counter()
    rplan = plan_recompute(graph, 2)
    assert time.perf_counter() - started < 1.0
    assert rplan.recomputed == () and rplan.saving_bytes == 0 and rplan.extra_macs == 0
    path = tmp_path / "chain.tflite"
    path.write_bytes(_chain_model())
    started = time.perf_counter()
    assert main(["schedule", str(path), "--recompute", "2", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["recomputed"] == [] and report["extra_macs"] == 0 and report["extra_macs_percent"] == 0
    assert report["peak_bytes"] == report["baseline_peak_bytes"] and report["recompute_seconds"] < 1.0
    assert sorted(report["order"]) == list(range(len(graph.operators)))
    assert main(["schedule", str(path), "--recompute", "2"]) == 0
    assert "no gain" in capsys.readouterr().out
    assert time.perf_counter() - started < 5.0


def test_cli_json_reports_recomputed_operators(tmp_path: Path, capsys) -> None:
    path = _model_file(tmp_path, "gen_long_skip")
    limit = ["--time-limit", str(PLAN_SECONDS)]
    assert main(["schedule", str(path), "--recompute", "1", "--json", *limit]) == 0
    sched = json.loads(capsys.readouterr().out)
    assert main(["plan", str(path), "--recompute", "1", "--json", *limit]) == 0
    plan = json.loads(capsys.readouterr().out)
    for report in (sched, plan):
        order = report["order"]
        assert len(order) > len(set(order)) == sched["ops"]  # every operator, some more than once
        repeated = sorted({v for v in order if order.count(v) > 1})
        assert report["recomputed"] == repeated != []
        assert report["extra_macs"] > 0 and 0 < report["extra_macs_percent"] < 100
        assert report["peak_bytes"] < report["baseline_peak_bytes"]
    assert plan["arena_bytes"] == plan["arena_lower_bound_bytes"] and plan["order"] == sched["order"]
    # recomputation is planned in the tensor model, and the plan says so (the default is refined)
    assert plan["memory_model"] == "tensor" and plan["memory_model_asked"] == "refined"
    assert "--recompute plans in the tensor memory model" in plan["memory_model_note"]
    keys = {(t["index"], t["instance"]) for t in plan["tensors"]}
    assert len(keys) == len(plan["tensors"]) and any(i == 1 for _, i in keys)

    assert main(["plan", str(path), "--recompute", "1", *limit]) == 0
    text = capsys.readouterr().out
    assert "peak at k=0" in text and "with recompute=1" in text and "recomputed" in text
    assert "memory model tensor (every tensor its own bytes" in text
    assert "--recompute plans in the tensor memory model (asked: refined)" in text

    # a RAM budget the best order already meets needs no recomputation
    budget = str(sched["baseline_peak_bytes"])
    assert main(["schedule", str(path), "--recompute", "1", "--ram-budget", budget, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["recomputed"] == []
    assert main(["schedule", str(path), "--ram-budget", budget]) == 2
    assert "needs --recompute" in capsys.readouterr().err
    assert main(["schedule", str(path), "--recompute", "1", "-o", str(tmp_path / "x.tflite"), *limit]) == 2
    assert main(["plan", str(path), "--recompute", "1", "--tflm", "-o", str(tmp_path / "x.tflite")]) == 2


def test_cli_verify_and_build_take_the_flags(tmp_path: Path, capsys) -> None:
    require("host")
    path = _model_file(tmp_path, "gen_long_skip")
    assert main(["verify", str(path), "--recompute", "1", "--inputs", "2", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["outputs_match"] and report["recomputed"] and report["extra_macs"] > 0
    assert report["arena_bytes"] == report["peak_bytes"] < report["baseline_peak_bytes"]
    assert (
        report["memory_model"] == "tensor"
        and "--recompute plans in the tensor" in report["memory_model_note"]
    )
    out = tmp_path / "build"
    assert main(["build", str(path), "-o", str(out), "--recompute", "1", "--no-compile"]) == 0
    text = capsys.readouterr().out
    assert "with recompute=1" in text
    assert "--recompute plans in the tensor memory model (asked: refined)" in text
    doc = json.loads((out / "gen_long_skip_metadata.json").read_text())
    assert doc["schedule"]["memory_model"] == doc["summary"]["memory_model"] == "tensor"
    assert doc["build"]["plan_options"]["memory_model"] == "tensor"
    assert doc["schedule"]["memory_model_note"].startswith("--recompute plans in the tensor memory model")
    assert "recomputed, run 2" in (out / "gen_long_skip.c").read_text()
