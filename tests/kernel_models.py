"""Small int8 models that exercise every code-generator kernel with its options.

Shared by `test_kernels.py` (each is built, run under ASan/UBSan and compared byte for byte with
TFLite's reference kernels) and `regenerate_golden.py` (the golden sources use a few of them).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from ai_edge_litert import schema_py_generated as schema

from tinysched.model.modelgen import ModelBuilder


def conv_options() -> bytes:
    """CONV_2D: strides, SAME/VALID, dilation, every activation, per-tensor and per-channel."""
    b = ModelBuilder(seed=1)
    x = b.input("x", (1, 11, 9, 3))
    t = b.conv2d(x, 8, (3, 3), (2, 2), "SAME", activation="RELU", name="s2_same_relu")
    t = b.conv2d(t, 6, (3, 2), (1, 1), "VALID", dilation=(2, 1), activation="RELU6", name="dil_valid_relu6")
    t = b.conv2d(t, 5, (1, 1), per_channel=False, activation="RELU_N1_TO_1", name="pointwise_per_tensor")
    t = b.conv2d(t, 4, (2, 2), (1, 2), "SAME", dilation=(1, 2), name="mixed_strides_dilation")
    b.output(t)
    return b.build()


def depthwise_options() -> bytes:
    """DEPTHWISE_CONV_2D: depth multiplier, dilation, strides, no bias, per-tensor."""
    b = ModelBuilder(seed=2)
    x = b.input("x", (1, 10, 12, 4))
    t = b.depthwise_conv2d(x, (3, 3), (1, 1), "SAME", depth_multiplier=2, activation="RELU", name="dm2")
    t = b.depthwise_conv2d(t, (3, 3), (2, 2), "VALID", dilation=(1, 1), activation="RELU6", name="s2_valid")
    t = b.depthwise_conv2d(t, (2, 3), (1, 1), "SAME", dilation=(2, 2), per_channel=False, name="dil_pt")
    t = b.depthwise_conv2d(t, (3, 3), use_bias=False, depth_multiplier=3, name="nobias_dm3")
    b.output(t)
    return b.build()


def fully_connected_options() -> bytes:
    """FULLY_CONNECTED: batches, keep_num_dims, per-channel, no bias, activations."""
    b = ModelBuilder(seed=3)
    x = b.input("x", (2, 3, 16))
    t = b.fully_connected(x, 12, activation="RELU", keep_num_dims=True, name="keep_dims")
    t = b.fully_connected(t, 10, per_channel=True, name="per_channel")
    t = b.fully_connected(t, 7, use_bias=False, activation="RELU6", name="no_bias")
    b.output(t)
    return b.build()


def pooling_options() -> bytes:
    """AVERAGE_POOL_2D and MAX_POOL_2D: SAME windows clipped at the edges, strides, activations."""
    b = ModelBuilder(seed=4)
    x = b.input("x", (1, 9, 7, 5))
    a = b.average_pool2d(x, (3, 3), (2, 2), "SAME", name="avg_same")
    a = b.average_pool2d(a, (2, 3), (1, 1), "VALID", activation="RELU", name="avg_valid_relu")
    m = b.max_pool2d(x, (3, 2), (2, 1), "SAME", name="max_same")
    m = b.max_pool2d(m, (2, 2), (2, 2), "VALID", activation="RELU6", name="max_valid_relu6")
    b.output(a, m)
    return b.build()


def add_mul_broadcast() -> bytes:
    """ADD and MUL with different input quantisation, broadcasting, constants and activations."""
    b = ModelBuilder(seed=5)
    x = b.input("x", (1, 4, 5, 6))
    y = b.input("y", (1, 1, 5, 6), scale=1 / 32, zero_point=7)
    z = b.input("z", (1, 4, 1, 1), scale=1 / 100, zero_point=-20)
    s = b.add(x, y, name="add_bcast")
    s = b.add(s, z, activation="RELU", name="add_bcast_relu")
    gate = b.constant(
        np.linspace(-100, 100, 6).astype(np.int8).reshape(1, 1, 1, 6), quant=(1 / 64, 3), name="gate"
    )
    p = b.mul(s, gate, name="mul_const")
    p = b.mul(p, z, activation="RELU6", name="mul_bcast_relu6")
    q = b.mul(x, x, name="square")
    b.output(p, q)
    return b.build()


def mean_logistic_softmax() -> bytes:
    """MEAN over several axis sets, LOGISTIC, SOFTMAX (beta != 1) over rows."""
    b = ModelBuilder(seed=6)
    x = b.input("x", (1, 6, 5, 8))
    m1 = b.mean(x, (1, 2), keepdims=True, name="mean_hw")
    m2 = b.mean(x, (3,), keepdims=False, name="mean_c")
    m3 = b.mean(x, (-3,), keepdims=True, name="mean_h_negative_axis")
    g = b.logistic(m1, name="logistic")
    sm = b.softmax(m2, beta=0.5, name="softmax_beta")
    b.output(g, sm, m3)
    return b.build()


def shapes_and_copies() -> bytes:
    """CONCATENATION (with requantising QUANTIZE), PAD, TRANSPOSE, RESHAPE, SQUEEZE, EXPAND_DIMS."""
    b = ModelBuilder(seed=7)
    x = b.input("x", (1, 4, 6, 3))
    y = b.input("y", (1, 4, 6, 5), scale=1 / 16, zero_point=10)
    c = b.concatenation([x, y], axis=3, name="concat_c")
    c2 = b.concatenation([c, c], axis=1, name="concat_h")
    p = b.pad(c2, [(0, 0), (1, 2), (0, 1), (2, 0)], name="pad")
    perm = b.constant(np.array([0, 3, 1, 2], dtype=np.int32), name="perm")
    (t,) = b.op(
        "TRANSPOSE", [p, perm], [(1, 10, 11, 7)], schema.TransposeOptionsT(), version=2, name="transpose"
    )
    r = b.reshape(t, (1, 10, 77, 1), name="reshape")
    (s,) = b.op("SQUEEZE", [r], [(10, 77)], schema.SqueezeOptionsT(squeezeDims=[0, 3]), name="squeeze")
    axis = b.constant(np.array([1], dtype=np.int32), name="axis")
    (e,) = b.op("EXPAND_DIMS", [s, axis], [(10, 1, 77)], schema.ExpandDimsOptionsT(), name="expand")
    b.output(e)
    return b.build()


def quantize_edges() -> bytes:
    """Float input QUANTIZE, uint8 -> int8 QUANTIZE, int8 -> uint8, DEQUANTIZE to a float output."""
    b = ModelBuilder(seed=8)
    f = b.input("f", (1, 5, 5, 2), dtype="float32")
    u = b.input("u", (1, 5, 5, 2), dtype="uint8", scale=1 / 50, zero_point=128)
    q = b.quantize(f, 1 / 100, 5, "int8", name="quantize_float")
    qu = b.quantize(u, 1 / 40, -3, "int8", name="uint8_to_int8")
    s = b.add(q, qu, name="add")
    out_u8 = b.quantize(s, 1 / 30, 120, "uint8", name="int8_to_uint8")
    d = b.dequantize(s, name="dequantize")
    b.output(d, out_u8)
    return b.build()


KERNEL_MODELS: dict[str, Callable[[], bytes]] = {
    "conv_options": conv_options,
    "depthwise_options": depthwise_options,
    "fully_connected_options": fully_connected_options,
    "pooling_options": pooling_options,
    "add_mul_broadcast": add_mul_broadcast,
    "mean_logistic_softmax": mean_logistic_softmax,
    "shapes_and_copies": shapes_and_copies,
    "quantize_edges": quantize_edges,
}


def hostile_names() -> bytes:
    """A tiny model whose tensor names would break naive C output (comment ends, quotes, newlines)."""
    b = ModelBuilder(seed=9, description='names */ that "hurt"\n#include <evil.h>')
    x = b.input('in*/ "quoted" \\ back\nslash ??/', (1, 4, 4, 2))
    t = b.conv2d(x, 4, (3, 3), activation="RELU", name="conv */ /* nested ??= é")
    t = b.average_pool2d(t, (4, 4), (4, 4), name="pool\r\n\t\x01")
    t = b.reshape(t, (1, 4), name="flat'\"")
    b.output(b.softmax(b.fully_connected(t, 3, name="fc"), name="probs */"))
    return b.build()
