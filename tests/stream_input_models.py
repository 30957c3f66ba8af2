"""Models for --stream-input (tests/test_stream_input.py, tests/test_export.py): a camera's first
layers, whose input the application delivers row by row, and models that must keep it whole."""

from __future__ import annotations

from tinysched.model.modelgen import ModelBuilder


def camera_head(b: ModelBuilder) -> None:
    """A 24x20x4 frame (1,920 B, rows of 80 B) into an inverted-residual head, then a global mean:
    the input is the largest tensor, and its only reader is a 3x3 stride-2 convolution."""
    x = b.input("frame", (1, 24, 20, 4))
    t = b.conv2d(x, 8, (3, 3), stride=(2, 2), padding="SAME", activation="RELU6", name="conv1")  # 12x10x8
    t = b.depthwise_conv2d(t, (3, 3), activation="RELU6", name="dw1")  # 12x10x8
    t = b.conv2d(t, 4, (1, 1), activation="RELU6", name="pw1")  # 12x10x4: 480 B
    # a global MEAN: an AVERAGE_POOL_2D over the whole map would end the input's stage (its sums)
    b.output(b.mean(t, (1, 2), keepdims=True, name="gap"))


def skipping_head(b: ModelBuilder) -> None:
    """A 1x1 stride-2 convolution reads every other row and a VALID 3x3 stride-2 one leaves the last
    row unread: the rows no output reads are asked for all the same (each row once, in order)."""
    x = b.input("frame", (1, 22, 9, 3))
    t = b.conv2d(x, 6, (1, 1), stride=(2, 2), activation="RELU", name="sub")  # 11x5x6, reads rows 0, 2, ..
    t = b.conv2d(t, 5, (3, 3), stride=(2, 2), padding="VALID", name="valid")  # 5x2x5, row 10 unread
    b.output(t)


def input_read_twice(b: ModelBuilder) -> None:
    """The input read by a convolution and by a pooling: its rows cannot stream into one operator."""
    x = b.input("x", (1, 12, 10, 8))
    a = b.conv2d(x, 8, (1, 1), name="a")
    p = b.average_pool2d(x, (3, 3), (1, 1), padding="SAME", name="p")
    b.output(b.add(a, p, name="sum"))


def float_input(b: ModelBuilder) -> None:
    """A float32 input read by a QUANTIZE (the converter's default interface), then a convolution."""
    x = b.input("x", (1, 16, 12, 3), dtype="float32")
    q = b.quantize(x, 1 / 64, 0, name="q")
    t = b.conv2d(q, 4, (3, 3), stride=(2, 2), padding="SAME", name="conv")
    b.output(b.mean(t, (1, 2), keepdims=True, name="gap"))  # (see camera_head)


def expanding_head(b: ModelBuilder) -> None:
    """A frame into an inverted residual block whose 1x1 widens 8 -> 48 channels for a 3x3 stride-2
    depthwise, then a 7x7 one (issue 33): streamed, the widest window is the expansion's 3 rows of
    48 channels; computed into its depthwise by channel groups it is never held at all."""
    x = b.input("frame", (1, 48, 40, 3))
    t = b.conv2d(x, 8, (3, 3), stride=(2, 2), padding="SAME", activation="RELU6", name="conv1")  # 24x20x8
    t = b.conv2d(t, 48, (1, 1), activation="RELU6", name="expand1")  # 24x20x48
    t = b.depthwise_conv2d(t, (3, 3), stride=(2, 2), padding="SAME", activation="RELU6", name="dw1")
    t = b.conv2d(t, 8, (1, 1), name="project1")  # dw1: 12x10x48; project1: 12x10x8
    t = b.conv2d(t, 36, (1, 1), activation="RELU6", name="expand2")  # 12x10x36
    t = b.depthwise_conv2d(t, (7, 7), stride=(2, 2), padding="SAME", activation="RELU6", name="dw2")
    t = b.conv2d(t, 8, (1, 1), name="project2")  # dw2: 6x5x36; project2: 6x5x8
    b.output(b.mean(t, (1, 2), keepdims=True, name="gap"))
