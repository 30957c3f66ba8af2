"""The isolated reference interpreter: real runs in a child process, the fallback when BUILTIN_REF
kills its process or lacks an op version, and one-line errors for everything else."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema

from tinysched.device.reference import (
    model_input_specs,
    random_inputs,
    run_reference,
    run_reference_many,
)
from tinysched.errors import TinyschedError
from tinysched.model.modelgen import ModelBuilder, tiny_demo_model

FALLBACK = "BUILTIN_WITHOUT_DEFAULT_DELEGATES"


@pytest.fixture(scope="module")
def demo() -> bytes:
    return tiny_demo_model()


def test_runs_demo_with_reference_kernels(demo: bytes) -> None:
    inputs = random_inputs(demo, seed=0, count=1)[0]
    result = run_reference(demo, inputs)
    assert result.resolver == "BUILTIN_REF" and result.fallback_reason is None
    (probabilities,) = result.outputs
    assert probabilities.dtype == np.int8 and probabilities.shape == (1, 10)
    details = {d["name"]: d for d in result.tensor_details}
    assert details["head/softmax"]["quantization"] == (1 / 256, -128)
    assert details["image"]["dtype"] == np.int8 and list(details["image"]["shape"]) == [1, 16, 16, 4]
    assert result.tensors is None


def test_many_input_sets_share_one_child_and_match_single_runs(demo: bytes, tmp_path: Path) -> None:
    sets = random_inputs(demo, seed=1, count=3)
    path = tmp_path / "demo.tflite"
    path.write_bytes(demo)
    many = run_reference_many(str(path), sets)
    assert [r.resolver for r in many] == ["BUILTIN_REF"] * 3
    single = run_reference(path, sets[2])
    assert np.array_equal(single.outputs[0], many[2].outputs[0])
    assert not np.array_equal(many[0].outputs[0], many[1].outputs[0])  # outputs depend on inputs


def test_preserved_intermediates_allow_independent_checks(demo: bytes) -> None:
    result = run_reference(demo, random_inputs(demo, 2, 1)[0], preserve_all_tensors=True)
    assert result.tensors is not None
    index = {d["name"]: d["index"] for d in result.tensor_details}
    merged = result.tensors[index["merge"]]
    parts = [result.tensors[index["a/project"]], result.tensors[index["b/conv"]]]
    assert np.array_equal(merged, np.concatenate(parts, axis=3))
    assert np.array_equal(result.tensors[index["head/softmax"]], result.outputs[0])


def _softmax_model(beta: float = 1.0, output_quant: tuple[float, int] | None = None) -> bytes:
    b = ModelBuilder(seed=0)
    x = b.input("x", (1, 4, 8))
    b.output(b.softmax(x, beta=beta, output_quant=output_quant))
    return b.build()


def test_an_identical_run_is_read_from_the_cache_without_a_child(
    demo: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TINYSCHED_REFERENCE_CACHE", str(tmp_path / "cache"))
    first, other = random_inputs(demo, seed=7, count=2)
    ran = run_reference(demo, first, preserve_all_tensors=True)
    assert len(list((tmp_path / "cache").glob("*.pkl"))) == 1
    # No interpreter can start now: the identical run still answers, from the cache, with the same
    # arrays; another input set or another resolver is a miss and needs the child.
    monkeypatch.setattr(sys, "executable", "/bin/false")
    again = run_reference(demo, first, preserve_all_tensors=True)
    assert again.resolver == ran.resolver == "BUILTIN_REF"
    assert np.array_equal(again.outputs[0], ran.outputs[0])
    assert again.tensors is not None and ran.tensors is not None
    assert all(np.array_equal(again.tensors[i], ran.tensors[i]) for i in ran.tensors)
    with pytest.raises(TinyschedError, match="reference interpreter failed"):
        run_reference(demo, other)
    with pytest.raises(TinyschedError, match="reference interpreter failed"):
        run_reference(demo, first, resolvers=(FALLBACK,))


def test_a_failed_run_is_never_stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TINYSCHED_REFERENCE_CACHE", str(tmp_path / "cache"))
    data = _softmax_model(beta=1e-9)  # BUILTIN_REF aborts on it (below)
    with pytest.raises(TinyschedError, match="BUILTIN_REF: killed by SIGABRT"):
        run_reference(data, random_inputs(data, 0, 1)[0], resolvers=("BUILTIN_REF",))
    assert not list((tmp_path / "cache").glob("*"))


def test_falls_back_when_builtin_ref_aborts() -> None:
    # The reference SOFTMAX's Prepare aborts (TFLITE_CHECK in QuantizeMultiplierGreaterThanOne) when
    # beta * input_scale * 2^26 <= 1; the optimised kernel accepts the same valid model.
    data = _softmax_model(beta=1e-9)
    inputs = random_inputs(data, 0, 1)[0]
    with pytest.raises(TinyschedError, match="BUILTIN_REF: killed by SIGABRT") as info:
        run_reference(data, inputs, resolvers=("BUILTIN_REF",))
    assert "\n" not in str(info.value)
    result = run_reference(data, inputs)
    assert result.resolver == FALLBACK
    assert result.fallback_reason is not None and "SIGABRT" in result.fallback_reason
    assert result.outputs[0].shape == (1, 4, 8)


def test_falls_back_when_builtin_ref_lacks_the_op_version() -> None:
    # The reference resolver registers STRIDED_SLICE only up to version 4 (and reference_copy does
    # not lower it): the optimised kernels run the model, and the result says why.
    b = ModelBuilder()
    x = b.input("x", (1, 2, 3, 2))
    consts = [b.constant(np.array(v, dtype=np.int32)) for v in ([0, 0, 1, 0], [1, 2, 3, 2], [1, 1, 1, 1])]
    b.output(*b.op("STRIDED_SLICE", [x, *consts], [(1, 2, 2, 2)], schema.StridedSliceOptionsT(), version=5))
    data = b.build()
    inputs = random_inputs(data, 0, 1)[0]
    result = run_reference(data, inputs)
    assert result.resolver == FALLBACK
    assert "STRIDED_SLICE' version '5'" in (result.fallback_reason or "")
    assert np.array_equal(result.outputs[0], inputs[0][:, :, 1:, :])


def test_builtin_ref_runs_tile_v3_as_v2() -> None:
    # BUILTIN_REF registers TILE only up to version 2; int8 TILE is version 3, which computes the same.
    b = ModelBuilder()
    x = b.input("x", (1, 2, 3, 2))
    multiples = b.constant(np.array([1, 2, 1, 2], dtype=np.int32), name="multiples")
    b.output(*b.op("TILE", [x, multiples], [(1, 4, 3, 4)], version=3))
    data = b.build()
    inputs = random_inputs(data, 0, 1)[0]
    result = run_reference(data, inputs)
    assert result.resolver == "BUILTIN_REF" and result.fallback_reason is None
    assert "TILE v3 run as v2" in (result.version_lowering or "")
    assert np.array_equal(result.outputs[0], np.tile(inputs[0], (1, 2, 1, 2)))


def test_invalid_softmax_quantisation_is_one_clear_error() -> None:
    # Wrong int8 SOFTMAX output quantisation does not abort: both resolvers refuse it in Prepare.
    data = _softmax_model(output_quant=(0.01, 0))
    with pytest.raises(TinyschedError) as info:
        run_reference(data, random_inputs(data, 0, 1)[0])
    message = str(info.value)
    assert "\n" not in message and message.startswith("reference interpreter failed: BUILTIN_REF:")
    assert "SOFTMAX" in message and f"{FALLBACK}:" in message and "zero_point" in message


def test_inputs_are_checked_before_running(demo: bytes) -> None:
    good = random_inputs(demo, 0, 1)[0]
    with pytest.raises(TinyschedError, match=r"input 'image': expected int8\[1, 16, 16, 4\], got float32"):
        run_reference(demo, [good[0].astype(np.float32)])
    with pytest.raises(TinyschedError, match="has 2 arrays but the model has 1 inputs"):
        run_reference(demo, [good[0], good[0]])
    with pytest.raises(TinyschedError, match="cannot read model"):
        run_reference(Path("/nonexistent/model.tflite"), good)
    for garbage in (b"\x00" * 7, b"\x00" * 64):
        with pytest.raises(TinyschedError, match="not a readable TFLite flatbuffer"):
            run_reference(garbage, good)


def test_timeout_is_an_error(demo: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TINYSCHED_REFERENCE_CACHE", raising=False)  # the child itself must run
    with pytest.raises(TinyschedError, match=r"timed out after 0.01 s"):
        run_reference(demo, random_inputs(demo, 0, 1)[0], timeout_s=0.01)


def test_random_inputs_match_the_model_and_the_seed() -> None:
    b = ModelBuilder()
    q = b.input("q", (1, 3, 3, 2))
    f = b.input("f", (2, 5), dtype="float32")
    b.output(b.add(q, q), b.dequantize(b.quantize(f, 0.01, 0)))
    data = b.build()
    assert [(s.name, s.shape, s.dtype) for s in model_input_specs(data)] == [
        ("q", (1, 3, 3, 2), "int8"),
        ("f", (2, 5), "float32"),
    ]
    sets = random_inputs(data, seed=9, count=4)
    assert len(sets) == 4
    assert all(a.dtype == np.int8 and a.shape == (1, 3, 3, 2) for a, _ in sets)
    assert all(b.dtype == np.float32 and np.abs(b).max() <= 1.0 for _, b in sets)
    again = random_inputs(data, seed=9, count=4)
    assert all(
        np.array_equal(x, y) for s, t in zip(sets, again, strict=True) for x, y in zip(s, t, strict=True)
    )
    assert not np.array_equal(sets[0][0], sets[1][0])
    assert not np.array_equal(random_inputs(data, seed=10, count=1)[0][0], sets[0][0])
    results = run_reference_many(data, sets[:2])
    assert all(r.outputs[1].dtype == np.float32 for r in results)


def test_worker_without_arguments_prints_usage() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "tinysched.device.reference"], capture_output=True, text=True, check=False
    )
    assert run.returncode == 2 and "usage:" in run.stderr
