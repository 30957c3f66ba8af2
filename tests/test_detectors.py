"""Detectors whose operator versions BUILTIN_REF does not all register (issue 14, item 3).

SSD-like models (tests/detector_models.py: int8 backbone, RESIZE_BILINEAR, TILE v3, PACK,
STRIDED_SLICE, DEQUANTIZE and a float tail) used to be checked against the optimised kernels only,
which differ from the reference arithmetic: CONV_2D by one step on about one output in 500, DEQUANTIZE
in the last float bits. Now BUILTIN_REF runs them with TILE's version lowered (`reference.reference_copy`)
and tinysched is bit-exact with it; where only the optimised kernels can run a model, verify reports
the largest difference per output in quantisation steps; `verify.compare_intermediates` names the
first operator whose output differs.

Tiers: host (the interpreter); the host builds need gcc.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from detector_models import DETECTOR_MODELS, SSD_OPTIMISED_ONLY
from helpers import host_verify
from tiers import needs_gcc

from tinysched.device import reference
from tinysched.device.verify import compare_intermediates
from tinysched.model.modelgen import ModelBuilder
from tinysched.model.reader import parse_model

OPTIMISED = "BUILTIN_WITHOUT_DEFAULT_DELEGATES"


def _tile_model(dtype: str) -> bytes:
    b = ModelBuilder(seed=0)
    x = b.input("x", (1, 2, 3), dtype=dtype)
    multiples = b.constant(np.asarray([2, 1, 3], dtype=np.int32))
    (y,) = b.op("TILE", [x, multiples], [(2, 2, 9)], None, version=3)
    b.output(y)
    return b.build()


@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_tile_v3_runs_on_builtin_ref_as_v2_with_the_same_bytes(dtype: str) -> None:
    model = _tile_model(dtype)
    inputs = reference.random_inputs(model, 1, 2)
    ours = reference.run_reference_many(model, inputs)
    optimised = reference.run_reference_many(model, inputs, resolvers=[OPTIMISED])
    assert ours[0].resolver == "BUILTIN_REF" and ours[0].fallback_reason is None
    assert ours[0].version_lowering is not None and "TILE v3 run as v2" in ours[0].version_lowering
    for (x,), r, o in zip(inputs, ours, optimised, strict=True):
        assert np.array_equal(r.outputs[0], np.tile(x, (2, 1, 3)))
        assert r.outputs[0].tobytes() == o.outputs[0].tobytes()
    # Without the lowering, BUILTIN_REF cannot load the model at all.
    with pytest.raises(Exception, match="TILE' version '3'"):
        from ai_edge_litert.interpreter import Interpreter, OpResolverType

        Interpreter(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)


def test_reference_copy_leaves_models_without_such_versions_alone() -> None:
    model = DETECTOR_MODELS["ssd_like"]()
    lowered, note = reference.reference_copy(model)
    assert note is not None and note.startswith("BUILTIN_REF ran a copy: TILE v3 run as v2")
    again, none = reference.reference_copy(lowered)
    assert none is None and again == lowered
    assert [op.version for op in parse_model(lowered).operators if op.opcode == "TILE"] == [2]


def test_dequantize_optimised_kernel_departs_from_the_exact_product_the_reference_gives() -> None:
    """Reference (and ts_dequantize_s8_f32): float(double(scale) * (q - zp)), the correctly rounded
    product; the optimised kernel's float arithmetic differs on some bytes."""
    b = ModelBuilder(seed=0)
    scale, zp = 0.04062982276082039, 8
    x = b.input("x", (1, 256), scale=scale, zero_point=zp)
    b.output(b.dequantize(x))
    model = b.build()
    every = [np.arange(-128, 128, dtype=np.int8).reshape(1, 256)]
    ref = reference.run_reference(model, every).outputs[0].reshape(-1)
    opt = reference.run_reference(model, every, resolvers=[OPTIMISED]).outputs[0].reshape(-1)
    exact = (np.float64(np.float32(scale)) * (np.arange(-128, 128) - zp)).astype(np.float32)
    assert ref.tobytes() == exact.tobytes()
    # Off by rounding only: at most one ulp of the largest magnitude (not of each value: near zero
    # the optimised result loses more of its own ulps, as from q * scale - zp * scale).
    error = np.abs(opt.astype(np.float64) - exact.astype(np.float64))
    assert int((error > 0).sum()) > 0
    assert float(error.max()) <= float(np.spacing(np.float32(scale * (128 + zp))))


@needs_gcc
@pytest.mark.parametrize("name", sorted(DETECTOR_MODELS))
def test_detector_bit_exact_with_builtin_ref(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(DETECTOR_MODELS[name]())
    result = host_verify(path, n_inputs=4)
    assert result.reference == "BUILTIN_REF", result.fallback_reason
    assert result.version_lowering is not None and "TILE v3 run as v2" in result.version_lowering
    assert result.mismatches == [] and result.outputs_match
    assert result.step_differences is None


@needs_gcc
def test_intermediates_agree_with_the_reference_and_name_the_optimised_kernels_departure() -> None:
    model = DETECTOR_MODELS["ssd_like_align"]()
    ours = compare_intermediates(model, ("tinysched", "BUILTIN_REF"))
    assert ours.first is None and ours.differences == ()
    assert ours.compared >= 25 and any("TILE v3" in n for n in ours.notes)
    theirs = compare_intermediates(model, ("BUILTIN_REF", OPTIMISED))
    first = theirs.first
    assert first is not None
    assert (first.opcode, first.name, first.max_abs_diff, first.max_steps) == (
        "CONV_2D",
        "head/box",
        1.0,
        1.0,
    )
    # The first differing operator's inputs agree in both: it is where the arithmetic departs.
    graph = parse_model(model)
    inputs = [list(s) for s in reference.random_inputs(model, 0, 3)]
    runs = [
        reference.run_reference_many(model, inputs, resolvers=[r], preserve_all_tensors=True)
        for r in ("BUILTIN_REF", OPTIMISED)
    ]
    for t in graph.operators[first.operator].input_tensors:
        for a, b in zip(*runs, strict=True):
            assert a.tensors[t].tobytes() == b.tensors[t].tobytes()
    assert all(d.operator >= first.operator for d in theirs.differences)


@needs_gcc
def test_optimised_only_model_reports_differences_in_steps(tmp_path: Path) -> None:
    path = tmp_path / "ssd_optimised_only.tflite"
    path.write_bytes(SSD_OPTIMISED_ONLY())
    result = host_verify(path, n_inputs=6)
    assert result.reference == OPTIMISED
    assert "STRIDED_SLICE' version '5'" in (result.fallback_reason or "")
    graph = parse_model(path.read_bytes())
    corners = next(t for t in graph.tensors if t.name == "decode/corners").quantization.scale[0]
    rows = {row["name"]: row for row in result.step_differences or []}
    assert set(rows) == {"boxes", "scores/dequantize", "scores_with_corner"}
    assert rows["boxes"]["step"] == pytest.approx(corners)
    assert rows["scores/dequantize"]["step"] == 1 / 256
    assert rows["scores_with_corner"]["step"] is None  # boxes and scores packed: no single step
    for row in rows.values():
        if row["step"] is not None:
            assert row["max_steps"] == pytest.approx(row["max_abs_diff"] / row["step"])
            assert row["max_steps"] <= 2  # one-step rounding differences, not a wrong kernel
