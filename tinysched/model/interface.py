"""The generated API's inputs and outputs: the model's own, or int8 where the model's edges are float.

Many int8 models keep a float interface: a QUANTIZE (float32 -> int8) right after a graph input and
a DEQUANTIZE (int8 -> float32) right before a graph output. Firmware that already has quantised
sensor data would quantise it back to float only for the model to quantise it again, and the float
tensors (four bytes an element) are often the largest in the arena. `--io int8` removes those edge
operators before planning: the planned graph's input is the QUANTIZE's int8 output and its output
the DEQUANTIZE's int8 input, whose scale and zero point the generated header gives as constants.

Only an edge that is exactly such an operator qualifies: a float32 graph input read by one QUANTIZE
(per-tensor int8 output) and nothing else; a float32 graph output written by a DEQUANTIZE of a
per-tensor int8 tensor that an operator left in the graph computes, with no other reader. Every
other edge keeps its type; a model with none plans as usual.

The values are the model's exactly: the int8 input q stands for the float (q - zero_point) * scale,
which TFLite's QUANTIZE maps back to q (`reference_io` checks this on the reference's own QUANTIZE
output), and the int8 output is the tensor the DEQUANTIZE would have read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from tinysched.errors import TinyschedError
from tinysched.model.graph import Graph
from tinysched.model.uint8 import SHIFT, Uint8Retyping, int8_arithmetic


@dataclass(frozen=True)
class IoEdge:
    """One graph edge whose type `--io int8` changed, and what a user needs to feed or read it."""

    role: str  # "input" | "output"
    position: int  # among the graph's inputs (outputs)
    model_op: int  # the removed QUANTIZE / DEQUANTIZE, index in the model's operator order
    opcode: str
    model_tensor: int  # the model's float32 edge tensor (no longer in the arena)
    tensor: int  # the int8 tensor that is now the edge
    name: str  # of the int8 tensor
    shape: tuple[int, ...]
    scale: float
    zero_point: int
    removed_bytes: int  # the float tensor's bytes

    @property
    def is_uint8(self) -> bool:
        """A legacy uint8 model's edge given as int8 (no operator removed: the bytes xor 0x80)."""
        return self.opcode == UINT8_EDGE

    def line(self) -> str:
        """One line for `plan`: which edge changed and how to quantise for it."""
        if self.is_uint8:
            return (
                f"{self.role} {self.position}: the model's uint8 tensor {self.model_tensor} as "
                f"int8{list(self.shape)} scale {self.scale:.9g} zero point {self.zero_point} "
                f"(int8 q = uint8 q - {SHIFT})"
            )
        return (
            f"{self.role} {self.position}: model operator {self.model_op} ({self.opcode}) removed; "
            f"int8{list(self.shape)} scale {self.scale:.9g} zero point {self.zero_point} "
            f"(float tensor {self.model_tensor}, {self.removed_bytes:,} B, no longer in the arena)"
        )

    def header_note(self) -> str:
        """The comment the generated header puts above this edge's constants."""
        if self.is_uint8:
            return (
                f"--io int8: the model's uint8 {self.role} as int8, q = uint8 q - {SHIFT} (xor 0x80), "
                f"ZERO_POINT = the uint8 zero point - {SHIFT}"
            )
        if self.role == "input":  # TFLite's reference AffineQuantize; SCALE is a float literal
            how = "q = clamp(roundf(x / SCALE) + ZERO_POINT, -128, 127), x / SCALE in float32"
        else:
            how = "x = SCALE * (q - ZERO_POINT), in float32"
        return f"--io int8: model operator {self.model_op} ({self.opcode}) removed; {how}"

    def as_json(self) -> dict[str, Any]:
        return {**vars(self), "shape": list(self.shape)}

    @staticmethod
    def from_json(data: dict[str, Any]) -> IoEdge:
        try:
            return IoEdge(**{**data, "shape": tuple(int(d) for d in data["shape"])})
        except (KeyError, TypeError) as err:
            raise TinyschedError(f"an io edge record is incomplete or malformed: {err}") from None


