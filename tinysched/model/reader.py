""".tflite flatbuffer -> `Graph`, through TFLite's own generated schema module.

A model file is untrusted input: every count and index is checked against the file before it is used,
so a corrupt or hostile file ends in one `TinyschedError` naming the problem and the place, never in a
traceback, a hang or a huge allocation.
"""

from __future__ import annotations

import hashlib
import math
import re
import stat
import struct
from pathlib import Path
from typing import Any

import numpy as np
from ai_edge_litert import schema_py_generated as schema

from tinysched.errors import TinyschedError
from tinysched.model.graph import Graph, Operator, Quantization, Tensor
from tinysched.model.shapes import infer_shapes
from tinysched.text import printable, printable_path

FILE_IDENTIFIER = b"TFL3"
MAX_RANK = 16
MAX_OPERATOR_ARITY = 4096
# Size limits, checked on exact (Python) integers so that no product can wrap. The kernels count
# elements and bytes in int32, so one tensor holds fewer than 2^31 of either; all tensors together
# (activations, weights and state of the one subgraph) stay within 8 GiB, far above anything a
# microcontroller runs and low enough that the host can allocate a model's inputs to verify it.
MAX_TENSOR_ELEMENTS = 2**31 - 1
MAX_TENSOR_BYTES = 2**31 - 1
MAX_TOTAL_BYTES = 8 * 2**30
# The options table each operator must carry when it carries one: TFLite reads another table as absent
# (its defaults), so an ADD with MulOptions would run without the activation the file seems to give.
_OPTIONS_OF: dict[str, str] = {
    "ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions", "CONV_2D": "Conv2DOptions",
    "DEPTHWISE_CONV_2D": "DepthwiseConv2DOptions", "FULLY_CONNECTED": "FullyConnectedOptions",
    "AVERAGE_POOL_2D": "Pool2DOptions", "MAX_POOL_2D": "Pool2DOptions",
    "CONCATENATION": "ConcatenationOptions", "RESHAPE": "ReshapeOptions", "SOFTMAX": "SoftmaxOptions",
    "MEAN": "ReducerOptions", "SUM": "ReducerOptions", "REDUCE_MAX": "ReducerOptions", "PAD": "PadOptions",
    "TRANSPOSE": "TransposeOptions", "SQUEEZE": "SqueezeOptions", "EXPAND_DIMS": "ExpandDimsOptions",
    "STRIDED_SLICE": "StridedSliceOptions", "SLICE": "SliceOptions", "PACK": "PackOptions",
    "UNPACK": "UnpackOptions", "SPLIT": "SplitOptions", "SPLIT_V": "SplitVOptions",
    "GATHER": "GatherOptions", "TILE": "TileOptions", "SPACE_TO_DEPTH": "SpaceToDepthOptions",
    "DEPTH_TO_SPACE": "DepthToSpaceOptions", "SPACE_TO_BATCH_ND": "SpaceToBatchNDOptions",
    "BATCH_TO_SPACE_ND": "BatchToSpaceNDOptions", "RESIZE_BILINEAR": "ResizeBilinearOptions",
    "RESIZE_NEAREST_NEIGHBOR": "ResizeNearestNeighborOptions", "LEAKY_RELU": "LeakyReluOptions",
    "ARG_MAX": "ArgMaxOptions", "ARG_MIN": "ArgMinOptions", "MAXIMUM": "MaximumMinimumOptions",
    "MINIMUM": "MaximumMinimumOptions", "SQUARED_DIFFERENCE": "SquaredDifferenceOptions",
    "L2_NORMALIZATION": "L2NormOptions", "TRANSPOSE_CONV": "TransposeConvOptions", "SVDF": "SVDFOptions",
    "UNIDIRECTIONAL_SEQUENCE_LSTM": "UnidirectionalSequenceLSTMOptions",
    "DEQUANTIZE": "DequantizeOptions", "QUANTIZE": "QuantizeOptions", "HARD_SWISH": "HardSwishOptions",
}  # fmt: skip
_OPTIONS_NAMES = {v: k for k, v in vars(schema.BuiltinOptions).items() if not k.startswith("_")}
# Zero points must fit the quantised type (others, e.g. int32 biases, fit int32).
_ZERO_POINT_RANGES = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-32768, 32767), "int4": (-8, 7)}
SUBGRAPH_CALLING_OPS = frozenset({"WHILE", "IF", "CALL_ONCE", "CALL"})

