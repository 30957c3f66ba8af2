"""UNIDIRECTIONAL_SEQUENCE_LSTM (TFLite's integer 8x8_16 path), bit for bit against BUILTIN_REF.

The two shared LSTM models (MNIST row-by-row classifier, DTLN noise suppression with two stacked
LSTMs) run several input sets in order through one runner, so their output and cell states evolve
across invokes exactly as in the interpreter. A generated model adds what those two do not cover:
time-major input, several batches, non-zero input and hidden zero points, cell state
scales 2^-15, 2^-11 and 2^-9 (the int16 tanh with 0, 4 and 6 integer bits) and an active cell clip.
The variants the kernel does not implement are refused in one line naming the option.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from conftest import shared_model
from helpers import host_verify, plan_for_codegen
from tiers import needs_gcc

from tinysched.codegen import check_supported
from tinysched.errors import TinyschedError
from tinysched.model.modelgen import ModelBuilder, TensorHandle
from tinysched.model.reader import parse_model

LSTM = "UNIDIRECTIONAL_SEQUENCE_LSTM"


def _variable(b: ModelBuilder, name: str, shape, dtype: str, quant) -> TensorHandle:
    t = b._tensor(name, shape, dtype, quant=quant)
    b._tensors[t.index].isVariable = True  # ModelBuilder has no variable tensors: set it here
    b._constant.add(t.index)  # available from the start, like a constant, for the order check
    return t


def _add_lstm(
    b: ModelBuilder,
    rng: np.random.Generator,
    x: TensorHandle,
    n_cell: int,
    *,
    time_major: bool,
    cell_log2: int,
    cell_clip: float,
    hidden: tuple[float, int],
    name: str,
    cifg: bool = False,
    peephole: bool = False,
    projection: bool = False,
) -> TensorHandle:
    """One integer LSTM on `x` ([batch, time, input] or [time, batch, input]) with
    random weights scaled so that the gates reach saturation on random inputs."""
    n_input = x.shape[-1]
    batches = x.shape[1] if time_major else x.shape[0]

    def weights(cols: int, scale: float, tag: str) -> TensorHandle:
        q = rng.integers(-127, 128, (n_cell, cols)).astype(np.int8)
        return b.constant(q, quant=(scale, 0), name=f"{name}_{tag}")

    w_scale = 10.0 / (n_input * 128 * 127 * x.scale)  # |input part| up to ~10 in Q3.12
    u_scale = 8.0 / (n_cell * 128 * 127 * hidden[0])
    in_w = [weights(n_input, w_scale * (0.6 + 0.2 * k), f"w{k}") for k in range(4)]
    rec_w = [weights(n_cell, u_scale * (0.5 + 0.25 * k), f"u{k}") for k in range(4)]
    biases = [
        b.constant(
            rng.integers(-3000, 3000, n_cell).astype(np.int32),
            quant=(x.scale * w_scale, 0),
            name=f"{name}_b{k}",
        )
        for k in range(4)
    ]
    peep = [None] * 3
    if peephole:
        peep = [
            b.constant(
                rng.integers(-100, 100, n_cell).astype(np.int16), quant=(1 / 1024, 0), name=f"{name}_p{k}"
            )
            for k in range(3)
        ]
    proj = [None, None]
    if projection:
        proj[0] = b.constant(rng.integers(-127, 128, (n_cell, n_cell)).astype(np.int8), quant=(1 / 64, 0))
    h_state = _variable(b, f"{name}_h", (batches, n_cell), "int8", hidden)
    c_state = _variable(b, f"{name}_c", (batches, n_cell), "int16", (2.0**cell_log2, 0))
    inputs = [
        x,
        None if cifg else in_w[0],
        *in_w[1:],
        None if cifg else rec_w[0],
        *rec_w[1:],
        *peep,
        None if cifg else biases[0],
        *biases[1:],
        *proj,
        h_state,
        c_state,
        None,
        None,
        None,
        None,
    ]
    options = schema.UnidirectionalSequenceLSTMOptionsT(
        fusedActivationFunction=schema.ActivationFunctionType.TANH,
        cellClip=cell_clip,
        projClip=0.0,
        timeMajor=time_major,
        asymmetricQuantizeInputs=False,
    )
    (y,) = b.op(LSTM, inputs, [(*x.shape[:-1], n_cell)], options, output_quant=hidden, name=name)
    gates = [b._tensor(f"{name}_gate{k}", (1,), "float32") for k in range(4)]
    hidden_t = b._tensor(f"{name}_hidden", (1,), "int8", quant=hidden)
    b._operators[-1].intermediates = [t.index for t in (*gates, hidden_t)]
    return y


def generated_lstms() -> bytes:
    b = ModelBuilder(seed=41)
    rng = np.random.default_rng(41)
    xa = b.input("xa", (3, 2, 5), scale=1 / 40, zero_point=7)  # time-major: 3 steps, 2 batches
    xb = b.input("xb", (2, 4, 6), scale=1 / 64, zero_point=-20)  # batch-major
    xc = b.input("xc", (2, 1, 7), scale=1 / 50, zero_point=0)  # one step
    ya = _add_lstm(
        b, rng, xa, 6, time_major=True, cell_log2=-11, cell_clip=1.5, hidden=(1 / 128, 3), name="a"
    )
    yb = _add_lstm(
        b, rng, xb, 4, time_major=False, cell_log2=-9, cell_clip=0.0, hidden=(1 / 100, -5), name="b"
    )
    yc = _add_lstm(
        b, rng, xc, 3, time_major=False, cell_log2=-15, cell_clip=0.5, hidden=(1 / 127, 0), name="c"
    )
    b.output(ya, yb, yc)
    return b.build()


def _variant(**kw) -> bytes:
    b = ModelBuilder(seed=42)
    rng = np.random.default_rng(42)
    x = b.input("x", (1, 2, 5), scale=1 / 40, zero_point=0)
    b.output(
        _add_lstm(
            b, rng, x, 4, time_major=False, cell_log2=-12, cell_clip=0.0, hidden=(1 / 128, 0), name="l", **kw
        )
    )
    return b.build()


@needs_gcc
@pytest.mark.host
@pytest.mark.parametrize("name", ["tflm_mnist_lstm_int8", "tflm_dtln_ns_int8"])
def test_shared_lstm_models_bit_exact_over_several_invokes(name: str) -> None:

    result = host_verify(shared_model(name), n_inputs=6, seed=11, opt="-O1")
    assert result.reference == "BUILTIN_REF", result.fallback_reason
    assert result.mismatches == [], result.mismatches[:3]
    assert result.outputs_match and result.inputs == 6


@needs_gcc
@pytest.mark.host
def test_generated_lstms_bit_exact_under_sanitizers(tmp_path: Path) -> None:

    model = tmp_path / "lstms.tflite"
    model.write_bytes(generated_lstms())
    result = host_verify(model, n_inputs=5, seed=7, opt="-O1", sanitize=True)
    assert result.reference == "BUILTIN_REF", result.fallback_reason
    assert result.mismatches == [], result.mismatches[:3]
    assert result.outputs_match and result.inputs == 5


def test_generated_lstms_saturate_their_gates() -> None:
    """The generated model is only a good test if its gates leave the linear range: check, through
    the interpreter, that the outputs reach both ends of the hidden range somewhere."""
    from tinysched.device import reference

    rng = np.random.default_rng(3)
    data = generated_lstms()
    inputs = [rng.integers(-128, 128, s).astype(np.int8) for s in ((3, 2, 5), (2, 4, 6), (2, 1, 7))]
    result = reference.run_reference(data, inputs)
    assert result.resolver == "BUILTIN_REF"
    spread = [int(out.max()) - int(out.min()) for out in result.outputs]
    assert all(s > 60 for s in spread), spread


@pytest.mark.parametrize(
    ("variant", "why"),
    [({"cifg": True}, "CIFG"), ({"peephole": True}, "peephole"), ({"projection": True}, "projection")],
)
def test_unimplemented_lstm_variants_refused_in_one_line(variant: dict, why: str) -> None:
    graph = parse_model(_variant(**variant), source="variant.tflite")
    with pytest.raises(TinyschedError, match=rf"^operator 0 \({LSTM}\) is not supported .*{why}") as info:
        check_supported(graph)
    assert "\n" not in str(info.value)


def test_lstm_state_is_persistent_not_arena() -> None:
    from tinysched.codegen import generate

    graph, _, plan = plan_for_codegen(parse_model(generated_lstms(), source="lstms.tflite"))
    module = generate(graph, plan)
    source = module.files["lstms.c"]
    assert "lstms_reset" in source and "ts_lstm_s8(" in source
    variables = [t for t in graph.tensors if t.is_variable]
    assert len(variables) == 6
    assert not {t.index for t in variables} & set(graph.activation_tensors)
    # The state bytes (6 + 6*2 per row per LSTM, 16-byte aligned) are outside the arena.
    assert "LSTMS_STATE_BYTES" in module.files["lstms.h"]


def test_stateful_operators_report_their_kernel() -> None:
    from tinysched.codegen import generate, kernels_by_op

    graph, _, plan = plan_for_codegen(parse_model(generated_lstms(), source="lstms.tflite"))
    # Each operator's kernel is the one its generated call names (the state placed, as in generate).
    kernels = kernels_by_op(graph)
    assert kernels == {0: "ts_lstm_s8", 1: "ts_lstm_s8", 2: "ts_lstm_s8"}
    module = generate(graph, plan)
    assert dict(module.op_kernels) == kernels  # what the report's kernel column shows
    source = module.files["lstms.c"]
    assert all(f"ts_lstm_s8(&lstms_op{v}," in source for v in kernels)
