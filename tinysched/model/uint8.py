"""Legacy uint8-quantised models computed as int8, exactly.

A uint8 tensor (scale s, zero point z) holding q stands for s * (q - z). The int8 tensor (s, z - 128)
holding q - 128 (the byte xor 0x80) stands for the same value, so every operator whose arithmetic is
on q - zero_point, and whose clamps follow the zero point, computes the same bytes (shifted) on the
int8 form; TFLite's reference kernels for uint8 and int8 are checked one by one (`EXACT`):

- CONV_2D / DEPTHWISE_CONV_2D / FULLY_CONNECTED: sum((x - zx) * (w - zw)) + bias, the one
  MultiplyByQuantizedMultiplier, + output zero point, clamped to the activation range, which
  TFLite derives from the zero point (and the type's limits, shifted by 128 alike). The uint8
  weights (per tensor, zero point zw) become w - 128 with zero point zw - 128, which is not 0: the
  code generator runs these operators with a filter offset (tinysched.codegen.lower_conv);
- ADD: (x - z) << 20, requantised per input and summed, requantised, + output zero point; MUL:
  (x - zx) * (y - zy) requantised, + output zero point (reference_ops::Mul for uint8 and
  reference_integer_ops::Mul for int8 compute that same formula);
- QUANTIZE (requantise: MultiplyByQuantizedMultiplier(q - zi) + zo; from float: round(x / s) + z,
  both clamped to the type) and DEQUANTIZE (s * (q - z));
- CONCATENATION whose inputs share the output's quantisation (a copy: TFLite's uint8 kernel
  requantises differing inputs in float, which is not exact after the shift, so those are refused);
- ARG_MAX / ARG_MIN: q - 128 orders as q does, ties too; MAX_POOL_2D likewise;
- RESHAPE / SQUEEZE / RESIZE_NEAREST_NEIGHBOR: the bytes, moved; PAD / PADV2: padded with the
  output zero point or the constant (a uint8 tensor, retyped too), for uint8 as for int8;
- SOFTMAX uint8 -> uint8: reference_ops::Softmax<InputT, OutputT> for both types, on differences
  from the row's maximum (unchanged by the shift), its output offset by the type's minimum (0 or
  -128: TFLite requires the output zero point 0 for uint8, -128 for int8, scale 1/256 both);
- AVERAGE_POOL_2D: uint8 rounds (sum + n / 2) / n on its non-negative sum (half up), int8 half away
  from zero: the operator is marked `UINT8_ROUNDING` and its kernel rounds half up on the int8 sum
  (the uint8 sum minus 128 n), which gives the uint8 result minus 128;
- RESIZE_BILINEAR: TFLite's uint8 kernel is the generic float one (reference_ops::ResizeBilinear<T>:
  float32 weights from floor/ceil source coordinates, the four products summed, + 0.5, truncated
  to uint8), not the 10-bit integer one int8 runs: marked `UINT8_ROUNDING`, its kernel computes that
  float sum on q + 128 (tinysched.model.resize.bilinear_float_map gives the coordinates).

Not here, so refused: MEAN (TFLite's uint8 kernel sums the raw bytes and subtracts a truncated
zero-point term: not shift-invariant), LOGISTIC / TANH (uint8 reads a float-populated table, int8
a fixed-point formula), and every operator not listed.

Any other operator reading or writing a uint8 tensor leaves the model as it is, and the code
generator refuses it with `uint8_refusal`'s one line. Biases (int32) are unchanged.

The model's uint8 edges stay uint8 for `--io model`: a QUANTIZE uint8 -> int8 after each uint8 input
and int8 -> uint8 before each uint8 output (the exact xor, TFLite's Requantize of equal scales) is
inserted; for `--io int8` the edges are the int8 tensors themselves (tinysched.model.interface).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from tinysched.model.graph import Graph, Operator, Quantization, Tensor

__all__ = [
    "UINT8_ROUNDING",
    "Uint8Retyping",
    "filter_offset",
    "int8_arithmetic",
    "own_kernel_only",
    "uint8_refusal",
]

UINT8_ROUNDING = "uint8_rounding"  # option of an operator that rounds as TFLite's uint8 kernel does
UINT8_EDGE = "uint8_edge"  # option of an inserted edge QUANTIZE: uint8 <-> int8, each byte xor 0x80
SHIFT = 128  # uint8 q stands for int8 q - 128

WEIGHTED = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")
EXACT = frozenset(
    {
        *WEIGHTED,
        "ADD",
        "QUANTIZE",
        "DEQUANTIZE",
        "CONCATENATION",
        "ARG_MAX",
        "ARG_MIN",
        "MAX_POOL_2D",
        "MUL",
        "RESHAPE",
        "SQUEEZE",
        "RESIZE_NEAREST_NEIGHBOR",
        "PAD",
        "PADV2",
        "SOFTMAX",
        "AVERAGE_POOL_2D",
        "RESIZE_BILINEAR",
    }
)
# operators whose uint8 arithmetic is known to differ from int8's on the shifted bytes, and why
INEXACT = {
    "MEAN": "TFLite's uint8 MEAN sums the raw bytes and subtracts a truncated zero-point term, not exact as int8",
    "LOGISTIC": "TFLite's uint8 LOGISTIC reads a float-populated table, int8 a fixed-point formula",
    "TANH": "TFLite's uint8 TANH reads a float-populated table, int8 a fixed-point formula",
}
ROUNDED = ("AVERAGE_POOL_2D", "RESIZE_BILINEAR")  # exact with their UINT8_ROUNDING kernel


@dataclass(frozen=True)
class Uint8Retyping:
    """The graph with every uint8 tensor as int8 (or the input graph, with `refusal` saying why not)."""

    graph: Graph
    operator_map: tuple[
        int, ...
    ]  # this graph's operator -> the input graph's (an edge QUANTIZE: its neighbour)
    retyped: tuple[int, ...]  # tensors now int8 (activations and constants)
    weights: tuple[int, ...]  # of them, the filters that now have a non-zero zero point
    inserted: tuple[int, ...]  # the edge QUANTIZE operators added (--io model)
    uint8_inputs: tuple[int, ...]  # positions among the graph's inputs that are uint8 in the model
    uint8_outputs: tuple[int, ...]
    refusal: str | None = None

    @property
    def changed(self) -> bool:
        return bool(self.retyped)

    def summary(self) -> str:
        return (
            f"legacy uint8 model computed as int8: {len(self.retyped)} uint8 tensors as int8 "
            f"(bytes xor 0x80, zero points - 128), {len(self.weights)} filters with a filter offset, "
            f"{len(self.inserted)} edge QUANTIZE(s) uint8 <-> int8 added"
        )

    def as_json(self) -> dict[str, object]:
        return {
            "retyped_tensors": len(self.retyped),
            "offset_filters": len(self.weights),
            "edge_quantizes": len(self.inserted),
            "uint8_inputs": list(self.uint8_inputs),
            "uint8_outputs": list(self.uint8_outputs),
        }


def filter_offset(graph: Graph, op: Operator) -> int:
    """TFLite's filter_offset (minus the filter's zero point) of a CONV_2D / DEPTHWISE_CONV_2D /
    FULLY_CONNECTED with per-tensor filter quantisation; 0 for any other operator."""
    if op.opcode not in WEIGHTED or len(op.inputs) < 2 or op.inputs[1] < 0:
        return 0
    q = graph.tensors[op.inputs[1]].quantization
    return -int(q.zero_point[0]) if q is not None and len(q.zero_point) == 1 else 0


def own_kernel_only(graph: Graph, op: Operator) -> bool:
    """Whether `op` runs only the plain kernel of a legacy uint8 model's arithmetic (a CONV_2D or
    DEPTHWISE_CONV_2D with a filter offset, an AVERAGE_POOL_2D rounding as uint8 does): no in-place
    variant, no widened or staged path, no global pool's row sums (a streamed stage runs the plain
    kernel on its rows, as the default kernels' `_checked` forms). On DSP cores the filter-offset
    kernels run an int8 table path (pixel, stem, blocks) on the generator's table of w + filter
    offset (tinysched.codegen.lower_conv); those paths write each output pixel after reading its
    window, the group of one pixel the plain kernel's order claims, so the planner needs nothing
    more."""
    if op.opcode in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        return filter_offset(graph, op) != 0
    return op.opcode == "AVERAGE_POOL_2D" and bool(op.options.get(UINT8_ROUNDING))


def _is_uint8(graph: Graph, t: int) -> bool:
    return t >= 0 and graph.tensors[t].dtype == "uint8"


def _gap(graph: Graph, op: Operator) -> str | None:
    """Why `op`, which reads or writes uint8, has no exact int8 form here (None: it has)."""
    if op.opcode not in EXACT:
        return INEXACT.get(op.opcode, "tinysched has not checked its uint8 arithmetic against int8")
    touched = [t for t in (*op.input_tensors, *op.outputs) if _is_uint8(graph, t)]
    for t in touched:
        q = graph.tensors[t].quantization
        if q is None or not q.zero_point:
            return f"uint8 tensor {t} has no quantisation"
        if q.per_channel and not (op.opcode in WEIGHTED and len(op.inputs) > 1 and t == op.inputs[1]):
            return f"uint8 tensor {t} is quantised per channel"
    if op.opcode in WEIGHTED:
        if len(op.inputs) < 2 or not _is_uint8(graph, op.inputs[1]):
            return "its filter is not uint8 (a hybrid or mixed-type operator)"
        if graph.tensors[op.inputs[1]].data is None:
            return "its filter is not a constant"
        if not (_is_uint8(graph, op.inputs[0]) and _is_uint8(graph, op.outputs[0])):
            return "its input and output are not both uint8"
    if op.opcode == "CONCATENATION":
        out = graph.tensors[op.outputs[0]].quantization
        if any(graph.tensors[t].quantization != out for t in op.input_tensors):
            return "TFLite's uint8 CONCATENATION requantises differing inputs in float, not exact as int8"
    if op.opcode in (*ROUNDED, "SOFTMAX") and not all(
        _is_uint8(graph, t) for t in (op.inputs[0], op.outputs[0])
    ):
        return "its input and output are not both uint8"
    return None


def _computes_on_uint8(graph: Graph, op: Operator) -> bool:
    """Whether `op` reads or writes uint8 other than as a conversion from or to another type (an
    int8 model's uint8 edge QUANTIZE, which the kernels run as it is)."""
    types = {graph.tensors[t].dtype for t in (*op.input_tensors, *op.outputs)}
    if "uint8" not in types:
        return False
    return not (op.opcode in ("QUANTIZE", "DEQUANTIZE") and types != {"uint8"})


def uint8_refusal(graph: Graph) -> str | None:
    """One line naming the first operator on uint8 that cannot be computed exactly as int8."""
    for op in graph.operators:
        if _computes_on_uint8(graph, op):
            why = _gap(graph, op)
            if why is not None:
                return (
                    f"operator {op.index} ({op.opcode}) computes on uint8 and cannot be computed exactly "
                    f"as int8: {why} (legacy uint8 models are otherwise computed as int8)"
                )
    return None


def _as_int8(tensor: Tensor) -> Tensor:
    q = tensor.quantization
    assert q is not None
    data = tensor.data
    if data is not None:
        data = (np.asarray(data).astype(np.int16) - SHIFT).astype(np.int8)
        data.setflags(write=False)
    quant = Quantization(q.scale, tuple(int(z) - SHIFT for z in q.zero_point), q.axis)
    return replace(tensor, dtype="int8", quantization=quant, data=data)


def _unchanged(graph: Graph, refusal: str | None = None) -> Uint8Retyping:
    return Uint8Retyping(graph, tuple(range(len(graph.operators))), (), (), (), (), (), refusal)


def int8_arithmetic(graph: Graph, uint8_edges: bool) -> Uint8Retyping:
    """`graph` with its uint8 tensors as int8 (module docstring); with `uint8_edges` the uint8 graph
    inputs and outputs stay uint8 through inserted QUANTIZEs, else they become int8 too."""
    if not any(_computes_on_uint8(graph, op) for op in graph.operators):
        return _unchanged(graph)  # no uint8, or only an int8 model's uint8 edge conversions
    touched = {t for op in graph.operators for t in (*op.input_tensors, *op.outputs) if _is_uint8(graph, t)}
    refusal = uint8_refusal(graph)
    if refusal is not None:
        return _unchanged(graph, refusal)
    tensors = list(graph.tensors)
    for t in touched:
        tensors[t] = _as_int8(tensors[t])
    weights = tuple(
        sorted(
            {
                op.inputs[1]
                for op in graph.operators
                if op.opcode in WEIGHTED
                and any(z != 0 for z in tensors[op.inputs[1]].quantization.zero_point)  # type: ignore[union-attr]
            }
        )
    )
    operators = [
        replace(op, options={**op.options, UINT8_ROUNDING: True})
        if op.opcode in ROUNDED and op.inputs[0] in touched
        else op
        for op in graph.operators
    ]
    inputs, outputs = list(graph.inputs), list(graph.outputs)
    in_pos = tuple(k for k, t in enumerate(graph.inputs) if t in touched)
    out_pos = tuple(k for k, t in enumerate(graph.outputs) if t in touched)
    heads: list[Operator] = []
    tails: list[Operator] = []
    head_map: list[int] = []
    tail_map: list[int] = []
    if uint8_edges:
        renamed: dict[int, int] = {}  # the model's edge tensor -> the int8 tensor operators use now
        for t in dict.fromkeys((*(graph.inputs[k] for k in in_pos), *(graph.outputs[k] for k in out_pos))):
            inner = len(tensors)
            tensors.append(replace(tensors[t], index=inner, name=f"{graph.tensors[t].name}/int8", buffer=0))
            tensors[t] = graph.tensors[t]  # the edge keeps the model's uint8 tensor
            renamed[t] = inner
        operators = [
            replace(
                op,
                inputs=tuple(renamed.get(t, t) for t in op.inputs),
                outputs=tuple(renamed.get(t, t) for t in op.outputs),
            )
            for op in operators
        ]
        for k in in_pos:
            t = graph.inputs[k]
            heads.append(Operator(0, "QUANTIZE", (t,), (renamed[t],), {UINT8_EDGE: True}, 1))
            head_map.append(min(graph.consumers.get(t, (0,))))
        for k in out_pos:
            t = graph.outputs[k]
            if t in graph.inputs:
                continue  # an input given back as it is: no arithmetic, no conversion
            tails.append(Operator(0, "QUANTIZE", (renamed[t],), (t,), {UINT8_EDGE: True}, 1))
            tail_map.append(graph.producer.get(t, len(graph.operators) - 1))
    ordered = [*heads, *operators, *tails]
    renumbered = tuple(replace(op, index=k) for k, op in enumerate(ordered))
    retyped_graph = graph.derived(tensors, renumbered, inputs, outputs)
    inserted = (*range(len(heads)), *range(len(heads) + len(operators), len(ordered)))
    return Uint8Retyping(
        retyped_graph,
        (*head_map, *range(len(operators)), *tail_map),
        tuple(sorted(touched)),
        weights,
        inserted,
        in_pos,
        out_pos,
    )
