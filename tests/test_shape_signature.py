"""Placeholder shapes (issue 30, item 1): a converter that cannot size a dimension stores 1 there and
-1 in the tensor's shape_signature, and TFLite's Prepare computes the real size. The reader infers
such shapes the way Prepare does; a stated static shape that the inference contradicts is refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert import schema_py_generated as schema
from helpers import host_verify
from tiers import needs_gcc

from tinysched.device import reference
from tinysched.errors import TinyschedError
from tinysched.model.fold import fold_constants
from tinysched.model.graph import Graph
from tinysched.model.modelgen import ModelBuilder, TensorHandle
from tinysched.model.reader import parse_model
from tinysched.model.shapes import check_graph


def _shape_of(b: ModelBuilder, x: TensorHandle, end: int, name: str) -> TensorHandle:
    """SHAPE(x)[:end], as tf.repeat computes the leading dimensions it keeps."""
    (shape,) = b.op(
        "SHAPE",
        [x],
        [(len(x.shape),)],
        schema.ShapeOptionsT(outType=schema.TensorType.INT32),
        output_dtypes=["int32"],
        name=f"{name}/Shape",
    )
    consts = [
        b.constant(np.array([v], dtype=np.int32), name=f"{name}/{what}")
        for what, v in (("begin", 0), ("end", end), ("strides", 1))
    ]
    (lead,) = b.op(
        "STRIDED_SLICE", [shape, *consts], [(end,)], schema.StridedSliceOptionsT(), name=f"{name}/lead"
    )
    return lead


def _repeat(
    b: ModelBuilder,
    x: TensorHandle,
    repeats: int,
    axis: int,
    stored: tuple[int, ...],
    signature: tuple[int, ...] | None,
    name: str,
) -> TensorHandle:
    """tf.repeat(x, repeats, axis) as the TF converter writes it for a dynamic batch: EXPAND_DIMS,
    TILE, and a RESHAPE to concat(shape(x)[:axis], [repeats * x.shape[axis]], x.shape[axis + 1:])
    whose shape input is computed from SHAPE; the RESHAPE's output is stored as `stored`."""
    rank = len(x.shape)
    expanded_shape = (*x.shape[: axis + 1], 1, *x.shape[axis + 1 :])
    (expanded,) = b.op(
        "EXPAND_DIMS",
        [x, b.constant(np.array(axis + 1, dtype=np.int32), name=f"{name}/ExpandDims/dim")],
        [expanded_shape],
        name=f"{name}/ExpandDims",
    )
    multiples = [1] * (rank + 1)
    multiples[axis + 1] = repeats
    (tiled,) = b.op(
        "TILE",
        [expanded, b.constant(np.array(multiples, dtype=np.int32), name=f"{name}/multiples")],
        [tuple(d * m for d, m in zip(expanded_shape, multiples, strict=True))],
        name=f"{name}/Tile",
    )
    rest = [repeats * x.shape[axis], *x.shape[axis + 1 :]]
    (new_shape,) = b.op(
        "CONCATENATION",
        [_shape_of(b, x, axis, name), b.constant(np.array(rest, dtype=np.int32), name=f"{name}/rest")],
        [(rank,)],
        schema.ConcatenationOptionsT(axis=0),
        name=f"{name}/concat",
    )
    (y,) = b.op("RESHAPE", [tiled, new_shape], [stored], schema.ReshapeOptionsT(), name=f"{name}/Reshape_1")
    if signature is not None:
        b.shape_signature(y, signature)
    return y


def deeplab_pooling_model(
    size: int = 6,
    channels: int = 16,
    reshape_signature: tuple[int, ...] | None = (-1, -1, 6, 16),
    quantize_signature: tuple[int, ...] | None = (-1, -1, 6, 16),
) -> bytes:
    """A DeepLab-style image-pooling branch with a dynamic batch, as Keras 3 and the TF converter
    write it: GlobalAveragePooling2D(keepdims=True) -> 1x1 conv -> UpSampling2D((size, size)) (two
    tf.repeat), requantised and joined with the features. The second repeat's RESHAPE and the
    QUANTIZE after it are stored [1, 1, size, C] (the converter's placeholder, with the signatures
    given); TFLite computes [1, size, size, C]."""
    b = ModelBuilder(seed=30)
    x = b.input("image", (1, size, size, 8), zero_point=-5)
    b.shape_signature(x, (-1, size, size, 8))
    feat = b.conv2d(x, channels, (3, 3), activation="RELU", name="aspp0")
    pooled = b.mean(feat, (1, 2), keepdims=True, name="image_pooling/gap")
    pooled = b.conv2d(pooled, channels, (1, 1), activation="RELU", name="image_pooling/conv")
    rows = _repeat(
        b, pooled, size, 1, (1, size, 1, channels), (-1, size, 1, channels), "up_sampling2d/Repeat"
    )
    placeholder = (1, 1, size, channels)
    up = _repeat(b, rows, size, 2, placeholder, reshape_signature, "up_sampling2d/Repeat_1")
    (up_q,) = b.op("QUANTIZE", [up], [placeholder], output_quant=feat.quant, name="up_sampling2d/requantize")
    if quantize_signature is not None:
        b.shape_signature(up_q, quantize_signature)
    (joined,) = b.op(
        "CONCATENATION",
        [feat, up_q],
        [(1, size, size, 2 * channels)],
        schema.ConcatenationOptionsT(axis=3),
        2,
        name="concatenate",
    )
    b.shape_signature(joined, (-1, size, size, 2 * channels))
    b.output(b.conv2d(joined, 4, (1, 1), name="head"))
    return b.build()


