"""Mutated models the fuzz benchmark (bench/bench_fuzz.py) found `build` accepting while the outputs
differed from TFLite's: one generated model per class of mutation.

Either tinysched's arithmetic was wrong (LEAKY_RELU with a negative alpha: now bit-exact on every
input byte), or TFLite reads the model in a way tinysched now refuses in one line (an ARG_MIN output
typed against its output_type option, a shrunk STRIDED_SLICE axis with a negative stride, SOFTMAX
without options, an alpha whose multiplier shifts past int32).

Tiers: host (the reference interpreter); the one host build needs gcc.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from helpers import host_verify
from tiers import needs_gcc

from tinysched.codegen import check_supported, quant
from tinysched.device import reference
from tinysched.errors import TinyschedError
from tinysched.model.modelgen import ModelBuilder
from tinysched.model.reader import parse_model

EVERY_BYTE = np.arange(-128, 128, dtype=np.int8).reshape(1, 256)

# (alpha, input scale, input zero point, output scale, output zero point): power-of-two scales make
# the high multiply tie often, which is where a negative multiplier rounded differently.
LEAKY_TIES = [
    (alpha, si, zi, so, zo)
    for alpha in (-1.0, -0.5, -3.0, -0.375, -2.5, 0.5, 1.5)
    for si, zi, so, zo in ((2**-4, 3, 2**-3, 20), (2**-5, -7, 2**-2, -3), (0.75, 0, 1.0, 0))
]


def _leaky_model(cases) -> bytes:
    b = ModelBuilder(seed=0)
    outs = []
    for k, (alpha, si, zi, so, zo) in enumerate(cases):
        x = b.input(f"x{k}", (1, 256), scale=si, zero_point=zi)
        outs += b.op(
            "LEAKY_RELU", [x], [(1, 256)], schema.LeakyReluOptionsT(alpha=alpha), output_quant=(so, zo)
        )
    b.output(*outs)
    return b.build()


def test_leaky_relu_negative_alpha_table_matches_the_interpreter_on_every_byte() -> None:
    result = reference.run_reference(_leaky_model(LEAKY_TIES), [EVERY_BYTE] * len(LEAKY_TIES))
    assert result.resolver == "BUILTIN_REF"
    differing = {}
    for case, out in zip(LEAKY_TIES, result.outputs, strict=True):
        table = quant.leaky_relu_table(*case[1:], case[0])
        expected = np.array([table[q & 0xFF] for q in range(-128, 128)], dtype=np.int8)
        if not np.array_equal(out.reshape(-1), expected):
            differing[case] = int((out.reshape(-1) != expected).sum())
    assert differing == {}


@needs_gcc
def test_leaky_relu_negative_alpha_builds_bit_exact(tmp_path: Path) -> None:
    path = tmp_path / "leaky.tflite"
    path.write_bytes(_leaky_model(LEAKY_TIES[:3]))
    result = host_verify(path, n_inputs=3)
    assert result.reference == "BUILTIN_REF"
    assert result.mismatches == []


def test_leaky_relu_alpha_past_int32_shifts_is_refused() -> None:
    graph = parse_model(_leaky_model([(1e30, 0.05, 3, 0.1, 20)]))
    with pytest.raises(TinyschedError, match=r"^operator 0 \(LEAKY_RELU\) .*alpha .* leaves int32"):
        check_supported(graph)


def test_arg_min_output_typed_against_its_option_is_refused() -> None:
    b = ModelBuilder(seed=1)
    x = b.input("x", (1, 6, 4))
    axis = b.constant(np.asarray([1], dtype=np.int32))
    (y,) = b.op(
        "ARG_MIN",
        [x, axis],
        [(1, 4)],
        schema.ArgMinOptionsT(outputType=schema.TensorType.INT64),
        output_dtypes=["int32"],
    )
    b.output(y)
    with pytest.raises(TinyschedError, match=r"operator 0 \(ARG_MIN\) output tensor is int32 but option"):
        parse_model(b.build())


def test_shrunk_strided_slice_axis_with_negative_stride_is_refused() -> None:
    b = ModelBuilder(seed=1)
    x = b.input("x", (1, 6, 4))
    consts = [b.constant(np.asarray(v, dtype=np.int32)) for v in ([0, 2, 0], [1, 3, 4], [1, -2, 1])]
    (y,) = b.op("STRIDED_SLICE", [x, *consts], [(1, 4)], schema.StridedSliceOptionsT(shrinkAxisMask=2))
    b.output(y)
    with pytest.raises(TinyschedError, match=r"STRIDED_SLICE\) shrunk axis 1 has stride -2"):
        parse_model(b.build())


def test_softmax_without_options_is_refused_and_the_interpreter_uses_beta_zero() -> None:
    b = ModelBuilder(seed=1)
    x = b.input("x", (1, 8), scale=0.05)
    (y,) = b.op("SOFTMAX", [x], [(1, 8)], None, version=2, output_quant=(1 / 256, -128))
    b.output(y)
    model = b.build()
    # What TFLite computes: beta 0, a uniform distribution (1/8 -> -96), whatever the input.
    out = reference.run_reference(model, [EVERY_BYTE[:, :8]]).outputs[0]
    assert out.reshape(-1).tolist() == [-96] * 8
    with pytest.raises(TinyschedError, match=r"SOFTMAX\) .*beta 0.0, the value TFLite takes when"):
        check_supported(parse_model(model))
