"""Instructions per MAC per layer (issue 34): the build record's steps carry each operator's MACs,
shapes and kernel variant, measure's `per_operator` rows the count per MAC, and bench/bench_kernels.py
tables them against the per-layer targets. Checked on the demo model's host build (no QEMU: the
counts are given, the MACs and shapes are the planner's)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from types import SimpleNamespace

from helpers import host_build

from tinysched.commands.device import per_operator
from tinysched.model.modelgen import tiny_demo_model

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import bench_kernels as bench  # noqa: E402


def test_steps_carry_macs_shapes_and_kernels_and_per_operator_divides(tmp_path):
    demo = tmp_path / "demo.tflite"
    demo.write_bytes(tiny_demo_model())
    built = host_build(demo, tmp_path / "build", compile=False)
    record = json.loads(built.metadata.read_text())["build"]
    steps = record["steps"]
    assert sum(s["macs"] for s in steps) == record["macs"] > 0
    convs = [s for s in steps if s["type"] == "CONV_2D"]
    assert convs
    for s in convs:  # one MAC per weight use: output elements x kh x kw x in_c
        _, kh, kw, ci = s["filter_shape"]
        assert s["macs"] == math.prod(s["output_shape"]) * kh * kw * ci
        assert s["input_shape"][-1] == ci
    for s in steps:
        if s["type"] == "DEPTHWISE_CONV_2D":
            assert s["macs"] == math.prod(s["output_shape"]) * s["filter_shape"][1] * s["filter_shape"][2]
    chosen = {v["operator"]: v["kernel"] for v in record["kernel_variants"] + record["wide_kernels"]}
    assert {s["op"]: s["kernel_function"] for s in steps if s["kernel_function"]} == chosen
    counts = [3 * s["macs"] + 7 for s in steps]
    rows = per_operator(SimpleNamespace(step_counts=counts), record)
    assert [r["count"] for r in rows] == counts
    for r in rows:
        assert r["instructions_per_mac"] == (round(r["count"] / r["macs"], 3) if r["macs"] else None)

    lines = bench.report_lines(
        {"model": "demo", "board": "mps2-an500", "instructions": sum(counts), "outputs_match": True,
         "per_operator": rows}
    )  # fmt: skip
    table = [line for line in lines if line.startswith("| ") and not line.startswith(("| step", "| ---"))]
    assert len(table) == len(rows)
    for line, r in zip(table, rows, strict=True):
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[1] == r["type"] and cells[3] == f"{r['macs']:,}" and cells[4] == f"{r['count']:,}"
        target = bench.layer_target(r)
        if target is not None:  # 3 + 7 / MACs per MAC: over both targets
            assert cells[6] == f"<= {target}: missed"
        assert cells[7] == (r["kernel_function"] or "default")


def test_layer_targets_are_the_issues():
    conv = {"type": "CONV_2D", "filter_shape": [8, 3, 3, 4]}
    assert bench.layer_target(conv) == 1.3
    assert bench.layer_target({**conv, "filter_shape": [8, 1, 1, 4]}) == 1.3
    assert bench.layer_target({**conv, "filter_shape": [8, 10, 4, 1]}) is None  # KWS's first layer
    assert bench.layer_target({"type": "DEPTHWISE_CONV_2D", "filter_shape": [1, 3, 3, 8]}) == 4.0
    assert bench.layer_target({"type": "ADD", "filter_shape": None}) is None
    row = {"input_shape": [1, 8, 8, 4], "filter_shape": [8, 3, 3, 4], "output_shape": [1, 8, 8, 8]}
    assert bench.shape_text(row) == "1x8x8x4 * 3x3 -> 1x8x8x8"


def test_a_streamed_stage_lists_its_members_with_their_targets(tmp_path):
    from test_member_counts import _residual_stage

    from tinysched.model.modelgen import ModelBuilder

    b = ModelBuilder(seed=3)
    _residual_stage(b)
    path = tmp_path / "stage.tflite"
    b.save(path)
    built = host_build(path, tmp_path / "build", compile=False)
    record = json.loads(built.metadata.read_text())["build"]
    stage = next(s for s in record["steps"] if s.get("members"))
    assert [m["type"] for m in stage["members"]] == ["CONV_2D"] * 3 + ["ADD"] + ["CONV_2D"] * 3 + ["ADD"]
    assert [m["filter_shape"][1:3] for m in stage["members"] if m["type"] == "CONV_2D"] == [[3, 3]] * 5 + [
        [1, 1]
    ]
    for m in stage["members"]:  # the shapes of the member itself, as a step's row shows them
        assert m["output_shape"][-1] == (m["filter_shape"][0] if m["filter_shape"] else m["input_shape"][-1])
    # the members' counts: 1.0 per MAC for the 3x3s, 2.0 for the 1x1 (over its 1.3), 100 per ADD
    k = record["steps"].index(stage)
    member_counts = [
        {"step": k, "count": (m["macs"] or 1) * per, "calls": 6}
        for m, per in zip(stage["members"], [1, 1, 1, 100, 1, 1, 2, 100], strict=True)
    ]
    counts = [sum(c["count"] for c in member_counts) + 600 if s is stage else 1000 for s in record["steps"]]
    rows = per_operator(SimpleNamespace(step_counts=counts, member_counts=member_counts), record)
    assert [m["count"] for m in rows[k]["members"]] == [c["count"] for c in member_counts]
    lines = bench.report_lines(
        {"model": "stage", "board": "mps2-an500", "instructions": sum(counts), "outputs_match": True,
         "per_operator": rows}
    )  # fmt: skip
    table = [line for line in lines if line.startswith(f"| {k}.")]
    assert len(table) == 8
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in table]
    assert [c[6] for c in cells] == ["<= 1.3: met"] * 3 + [""] + ["<= 1.3: met"] * 2 + ["<= 1.3: missed", ""]
    assert all(c[7] == "in the stage, 6 calls" for c in cells)
    assert (
        f"per-layer targets: 5 met, 1 missed of 6 layers (6 inside streamed stages); missed: {k}.6" in lines
    )
    assert any(line.startswith(f"step {k}: members ") and "(gap 600:" in line for line in lines)
