"""Compile-time folding (tinysched/model/fold.py): shape subgraphs and all-constant operators vanish."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from helpers import host_verify, planned_model
from tiers import needs_gcc

from tinysched.memory.tensor import alias_saving
from tinysched.model.fold import fold_constants
from tinysched.model.modelgen import ModelBuilder
from tinysched.model.reader import parse_model


def shape_subgraph_model() -> bytes:
    """x -> SHAPE -> STRIDED_SLICE (batch) -> PACK([batch, -1]) -> RESHAPE's shape; plus a constant
    int8 vector RESHAPEd and TRANSPOSEd before it is added to the data, and int32 shape arithmetic."""
    b = ModelBuilder(seed=21)
    x = b.input("x", (1, 4, 6, 2))
    t = b.conv2d(x, 3, (3, 3), name="conv")
    (shape,) = b.op(
        "SHAPE",
        [t],
        [(4,)],
        schema.ShapeOptionsT(outType=schema.TensorType.INT32),
        output_dtypes=["int32"],
        name="shape",
    )
    begin = b.constant(np.array([0], dtype=np.int32), name="begin")
    end = b.constant(np.array([1], dtype=np.int32), name="end")
    stride = b.constant(np.array([1], dtype=np.int32), name="stride")
    (batch,) = b.op(
        "STRIDED_SLICE",
        [shape, begin, end, stride],
        [()],
        schema.StridedSliceOptionsT(shrinkAxisMask=1),
        name="batch",
    )
    # 4 * 6 computed from the shape too: SLICE the H and W entries, REDUCE_PROD them.
    hw_begin = b.constant(np.array([1], dtype=np.int32), name="hw_begin")
    hw_size = b.constant(np.array([2], dtype=np.int32), name="hw_size")
    (hw,) = b.op("SLICE", [shape, hw_begin, hw_size], [(2,)], schema.SliceOptionsT(), name="hw")
    axis0 = b.constant(np.array([0], dtype=np.int32), name="axis0")
    (pixels,) = b.op("REDUCE_PROD", [hw, axis0], [()], schema.ReducerOptionsT(keepDims=False), name="pixels")
    (flat,) = b.op(
        "PACK",
        [batch, pixels, b.constant(np.array(3, dtype=np.int32), name="c")],
        [(3,)],
        schema.PackOptionsT(valuesCount=3, axis=0),
        name="pack",
    )
    (r,) = b.op("RESHAPE", [t, flat], [(1, 24, 3)], schema.ReshapeOptionsT(), name="reshape")
    bias = b.constant(np.arange(-30, 30, 10, dtype=np.int8).reshape(3, 2), quant=(1 / 32, 0), name="bias")
    (bias_r,) = b.op(
        "RESHAPE",
        [bias, b.constant(np.array([2, 3], dtype=np.int32), name="s23")],
        [(2, 3)],
        schema.ReshapeOptionsT(),
        name="bias_reshape",
    )
    perm = b.constant(np.array([1, 0], dtype=np.int32), name="perm")
    (bias_t,) = b.op("TRANSPOSE", [bias_r, perm], [(3, 2)], schema.TransposeOptionsT(), name="bias_t")
    (bias_row,) = b.op(
        "RESHAPE",
        [bias_t, b.constant(np.array([1, 1, 6], dtype=np.int32), name="s116")],
        [(1, 1, 6)],
        schema.ReshapeOptionsT(),
        name="bias_row",
    )
    r2 = b.reshape(r, (1, 12, 6), name="pairs")
    y = b.add(r2, bias_row, name="add")
    b.output(y)
    return b.build()


def test_fold_removes_shape_subgraph_and_constant_operators() -> None:
    graph = parse_model(shape_subgraph_model(), source="fold.tflite")
    result = fold_constants(graph)
    folded = result.graph
    assert result.folded_types == {
        "RESHAPE": 2,
        "PACK": 1,
        "REDUCE_PROD": 1,
        "SHAPE": 1,
        "SLICE": 1,
        "STRIDED_SLICE": 1,
        "TRANSPOSE": 1,
    }
    assert [op.opcode for op in folded.operators] == ["CONV_2D", "RESHAPE", "RESHAPE", "ADD"]
    assert [graph.operators[v].opcode for v in result.operator_map] == [
        "CONV_2D",
        "RESHAPE",
        "RESHAPE",
        "ADD",
    ]
    assert "8 operator(s) folded" in result.summary()
    # The computed shape vector is now a constant of the RESHAPE, with the right value.
    reshape = folded.operators[1]
    assert folded.tensors[reshape.inputs[1]].data.tolist() == [1, 24, 3]
    row = folded.tensors[folded.operators[3].inputs[1]].data
    expected = np.arange(-30, 30, 10, dtype=np.int8).reshape(2, 3).T.reshape(1, 1, 6)
    assert row.dtype == np.int8 and np.array_equal(row, expected)
    # Nothing of the folded subgraph is left in the arena.
    assert all(folded.tensors[t].shape != (4,) for t in folded.activation_tensors)
    # A graph with nothing to fold comes back as is.
    again = fold_constants(folded)
    assert again.graph is folded and again.count == 0 and again.summary() == "no operators folded"


def test_the_pipeline_plans_the_folded_graph() -> None:
    graph = parse_model(shape_subgraph_model(), source="fold.tflite")
    planned = planned_model(graph)
    assert len(planned.graph.operators) == 4 and len(planned.arena.order) == 4
    assert planned.folding.count == 8 and planned.source is graph
    assert [graph.operators[planned.source_operator(v)].opcode for v in planned.arena.order] == [
        "CONV_2D",
        "RESHAPE",
        "RESHAPE",
        "ADD",
    ]


def test_graph_outputs_and_float_arithmetic_are_never_folded() -> None:
    b = ModelBuilder(seed=3)
    x = b.input("x", (1, 4))
    c = b.constant(np.array([1, 2], dtype=np.int32), name="c")
    (s,) = b.op(
        "SHAPE",
        [x],
        [(2,)],
        schema.ShapeOptionsT(outType=schema.TensorType.INT32),
        output_dtypes=["int32"],
        name="shape",
    )
    (y,) = b.op("ADD", [s, c], [(2,)], schema.AddOptionsT(), name="add_out")
    b.output(y)
    result = fold_constants(parse_model(b.build()))
    assert result.folded_types == {"SHAPE": 1}  # the ADD writes a graph output: it stays


def test_alias_saving_counts_reshape_copies() -> None:
    b = ModelBuilder(seed=4)
    x = b.input("x", (1, 8, 8, 1))
    t = b.conv2d(x, 4, (1, 1), name="conv")
    r = b.reshape(t, (1, 256), name="flat")
    y = b.fully_connected(r, 10, name="fc")
    b.output(y)
    graph = parse_model(b.build())
    saving = alias_saving(graph)
    # Tensor model: conv output and its reshaped copy are both live at the RESHAPE (256 + 256);
    # aliased, the peak is the conv's 64 + 256.
    assert saving.peak_bytes == 512
    assert saving.aliased_peak_bytes == 320 and saving.saving_bytes == 192
    assert [graph.operators[v].opcode for v in saving.operators] == ["RESHAPE"]
    assert saving.as_json()["saving_bytes"] == 192


@needs_gcc
@pytest.mark.host
def test_folded_model_is_bit_exact(tmp_path: Path) -> None:

    model = tmp_path / "fold.tflite"
    model.write_bytes(shape_subgraph_model())
    result = host_verify(model, n_inputs=3, seed=2, opt="-O1")
    assert result.reference == "BUILTIN_REF", result.fallback_reason
    assert result.outputs_match, result.mismatches


def test_plan_reports_folding_and_alias_saving(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from tinysched.cli import main

    model = tmp_path / "fold.tflite"
    model.write_bytes(shape_subgraph_model())
    assert main(["plan", str(model), "--time-limit", "1"]) == 0
    text = capsys.readouterr().out
    assert "8 operator(s) folded at compile time" in text
    assert "if reshapes aliased" not in text  # it would save 0 B here: no noise line
    assert main(["plan", str(model), "--json", "--time-limit", "1"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["folded_operators"] == 8 and len(payload["order"]) == 4
    assert set(payload["reshape_alias"]) == {"peak_bytes", "aliased_peak_bytes", "saving_bytes", "operators"}
