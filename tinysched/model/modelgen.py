"""Build small int8 TFLite models from scratch, for tests and the bundled demo.

Tests on a fresh machine cannot download models, and the interesting cases for a memory scheduler
(residual adds, concatenations, tensors with several consumers) are easiest to write down directly.
`ModelBuilder` writes real `.tflite` flatbuffers through the official schema's object API, following
the conventions of the TFLite converter: buffer 0 is the empty sentinel, every tensor has its own
buffer, weights are symmetric int8 (per channel on the output axis), biases are int32 with scale
`input_scale * weight_scale`, and operator versions are the ones the converter would pick for int8.

Activation quantisation is chosen from a cheap float calibration: the builder carries a few float
samples of every tensor through the graph (numpy, using the dequantised weights) and picks each
output's scale and zero point from the observed range, so the int8 outputs use most of their range
instead of saturating. Saturated outputs would hide bugs in bit-exact comparisons.
"""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as schema

from tinysched.files import write_atomic

__all__ = [
    "ModelBuilder",
    "TensorHandle",
    "random_branching_model",
    "tiny_demo_model",
    "wide_model",
    "wired_model",
]

Activation = Literal["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]
PaddingMode = Literal["SAME", "VALID"]

# Float samples carried through the graph to pick output quantisation.
_CALIB_SAMPLES = 16
# Widen the observed range a little so unseen inputs rarely saturate.
_RANGE_MARGIN = 1.1

_TFLITE_TYPES: dict[str, int] = {
    "float32": schema.TensorType.FLOAT32,
    "int8": schema.TensorType.INT8,
    "uint8": schema.TensorType.UINT8,
    "int16": schema.TensorType.INT16,
    "int32": schema.TensorType.INT32,
    "int64": schema.TensorType.INT64,
    "bool": schema.TensorType.BOOL,
}
_INT_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-128, 127),
    "uint8": (0, 255),
    "int16": (-32768, 32767),
}

# Default quantisation of `input()`: real range about [-2, 2].
DEFAULT_INPUT_SCALE = 1.0 / 64.0
# TFLite's int8 SOFTMAX and LOGISTIC kernels require exactly this output quantisation.
PROBABILITY_QUANT = (1.0 / 256.0, -128)


@dataclass(frozen=True)
class TensorHandle:
    """A tensor of the model being built: what later builder calls need to know about it."""

    index: int
    name: str
    shape: tuple[int, ...]
    dtype: str  # numpy-style name: "int8", "int32", "float32", ...
    scale: float | None = None  # per-tensor scale; None for float tensors and per-channel weights
    zero_point: int = 0

    @property
    def quant(self) -> tuple[float, int] | None:
        return None if self.scale is None else (self.scale, self.zero_point)


class _AlignedBufferT(schema.BufferT):
    """A buffer whose data starts 16-byte aligned, as the converter's `force_align: 16` does."""

    def Pack(self, builder: flatbuffers.Builder) -> int:  # the name flatbuffers calls
        payload = bytes(self.data) if self.data is not None else b""
        data_offset = None
        if self.data is not None:
            builder.StartVector(1, len(payload), 16)
            builder.head = builder.head - len(payload)
            builder.Bytes[builder.head : builder.head + len(payload)] = payload
            data_offset = builder.EndVector()
        schema.BufferStart(builder)
        if data_offset is not None:
            schema.BufferAddData(builder, data_offset)
        return schema.BufferEnd(builder)


def _f32(x: float) -> float:
    """Round to float32, the precision the flatbuffer stores, so handles match the file."""
    return float(np.float32(x))


def _quant_for_range(lo: float, hi: float) -> tuple[float, int]:
    """int8 scale/zero point covering [lo, hi] (widened to include 0, as TFLite requires)."""
    lo = min(lo * _RANGE_MARGIN, 0.0)
    hi = max(hi * _RANGE_MARGIN, 0.0)
    if hi - lo < 1e-6:
        hi = lo + 1e-3
    scale = _f32((hi - lo) / 255.0)
    zero_point = int(np.clip(round(-128 - lo / scale), -128, 127))
    return scale, zero_point


def _apply_activation(y: np.ndarray, activation: str) -> np.ndarray:
    if activation == "RELU":
        return np.maximum(y, 0.0)
    if activation == "RELU6":
        return np.clip(y, 0.0, 6.0)
    if activation == "RELU_N1_TO_1":
        return np.clip(y, -1.0, 1.0)
    if activation == "NONE":
        return y
    raise ValueError(f"unsupported fused activation {activation!r}")


def _window_geometry(
    size: int, kernel: int, stride: int, dilation: int, padding: str
) -> tuple[int, int, int]:
    """(output size, pad before, pad after) exactly as TFLite computes them."""
    effective = (kernel - 1) * dilation + 1
    if padding == "SAME":
        out = (size + stride - 1) // stride
    elif padding == "VALID":
        out = (size - effective + stride) // stride
    else:
        raise ValueError(f"padding must be 'SAME' or 'VALID', not {padding!r}")
    if out <= 0:
        raise ValueError(f"window {kernel} (dilation {dilation}) does not fit input size {size}")
    total = max((out - 1) * stride + effective - size, 0)
    return out, total // 2, total - total // 2


def _windows(
    x: np.ndarray,
    kernel: tuple[int, int],
    stride: tuple[int, int],
    dilation: tuple[int, int],
    padding: str,
    fill: float,
) -> tuple[list[tuple[int, int, np.ndarray]], tuple[int, int]]:
    """Strided views of padded NHWC `x`, one per kernel tap: the basis of conv and pooling."""
    _, h, w, _ = x.shape
    oh, pt, pb = _window_geometry(h, kernel[0], stride[0], dilation[0], padding)
    ow, pl, pr = _window_geometry(w, kernel[1], stride[1], dilation[1], padding)
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=fill)
    taps = []
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            r0, c0 = i * dilation[0], j * dilation[1]
            view = xp[
                :,
                r0 : r0 + (oh - 1) * stride[0] + 1 : stride[0],
                c0 : c0 + (ow - 1) * stride[1] + 1 : stride[1],
                :,
            ]
            taps.append((i, j, view))
    return taps, (oh, ow)


