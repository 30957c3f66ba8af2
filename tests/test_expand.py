"""A 1x1 expansion computed into its depthwise by channel groups (tinysched/memory/expand.py, issue 33):
the pairs found, the scratch and the rows computed again by hand, the plan that takes them only
within --mac-budget, bit-exact against TFLite on the host (the pair alone, by a ring of rows, and as
a streamed stage's member, row by row) and on QEMU's mps2-an500 with the painted arena equal to the
plan."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import built_graph, saved_model, streamed_input_on_qemu
from stream_input_models import camera_head, expanding_head
from tiers import needs_gcc, require

from tinysched.codegen.lower_expand import grouped_filter
from tinysched.device.verify import verify
from tinysched.memory.expand import (
    EXPAND_OPCODE,
    expansion_of,
    expansion_pairs,
    fuse_expansions,
    macs_added,
    rows_computed,
    scratch_bytes,
)
from tinysched.memory.stream import operator_type, stream_of
from tinysched.model.reader import parse_model
from tinysched.model.rewrite import rewrite_graph
from tinysched.pipeline import PlanOptions, generate, plan


def _pairs():
    graph = rewrite_graph(built_graph(expanding_head)).graph
    return graph, expansion_pairs(graph)


def test_the_expansions_read_only_by_a_depthwise_are_found() -> None:
    graph, pairs = _pairs()
    names = [
        (graph.tensors[p.expand.outputs[0]].name, graph.tensors[p.depthwise.outputs[0]].name) for p in pairs
    ]
    assert names == [("expand1", "dw1"), ("expand2", "dw2")]
    # camera_head's 1x1 projects (16 -> 4 after a depthwise): no expansion read by a depthwise
    assert expansion_pairs(rewrite_graph(built_graph(camera_head)).graph) == []


def test_scratch_and_rows_computed_again_by_hand() -> None:
    graph, (first, second) = _pairs()
    # dw1: 3x3 stride 2 over 24 rows of 20 pixels, 12 rows of 10 out; groups of 4 channels
    assert scratch_bytes(graph, first) == (3 * 20 + 10) * 4
    # SAME at stride 2 over an even height pads the bottom only: output row r reads rows 2r..2r+2,
    # the last one 22..23: 11 * 3 + 2 rows computed for the 24 there are
    assert rows_computed(graph, first) == 35
    assert macs_added(graph, first) == (35 - 24) * 20 * 8 * 48
    # dw2: 7x7 stride 2 over 12 rows of 10 pixels, 6 out, pad top 2: rows [-2, 5), [0, 7), .. [8, 15)
    assert scratch_bytes(graph, second) == (7 * 10 + 5) * 4
    assert rows_computed(graph, second) == 5 + 7 + 7 + 7 + 6 + 4
    assert macs_added(graph, second) == (36 - 12) * 10 * 8 * 36


def test_fused_pair_is_one_windowed_operator_with_the_depthwise_geometry() -> None:
    graph, pairs = _pairs()
    fused = fuse_expansions(graph, pairs[:1])
    op = next(o for o in fused.graph.operators if o.opcode == EXPAND_OPCODE)
    assert expansion_of(op) == pairs[0]
    assert op.outputs == pairs[0].depthwise.outputs and op.inputs[0] == pairs[0].expand.inputs[0]
    assert operator_type(op) == "CONV_2D+DEPTHWISE_CONV_2D (by groups)"
    assert [r.kind for r in fused.rewrites] == ["expand"]
    assert fused.rewrites[0].removed_bytes == 24 * 20 * 48  # the expansion, never whole
    assert len(fused.graph.operators) == len(graph.operators) - 1


def test_grouped_filter_lays_each_group_out_whole() -> None:
    taps = np.arange(2 * 2 * 5).reshape(1, 2, 2, 5)  # [1, fh, fw, C]: tap t channel c = 5 t + c
    assert grouped_filter(taps, 2).tolist() == [
        0,
        1,
        5,
        6,
        10,
        11,
        15,
        16,
        2,
        3,
        7,
        8,
        12,
        13,
        17,
        18,
        4,
        9,
        14,
        19,
    ]


def _plan(mac_budget: float | None = None, arena_budget: int | None = None):
    options = PlanOptions(
        alignment=1,
        time_limit=2.0,
        stream_input=True,
        stream_mac_budget=mac_budget,
        arena_budget=arena_budget,
    )
    return plan(built_graph(expanding_head), options)


def test_the_plan_takes_a_pair_in_its_stage_only_within_the_mac_budget() -> None:
    # 10% of 482,280 MACs leaves no room for the stage member's 84,480: the stage keeps the
    # expansion's window (3 rows of 20 x 48 B), input 3 rows of 120 B, conv1 1 of 160, dw1 1 of 480
    default = _plan()
    assert default.arena.arena_bytes == 3 * 120 + 160 + 3 * 960 + 480 + 12 * 10 * 8
    assert default.stream_macs() == (0, 482_280)
    # 40%: the pair runs by groups of 2 in the stage, which now holds conv1's 3 rows for it and 140 B
    # of scratch; the 7x7 pair by groups of 4 on its own (no MACs added: each row computed once)
    planned = _plan(40)
    stage = next(s for op in planned.graph.operators if (s := stream_of(op)) is not None)
    assert [operator_type(m) for m in stage.operators] == [
        "CONV_2D",
        "CONV_2D+DEPTHWISE_CONV_2D (by groups)",
        "CONV_2D",
    ]
    assert stage.rows == (3, 3, 1) and stage.staged == (3 * 20 + 10) * 2
    assert stage.window_bytes == 3 * 120 + 3 * 160 + 480 + 140
    assert planned.arena.arena_bytes == stage.window_bytes + 12 * 10 * 8
    alone = [e for op in planned.graph.operators if (e := expansion_of(op)) is not None]
    assert [e.group for e in alone] == [4]
    assert planned.stream_macs() == ((35 - 24) * 20 * 8 * 48, 482_280)
    assert "1x1 expansions computed into their depthwise" in (planned.stream_macs_summary() or "")
    assert planned.input_streaming is not None and planned.input_streaming.streamed_arena_bytes == 2_420


def test_an_arena_budget_chooses_among_plans_with_and_without_the_pairs() -> None:
    # the fastest plan within the budget: one of an earlier round (its own pairs fused, or none),
    # generated against the graph it was planned on
    for budget, pairs in ((4_840, 0), (2_420, 2)):
        planned = _plan(40, arena_budget=budget)
        assert planned.arena.arena_bytes <= budget
        fused = [r for r in planned.rewriting.rewrites if r.kind == "expand"]
        assert len(fused) == pairs
        assert sorted(planned.model_order(planned.run_order)) == sorted(
            v for srcs in planned.operator_sources for v in srcs[:1]
        )
        generate(planned)


def test_without_stream_input_no_pair_is_fused() -> None:
    planned = plan(built_graph(expanding_head), PlanOptions(alignment=1, time_limit=2.0))
    assert not any(op.opcode == EXPAND_OPCODE for op in planned.graph.operators)


@needs_gcc
@pytest.mark.host
def test_bit_exact_on_the_host_alone_and_in_a_stage(tmp_path: Path) -> None:
    """The 3x3 pair as a stage member (row by row) and the 7x7 pair alone (a ring of rows), under
    ASan and UBSan, through the streamed entry."""
    path = saved_model(tmp_path / "model.tflite", expanding_head, seed=4)
    planned = plan(
        parse_model(path.read_bytes()), PlanOptions(time_limit=2.0, stream_input=True, stream_mac_budget=40)
    )
    module = generate(planned)
    text = module.files[f"{module.prefix}.c"]
    assert ".by_rows = 1" in text and ".by_rows = 0" in text
    result = verify(path, planned, module, n_inputs=3, seed=2, opt="-O1", sanitize=True)
    assert result.mismatches == [] and result.outputs_match


@pytest.mark.qemu
def test_measured_on_qemu_equal_to_the_plan(tmp_path: Path) -> None:
    require("qemu")
    path = saved_model(tmp_path / "model.tflite", expanding_head, seed=5)
    planned = plan(
        parse_model(path.read_bytes()), PlanOptions(time_limit=2.0, stream_input=True, stream_mac_budget=40)
    )
    assert any(op.opcode == EXPAND_OPCODE for op in planned.graph.operators)
    result = streamed_input_on_qemu(path, planned, tmp_path)  # bit-exact, high-water = plan
    # the plan's 2,420 B placed at 16-byte offsets: the stage's scratch after the 960 B output
    assert result.arena_bytes_measured == planned.arena.high_water_bytes == 2_432


def test_plan_text_and_json_name_the_pair_in_tflite_terms(tmp_path: Path, capsys) -> None:
    """`plan` names the fused pair as its two TFLite operators, never by tinysched's own opcode."""
    import json

    from tinysched.cli import main

    path = saved_model(tmp_path / "model.tflite", expanding_head, seed=4)
    assert main(["plan", str(path), "--stream-input", "--mac-budget", "40", "--time-limit", "2"]) == 0
    text = capsys.readouterr().out
    assert (
        main(["plan", str(path), "--stream-input", "--mac-budget", "40", "--time-limit", "2", "--json"]) == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert "CONV_2D+DEPTHWISE_CONV_2D (by groups)" in text
    assert [r["kind"] for r in doc["rewrites"]].count("expand") == 2
    assert EXPAND_OPCODE not in text + json.dumps(doc) and EXPAND_OPCODE.lower() not in text + json.dumps(doc)