# TensorType -> (numpy dtype name, bits per element)
_DTYPES: dict[int, tuple[str, int]] = {
    schema.TensorType.FLOAT32: ("float32", 32),
    schema.TensorType.FLOAT16: ("float16", 16),
    schema.TensorType.INT32: ("int32", 32),
    schema.TensorType.UINT8: ("uint8", 8),
    schema.TensorType.INT64: ("int64", 64),
    schema.TensorType.BOOL: ("bool", 8),
    schema.TensorType.INT16: ("int16", 16),
    schema.TensorType.COMPLEX64: ("complex64", 64),
    schema.TensorType.INT8: ("int8", 8),
    schema.TensorType.FLOAT64: ("float64", 64),
    schema.TensorType.COMPLEX128: ("complex128", 128),
    schema.TensorType.UINT64: ("uint64", 64),
    schema.TensorType.UINT32: ("uint32", 32),
    schema.TensorType.UINT16: ("uint16", 16),
    schema.TensorType.INT4: ("int4", 4),
    schema.TensorType.BFLOAT16: ("bfloat16", 16),
}
_TYPE_NAMES = {v: k for k, v in vars(schema.TensorType).items() if not k.startswith("_")}
BUILTIN_NAMES: dict[int, str] = {
    v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")
}
_ACTIVATIONS = {v: k for k, v in vars(schema.ActivationFunctionType).items() if not k.startswith("_")}
_PADDINGS = {v: k for k, v in vars(schema.Padding).items() if not k.startswith("_")}


# The largest .tflite tinysched reads: flatbuffers address at most 2 GiB, and a model for a
# microcontroller is far smaller; the limit keeps a device node or a huge file from filling memory.
MAX_MODEL_FILE_BYTES = 2**31 - 1


def read_model(path: str | Path) -> Graph:
    """Read a `.tflite` file into a Graph of its subgraph 0 (a regular file of at most 2 GiB)."""
    return parse_model(read_model_bytes(path), source=str(path))


def read_model_bytes(path: str | Path) -> bytes:
    """A model file's bytes: a regular file of at most 2 GiB, else one line saying why not."""
    path = Path(path)
    shown = printable_path(path)
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise TinyschedError(f"{shown}: not a regular file; give a .tflite file")
        if info.st_size > MAX_MODEL_FILE_BYTES:
            raise TinyschedError(
                f"{shown}: {info.st_size:,} bytes, over the 2 GiB a TFLite flatbuffer can address"
            )
        return path.read_bytes()
    except OSError as err:
        raise TinyschedError(f"{shown}: cannot read: {err.strerror or err}") from None


def _flatbuffer_fault(err: BaseException, size: int, where: str) -> str:
    """A flatbuffer decoding error in the file's terms, never the decoder's internals."""
    text = str(err)
    need = re.search(r"requires a buffer of at least (\d+) bytes", text)
    if need:
        return f"truncated: needs at least {int(need.group(1)):,} bytes, file has {size:,} (at {where})"
    if isinstance(err, (IndexError, struct.error)):
        return f"truncated or corrupt: an offset at {where} points past the end of the file ({size:,} bytes)"
    if isinstance(err, UnicodeDecodeError):
        return f"corrupt: a string at {where} is not UTF-8"
    if isinstance(err, (MemoryError, OverflowError)):
        return f"corrupt: a vector at {where} claims more elements than the file can hold"
    if isinstance(err, RecursionError):
        return f"corrupt: tables at {where} refer to each other in a loop"
    return f"corrupt flatbuffer at {where} ({type(err).__name__})"