def _flat(sample: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Fold the calibration axis into the batch axis of an NHWC sample."""
    return sample.reshape((-1, *shape[1:]))


class ModelBuilder:
    """Incrementally builds one single-subgraph int8 TFLite model.

    Every op method takes and returns `TensorHandle`s; weights are drawn from a generator seeded
    with `seed`, so the same calls always produce the same bytes.
    """

    def __init__(
        self, seed: int = 0, description: str = "tinysched.modelgen", legacy_uint8: bool = False
    ) -> None:
        """`legacy_uint8`: the model is written as a legacy uint8-quantised one: every quantised int8
        tensor becomes uint8 (zero point + 128, bytes xor 0x80) and the weights of CONV_2D,
        DEPTHWISE_CONV_2D and FULLY_CONNECTED are per tensor with a non-zero zero point."""
        self._legacy_uint8 = legacy_uint8
        # a legacy uint8 model's next filters' zero point in int8 terms (uint8's - 128; None: drawn,
        # non-zero): 0 is a uint8 zero point of 128, a symmetric filter once computed as int8
        self.filter_zero_point: int | None = None
        self._rng = np.random.default_rng(seed)
        self._description = description
        self._tensors: list[schema.TensorT] = []
        self._buffers: list[schema.BufferT] = [schema.BufferT()]  # 0: the empty sentinel
        self._opcodes: list[schema.OperatorCodeT] = []
        self._opcode_index: dict[tuple[int, int, str | None], int] = {}
        self._operators: list[schema.OperatorT] = []
        self._inputs: list[int] = []
        self._outputs: list[int] = []
        self._handles: list[TensorHandle] = []
        self._constant: set[int] = set()
        self._calib: dict[int, np.ndarray] = {}
        self._names: set[str] = set()

    # ------------------------------------------------------------------ tensors

    @property
    def operator_count(self) -> int:
        return len(self._operators)

    def _unique(self, name: str) -> str:
        candidate, n = name, 1
        while candidate in self._names:
            candidate = f"{name}_{n}"
            n += 1
        self._names.add(candidate)
        return candidate

    def _tensor(
        self,
        name: str,
        shape: Sequence[int],
        dtype: str,
        quant: tuple[float, int] | None = None,
        data: np.ndarray | None = None,
        channel_scales: np.ndarray | None = None,
        channel_axis: int = 0,
        channel_zero_point: int = 0,
    ) -> TensorHandle:
        if dtype not in _TFLITE_TYPES:
            raise ValueError(f"unsupported dtype {dtype!r}")
        shape = tuple(int(d) for d in shape)
        if any(d <= 0 for d in shape):
            raise ValueError(f"tensor {name!r}: shape {shape} must be fully known and positive")
        name = self._unique(name)
        quantization = None
        scale: float | None = None
        zero_point = 0
        if channel_scales is not None:
            scales = [_f32(s) for s in np.asarray(channel_scales, dtype=np.float64)]
            quantization = schema.QuantizationParametersT(
                scale=scales, zeroPoint=[channel_zero_point] * len(scales), quantizedDimension=channel_axis
            )
            if len(scales) == 1:
                scale = scales[0]
        elif quant is not None:
            scale, zero_point = _f32(quant[0]), int(quant[1])
            quantization = schema.QuantizationParametersT(scale=[scale], zeroPoint=[zero_point])
        buffer = schema.BufferT()
        if data is not None:
            array = np.ascontiguousarray(np.asarray(data, dtype=dtype).reshape(shape))
            buffer = _AlignedBufferT(data=array.reshape(-1).view(np.uint8))
        self._buffers.append(buffer)
        index = len(self._tensors)
        self._tensors.append(
            schema.TensorT(
                shape=list(shape),
                type=_TFLITE_TYPES[dtype],
                buffer=len(self._buffers) - 1,
                name=name,
                quantization=quantization,
            )
        )
        handle = TensorHandle(index, name, shape, dtype, scale, zero_point)
        self._handles.append(handle)
        if data is not None:
            self._constant.add(index)
        return handle

    def input(
        self,
        name: str,
        shape: Sequence[int],
        dtype: str = "int8",
        scale: float = DEFAULT_INPUT_SCALE,
        zero_point: int = 0,
    ) -> TensorHandle:
        """A model input; integer inputs are quantised with (scale, zero_point)."""
        quant = (scale, zero_point) if dtype in _INT_RANGES else None
        handle = self._tensor(name, shape, dtype, quant)
        self._inputs.append(handle.index)
        return handle

    def constant(
        self,
        value: np.ndarray | Sequence[Any],
        dtype: str | None = None,
        quant: tuple[float, int] | None = None,
        name: str = "const",
    ) -> TensorHandle:
        """A constant tensor (shape vectors, paddings, or operands for `op()`)."""
        array = np.asarray(value) if dtype is None else np.asarray(value, dtype=dtype)
        handle = self._tensor(name, array.shape, str(array.dtype), quant, data=array)
        if quant is not None:
            real = (array.astype(np.float64) - quant[1]) * quant[0]
            self._calib[handle.index] = np.broadcast_to(real, (_CALIB_SAMPLES, *handle.shape))
        return handle

    def shape_signature(self, handle: TensorHandle, signature: Sequence[int]) -> None:
        """Store `signature` as the tensor's shape_signature, -1 marking a dimension unknown when
        the model was converted: the converter then stores a placeholder there (1) and TFLite's
        Prepare computes the real size."""
        if len(signature) != len(handle.shape) or any(
            d not in (-1, s) for d, s in zip(signature, handle.shape, strict=True)
        ):
            raise ValueError(f"{handle.name}: signature {list(signature)} for shape {list(handle.shape)}")
        self._tensors[handle.index].shapeSignature = [int(d) for d in signature]

    def output(self, *handles: TensorHandle) -> None:
        """Mark tensors as model outputs, in order."""
        for h in handles:
            if h.index not in self._outputs:
                self._outputs.append(h.index)

    def _sample(self, h: TensorHandle) -> np.ndarray:
        """Float calibration samples of `h`, shape (K, *h.shape); synthesised if unknown."""
        if h.index not in self._calib:
            if h.dtype in _INT_RANGES and h.scale is not None:
                lo, hi = _INT_RANGES[h.dtype]
                q = self._rng.integers(lo, hi + 1, size=(_CALIB_SAMPLES, *h.shape))
                self._calib[h.index] = (q - h.zero_point) * h.scale
            else:
                self._calib[h.index] = self._rng.uniform(-1.0, 1.0, (_CALIB_SAMPLES, *h.shape))
        return self._calib[h.index]

    def _activation_out(
        self,
        name: str,
        real: np.ndarray,
        shape: Sequence[int],
        quant: tuple[float, int] | None,
    ) -> TensorHandle:
        """An int8 output whose quantisation comes from its calibration samples unless given."""
        if quant is None:
            quant = _quant_for_range(float(real.min()), float(real.max()))
        handle = self._tensor(name, shape, "int8", quant)
        self._calib[handle.index] = real.reshape((_CALIB_SAMPLES, *handle.shape))
        return handle

    # ---------------------------------------------------------------- operators

    def _operator(
        self,
        builtin: str,
        inputs: Sequence[int],
        outputs: Sequence[int],
        options: Any = None,
        version: int = 1,
        custom_code: str | None = None,
    ) -> None:
        code = getattr(schema.BuiltinOperator, builtin, None)
        if code is None:
            raise ValueError(f"unknown builtin operator {builtin!r}")
        key = (code, version, custom_code)
        if key not in self._opcode_index:
            self._opcode_index[key] = len(self._opcodes)
            # Codes above 127 live in builtinCode; the deprecated byte holds the placeholder.
            self._opcodes.append(
                schema.OperatorCodeT(
                    deprecatedBuiltinCode=min(code, 127),
                    builtinCode=code,
                    version=version,
                    customCode=custom_code,
                )
            )
        op = schema.OperatorT(opcodeIndex=self._opcode_index[key], inputs=list(inputs), outputs=list(outputs))
        if options is not None:
            kind = type(options).__name__.removesuffix("T")
            if hasattr(schema.BuiltinOptions, kind):
                op.builtinOptionsType = getattr(schema.BuiltinOptions, kind)
                op.builtinOptions = options
            elif hasattr(schema.BuiltinOptions2, kind):
                op.builtinOptions2Type = getattr(schema.BuiltinOptions2, kind)
                op.builtinOptions2 = options
            else:
                raise ValueError(f"{type(options).__name__} is not a builtin options table")
        self._operators.append(op)

    def op(
        self,
        builtin: str,
        inputs: Sequence[TensorHandle | None],
        output_shapes: Sequence[Sequence[int]],
        options: Any = None,
        version: int = 1,
        output_dtypes: Sequence[str] | None = None,
        output_quant: tuple[float, int] | None = None,
        name: str | None = None,
    ) -> list[TensorHandle]:
        """Any builtin operator, for graph-only tests: no shape inference, no weights.

        `None` inputs become -1 (an absent optional input). Outputs default to int8 with the first
        quantised input's quantisation, which is right for shape and selection ops.
        """
        present = [h for h in inputs if h is not None]
        dtypes = list(output_dtypes or [present[0].dtype if present else "int8"] * len(output_shapes))
        if len(dtypes) != len(output_shapes):
            raise ValueError("output_dtypes and output_shapes differ in length")
        if output_quant is None:
            output_quant = next((h.quant for h in present if h.quant is not None), None)
        outputs = [
            self._tensor(
                name or builtin.lower(),
                shape,
                dtype,
                output_quant if dtype in _INT_RANGES else None,
            )
            for shape, dtype in zip(output_shapes, dtypes, strict=True)
        ]
        self._operator(
            builtin,
            [-1 if h is None else h.index for h in inputs],
            [h.index for h in outputs],
            options,
            version,
        )
        return outputs

    def custom(
        self,
        code: str,
        inputs: Sequence[TensorHandle],
        output_shapes: Sequence[Sequence[int]],
        name: str = "custom",
    ) -> list[TensorHandle]:
        """A CUSTOM operator named `code` (TFLite's custom_code), for graph-only tests: int8 outputs
        with the first input's quantisation, no options, nothing TFLite's interpreter could run."""
        quant = next((h.quant for h in inputs if h.quant is not None), None)
        outputs = [self._tensor(name, shape, "int8", quant) for shape in output_shapes]
        self._operator("CUSTOM", [h.index for h in inputs], [h.index for h in outputs], custom_code=code)
        return outputs

    def _weights(
        self, shape: tuple[int, ...], fan_in: int, channel_axis: int, per_channel: bool
    ) -> tuple[np.ndarray, np.ndarray, int]:
        """Symmetric int8 weights in [-127, 127] and their scales (one per channel or one), and
        their zero point 0; for a legacy uint8 model, weights over all of int8 (uint8 once written)
        with one scale and a non-zero zero point."""
        if self._legacy_uint8:
            zero_point = int(self._rng.choice([-1, 1]) * self._rng.integers(5, 40))
            if self.filter_zero_point is not None:
                zero_point = self.filter_zero_point
            q = self._rng.integers(-128, 128, size=shape).astype(np.int8)
            q.reshape(-1)[0] = -128  # uint8 0, the far end from any zero point
            base = 1.0 / (160.0 * math.sqrt(fan_in))
            return q, np.array([_f32(base * self._rng.uniform(0.5, 1.5))]), zero_point
        q = self._rng.integers(-127, 128, size=shape).astype(np.int8)
        channels = shape[channel_axis] if per_channel else 1
        base = 1.0 / (127.0 * math.sqrt(fan_in))
        scales = np.array([_f32(s) for s in base * self._rng.uniform(0.5, 1.5, channels)])
        return q, scales, 0

    def _bias(
        self, acc: np.ndarray, input_scale: float, weight_scales: np.ndarray, name: str
    ) -> tuple[TensorHandle, np.ndarray]:
        """int32 bias (scale input_scale*weight_scale, zero point 0) and its real value.

        `weight_scales` has one entry (per-tensor) or one per output channel, and so has the bias.
        """
        channels = acc.shape[-1]
        spread = acc.reshape(-1, channels).std(axis=0) + 1e-3
        real = self._rng.normal(0.0, 0.3, channels) * spread
        scales = np.array([_f32(input_scale * float(s)) for s in weight_scales])
        per_channel = np.broadcast_to(scales, (channels,))
        q = np.clip(np.round(real / per_channel), -(2**31), 2**31 - 1).astype(np.int32)
        handle = self._tensor(name, (channels,), "int32", data=q, channel_scales=scales)
        return handle, q * per_channel

    def _check_int8(self, *handles: TensorHandle) -> None:
        for h in handles:
            if h.dtype != "int8" or h.scale is None:
                raise ValueError(f"{h.name} must be a per-tensor quantised int8 tensor")

    def conv2d(
        self,
        x: TensorHandle,
        filters: int,
        kernel: tuple[int, int] = (3, 3),
        stride: tuple[int, int] = (1, 1),
        padding: PaddingMode = "SAME",
        dilation: tuple[int, int] = (1, 1),
        activation: Activation = "NONE",
        per_channel: bool = True,
        output_quant: tuple[float, int] | None = None,
        scale_factors: Sequence[float] | None = None,
        name: str = "conv2d",
    ) -> TensorHandle:
        """CONV_2D (v3): filter [O,H,W,I], per-channel scales on axis 0.

        Always has a bias: TFLite's quantised conv kernel rejects a conv without one.
        `scale_factors` multiply the per-channel filter scales: a tiny factor makes the pruned
        channel a trained model keeps (a scale near 0, its bias near the int32 limits).
        """
        self._check_int8(x)
        n, h, w, c = x.shape
        wq, ws, wz = self._weights((filters, *kernel, c), kernel[0] * kernel[1] * c, 0, per_channel)
        if scale_factors is not None:
            if len(ws) != filters or len(scale_factors) != filters:
                raise ValueError(f"{name}: scale_factors needs one factor per output channel ({filters})")
            ws = np.array([_f32(s * f) for s, f in zip(ws, scale_factors, strict=True)])
        weight = self._tensor(
            f"{name}/filter",
            wq.shape,
            "int8",
            data=wq,
            channel_scales=ws,
            channel_axis=0,
            channel_zero_point=wz,
        )
        real_w = (wq.astype(np.int32) - wz) * np.broadcast_to(ws, (filters,))[:, None, None, None]
        xs = _flat(self._sample(x), x.shape)
        taps, (oh, ow) = _windows(xs, kernel, stride, dilation, padding, 0.0)
        acc = np.zeros((xs.shape[0], oh, ow, filters))
        for i, j, view in taps:
            acc += view @ real_w[:, i, j, :].T
        bias, real_b = self._bias(acc, x.scale or 1.0, ws, f"{name}/bias")
        acc += real_b
        inputs = [x.index, weight.index, bias.index]
        out = self._activation_out(
            name, _apply_activation(acc, activation), (n, oh, ow, filters), output_quant
        )
        options = schema.Conv2DOptionsT(
            padding=getattr(schema.Padding, padding),
            strideW=stride[1],
            strideH=stride[0],
            fusedActivationFunction=getattr(schema.ActivationFunctionType, activation),
            dilationWFactor=dilation[1],
            dilationHFactor=dilation[0],
        )
        self._operator("CONV_2D", inputs, [out.index], options, 3)
        return out

    def depthwise_conv2d(
        self,
        x: TensorHandle,
        kernel: tuple[int, int] = (3, 3),
        stride: tuple[int, int] = (1, 1),
        padding: PaddingMode = "SAME",
        depth_multiplier: int = 1,
        dilation: tuple[int, int] = (1, 1),
        activation: Activation = "NONE",
        per_channel: bool = True,
        use_bias: bool = True,
        output_quant: tuple[float, int] | None = None,
        name: str = "depthwise_conv2d",
    ) -> TensorHandle:
        """DEPTHWISE_CONV_2D (v3): filter [1,H,W,I*M], per-channel scales on axis 3."""
        self._check_int8(x)
        n, h, w, c = x.shape
        oc = c * depth_multiplier
        wq, ws, wz = self._weights((1, *kernel, oc), kernel[0] * kernel[1], 3, per_channel)
        weight = self._tensor(
            f"{name}/filter",
            wq.shape,
            "int8",
            data=wq,
            channel_scales=ws,
            channel_axis=3,
            channel_zero_point=wz,
        )
        real_w = (wq.astype(np.int32) - wz) * np.broadcast_to(ws, (oc,))
        xs = _flat(self._sample(x), x.shape)
        taps, (oh, ow) = _windows(xs, kernel, stride, dilation, padding, 0.0)
        acc = np.zeros((xs.shape[0], oh, ow, oc))
        for i, j, view in taps:
            acc += np.repeat(view, depth_multiplier, axis=-1) * real_w[0, i, j, :]
        inputs = [x.index, weight.index]  # no bias: omitted (conv kernels reject -1 here)
        if use_bias:
            bias, real_b = self._bias(acc, x.scale or 1.0, ws, f"{name}/bias")
            acc += real_b
            inputs.append(bias.index)
        out = self._activation_out(name, _apply_activation(acc, activation), (n, oh, ow, oc), output_quant)
        options = schema.DepthwiseConv2DOptionsT(
            padding=getattr(schema.Padding, padding),
            strideW=stride[1],
            strideH=stride[0],
            depthMultiplier=depth_multiplier,
            fusedActivationFunction=getattr(schema.ActivationFunctionType, activation),
            dilationWFactor=dilation[1],
            dilationHFactor=dilation[0],
        )
        self._operator("DEPTHWISE_CONV_2D", inputs, [out.index], options, 3)
        return out

    def fully_connected(
        self,
        x: TensorHandle,
        units: int,
        activation: Activation = "NONE",
        per_channel: bool = False,
        keep_num_dims: bool = False,
        use_bias: bool = True,
        output_quant: tuple[float, int] | None = None,
        name: str = "fully_connected",
        flatten: bool = False,
    ) -> TensorHandle:
        """FULLY_CONNECTED (v4; v5 with keep_num_dims): weights [O,I], input flattened to [-1,I]; I is
        the last dimension, or with `flatten` all but the first (a map read whole by each output, as
        tflm_micro_speech's FULLY_CONNECTED reads its 25x20x8 map without a RESHAPE)."""
        self._check_int8(x)
        depth = math.prod(x.shape[1:]) if flatten else x.shape[-1]
        batch = math.prod(x.shape) // depth
        wq, ws, wz = self._weights((units, depth), depth, 0, per_channel)
        weight = self._tensor(
            f"{name}/weights",
            wq.shape,
            "int8",
            data=wq,
            channel_scales=ws,
            channel_axis=0,
            channel_zero_point=wz,
        )
        real_w = (wq.astype(np.int32) - wz) * np.broadcast_to(ws, (units,))[:, None]
        acc = self._sample(x).reshape(_CALIB_SAMPLES, batch, depth) @ real_w.T
        inputs = [x.index, weight.index, -1]  # FC accepts an absent (-1) optional bias
        if use_bias:
            bias, real_b = self._bias(acc, x.scale or 1.0, ws, f"{name}/bias")
            acc += real_b
            inputs[2] = bias.index
        shape = (*x.shape[:-1], units) if keep_num_dims else (batch, units)
        out = self._activation_out(name, _apply_activation(acc, activation), shape, output_quant)
        options = schema.FullyConnectedOptionsT(
            fusedActivationFunction=getattr(schema.ActivationFunctionType, activation),
            keepNumDims=keep_num_dims,
        )
        version = 5 if keep_num_dims else 4
        self._operator("FULLY_CONNECTED", inputs, [out.index], options, version)
        return out

    def _binary(
        self,
        builtin: str,
        a: TensorHandle,
        b: TensorHandle,
        activation: Activation,
        output_quant: tuple[float, int] | None,
        name: str,
    ) -> TensorHandle:
        self._check_int8(a, b)
        shape = tuple(np.broadcast_shapes(a.shape, b.shape))
        sa, sb = self._sample(a), self._sample(b)
        real = sa + sb if builtin == "ADD" else sa * sb
        out = self._activation_out(name, _apply_activation(real, activation), shape, output_quant)
        act = getattr(schema.ActivationFunctionType, activation)
        if builtin == "ADD":
            options: Any = schema.AddOptionsT(fusedActivationFunction=act)
            version = 2
        else:
            options = schema.MulOptionsT(fusedActivationFunction=act)
            # Version 3 marks an effective rescale >= 1, as the converter's versioning does.
            version = 3 if (a.scale or 0) * (b.scale or 0) / (out.scale or 1) >= 1.0 else 2
        self._operator(builtin, [a.index, b.index], [out.index], options, version)
        return out

    def add(
        self,
        a: TensorHandle,
        b: TensorHandle,
        activation: Activation = "NONE",
        output_quant: tuple[float, int] | None = None,
        name: str = "add",
    ) -> TensorHandle:
        """ADD (v2), with numpy-style broadcasting; inputs may have different quantisation."""
        return self._binary("ADD", a, b, activation, output_quant, name)

    def mul(
        self,
        a: TensorHandle,
        b: TensorHandle,
        activation: Activation = "NONE",
        output_quant: tuple[float, int] | None = None,
        name: str = "mul",
    ) -> TensorHandle:
        """MUL (v2, or v3 when the rescale is >= 1), with numpy-style broadcasting."""
        return self._binary("MUL", a, b, activation, output_quant, name)

    def requantize(
        self, x: TensorHandle, scale: float, zero_point: int, name: str = "requantize"
    ) -> TensorHandle:
        """int8 -> int8 QUANTIZE, the converter's way of matching concatenation inputs."""
        return self.quantize(x, scale, zero_point, "int8", name=name)

    def concatenation(
        self,
        inputs: Sequence[TensorHandle],
        axis: int = -1,
        activation: Activation = "NONE",
        requantize: bool = True,
        name: str = "concatenation",
    ) -> TensorHandle:
        """CONCATENATION (v2). TFLite's int8 kernel needs equal input and output quantisation,
        so inputs that differ are first requantised to a common range (unless `requantize=False`,
        in which case they must already agree)."""
        if not inputs:
            raise ValueError("concatenation needs at least one input")
        self._check_int8(*inputs)
        rank = len(inputs[0].shape)
        axis = axis + rank if axis < 0 else axis
        quants = {h.quant for h in inputs}
        if len(quants) == 1:
            quant = inputs[0].quant
            assert quant is not None
        else:
            if not requantize:
                raise ValueError("int8 CONCATENATION inputs must share one quantisation")
            quant = _quant_union(*inputs)
            inputs = [
                h if h.quant == quant else self.requantize(h, *quant, name=f"{name}/requantize")
                for h in inputs
            ]
        real = np.concatenate([self._sample(h) for h in inputs], axis=axis + 1)
        shape = real.shape[1:]
        out = self._tensor(name, shape, "int8", quant)
        self._calib[out.index] = _apply_activation(real, activation)
        options = schema.ConcatenationOptionsT(
            axis=axis, fusedActivationFunction=getattr(schema.ActivationFunctionType, activation)
        )
        self._operator("CONCATENATION", [h.index for h in inputs], [out.index], options, 2)
        return out

    def _pool(
        self,
        builtin: str,
        x: TensorHandle,
        pool: tuple[int, int],
        stride: tuple[int, int],
        padding: PaddingMode,
        activation: Activation,
        name: str,
    ) -> TensorHandle:
        self._check_int8(x)
        xs = _flat(self._sample(x), x.shape)
        if builtin == "MAX_POOL_2D":
            taps, (oh, ow) = _windows(xs, pool, stride, (1, 1), padding, -np.inf)
            real = np.max([view for _, _, view in taps], axis=0)
        else:
            taps, (oh, ow) = _windows(xs, pool, stride, (1, 1), padding, 0.0)
            ones, _ = _windows(np.ones_like(xs[:1]), pool, stride, (1, 1), padding, 0.0)
            count = np.sum([view for _, _, view in ones], axis=0)
            real = np.sum([view for _, _, view in taps], axis=0) / count
        shape = (x.shape[0], oh, ow, x.shape[3])
        # TFLite's int8 pooling kernels require the output quantisation to equal the input's.
        out = self._tensor(name, shape, "int8", x.quant)
        self._calib[out.index] = _apply_activation(real, activation).reshape(_CALIB_SAMPLES, *shape)
        options = schema.Pool2DOptionsT(
            padding=getattr(schema.Padding, padding),
            strideW=stride[1],
            strideH=stride[0],
            filterWidth=pool[1],
            filterHeight=pool[0],
            fusedActivationFunction=getattr(schema.ActivationFunctionType, activation),
        )
        self._operator(builtin, [x.index], [out.index], options, 2)
        return out

    def average_pool2d(
        self,
        x: TensorHandle,
        pool: tuple[int, int] = (2, 2),
        stride: tuple[int, int] = (2, 2),
        padding: PaddingMode = "VALID",
        activation: Activation = "NONE",
        name: str = "average_pool2d",
    ) -> TensorHandle:
        """AVERAGE_POOL_2D (v2); output keeps the input quantisation."""
        return self._pool("AVERAGE_POOL_2D", x, pool, stride, padding, activation, name)

    def max_pool2d(
        self,
        x: TensorHandle,
        pool: tuple[int, int] = (2, 2),
        stride: tuple[int, int] = (2, 2),
        padding: PaddingMode = "VALID",
        activation: Activation = "NONE",
        name: str = "max_pool2d",
    ) -> TensorHandle:
        """MAX_POOL_2D (v2); output keeps the input quantisation."""
        return self._pool("MAX_POOL_2D", x, pool, stride, padding, activation, name)

    def reshape(self, x: TensorHandle, shape: Sequence[int], name: str = "reshape") -> TensorHandle:
        """RESHAPE (v1) with the new shape both as a constant input and in the options."""
        size = math.prod(x.shape)
        dims = list(shape)
        if dims.count(-1) > 1:
            raise ValueError("reshape allows at most one -1")
        if -1 in dims:
            known = math.prod(d for d in dims if d != -1)
            dims[dims.index(-1)] = size // known
        if math.prod(dims) != size:
            raise ValueError(f"cannot reshape {x.shape} to {tuple(shape)}")
        shape_const = self.constant(np.array(dims, dtype=np.int32), name=f"{name}/shape")
        out = self._tensor(name, dims, x.dtype, x.quant)
        self._calib[out.index] = self._sample(x).reshape(_CALIB_SAMPLES, *dims)
        options = schema.ReshapeOptionsT(newShape=list(dims))
        self._operator("RESHAPE", [x.index, shape_const.index], [out.index], options, 1)
        return out

    def split(self, x: TensorHandle, num: int, axis: int = -1, name: str = "split") -> list[TensorHandle]:
        """SPLIT (v2): `num` equal parts along `axis`, each keeping the input's quantisation."""
        axis = axis + len(x.shape) if axis < 0 else axis
        if x.shape[axis] % num:
            raise ValueError(f"cannot split {x.shape[axis]} into {num} equal parts")
        axis_const = self.constant(np.array([axis], dtype=np.int32), name=f"{name}/axis")
        parts = np.split(self._sample(x), num, axis=axis + 1)
        outs = []
        for k, part in enumerate(parts):
            out = self._tensor(f"{name}/{k}", part.shape[1:], x.dtype, x.quant)
            self._calib[out.index] = part
            outs.append(out)
        self._operator(
            "SPLIT",
            [axis_const.index, x.index],
            [h.index for h in outs],
            schema.SplitOptionsT(numSplits=num),
            2,
        )
        return outs

    def unpack(self, x: TensorHandle, axis: int = 0, name: str = "unpack") -> list[TensorHandle]:
        """UNPACK (v2): one output per index along `axis`, that axis dropped."""
        axis = axis + len(x.shape) if axis < 0 else axis
        sample = self._sample(x)
        outs = []
        for k in range(x.shape[axis]):
            part = np.take(sample, k, axis=axis + 1)
            out = self._tensor(f"{name}/{k}", part.shape[1:], x.dtype, x.quant)
            self._calib[out.index] = part
            outs.append(out)
        options = schema.UnpackOptionsT(num=x.shape[axis], axis=axis)
        self._operator("UNPACK", [x.index], [h.index for h in outs], options, 2)
        return outs

    def strided_slice(
        self, x: TensorHandle, begin: Sequence[int], end: Sequence[int], name: str = "strided_slice"
    ) -> TensorHandle:
        """STRIDED_SLICE (v2) with stride 1 and no masks: x[begin:end] per axis."""
        consts = [
            self.constant(np.array(v, dtype=np.int32), name=f"{name}/{what}")
            for what, v in (("begin", begin), ("end", end), ("strides", [1] * len(begin)))
        ]
        index = (slice(None), *(slice(b, e) for b, e in zip(begin, end, strict=True)))
        part = self._sample(x)[index]
        out = self._tensor(name, part.shape[1:], x.dtype, x.quant)
        self._calib[out.index] = part
        self._operator(
            "STRIDED_SLICE",
            [x.index, *(c.index for c in consts)],
            [out.index],
            schema.StridedSliceOptionsT(),
            2,
        )
        return out

    def softmax(
        self,
        x: TensorHandle,
        beta: float = 1.0,
        output_quant: tuple[float, int] | None = None,
        name: str = "softmax",
    ) -> TensorHandle:
        """SOFTMAX (v2) over the last axis; int8 output is (1/256, -128) as TFLite requires.

        `output_quant` overrides that, producing a model TFLite's kernels reject (for tests).
        """
        self._check_int8(x)
        s = self._sample(x) * beta
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        out = self._activation_out(
            name, e / e.sum(axis=-1, keepdims=True), x.shape, output_quant or PROBABILITY_QUANT
        )
        self._operator("SOFTMAX", [x.index], [out.index], schema.SoftmaxOptionsT(beta=beta), 2)
        return out

    def logistic(
        self, x: TensorHandle, output_quant: tuple[float, int] | None = None, name: str = "logistic"
    ) -> TensorHandle:
        """LOGISTIC (v2); int8 output is (1/256, -128) as TFLite requires."""
        self._check_int8(x)
        real = 1.0 / (1.0 + np.exp(-self._sample(x)))
        out = self._activation_out(name, real, x.shape, output_quant or PROBABILITY_QUANT)
        self._operator("LOGISTIC", [x.index], [out.index], None, 2)
        return out

    def pad(self, x: TensorHandle, paddings: Sequence[tuple[int, int]], name: str = "pad") -> TensorHandle:
        """PAD (v2) with the zero point (real 0); output keeps the input quantisation."""
        self._check_int8(x)
        pads = np.array(paddings, dtype=np.int32).reshape(len(x.shape), 2)
        pads_const = self.constant(pads, name=f"{name}/paddings")
        real = np.pad(self._sample(x), [(0, 0), *[tuple(p) for p in pads.tolist()]])
        out = self._tensor(name, real.shape[1:], "int8", x.quant)
        self._calib[out.index] = real
        self._operator("PAD", [x.index, pads_const.index], [out.index], schema.PadOptionsT(), 2)
        return out

    def mean(
        self,
        x: TensorHandle,
        axes: Sequence[int] = (1, 2),
        keepdims: bool = True,
        output_quant: tuple[float, int] | None = None,
        name: str = "mean",
    ) -> TensorHandle:
        """MEAN (v2) over constant axes; output quantisation from the calibrated range."""
        self._check_int8(x)
        rank = len(x.shape)
        norm = sorted({a + rank if a < 0 else a for a in axes})
        axes_const = self.constant(np.array(norm, dtype=np.int32), name=f"{name}/axes")
        real = self._sample(x).mean(axis=tuple(a + 1 for a in norm), keepdims=keepdims)
        out = self._activation_out(name, real, real.shape[1:], output_quant)
        options = schema.ReducerOptionsT(keepDims=keepdims)
        self._operator("MEAN", [x.index, axes_const.index], [out.index], options, 2)
        return out

    def quantize(
        self,
        x: TensorHandle,
        scale: float,
        zero_point: int,
        dtype: str = "int8",
        name: str = "quantize",
    ) -> TensorHandle:
        """QUANTIZE (v1; v2 for int16 output): float -> int, or int8 -> int8 requantisation."""
        if dtype not in _INT_RANGES:
            raise ValueError(f"quantize output dtype must be integer, not {dtype!r}")
        out = self._tensor(name, x.shape, dtype, (scale, zero_point))
        self._calib[out.index] = self._sample(x)
        self._operator("QUANTIZE", [x.index], [out.index], None, 2 if dtype == "int16" else 1)
        return out

    def dequantize(self, x: TensorHandle, name: str = "dequantize") -> TensorHandle:
        """DEQUANTIZE (v2 for int8 input) to float32, e.g. for a float model interface."""
        out = self._tensor(name, x.shape, "float32")
        self._calib[out.index] = self._sample(x)
        version = {"int8": 2, "int16": 3}.get(x.dtype, 1)
        self._operator("DEQUANTIZE", [x.index], [out.index], None, version)
        return out

    # ------------------------------------------------------------------- output

    def _check_order(self, order: Sequence[int]) -> None:
        if sorted(order) != list(range(len(self._operators))):
            raise ValueError("op_order must be a permutation of all operator indices")
        available = set(self._inputs) | self._constant
        for i in order:
            op = self._operators[i]
            missing = [t for t in op.inputs if t >= 0 and t not in available]
            if missing:
                names = ", ".join(self._handles[t].name for t in missing)
                raise ValueError(f"op_order runs operator {i} before its inputs exist: {names}")
            available.update(op.outputs)

    def random_order(self, seed: int) -> list[int]:
        """A uniformly chosen ready operator at each step: a random valid execution order."""
        rng = np.random.default_rng(seed)
        available = set(self._inputs) | self._constant
        pending = list(range(len(self._operators)))
        order: list[int] = []
        while pending:
            ready = [i for i in pending if all(t < 0 or t in available for t in self._operators[i].inputs)]
            if not ready:
                raise ValueError("the graph has operators whose inputs are never produced")
            pick = ready[int(rng.integers(len(ready)))]
            order.append(pick)
            pending.remove(pick)
            available.update(self._operators[pick].outputs)
        return order

    def build(self, op_order: Sequence[int] | None = None) -> bytes:
        """Serialise the model; `op_order` stores the operators in that (valid) order instead."""
        if not self._outputs:
            raise ValueError("mark at least one output with ModelBuilder.output()")
        order = list(range(len(self._operators))) if op_order is None else list(op_order)
        self._check_order(order)
        tensors, buffers = self._uint8_form() if self._legacy_uint8 else (self._tensors, self._buffers)
        subgraph = schema.SubGraphT(
            tensors=tensors,
            inputs=list(self._inputs),
            outputs=list(self._outputs),
            operators=[self._operators[i] for i in order],
            name="main",
        )
        model = schema.ModelT(
            version=3,
            operatorCodes=self._opcodes,
            subgraphs=[subgraph],
            description=self._description,
            buffers=buffers,
        )
        builder = flatbuffers.Builder(1024)
        builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
        return bytes(builder.Output())

    def _uint8_form(self) -> tuple[list[schema.TensorT], list[schema.BufferT]]:
        """Copies of the tensors and buffers with every quantised int8 tensor as uint8: zero points
        + 128, bytes xor 0x80 (the same real values)."""
        tensors, buffers = copy.deepcopy(self._tensors), list(self._buffers)
        for t in tensors:
            q = t.quantization
            if t.type != schema.TensorType.INT8 or q is None or not q.scale:
                continue
            t.type = schema.TensorType.UINT8
            q.zeroPoint = [int(z) + 128 for z in q.zeroPoint]
            data = buffers[t.buffer].data
            if data is not None and len(data):
                buffers[t.buffer] = _AlignedBufferT(data=np.asarray(data, dtype=np.uint8) ^ np.uint8(0x80))
        return tensors, buffers

    def save(self, path: str | os.PathLike[str], op_order: Sequence[int] | None = None) -> Path:
        """Write the model atomically: a temporary file in the same directory, then os.replace."""
        return write_atomic(path, self.build(op_order))


# ---------------------------------------------------------------------- ready-made models

_BLOCKS = ("residual", "inception", "fanout3", "squeeze_excite", "downsample")


def _block(b: ModelBuilder, kind: str, t: TensorHandle, rng: np.random.Generator, tag: str) -> TensorHandle:
    c = t.shape[3]
    if kind == "residual":
        a = b.conv2d(t, c, (3, 3), activation="RELU", name=f"{tag}/conv_a")
        a = b.conv2d(a, c, (3, 3), name=f"{tag}/conv_b")
        return b.add(t, a, activation="RELU", name=f"{tag}/add")
    if kind == "inception":
        c1, c2, c3 = (int(rng.choice([4, 8])) for _ in range(3))
        b1 = b.conv2d(t, c1, (1, 1), activation="RELU", name=f"{tag}/b1_conv")
        b2 = b.depthwise_conv2d(t, (3, 3), activation="RELU", name=f"{tag}/b2_dw")
        b2 = b.conv2d(b2, c2, (1, 1), activation="RELU", name=f"{tag}/b2_conv")
        b3 = b.max_pool2d(t, (3, 3), (1, 1), "SAME", name=f"{tag}/b3_pool")
        b3 = b.conv2d(b3, c3, (1, 1), activation="RELU", name=f"{tag}/b3_conv")
        return b.concatenation([b1, b2, b3], axis=3, name=f"{tag}/concat")
    if kind == "fanout3":
        # `t` has three consumers: a conv, a depthwise conv and a pool.
        u = b.conv2d(t, c, (1, 1), name=f"{tag}/conv")
        v = b.depthwise_conv2d(t, (3, 3), name=f"{tag}/dw")
        w = b.average_pool2d(t, (3, 3), (1, 1), "SAME", name=f"{tag}/pool")
        s = b.add(u, v, name=f"{tag}/add_uv")
        return b.add(s, w, activation="RELU", name=f"{tag}/add_w")
    if kind == "squeeze_excite":
        m = b.mean(t, (1, 2), keepdims=True, name=f"{tag}/mean")
        g = b.conv2d(m, c, (1, 1), name=f"{tag}/gate_conv")
        g = b.logistic(g, name=f"{tag}/gate")
        return b.mul(t, g, name=f"{tag}/scale")
    if kind == "downsample":
        if t.shape[1] < 4 or t.shape[2] < 4:
            return b.conv2d(t, c, (1, 1), activation="RELU", name=f"{tag}/conv")
        p = b.pad(t, [(0, 0), (1, 1), (1, 1), (0, 0)], name=f"{tag}/pad")
        return b.conv2d(p, c + 4, (3, 3), (2, 2), "VALID", activation="RELU6", name=f"{tag}/conv_s2")
    raise ValueError(f"unknown block kind {kind!r}")


def _peaked_beta(logits: TensorHandle) -> float:
    """A softmax beta stretching the calibrated logit range to about 6 nats.

    Random weights give logits within a fraction of a nat of each other; beta = 1 would make every
    output a near-uniform 0.1, which shows little in a bit-exact comparison.
    """
    span = (logits.scale or 1.0) * 255.0 / _RANGE_MARGIN
    return max(1.0, round(6.0 / span, 2))


def random_branching_model(
    seed: int,
    n_blocks: int = 4,
    input_shape: tuple[int, int, int, int] = (1, 16, 16, 8),
    shuffle_order: bool = True,
    classes: int = 10,
) -> bytes:
    """A random CNN of branching blocks, for scheduler and end-to-end tests.

    The first three blocks are a residual block, an inception-style concatenation of three
    branches and a block whose input has three consumers (in random order); the next two are a
    squeeze-excite block (MEAN, LOGISTIC, broadcast MUL) and PAD + strided conv, and any further
    blocks are drawn at random from all five.
    With `shuffle_order` the operators are stored in a random valid order rather than
    creation order.
    """
    rng = np.random.default_rng(seed)
    b = ModelBuilder(seed=seed, description=f"tinysched random_branching_model seed={seed}")
    x = b.input("input", input_shape)
    t = b.conv2d(x, int(rng.choice([8, 12])), (3, 3), activation="RELU", name="stem")
    kinds = [*rng.permutation(_BLOCKS[:3]), *rng.permutation(_BLOCKS[3:])]
    kinds += [str(rng.choice(_BLOCKS)) for _ in range(max(n_blocks - len(kinds), 0))]
    for i, kind in enumerate(kinds[:n_blocks]):
        t = _block(b, str(kind), t, rng, f"block{i}_{kind}")
    pooled = b.mean(t, (1, 2), keepdims=False, name="head/mean")
    logits = b.fully_connected(pooled, classes, name="head/fc")
    b.output(b.softmax(logits, beta=_peaked_beta(logits), name="head/softmax"))
    return b.build(b.random_order(seed) if shuffle_order else None)


def _quant_union(*handles: TensorHandle) -> tuple[float, int]:
    """A quantisation covering the real ranges of all `handles`."""
    lo = min((-128 - h.zero_point) * (h.scale or 0.0) for h in handles)
    hi = max((127 - h.zero_point) * (h.scale or 0.0) for h in handles)
    return _quant_for_range(lo / _RANGE_MARGIN, hi / _RANGE_MARGIN)


def tiny_demo_model() -> bytes:
    """The README demo: a small residual CNN (13 operators, about 4 KiB of weights).

    The stem output has three consumers (a 1x1 skip conv and two branches). The operators are
    stored in a memory-unfriendly order on purpose: the skip conv and the cheap pooling branch run
    first, so their outputs sit in the arena while the wide expand/depthwise branch runs. Running
    that branch first instead lowers the stored order's 22 KiB activation peak to 18 KiB.
    """

    def build(merge_quant: tuple[float, int] | None) -> tuple[ModelBuilder, TensorHandle, TensorHandle]:
        b = ModelBuilder(seed=2024, description="tinysched demo: small residual CNN")
        x = b.input("image", (1, 16, 16, 4))
        stem = b.conv2d(x, 8, (3, 3), activation="RELU", name="stem")  # 2 KiB, three consumers
        skip = b.conv2d(stem, 16, (1, 1), name="skip")  # 4 KiB, alive until the residual add
        pooled = b.max_pool2d(stem, (3, 3), (1, 1), "SAME", name="b/pool")
        squeeze = b.conv2d(pooled, 8, (1, 1), activation="RELU", output_quant=merge_quant, name="b/conv")
        expand = b.conv2d(stem, 32, (1, 1), activation="RELU", name="a/expand")  # 8 KiB
        dw = b.depthwise_conv2d(expand, (3, 3), activation="RELU", name="a/depthwise")  # 8 KiB
        project = b.conv2d(dw, 8, (1, 1), output_quant=merge_quant, name="a/project")
        if merge_quant is not None:
            merged = b.concatenation([project, squeeze], axis=3, requantize=False, name="merge")
            res = b.add(merged, skip, activation="RELU", name="residual")
            head = b.average_pool2d(res, (4, 4), (4, 4), "VALID", name="head/pool")
            flat = b.reshape(head, (1, -1), name="head/flatten")
            logits = b.fully_connected(flat, 10, name="head/fc")
            b.output(b.softmax(logits, beta=_peaked_beta(logits), name="head/softmax"))
        return b, project, squeeze

    # Like the converter, give both concatenation inputs one quantisation so no requantising
    # QUANTIZE is needed: a first pass measures both ranges (weights do not depend on it).
    _, project, squeeze = build(None)
    b, _, _ = build(_quant_union(project, squeeze))
    return b.build()


def wired_model(
    stages: Sequence[Sequence[Sequence[int]]],
    hw: int = 32,
    channels: int = 16,
    seed: int = 0,
    order_seed: int | None = None,
) -> bytes:
    """A randomly wired int8 network (RandWire-like) from its wiring: `stages[s][v]` lists the
    nodes of stage `s` that node `v` reads (lower indices). A node without inputs reads the stage
    input through a 1x1 ReLU conv of stride 2 (H and W halved, channels doubled: half the bytes);
    any other node sums its inputs with a chain of ADDs and applies a 1x1 ReLU conv; the stage
    output sums the nodes nobody reads (ADD chain). A stem conv before, MEAN and FULLY_CONNECTED
    after. `order_seed`: operators stored in that random valid order instead of creation order."""
    b = ModelBuilder(seed=seed, description=f"tinysched wired_model {len(stages)} stages seed={seed}")
    t = b.conv2d(b.input("image", (1, hw, hw, 3)), channels, (3, 3), activation="RELU", name="stem")
    for s, preds in enumerate(stages):
        width = 2 * t.shape[3]
        read = {u for ps in preds for u in ps}
        out: list[TensorHandle] = []
        for v, ps in enumerate(preds):
            tag = f"s{s}/n{v}"
            if not ps:
                out.append(b.conv2d(t, width, (1, 1), (2, 2), activation="RELU", name=f"{tag}/conv"))
                continue
            acc = out[ps[0]]
            for u in ps[1:]:
                acc = b.add(acc, out[u], name=f"{tag}/add")
            out.append(b.conv2d(acc, width, (1, 1), activation="RELU", name=f"{tag}/conv"))
        sinks = [out[v] for v in range(len(preds)) if v not in read]
        t = sinks[0]
        for sink in sinks[1:]:
            t = b.add(t, sink, name=f"s{s}/out")
    pooled = b.mean(t, (1, 2), keepdims=False, name="head/mean")
    b.output(b.fully_connected(pooled, 10, name="head/fc"))
    return b.build(None if order_seed is None else b.random_order(order_seed))


def wide_model(copies: int, shape: tuple[int, int, int, int] = (1, 4, 4, 4)) -> bytes:
    """One operator copied `copies` times: `copies` ADDs of a stem conv's output to itself, side by
    side, summed by a chain of `copies - 1` ADDs (2 * copies operators in all, no weights but the
    stem's): a graph as wide as it is long, cheap to plan, with one step per operator."""
    b = ModelBuilder(seed=0, description=f"tinysched wide_model copies={copies}")
    t = b.conv2d(b.input("x", shape), shape[3], (1, 1), name="stem")
    acc: TensorHandle | None = None
    for i in range(copies):
        copy = b.add(t, t, activation="RELU", name=f"copy{i}")
        acc = copy if acc is None else b.add(acc, copy, name=f"sum{i}")
    assert acc is not None
    b.output(acc)
    return b.build()


def build_concat_slices(b: ModelBuilder) -> None:
    """Three producers of one quantisation (pools keep their input's) concatenated along H of a
    batch-1 NHWC tensor, which the refined memory model builds in place; the first producer's
    output is also read by a side convolution."""
    x = b.input("x", (1, 8, 8, 8))
    p = b.max_pool2d(x, (3, 3), (1, 1), "SAME", name="p")
    q = b.average_pool2d(x, (3, 3), (1, 1), "SAME", name="q")
    r = b.max_pool2d(x, (2, 1), (2, 1), name="r")
    side = b.conv2d(p, 4, (1, 1), name="side")
    cat = b.concatenation([p, q, r], axis=1, requantize=False, name="cat")
    b.output(b.conv2d(cat, 2, (1, 1), activation="RELU", name="head"), side)


def build_split_views(b: ModelBuilder) -> None:
    """A convolution's output split along H (SPLIT), another's rows unpacked (UNPACK) and a band of
    rows sliced (STRIDED_SLICE): every part one contiguous range of its input (refined-model views)."""
    x = b.input("x", (1, 8, 8, 2))
    t = b.conv2d(x, 8, (3, 3), activation="RELU", name="c0")
    top, bottom = b.split(t, 2, axis=1, name="halves")
    u = b.conv2d(top, 2, (1, 1), name="top")
    v = b.conv2d(b.depthwise_conv2d(bottom, (3, 3), name="bottom"), 2, (1, 1), name="bottom_pw")
    rows = b.unpack(b.reshape(b.conv2d(x, 4, (1, 1), name="c1"), (4, 64), name="rows"), axis=0)
    mid = b.strided_slice(t, (0, 2, 0, 0), (1, 6, 8, 8), name="mid")
    b.output(u, v, b.logistic(rows[1], name="sig"), b.conv2d(mid, 2, (1, 1), name="w"))


BUNDLED: dict[str, Any] = {"concat-slices": build_concat_slices, "split-views": build_split_views}


def main(argv: list[str] | None = None) -> int:
    """`python -m tinysched.model.modelgen demo PATH`: write the bundled example model (used by `make demo`);
    `concat-slices` / `split-views`: the refined memory model's alias examples (docs/BENCHMARKS.md)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tinysched.model.modelgen")
    parser.add_argument("model", choices=["demo", *BUNDLED], help="which bundled model to write")
    parser.add_argument("path", help="where to write the .tflite file")
    args = parser.parse_args(argv)
    if args.model == "demo":
        data = tiny_demo_model()
    else:
        builder = ModelBuilder(seed=0)
        BUNDLED[args.model](builder)
        data = builder.build()
    path = write_atomic(args.path, data)
    print(f"wrote {path} ({path.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
