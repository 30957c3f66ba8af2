"""A 1x1 expansion computed into its depthwise channel group by channel group, never whole.

An inverted residual block widens its input by a 1x1 CONV_2D (16 -> 48 channels, say) that only a
DEPTHWISE_CONV_2D reads. Streamed row by row, the depthwise still needs `span` rows of the wide
tensor at once (a 7x7 over 20x20x48: 6,720 B), the largest window of many stages. Per channel, though,
the depthwise reads only that channel of the expansion, and the expansion's channel c needs only
filter row c of the 1x1. So the pair can run one group of `group` channels at a time: the 1x1's
rows for those channels into a small scratch, the depthwise over them, its output's channels of the
group written. The scratch holds `span` rows of `group` channels (`scratch_bytes`); the wide tensor
is never whole, in any stage or outside one.

`fuse_expansions` replaces each chosen pair by one operator `EXPAND_OPCODE` (a rewrite of kind
"expand"), a windowed operator with the depthwise's geometry over the 1x1's input (a 1x1 at stride
1 keeps it), so the streamed stages (tinysched.memory.stream) take it like any depthwise. Its kernel
(firmware ts_expand_dw_s8) runs two ways, the same bytes:
- alone, over the whole input: group by group, each expanded row computed once into a ring of
  `span` rows (no added MACs);
- as a stage member, called per output row: for each row, group by group, every row the window
  reads computed for it, so rows shared by consecutive output rows are computed again
  (`rows_computed`, `macs_added`: limited by --mac-budget with the stages' other added work).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tinysched.model.graph import Graph, Operator
from tinysched.model.rewrite import Match, RewriteResult, apply_matches, no_rewrites, window_pads
from tinysched.model.uint8 import own_kernel_only

__all__ = [
    "EXPAND_OPCODE",
    "EXPAND_OPTION",
    "DEFAULT_GROUP",
    "ExpandDepthwise",
    "expansion_pairs",
    "expansion_of",
    "fuse_expansions",
    "macs_added",
    "opcode_text",
    "rows_again_macs",
    "rows_computed",
    "scratch_bytes",
]

EXPAND_OPCODE = "TS_EXPAND_DW"
EXPAND_OPTION = "expand_dw"
# channels per group: four keeps the depthwise's four-channel blocks whole, and a 7x7 over 20-pixel
# rows then needs 600 B of scratch where its window of 48 channels took 6,720 B
DEFAULT_GROUP = 4


@dataclass(frozen=True)
class ExpandDepthwise:
    """A 1x1 CONV_2D `expand` whose output only the DEPTHWISE_CONV_2D `depthwise` reads, run
    together `group` channels of the expansion at a time."""

    expand: Operator
    depthwise: Operator
    group: int = DEFAULT_GROUP

    @property
    def expanded(self) -> int:
        """The tensor between them, which is never whole."""
        return self.expand.outputs[0]


def _constant(graph: Graph, op: Operator, position: int, rank: int) -> bool:
    if len(op.inputs) <= position or op.inputs[position] < 0:
        return False
    tensor = graph.tensors[op.inputs[position]]
    return tensor.is_constant and len(tensor.shape) == rank


def _pointwise_expansion(graph: Graph, op: Operator) -> bool:
    """A 1x1 CONV_2D at stride 1 over an int8 image, its filter and bias constants."""
    if op.opcode != "CONV_2D" or len(op.outputs) != 1 or not _constant(graph, op, 1, 4):
        return False
    if len(op.inputs) > 2 and op.inputs[2] >= 0 and not _constant(graph, op, 2, 1):
        return False
    x, y = graph.tensors[op.inputs[0]].int8_image, graph.tensors[op.outputs[0]].int8_image
    strides = (int(op.options.get("stride_h", 1)), int(op.options.get("stride_w", 1)))
    shape = graph.tensors[op.inputs[1]].shape
    return (
        x is not None
        and y is not None
        and x[:2] == y[:2]
        and strides == (1, 1)
        and tuple(int(d) for d in shape[1:3]) == (1, 1)
        and op.options.get("padding") in ("SAME", "VALID")
        and not own_kernel_only(graph, op)
    )


def _single_depthwise(graph: Graph, t: int) -> Operator | None:
    """The DEPTHWISE_CONV_2D (depth multiplier 1) that alone reads t, as its data input."""
    readers = graph.consumers.get(t, ())
    if len(readers) != 1 or t in graph.outputs:
        return None
    dw = graph.operators[readers[0]]
    if dw.opcode != "DEPTHWISE_CONV_2D" or dw.inputs[0] != t or t in dw.inputs[1:] or len(dw.outputs) != 1:
        return None
    if not _constant(graph, dw, 1, 4) or own_kernel_only(graph, dw):
        return None
    if len(dw.inputs) > 2 and dw.inputs[2] >= 0 and not _constant(graph, dw, 2, 1):
        return None
    x, y = graph.tensors[t].int8_image, graph.tensors[dw.outputs[0]].int8_image
    if x is None or y is None or x[2] != y[2] or _pads(graph, dw) is None:
        return None
    return dw


def expansion_pairs(graph: Graph) -> list[ExpandDepthwise]:
    """Every 1x1 expansion read only by a depthwise, with more channels than `DEFAULT_GROUP` (fewer:
    nothing to group)."""
    found = []
    for op in graph.operators:
        if not _pointwise_expansion(graph, op):
            continue
        dw = _single_depthwise(graph, op.outputs[0])
        if dw is not None and int(graph.tensors[op.outputs[0]].shape[3]) > DEFAULT_GROUP:
            found.append(ExpandDepthwise(op, dw))
    return found


def _pads(graph: Graph, dw: Operator) -> tuple[int, int, int, int] | None:
    x, y = graph.tensors[dw.inputs[0]].shape, graph.tensors[dw.outputs[0]].shape
    w = graph.tensors[dw.inputs[1]].shape
    return window_pads(dw, (int(x[1]), int(x[2])), (int(y[1]), int(y[2])), (int(w[1]), int(w[2])))


def _span(graph: Graph, dw: Operator) -> int:
    """Rows one output row of the depthwise reads."""
    dilation = int(dw.options.get("dilation_hfactor", 1) or 1)
    return (int(graph.tensors[dw.inputs[1]].shape[1]) - 1) * dilation + 1


def scratch_bytes(graph: Graph, pair: ExpandDepthwise) -> int:
    """The kernel's scratch (ts_expand_dw_s8): one output row of a group, then the rows of it one
    output row reads (`span`, at most the input's height), which every call reaches the end of."""
    height, in_w, _ = (int(d) for d in graph.tensors[pair.expanded].shape[1:])
    out_w = int(graph.tensors[pair.depthwise.outputs[0]].shape[2])
    return (min(_span(graph, pair.depthwise), height) * in_w + out_w) * pair.group


def rows_computed(graph: Graph, pair: ExpandDepthwise) -> int:
    """The expansion's rows computed when the pair runs as a stage member (row by row): per output
    row, every input row its window reads inside the input."""
    pads = _pads(graph, pair.depthwise)
    assert pads is not None
    height = int(graph.tensors[pair.expanded].shape[1])
    out_h = int(graph.tensors[pair.depthwise.outputs[0]].shape[1])
    stride, span = int(pair.depthwise.options.get("stride_h", 1)), _span(graph, pair.depthwise)
    total = 0
    for r in range(out_h):
        top = r * stride - pads[0]
        total += max(min(top + span, height) - max(top, 0), 0)
    return total


def macs_added(graph: Graph, pair: ExpandDepthwise) -> int:
    """The MACs a stage member adds over the pair run once: the expansion's rows computed again."""
    _, in_w, channels = (int(d) for d in graph.tensors[pair.expanded].shape[1:])
    height = int(graph.tensors[pair.expanded].shape[1])
    in_c = int(graph.tensors[pair.expand.inputs[0]].shape[3])
    return (rows_computed(graph, pair) - height) * in_w * in_c * channels


def rows_again_macs(graph: Graph, members: Iterable[Operator]) -> int:
    """The MACs the expansions among a stage's `members` compute again (`macs_added`); 0 for none."""
    return sum(macs_added(graph, pair) for op in members if (pair := expansion_of(op)) is not None)


def expansion_of(op: Operator) -> ExpandDepthwise | None:
    """The pair a fused operator runs (None: not one)."""
    pair = op.options.get(EXPAND_OPTION) if op.opcode == EXPAND_OPCODE else None
    return pair if isinstance(pair, ExpandDepthwise) else None


def opcode_text(op: Operator) -> str:
    """An operator's type as users know it: its opcode, or for a pair the two TFLite ones."""
    return "CONV_2D+DEPTHWISE_CONV_2D (by groups)" if expansion_of(op) is not None else op.opcode


def _shape_text(graph: Graph, t: int) -> str:
    return "x".join(str(d) for d in graph.tensors[t].shape[1:])


def fuse_expansions(graph: Graph, pairs: Sequence[ExpandDepthwise]) -> RewriteResult:
    """`graph` with each pair one operator at the depthwise's place (a rewrite of kind "expand"). Its
    inputs: the expansion's input, filter and bias, the depthwise's filter and bias; its options the
    depthwise's (so its row and column geometry is the depthwise's) with the filter's size."""
    if not pairs:
        return no_rewrites(graph)
    matches = []
    for pair in pairs:
        e, dw = pair.expand, pair.depthwise
        bias_e = e.inputs[2] if len(e.inputs) > 2 else -1
        bias_dw = dw.inputs[2] if len(dw.inputs) > 2 else -1
        fh, fw = (int(d) for d in graph.tensors[dw.inputs[1]].shape[1:3])
        options = {**dw.options, "filter_height": fh, "filter_width": fw, EXPAND_OPTION: pair}
        op = Operator(
            dw.index,
            EXPAND_OPCODE,
            (e.inputs[0], e.inputs[1], bias_e, dw.inputs[1], bias_dw),
            dw.outputs,
            options,
            1,
        )
        detail = (
            f"CONV_2D 1x1 -> DEPTHWISE_CONV_2D {fh}x{fw} by groups of {pair.group} channel(s): the "
            f"{_shape_text(graph, pair.expanded)} expansion ({graph.tensors[pair.expanded].nbytes:,} B) is never "
            f"whole, {scratch_bytes(graph, pair):,} B of scratch hold one group's rows"
        )
        matches.append(Match("expand", dw.index, op, (e.index,), (pair.expanded,), detail))
    return apply_matches(graph, matches)
