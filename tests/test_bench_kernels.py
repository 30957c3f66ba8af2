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
