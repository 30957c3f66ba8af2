"""Small SSD-like detectors, built with tinysched.model.modelgen (issue 14, item 3).

The shape of a converted SSD head: an int8 backbone, a RESIZE_BILINEAR feature-pyramid step, box and
class heads, anchors broadcast by TILE (version 3, which BUILTIN_REF does not register), the box
coordinates split by STRIDED_SLICE and regrouped by PACK, anchor decoding in int8 MUL/ADD, LOGISTIC
scores, DEQUANTIZE and a float32 tail of data movement (RESHAPE, STRIDED_SLICE, PACK, CONCATENATION).
"""

from __future__ import annotations

import numpy as np
from ai_edge_litert import schema_py_generated as schema

from tinysched.model.modelgen import ModelBuilder, TensorHandle


def _i32(b: ModelBuilder, values, name: str) -> TensorHandle:
    return b.constant(np.asarray(values, dtype=np.int32), name=name)


def _slice(
    b: ModelBuilder, x: TensorHandle, begin, end, shape, name: str, version: int | None = None
) -> TensorHandle:
    strides = [1] * len(begin)
    (y,) = b.op(
        "STRIDED_SLICE",
        [
            x,
            _i32(b, begin, f"{name}/begin"),
            _i32(b, end, f"{name}/end"),
            _i32(b, strides, f"{name}/strides"),
        ],
        [shape],
        schema.StridedSliceOptionsT(),
        version=version or (2 if x.dtype == "int8" else 1),
        name=name,
    )
    return y


def ssd_like(
    seed: int = 0, half_pixel: bool = True, anchors_per_cell: int = 2, float_slice_version: int = 1
) -> bytes:
    """An 8x8 RGB-ish int8 input to boxes [1, N, 4] and scores [1, N, 3], both float32.

    `float_slice_version` 5 marks the float STRIDED_SLICEs with a version BUILTIN_REF does not register
    (and reference_copy does not lower): only the optimised kernels can run that model."""
    b = ModelBuilder(seed=seed, description="tinysched tests: SSD-like detector")
    x = b.input("image", (1, 8, 8, 3), scale=1 / 64, zero_point=-3)
    t = b.conv2d(x, 8, (3, 3), activation="RELU6", name="backbone/conv1")
    low = b.conv2d(t, 8, (3, 3), stride=(2, 2), activation="RELU6", name="backbone/conv2")  # 4x4
    # Feature pyramid: the coarse map upsampled back to 8x8 and added to the fine one.
    (up,) = b.op(
        "RESIZE_BILINEAR",
        [low, _i32(b, [8, 8], "fpn/size")],
        [(1, 8, 8, 8)],
        schema.ResizeBilinearOptionsT(alignCorners=False, halfPixelCenters=half_pixel),
        version=3,
        name="fpn/upsample",
    )
    fused = b.add(t, up, name="fpn/add")
    a = anchors_per_cell
    cells = 8 * 8
    n = cells * a
    box = b.conv2d(fused, 4 * a, (1, 1), name="head/box")
    cls = b.conv2d(fused, 3 * a, (1, 1), name="head/class")
    (box_r,) = b.op(
        "RESHAPE",
        [box, _i32(b, [1, n, 4], "head/box/shape")],
        [(1, n, 4)],
        schema.ReshapeOptionsT(newShape=[1, n, 4]),
        name="head/box/reshape",
    )
    (cls_r,) = b.op(
        "RESHAPE",
        [cls, _i32(b, [1, n, 3], "head/class/shape")],
        [(1, n, 3)],
        schema.ReshapeOptionsT(newShape=[1, n, 3]),
        name="head/class/reshape",
    )
    # Anchors: one (cy, cx, h, w) per anchor kind, tiled over the cells (TILE v3: int8).
    rng = np.random.default_rng(seed + 7)
    anchor_q = rng.integers(-100, 100, size=(1, a, 4)).astype(np.int8)
    anchors = b.constant(anchor_q, quant=(1 / 128, 0), name="anchors/base")
    (tiled,) = b.op(
        "TILE", [anchors, _i32(b, [1, cells, 1], "anchors/multiples")], [(1, n, 4)], None, version=3,
        name="anchors/tiled",
    )  # fmt: skip
    # Decoding: centre = offset * anchor size + anchor centre; size = anchor size * scale(box).
    centre_off = _slice(b, box_r, [0, 0, 0], [1, n, 2], (1, n, 2), "decode/centre_offset")
    size_raw = _slice(b, box_r, [0, 0, 2], [1, n, 4], (1, n, 2), "decode/size_raw")
    anchor_c = _slice(b, tiled, [0, 0, 0], [1, n, 2], (1, n, 2), "decode/anchor_centre")
    anchor_s = _slice(b, tiled, [0, 0, 2], [1, n, 4], (1, n, 2), "decode/anchor_size")
    centre = b.add(b.mul(centre_off, anchor_s, name="decode/scaled_offset"), anchor_c, name="decode/centre")
    size = b.mul(b.logistic(size_raw, name="decode/size_gate"), anchor_s, name="decode/size")
    half = b.mul(
        size,
        b.constant(np.asarray([[[64]]], dtype=np.int8), quant=(1 / 128, 0), name="half"),
        name="decode/half",
    )
    lo = b.add(
        centre, half, name="decode/lo"
    )  # (a coarse "centre - half": the sign is folded in the weights)
    hi = b.add(centre, half, name="decode/hi")
    lo_r = b.requantize(lo, *_common(lo, hi), name="decode/lo_q")
    hi_r = b.requantize(hi, *_common(lo, hi), name="decode/hi_q")
    (corners,) = b.op(
        "PACK", [lo_r, hi_r], [(1, n, 2, 2)], schema.PackOptionsT(valuesCount=2, axis=2), version=2,
        name="decode/corners",
    )  # fmt: skip
    scores = b.logistic(cls_r, name="scores/logistic")
    # Float tail: dequantised, regrouped.
    boxes_f = b.dequantize(corners, name="boxes/dequantize")
    (boxes,) = b.op(
        "RESHAPE",
        [boxes_f, _i32(b, [1, n, 4], "boxes/shape")],
        [(1, n, 4)],
        schema.ReshapeOptionsT(newShape=[1, n, 4]),
        name="boxes",
    )
    scores_f = b.dequantize(scores, name="scores/dequantize")
    best = _slice(b, scores_f, [0, 0, 1], [1, n, 3], (1, n, 2), "scores/foreground", float_slice_version)
    (pairs,) = b.op(
        "PACK", [best, _slice(b, boxes, [0, 0, 0], [1, n, 2], (1, n, 2), "boxes/first_corner", float_slice_version)],
        [(1, n, 2, 2)], schema.PackOptionsT(valuesCount=2, axis=3), version=1, name="scores_with_corner",
    )  # fmt: skip
    b.output(boxes, scores_f, pairs)
    return b.build()


def _common(*handles: TensorHandle) -> tuple[float, int]:
    """One quantisation covering all `handles`' ranges (PACK wants equal input quantisation)."""
    lo = min((-128 - h.zero_point) * h.scale for h in handles)
    hi = max((127 - h.zero_point) * h.scale for h in handles)
    scale = (hi - lo) / 255
    return scale, int(round(-128 - lo / scale))


DETECTOR_MODELS = {
    "ssd_like": ssd_like,
    "ssd_like_align": lambda: ssd_like(seed=3, half_pixel=False, anchors_per_cell=3),
}
# Only the optimised kernels can run this one.
SSD_OPTIMISED_ONLY = lambda: ssd_like(seed=3, half_pixel=False, anchors_per_cell=3, float_slice_version=5)  # noqa: E731
