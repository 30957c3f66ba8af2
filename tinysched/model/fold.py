"""Compile-time folding: operators whose result is known before the model runs become constants.

A converter often leaves small subgraphs that compute shapes, not data: SHAPE -> STRIDED_SLICE ->
PACK feeding a RESHAPE's shape input, or any operator whose inputs are all constant (a TRANSPOSE of
weights, a RESHAPE of a constant vector). Every tensor shape in the models tinysched accepts is
static, so these results are the same on every invocation. `fold_constants` evaluates them once, in
numpy, and replaces their outputs by constant tensors: they then cost neither code nor arena, and the
scheduler, the placement and the certificate see only the operators that really run.

Only operators whose numpy evaluation is exact are folded: pure data movement (any element type;
the bytes are copied, never requantised) and integer arithmetic on unquantised int32/int64 tensors
(shape arithmetic). Anything else with constant inputs stays in the graph and gets a kernel like any
other operator. An operator writing a graph output is never folded (the generated code must write it).

`alias_saving` is a separate figure: RESHAPE, SQUEEZE and EXPAND_DIMS only reinterpret bytes, so a
runtime that let their output share its input's memory would not need the copy's second buffer. It
reports how much lower the peak of the same order would be under that aliasing, without changing the
tensor model the plan is certified in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from tinysched.model.graph import Graph, Operator, Tensor

__all__ = [
    "FOLDABLE_OPS",
    "NotFoldable",
    "FoldResult",
    "evaluate_operator",
    "fold_constants",
    "no_folding",
]


class NotFoldable(Exception):
    """This operator (with these operands or options) is left to run at inference time."""


@dataclass(frozen=True)
class FoldResult:
    graph: Graph  # the folded graph (the input graph itself when nothing folded)
    folded: tuple[int, ...]  # operator indices of the input graph that were evaluated
    operator_map: tuple[int, ...]  # folded graph's operator index -> input graph's operator index
    folded_types: dict[str, int]  # opcode -> how many folded

    @property
    def count(self) -> int:
        return len(self.folded)

    def summary(self) -> str:
        if not self.folded:
            return "no operators folded"
        kinds = ", ".join(f"{k} x{v}" for k, v in self.folded_types.items())
        return f"{self.count} operator(s) folded at compile time ({kinds})"


def no_folding(graph: Graph) -> FoldResult:
    """The identity folding: every operator runs (`plan --tflm` reorders the file's own operators)."""
    return FoldResult(graph, (), tuple(range(len(graph.operators))), {})


# ---- numpy evaluation of one operator ---------------------------------------------------------


def _int_operands(values: Sequence[np.ndarray], tensors: Sequence[Tensor], op: Operator) -> None:
    """Arithmetic folds only on unquantised integer tensors (shape arithmetic), never on real data."""
    for t in (*op.input_tensors, *op.outputs):
        tensor = tensors[t]
        if tensor.dtype not in ("int32", "int64") or tensor.quantization is not None:
            raise NotFoldable
    if op.options.get("fused_activation_function", "NONE") not in ("NONE", None):
        raise NotFoldable


def _same_quant(tensors: Sequence[Tensor], op: Operator) -> None:
    qs = {tensors[t].quantization for t in (*op.input_tensors[:1], *op.outputs)}
    if len(qs) > 1:
        raise NotFoldable


def strided_slice_index(
    shape: Sequence[int], begin: Sequence[int], end: Sequence[int], strides: Sequence[int], options: dict
) -> tuple[list[slice], list[int]]:
    """TFLite's STRIDED_SLICE as Python slices per input axis, plus the axes it shrinks away.

    begin_mask/end_mask take the whole range in the stride's direction; shrink_axis_mask takes
    element `begin` (negative counts from the end) and drops the axis. Python's slice clamping is the
    reference's StartForAxis/StopForAxis clamping. Ellipsis, new axes and `offset` are not handled."""
    if options.get("ellipsis_mask", 0) or options.get("new_axis_mask", 0) or options.get("offset", False):
        raise NotFoldable
    rank = len(shape)
    if not len(begin) == len(end) == len(strides) <= rank:
        raise NotFoldable
    slices, shrink = [], []
    for axis in range(rank):
        if axis >= len(begin):
            slices.append(slice(None))
            continue
        b, e, s = int(begin[axis]), int(end[axis]), int(strides[axis])
        if s == 0:
            raise NotFoldable
        if options.get("shrink_axis_mask", 0) >> axis & 1:
            b = b + shape[axis] if b < 0 else b
            if not 0 <= b < shape[axis]:
                raise NotFoldable
            slices.append(slice(b, b + 1, 1))
            shrink.append(axis)
            continue
        start = None if options.get("begin_mask", 0) >> axis & 1 else b
        stop = None if options.get("end_mask", 0) >> axis & 1 else e
        slices.append(slice(start, stop, s))
    return slices, shrink


def _eval_strided_slice(
    x: np.ndarray, begin: np.ndarray, end: np.ndarray, strides: np.ndarray, options: dict
):
    slices, shrink = strided_slice_index(x.shape, begin.tolist(), end.tolist(), strides.tolist(), options)
    out = x[tuple(slices)]
    return out.reshape([d for a, d in enumerate(out.shape) if a not in shrink])


def _axis(options: dict, rank: int, key: str = "axis") -> int:
    axis = int(options.get(key, 0))
    return axis + rank if axis < 0 else axis


# An evaluator reads the operands' tensor records (shapes, types, quantisation) from the table it is
# given, which is the graph's or, while shapes.py infers them, the table with the shapes so far.
_Evaluator = Callable[[Sequence[Tensor], Operator, list[np.ndarray]], list[np.ndarray]]


def _shape(ts: Sequence[Tensor], op: Operator, v: list[np.ndarray]) -> list[np.ndarray]:
    return [np.array(ts[op.inputs[0]].shape, dtype=ts[op.outputs[0]].dtype)]


def _reshape_like(ts: Sequence[Tensor], op: Operator, v: list[np.ndarray]) -> list[np.ndarray]:
    _same_quant(ts, op)
    return [v[0].reshape(ts[op.outputs[0]].shape)]


def _strided_slice(ts: Sequence[Tensor], op: Operator, v: list[np.ndarray]) -> list[np.ndarray]:
    _same_quant(ts, op)
    return [_eval_strided_slice(v[0], v[1].reshape(-1), v[2].reshape(-1), v[3].reshape(-1), op.options)]


def _slice(ts: Sequence[Tensor], op: Operator, v: list[np.ndarray]) -> list[np.ndarray]:
    _same_quant(ts, op)
    begin, size = v[1].reshape(-1).tolist(), v[2].reshape(-1).tolist()
    idx = tuple(slice(b, None if s < 0 else b + s) for b, s in zip(begin, size, strict=True))
    return [v[0][idx]]


def _pack(ts: Sequence[Tensor], op: Operator, v: list[np.ndarray]) -> list[np.ndarray]:
    if len({ts[t].quantization for t in (*op.inputs, *op.outputs)}) > 1:
        raise NotFoldable
    return [np.stack(v, axis=_axis(op.options, v[0].ndim + 1))]


def _unpack(ts: Sequence[Tensor], op: Operator, v: list[np.ndarray]) -> list[np.ndarray]:
    _same_quant(ts, op)
    axis = _axis(op.options, v[0].ndim)
    return [np.take(v[0], i, axis=axis) for i in range(v[0].shape[axis])]


def _concatenation(ts: Sequence[Tensor], op: Operator, v: list[np.ndarray]) -> list[np.ndarray]:
    if len({ts[t].quantization for t in (*op.inputs, *op.outputs)}) > 1:
        raise NotFoldable
    if op.options.get("fused_activation_function", "NONE") not in ("NONE", None):
        raise NotFoldable
    return [np.concatenate(v, axis=_axis(op.options, v[0].ndim))]


def _transpose(ts: Sequence[Tensor], op: Operator, v: list[np.ndarray]) -> list[np.ndarray]:
    _same_quant(ts, op)
    return [np.transpose(v[0], [int(p) % v[0].ndim for p in v[1].reshape(-1)])]


def _gather(ts: Sequence[Tensor], op: Operator, v: list[np.ndarray]) -> list[np.ndarray]:
    _same_quant(ts, op)
    if int(op.options.get("batch_dims", 0)):
        raise NotFoldable
    axis = _axis(op.options, v[0].ndim)
    if np.any(v[1] < 0) or np.any(v[1] >= v[0].shape[axis]):
        raise NotFoldable
    return [np.take(v[0], v[1], axis=axis)]


def _tile(ts: Sequence[Tensor], op: Operator, v: list[np.ndarray]) -> list[np.ndarray]:
    _same_quant(ts, op)
    return [np.tile(v[0], v[1].reshape(-1).tolist())]


def _fill(ts: Sequence[Tensor], op: Operator, v: list[np.ndarray]) -> list[np.ndarray]:
    if ts[op.outputs[0]].quantization is not None:
        raise NotFoldable
    return [np.full(v[0].reshape(-1).tolist(), v[1].reshape(()))]


def _cast(ts: Sequence[Tensor], op: Operator, v: list[np.ndarray]) -> list[np.ndarray]:
    src, dst = ts[op.inputs[0]], ts[op.outputs[0]]
    if src.quantization is not None or dst.quantization is not None:
        raise NotFoldable
    if src.dtype not in ("int8", "int16", "int32", "int64", "uint8", "bool"):
        raise NotFoldable
    return [v[0].astype(dst.dtype)]


def _range(ts: Sequence[Tensor], op: Operator, v: list[np.ndarray]) -> list[np.ndarray]:
    _int_operands(v, ts, op)
    return [np.arange(int(v[0]), int(v[1]), int(v[2]))]


def _arith(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> _Evaluator:
    def run(ts: Sequence[Tensor], op: Operator, v: list[np.ndarray]) -> list[np.ndarray]:
        _int_operands(v, ts, op)
        a, b = (x.astype(np.int64) for x in v)
        return [fn(a, b)]

    return run


def _floor_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.any(b == 0):
        raise NotFoldable
    return np.floor_divide(a, b)


def _reduce(fn: Callable[..., np.ndarray]) -> _Evaluator:
    def run(ts: Sequence[Tensor], op: Operator, v: list[np.ndarray]) -> list[np.ndarray]:
        _int_operands(v, ts, op)
        axes = tuple(int(a) % max(v[0].ndim, 1) for a in v[1].reshape(-1))
        return [fn(v[0].astype(np.int64), axis=axes, keepdims=bool(op.options.get("keep_dims", False)))]

    return run


_EVALUATORS: dict[str, _Evaluator] = {
    "SHAPE": _shape,
    "RESHAPE": _reshape_like,
    "SQUEEZE": _reshape_like,
    "EXPAND_DIMS": _reshape_like,
    "STRIDED_SLICE": _strided_slice,
    "SLICE": _slice,
    "PACK": _pack,
    "UNPACK": _unpack,
    "CONCATENATION": _concatenation,
    "TRANSPOSE": _transpose,
    "GATHER": _gather,
    "TILE": _tile,
    "FILL": _fill,
    "CAST": _cast,
    "RANGE": _range,
    "ADD": _arith(np.add),
    "SUB": _arith(np.subtract),
    "MUL": _arith(np.multiply),
    "FLOOR_DIV": _arith(_floor_div),
    "MAXIMUM": _arith(np.maximum),
    "MINIMUM": _arith(np.minimum),
    "REDUCE_PROD": _reduce(np.prod),
    "SUM": _reduce(np.sum),
}
FOLDABLE_OPS: tuple[str, ...] = tuple(sorted(_EVALUATORS))


def evaluate_operator(
    tensors: Sequence[Tensor], op: Operator, known: dict[int, np.ndarray]
) -> list[np.ndarray] | None:
    """The op's outputs when they can be computed now, exactly, from the `known` tensor values (and
    the shapes in `tensors`); None when it must run on the device."""
    evaluator = _EVALUATORS.get(op.opcode)
    if evaluator is None or any(tensors[t].is_variable for t in op.input_tensors):
        return None
    if op.opcode == "SHAPE":
        values = []  # SHAPE reads only the (static) shape of its input, never its data
    else:
        if not all(t in known for t in op.input_tensors):
            return None
        values = [known[t] for t in op.inputs if t >= 0]
    try:
        with np.errstate(all="raise"):
            results = evaluator(tensors, op, values)
    except (NotFoldable, ValueError, IndexError, TypeError, FloatingPointError, OverflowError):
        return None
    if len(results) != len(op.outputs):
        return None
    out = []
    for t, value in zip(op.outputs, results, strict=True):
        tensor = tensors[t]
        value = np.asarray(value)
        if tuple(value.shape) != tuple(tensor.shape):
            return None
        if value.dtype.kind in "iu" and np.dtype(tensor.dtype).kind in "iu":
            info = np.iinfo(tensor.dtype)
            if value.size and (value.min() < info.min or value.max() > info.max):
                return None
        elif value.dtype != np.dtype(tensor.dtype):
            return None
        out.append(np.array(value, dtype=tensor.dtype, order="C"))  # (ascontiguousarray makes 0-d 1-d)
    return out


def fold_constants(graph: Graph) -> FoldResult:
    """Evaluate every operator whose result is known at compile time; return the smaller graph."""
    known: dict[int, np.ndarray] = {t.index: np.asarray(t.data) for t in graph.tensors if t.is_constant}
    outputs = set(graph.outputs)
    folded: list[int] = []
    values: dict[int, np.ndarray] = {}
    # Stored order is topological for every model the reader accepts; repeat until stable anyway.
    changed = True
    while changed:
        changed = False
        for op in graph.operators:
            if op.index in folded or any(t in outputs for t in op.outputs):
                continue
            result = evaluate_operator(graph.tensors, op, known)
            if result is None:
                continue
            for t, value in zip(op.outputs, result, strict=True):
                known[t] = value
                values[t] = value
            folded.append(op.index)
            changed = True
    if not folded:
        return no_folding(graph)
    next_buffer = max((t.buffer for t in graph.tensors), default=0) + 1
    tensors: list[Tensor] = []
    for t in graph.tensors:
        if t.index in values:
            data = values[t.index]
            data.setflags(write=False)
            t = replace(t, data=data, nbytes=int(data.nbytes), buffer=next_buffer)
            next_buffer += 1
        tensors.append(t)
    done = set(folded)
    kept = [op for op in graph.operators if op.index not in done]
    operators = tuple(replace(op, index=i) for i, op in enumerate(kept))
    new_graph = graph.derived(tuple(tensors), operators)
    types: dict[str, int] = {}
    for v in sorted(folded):
        types[graph.operators[v].opcode] = types.get(graph.operators[v].opcode, 0) + 1
    result = FoldResult(
        new_graph,
        tuple(sorted(folded)),
        tuple(op.index for op in kept),
        dict(sorted(types.items(), key=lambda kv: (-kv[1], kv[0]))),
    )
    return result