@dataclass(frozen=True)
class Interface:
    """The graph with the chosen interface: what planning continues with."""

    mode: str  # a key of IO_MODES
    graph: Graph
    operator_map: tuple[int, ...]  # this graph's operator index -> the input graph's
    edges: tuple[IoEdge, ...]  # the changed edges, inputs first, by position
    # a legacy uint8 model computed as int8 (tinysched.model.uint8); None: the model has no uint8
    # arithmetic, or `retyping.refusal` says why it stays uint8 (the code generator refuses it)
    retyping: Uint8Retyping | None = None

    @property
    def removed_bytes(self) -> int:
        return sum(e.removed_bytes for e in self.edges)

    def summary(self) -> str:
        text = self._edges_summary()
        if self.retyping is not None and self.retyping.changed:
            text += f"; {self.retyping.summary()}"
        return text

    def _edges_summary(self) -> str:
        if self.mode == DEFAULT_IO:
            return "the model's own inputs and outputs"
        if not self.edges:
            return (
                f"--io {self.mode}: no edge qualifies (no float input read only by a QUANTIZE, no float "
                "output written by a DEQUANTIZE); the model's own inputs and outputs"
            )
        return (
            f"--io {self.mode}: {len(self.edges)} edge(s) changed, {self.removed_bytes:,} B of float "
            "tensors removed"
        )

    def as_json(self) -> dict[str, Any]:
        payload: dict[str, Any] = {"mode": self.mode, "edges": [e.as_json() for e in self.edges]}
        if self.retyping is not None and self.retyping.changed:
            payload["uint8"] = self.retyping.as_json()
        return payload


def model_interface(graph: Graph) -> Interface:
    """The model's own interface: nothing changes."""
    return Interface("model", graph, tuple(range(len(graph.operators))), ())


def _per_tensor_int8(graph: Graph, t: int) -> bool:
    tensor = graph.tensors[t]
    q = tensor.quantization
    return tensor.dtype == "int8" and q is not None and len(q.scale) == 1 and len(q.zero_point) == 1


def int8_interface(graph: Graph) -> Interface:
    """int8 in place of every float edge that is exactly a QUANTIZE / DEQUANTIZE (module docstring)."""
    ops, tensors = graph.operators, graph.tensors
    removed: dict[int, tuple[str, int, int, int]] = {}  # op -> (role, position, float tensor, int8 tensor)
    inputs, outputs = list(graph.inputs), list(graph.outputs)
    for position, t in enumerate(graph.inputs):
        readers = graph.consumers.get(t, ())
        if tensors[t].dtype != "float32" or graph.inputs.count(t) != 1 or t in graph.outputs:
            continue
        if len(readers) != 1 or ops[readers[0]].opcode != "QUANTIZE" or ops[readers[0]].inputs != (t,):
            continue
        (q,) = ops[readers[0]].outputs
        if not _per_tensor_int8(graph, q) or q in graph.outputs:
            continue
        removed[readers[0]] = ("input", position, t, q)
        inputs[position] = q
    for position, t in enumerate(graph.outputs):
        v = graph.producer.get(t)
        if tensors[t].dtype != "float32" or graph.outputs.count(t) != 1 or v is None:
            continue
        if ops[v].opcode != "DEQUANTIZE" or graph.consumers.get(t) or len(ops[v].input_tensors) != 1:
            continue
        (x,) = ops[v].input_tensors
        kept_producer = graph.producer.get(x) is not None and graph.producer[x] not in removed
        if not _per_tensor_int8(graph, x) or not kept_producer or x in outputs:
            continue
        removed[v] = ("output", position, t, x)
        outputs[position] = x
    if not removed:
        return Interface("int8", graph, tuple(range(len(ops))), ())
    kept = [op for op in ops if op.index not in removed]
    renumbered = [replace(op, index=k) for k, op in enumerate(kept)]
    stripped = graph.derived(graph.tensors, renumbered, inputs, outputs)
    edges = []
    for v, (role, position, model_tensor, t) in removed.items():
        q = tensors[t].quantization
        assert q is not None
        edges.append(
            IoEdge(
                role=role,
                position=position,
                model_op=v,
                opcode=ops[v].opcode,
                model_tensor=model_tensor,
                tensor=t,
                name=tensors[t].name,
                shape=tuple(tensors[t].shape),
                scale=float(q.scale[0]),
                zero_point=int(q.zero_point[0]),
                removed_bytes=int(tensors[model_tensor].nbytes),
            )
        )
    edges.sort(key=lambda e: (e.role != "input", e.position))
    return Interface("int8", stripped, tuple(op.index for op in kept), tuple(edges))


