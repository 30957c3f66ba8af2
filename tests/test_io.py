"""`--io int8`: int8 in place of float edges that are exactly a QUANTIZE / DEQUANTIZE (tinysched/model/interface.py)."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import numpy as np
import pytest
from tiers import needs_gcc, require

from tinysched.codegen.cgen import c_float32
from tinysched.device.reference import interface_inputs, reference_io
from tinysched.device.verify import verify
from tinysched.errors import TinyschedError
from tinysched.model.interface import IoEdge
from tinysched.model.modelgen import ModelBuilder
from tinysched.model.reader import read_model
from tinysched.pipeline import PlanOptions, generate, plan

IN_SCALE, IN_ZP = 1 / 50, 3


def _edge_model(path):
    """float32[1,8,8,16] -> QUANTIZE -> CONV 1x1 -> DEQUANTIZE -> float32, plus an int8 side output.
    Tensor model: the DEQUANTIZE step holds 1,024 + 4,096 B and the 64 B side output (a graph output,
    live to the end); without the edge operators the peak is 1,024 + 1,024 + 64 B."""
    b = ModelBuilder(seed=4)
    f = b.input("x", (1, 8, 8, 16), "float32")
    q = b.quantize(f, IN_SCALE, IN_ZP)
    c = b.conv2d(q, 16, (1, 1), activation="RELU")
    side = b.conv2d(c, 4, (1, 1), (2, 2))
    d = b.dequantize(b.conv2d(c, 16, (1, 1)))
    b.output(d, side)
    b.save(path)
    return path


@pytest.fixture(scope="module")
def edge_model(tmp_path_factory):
    return _edge_model(tmp_path_factory.mktemp("io") / "edge.tflite")


def _no_edge_model(path):
    """No edge qualifies: the float input is read by two QUANTIZEs, and the DEQUANTIZE's int8 input
    is itself a graph output."""
    b = ModelBuilder(seed=5)
    f = b.input("x", (1, 6, 6, 4), "float32")
    a = b.quantize(f, 1 / 40, 0, name="qa")
    c = b.quantize(f, 1 / 20, -5, name="qb")
    s = b.add(a, c)
    b.output(s, b.dequantize(s))
    b.save(path)
    return path


def test_int8_io_removes_the_edge_operators_and_their_float_tensors(edge_model):
    graph = read_model(edge_model)
    model = plan(graph, PlanOptions(time_limit=2.0, memory_model="tensor"))
    int8 = plan(graph, PlanOptions(time_limit=2.0, io="int8", memory_model="tensor"))
    edges = int8.interface.edges
    assert [(e.role, e.position, e.opcode, e.model_op) for e in edges] == [
        ("input", 0, "QUANTIZE", 0),
        ("output", 0, "DEQUANTIZE", 4),
    ]
    assert [e.removed_bytes for e in edges] == [4096, 4096]
    assert int8.interface.removed_bytes == 8192
    assert (edges[0].scale, edges[0].zero_point) == (np.float32(IN_SCALE), IN_ZP)
    # the planned graph's edges are the int8 tensors, the float ones are in no buffer of the arena
    assert int8.graph.inputs == (edges[0].tensor,) and int8.graph.outputs[0] == edges[1].tensor
    assert {int8.graph.tensors[t].dtype for t in (*int8.graph.inputs, *int8.graph.outputs)} == {"int8"}
    placed = {p.index for p in int8.arena.buffers}
    assert edges[0].model_tensor not in placed and edges[1].model_tensor not in placed
    assert edges[0].model_tensor in {p.index for p in model.arena.buffers}
    assert [op.opcode for op in int8.graph.operators] == ["CONV_2D"] * 3
    # arena: the float tensors' steps were the peak; now the convolutions' are
    assert model.arena.arena_bytes == 1024 + 4096 + 64
    assert int8.arena.arena_bytes == 1024 + 1024 + 64
    # the refined model (the default) gains the same: no float tensor left to overlap
    refined, refined_int8 = (
        plan(graph, PlanOptions(time_limit=2.0)),
        plan(graph, PlanOptions(time_limit=2.0, io="int8")),
    )
    assert refined_int8.arena.arena_bytes < refined.arena.arena_bytes <= model.arena.arena_bytes
    # operator indices reported are the model's
    assert sorted(int8.model_order(int8.run_order)) == [1, 2, 3]


def test_the_header_gives_the_int8_edges_with_their_quantisation(edge_model):
    planned = plan(read_model(edge_model), PlanOptions(time_limit=2.0, io="int8"))
    module = generate(planned, "edge")
    header = module.files["edge.h"]
    out_edge = planned.interface.edges[1]
    assert module.input_dtypes == ("int8",) and module.output_dtypes == ("int8", "int8")
    assert module.input_bytes == (1024,) and module.output_bytes == (1024, 64)
    assert "typedef int8_t edge_input0_t;" in header and "typedef int8_t edge_output0_t;" in header
    assert "#define EDGE_INPUT0_BYTES 1024u" in header
    assert f"#define EDGE_INPUT0_SCALE {c_float32(np.float32(IN_SCALE))}\n" in header
    assert f"#define EDGE_INPUT0_ZERO_POINT {IN_ZP}\n" in header
    assert f"#define EDGE_OUTPUT0_SCALE {c_float32(out_edge.scale)}\n" in header
    assert f"#define EDGE_OUTPUT0_ZERO_POINT {out_edge.zero_point}\n" in header
    notes = re.findall(r"/\* --io int8: model operator (\d+) \((\w+)\) removed; (.*) \*/", header)
    assert notes == [
        ("0", "QUANTIZE", "q = clamp(roundf(x / SCALE) + ZERO_POINT, -128, 127), x / SCALE in float32"),
        ("4", "DEQUANTIZE", "x = SCALE * (q - ZERO_POINT), in float32"),
    ]
    # the model's own interface: float in and out, no note
    own = generate(plan(read_model(edge_model), PlanOptions(time_limit=2.0)), "edge")
    assert own.input_dtypes == ("float32",) and "--io int8" not in own.files["edge.h"]


def test_reference_io_reads_the_int8_tensors_the_model_computes(edge_model):
    """The expected int8 output is what the removed DEQUANTIZE read: dequantised, it is the model's
    float output exactly; and the float input given to TFLite quantises back to the int8 input."""
    edges = plan(read_model(edge_model), PlanOptions(time_limit=1.0, io="int8")).interface.edges
    sets = interface_inputs(edge_model, edges, seed=2, count=3)
    assert sets[0][0].dtype == np.int8 and sets[0][0].min() == -128 and sets[0][0].max() == 127
    results, expected = reference_io(edge_model, edges, sets)
    out = edges[1]
    for result, outs in zip(results, expected, strict=True):
        assert outs[0].dtype == np.int8 and outs[0].shape == out.shape
        dequantised = (outs[0].astype(np.float32) - np.float32(out.zero_point)) * np.float32(out.scale)
        assert np.array_equal(dequantised, result.outputs[0])
        assert np.array_equal(outs[1], result.outputs[1])
    # an int8 input the float path cannot give back (a stale edge record): refused in one line
    wrong = replace(edges[0], zero_point=IN_ZP + 1)
    with pytest.raises(TinyschedError, match=r"^input set 0: TFLite's QUANTIZE \(model operator 0\)"):
        reference_io(edge_model, [wrong, edges[1]], [[np.full((1, 8, 8, 16), 127, np.int8)]])
    assert IoEdge.from_json(json.loads(json.dumps(edges[0].as_json()))) == edges[0]


@needs_gcc
def test_int8_io_is_bit_exact_on_the_host(edge_model):
    planned = plan(read_model(edge_model), PlanOptions(time_limit=2.0, io="int8"))
    result = verify(edge_model, planned, generate(planned), n_inputs=6, seed=1)
    assert result.outputs_match, result.mismatches
    assert result.reference == "BUILTIN_REF" and result.inputs == 6
    assert result.as_json()["io"]["mode"] == "int8" and len(result.as_json()["io"]["edges"]) == 2


@needs_gcc
def test_verify_command_with_int8_io_and_an_int8_input_file(edge_model, tmp_path, capsys):
    from tinysched.cli import main

    data = np.arange(1024, dtype=np.int64).reshape(1, 8, 8, 16) % 256 - 128
    np.save(tmp_path / "x.npy", data.astype(np.int8))
    argv = [
        "verify",
        str(edge_model),
        "--io",
        "int8",
        "--inputs",
        "2",
        "--input-file",
        str(tmp_path / "x.npy"),
    ]
    assert main([*argv, "--intermediates", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["outputs_match"] and payload["inputs"] == 3
    assert payload["intermediates"]["differences"] == []
    assert main(argv) == 0
    assert (
        "io          --io int8: 2 edge(s) changed, 8,192 B of float tensors removed"
        in capsys.readouterr().out
    )


@needs_gcc
def test_a_model_without_a_qualifying_edge_plans_as_usual(tmp_path, capsys):
    from tinysched.cli import main

    path = _no_edge_model(tmp_path / "none.tflite")
    graph = read_model(path)
    own = plan(graph, PlanOptions(time_limit=1.0))
    int8 = plan(graph, PlanOptions(time_limit=1.0, io="int8"))
    assert int8.interface.edges == () and int8.interface.mode == "int8"
    assert int8.graph.inputs == own.graph.inputs and int8.graph.outputs == own.graph.outputs
    assert int8.arena.arena_bytes == own.arena.arena_bytes
    result = verify(path, int8, generate(int8), n_inputs=3)
    assert result.outputs_match, result.mismatches
    assert main(["plan", str(path), "--io", "int8"]) == 0
    out = capsys.readouterr().out
    assert "io           --io int8: no edge qualifies" in out


def test_plan_lists_each_changed_edge(edge_model, capsys):
    from tinysched.cli import main

    assert main(["plan", str(edge_model), "--io", "int8", "--time-limit", "1"]) == 0
    lines = [line.strip() for line in capsys.readouterr().out.splitlines()]
    edges = [line for line in lines if line.startswith(("input 0:", "output 0:"))]
    assert edges[0].startswith(
        "input 0: model operator 0 (QUANTIZE) removed; int8[1, 8, 8, 16] scale 0.0199999996"
    )
    assert edges[1].startswith("output 0: model operator 4 (DEQUANTIZE) removed; int8[1, 8, 8, 16]")
    # the certificate names operators as the model numbers them (the planned graph lost operator 0)
    assert main(["plan", str(edge_model), "--io", "int8", "--memory-model", "tensor"]) == 0
    cert = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("certificate"))
    assert "operator 3 (CONV_2D) and operator 2 (CONV_2D)" in cert
    assert main(["plan", str(edge_model), "--io", "int8", "--json", "--time-limit", "1"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert [e["model_op"] for e in payload["io"]["edges"]] == [0, 4]
    assert payload["model_order"] and 0 not in payload["model_order"] and 4 not in payload["model_order"]
    assert main(["plan", str(edge_model), "--io", "int8", "--tflm", "-o", "x.tflite"]) == 2
    assert "--tflm cannot carry --io int8" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:  # argparse: "invalid choice", exit status 2
        main(["plan", str(edge_model), "--io", "float"])
    assert exit_.value.code == 2


def test_plan_options_refuse_an_unknown_io():
    with pytest.raises(TinyschedError, match=r"^--io must be one of model, int8, got 'uint8'$"):
        PlanOptions(io="uint8")


@pytest.mark.qemu
def test_measure_with_int8_io_on_qemu(edge_model, tmp_path, capsys):
    require("qemu")
    from tinysched.cli import main

    out = tmp_path / "build"
    argv = ["measure", str(edge_model), "--board", "mps2-an500", "--io", "int8", "--inputs", "2"]
    assert main([*argv, "-o", str(out), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["outputs_match"] is True and payload["ok"] is True
    assert payload["arena_bytes_measured"] == payload["arena_high_water_planned"] <= 1024 + 1024 + 64
    assert payload["io"]["mode"] == "int8" and [e["role"] for e in payload["io"]["edges"]] == [
        "input",
        "output",
    ]
    doc = json.loads(next(out.glob("*_metadata.json")).read_text())
    assert doc["build"]["plan_options"]["io"] == "int8" and doc["build"]["io"] == payload["io"]
    assert doc["model"]["io"] == payload["io"] and doc["model"]["inputs"][0]["dtype"] == "float32"


def test_report_says_which_edges_are_int8(edge_model, tmp_path):
    from tinysched.cli import main

    base = [str(edge_model), "--board", "nucleo-f767", "--no-build", "--no-tflm", "--no-recompute-tradeoff"]
    assert main(["report", *base, "--io", "int8", "-o", str(tmp_path / "int8.md")]) == 0
    row = next(x for x in (tmp_path / "int8.md").read_text().splitlines() if x.startswith("| interface |"))
    assert (
        "--io int8: input 0 int8 (scale 0.0199999996, zero point 3; model operator 0 QUANTIZE removed)" in row
    )
    assert "output 0 int8" in row and "model operator 4 DEQUANTIZE removed" in row
    assert main(["report", *base, "-o", str(tmp_path / "own.md")]) == 0
    assert "| interface | the model's own inputs and outputs |" in (tmp_path / "own.md").read_text()
