"""Generated int8 models whose shapes hit every branch of the kernels' fast paths.

The CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED and ADD kernels pick a fast path by shape (pointwise
matrix product, tap-rectangle runs paired two pixels at a time, channel blocks of four, word-wise
dot products) and, on cores with the DSP extension, SIMD32 instructions. Each model here mixes the
shapes that change which branch runs: odd channel counts (the odd last output channel, the scalar
byte tails, the depthwise channel tail), odd pixel counts (the unpaired last pixel), padding that
clips windows (edge pixels that cannot pair), strides, dilations, input zero points other than
-128, per-tensor and per-channel scales, every fused activation. `test_kernels_fast.py` runs them
on the host (portable C) and on QEMU (the DSP path) against TFLite's reference kernels.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from ai_edge_litert import schema_py_generated as schema

from tinysched.model.modelgen import ModelBuilder, TensorHandle


def pointwise_shapes() -> bytes:
    """1x1 CONV_2D: odd in/out channels, odd pixel count, stride 2, SAME, per-tensor, activations."""
    b = ModelBuilder(seed=21)
    x = b.input("x", (1, 7, 5, 7), zero_point=-128)
    t = b.conv2d(x, 5, (1, 1), activation="RELU", name="pw_odd_7_to_5")
    t = b.conv2d(t, 9, (1, 1), (2, 2), "SAME", activation="RELU6", name="pw_s2_same")
    t = b.conv2d(t, 16, (1, 1), per_channel=False, name="pw_per_tensor_16")
    t = b.conv2d(t, 3, (1, 1), (1, 2), "VALID", activation="RELU_N1_TO_1", name="pw_strides_1_2")
    b.output(t)
    return b.build()


def pointwise_batches_offsets() -> bytes:
    """1x1 CONV_2D over two batches (pixels pair across the batch boundary), input zero point 37."""
    b = ModelBuilder(seed=22)
    x = b.input("x", (2, 3, 3, 12), zero_point=37)
    t = b.conv2d(x, 8, (1, 1), activation="RELU", name="pw_batches")
    t = b.conv2d(t, 33, (1, 1), name="pw_33")
    b.output(t)
    return b.build()


def conv_kxk_shapes() -> bytes:
    """k x k CONV_2D: SAME/VALID, strides 1 and 2, dilation along either axis, odd channels."""
    b = ModelBuilder(seed=23)
    x = b.input("x", (1, 9, 11, 5), zero_point=5)
    t = b.conv2d(x, 7, (3, 3), (1, 1), "SAME", activation="RELU", name="k3_s1_same")
    t = b.conv2d(t, 6, (3, 3), (2, 2), "SAME", activation="RELU6", name="k3_s2_same")
    u = b.conv2d(x, 4, (3, 3), (2, 2), "VALID", name="k3_s2_valid")
    v = b.conv2d(x, 3, (3, 3), (1, 1), "SAME", dilation=(2, 2), name="k3_dil2_same")
    w = b.conv2d(x, 5, (2, 3), (1, 1), "SAME", dilation=(1, 2), per_channel=False, name="k2x3_dil_w")
    z = b.conv2d(x, 2, (3, 2), (2, 1), "VALID", dilation=(2, 1), activation="RELU_N1_TO_1", name="dil_h")
    b.output(t, u, v, w, z)
    return b.build()


def conv_single_channel_tall() -> bytes:
    """A KWS-like first layer: one input channel, 10x4 filter, stride 2, SAME (windows clipped)."""
    b = ModelBuilder(seed=24)
    x = b.input("x", (1, 21, 9, 1), zero_point=83)
    t = b.conv2d(x, 12, (10, 4), (2, 2), "SAME", activation="RELU", name="k10x4_s2")
    t = b.conv2d(t, 5, (5, 5), (1, 1), "SAME", name="k5_wider_than_input")
    b.output(t)
    return b.build()


def conv_wide_channels() -> bytes:
    """3x3 CONV_2D with in_c 19 (words plus a 3-byte tail per run) and 64 (words only)."""
    b = ModelBuilder(seed=25)
    x = b.input("x", (1, 6, 7, 19), zero_point=-128)
    t = b.conv2d(x, 64, (3, 3), (1, 1), "SAME", activation="RELU", name="k3_19_to_64")
    t = b.conv2d(t, 11, (3, 3), (1, 1), "VALID", name="k3_64_to_11")
    b.output(t)
    return b.build()


def depthwise_shapes() -> bytes:
    """DEPTHWISE_CONV_2D: channels 6 and 13 (not multiples of 4), multipliers 1, 2, 3, dilation."""
    b = ModelBuilder(seed=26)
    x = b.input("x", (1, 7, 9, 13), zero_point=-128)
    t = b.depthwise_conv2d(x, (3, 3), (1, 1), "SAME", activation="RELU", name="dw13_s1_same")
    t = b.depthwise_conv2d(t, (3, 3), (2, 2), "VALID", activation="RELU6", name="dw13_s2_valid")
    u = b.depthwise_conv2d(x, (3, 3), (2, 2), "SAME", depth_multiplier=2, name="dw13_m2")
    y = b.input("y", (1, 8, 6, 6), zero_point=-7)
    v = b.depthwise_conv2d(y, (3, 3), (1, 1), "SAME", dilation=(2, 2), per_channel=False, name="dw6_dil2")
    v = b.depthwise_conv2d(v, (5, 3), (1, 1), "SAME", depth_multiplier=3, name="dw6_m3")
    w = b.depthwise_conv2d(
        y, (3, 3), (1, 2), "SAME", dilation=(1, 2), activation="RELU_N1_TO_1", name="dw_dil_w"
    )
    z = b.input("z", (1, 5, 5, 16), zero_point=90)
    z = b.depthwise_conv2d(z, (3, 3), (1, 1), "SAME", activation="RELU", name="dw16_offset")
    b.output(t, u, v, w, z)
    return b.build()


def fully_connected_shapes() -> bytes:
    """FULLY_CONNECTED: odd depths (13, 37), batches, per-tensor and per-channel, no bias."""
    b = ModelBuilder(seed=27)
    x = b.input("x", (3, 13), zero_point=-128)
    t = b.fully_connected(x, 37, activation="RELU", name="fc_13_37")
    t = b.fully_connected(t, 7, per_channel=True, name="fc_37_7_per_channel")
    u = b.input("u", (1, 64), zero_point=20)
    u = b.fully_connected(u, 10, use_bias=False, activation="RELU6", name="fc_64_10")
    b.output(t, u)
    return b.build()


def add_shapes() -> bytes:
    """ADD: same shapes (the flat path), odd element count, and a broadcast (the generic walk)."""
    b = ModelBuilder(seed=28)
    x = b.input("x", (1, 5, 7, 3), zero_point=-128)
    y = b.input("y", (1, 5, 7, 3), scale=1 / 30, zero_point=20)
    s = b.add(x, y, activation="RELU", name="add_flat")
    z = b.input("z", (1, 1, 7, 3), scale=1 / 9, zero_point=-3)
    t = b.add(s, z, name="add_broadcast")
    b.output(s, t)
    return b.build()


def add_scales() -> bytes:
    """ADD on equal shapes (the DSP path: four elements a word, SMMLAR rescaling) over scales that
    move every shift: inputs 1:1, 8:1 and 1:60 apart, outputs coarser and finer than the inputs
    (output shifts from about -21 to -14), zero points at both ends, RELU6 and RELU (the bytewise
    clamp), element counts with 0..3 tail elements (a chain of three reads the last one's output)."""
    b = ModelBuilder(seed=29)
    x = b.input("x", (1, 9, 13, 5), scale=0.02, zero_point=-128)
    y = b.input("y", (1, 9, 13, 5), scale=0.16, zero_point=127)
    s = b.add(x, y, activation="RELU6", output_quant=(0.05, -20), name="add_8_to_1")
    t = b.add(s, x, output_quant=(0.5, 3), name="add_coarse_out")
    u = b.add(t, y, activation="RELU", output_quant=(0.004, -128), name="add_fine_out")
    p = b.input("p", (1, 2, 3, 7), scale=0.001, zero_point=0)
    q = b.input("q", (1, 2, 3, 7), scale=0.06, zero_point=-1)
    v = b.add(p, q, output_quant=(0.03, 5), name="add_1_to_60_n42")
    w = b.input("w", (2, 11), scale=0.1, zero_point=-5)
    z = b.add(w, w, name="add_same_tensor_n22")
    b.output(u, v, z)
    return b.build()


def conv_patch_shapes() -> bytes:
    """Small receptive fields (in_c < 8): the KWS first layer exactly (49x10x1, 10x4, stride 2, SAME:
    windows clipped on every side), 3-channel 3x3 layers (stride 1 and 2, K = 27: words plus a
    padded tail), an odd out_c (the last channel's exact-length dot product) and in_c 1 with a 1x1
    filter (K = 1)."""
    b = ModelBuilder(seed=29)
    x = b.input("x", (1, 49, 10, 1), zero_point=83)
    t = b.conv2d(x, 64, (10, 4), (2, 2), "SAME", activation="RELU", name="kws_first_10x4")
    y = b.input("y", (1, 11, 9, 3), zero_point=-128)
    u = b.conv2d(y, 16, (3, 3), (1, 1), "SAME", activation="RELU", name="rgb_3x3_s1")
    v = b.conv2d(y, 7, (3, 3), (2, 2), "SAME", activation="RELU6", name="rgb_3x3_s2_odd")
    z = b.input("z", (1, 6, 5, 1), zero_point=-3)
    w = b.conv2d(z, 5, (1, 1), (1, 1), "VALID", name="in1_1x1")
    q = b.conv2d(z, 3, (5, 3), (1, 1), "SAME", dilation=(1, 2), name="in1_dil_w")
    b.output(t, u, v, w, q)
    return b.build()


def pointwise_strided() -> bytes:
    """1x1 CONV_2D stride 2 SAME (ResNet's shortcut convolutions: no padding), even and odd rows."""
    b = ModelBuilder(seed=30)
    x = b.input("x", (1, 8, 8, 16), zero_point=-128)
    t = b.conv2d(x, 32, (1, 1), (2, 2), "SAME", name="pw_s2_16_32")
    y = b.input("y", (1, 7, 9, 5), zero_point=11)
    u = b.conv2d(y, 6, (1, 1), (2, 2), "SAME", activation="RELU", name="pw_s2_odd")
    b.output(t, u)
    return b.build()


def depthwise_channel_counts() -> bytes:
    """DEPTHWISE_CONV_2D 3x3 with 8, 16, 24 and 64 channels, stride 1 and 2, SAME (padding on both
    sides: full-window runs between clipped pixels), rows wider than one chunk (40 > 32), a 5x5
    filter, RELU6 and no activation (the bytewise clamp)."""
    b = ModelBuilder(seed=31)
    x = b.input("x", (1, 9, 40, 8), zero_point=-128)
    t = b.depthwise_conv2d(x, (3, 3), (1, 1), "SAME", activation="RELU", name="dw8_wide")
    y = b.input("y", (1, 10, 10, 16), zero_point=-128)
    u = b.depthwise_conv2d(y, (3, 3), (2, 2), "SAME", activation="RELU6", name="dw16_s2")
    z = b.input("z", (1, 7, 5, 24), zero_point=3)
    v = b.depthwise_conv2d(z, (3, 3), (1, 1), "SAME", name="dw24")
    v = b.depthwise_conv2d(v, (5, 5), (1, 1), "SAME", activation="RELU", name="dw24_5x5")
    w = b.input("w", (1, 6, 6, 64), zero_point=-128)
    r = b.depthwise_conv2d(w, (3, 3), (1, 1), "SAME", activation="RELU", name="dw64")
    r = b.depthwise_conv2d(r, (3, 3), (2, 2), "SAME", activation="RELU", name="dw64_s2")
    r = b.depthwise_conv2d(r, (3, 3), (1, 1), "VALID", name="dw64_valid")
    b.output(t, u, v, r)
    return b.build()


def depthwise_wide_runs() -> bytes:
    """DEPTHWISE_CONV_2D 3x3 whose chunks hold 8 or more full-window pixels (the DSP path's widened
    filter, dw_runw3x3) next to clipped edge pixels: 13 channels (three blocks and a tail), stride 2
    across a 40-wide row (a 20-pixel chunk; SAME and VALID), dilation 2 in height, input zero points 5 and -128."""
    b = ModelBuilder(seed=37)
    x = b.input("x", (1, 4, 19, 13), zero_point=5)
    t = b.depthwise_conv2d(x, (3, 3), (1, 1), "SAME", activation="RELU", name="dw13_runs")
    y = b.input("y", (1, 5, 40, 12), zero_point=-128)
    u = b.depthwise_conv2d(y, (3, 3), (2, 2), "SAME", activation="RELU6", name="dw12_s2_runs")
    w = b.depthwise_conv2d(y, (3, 3), (2, 2), "VALID", name="dw12_s2_valid")  # y read twice: not in place
    z = b.input("z", (1, 6, 10, 8), zero_point=-128)
    v = b.depthwise_conv2d(z, (3, 3), (1, 1), "SAME", dilation=(2, 1), name="dw8_dil_h2")
    b.output(t, u, v, w)
    return b.build()


def helium_shapes() -> bytes:
    """Shapes that pick between the Helium (MVE) paths' branches: a 3x3 patch of K = 63 (more than
    the 48 bytes kept in vector registers), in_c 16 with stride 2 (whole-vector rows for pairs and
    for the unpaired edge pixels), in_c 32 with dilation 2 (runs per tap), depthwise with 12 and 20
    channels (a short last block of four), a 5x5 stride-2 depthwise (pairs of whole windows 2 apart)
    and a 1x1 with 24 input channels (a whole vector plus a predicated tail)."""
    b = ModelBuilder(seed=32)
    x = b.input("x", (1, 9, 10, 7), zero_point=-128)
    t = b.conv2d(x, 16, (3, 3), (1, 1), "SAME", activation="RELU", name="patch_k63")
    t = b.conv2d(t, 16, (3, 3), (2, 2), "SAME", activation="RELU", name="rows_in16_s2")
    u = b.conv2d(t, 32, (1, 1), name="pw_16_32")
    u = b.conv2d(u, 8, (3, 3), (1, 1), "SAME", dilation=(2, 2), name="runs_in32_dil2")
    y = b.input("y", (1, 11, 13, 12), zero_point=-9)
    v = b.depthwise_conv2d(y, (3, 3), (1, 1), "SAME", activation="RELU6", name="dw12")
    z = b.input("z", (1, 12, 14, 20), zero_point=4)
    w = b.depthwise_conv2d(z, (5, 5), (2, 2), "SAME", name="dw20_5x5_s2")
    q = b.input("q", (1, 5, 6, 24), zero_point=-128)
    q = b.conv2d(q, 10, (1, 1), activation="RELU", name="pw_24_10")
    b.output(u, v, w, q)
    return b.build()


def conv_widened() -> bytes:
    """CONV_2D through the widened path (DSP cores, ts_kernels.h "CONV_2D wide"): a large first layer
    makes the peak, so the later convolutions get planned scratch (the ``wide`` variant): dilation
    along one axis with in_c 4 (whole words per tap), a 5x5 stride-2 filter over 7 channels (K = 175:
    per-element widening, a 3-byte tail on the last channel), a 1x1 over 9 channels (K = 9: the
    patch first, then words) with 13 outputs (a short last block of six), two batches. The peak
    convolution (3 -> 32 channels, its output much larger than its input) runs the default kernel,
    whose widened path takes the leading rows with its strip in its own output and leaves the last
    rows to the patch path."""
    b = ModelBuilder(seed=33)
    z = b.input("z", (1, 16, 16, 3), zero_point=-128)
    z = b.conv2d(z, 32, (3, 3), (1, 1), "SAME", activation="RELU", name="peak_3_to_32")
    # a global MEAN, not AVERAGE_POOL_2D: a stage would stream the peak layer into the pool's sums
    z = b.mean(z, (1, 2), keepdims=True, name="pool")
    x = b.input("x", (1, 9, 11, 4), zero_point=7)
    t = b.conv2d(x, 7, (3, 3), (1, 1), "SAME", dilation=(1, 2), activation="RELU", name="dil_w_4_to_7")
    t = b.conv2d(t, 9, (5, 5), (2, 2), "SAME", per_channel=True, name="k5_s2_7_to_9")
    t = b.conv2d(t, 13, (1, 1), activation="RELU6", name="pw_9_to_13")
    y = b.input("y", (2, 5, 7, 8), zero_point=-3)
    u = b.conv2d(y, 5, (3, 3), (1, 1), "VALID", activation="RELU_N1_TO_1", name="batches_8_to_5")
    b.output(z, t, u)
    return b.build()


def conv_pairs_widened() -> bytes:
    """k x k CONV_2D pixel pairs widened once on the stack (DSP cores: whole filter rows of whole
    words, K <= 144): 3x3 over 16 channels SAME at the plan's peak (the default kernel; clipped top
    and bottom rows still pair, the edge columns do not), stride 2 into an odd out_c (the last
    channel alone), 3x3 over 4 channels on two batches (K = 36), 1x3 over 8 channels."""
    b = ModelBuilder(seed=34)
    x = b.input("x", (1, 15, 17, 16), zero_point=-128)
    t = b.conv2d(x, 16, (3, 3), (1, 1), "SAME", activation="RELU", name="k3_16_peak")
    t = b.conv2d(t, 13, (3, 3), (2, 2), "SAME", activation="RELU6", name="k3_s2_16_to_13")
    y = b.input("y", (2, 6, 7, 4), zero_point=9)
    u = b.conv2d(y, 6, (3, 3), (1, 1), "VALID", name="k3_4_batches")
    z = b.input("z", (1, 5, 9, 8), zero_point=-1)
    v = b.conv2d(z, 5, (1, 3), (1, 1), "SAME", per_channel=False, name="k1x3_8")
    b.output(t, u, v)
    return b.build()


def conv_pruned_channels() -> bytes:
    """CONV_2D layers with pruned channels, as trained models keep them (a filter scale near 0: shifts
    down to -28, biases near 2^24-2^30): in the widened path's compile-time ts_rq table some are a
    constant (the formula gives one value over the accumulators' whole range), others, whose range
    crosses a rounding boundary, go through the formula channel by channel, the rest take ts_rq's
    steps (ts_simd.h, ts_rq_form). A large first layer makes the peak, so both get planned scratch."""
    b = ModelBuilder(seed=35)
    z = b.input("z", (1, 24, 24, 3), zero_point=-128)
    z = b.conv2d(z, 32, (3, 3), (1, 1), "SAME", activation="RELU", name="peak_3_to_32")
    # a global MEAN, not AVERAGE_POOL_2D: a stage would stream the peak layer into the pool's sums
    z = b.mean(z, (1, 2), keepdims=True, name="pool")
    pruned = [1.0, 3e-5, 1e-5, 1.0, 3e-6, 1e-6, 2e-5, 1e-4, 5e-6, 1.0, 4e-5, 2e-6]
    x = b.input("x", (1, 6, 7, 64), zero_point=-128)
    t = b.conv2d(x, 12, (3, 3), (1, 1), "SAME", activation="RELU6", scale_factors=pruned, name="k3_pruned")
    t = b.conv2d(t, 12, (1, 1), scale_factors=pruned[::-1], name="pw_pruned")
    b.output(z, t)
    return b.build()


def conv_wide_rq_forms() -> bytes:
    """1x1 CONV_2D chained through the widened kernel's asm channel loop (ts_conv2d_s8.c
    wide_channels) at every loop entry: K = 4, 12, 16, 20, 24, 28 (after the peeled group 0 to 6
    groups, every remainder of the four-group pass), 35 pixels (five full blocks and a short one),
    channels with a right shift and without (a small output scale: r == 0, left up to 2), with the
    bytewise clamp (RELU, RELU6) and without (bounds -128 and 127). A large 1x1 layer makes the
    peak, so the chain gets planned scratch; it runs the default kernel, whose widened leading
    pixels (a flat layer: any number of pixels, then a second pass with a one-block strip; the last
    few pixels as one row of the pointwise path) prepare ts_rq four channels at a time (no table);
    the 3x3 layer before it leaves the last channel's tail (K = 18; over 3 channels the stem path
    would take it) to C in its widened rows. Then
    last blocks of one, three and four pixels (the three-pixel loop, a full block), each stored
    through the routine's buffer, and a 3x3 layer whose strips are filled a filter row at a time."""
    b = ModelBuilder(seed=36)
    z = b.input("z", (1, 20, 20, 2), zero_point=-128)
    z = b.conv2d(z, 8, (3, 3), (1, 1), "SAME", activation="RELU", name="k3_2_to_8")
    z = b.conv2d(z, 32, (1, 1), activation="RELU6", name="peak_pw_8_to_32")
    # a global MEAN, not AVERAGE_POOL_2D: a stage would stream the peak layer into the pool's sums
    z = b.mean(z, (1, 2), keepdims=True, name="pool")
    t = b.input("x", (1, 5, 7, 4), zero_point=-5)
    layers = [(12, "NONE"), (16, "RELU6"), (20, "NONE"), (24, "RELU"), (28, "NONE"), (7, "RELU6")]
    for i, (c, act) in enumerate(layers):
        factors = [40.0 if j % 3 == 1 else 1.0 for j in range(c)]
        out_q = (0.002, 3) if i == 2 else None  # M above 1/2: no right shift
        t = b.conv2d(
            t, c, (1, 1), activation=act, scale_factors=factors, output_quant=out_q, name=f"pw{i}_{c}"
        )
    # last blocks of one (13 pixels) and three (9 pixels: the three-pixel loop) and four (16)
    u = b.input("u", (1, 1, 13, 12), zero_point=2)
    u = b.conv2d(u, 10, (1, 1), activation="RELU6", name="pw_13px")
    v = b.input("v", (1, 3, 3, 16), zero_point=-128)
    # fewer output channels than input ones keeps these two off the pixel table (ts_conv2d_s8_pixels)
    v = b.conv2d(v, 15, (1, 1), name="pw_9px")
    w = b.input("w", (1, 4, 4, 8), zero_point=0)
    w = b.conv2d(w, 7, (1, 1), activation="RELU", name="pw_16px")
    # filter rows as runs of whole words (in_c 8): SAME windows clipped on every side, rows
    # dilated, stride 2 down the columns
    r = b.input("r", (1, 9, 10, 8), zero_point=-7)
    r = b.conv2d(r, 12, (3, 3), (2, 1), "SAME", dilation=(2, 1), activation="RELU", name="k3_dil_h_8_to_12")
    b.output(z, t, u, v, w, r)
    return b.build()


def depthwise_blocks() -> bytes:
    """DEPTHWISE_CONV_2D shapes the blocks path (compile-time tables, filter_w <= 3) takes beyond 3x3:
    a 5x3 filter over 6 channels (one block and a two-channel tail), 2x2 VALID, 1x3 stride 2 and
    3x1 with a window that clips every row and no bias; input zero points -128, 0 and 9."""
    b = ModelBuilder(seed=41)
    x = b.input("x", (1, 9, 7, 6), zero_point=-128)
    t = b.depthwise_conv2d(x, (5, 3), (1, 1), "SAME", activation="RELU", name="dw6_5x3")
    y = b.input("y", (1, 6, 8, 12), zero_point=0)
    u = b.depthwise_conv2d(y, (2, 2), (1, 1), "VALID", activation="RELU6", name="dw12_2x2")
    u = b.depthwise_conv2d(u, (1, 3), (2, 2), "SAME", name="dw12_1x3_s2")
    z = b.input("z", (1, 2, 5, 8), zero_point=9)
    v = b.depthwise_conv2d(z, (3, 1), (1, 1), "SAME", use_bias=False, name="dw8_3x1_nobias")
    b.output(t, u, v)
    return b.build()


def depthwise_blocks_clamped() -> bytes:
    """3x3 DEPTHWISE_CONV_2D through the blocks where the activation range is narrower than int8
    (the bytewise clamp dw_blocks_full leaves out otherwise): RELU6 to [-10, 110] and RELU to
    [5, 127] over 16 channels, whole windows, windows with a row or a column outside the input and
    corners; then a 2-pixel-wide input, where every window has its left or right column outside."""
    b = ModelBuilder(seed=44)
    x = b.input("x", (1, 6, 7, 16), zero_point=-3)
    t = b.depthwise_conv2d(
        x, (3, 3), (1, 1), "SAME", activation="RELU6", output_quant=(0.05, -10), name="dw16_relu6"
    )
    t = b.depthwise_conv2d(
        t, (3, 3), (1, 1), "SAME", activation="RELU", output_quant=(0.04, 5), name="dw16_relu_zp5"
    )
    y = b.input("y", (1, 5, 2, 8), zero_point=12)
    u = b.depthwise_conv2d(y, (3, 3), (1, 1), "SAME", activation="RELU", name="dw8_two_columns")
    b.output(t, u)
    return b.build()


def depthwise_blocks_runs() -> bytes:
    """3x3 DEPTHWISE_CONV_2D through the blocks' runs (dw_blocks_full: a row's whole windows in one
    call) in place, where each pixel goes to a ring slot and the lagged one is copied out: rows of
    24 pixels (runs longer than the ring, so it wraps inside a run), 8 channels as VWW's first
    depthwise layer, RELU6 (clamped) then no activation (the full int8 range: no clamp), a stride-2
    VALID layer (every window inside: the whole row one run, two pixels from one window to the
    next), and 4 channels (one block a pixel)."""
    b = ModelBuilder(seed=45)
    x = b.input("x", (1, 5, 24, 8), zero_point=7)
    t = b.depthwise_conv2d(x, (3, 3), (1, 1), "SAME", activation="RELU6", name="dw8_runs_relu6")
    t = b.depthwise_conv2d(t, (3, 3), (1, 1), "SAME", name="dw8_runs_no_clamp")
    t = b.depthwise_conv2d(t, (3, 3), (2, 2), "VALID", activation="RELU", name="dw8_runs_s2_valid")
    y = b.input("y", (1, 4, 13, 4), zero_point=-20)
    u = b.depthwise_conv2d(y, (3, 3), (1, 1), "SAME", activation="RELU", name="dw4_runs")
    b.output(t, u)
    return b.build()


def conv_quads_tables() -> bytes:
    """CONV_2D of small receptive fields through the quads with the generator's tables: 3x3x3
    stride 2 over 9 output pixels (two whole quads and a last pixel), 10x4x1 with RELU
    (K = 40, the largest), 2x2x7 VALID (K = 28); input zero points -128, 4 and 0."""
    b = ModelBuilder(seed=43)
    x = b.input("x", (1, 5, 6, 3), zero_point=-128)
    t = b.conv2d(x, 6, (3, 3), (2, 2), "SAME", name="c3x3x3_s2")
    y = b.input("y", (1, 12, 6, 1), zero_point=4)
    u = b.conv2d(y, 12, (10, 4), (2, 2), "SAME", activation="RELU", name="c10x4")
    z = b.input("z", (1, 5, 5, 7), zero_point=0)
    v = b.conv2d(z, 9, (2, 2), (1, 1), "VALID", activation="RELU6", name="c2x2x7")
    b.output(t, u, v)
    return b.build()


def conv_quads_rows() -> bytes:
    """CONV_2D quads whose four windows lie inside the input in one output row (quad_fill_inside):
    3x3x3 stride 2 SAME over a 20-wide input as VWW's first layer (rows of 10: two such quads, then
    one across the row's end, and the clipped right column and bottom row), 3x3x2 with dilation
    (2, 1) and stride 1 VALID (windows two rows apart, 12-pixel rows: three quads a row), 1x5x3
    stride (1, 3) (15-byte runs: quad_run's word loop); zero points 5, -7, 0."""
    b = ModelBuilder(seed=46)
    x = b.input("x", (1, 9, 20, 3), zero_point=5)
    t = b.conv2d(x, 8, (3, 3), (2, 2), "SAME", activation="RELU6", name="c3x3x3_s2_rows")
    y = b.input("y", (1, 9, 14, 2), zero_point=-7)
    u = b.conv2d(y, 5, (3, 3), (1, 1), "VALID", dilation=(2, 1), name="c3x3x2_dil_h2")
    z = b.input("z", (1, 3, 28, 3), zero_point=0)
    v = b.conv2d(z, 6, (1, 5), (1, 3), "VALID", activation="RELU", name="c1x5x3_s3")
    b.output(t, u, v)
    return b.build()


def conv_stem_shapes() -> bytes:
    """3x3 CONV_2D over 3 input channels through the stem path (DSP cores: ts_conv2d_s8.c
    stem_pixels, the generator's stem table, four output channels a pass): stride 1 SAME (windows
    clipped on all four sides, from patches) into 5 channels (a last group of one), stride 2 SAME
    over an odd width and height (clipped on all sides) into 6 with RELU6 and an output zero point
    of -20 (the bytewise clamp), stride (2, 1) VALID per tensor into 7 (a last group of three),
    two batches into 8 with pruned channels (constants in the table: filter, bias and m zero), stride (1, 2) SAME
    into 3 with RELU6 (a lone group of three, clamped); over a 4x45 input (its first and last
    output rows clipped: patches of up to 19 and 10 windows side by side) strides 1 and 2 into 4 and
    5; input zero points 37, -128 and -7."""
    b = ModelBuilder(seed=48)
    x = b.input("x", (1, 9, 13, 3), zero_point=37)
    t = b.conv2d(x, 5, (3, 3), (1, 1), "SAME", activation="RELU", name="stem_s1_same_5")
    u = b.conv2d(
        x, 6, (3, 3), (2, 2), "SAME", activation="RELU6", output_quant=(0.02, -20), name="stem_s2_relu6_6"
    )
    v = b.conv2d(x, 7, (3, 3), (2, 1), "VALID", per_channel=False, name="stem_s21_valid_7")
    pruned = [1.0, 1e-6, 1.0, 3e-6, 1.0, 1.0, 2e-6, 1.0]
    y = b.input("y", (2, 6, 7, 3), zero_point=-128)
    w = b.conv2d(y, 8, (3, 3), (2, 2), "SAME", scale_factors=pruned, name="stem_batches_pruned_8")
    z = b.conv2d(y, 3, (3, 3), (1, 2), "SAME", activation="RELU6", name="stem_s12_3")
    r = b.input("r", (1, 4, 45, 3), zero_point=-7)
    r1 = b.conv2d(r, 4, (3, 3), (1, 1), "SAME", name="stem_wide_rows_s1")
    r2 = b.conv2d(r, 5, (3, 3), (2, 2), "SAME", activation="RELU", name="stem_wide_rows_s2")
    b.output(t, u, v, w, z, r1, r2)
    return b.build()


def avg_pool_lanes() -> bytes:
    """AVERAGE_POOL_2D summed four channels a word in 16-bit lanes (DSP cores, up to 255 taps): a
    global pool of exactly 255 taps (15x17) over 6 channels (a two-channel tail), one of 256 taps
    (16x16: the 32-bit loop), SAME 3x3 windows clipped at the edges over 12 channels with RELU."""
    b = ModelBuilder(seed=44)
    x = b.input("x", (1, 15, 17, 6), zero_point=-128)
    a = b.average_pool2d(x, (15, 17), (1, 1), name="gap_255")
    y = b.input("y", (1, 16, 16, 8), zero_point=5)
    c = b.average_pool2d(y, (16, 16), (16, 16), name="gap_256")
    z = b.input("z", (1, 7, 9, 12), zero_point=0)
    d = b.average_pool2d(z, (3, 3), (2, 2), "SAME", activation="RELU", name="avg3x3_same")
    b.output(a, c, d)
    return b.build()


def avg_pool_shapes() -> bytes:
    """AVERAGE_POOL_2D windows for the Helium path (16-bit sums, the division as a multiply by a
    reciprocal): 3x3 stride 2 SAME over 13 channels (windows clipped to 4 and 6 taps, so ties round
    away from zero; a block of eight channels and a predicated tail of five), 2x3 VALID with RELU6,
    a 1x1 window (count 1), global pools of 16x16 = 256 taps (the 16-bit bound) and of 17x16 (the
    portable loop)."""
    b = ModelBuilder(seed=44)
    x = b.input("x", (1, 9, 11, 13), zero_point=-7)
    t = b.average_pool2d(x, (3, 3), (2, 2), "SAME", name="avg3_s2_same")
    u = b.average_pool2d(x, (2, 3), (1, 1), "VALID", activation="RELU6", name="avg2x3_relu6")
    v = b.average_pool2d(x, (1, 1), (1, 1), "VALID", name="avg1x1")
    y = b.input("y", (1, 16, 16, 20), zero_point=-128)
    w = b.average_pool2d(y, (16, 16), (16, 16), name="avg_global_256")
    z = b.input("z", (1, 17, 16, 8), zero_point=100)
    g = b.average_pool2d(z, (17, 16), (17, 16), name="avg_global_272")
    b.output(t, u, v, w, g)
    return b.build()


def conv_quads_helium() -> bytes:
    """k x k CONV_2D through the Helium quads (four adjacent whole-width windows, the output apart
    from the input: x and y are each read by two convolutions): 3x3 SAME over 12 channels (rows of
    36 bytes: two vectors and a tail of 4; top and bottom rows clipped) into 19 channels (a block of
    16 and one of 3), 2x5 VALID stride 2 (60-byte rows: three vectors and a tail of 12), 3x3 over 32
    channels per-tensor with RELU6, input zero points 5 and -128."""
    b = ModelBuilder(seed=45)
    x = b.input("x", (1, 8, 13, 12), zero_point=5)
    t = b.conv2d(x, 19, (3, 3), (1, 1), "SAME", activation="RELU", name="q3x3_12_to_19")
    u = b.conv2d(x, 6, (2, 5), (2, 2), "VALID", name="q2x5_s2")
    y = b.input("y", (1, 6, 11, 32), zero_point=-128)
    v = b.conv2d(y, 8, (3, 3), (1, 1), "SAME", activation="RELU6", per_channel=False, name="q3x3_32")
    w = b.conv2d(y, 5, (1, 1), name="pw_32_5")
    b.output(t, u, v, w)
    return b.build()


def depthwise_pixels_helium() -> bytes:
    """DEPTHWISE_CONV_2D of 32 channels or more on Helium, one pixel at a time (ts_mve.h
    ts_mve_depthwise_pixels; every input read twice, so nothing runs in place): 37 channels (a pass
    of two blocks, a whole block and a tail of five) SAME with RELU6, stride 2, dilation 2 in width
    (edge pixels whose tap columns leave the input), a 5x3 filter; 48 channels VALID and stride 2."""
    b = ModelBuilder(seed=46)
    x = b.input("x", (1, 7, 9, 37), zero_point=-5)
    t = b.depthwise_conv2d(x, (3, 3), (1, 1), "SAME", activation="RELU6", name="dw37_same")
    u = b.depthwise_conv2d(x, (3, 3), (2, 2), "SAME", name="dw37_s2")
    v = b.depthwise_conv2d(x, (3, 3), (1, 1), "SAME", dilation=(1, 2), per_channel=False, name="dw37_dil_w")
    w = b.depthwise_conv2d(x, (5, 3), (1, 1), "SAME", activation="RELU", name="dw37_5x3")
    y = b.input("y", (1, 6, 6, 48), zero_point=-128)
    r = b.depthwise_conv2d(y, (3, 3), (1, 1), "VALID", name="dw48_valid")
    q = b.depthwise_conv2d(y, (3, 3), (2, 2), "SAME", activation="RELU", name="dw48_s2")
    b.output(t, u, v, w, r, q)
    return b.build()


def stream_pool_rows() -> bytes:
    """A DS-CNN stage streamed into its global average pool (tinysched.memory.stream.global_pool):
    a head 3x3 over 3 channels into 32, a depthwise 3x3 and two 1x1 32 -> 32 on rows of 5 pixels
    (ts_conv2d_s8_staged on each row: a three and a last two, the generator's table on DSP cores,
    eight groups a turn; the first without an activation, so unclamped, the second with RELU6), the
    pool over 9x5 taps of 32 channels adding each row into its int32 sums (ts_avg_pool2d_s8_rows),
    with RELU after it and input zero point 9 (sums of either sign, ties rounded away from zero)."""
    b = ModelBuilder(seed=47)
    x = b.input("x", (1, 9, 5, 3), zero_point=9)
    t = b.conv2d(x, 32, (3, 3), activation="RELU", name="head")
    t = b.depthwise_conv2d(t, (3, 3), name="dw")
    t = b.conv2d(t, 32, (1, 1), name="pw_rows_of_5")
    t = b.conv2d(t, 32, (1, 1), activation="RELU6", name="pw_rows_of_5_relu6")
    b.output(b.average_pool2d(t, (9, 5), (1, 1), activation="RELU", name="pool_rows"))
    return b.build()


def stream_pool_narrow() -> bytes:
    """Rows of 3 pixels into a global pool: a head 3x3 over 4 channels into 8, a 1x1 8 -> 16
    per-tensor (ts_conv2d_s8_staged on each row: one three, chunk 3), the pool over 9x3 taps of 16
    channels, input zero point -128 (sums of -128s)."""
    b = ModelBuilder(seed=48)
    x = b.input("x", (1, 9, 3, 4), zero_point=-128)
    t = b.conv2d(x, 8, (3, 3), activation="RELU", name="head_rows_of_3")
    t = b.conv2d(t, 16, (1, 1), per_channel=False, name="pw_rows_of_3")
    b.output(b.average_pool2d(t, (9, 3), (1, 1), name="pool_narrow"))
    return b.build()


def stream_pad_rows() -> bytes:
    """A PAD streamed row by row between a convolution and a pooling (tinysched.memory.stream.row_pad:
    its zero point cannot be the pool's padding after a convolution without an activation): 2 rows
    above, 1 below, none left, 2 right over 5 channels (rows of padding alone, rows partly the
    input's, calls of several rows from the head), into a 3x3 stride-2 MAX_POOL_2D."""
    b = ModelBuilder(seed=49)
    x = b.input("x", (1, 11, 7, 3), zero_point=-20)
    c = b.conv2d(x, 5, (3, 3), padding="VALID", output_quant=(0.04, 11), name="conv_no_act")
    p = b.pad(c, [(0, 0), (2, 1), (0, 2), (0, 0)], name="pad_2_1_0_2")
    b.output(b.max_pool2d(p, (3, 3), (2, 2), "VALID", name="pool_after_pad"))
    return b.build()


def conv_quads_few() -> bytes:
    """CONV_2D quads whose last quad holds 1, 2 or 3 pixels, each computed from the generator's table
    (quad_channels_few: an asm channel loop per pixel): 10x4x1 stride 2 SAME with RELU over 5x5
    output pixels (a lone last pixel; 10 groups, two a pass), 3x3x2 VALID over 3x5 pixels without an
    activation (a last three; 5 groups, one a pass; no clamp), 2x2x3 VALID with RELU6 over 3x6
    pixels (a last two; 3 groups; clamped at both ends); input zero points 3, -128 and 21."""
    b = ModelBuilder(seed=50)
    x = b.input("x", (1, 9, 10, 1), zero_point=3)
    t = b.conv2d(x, 8, (10, 4), (2, 2), "SAME", activation="RELU", name="few_10x4_lone")
    y = b.input("y", (1, 5, 7, 2), zero_point=-128)
    u = b.conv2d(y, 7, (3, 3), (1, 1), "VALID", name="few_3x3x2_three")
    z = b.input("z", (1, 4, 7, 3), zero_point=21)
    v = b.conv2d(
        z, 6, (2, 2), (1, 1), "VALID", activation="RELU6", output_quant=(0.02, -3), name="few_2x2x3_two"
    )
    b.output(t, u, v)
    return b.build()


def conv_quads_one_group() -> bytes:
    """CONV_2D quads of one group (K <= 4: quad_channels' loop without its group loop) as HAR's head,
    each a streamed stage into a 2x2 max pool and a FULLY_CONNECTED sink over rows of two or three
    pixels: 2x2x1 VALID into 16 channels without an activation (the four SSAT bytes stored as they
    are), 1x3x1 SAME with RELU6 (K = 3 rounded up to a word; packed, clamped at both ends), 2x1x2
    VALID with RELU and an output zero point above -128 (clamped at the bottom); input zero points
    3, -5 and 0."""
    b = ModelBuilder(seed=56)
    outs = []
    for name, shape, zp, filt, pad, act, quant in (
        ("2x2", (1, 18, 3, 1), 3, (2, 2), "VALID", "NONE", (0.05, -2)),
        ("1x3_relu6", (1, 16, 3, 1), -5, (1, 3), "SAME", "RELU6", (0.03, -100)),
        ("2x1x2_relu", (1, 17, 4, 2), 0, (2, 1), "VALID", "RELU", (0.02, -30)),
    ):
        x = b.input(f"x_{name}", shape, zero_point=zp)
        t = b.conv2d(x, 16, filt, (1, 1), pad, activation=act, output_quant=quant, name=f"one_group_{name}")
        t = b.max_pool2d(t, (2, 2), (2, 2), "VALID", name=f"one_group_pool_{name}")
        outs.append(b.fully_connected(t, 6, activation="RELU", flatten=True, name=f"one_group_fc_{name}"))
    b.output(*outs)
    return b.build()


def stream_rows_checked() -> bytes:
    """A DS-CNN-like stage of rows of 5 pixels streamed into its global pool, the per-call checks
    made once before its loop (ts_conv2d_s8_checks, ts_depthwise_conv2d_s8_checks): a head 3x3
    over 4 channels into 20 (quads: a quad and a lone pixel a row, 9 groups), a 5x5 depthwise (no
    blocks: the ts_rq path whose bound the checks looked at), 1x1 20 -> 20 with RELU6 (a three and
    a last two a row, 5 groups: the last two widened by pw2_widen, clamped), a 3x3 depthwise (the
    blocks), 1x1 20 -> 26 without an activation, the pool over 25x5 taps of 26 channels (six words
    of four channels in 16-bit lanes a row, then a tail of two), input zero point -3."""
    b = ModelBuilder(seed=51)
    x = b.input("x", (1, 25, 5, 4), zero_point=-3)
    t = b.conv2d(x, 20, (3, 3), activation="RELU", name="head_quads_lone")
    t = b.depthwise_conv2d(t, (5, 5), name="dw5x5_checked")
    t = b.conv2d(t, 20, (1, 1), activation="RELU6", name="pw20_two_clamped")
    t = b.depthwise_conv2d(t, (3, 3), activation="RELU", name="dw3x3_blocks")
    t = b.conv2d(t, 26, (1, 1), name="pw20_26_two")
    b.output(b.average_pool2d(t, (25, 5), (1, 1), name="pool_lanes_rows"))
    return b.build()


def stream_one_pixel_rows() -> bytes:
    """A streamed chain over rows one pixel wide (sww's [H, 1, C] maps: ts_conv2d_s8_pixel_widened on
    each row of its 1x1 member, the pixel widened once on the stack): a 3x1 depthwise into 1x1
    40 -> 130 (in_c a multiple of 8: the generator's widened table, channel by channel) with RELU6
    (the clamp) and pruned channels (constants); input zero point 7."""
    b = ModelBuilder(seed=76)
    x = b.input("x", (1, 30, 1, 40), zero_point=7)
    t = b.depthwise_conv2d(x, (3, 1), (1, 1), "VALID", activation="RELU", name="dw3x1_40")
    pruned = [1.0, 3e-5, 1e-5, 1.0, 3e-6, 1e-6, 2e-5, 1e-4, 5e-6, 1.0] * 13
    b.output(b.conv2d(t, 130, (1, 1), activation="RELU6", scale_factors=pruned, name="pw40_130_pruned"))
    return b.build()


def stream_one_pixel_rows_narrowing() -> bytes:
    """stream_one_pixel_rows' path without the widened table (in_c 44, not a multiple of 8: four
    channels at a time from the ts_rq table) and in_c > out_c: a 5x1 depthwise of depth multiplier
    2 (22 -> 44 channels) into 1x1 44 -> 18 per tensor with RELU (a tail of two channels); input
    zero point -128."""
    b = ModelBuilder(seed=77)
    y = b.input("y", (1, 44, 1, 22), zero_point=-128)
    u = b.depthwise_conv2d(y, (5, 1), (1, 1), "VALID", 2, activation="RELU", name="dw5x1_22_x2")
    u = b.conv2d(u, 18, (1, 1), per_channel=False, activation="RELU", name="pw44_18_per_tensor")
    b.output(u)
    return b.build()


def stream_one_pixel_rows_full_range() -> bytes:
    """stream_one_pixel_rows' widened table without the clamp (no activation: the range is all of
    int8): a 3x1 depthwise into 1x1 24 -> 72 (in_c 24: three runs of four lane words); input zero
    point 5."""
    b = ModelBuilder(seed=78)
    x = b.input("x", (1, 26, 1, 24), zero_point=5)
    t = b.depthwise_conv2d(x, (3, 1), (1, 1), "VALID", name="dw3x1_24")
    b.output(b.conv2d(t, 72, (1, 1), name="pw24_72_no_clamp"))
    return b.build()


def stream_rows_six_plus_one() -> bytes:
    """A residual stage over rows of 13 pixels (st_miniresnetv2's blocks: 6 a + 1) whose CONV_2D
    members take ts_conv2d_s8_strip with a strip of one block (a gap of the arena): each row's first
    12 pixels in two blocks of the widened path, the last alone (strip_last_pixel: its field widened
    into the strip, SAME padding clipping its right column and, in the first and last rows, a filter
    row; four channels a pass): 1x1 32 -> 37 with RELU (a last channel alone), 1x1 37 -> 36 with
    pruned channels (in_c not a multiple of 4: a block for its last pixel too), 3x3 36 -> 32 SAME
    with RELU6, the ADD with the block's input (a 1x1 8 -> 32 and a MUL before it); input zero
    point -5."""
    b = ModelBuilder(seed=79)
    y = b.input("y", (1, 16, 13, 8), zero_point=-5)
    x = b.conv2d(y, 32, (1, 1), activation="RELU", name="pre_8_32")
    x = b.mul(x, x, name="square")
    t = b.conv2d(x, 37, (1, 1), activation="RELU", name="pw32_37")
    pruned = [1.0, 3e-5, 1.0, 1e-5, 1.0, 1.0, 2e-6, 1.0, 1.0] * 4
    t = b.conv2d(t, 36, (1, 1), scale_factors=pruned, name="pw37_36_pruned")
    t = b.conv2d(t, 32, (3, 3), (1, 1), "SAME", activation="RELU6", name="k3_36_32")
    b.output(b.add(t, x, name="residual_add"))
    return b.build()


def stream_stem_rows() -> bytes:
    """A stage headed by a 3x3 CONV_2D over 3 input channels (the stem path called row by row, its
    per-call checks made once): stride 1 SAME (each row's first and last pixels and the first and
    last rows from patches) into 10 channels (a last group of two) with RELU6 and an output zero
    point of 5 (clamped), a 3x3 depthwise, 1x1 10 -> 12, streamed into a global pool; input zero
    point 12."""
    b = ModelBuilder(seed=52)
    x = b.input("x", (1, 14, 9, 3), zero_point=12)
    t = b.conv2d(x, 10, (3, 3), activation="RELU6", output_quant=(0.03, 5), name="stem_head_10")
    t = b.depthwise_conv2d(t, (3, 3), activation="RELU", name="dw3x3_after_stem")
    t = b.conv2d(t, 12, (1, 1), name="pw10_12")
    b.output(b.average_pool2d(t, (14, 9), (1, 1), name="pool_stem_rows"))
    return b.build()


def stream_fc_rows() -> bytes:
    """tflm_micro_speech in small: a depthwise 4x3 strides 1, 2 SAME over one channel into 5 (depth
    multiplier 5: a channel tail) streamed into a FULLY_CONNECTED reading its 15x6x5 map flattened
    (tinysched.memory.stream.row_dense): each row of 30 bytes (seven words and a tail of two; a
    vector and a predicated 14 on Helium) added into 7 int32 sums (three pairs and an odd last unit),
    RELU after it, input zero point -3."""
    b = ModelBuilder(seed=50)
    x = b.input("x", (1, 15, 12, 1), zero_point=-3)
    t = b.depthwise_conv2d(x, (4, 3), (1, 2), "SAME", depth_multiplier=5, activation="RELU", name="dw_m5")
    b.output(b.fully_connected(t, 7, activation="RELU", flatten=True, name="fc_rows_7"))
    return b.build()


def stream_fc_blocks() -> bytes:
    """A FULLY_CONNECTED sink after a conv -> depthwise -> 1x1 stage: 37 output units per channel
    (blocks of 16, 16 and 5 sums; RELU6) over a 10x7x9 map read by rows of 63 bytes (odd: the
    byte tail), the stage's head a 3x3 over 4 channels into 12, input zero point 11."""
    b = ModelBuilder(seed=51)
    x = b.input("x", (1, 10, 7, 4), zero_point=11)
    t = b.conv2d(x, 12, (3, 3), activation="RELU", name="head_12")
    t = b.depthwise_conv2d(t, (3, 3), name="dw_12")
    t = b.conv2d(t, 9, (1, 1), activation="RELU", name="pw_9")
    b.output(b.fully_connected(t, 37, "RELU6", per_channel=True, flatten=True, name="fc_rows_37_per_channel"))
    return b.build()


def stream_fc_single() -> bytes:
    """A FULLY_CONNECTED sink of one output unit without a bias (NULL) after a 3x3 convolution into
    16 channels: rows of 128 bytes (whole words, whole vectors), input zero point -128."""
    b = ModelBuilder(seed=52)
    x = b.input("x", (1, 8, 8, 8), zero_point=-128)
    t = b.conv2d(x, 16, (3, 3), activation="RELU", name="conv_16")
    b.output(b.fully_connected(t, 1, use_bias=False, flatten=True, name="fc_rows_1_no_bias"))
    return b.build()


def stream_fc_view() -> bytes:
    """arm_har_cnn in small: a 2x2 VALID convolution over one channel into 24 and a 2x2 stride-2
    MAX_POOL_2D (9x1x24), flattened by a RESHAPE into a FULLY_CONNECTED of 10 units per tensor (the
    stage absorbs the view: tinysched.memory.stream.flattening_view; rows of 24 bytes, whole words,
    a predicated vector on Helium), then a FULLY_CONNECTED of 3 run whole; input zero point 7."""
    b = ModelBuilder(seed=53)
    x = b.input("x", (1, 20, 3, 1), zero_point=7)
    t = b.conv2d(x, 24, (2, 2), padding="VALID", activation="RELU", name="conv_2x2")
    t = b.max_pool2d(t, (2, 2), (2, 2), "VALID", name="pool_2x2")
    f = b.fully_connected(
        b.reshape(t, (1, 216), name="flatten"), 10, activation="RELU", per_channel=False, name="fc_view_10"
    )
    b.output(b.fully_connected(f, 3, name="fc_whole_3"))
    return b.build()


def stream_fc_quads() -> bytes:
    """FULLY_CONNECTED sinks on their four-unit path (DSP cores: fc_rows_quads, four sums in
    registers over each row): rows of 3 bytes (a 3x1 convolution over one channel into 3: no whole
    word, the bytes alone) into 12 units (three groups of four), input zero point -128 (the largest
    input offset); rows of 4 bytes (2 columns x 2 channels: one word, no 16-byte turn) into 9 units
    (two groups and an odd last unit, per channel), input zero point 5."""
    b = ModelBuilder(seed=54)
    x = b.input("x", (1, 82, 1, 1), zero_point=-128)
    t = b.conv2d(x, 3, (3, 1), padding="VALID", activation="RELU", name="conv_rows_of_3")
    f = b.fully_connected(t, 12, activation="RELU", flatten=True, name="fc_quads_12")
    y = b.input("y", (1, 50, 2, 1), zero_point=5)
    u = b.conv2d(y, 2, (3, 1), padding="VALID", name="conv_rows_of_4")
    g = b.fully_connected(u, 9, per_channel=True, flatten=True, name="fc_quads_9_per_channel")
    b.output(f, g)
    return b.build()


def stream_fc_quads16() -> bytes:
    """A FULLY_CONNECTED sink on rows of whole 16-byte turns (DSP cores: fc_rows_quads16, the loop
    over groups of four units in asm): rows of 32 bytes (2 columns x 16 channels) into 10 units (two
    groups and a pair), input zero point -7."""
    b = ModelBuilder(seed=55)
    z = b.input("z", (1, 22, 2, 1), zero_point=-7)
    v = b.conv2d(z, 16, (3, 1), padding="VALID", activation="RELU6", name="conv_rows_of_32")
    b.output(b.fully_connected(v, 10, activation="RELU", flatten=True, name="fc_quads16_10"))
    return b.build()


def layer_tables_helium() -> bytes:
    """CONV_2D quads on Helium against the layer's table (ts_mve.h ts_mve_layer_table: bias +
    input_offset * sum(w) made once per call, no filter sums in the quads' loops, all channels one
    block): 1x1 with 64 output channels (the table's limit) over 20 input channels (a vector and a
    tail of 4) and 9 (the tail alone), 65 channels (past the limit: blocks of 16 with their sums);
    3x3 SAME over 20 channels into 64 (60-byte rows: three vectors and a tail of 12; the clipped top
    and bottom rows keep their sums; 13 columns: three quads and a pair a row); a first layer of
    K = 27 into 64 channels and an odd pixel count (patch quads, a short last quad)."""
    b = ModelBuilder(seed=47)
    x = b.input("x", (1, 7, 13, 20), zero_point=-3)
    t = b.conv2d(x, 64, (1, 1), activation="RELU", name="lt_pw_20_64")
    u = b.conv2d(x, 65, (1, 1), name="lt_pw_20_65")
    v = b.conv2d(x, 64, (3, 3), (1, 1), "SAME", activation="RELU6", name="lt_k3_20_64")
    w = b.conv2d(x, 9, (1, 1), name="lt_pw_20_9")
    w = b.conv2d(w, 48, (1, 1), per_channel=False, name="lt_pw_9_48")
    y = b.input("y", (1, 9, 7, 3), zero_point=-128)
    r = b.conv2d(y, 64, (3, 3), (1, 1), "SAME", activation="RELU", name="lt_patch_27_64")
    b.output(t, u, v, w, r)
    return b.build()


def layer_tables_staged_helium() -> bytes:
    """A KWS-like chain planned in place (a first layer, then depthwise and 1x1 layers of 24
    channels over 11x5 pixels): the staged 1x1 CONV_2D on Helium, its groups of pixels against one
    layer table made once per call (ts_mve.h ts_mve_layer_table), 55 pixels (a short last group)."""
    b = ModelBuilder(seed=48)
    z = b.input("z", (1, 21, 10, 1), zero_point=17)
    q = b.conv2d(z, 24, (5, 4), (2, 2), "SAME", activation="RELU", name="lts_first")
    q = b.depthwise_conv2d(q, (3, 3), (1, 1), "SAME", activation="RELU", name="lts_dw24")
    q = b.conv2d(q, 24, (1, 1), activation="RELU", name="lts_pw_24")
    q = b.depthwise_conv2d(q, (3, 3), (1, 1), "SAME", activation="RELU", name="lts_dw24_b")
    q = b.conv2d(q, 24, (1, 1), activation="RELU", name="lts_pw_24_b")
    q = b.mean(q, (1, 2), keepdims=True, name="lts_pool")  # a MEAN: no stage ends in it
    b.output(q)
    return b.build()


def depthwise_eff_helium() -> bytes:
    """DEPTHWISE_CONV_2D on Helium one pixel at a time, whole windows starting from the layer's
    bias + input_offset * sum(w) (ts_mve.h ts_mve_dw_eff_table, in_c <= 64): 64 channels (four
    passes of two blocks) SAME (clipped edge pixels keep the bias and the per-tap offset) and a 5x3
    filter, 65 channels (past the table: every pixel as before) with stride 2, 40 channels (two
    passes, a whole block) VALID; input zero points -7 and 100."""
    b = ModelBuilder(seed=49)
    x = b.input("x", (1, 6, 7, 64), zero_point=-7)
    t = b.depthwise_conv2d(x, (3, 3), (1, 1), "SAME", activation="RELU", name="dwe64_same")
    u = b.depthwise_conv2d(x, (5, 3), (1, 1), "SAME", name="dwe64_5x3")
    y = b.input("y", (1, 5, 6, 65), zero_point=100)
    v = b.depthwise_conv2d(y, (3, 3), (2, 2), "SAME", activation="RELU6", name="dwe65_s2")
    z = b.input("z", (1, 5, 5, 40), zero_point=-7)
    w = b.depthwise_conv2d(z, (3, 3), (1, 1), "VALID", per_channel=False, name="dwe40_valid")
    b.output(t, u, v, w)
    return b.build()


def pointwise_five_helium() -> bytes:
    """1x1 CONV_2D on Helium whose chunks end in five pixels (ts_mve.h ts_mve_pw_five_row: a quad and
    one more, each filter byte loaded once, against the layer table): in_c 16 over 13 pixels into 45
    channels (two quads, then five; the fifth pixel's last vector of channels predicated), in_c 32
    over 25 pixels (16, then a quad and five) per-tensor, in_c 64 over 13 pixels into 48 with RELU6;
    input zero points -5, 9 and -128."""
    b = ModelBuilder(seed=53)
    x = b.input("x", (1, 1, 13, 16), zero_point=-5)
    t = b.conv2d(x, 45, (1, 1), activation="RELU", name="p5_16_45")
    y = b.input("y", (1, 5, 5, 32), zero_point=9)
    u = b.conv2d(y, 32, (1, 1), per_channel=False, name="p5_32_32")
    z = b.input("z", (1, 1, 13, 64), zero_point=-128)
    v = b.conv2d(z, 48, (1, 1), activation="RELU6", name="p5_64_48")
    b.output(t, u, v)
    return b.build()


def patch_five_helium() -> bytes:
    """Small-field CONV_2D on Helium (the patch quads against the layer table) over 25 output pixels:
    five quads, the last a quad and one more, five fields in 64-byte slots (ts_mve.h
    ts_mve_pw_five_row, slots64): K = 9 (the predicated tail alone), 16, 18 (a step and a tail of 2),
    32, 36, 54 (three steps and a tail of 6) and 64 bytes; 45 and 64 output channels, SAME windows
    clipped at every edge; input zero points 3, -128 and 77."""
    b = ModelBuilder(seed=55)
    x1 = b.input("x1", (1, 5, 5, 1), zero_point=3)
    a = b.conv2d(x1, 45, (3, 3), (1, 1), "SAME", activation="RELU", name="pf_k9")
    c = b.conv2d(x1, 64, (4, 4), (1, 1), "SAME", name="pf_k16")
    x2 = b.input("x2", (1, 5, 5, 2), zero_point=-128)
    d = b.conv2d(x2, 45, (3, 3), (1, 1), "SAME", activation="RELU6", name="pf_k18")
    e = b.conv2d(x2, 64, (4, 4), (1, 1), "SAME", per_channel=False, name="pf_k32")
    x4 = b.input("x4", (1, 5, 5, 4), zero_point=77)
    f = b.conv2d(x4, 45, (3, 3), (1, 1), "SAME", name="pf_k36")
    g = b.conv2d(x4, 64, (4, 4), (1, 1), "SAME", activation="RELU", name="pf_k64")
    x6 = b.input("x6", (1, 5, 5, 6), zero_point=-9)
    h = b.conv2d(x6, 45, (3, 3), (1, 1), "SAME", name="pf_k54")
    b.output(a, c, d, e, f, g, h)
    return b.build()


def stream_five_helium() -> bytes:
    """A DS-CNN-like stage of rows of 5 pixels into its global pool whose narrow 1x1 members run on
    Helium as rows of five (a quad and one more: ts_mve.h ts_mve_pw_five_row, the staged kernel's
    group of five against the generator's layer table) and whose depthwise members start their whole
    windows from the generator's table (ts_depthwise_conv2d_s8_layer): a head 3x3 over 3 channels
    into 32 (K = 27: the patch quads' five against the generator's layer table, ts_conv2d_s8_layer),
    a 3x3 depthwise (one pass of two blocks from the table), 1x1 32 -> 40 (five), a 3x3
    depthwise of 40 channels (a pass from the table, then a whole block without it), 1x1 40 -> 64
    with RELU6 (in_c 40: a quad and a lone pixel); input zero point 11."""
    b = ModelBuilder(seed=54)
    x = b.input("x", (1, 25, 5, 3), zero_point=11)
    t = b.conv2d(x, 32, (3, 3), activation="RELU", name="s5_head")
    t = b.depthwise_conv2d(t, (3, 3), activation="RELU", name="s5_dw_a")
    t = b.conv2d(t, 40, (1, 1), activation="RELU", name="s5_pw_32_40")
    t = b.depthwise_conv2d(t, (3, 3), activation="RELU", name="s5_dw_b")
    t = b.conv2d(t, 64, (1, 1), activation="RELU6", name="s5_pw_40_64")
    b.output(b.average_pool2d(t, (25, 5), (1, 1), name="s5_pool"))
    return b.build()


def quads_unrolled_helium() -> bytes:
    """3x3 CONV_2D quads on Helium whose filter rows are 3, 6 or 12 whole vectors (16, 32 or 64
    input channels), against the layer table (ts_mve.h TS_MVE_CQ_ROW_3/6/12: the row unrolled):
    SAME over 16 channels (14 columns: three quads, a pair and the clipped edge pixels; clipped top
    and bottom rows through the loop with the sums), stride 2 VALID over 32 channels, SAME over 64
    channels into 24 with RELU6; and a 1x1 over 64 channels (ts_mve_pw_quad's dot products written
    out: TS_MVE_PW_DOTS_UNROLLED; 60 pixels, 15 full quads); a ResNet-like stride-2 SAME layer over
    16 channels (8 columns, windows 0..3 a quad, 4..6 whole and 7 leaving the input: the quad moved
    back to 3..6, pixel 3 computed twice; its input kept alive by a 1x1 so that the output lies
    apart); input zero points 9 and -128."""
    b = ModelBuilder(seed=50)
    x = b.input("x", (1, 6, 14, 16), zero_point=9)
    t = b.conv2d(x, 20, (3, 3), (1, 1), "SAME", activation="RELU", name="qu3_16")
    y = b.input("y", (1, 9, 21, 32), zero_point=-128)
    u = b.conv2d(y, 12, (3, 3), (2, 2), "VALID", name="qu6_32_s2")
    z = b.input("z", (1, 5, 12, 64), zero_point=9)
    v = b.conv2d(z, 24, (3, 3), (1, 1), "SAME", activation="RELU6", name="qu12_64")
    w = b.conv2d(z, 40, (1, 1), activation="RELU", name="qu_pw_64_40")
    s = b.input("s", (1, 15, 16, 16), zero_point=-128)
    r = b.conv2d(s, 24, (3, 3), (2, 2), "SAME", activation="RELU", name="qu_s2_back")
    q = b.conv2d(s, 8, (1, 1), name="qu_s_alive")
    b.output(t, u, v, w, r, q)
    return b.build()


def max_pool_words() -> bytes:
    """MAX_POOL_2D four channels a word on DSP cores (a running bytewise max by SSUB8 / SEL, then the
    bytewise clamp): 10 channels (two words and a tail of 2 bytes) 3x3 stride 2 SAME (windows the
    input clips) with RELU6, 16 channels 2x2 VALID without an activation, 3 channels (the tail
    alone), and 8 channels 2x1 over a 2-wide input with RELU (HAR's shape, rows of one pixel)."""
    b = ModelBuilder(seed=50)
    x = b.input("x", (1, 7, 9, 10), zero_point=-5)
    t = b.max_pool2d(x, (3, 3), (2, 2), "SAME", activation="RELU6", name="mp10_s2_same_relu6")
    y = b.input("y", (1, 6, 8, 16), zero_point=3)
    u = b.max_pool2d(y, (2, 2), (2, 2), "VALID", name="mp16_2x2")
    z = b.input("z", (1, 5, 5, 3), zero_point=0)
    v = b.max_pool2d(z, (2, 2), (1, 1), "SAME", name="mp3_tail")
    w = b.input("w", (1, 9, 2, 8), zero_point=-128)
    r = b.max_pool2d(w, (2, 2), (2, 2), "VALID", activation="RELU", name="mp8_rows_of_one")
    b.output(t, u, v, r)
    return b.build()


def stream_column_tiles() -> bytes:
    """A stage whose rows are too wide, run over column tiles (tinysched.memory.stream.column_tiles):
    a 1x1 head reading the whole input one row a call at its tile's columns (4 -> 24, input zero
    point -5), each tile computing the halo columns the next reads, into a 3x3 stride-2 depthwise
    with SAME padding (left 1: clipped in the first tile only); then a 3x3 CONV_2D and a 1x1 8 -> 6
    (odd channels) unstreamed."""
    b = ModelBuilder(seed=50)
    x = b.input("x", (1, 10, 35, 4), zero_point=-5)
    t = b.conv2d(x, 24, (1, 1), activation="RELU6", name="head_1x1_tiled")
    t = b.depthwise_conv2d(t, (3, 3), (2, 2), "SAME", activation="RELU", name="dw_s2_pad_left")
    t = b.conv2d(t, 8, (3, 3), (1, 1), "SAME", name="k3_after")
    b.output(b.conv2d(t, 6, (1, 1), activation="RELU", name="pw_odd_out"))
    return b.build()


def stream_column_tiles_conv() -> bytes:
    """Column tiles ending in a k x k CONV_2D: a 1x1 head 3 -> 32 (odd input channels, zero point
    7) into a 3x3 stride-2 CONV_2D 32 -> 7 with SAME padding over 29 columns (left and right 1),
    each tile's sink writing its columns of every output row."""
    b = ModelBuilder(seed=51)
    x = b.input("x", (1, 8, 29, 3), zero_point=7)
    t = b.conv2d(x, 32, (1, 1), activation="RELU", name="head_1x1_3_to_32")
    b.output(b.conv2d(t, 7, (3, 3), (2, 2), "SAME", activation="RELU6", name="k3_s2_tiled_sink"))
    return b.build()


def _resize(b: ModelBuilder, x: TensorHandle, size: tuple[int, int], mode: str, name: str) -> TensorHandle:
    """RESIZE_BILINEAR or RESIZE_NEAREST_NEIGHBOR of `x` to `size`; mode "align" (align_corners),
    "half" (half_pixel_centers) or "plain" (neither)."""
    align, half = mode == "align", mode == "half"
    shape = b.constant(np.array(size, dtype=np.int32), name=f"{name}/size")
    if name.startswith("nearest"):
        opcode, options = "RESIZE_NEAREST_NEIGHBOR", schema.ResizeNearestNeighborOptionsT(alignCorners=align)
        options.halfPixelCenters = half
    else:
        opcode, options = "RESIZE_BILINEAR", schema.ResizeBilinearOptionsT(alignCorners=align)
        options.halfPixelCenters = half
    (y,) = b.op(opcode, [x, shape], [(x.shape[0], *size, x.shape[3])], options, name=name)
    return y


def _arg_max(b: ModelBuilder, x: TensorHandle, dtype: str, name: str) -> TensorHandle:
    """ARG_MAX over the channels (the last axis) with an int32 or int64 output."""
    kind = schema.TensorType.INT64 if dtype == "int64" else schema.TensorType.INT32
    axis = b.constant(np.array([3], dtype=np.int32), name=f"{name}/axis")
    options = schema.ArgMaxOptionsT(outputType=kind)
    (y,) = b.op("ARG_MAX", [x, axis], [x.shape[:3]], options, output_dtypes=[dtype], name=name)
    return y


def resize_argmax_segmentation() -> bytes:
    """deeplab's head in small: a 1x1 convolution into 21 class scores, upsampled bilinearly
    (align_corners) 5x7 -> 17x25 and reduced to an int64 ARG_MAX map whose 8 B a pixel may start
    at the dying 21 B a pixel (tinysched.memory.overlap); input zero point -7."""
    b = ModelBuilder(seed=53)
    x = b.input("x", (1, 5, 7, 8), zero_point=-7)
    t = b.conv2d(x, 21, (1, 1), name="scores_21")
    t = _resize(b, t, (17, 25), "align", "bilinear_align_up")
    b.output(_arg_max(b, t, "int64", "argmax_int64"))
    return b.build()


def resize_argmax_modes() -> bytes:
    """Resize -> ARG_MAX heads in every mode: bilinear half_pixel_centers upscale 6x5 -> 13x11 into
    an int32 ARG_MAX over 6 channels; bilinear plain downscale 6x5 -> 4x3 into int64 over 9
    channels; nearest (align_corners, half_pixel_centers, plain) up and down into int32 / int64."""
    b = ModelBuilder(seed=54)
    x = b.input("x", (1, 6, 5, 4), zero_point=12)
    six = b.conv2d(x, 6, (1, 1), name="scores_6")
    nine = b.conv2d(x, 9, (3, 3), activation="RELU", name="scores_9")
    outs = [
        _arg_max(b, _resize(b, six, (13, 11), "half", "bilinear_half_up"), "int32", "argmax_half"),
        _arg_max(b, _resize(b, nine, (4, 3), "plain", "bilinear_plain_down"), "int64", "argmax_down"),
        _arg_max(b, _resize(b, nine, (11, 9), "align", "nearest_align_up"), "int64", "argmax_nearest_align"),
        _arg_max(b, _resize(b, six, (9, 7), "half", "nearest_half_up"), "int32", "argmax_nearest_half"),
        _arg_max(b, _resize(b, nine, (3, 4), "plain", "nearest_plain_down"), "int32", "argmax_nearest_down"),
    ]
    b.output(*outs)
    return b.build()


def _resize_head(
    seed: int,
    shape: tuple[int, int, int, int],
    classes: int,
    size: tuple[int, int],
    mode: str,
    kind: str,
    dtype: str,
) -> bytes:
    """A 1x1 convolution into `classes` scores, a resize of `kind` ("bilinear" or "nearest") in
    `mode` to `size`, an ARG_MAX into `dtype`: the resize's step is the peak, so the resize heads a
    stage into the ARG_MAX (tinysched.memory.stream.row_resize, row_arg)."""
    b = ModelBuilder(seed=seed)
    x = b.input("x", shape, zero_point=seed - 60)
    t = b.conv2d(x, classes, (1, 1), name=f"scores_{classes}")
    t = _resize(b, t, size, mode, f"{kind}_{mode}")
    b.output(_arg_max(b, t, dtype, f"argmax_{dtype}"))
    return b.build()


def stream_resize_bilinear_half() -> bytes:
    """Bilinear, half_pixel_centers, 6x5 -> 13x11 (rows read in pairs, the first and last clamped),
    6 classes into int32."""
    return _resize_head(55, (1, 6, 5, 3), 6, (13, 11), "half", "bilinear", "int32")


def stream_resize_bilinear_rows_down() -> bytes:
    """Bilinear, neither option, 9x5 -> 4x23: rows downscaled (output rows skip input rows: the
    window slides past rows no output reads), columns upscaled; 21 classes into int64."""
    return _resize_head(56, (1, 9, 5, 4), 21, (4, 23), "plain", "bilinear", "int64")


def stream_resize_nearest_align() -> bytes:
    """Nearest, align_corners (rounded sources), 6x5 -> 11x9, 21 classes into int64."""
    return _resize_head(57, (1, 6, 5, 2), 21, (11, 9), "align", "nearest", "int64")


def stream_resize_nearest_half_down() -> bytes:
    """Nearest, half_pixel_centers, 9x7 -> 4x19 (rows down, columns up), 16 classes into int32."""
    return _resize_head(58, (1, 9, 7, 3), 16, (4, 19), "half", "nearest", "int32")


def stream_resize_depthwise() -> bytes:
    """A resize heading a windowed member: bilinear align_corners 5x4 -> 12x10 over 16 channels into a
    3x3 depthwise (a window of three rows of the upsampled map) and an int32 ARG_MAX."""
    b = ModelBuilder(seed=59)
    x = b.input("x", (1, 5, 4, 3), zero_point=-9)
    t = b.conv2d(x, 16, (1, 1), name="scores_16")
    t = _resize(b, t, (12, 10), "align", "bilinear_align")
    t = b.depthwise_conv2d(t, (3, 3), name="dw_after_resize")
    b.output(_arg_max(b, t, "int32", "argmax_int32"))
    return b.build()


def stream_resize_pointwise() -> bytes:
    """A resize heading a 1x1 convolution: nearest (neither option) 4x3 -> 9x11 over 8 channels,
    a 1x1 into 21 class scores (rows of 11 pixels), an int64 ARG_MAX; input zero point 21."""
    b = ModelBuilder(seed=60)
    x = b.input("x", (1, 4, 3, 8), zero_point=21)
    t = _resize(b, x, (9, 11), "plain", "nearest_plain")
    t = b.conv2d(t, 21, (1, 1), activation="RELU", name="scores_after_resize")
    b.output(_arg_max(b, t, "int64", "argmax_int64"))
    return b.build()


def resize_over_input() -> bytes:
    """Whole resizes whose output overlaps their dying input (tinysched.memory.overlap `_resize`):
    bilinear half_pixel_centers 5x4 -> 11x9 over 12 channels (an output), and nearest align_corners
    of a 1x1 convolution's 5x4x6 map 5x4 -> 3x7 (rows down) into an int32 ARG_MAX."""
    b = ModelBuilder(seed=61)
    x = b.input("x", (1, 5, 4, 3), zero_point=-100)
    t = b.conv2d(x, 12, (1, 1), name="map_12")
    up = _resize(b, t, (11, 9), "half", "bilinear_half_up")
    u = b.conv2d(x, 6, (1, 1), name="map_6")
    down = _resize(b, u, (3, 7), "align", "nearest_align_down")
    b.output(up, _arg_max(b, down, "int32", "argmax_int32"))
    return b.build()


def flat_rest_in_place() -> bytes:
    """Flat 1x1 layers whose output overlaps their dying input (the refined plan): the widened
    leading pixels take a strip in the output's part below the input, the rest go by the pointwise
    chunks, which must start where the whole layer's chunks of 16 do (the plan's overlap holds chunk
    by chunk of the flat order), 16 -> 45 channels over 21 and 37 pixels and 12 -> 45 over 5 rows of 7, input zero point -5.
    RELU with an output zero point above -128 keeps these layers off the pixel table (its range is
    not all of int8: pixel_regs_k16 takes such shapes through that path)."""
    b = ModelBuilder(seed=71)
    narrow = {"activation": "RELU", "output_quant": (0.03, -40)}
    x = b.input("x", (1, 1, 21, 16), zero_point=-5)
    y = b.conv2d(x, 45, (1, 1), name="pw_21_px", **narrow)
    u = b.input("u", (1, 1, 37, 16), zero_point=-5)
    v = b.conv2d(u, 45, (1, 1), name="pw_37_px", **narrow)
    r = b.input("r", (1, 5, 7, 12), zero_point=-5)  # rows widened (12 channels), the rest flat
    t = b.conv2d(r, 45, (1, 1), name="pw_5_rows_of_7", **narrow)
    b.output(y, v, t)
    return b.build()


def uint8_legacy_layers() -> bytes:
    """A legacy uint8 model (tinysched.model.uint8), every operator it computes as int8: asymmetric
    per-tensor uint8 weights (zero points away from 128) in a 3x3 stride-2 SAME CONV_2D (clipped
    windows), a 1x1 CONV_2D, DEPTHWISE_CONV_2D with depth multipliers 1 and 2 (RELU, RELU6 clamps
    at the shifted zero point), FULLY_CONNECTED; ADD; a 2x2 SAME AVERAGE_POOL_2D (even windows of 4
    and clipped ones of 2 and 1: ties, which uint8 rounds up and int8 away from zero) and a global
    one; MAX_POOL_2D; RESIZE_BILINEAR align_corners, half_pixel_centers and plain (TFLite's float
    version for uint8); QUANTIZE uint8 -> uint8; CONCATENATION; ARG_MAX into int64; uint8 edges; and
    filters of zero point 128 (symmetric as int8: the default kernels, weights down to -128)."""
    b = ModelBuilder(seed=61, legacy_uint8=True)
    x = b.input("x", (1, 9, 11, 3), scale=1 / 60, zero_point=-6)
    c = b.conv2d(x, 8, (3, 3), (2, 2), "SAME", activation="RELU6", name="u8_k3_s2_same")
    p = b.conv2d(c, 6, (1, 1), name="u8_pw")
    d = b.depthwise_conv2d(p, (3, 3), (1, 1), "SAME", activation="RELU", name="u8_dw")
    d2 = b.depthwise_conv2d(p, (3, 3), (2, 2), "VALID", depth_multiplier=2, name="u8_dw_m2")
    a = b.average_pool2d(d, (2, 2), (1, 1), "SAME", name="u8_avg_2x2")
    s = b.add(a, p, activation="RELU", name="u8_add")
    m = b.max_pool2d(s, (2, 2), (2, 2), "SAME", name="u8_max")
    g = b.average_pool2d(s, (5, 6), (1, 1), "VALID", name="u8_global_avg")
    up = _resize(b, s, (9, 11), "align", "bilinear_u8_align")
    half = _resize(b, m, (9, 11), "half", "bilinear_u8_half")
    plain = _resize(b, d2, (9, 11), "plain", "bilinear_u8_plain")
    up = b.requantize(up, (up.scale or 1) * 1.25, up.zero_point + 5, name="u8_requantize")
    half = b.requantize(half, up.scale or 1, up.zero_point, name="u8_requantize_half")
    plain = b.requantize(plain, up.scale or 1, up.zero_point, name="u8_requantize_plain")
    cat = b.concatenation([up, half, plain], axis=3, name="u8_concat")
    fc = b.fully_connected(g, 7, activation="RELU", name="u8_fc")
    # uint8 filter zero point 128: symmetric once int8, so the default kernels' fast paths run them,
    # on weights that reach -128 (uint8 0), which TFLite's int8 weights never hold
    b.filter_zero_point = 0
    k = b.conv2d(c, 8, (3, 3), (1, 1), "SAME", name="u8_k3_zp128")
    k = b.depthwise_conv2d(k, (3, 3), (1, 1), "SAME", activation="RELU6", name="u8_dw_zp128")
    k = b.conv2d(k, 12, (1, 1), name="u8_pw_zp128")
    b.filter_zero_point = None
    b.output(_arg_max(b, cat, "int64", "u8_argmax"), fc, cat, k)
    return b.build()


def uint8_legacy_stream() -> bytes:
    """A legacy uint8 model whose plan streams: 1x1 CONV_2D -> 3x3 stride-2 DEPTHWISE_CONV_2D ->
    1x1 CONV_2D with filter offsets run row by row in a stage (their expanded maps never whole),
    then a RESIZE_BILINEAR (align_corners, TFLite's float version for uint8) heading a stage into an
    ARG_MAX, deeplab's tail in small."""
    b = ModelBuilder(seed=62, legacy_uint8=True)
    x = b.input("x", (1, 25, 23, 4), scale=1 / 50, zero_point=9)
    t = b.conv2d(x, 32, (1, 1), activation="RELU6", name="u8_expand")
    t = b.depthwise_conv2d(t, (3, 3), (2, 2), "SAME", activation="RELU6", name="u8_dw_s2")
    t = b.conv2d(t, 6, (1, 1), name="u8_project")
    t = b.conv2d(t, 21, (1, 1), name="u8_scores")
    b.output(_arg_max(b, _resize(b, t, (33, 29), "align", "bilinear_u8_up"), "int64", "u8_classes"))
    return b.build()


def uint8_legacy_more_ops() -> bytes:
    """A legacy uint8 model's other operators, each the int8 kernel on the shifted bytes: PAD (the
    output zero point), MUL, RESIZE_NEAREST_NEIGHBOR, RESHAPE, FULLY_CONNECTED into SOFTMAX (uint8
    (1/256, 0) as int8 (1/256, -128)); and dilated filter-offset CONV_2D (9 channels: four-channel
    blocks and a tail) and DEPTHWISE_CONV_2D (dilation along the width only)."""
    b = ModelBuilder(seed=63, legacy_uint8=True)
    x = b.input("x", (1, 6, 7, 5), scale=1 / 30, zero_point=-20)
    t = b.conv2d(x, 10, (1, 1), activation="RELU", name="u8_pw")
    p = b.pad(t, [(0, 0), (1, 2), (2, 1), (0, 0)], name="u8_pad")
    m = b.mul(
        b.conv2d(p, 6, (3, 3), (1, 1), "VALID", name="u8_k3"),
        b.conv2d(p, 6, (3, 3), (1, 1), "VALID", name="u8_gate"),
    )
    n = _resize(b, m, (11, 13), "align", "nearest_u8_align")
    r = b.reshape(n, (1, 11 * 13 * 6), name="u8_flat")
    # dilated windows of the filter-offset kernels, clipped by SAME padding (taps_inside)
    d = b.conv2d(t, 9, (3, 3), (1, 1), "SAME", dilation=(2, 2), name="u8_k3_dil2")
    d = b.depthwise_conv2d(d, (3, 3), (1, 1), "SAME", dilation=(1, 2), activation="RELU", name="u8_dw_dil")
    b.output(b.softmax(b.fully_connected(r, 12, name="u8_logits"), name="u8_softmax"), n, d)
    return b.build()


def uint8_legacy_depthwise_blocks() -> bytes:
    """Legacy uint8 DEPTHWISE_CONV_2D layers through the int8 blocks on their filter plus the filter
    offset (ts_depthwise_conv2d_s8_blocks on DSP cores, tinysched.codegen.lower_conv
    depthwise_blocks): input zero point -128 (|x + input_offset| up to 255) against uint8 filter zero
    points 255 (w + filter_offset down to -255) and 0 (up to 255); 3x3 stride 1 SAME without a clamp
    (whole windows, six-tap edges, corners), 3x3 stride 2 SAME with RELU6's clamp, dilation 2 down
    the height, 2x3 and 3x1 filters (the blocks' rectangles), no bias, 4 and 12 channels; then 6
    channels (not a multiple of 4: the kernel's own loop) beside them."""
    b = ModelBuilder(seed=64, legacy_uint8=True)
    x = b.input("x", (1, 7, 9, 8), scale=1 / 40, zero_point=-128)
    b.filter_zero_point = 127  # uint8 255: w + filter_offset in [-255, 0]
    whole = b.depthwise_conv2d(x, (3, 3), (1, 1), "SAME", name="u8b_dw_k3_far_low")
    b.filter_zero_point = -128  # uint8 0: w + filter_offset in [0, 255]
    s2 = b.depthwise_conv2d(x, (3, 3), (2, 2), "SAME", activation="RELU6", name="u8b_dw_k3_s2_far_high")
    b.filter_zero_point = None
    dil = b.depthwise_conv2d(x, (3, 3), (1, 1), "SAME", dilation=(2, 1), name="u8b_dw_dil_h2")
    rect = b.depthwise_conv2d(x, (2, 3), (1, 1), "SAME", activation="RELU", name="u8b_dw_k2x3")
    col = b.depthwise_conv2d(x, (3, 1), (1, 2), "SAME", use_bias=False, name="u8b_dw_k3x1_no_bias")
    four = b.input("four", (1, 5, 6, 4), scale=1 / 30, zero_point=17)
    one_group = b.depthwise_conv2d(four, (3, 3), (1, 1), "VALID", activation="RELU6", name="u8b_dw_c4")
    twelve = b.input("twelve", (1, 6, 5, 12), scale=1 / 30, zero_point=-3)
    three = b.depthwise_conv2d(twelve, (3, 3), (2, 1), "SAME", name="u8b_dw_c12_s2x1")
    six = b.input("six", (1, 5, 5, 6), scale=1 / 30, zero_point=5)
    tail = b.depthwise_conv2d(six, (3, 3), (1, 1), "SAME", name="u8b_dw_c6_own_loop")
    b.output(whole, s2, dil, rect, col, one_group, three, tail)
    return b.build()


def uint8_legacy_conv_sums() -> bytes:
    """Legacy uint8 CONV_2D layers through ts_conv2d_filter_offset_s8's DSP sums (four output
    channels a pass over the raw filter, filter_offset * sum(x + input_offset) added per pixel, the
    generator's ts_rq fields for accumulators of w + filter_offset): input zero point -128 against
    uint8 filter zero points 255 and 0 (|w + filter_offset| up to 255); a 3x3 SAME over 5 channels
    (clipped windows, each row's taps one run of 15 bytes: words and a tail), a 1x1 5 -> 12 with
    RELU6, a 3x3 stride-2 VALID dilated across (tap by tap) into 16 channels, a 1x1 8 -> 10 (two
    channels past the fours) into a tiny output scale whose left shift leaves no ts_rq (the
    formula), a 1x1 16 -> 20 of input zero point 40; and 3x3 layers over 3 channels (the stem
    path's table of w + filter_offset: stride 1 into 6 channels, stride 2 with RELU6) at the far
    zero points."""
    b = ModelBuilder(seed=65, legacy_uint8=True)
    x = b.input("x", (1, 6, 7, 5), scale=1 / 40, zero_point=-128)
    b.filter_zero_point = 127  # uint8 255: w + filter_offset in [-255, 0]
    k3 = b.conv2d(x, 8, (3, 3), (1, 1), "SAME", name="u8c_k3_c5_far_low")
    b.filter_zero_point = -128  # uint8 0: w + filter_offset in [0, 255]
    pw = b.conv2d(x, 12, (1, 1), activation="RELU6", name="u8c_pw_c5_far_high")
    b.filter_zero_point = None
    t = b.conv2d(x, 8, (1, 1), name="u8c_pw_c5_to_8")
    dil = b.conv2d(t, 16, (3, 3), (2, 2), "VALID", dilation=(1, 2), name="u8c_k3_s2_dil_w2")
    tiny = b.conv2d(t, 10, (1, 1), output_quant=(1e-8, 3), name="u8c_pw_10_no_rq")
    u = b.input("u", (1, 1, 9, 16), scale=1 / 30, zero_point=40)
    wide = b.conv2d(u, 20, (1, 1), name="u8c_pw_16_20")
    # 3x3 over 3 channels: the int8 stem path on its table of w + filter_offset, doubled
    rgb = b.input("rgb", (1, 9, 10, 3), scale=1 / 40, zero_point=-128)
    b.filter_zero_point = 127
    stem = b.conv2d(rgb, 6, (3, 3), (1, 1), "SAME", name="u8c_stem_far_low")
    b.filter_zero_point = -128
    stem2 = b.conv2d(rgb, 8, (3, 3), (2, 2), "SAME", activation="RELU6", name="u8c_stem_s2_far_high")
    b.filter_zero_point = None
    b.output(k3, pw, dil, tiny, wide, stem, stem2)
    return b.build()


def uint8_legacy_pixel_tables() -> bytes:
    """Legacy uint8 1x1 CONV_2D layers through the int8 pixel-in-registers path on a table of
    w + filter_offset (ts_conv2d_s8_pixel_table on DSP cores, tinysched.codegen.lower_conv
    pixel_table with an offset): in_c 8 into 13 channels (odd: no pairs) with input zero point -128
    against uint8 filter zero point 255 (w + filter_offset down to -255), in_c 8 into 16 against zero
    point 0 (up to 255), 12 -> 24, a strided 16 -> 16 (by rows), a strided 32 -> 40 (the table's
    halves), and a 16 -> 48 expansion, 3x3 stride-2 depthwise and 48 -> 16 projection the plan runs
    row by row in a stage."""
    b = ModelBuilder(seed=66, legacy_uint8=True)
    x = b.input("x", (1, 5, 6, 8), scale=1 / 40, zero_point=-128)
    b.filter_zero_point = 127  # uint8 255: w + filter_offset in [-255, 0]
    low = b.conv2d(x, 13, (1, 1), name="u8p_8_13_far_low")
    b.filter_zero_point = -128  # uint8 0: w + filter_offset in [0, 255]
    high = b.conv2d(x, 16, (1, 1), name="u8p_8_16_far_high")
    b.filter_zero_point = None
    t12 = b.input("t12", (1, 4, 5, 12), scale=1 / 30, zero_point=9)
    c12 = b.conv2d(t12, 24, (1, 1), name="u8p_12_24")
    t16 = b.input("t16", (1, 7, 7, 16), scale=1 / 30, zero_point=-7)
    s16 = b.conv2d(t16, 16, (1, 1), (2, 2), "VALID", name="u8p_16_16_s2")
    t32 = b.input("t32", (1, 5, 5, 32), scale=1 / 30, zero_point=3)
    s32 = b.conv2d(t32, 40, (1, 1), (2, 2), "VALID", name="u8p_32_40_s2")
    e = b.input("e", (1, 18, 14, 16), scale=1 / 30, zero_point=-11)
    t = b.conv2d(e, 48, (1, 1), name="u8p_expand_16_48")
    t = b.depthwise_conv2d(t, (3, 3), (2, 2), "SAME", name="u8p_dw_s2")
    t = b.conv2d(t, 16, (1, 1), name="u8p_project_48_16")
    b.output(low, high, c12, s16, s32, t)
    return b.build()


def pixel_regs_k16() -> bytes:
    """1x1 CONV_2D with K = 16 from the generator's pixel table (ts_kernels.h, CONV_2D "pixel in
    registers"), outputs over their dying inputs as the refined plan places them: 16 -> 45 channels
    over 21 pixels with two pruned channels the table holds as constants, 16 -> 45 over 37 pixels
    with input zero point 19, 16 -> 16 over 5 rows of 7 (out_c == in_c); then layers the table
    refuses, which take the default paths: RELU with an output zero point above -128 (a range
    narrower than int8), channels with a small output scale (r == 0: no right shift), 16 -> 8 (out_c
    < in_c)."""
    b = ModelBuilder(seed=72)
    x = b.input("x", (1, 1, 21, 16), zero_point=-5)
    factors = [1e-6 if c in (3, 30) else 1.0 for c in range(45)]
    y = b.conv2d(x, 45, (1, 1), scale_factors=factors, name="pw16_21px_constants")
    u = b.input("u", (1, 1, 37, 16), zero_point=19)
    v = b.conv2d(u, 45, (1, 1), name="pw16_37px")
    r = b.input("r", (1, 5, 7, 16), zero_point=-5)
    t = b.conv2d(r, 16, (1, 1), name="pw16_to_16")
    t = b.conv2d(t, 16, (1, 1), activation="RELU", output_quant=(0.03, -40), name="pw16_relu_narrow")
    factors = [300.0 if c % 3 == 1 else 1.0 for c in range(16)]
    t = b.conv2d(t, 16, (1, 1), scale_factors=factors, output_quant=(0.002, 3), name="pw16_no_right_shift")
    t = b.conv2d(t, 8, (1, 1), name="pw16_to_8")
    b.output(y, v, t)
    return b.build()


def pixel_regs_k8_k12() -> bytes:
    """The pixel table's K = 12 and K = 8 (ts_kernels.h, CONV_2D "pixel in registers"), outputs over
    their dying inputs: 12 -> 20 channels over two batches (the flat order crosses the batch) with
    input zero point 37, 8 -> 27 over 37 pixels, 8 -> 11 over 5 rows of 7, 12 -> 45 over 35 pixels."""
    b = ModelBuilder(seed=73)
    u = b.input("u", (2, 3, 5, 12), zero_point=37)
    # a second reader keeps each input alive past the first layer (no in-place variant there)
    u1 = b.conv2d(u, 20, (1, 1), name="pw12_to_20")
    u2 = b.conv2d(u, 3, (1, 1), name="pw12_to_3")
    r = b.input("r", (1, 1, 37, 8), zero_point=0)
    r = b.conv2d(r, 27, (1, 1), name="pw8_to_27")
    q = b.input("q", (1, 5, 7, 8), zero_point=-7)
    q1 = b.conv2d(q, 11, (1, 1), name="pw8_to_11")
    q2 = b.conv2d(q, 3, (1, 1), name="pw8_to_3")
    z = b.input("z", (1, 5, 7, 12), zero_point=-5)
    z = b.conv2d(z, 45, (1, 1), name="pw12_to_45")
    b.output(u1, u2, r, q1, q2, z)
    return b.build()


def pixel_own_loops() -> bytes:
    """Flat 1x1 CONV_2D with K = 8 through their own generated loops (ts_kernels.h, CONV_2D "own
    pixel loop": every channel unrolled, SSAT shifting by its r), outputs over their dying inputs:
    8 -> 64 over two batches of 3x5 (the most channels a loop unrolls) with input zero point 37 and
    two pruned channels (constants: SSAT without a shift), 8 -> 8 over 4x6 (out_c == in_c) into
    8 -> 13 (odd out_c); then 8 -> 65 over 9 pixels, one channel past the loops' limit, which
    takes the pixel table's shared loop."""
    b = ModelBuilder(seed=79)
    x = b.input("x", (2, 3, 5, 8), zero_point=37)
    factors = [1e-6 if c in (0, 41) else 1.0 for c in range(64)]
    x = b.conv2d(x, 64, (1, 1), scale_factors=factors, name="pw8_to_64_constants")
    y = b.input("y", (1, 4, 6, 8), zero_point=-128)
    y = b.conv2d(y, 8, (1, 1), name="pw8_to_8")
    u = b.conv2d(y, 13, (1, 1), name="pw8_to_13")  # y an output too: no in-place variant for this one
    z = b.input("z", (1, 1, 9, 8), zero_point=-5)
    z = b.conv2d(z, 65, (1, 1), name="pw8_to_65")
    b.output(x, y, u, z)
    return b.build()


def pixel_regs_stage() -> bytes:
    """Streamed stages whose 1x1 members take the pixel table row by row (ts_conv2d_s8_pixels on each
    call's rows: one batch, out_h rows of an input that holds more): an inverted residual 16 -> 48
    (K = 16), depthwise, 48 -> 16 as mcunet's blocks; then 16 -> 8 -> 16 (K = 8) into a stride-2
    depthwise as VWW's second stage; input zero point -3."""
    b = ModelBuilder(seed=74)
    x = b.input("x", (1, 16, 12, 16), zero_point=-3)
    t = b.conv2d(x, 48, (1, 1), activation="RELU6", name="expand_16_to_48")
    t = b.depthwise_conv2d(t, (3, 3), (1, 1), "SAME", activation="RELU6", name="dw_48")
    t = b.conv2d(t, 8, (1, 1), name="project_48_to_8")
    t = b.conv2d(t, 16, (1, 1), activation="RELU6", name="expand_8_to_16")
    t = b.depthwise_conv2d(t, (3, 3), (2, 2), "SAME", activation="RELU6", name="dw_16_s2")
    b.output(t)
    return b.build()


def pixel_regs_strided() -> bytes:
    """Strided 1x1 CONV_2D from the pixel table (ts_conv2d_s8.c pixel_rows: output row by output row,
    pixels stride_w * in_c bytes apart), outputs over their dying inputs as the refined plan places
    them: 16 -> 32 at stride 2 over 8x8 (resnet's projection shortcut), 16 -> 17 at stride 2 over 7x9
    (odd rows and columns, odd out_c: one channel a pass), 8 -> 16 at stride (1, 2) over 5x9, 12 -> 20
    at stride (2, 1) over 7x6 (rows as wide as the input's, every other one: the flat functions a
    row), 12 -> 24 at stride 2 over two batches of 5x5, 8 -> 8 at stride 3 VALID over 7x8; then
    strided layers the table refuses, which take the default paths: 16 -> 8 (out_c < in_c) and RELU
    with an output zero point above -128 (a range narrower than int8)."""
    b = ModelBuilder(seed=75)
    x = b.input("x", (1, 8, 8, 16), zero_point=-128)
    x = b.conv2d(x, 32, (1, 1), (2, 2), "SAME", name="pw16_s2_to_32")
    y = b.input("y", (1, 7, 9, 16), zero_point=19)
    y = b.conv2d(y, 17, (1, 1), (2, 2), "SAME", name="pw16_s2_odd_to_17")
    z = b.input("z", (1, 5, 9, 8), zero_point=-5)
    z = b.conv2d(z, 16, (1, 1), (1, 2), "SAME", name="pw8_s1x2_to_16")
    u = b.input("u", (1, 7, 6, 12), zero_point=37)
    u = b.conv2d(u, 20, (1, 1), (2, 1), "SAME", name="pw12_s2x1_to_20")
    v = b.input("v", (2, 5, 5, 12), zero_point=0)
    v = b.conv2d(v, 24, (1, 1), (2, 2), "SAME", name="pw12_s2_batches")
    w = b.input("w", (1, 7, 8, 8), zero_point=-7)
    w = b.conv2d(w, 8, (1, 1), (3, 3), "VALID", name="pw8_s3_to_8")
    r = b.input("r", (1, 9, 9, 16), zero_point=3)
    r1 = b.conv2d(r, 8, (1, 1), (2, 2), "SAME", name="pw16_s2_to_8")
    r2 = b.conv2d(
        r, 16, (1, 1), (2, 2), "SAME", activation="RELU", output_quant=(0.03, -40), name="pw16_s2_narrow"
    )
    b.output(x, y, z, u, v, w, r1, r2)
    return b.build()


def pixel_regs_strided_in_place() -> bytes:
    """Strided 1x1 CONV_2D from the pixel table whose outputs the refined plan places over their
    dying inputs (one input, the arena's peak at these layers; each output read by two layers, so
    that no stage streams it): 12 -> 16 at stride (2, 1) over 9x8, then 16 -> 32 at stride 2 over
    its 5x8 output (odd rows: the last output row reads the input's last)."""
    b = ModelBuilder(seed=77)
    x = b.input("x", (1, 9, 8, 12), zero_point=-5)
    x = b.conv2d(x, 16, (1, 1), (2, 1), "SAME", name="pw12_s2x1_in_place")
    y = b.conv2d(x, 32, (1, 1), (2, 2), "SAME", name="pw16_s2_to_32_in_place")
    z = b.mean(y, (1, 2), keepdims=True, name="pool")
    b.output(
        b.mean(x, (1, 2), keepdims=True, name="pool_x"), z, b.mean(y, (1,), keepdims=True, name="pool_h")
    )
    return b.build()


def pixel_regs_strided_k32() -> bytes:
    """Strided 1x1 CONV_2D with in_c 32 from the pixel table in two halves (ts_conv2d_s8.c
    pixel_steps32: each half widened once, the first half's partial sums on the stack): 32 -> 64 at
    stride 2 over 7x9 (odd rows and columns) with a pruned channel the table holds as a constant,
    32 -> 33 at stride (2, 1) over 5x6 (pixels 32 bytes apart), 32 -> 40 at stride (1, 2) over two
    batches of 3x5, input zero points -128, 21 and 0; then layers the table refuses: 32 -> 65 at
    stride 2 (more partial sums than the stack holds) and 32 -> 48 at stride 1 (a flat layer)."""
    b = ModelBuilder(seed=78)
    x = b.input("x", (1, 7, 9, 32), zero_point=-128)
    factors = [1e-6 if c == 17 else 1.0 for c in range(64)]
    x = b.conv2d(x, 64, (1, 1), (2, 2), "SAME", scale_factors=factors, name="pw32_s2_to_64_constant")
    y = b.input("y", (1, 5, 6, 32), zero_point=21)
    y = b.conv2d(y, 33, (1, 1), (2, 1), "SAME", name="pw32_s2x1_to_33")
    z = b.input("z", (2, 3, 5, 32), zero_point=0)
    z = b.conv2d(z, 40, (1, 1), (1, 2), "SAME", name="pw32_s1x2_batches")
    r = b.input("r", (1, 5, 5, 32), zero_point=-3)
    r1 = b.conv2d(r, 65, (1, 1), (2, 2), "SAME", name="pw32_s2_to_65")
    r2 = b.conv2d(r, 48, (1, 1), name="pw32_to_48_flat")
    b.output(x, y, z, r1, r2)
    return b.build()


def pixel_regs_stage_strided() -> bytes:
    """Two residual blocks with stride-2 1x1 projection shortcuts from the pixel table: the first
    streamed as a stage, its shortcut 16 -> 32 over 11x9 on each call's rows
    (ts_conv2d_s8_pixels_checked: one output row from the rows present, every other one read, pixels
    2 * in_c bytes apart; odd rows and columns: the last output row and column read the input's
    last), the second's 32 -> 48 (K = 32: pixel_steps32, in two halves) whole over the first's 6x5
    output; input zero point -3."""
    b = ModelBuilder(seed=76)
    x = b.input("x", (1, 11, 9, 16), zero_point=-3)
    t = b.conv2d(x, 32, (3, 3), (2, 2), "SAME", activation="RELU", name="block1_k3_s2")
    t = b.conv2d(t, 32, (3, 3), (1, 1), "SAME", name="block1_k3")
    s = b.conv2d(x, 32, (1, 1), (2, 2), "SAME", name="block1_shortcut_16_s2")
    x = b.add(t, s, activation="RELU", name="block1_add")
    t = b.conv2d(x, 48, (3, 3), (2, 2), "SAME", activation="RELU", name="block2_k3_s2")
    t = b.conv2d(t, 48, (3, 3), (1, 1), "SAME", name="block2_k3")
    s = b.conv2d(x, 48, (1, 1), (2, 2), "SAME", name="block2_shortcut_32_s2")
    x = b.add(t, s, activation="RELU", name="block2_add")
    b.output(b.mean(x, (1, 2), keepdims=True, name="pool"))
    return b.build()


FAST_PATH_MODELS: dict[str, Callable[[], bytes]] = {
    "uint8_legacy_more_ops": uint8_legacy_more_ops,
    "uint8_legacy_layers": uint8_legacy_layers,
    "uint8_legacy_stream": uint8_legacy_stream,
    "uint8_legacy_depthwise_blocks": uint8_legacy_depthwise_blocks,
    "uint8_legacy_conv_sums": uint8_legacy_conv_sums,
    "uint8_legacy_pixel_tables": uint8_legacy_pixel_tables,
    "flat_rest_in_place": flat_rest_in_place,
    "pixel_regs_k16": pixel_regs_k16,
    "pixel_regs_k8_k12": pixel_regs_k8_k12,
    "pixel_regs_stage": pixel_regs_stage,
    "pixel_own_loops": pixel_own_loops,
    "pixel_regs_strided": pixel_regs_strided,
    "pixel_regs_strided_in_place": pixel_regs_strided_in_place,
    "pixel_regs_strided_k32": pixel_regs_strided_k32,
    "pixel_regs_stage_strided": pixel_regs_stage_strided,
    "pointwise_shapes": pointwise_shapes,
    "pointwise_batches_offsets": pointwise_batches_offsets,
    "conv_kxk_shapes": conv_kxk_shapes,
    "conv_single_channel_tall": conv_single_channel_tall,
    "conv_wide_channels": conv_wide_channels,
    "depthwise_shapes": depthwise_shapes,
    "fully_connected_shapes": fully_connected_shapes,
    "add_shapes": add_shapes,
    "add_scales": add_scales,
    "conv_patch_shapes": conv_patch_shapes,
    "pointwise_strided": pointwise_strided,
    "depthwise_channel_counts": depthwise_channel_counts,
    "depthwise_wide_runs": depthwise_wide_runs,
    "helium_shapes": helium_shapes,
    "conv_widened": conv_widened,
    "conv_pairs_widened": conv_pairs_widened,
    "conv_pruned_channels": conv_pruned_channels,
    "conv_wide_rq_forms": conv_wide_rq_forms,
    "depthwise_blocks": depthwise_blocks,
    "depthwise_blocks_clamped": depthwise_blocks_clamped,
    "depthwise_blocks_runs": depthwise_blocks_runs,
    "conv_quads_tables": conv_quads_tables,
    "conv_quads_rows": conv_quads_rows,
    "conv_stem_shapes": conv_stem_shapes,
    "avg_pool_lanes": avg_pool_lanes,
    "avg_pool_shapes": avg_pool_shapes,
    "conv_quads_helium": conv_quads_helium,
    "depthwise_pixels_helium": depthwise_pixels_helium,
    "stream_pool_rows": stream_pool_rows,
    "stream_pool_narrow": stream_pool_narrow,
    "stream_pad_rows": stream_pad_rows,
    "conv_quads_few": conv_quads_few,
    "conv_quads_one_group": conv_quads_one_group,
    "stream_rows_checked": stream_rows_checked,
    "stream_one_pixel_rows": stream_one_pixel_rows,
    "stream_one_pixel_rows_narrowing": stream_one_pixel_rows_narrowing,
    "stream_one_pixel_rows_full_range": stream_one_pixel_rows_full_range,
    "stream_rows_six_plus_one": stream_rows_six_plus_one,
    "stream_stem_rows": stream_stem_rows,
    "stream_fc_rows": stream_fc_rows,
    "stream_fc_blocks": stream_fc_blocks,
    "stream_fc_single": stream_fc_single,
    "stream_fc_view": stream_fc_view,
    "stream_fc_quads": stream_fc_quads,
    "stream_fc_quads16": stream_fc_quads16,
    "stream_column_tiles": stream_column_tiles,
    "stream_column_tiles_conv": stream_column_tiles_conv,
    "layer_tables_helium": layer_tables_helium,
    "layer_tables_staged_helium": layer_tables_staged_helium,
    "depthwise_eff_helium": depthwise_eff_helium,
    "quads_unrolled_helium": quads_unrolled_helium,
    "pointwise_five_helium": pointwise_five_helium,
    "patch_five_helium": patch_five_helium,
    "stream_five_helium": stream_five_helium,
    "max_pool_words": max_pool_words,
    "resize_argmax_segmentation": resize_argmax_segmentation,
    "resize_argmax_modes": resize_argmax_modes,
    "stream_resize_bilinear_half": stream_resize_bilinear_half,
    "stream_resize_bilinear_rows_down": stream_resize_bilinear_rows_down,
    "stream_resize_nearest_align": stream_resize_nearest_align,
    "stream_resize_nearest_half_down": stream_resize_nearest_half_down,
    "stream_resize_depthwise": stream_resize_depthwise,
    "stream_resize_pointwise": stream_resize_pointwise,
    "resize_over_input": resize_over_input,
}