IO_MODES: dict[str, Callable[[Graph], Interface]] = {"model": model_interface, "int8": int8_interface}
DEFAULT_IO = "model"


UINT8_EDGE = "UINT8"  # IoEdge.opcode of a uint8 model's edge given as int8 (no operator removed)


def _uint8_edges(source: Graph, retyping: Uint8Retyping) -> list[IoEdge]:
    """The uint8 edges of `source` that `--io int8` gives as the int8 tensors themselves."""
    edges = []
    for role, positions, tensors in (
        ("input", retyping.uint8_inputs, source.inputs),
        ("output", retyping.uint8_outputs, source.outputs),
    ):
        for k in positions:
            t = tensors[k]
            q = retyping.graph.tensors[t].quantization
            assert q is not None
            edges.append(
                IoEdge(
                    role=role,
                    position=k,
                    model_op=-1,
                    opcode=UINT8_EDGE,
                    model_tensor=t,
                    tensor=t,
                    name=source.tensors[t].name,
                    shape=tuple(source.tensors[t].shape),
                    scale=float(q.scale[0]),
                    zero_point=int(q.zero_point[0]),
                    removed_bytes=0,
                )
            )
    return edges


def choose_interface(graph: Graph, mode: str, uint8_as_int8: bool = True) -> Interface:
    """The graph with the interface `mode` asks for; a legacy uint8 model computed as int8 first
    (tinysched.model.uint8), its edges uint8 through QUANTIZEs (`--io model`) or int8 (`--io int8`),
    unless `uint8_as_int8` is False (`plan --tflm` reorders the file's own operators)."""
    if mode not in IO_MODES:
        raise TinyschedError(f"--io must be one of {', '.join(IO_MODES)}, got {mode!r}")
    if not uint8_as_int8:
        return IO_MODES[mode](graph)
    retyping = int8_arithmetic(graph, uint8_edges=mode == DEFAULT_IO)
    if not retyping.changed:
        chosen = IO_MODES[mode](graph)
        return replace(chosen, retyping=retyping) if retyping.refusal is not None else chosen
    chosen = IO_MODES[mode](retyping.graph)
    edges = sorted(
        (*_uint8_edges(graph, retyping), *chosen.edges) if mode != DEFAULT_IO else chosen.edges,
        key=lambda e: (e.role != "input", e.position),
    )
    model_ops = tuple(retyping.operator_map[v] for v in chosen.operator_map)
    return replace(chosen, operator_map=model_ops, edges=tuple(edges), retyping=retyping)


# ---- running the reference on the model's own interface ---------------------------------------------


def model_inputs(edges: Sequence[IoEdge], input_set: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The model's float inputs for one input set of the planned interface: (q - zero_point) * scale
    in float32, which TFLite's QUANTIZE rounds back to q (the error of one product and one quotient
    is far below the half step that could change the rounding; `reference_io` checks it anyway)."""
    arrays = [np.asarray(a) for a in input_set]
    for e in edges:
        if e.role == "input" and e.is_uint8:
            arrays[e.position] = (arrays[e.position].astype(np.int16) + SHIFT).astype(np.uint8)
        elif e.role == "input":
            q = arrays[e.position].astype(np.int32)
            arrays[e.position] = (q - np.int32(e.zero_point)).astype(np.float32) * np.float32(e.scale)
    return arrays
