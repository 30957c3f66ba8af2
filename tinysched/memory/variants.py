"""Kernel variants: more than one C kernel behind one opcode, chosen per operator at plan time.

Today's kernels (`firmware/kernels/ts_<op>.c`) are each opcode's *default* variant. A variant adds
another function with its own documented read/write order (firmware/include/ts_kernels.h), its own
scratch bytes and so its own overlap D (`tinysched.memory.overlap.VARIANT_OVERLAP`). The choice is recorded
on the operator itself (two option keys, set by `with_variants`), so the placed graph alone says which
kernel runs: the refined memory model, `check.check_plan` and the code generator all read it from there
(`variant_of`) and never re-derive it. Which operators get one is `tinysched.memory.inplace.select_variants`.

Variants (name -> what it is):

- ``staged`` CONV_2D (pointwise): chunks of `chunk` pixels computed into scratch, then copied out
  (`ts_conv2d_s8_staged`); scratch chunk * out_c bytes.
- ``staged`` DEPTHWISE_CONV_2D: one pixel at a time into a ring of lag + 1 pixel slots, each copied
  out `lag` pixels later (`ts_depthwise_conv2d_s8_staged`); scratch (lag + 1) * out_c bytes.
- ``wide`` CONV_2D (any shape): output pixels in strips of `blocks` blocks of four, each strip's
  receptive fields widened to int16 into scratch first (`ts_conv2d_s8_wide`, DSP cores; the other
  builds run the default kernel); scratch blocks * 4 * roundup(K, 4) * 2 bytes for K = fh * fw * in_c.
  Chosen after placement where the scratch fits a gap of the arena (`tinysched.arena.scratch`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from tinysched.memory.expand import EXPAND_OPCODE
from tinysched.memory.stream import STREAM_OPCODE
from tinysched.model.graph import Graph, Operator, Tensor

__all__ = [
    "VARIANT_KERNELS",
    "VARIANT_OPTION",
    "VARIANT_PARAM_OPTION",
    "KernelVariant",
    "variant_of",
    "with_variants",
]

RQ_TABLE_BYTES_PER_CHANNEL = 16  # ts_rq fields m, left + 1, base, rr (codegen/lower_conv.py, rq_fields)
VARIANT_OPTION = "tinysched_kernel_variant"  # operator option: the variant's name
VARIANT_PARAM_OPTION = "tinysched_kernel_variant_param"  # operator option: its one geometry number

# (opcode, variant) -> (C function, what its one parameter means, scratch bytes per parameter unit
# as a function of the output channels: param * out_c for chunk, (param + 1) * out_c for lag)
VARIANT_KERNELS: dict[tuple[str, str], tuple[str, str]] = {
    ("CONV_2D", "staged"): ("ts_conv2d_s8_staged", "chunk"),
    ("DEPTHWISE_CONV_2D", "staged"): ("ts_depthwise_conv2d_s8_staged", "lag"),
    ("CONV_2D", "wide"): ("ts_conv2d_s8_wide", "blocks"),
}


@dataclass(frozen=True)
class KernelVariant:
    """The variant one operator runs: which kernel, its geometry number and its scratch bytes."""

    opcode: str
    name: str
    param: int  # chunk (pixels per chunk), lag (pixels between computing and copying out) or blocks
    scratch_bytes: int
    out_channels: int = field(
        default=0, compare=False
    )  # the output's channels: the code generator's ts_rq table has one row each

    @property
    def table_bytes(self) -> int:
        """Flash the variant adds: the compile-time ts_rq table (four int32 per output channel)."""
        return RQ_TABLE_BYTES_PER_CHANNEL * self.out_channels

    @property
    def kernel(self) -> str:
        return VARIANT_KERNELS[(self.opcode, self.name)][0]

    @property
    def param_name(self) -> str:
        return VARIANT_KERNELS[(self.opcode, self.name)][1]


def scratch_bytes(graph: Graph, op: Operator, name: str, param: int) -> int:
    """Scratch bytes variant `name` with `param` needs on `op` (its output's channels per pixel)."""
    y = graph.tensors[op.outputs[0]]
    channels = int(y.shape[-1]) if y.shape else 1
    kind = VARIANT_KERNELS[(op.opcode, name)][1]
    if kind == "blocks":  # six pixels' int16 receptive fields per block (TS_WIDE_PX)
        w = graph.tensors[op.inputs[1]]
        k = int(w.shape[1]) * int(w.shape[2]) * int(w.shape[3])
        return param * 6 * ((k + 3) // 4 * 4) * 2
    return (param if kind == "chunk" else param + 1) * channels


def variant_of(graph: Graph, op: Operator) -> KernelVariant | None:
    """The variant recorded on `op` (None: the default kernel)."""
    name = op.options.get(VARIANT_OPTION)
    if name is None:
        return None
    param = int(op.options[VARIANT_PARAM_OPTION])
    y = graph.tensors[op.outputs[0]]
    channels = int(y.shape[-1]) if y.shape else 1
    return KernelVariant(op.opcode, str(name), param, scratch_bytes(graph, op, str(name), param), channels)


def with_variants(graph: Graph, chosen: Mapping[int, KernelVariant]) -> Graph:
    """`graph` with each chosen operator's variant recorded in its options (no other change)."""
    if not chosen:
        return graph
    operators = list(graph.operators)
    for v, variant in chosen.items():
        op = operators[v]
        if (op.opcode, variant.name) not in VARIANT_KERNELS or variant.opcode != op.opcode:
            raise ValueError(f"operator {v} ({op.opcode}) has no variant {variant.name!r}")
        options = {**op.options, VARIANT_OPTION: variant.name, VARIANT_PARAM_OPTION: variant.param}
        operators[v] = replace(op, options=options)
    return graph.derived(graph.tensors, tuple(operators))


def with_scratch(graph: Graph, scratch: dict[int, int], what: str = "scratch") -> Graph:
    """`graph` plus one unread int8 output tensor of `scratch[op]` bytes on each listed operator
    (named `<owner>_<op>/<what>`)."""
    if not scratch:
        return graph
    tensors = list(graph.tensors)
    operators = list(graph.operators)
    for op_index, nbytes in sorted(scratch.items()):
        if nbytes <= 0:
            continue
        op = operators[op_index]
        # a chain's windows; an expansion by groups' rows (tinysched.memory.expand)
        owner = {STREAM_OPCODE: "streamed", EXPAND_OPCODE: "groups"}.get(op.opcode, op.opcode.lower())
        t = Tensor(len(tensors), f"{owner}_{op_index}/{what}", "int8", (int(nbytes),), int(nbytes))
        tensors.append(t)
        operators[op_index] = replace(op, outputs=(*op.outputs, t.index))
    return graph.derived(tuple(tensors), tuple(operators))
