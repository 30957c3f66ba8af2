"""Reader: real models load with the right structure; corrupt files end in one clear error."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from conftest import shared_manifest, shared_model, shared_model_params
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tflite_edit import broken, diamond_model, pack

from tinysched.errors import TinyschedError
from tinysched.memory.tensor import profile
from tinysched.model.reader import parse_model, read_model

# ---- real models ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", shared_model_params())
def test_shared_model_matches_manifest(path: Path) -> None:
    graph = read_model(path)
    row = shared_manifest().get(path.stem)
    if row is None:
        pytest.skip(f"{path.stem} not in MANIFEST.tsv")
    assert len(graph.operators) == int(row["num_operators"])
    expected_types = dict(item.split(":") for item in row["operator_types"].split(","))
    assert graph.op_types == {k: int(v) for k, v in expected_types.items()}
    input_shape, input_dtype = row["input_shape_dtype"].split(":")
    first_input = graph.tensors[graph.inputs[0]]
    assert "x".join(map(str, first_input.shape)) == input_shape
    assert first_input.dtype == input_dtype
    assert len(graph.sha256) == 64 and graph.sha256 == row["sha256"]


def test_constants_quantisation_and_options_of_a_real_model() -> None:
    graph = read_model(shared_model("mlperf_ic_resnet8_int8"))
    conv = graph.operators[0]
    assert conv.opcode == "CONV_2D"
    assert conv.options["padding"] == "SAME"
    assert conv.options["fused_activation_function"] == "RELU"
    assert (conv.options["stride_w"], conv.options["stride_h"]) == (1, 1)
    weights = graph.tensors[conv.inputs[1]]
    assert weights.is_constant and weights.dtype == "int8"
    assert weights.data.shape == weights.shape == (16, 3, 3, 3)
    assert not weights.data.flags.writeable
    assert weights.quantization.per_channel and len(weights.quantization.scale) == 16
    assert weights.quantization.axis == 0
    bias = graph.tensors[conv.inputs[2]]
    assert bias.dtype == "int32" and bias.data.shape == (16,)
    assert graph.description == "MLIR Converted."
    assert "min_runtime_version" in graph.metadata


def test_variable_tensors_are_persistent_not_activations() -> None:
    graph = read_model(shared_model("tflm_keyword_svdf_int16"))
    state = [t for t in graph.tensors if t.is_variable]
    assert len(state) == 7  # one activation state per SVDF
    assert graph.persistent_bytes == sum(t.nbytes for t in state) == 10240
    assert not set(graph.activation_tensors) & {t.index for t in state}
    svdf = next(op for op in graph.operators if op.opcode == "SVDF")
    assert svdf.options["rank"] >= 1


def test_hand_built_model_structure() -> None:
    graph = parse_model(pack(diamond_model()), source="diamond.tflite")
    assert [op.opcode for op in graph.operators] == ["ADD", "ADD", "ADD"]
    assert graph.inputs == (0,) and graph.outputs == (3,)
    assert graph.activation_tensors == (0, 1, 2, 3)
    assert graph.weights_bytes == 16
    assert graph.consumers[0] == (0, 1)  # x read twice by op 0 counts once
    assert graph.predecessors[2] == frozenset({0, 1})
    assert graph.description == "diamond"


# ---- bad input -----------------------------------------------------------------------------------


def _drop_subgraphs(m: schema.ModelT) -> None:
    m.subgraphs = []


def _input_out_of_range(m: schema.ModelT) -> None:
    m.subgraphs[0].operators[1].inputs = [0, 99]


def _buffer_out_of_range(m: schema.ModelT) -> None:
    m.subgraphs[0].tensors[4].buffer = 42


def _two_producers(m: schema.ModelT) -> None:
    m.subgraphs[0].operators[1].outputs = [1]


def _cycle(m: schema.ModelT) -> None:
    m.subgraphs[0].operators[0].inputs = [0, 3]


def _unknown_opcode(m: schema.ModelT) -> None:
    m.operatorCodes[0].builtinCode = 9999


def _while_op(m: schema.ModelT) -> None:
    m.operatorCodes[0].builtinCode = schema.BuiltinOperator.WHILE
    m.operatorCodes[0].deprecatedBuiltinCode = schema.BuiltinOperator.WHILE


def _opcode_index_out_of_range(m: schema.ModelT) -> None:
    m.subgraphs[0].operators[2].opcodeIndex = 7


def _wrong_constant_size(m: schema.ModelT) -> None:
    m.buffers[1].data = np.arange(5, dtype=np.uint8)


BAD_MODELS = {
    "no subgraph": (_drop_subgraphs, "no subgraph"),
    "tensor index out of range": (_input_out_of_range, "input tensor index 99 out of range"),
    "buffer index out of range": (_buffer_out_of_range, "buffer index 42 out of range"),
    "two producers": (_two_producers, "has two producers, operators 0 and 1"),
    "cycle": (_cycle, "cycle"),
    "unknown opcode": (_unknown_opcode, "unknown builtin operator code 9999"),
    "control flow": (_while_op, "WHILE calls other subgraphs"),
    "opcode index": (_opcode_index_out_of_range, "operator code index 7 out of range"),
    "constant size": (_wrong_constant_size, "constant data is 5 bytes"),
}


@pytest.mark.parametrize("case", sorted(BAD_MODELS))
def test_structural_faults_name_problem_and_place(case: str) -> None:
    edit, expected = BAD_MODELS[case]
    with pytest.raises(TinyschedError, match=expected) as err:
        parse_model(broken(edit), source="bad.tflite")
    message = str(err.value)
    assert message.startswith("bad.tflite: ") and "\n" not in message


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", "empty file"),
        (b"\x10\x00", "truncated"),
        (b"\x00" * 4 + b"PK\x03\x04" + b"\x00" * 32, "file identifier"),
        (b"\xff\xff\xff\x7fTFL3" + b"\x00" * 8, "truncated: needs at least 2,147,483,651 bytes, file has 16"),
    ],
)
def test_not_a_model(data: bytes, expected: str) -> None:
    with pytest.raises(TinyschedError, match=expected):
        parse_model(data, source="x.tflite")


def test_every_truncation_of_a_model_fails_cleanly() -> None:
    data = pack(diamond_model())
    for cut in range(len(data)):
        try:
            parse_model(data[:cut], source="cut.tflite")
        except TinyschedError as err:
            assert str(err).startswith("cut.tflite: ")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tinysched.cli", *args], capture_output=True, text=True, timeout=120
    )


def test_cli_bad_file_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "model.tflite"
    bad.write_bytes(broken(_cycle))
    result = _cli("analyze", str(bad))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0] and "cycle" in lines[0]
    assert result.stdout == ""

    missing = _cli("analyze", str(tmp_path / "nope.tflite"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr


# ---- fuzzing -------------------------------------------------------------------------------------


def _fuzz_seeds() -> list[bytes]:
    seeds = [pack(diamond_model())]
    try:
        seeds.append(shared_model("tflm_hello_world_int8").read_bytes())
        seeds.append(shared_model("tflm_micro_speech_int8").read_bytes())
    except pytest.skip.Exception:
        pass
    return seeds


FUZZ_SEEDS = _fuzz_seeds()


@st.composite
def mutated_models(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(FUZZ_SEEDS)))
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["byte", "word", "truncate"]))
        pos = draw(st.integers(0, len(data) - 1))
        if kind == "byte":
            data[pos] = draw(st.integers(0, 255))
        elif kind == "word" and pos + 4 <= len(data):
            value = draw(st.sampled_from([0, 1, 0x7FFFFFFF, 0xFFFFFFFF, 0x80000000, len(data), 4]))
            data[pos : pos + 4] = value.to_bytes(4, "little")
        elif kind == "truncate":
            del data[max(pos, 8) :]
        if len(data) < 9:
            break
    return bytes(data)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_models())
def test_fuzzed_models_never_crash_or_hang(data: bytes) -> None:
    start = time.perf_counter()
    try:
        graph = parse_model(data, source="fuzz.tflite")
        profile(graph)  # a stored order that is not topological is refused with a reason, too
    except TinyschedError as err:
        assert str(err).startswith("fuzz.tflite: ") or "order" in str(err)
    assert time.perf_counter() - start < 2.0
