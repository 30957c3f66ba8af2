"""Hand-made and hand-broken .tflite files for reader tests, through TFLite's generated object API.

Independent of tinysched's own model builder on purpose: these files are what the reader must refuse.
"""

from __future__ import annotations

from collections.abc import Callable

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as schema


def _tensor(name: str, shape: tuple[int, ...], buffer: int = 0) -> schema.TensorT:
    tensor = schema.TensorT()
    tensor.name = name
    tensor.shape = list(shape)
    tensor.type = schema.TensorType.INT8
    tensor.buffer = buffer
    quant = schema.QuantizationParametersT()
    quant.scale = [0.05]
    quant.zeroPoint = [0]
    tensor.quantization = quant
    return tensor


def _op(opcode_index: int, inputs: list[int], outputs: list[int]) -> schema.OperatorT:
    op = schema.OperatorT()
    op.opcodeIndex = opcode_index
    op.inputs = inputs
    op.outputs = outputs
    op.builtinOptionsType = schema.BuiltinOptions.AddOptions
    op.builtinOptions = schema.AddOptionsT()
    return op


def diamond_model() -> schema.ModelT:
    """x -> ADD(x,x)=a ; ADD(x,a)=b ; ADD(a,b)=y, plus a constant: three operators, a branch."""
    model = schema.ModelT()
    model.version = 3
    code = schema.OperatorCodeT()
    code.builtinCode = schema.BuiltinOperator.ADD
    code.deprecatedBuiltinCode = schema.BuiltinOperator.ADD
    code.version = 1
    model.operatorCodes = [code]
    empty = schema.BufferT()
    weights = schema.BufferT()
    weights.data = np.arange(16, dtype=np.int8).view(np.uint8)
    model.buffers = [empty, weights]
    sub = schema.SubGraphT()
    sub.tensors = [
        _tensor("x", (1, 16)),
        _tensor("a", (1, 16)),
        _tensor("b", (1, 16)),
        _tensor("y", (1, 16)),
        _tensor("w", (1, 16), buffer=1),
    ]
    sub.inputs = [0]
    sub.outputs = [3]
    sub.operators = [_op(0, [0, 0], [1]), _op(0, [0, 4], [2]), _op(0, [1, 2], [3])]
    model.subgraphs = [sub]
    model.description = "diamond"
    return model


def pack(model: schema.ModelT) -> bytes:
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def broken(edit: Callable[[schema.ModelT], None]) -> bytes:
    model = diamond_model()
    edit(model)
    return pack(model)


def unpack(data: bytes) -> schema.ModelT:
    """Any .tflite as the object API's mutable tree."""
    return schema.ModelT.InitFromPackedBuf(bytes(data), 0)


def edited(data: bytes, edit: Callable[[schema.ModelT], None]) -> bytes:
    """`data` with `edit` applied to its object tree, packed again."""
    model = unpack(data)
    edit(model)
    return pack(model)


def opcode_of(model: schema.ModelT, op: schema.OperatorT) -> str:
    code = model.operatorCodes[op.opcodeIndex]
    builtin = max(code.builtinCode, code.deprecatedBuiltinCode)
    return {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}[builtin]


def first_op(model: schema.ModelT, opcode: str) -> schema.OperatorT:
    """The first operator of subgraph 0 with this builtin name."""
    for op in model.subgraphs[0].operators:
        if opcode_of(model, op) == opcode:
            return op
    raise LookupError(opcode)