def parse_model(data: bytes, source: str = "<bytes>") -> Graph:
    """Parse flatbuffer bytes. Any structural fault becomes a TinyschedError naming `source`."""
    shown = printable(source, 120)
    if len(data) == 0:
        raise TinyschedError(f"{shown}: empty file, not a TFLite model")
    if len(data) < 8:
        raise TinyschedError(f"{shown}: truncated: {len(data)} bytes is too short for a TFLite model")
    if data[4:8] != FILE_IDENTIFIER:
        raise TinyschedError(
            f"{shown}: not a TFLite model: file identifier {bytes(data[4:8])!r}, expected b'TFL3'"
        )
    reader = _Reader(bytes(data), source)
    try:
        graph = reader.read()
    except TinyschedError:
        raise
    except (
        struct.error,
        IndexError,
        ValueError,
        TypeError,
        UnicodeDecodeError,
        OverflowError,
        AttributeError,
        MemoryError,
        RecursionError,
    ) as err:
        raise TinyschedError(f"{shown}: {_flatbuffer_fault(err, len(data), reader.where)}") from None
    # every operator's stated shapes against its inputs and options, placeholders inferred (shapes.py)
    inferred = infer_shapes(graph, reader.unknown_dims, batch_placeholders=True)
    total = sum(t.nbytes for t in inferred.tensors)
    if total > MAX_TOTAL_BYTES:
        raise TinyschedError(
            f"{shown}: tensors add up to {total:,} bytes once their shapes are inferred, over the limit "
            f"of {MAX_TOTAL_BYTES:,}"
        )
    return inferred


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _plain(value: Any) -> Any:
    """Options values as plain Python: numpy vectors become tuples, nested option tables dicts."""
    if isinstance(value, np.ndarray):
        return tuple(value.tolist())
    if isinstance(value, (list, tuple)):
        return tuple(_plain(v) for v in value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if hasattr(value, "__dict__"):
        return {_snake(k): _plain(v) for k, v in vars(value).items()}
    return value


def decode_options(options_object: Any) -> dict[str, Any]:
    """Generated `*OptionsT` object -> dict with snake_case keys and enum names where they help."""
    if options_object is None:
        return {}
    options = _plain(options_object)
    if "fused_activation_function" in options:
        code = options["fused_activation_function"]
        options["fused_activation_function"] = _ACTIVATIONS.get(code, code)
    if isinstance(options.get("output_type"), int) and options["output_type"] in _DTYPES:
        options["output_type"] = _DTYPES[options["output_type"]][0]
    if "padding" in options and isinstance(options["padding"], int):
        options["padding"] = _PADDINGS.get(options["padding"], options["padding"])
    return options


class _Reader:
    def __init__(self, data: bytes, source: str) -> None:
        self.data = data
        self.source = source
        self.where = "model header"
        self.string_budget = 16 * len(data) + 4096
        self.unknown_dims: dict[int, frozenset[int]] = {}  # tensor -> dimensions -1 in its shape_signature

    def fail(self, message: str) -> TinyschedError:
        return TinyschedError(f"{printable(self.source, 120)}: {message} (at {self.where})")

    def count(self, n: int, what: str, limit: int | None = None) -> int:
        """A vector length, refused when it cannot fit in the file (or exceeds `limit`)."""
        limit = len(self.data) // 4 if limit is None else limit
        if n < 0 or n > limit:
            raise self.fail(f"{what} count {n} is impossible for a {len(self.data)}-byte file")
        return n

    def string(self, raw: bytes | None) -> str:
        if raw is None:
            return ""
        self.string_budget -= len(raw)
        if self.string_budget < 0:
            raise self.fail("strings add up to more than the file could hold")
        return raw.decode("utf-8", "replace")

    def read(self) -> Graph:
        model = schema.Model.GetRootAs(self.data, 0)
        self.where = "model"
        n_subgraphs = self.count(model.SubgraphsLength(), "subgraph")
        if n_subgraphs == 0:
            raise self.fail("model has no subgraph")
        n_buffers = self.count(model.BuffersLength(), "buffer")
        opcodes = self.read_opcodes(model)
        description = self.string(model.Description())
        metadata = self.read_metadata(model, n_buffers)

        self.where = "subgraph 0"
        subgraph = model.Subgraphs(0)
        if subgraph is None:
            raise self.fail("subgraph 0 is missing")
        n_tensors = self.count(subgraph.TensorsLength(), "tensor")
        tensors = tuple(self.read_tensor(model, subgraph, i, n_buffers) for i in range(n_tensors))
        self.where = "subgraph 0 tensors"
        total = sum(t.nbytes for t in tensors)
        if total > MAX_TOTAL_BYTES:
            raise self.fail(f"tensors add up to {total:,} bytes, over the limit of {MAX_TOTAL_BYTES:,}")
        n_ops = self.count(subgraph.OperatorsLength(), "operator")
        operators = tuple(self.read_operator(subgraph, i, opcodes) for i in range(n_ops))
        self.where = "subgraph 0 inputs/outputs"
        inputs = self.int_vector(subgraph.InputsAsNumpy(), subgraph.InputsLength(), "graph input")
        outputs = self.int_vector(subgraph.OutputsAsNumpy(), subgraph.OutputsLength(), "graph output")
        name = self.string(subgraph.Name())
        self.where = "graph structure"
        return Graph(
            tensors=tensors,
            operators=operators,
            inputs=inputs,
            outputs=outputs,
            name=name,
            description=description,
            metadata=metadata,
            source=self.source,
            sha256=hashlib.sha256(self.data).hexdigest(),
        )

    def int_vector(self, array: Any, length: int, what: str, limit: int | None = None) -> tuple[int, ...]:
        self.count(length, what, limit)
        if length == 0 or isinstance(array, int):
            return ()
        return tuple(int(x) for x in array)

    def read_opcodes(self, model: schema.Model) -> list[tuple[str, int]]:
        """(name, version) for each operator code."""
        names: list[tuple[str, int]] = []
        for i in range(self.count(model.OperatorCodesLength(), "operator code")):
            self.where = f"operator code {i}"
            code = model.OperatorCodes(i)
            builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
            if builtin == schema.BuiltinOperator.CUSTOM:
                # The code is a model string that every message, table and report names the
                # operator by: escaped once, here (the file keeps its bytes).
                name = "CUSTOM:" + printable(self.string(code.CustomCode()), 80)
            elif builtin in BUILTIN_NAMES:
                name = BUILTIN_NAMES[builtin]
            else:
                raise self.fail(f"unknown builtin operator code {builtin}")
            names.append((name, int(code.Version())))
        return names

    def read_metadata(self, model: schema.Model, n_buffers: int) -> dict[str, bytes]:
        entries: dict[str, bytes] = {}
        for i in range(self.count(model.MetadataLength(), "metadata")):
            self.where = f"metadata entry {i}"
            entry = model.Metadata(i)
            name = self.string(entry.Name())
            buffer_index = entry.Buffer()
            if not 0 <= buffer_index < n_buffers:
                raise self.fail(
                    f'metadata "{printable(name, 60)}" names buffer {buffer_index}, model has {n_buffers}'
                )
            entries[name] = bytes(self.buffer_bytes(model, buffer_index))
        return entries

    def buffer_bytes(self, model: schema.Model, index: int) -> memoryview:
        buffer = model.Buffers(index)
        if buffer is None:
            return memoryview(b"")
        offset, size = buffer.Offset(), buffer.Size()
        if offset > 1:  # data stored after the flatbuffer (models over 2 GiB)
            if offset + size > len(self.data):
                raise self.fail(f"buffer {index} points past the end of the file")
            return memoryview(self.data)[offset : offset + size]
        length = self.count(buffer.DataLength(), f"buffer {index} byte", len(self.data))
        if length == 0:
            return memoryview(b"")
        array = buffer.DataAsNumpy()
        return memoryview(array.tobytes() if not array.flags.c_contiguous else array)

    def read_tensor(self, model: schema.Model, subgraph: Any, index: int, n_buffers: int) -> Tensor:
        self.where = f"subgraph 0 tensor {index}"
        tensor = subgraph.Tensors(index)
        if tensor is None:
            raise self.fail("tensor table missing")
        name = self.string(tensor.Name())
        self.where = f'subgraph 0 tensor {index} ("{printable(name, 60)}")'
        shape = self.int_vector(tensor.ShapeAsNumpy(), tensor.ShapeLength(), "shape dimension", MAX_RANK)
        if any(d < 0 for d in shape):
            raise self.fail(f"dynamic shape {list(shape)} is not supported; tinysched needs static shapes")
        signature = self.int_vector(
            tensor.ShapeSignatureAsNumpy(),
            tensor.ShapeSignatureLength(),
            "shape signature dimension",
            MAX_RANK,
        )
        if len(signature) == len(shape) and -1 in signature:
            self.unknown_dims[index] = frozenset(i for i, d in enumerate(signature) if d == -1)
        type_code = tensor.Type()
        if type_code not in _DTYPES:
            type_name = _TYPE_NAMES.get(type_code, f"type code {type_code}")
            raise self.fail(f"tensor type {type_name} is not supported")
        dtype, bits = _DTYPES[type_code]
        elements = math.prod(shape)  # exact: a product of int64 dims would wrap
        nbytes = (elements * bits + 7) // 8
        if elements > MAX_TENSOR_ELEMENTS or nbytes > MAX_TENSOR_BYTES:
            raise self.fail(
                f"shape {list(shape)} {dtype} is {elements:,} elements ({nbytes:,} bytes), over the "
                f"limit of {MAX_TENSOR_ELEMENTS:,} elements and {MAX_TENSOR_BYTES:,} bytes per tensor"
            )
        buffer_index = tensor.Buffer()
        if not 0 <= buffer_index < n_buffers:
            raise self.fail(f"buffer index {buffer_index} out of range (model has {n_buffers} buffers)")
        raw = self.buffer_bytes(model, buffer_index) if buffer_index else memoryview(b"")
        data = None
        if len(raw):
            if tensor.Sparsity() is not None:
                raise self.fail("sparse constant tensors are not supported")
            if len(raw) != nbytes:
                raise self.fail(
                    f"constant data is {len(raw)} bytes, shape {list(shape)} {dtype} needs {nbytes}"
                )
            data = self.constant_array(raw, dtype, shape)
        return Tensor(
            index=index,
            name=name,
            dtype=dtype,
            shape=shape,
            nbytes=nbytes,
            quantization=self.read_quantization(tensor.Quantization(), shape, dtype),
            data=data,
            is_variable=bool(tensor.IsVariable()),
            buffer=buffer_index if data is not None else 0,
        )

    @staticmethod
    def constant_array(raw: memoryview, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
        if dtype in ("int4", "bfloat16"):
            array = np.frombuffer(bytes(raw), dtype=np.uint8).copy()  # packed; kernels unpack
        else:
            array = np.frombuffer(bytes(raw), dtype=dtype).reshape(shape).copy()
        array.flags.writeable = False
        return array

    def read_quantization(self, quant: Any, shape: tuple[int, ...], dtype: str) -> Quantization | None:
        """Scales finite and positive, zero points within the type, one pair per channel on `axis`."""
        if quant is None:
            return None
        limit = max(shape, default=1) if shape else 1
        scale = self.int_or_float_vector(quant.ScaleAsNumpy(), quant.ScaleLength(), "scale", limit)
        zero_point = self.int_or_float_vector(
            quant.ZeroPointAsNumpy(), quant.ZeroPointLength(), "zero point", limit
        )
        if not scale:
            return None
        if zero_point and len(zero_point) != len(scale):
            raise self.fail(f"{len(scale)} scales but {len(zero_point)} zero points")
        axis = int(quant.QuantizedDimension())
        if len(scale) > 1 and not 0 <= axis < max(len(shape), 1):
            raise self.fail(f"per-channel quantisation axis {axis} outside rank {len(shape)}")
        if len(scale) > 1 and len(scale) != shape[axis]:
            raise self.fail(f"{len(scale)} quantisation scales for {shape[axis]} channels on axis {axis}")
        for s in scale:
            if not (isinstance(s, float | int) and math.isfinite(s) and s > 0):
                raise self.fail(f"quantisation scale {s!r} is not a finite positive number")
        low, high = _ZERO_POINT_RANGES.get(dtype, (-(2**31), 2**31 - 1))
        for z in zero_point:
            if not (isinstance(z, int) and low <= z <= high):
                raise self.fail(f"zero point {z!r} is outside [{low}, {high}] for a {dtype} tensor")
        return Quantization(
            scale=tuple(float(s) for s in scale),
            zero_point=tuple(int(z) for z in zero_point) or (0,) * len(scale),
            axis=axis,
        )

    def int_or_float_vector(self, array: Any, length: int, what: str, limit: int) -> tuple:
        self.count(length, what, max(limit, 1))
        if length == 0 or isinstance(array, int):
            return ()
        return tuple(array.tolist())

    def read_operator(self, subgraph: Any, index: int, opcodes: list[tuple[str, int]]) -> Operator:
        self.where = f"subgraph 0 operator {index}"
        op = subgraph.Operators(index)
        if op is None:
            raise self.fail("operator table missing")
        opcode_index = op.OpcodeIndex()
        if not 0 <= opcode_index < len(opcodes):
            raise self.fail(f"operator code index {opcode_index} out of range ({len(opcodes)} codes)")
        opcode, version = opcodes[opcode_index]
        self.where = f"subgraph 0 operator {index} ({opcode})"
        if opcode in SUBGRAPH_CALLING_OPS:
            raise self.fail(f"{opcode} calls other subgraphs; control flow is not supported yet")
        inputs = self.int_vector(op.InputsAsNumpy(), op.InputsLength(), "input", MAX_OPERATOR_ARITY)
        outputs = self.int_vector(op.OutputsAsNumpy(), op.OutputsLength(), "output", MAX_OPERATOR_ARITY)
        intermediates = self.int_vector(
            op.IntermediatesAsNumpy(), op.IntermediatesLength(), "intermediate", MAX_OPERATOR_ARITY
        )
        options_type = _OPTIONS_NAMES.get(op.BuiltinOptionsType(), f"options type {op.BuiltinOptionsType()}")
        if op.BuiltinOptionsType() and opcode in _OPTIONS_OF and options_type != _OPTIONS_OF[opcode]:
            raise self.fail(f"{opcode} carries {options_type}, expected {_OPTIONS_OF[opcode]}")
        options = decode_options(schema.BuiltinOptionsCreator(op.BuiltinOptionsType(), op.BuiltinOptions()))
        if not options and hasattr(op, "BuiltinOptions2Type") and op.BuiltinOptions2Type():
            options = decode_options(
                schema.BuiltinOptions2Creator(op.BuiltinOptions2Type(), op.BuiltinOptions2())
            )
        return Operator(index, opcode, inputs, outputs, options, version, intermediates)