def _shapes(graph: Graph) -> dict[str, tuple[tuple[int, ...], int]]:
    return {t.name: (t.shape, t.nbytes) for t in graph.tensors}


def test_placeholder_shapes_are_inferred_as_tflite_prepares_them() -> None:
    graph = parse_model(deeplab_pooling_model(), "deeplab.tflite")
    shapes = _shapes(graph)
    assert shapes["up_sampling2d/Repeat_1/Reshape_1"] == ((1, 6, 6, 16), 576)
    assert shapes["up_sampling2d/requantize"] == ((1, 6, 6, 16), 576)
    assert shapes["up_sampling2d/Repeat/Reshape_1"] == ((1, 6, 1, 16), 96)  # stated right: kept
    assert shapes["concatenate"] == ((1, 6, 6, 32), 1152)
    # The shape subgraphs fold; the RESHAPE's shape input is the constant TFLite computes.
    folded = fold_constants(graph).graph
    check_graph(folded)
    reshape = next(
        op for op in folded.operators if folded.tensors[op.outputs[0]].name.endswith("Repeat_1/Reshape_1")
    )
    assert folded.tensors[reshape.inputs[1]].data.tolist() == [1, 6, 6, 16]
    assert folded.op_types == {
        "CONV_2D": 3,
        "EXPAND_DIMS": 2,
        "TILE": 2,
        "RESHAPE": 2,
        "MEAN": 1,
        "QUANTIZE": 1,
        "CONCATENATION": 1,
    }


def test_tflite_runs_the_placeholder_model_on_the_inferred_shapes(tmp_path: Path) -> None:
    model = tmp_path / "deeplab.tflite"
    model.write_bytes(deeplab_pooling_model())
    inputs = reference.random_inputs(model, 0, 1)
    result = reference.run_reference(model, inputs[0], preserve_all_tensors=True)
    graph = parse_model(model.read_bytes(), str(model))
    assert result.resolver == "BUILTIN_REF"
    for name in ("up_sampling2d/Repeat_1/Reshape_1", "up_sampling2d/requantize"):
        t = next(t for t in graph.tensors if t.name == name)
        assert result.tensors[t.index].shape == t.shape == (1, 6, 6, 16)


@pytest.mark.parametrize(
    ("signature", "refused"),
    [
        # no signature: the stated shape is the file's claim, and its inputs contradict it
        (None, "operator 14 (RESHAPE) output 0 (tensor 32 'up_sampling2d/Repeat_1/Reshape_1') has shape "
         "[1, 1, 6, 16], its inputs and options give 576 elements"),
        # the signature leaves only the batch open: the stated height 1 is static, and wrong
        ((-1, 1, 6, 16), "operator 14 (RESHAPE) output 0 (tensor 32"),
    ],
)  # fmt: skip
def test_only_placeholder_dimensions_give_way(signature: tuple[int, ...] | None, refused: str) -> None:
    with pytest.raises(TinyschedError) as info:
        parse_model(deeplab_pooling_model(reshape_signature=signature), "deeplab.tflite")
    assert refused in str(info.value)


def test_operators_after_a_placeholder_are_checked_against_the_inferred_shape() -> None:
    with pytest.raises(TinyschedError) as info:  # the QUANTIZE's [1, 1, 6, 16] is not a placeholder
        parse_model(deeplab_pooling_model(quantize_signature=None), "deeplab.tflite")
    assert str(info.value).endswith(
        "operator 15 (QUANTIZE) output 0 (tensor 33 'up_sampling2d/requantize') has shape [1, 1, 6, 16], "
        "its inputs and options give 576 elements"
    )


def test_an_inferred_placeholder_over_int32_is_refused() -> None:
    b = ModelBuilder(seed=1)
    x = b.input("x", (1, 2))
    multiples = b.constant(np.array([1, 2**30], dtype=np.int32), name="multiples")
    (y,) = b.op("TILE", [x, multiples], [(1, 1)], name="tiled")
    b.shape_signature(y, (1, -1))
    b.output(y)
    with pytest.raises(TinyschedError) as info:
        parse_model(b.build(), "m.tflite")
    assert str(info.value) == (
        "m.tflite: operator 0 (TILE) output 0 (tensor 2 'tiled') of shape [1, 2147483648] is "
        "2,147,483,648 elements (2,147,483,648 bytes), over int32"
    )


@needs_gcc
@pytest.mark.host
def test_placeholder_model_is_bit_exact(tmp_path: Path) -> None:
    model = tmp_path / "deeplab.tflite"
    model.write_bytes(deeplab_pooling_model())
    result = host_verify(model, n_inputs=3, seed=4, opt="-O1")
    assert result.reference == "BUILTIN_REF", result.fallback_reason
    assert result.outputs_match, result.mismatches
