"""Issue 6's operators, bit for bit against TFLite's reference kernels.

Two generated models hold every new operator with its options (`activations_elementwise`,
`data_movement`); each is compiled once under ASan/UBSan, run on seeded inputs and compared byte for
byte with BUILTIN_REF. The pointwise tables (`tinysched.codegen.quant`) are also checked exhaustively,
all 256 input bytes for several quantisations, against the interpreter alone.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from helpers import host_verify
from tiers import needs_gcc

from tinysched.codegen import check_supported, quant
from tinysched.model.modelgen import ModelBuilder, TensorHandle
from tinysched.model.reader import parse_model

Q = (1 / 40, -5)  # an output quantisation different from the inputs'


def _i32(values) -> np.ndarray:
    return np.asarray(values, dtype=np.int32)


def activations_elementwise() -> bytes:
    """RELU, RELU6, RELU_N1_TO_1, LEAKY_RELU (small and >1 alpha), HARD_SWISH, TANH, SUB (broadcast,
    constant, fused RELU), MAXIMUM, MINIMUM (broadcast and constant)."""
    b = ModelBuilder(seed=31)
    x = b.input("x", (1, 4, 5, 8), scale=1 / 20, zero_point=3)
    y = b.input("y", (1, 1, 5, 8), scale=1 / 32, zero_point=-7)
    outs = []

    def unary(name: str, opname: str, options=None, quant=Q) -> TensorHandle:
        (t,) = b.op(opname, [x], [x.shape], options, output_quant=quant, name=name)
        outs.append(t)
        return t

    unary("relu", "RELU")
    unary("relu_same_quant", "RELU", quant=(x.scale, x.zero_point))
    unary("relu6", "RELU6", quant=(6 / 255, -128))
    unary("relu_n1_to_1", "RELU_N1_TO_1", quant=(1 / 100, 0))
    unary("leaky", "LEAKY_RELU", schema.LeakyReluOptionsT(alpha=0.1))
    unary("leaky_big_alpha", "LEAKY_RELU", schema.LeakyReluOptionsT(alpha=2.5), quant=(1 / 10, 20))
    unary("hard_swish", "HARD_SWISH", quant=(1 / 25, -60))
    unary("tanh", "TANH", quant=(1 / 128, 0))
    (s1,) = b.op("SUB", [x, y], [x.shape], schema.SubOptionsT(), output_quant=(1 / 16, 2), name="sub_bcast")
    c = b.constant(np.linspace(-90, 90, 8).astype(np.int8).reshape(1, 1, 1, 8), quant=(1 / 50, 4), name="c")
    (s2,) = b.op(
        "SUB",
        [c, x],
        [x.shape],
        schema.SubOptionsT(fusedActivationFunction=schema.ActivationFunctionType.RELU),
        output_quant=(1 / 16, -100),
        name="sub_const_relu",
    )
    (m1,) = b.op("MAXIMUM", [x, y], [x.shape], schema.MaximumMinimumOptionsT(), name="maximum_bcast")
    (m2,) = b.op("MINIMUM", [c, x], [x.shape], schema.MaximumMinimumOptionsT(), name="minimum_const")
    b.output(*outs, s1, s2, m1, m2)
    return b.build()


def data_movement() -> bytes:
    """SLICE, STRIDED_SLICE (masks, negative stride, shrink), TILE, SPACE_TO_DEPTH, DEPTH_TO_SPACE,
    SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND (views, and with padding / crops), PACK, SPLIT, SPLIT_V, UNPACK, GATHER (constant int64
    indices, and int64 indices computed at run time), REDUCE_MAX, ARG_MAX/ARG_MIN (int32/int64), RESIZE_NEAREST_NEIGHBOR and
    RESIZE_BILINEAR (default, align_corners, half_pixel_centers)."""
    b = ModelBuilder(seed=32)
    x = b.input("x", (1, 6, 8, 4), scale=1 / 64, zero_point=5)
    outs: list[TensorHandle] = []

    def op(name, opname, inputs, shapes, options=None, **kw) -> list[TensorHandle]:
        ts = b.op(opname, inputs, shapes, options, name=name, **kw)
        outs.extend(ts)
        return ts

    op(
        "slice",
        "SLICE",
        [x, b.constant(_i32([0, 1, 2, 1])), b.constant(_i32([1, 4, -1, 2]))],
        [(1, 4, 6, 2)],
        schema.SliceOptionsT(),
    )
    op(
        "strided_slice",
        "STRIDED_SLICE",
        [x, b.constant(_i32([0, -1, 1, 0])), b.constant(_i32([1, 0, 8, 4])), b.constant(_i32([1, -2, 3, 1]))],
        [(1, 3, 3, 4)],
        schema.StridedSliceOptionsT(beginMask=0, endMask=8 | 2),
    )
    op(
        "strided_slice_shrink",
        "STRIDED_SLICE",
        [x, b.constant(_i32([0, 2, 0, 3])), b.constant(_i32([1, 3, 8, 4])), b.constant(_i32([1, 1, 2, 1]))],
        [(1, 4)],
        schema.StridedSliceOptionsT(shrinkAxisMask=2 | 8, beginMask=1, endMask=1),
    )
    op("tile", "TILE", [x, b.constant(_i32([2, 1, 3, 1]))], [(2, 6, 24, 4)], schema.TileOptionsT())
    (s2d,) = op(
        "space_to_depth", "SPACE_TO_DEPTH", [x], [(1, 3, 4, 16)], schema.SpaceToDepthOptionsT(blockSize=2)
    )
    op("depth_to_space", "DEPTH_TO_SPACE", [s2d], [(1, 6, 8, 4)], schema.DepthToSpaceOptionsT(blockSize=2))
    (s2b,) = op(
        "space_to_batch",
        "SPACE_TO_BATCH_ND",
        [x, b.constant(_i32([3, 2])), b.constant(_i32([[0, 0], [0, 0]]))],
        [(6, 2, 4, 4)],
        schema.SpaceToBatchNDOptionsT(),
    )
    op(
        "batch_to_space",
        "BATCH_TO_SPACE_ND",
        [s2b, b.constant(_i32([3, 2])), b.constant(_i32([[0, 0], [0, 0]]))],
        [(1, 6, 8, 4)],
        schema.BatchToSpaceNDOptionsT(),
    )
    # With padding / crops (not views): ts_space_batch_nd; the padding takes the output zero point.
    (s2bp,) = op(
        "space_to_batch_padded",
        "SPACE_TO_BATCH_ND",
        [x, b.constant(_i32([2, 3])), b.constant(_i32([[1, 1], [1, 0]]))],
        [(6, 4, 3, 4)],
        schema.SpaceToBatchNDOptionsT(),
        output_quant=(x.scale, x.zero_point),
    )
    op(
        "batch_to_space_cropped",
        "BATCH_TO_SPACE_ND",
        [s2bp, b.constant(_i32([2, 3])), b.constant(_i32([[1, 2], [0, 3]]))],
        [(1, 5, 6, 4)],
        schema.BatchToSpaceNDOptionsT(),
    )
    op("pack", "PACK", [x, x, x], [(1, 6, 3, 8, 4)], schema.PackOptionsT(valuesCount=3, axis=2))
    op(
        "split",
        "SPLIT",
        [b.constant(_i32([-1])), x],
        [(1, 6, 8, 2)] * 2,
        schema.SplitOptionsT(numSplits=2),
        output_dtypes=["int8"] * 2,
        output_quant=x.quant,
    )
    op(
        "split_v",
        "SPLIT_V",
        [x, b.constant(_i32([1, 4, 3])), b.constant(_i32([2]))],
        [(1, 6, 1, 4), (1, 6, 4, 4), (1, 6, 3, 4)],
        schema.SplitVOptionsT(numSplits=3),
    )
    op("unpack", "UNPACK", [x], [(1, 8, 4)] * 6, schema.UnpackOptionsT(num=6, axis=1))
    op(
        "gather_const",
        "GATHER",
        [x, b.constant(np.array([[7, 0], [3, 3]], dtype=np.int64))],
        [(1, 6, 2, 2, 4)],
        schema.GatherOptionsT(axis=2),
    )
    op(
        "reduce_max_hw",
        "REDUCE_MAX",
        [x, b.constant(_i32([1, 2]))],
        [(1, 1, 1, 4)],
        schema.ReducerOptionsT(keepDims=True),
    )
    op(
        "reduce_max_c",
        "REDUCE_MAX",
        [x, b.constant(_i32([-1]))],
        [(1, 6, 8)],
        schema.ReducerOptionsT(keepDims=False),
    )
    op(
        "arg_max",
        "ARG_MAX",
        [x, b.constant(_i32([3]))],
        [(1, 6, 8)],
        schema.ArgMaxOptionsT(outputType=schema.TensorType.INT32),
        output_dtypes=["int32"],
    )
    (am,) = op(
        "arg_min",
        "ARG_MIN",
        [x, b.constant(_i32([1]))],
        [(1, 8, 4)],
        schema.ArgMinOptionsT(outputType=schema.TensorType.INT64),
        output_dtypes=["int64"],
    )
    # Indices computed at run time (int64, always in range): GATHER along H by the ARG_MIN result.
    op(
        "gather_runtime",
        "GATHER",
        [x, am],
        [(1, 1, 8, 4, 8, 4)],
        schema.GatherOptionsT(axis=-3),
        output_dtypes=["int8"],
        output_quant=x.quant,
    )
    for name, size, align, half in (
        ("up", (11, 13), False, False),
        ("align", (11, 5), True, False),
        ("half", (4, 17), False, True),
    ):
        shape = b.constant(_i32(size))
        op(
            f"nearest_{name}",
            "RESIZE_NEAREST_NEIGHBOR",
            [x, shape],
            [(1, *size, 4)],
            schema.ResizeNearestNeighborOptionsT(alignCorners=align, halfPixelCenters=half),
        )
        op(
            f"bilinear_{name}",
            "RESIZE_BILINEAR",
            [x, shape],
            [(1, *size, 4)],
            schema.ResizeBilinearOptionsT(alignCorners=align, halfPixelCenters=half),
        )
    b.output(*outs)
    return b.build()


def arithmetic() -> bytes:
    """PRELU (per-channel alpha, broadcast), SQUARED_DIFFERENCE (broadcast, constant), RSQRT,
    L2_NORMALIZATION, TRANSPOSE_CONV (SAME stride 2 per-channel with bias and RELU; VALID stride 1
    per-tensor without bias)."""
    b = ModelBuilder(seed=33)
    x = b.input("x", (1, 5, 6, 4), scale=1 / 30, zero_point=-4)
    pos = b.input("pos", (1, 5, 6, 4), scale=1 / 50, zero_point=-128)  # RSQRT needs x >= 0
    outs: list[TensorHandle] = []
    alpha = b.constant(np.array([[[40, -90, 127, 5]]], dtype=np.int8), quant=(1 / 128, 3), name="alpha")
    outs += b.op("PRELU", [x, alpha], [x.shape], None, output_quant=(1 / 35, -10), name="prelu")
    y = b.input("y", (1, 1, 6, 4), scale=1 / 20, zero_point=6)
    outs += b.op(
        "SQUARED_DIFFERENCE",
        [x, y],
        [x.shape],
        schema.SquaredDifferenceOptionsT(),
        output_quant=(1 / 8, -128),
        name="squared_difference",
    )
    c = b.constant(np.array([-50, 0, 25, 100], dtype=np.int8), quant=(1 / 60, 1), name="c")
    outs += b.op(
        "SQUARED_DIFFERENCE",
        [c, x],
        [x.shape],
        schema.SquaredDifferenceOptionsT(),
        output_quant=(1 / 30, -120),
        name="squared_difference_const",
    )
    outs += b.op("RSQRT", [pos], [pos.shape], None, output_quant=(1 / 16, -128), name="rsqrt")
    outs += b.op(
        "L2_NORMALIZATION", [x], [x.shape], schema.L2NormOptionsT(), output_quant=(1 / 128, 0), name="l2_norm"
    )
    rng = np.random.default_rng(7)
    for name, (oh, ow), stride, padding, per_channel, bias, act in (
        ("tconv_same_s2", (10, 12), 2, "SAME", True, True, "RELU"),
        ("tconv_valid_s1", (7, 8), 1, "VALID", False, False, "NONE"),
    ):
        oc, fh, fw = 3, 3, 3
        wq = rng.integers(-127, 128, (oc, fh, fw, 4)).astype(np.int8)
        scales = np.full(oc if per_channel else 1, 1 / (127 * 6.0)) * (
            rng.uniform(0.5, 1.5, oc) if per_channel else 1
        )
        w = b._tensor(f"{name}/filter", wq.shape, "int8", data=wq, channel_scales=scales, channel_axis=0)
        inputs = [b.constant(_i32([1, oh, ow, oc]), name=f"{name}/shape"), w, x]
        if bias:
            bq = rng.integers(-3000, 3000, oc).astype(np.int32)
            inputs.append(
                b._tensor(
                    f"{name}/bias",
                    (oc,),
                    "int32",
                    data=bq,
                    channel_scales=np.array([x.scale * s for s in np.broadcast_to(scales, (oc,))]),
                )
            )
        outs += b.op(
            "TRANSPOSE_CONV",
            inputs,
            [(1, oh, ow, oc)],
            schema.TransposeConvOptionsT(
                padding=getattr(schema.Padding, padding),
                strideH=stride,
                strideW=stride,
                fusedActivationFunction=getattr(schema.ActivationFunctionType, act),
            ),
            version=3,
            output_dtypes=["int8"],
            output_quant=(1 / 40, -3),
            name=name,
        )
    b.output(*outs)
    return b.build()


def stateful_int16() -> bytes:
    """int16 QUANTIZE in and out (int16 -> int8, int16 -> int32), SVDF with rank 2 and its int16
    state as a variable tensor (kept across the test's successive invokes), SOFTMAX int8 -> int16."""
    b = ModelBuilder(seed=34)
    rng = np.random.default_rng(34)
    x16 = b.input("x16", (1, 24), dtype="int16", scale=1 / 8000, zero_point=0)
    (x,) = b.op(
        "QUANTIZE", [x16], [(1, 24)], None, output_dtypes=["int8"], output_quant=(1 / 32, -3), name="q8"
    )
    filters, memory, rank = 16, 5, 2
    wf = b.constant(rng.integers(-127, 128, (filters, 24)).astype(np.int8), quant=(1 / 635, 0), name="wf")
    wt = b.constant(
        rng.integers(-8000, 8000, (filters, memory)).astype(np.int16), quant=(1 / 16384, 0), name="wt"
    )
    bias = b.constant(
        rng.integers(-2000, 2000, filters // rank).astype(np.int32), quant=(1 / 2**27, 0), name="bias"
    )
    state = b._tensor("svdf_state", (1, filters * memory), "int16", quant=(1 / 8192, 0))
    b._tensors[state.index].isVariable = True  # ModelBuilder has no variable tensors: set it here
    b._constant.add(state.index)  # available from the start, like a constant, for the order check
    (y,) = b.op(
        "SVDF",
        [x, wf, wt, bias, state],
        [(1, filters // rank)],
        schema.SVDFOptionsT(rank=rank, fusedActivationFunction=schema.ActivationFunctionType.RELU),
        output_dtypes=["int8"],
        output_quant=(1 / 40, 5),
        name="svdf",
    )
    (p16,) = b.op(
        "SOFTMAX",
        [y],
        [y.shape],
        schema.SoftmaxOptionsT(beta=1.0),
        output_dtypes=["int16"],
        output_quant=(1 / 65536, -32768),
        name="softmax16",
    )
    p32 = b._tensor("q32", y.shape, "int32", quant=(1 / 32768, 0))  # op() quantises 8/16-bit only
    b._operator("QUANTIZE", [p16.index], [p32.index])
    b.output(y, p16, p32)
    return b.build()


EXTRA_MODELS = {
    "activations_elementwise": activations_elementwise,
    "data_movement": data_movement,
    "arithmetic": arithmetic,
    "stateful_int16": stateful_int16,
}


@pytest.mark.parametrize("name", sorted(EXTRA_MODELS))
def test_every_operator_is_lowered(name: str) -> None:
    check_supported(parse_model(EXTRA_MODELS[name](), source=f"{name}.tflite"))


@needs_gcc
@pytest.mark.host
@pytest.mark.parametrize("name", sorted(EXTRA_MODELS))
def test_extra_kernels_bit_exact_under_sanitizers(name: str, tmp_path: Path) -> None:

    model = tmp_path / f"{name}.tflite"
    model.write_bytes(EXTRA_MODELS[name]())
    result = host_verify(model, n_inputs=4, seed=5, opt="-O1", sanitize=True)
    assert result.reference == "BUILTIN_REF", result.fallback_reason
    assert result.mismatches == []
    assert result.outputs_match and result.inputs == 4


def _table_model(cases) -> bytes:
    b = ModelBuilder(seed=0)
    outs = []
    for name, opname, options, si, zi, so, zo in cases:
        x = b.input(f"x_{name}", (1, 256), scale=si, zero_point=zi)
        outs += b.op(opname, [x], [(1, 256)], options, output_quant=(so, zo), name=name)
    b.output(*outs)
    return b.build()


def test_pointwise_tables_match_the_interpreter_on_every_byte() -> None:
    from tinysched.device import reference

    rng = np.random.default_rng(0)
    cases, tables = [], []
    for k in range(3):
        si, so = (float(np.float32(v)) for v in rng.uniform(0.005, 0.2, 2))
        zi, zo = (int(v) for v in rng.integers(-60, 60, 2))
        specs = [
            ("relu", "RELU", None, lambda *q: quant.relu_table(*q, 0.0, None)),
            ("relu6", "RELU6", None, lambda *q: quant.relu_table(*q, 0.0, 6.0)),
            ("relu1", "RELU_N1_TO_1", None, lambda *q: quant.relu_table(*q, -1.0, 1.0)),
            (
                "leaky",
                "LEAKY_RELU",
                schema.LeakyReluOptionsT(alpha=0.2),
                lambda *q: quant.leaky_relu_table(*q, 0.2),
            ),
            ("hswish", "HARD_SWISH", None, quant.hard_swish_table),
            ("tanh", "TANH", None, quant.tanh_table),
        ]
        for name, opname, options, fn in specs:
            so_k = max(so, si / 128) if opname == "HARD_SWISH" else so
            cases.append((f"{name}{k}", opname, options, si, zi, so_k, zo))
            tables.append(fn(si, zi, so_k, zo))
        # RSQRT is defined only for inputs at or above the zero point: use zero point -128.
        cases.append((f"rsqrt{k}", "RSQRT", None, si, -128, so, zo))
        tables.append(quant.rsqrt_table(si, -128, so, zo))
    every_byte = np.arange(-128, 128, dtype=np.int8).reshape(1, 256)
    result = reference.run_reference(_table_model(cases), [every_byte] * len(cases))
    assert result.resolver == "BUILTIN_REF"
    for case, table, out in zip(cases, tables, result.outputs, strict=True):
        expected = np.array([table[q & 0xFF] for q in range(-128, 128)], dtype=np.int8)
        assert np.array_equal(out.reshape(-1), expected), case


def test_inv_sqrt_multiplier_is_close_to_one_over_sqrt() -> None:
    for x in (2, 3, 100, 255 * 255 * 64, 2**30 + 12345):
        m, s = quant.inv_sqrt_multiplier(x)
        assert abs(m * 2.0 ** (s - 31) - 1 / np.sqrt(x)) < 1e-6 / np.sqrt(x) * 1e3


def test_legacy_uint8_without_an_exact_int8_form_is_refused_in_one_line() -> None:
    # (int8 SUM, once refused here too, is lowered now: tests/test_sum.py; legacy uint8 models are
    # computed as int8 where that is exact: tests/test_uint8.py.)
    from tinysched.errors import TinyschedError

    b = ModelBuilder(seed=1)
    u = b.input("u", (1, 4), dtype="uint8", scale=1 / 50, zero_point=128)
    (y,) = b.op("GELU", [u], [(1, 4)])
    b.output(y)
    with pytest.raises(
        TinyschedError,
        match=r"^operator 0 \(GELU\) computes on uint8 and cannot be computed exactly as int8: tinysched "
        r"has not checked its uint8 arithmetic against int8 \(legacy uint8 models are otherwise",
    ):
        check_supported(parse_model(b.build()))


def test_strided_slice_with_ellipsis_is_refused() -> None:
    from tinysched.errors import TinyschedError

    b = ModelBuilder(seed=1)
    x = b.input("x", (1, 4, 4, 2))
    (y,) = b.op(
        "STRIDED_SLICE",
        [x, b.constant(_i32([0])), b.constant(_i32([1])), b.constant(_i32([1]))],
        [(1, 4, 4, 1)],
        schema.StridedSliceOptionsT(ellipsisMask=1),
    )
    b.output(y)
    with pytest.raises(TinyschedError, match="ellipsis"):
        check_supported(parse_model(b.build()))
