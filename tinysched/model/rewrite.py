"""Exact graph rewrites between folding and scheduling: fewer operators, fewer full-size tensors.

Two patterns a converter leaves behind are computed more cheaply by one windowed operator:

- dilated convolutions: TensorFlow runs `Conv2D(dilation_rate=r)` as
  SPACE_TO_BATCH_ND (pad, split into r x r phases) -> CONV_2D / DEPTHWISE_CONV_2D (stride 1, no
  dilation) -> BATCH_TO_SPACE_ND (interleave, crop). That triple is one convolution of the original
  input with dilation r, whose padding is what the SPACE_TO_BATCH paddings, the inner convolution's
  own padding and the crops add up to (`rewrite_dilated_convolutions`);
- explicit padding: PAD / PADV2 feeding a CONV_2D, DEPTHWISE_CONV_2D or MAX_POOL_2D becomes that
  operator's padding (`fuse_pads`).

Both are rewritten only when the result is bit-identical to what TFLite's reference kernels compute
for the original operators; anything else stays as it is and runs as written. The argument, for a
windowed kernel that skips the taps outside its input:

- a skipped convolution tap contributes nothing; a tap reading a padded element reads the value p,
  and contributes filter * (p - input zero point) = 0 exactly when p is the input zero point
  (SPACE_TO_BATCH_ND pads with its output's zero point for int8, PAD with the output's zero point,
  PADV2 with its constant);
- a skipped max-pool tap leaves the maximum unchanged; a padded tap reading p leaves it unchanged when
  p is -128, or when p is at most every real value (proven from the producer's fused RELU/RELU6
  clamp) and every window still covers a real element;
- AVERAGE_POOL_2D divides by the number of taps inside the input, so explicit padding (which it
  counts) is never fused into it.

A rewritten operator keeps TFLite's SAME or VALID when its padding is exactly that; otherwise its
options carry `padding: "EXPLICIT"` and `explicit_padding: (top, bottom, left, right)` (the generated
kernels take the top/left offsets; the bottom/right follow from the output size).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from tinysched.model.graph import Graph, Operator

__all__ = [
    "EXPLICIT",
    "Match",
    "Rewrite",
    "RewriteResult",
    "apply_matches",
    "canonical_padding",
    "compose",
    "explicit_padding",
    "fuse_pads",
    "no_rewrites",
    "rewrite_dilated_convolutions",
    "rewrite_graph",
    "window_pads",
]

EXPLICIT = "EXPLICIT"  # the `padding` option of an operator whose pads are in `explicit_padding`
CONVOLUTIONS = ("CONV_2D", "DEPTHWISE_CONV_2D")
PAD_OPS = ("PAD", "PADV2")
INT8_MIN = -128


@dataclass(frozen=True)
class Rewrite:
    """One rewrite: the operator that now does the work and the operators it replaced."""

    kind: str  # "dilated_conv" or "pad_fusion"
    operator: int  # index of the rewritten operator in the rewritten graph
    sources: tuple[int, ...]  # operators of the input graph it stands for, the kept one first
    removed_tensors: tuple[int, ...]  # activation tensors no operator writes any more
    removed_bytes: int  # their bytes
    detail: str  # what was rewritten into what, for the `plan` output (no operator indices)


@dataclass(frozen=True)
class RewriteResult:
    graph: Graph  # the rewritten graph (the input graph itself when nothing matched)
    rewrites: tuple[Rewrite, ...]
    operator_map: tuple[tuple[int, ...], ...]  # rewritten operator -> input operators, the kept one first

    @property
    def count(self) -> int:
        return len(self.rewrites)

    @property
    def removed(self) -> tuple[int, ...]:
        """Input-graph operators that no longer exist (their work is in a rewritten operator)."""
        return tuple(sorted(v for r in self.rewrites for v in r.sources[1:]))

    def summary(self) -> str:
        if not self.rewrites:
            return "no operators rewritten"
        kinds: dict[str, int] = {}
        for r in self.rewrites:
            kinds[r.kind] = kinds.get(r.kind, 0) + 1
        text = ", ".join(f"{k} x{v}" for k, v in kinds.items())
        return f"{self.count} rewrite(s) ({text}), {len(self.removed)} operator(s) removed"


def no_rewrites(graph: Graph) -> RewriteResult:
    return RewriteResult(graph, (), tuple((i,) for i in range(len(graph.operators))))


# ---- padding of a windowed operator --------------------------------------------------------------


def explicit_padding(op: Operator) -> tuple[int, int, int, int] | None:
    """(top, bottom, left, right) of an operator with EXPLICIT padding, else None."""
    if op.options.get("padding") != EXPLICIT:
        return None
    pads = op.options.get("explicit_padding")
    if not isinstance(pads, Sequence) or len(pads) != 4:
        return None
    return tuple(int(p) for p in pads)  # type: ignore[return-value]


def _same_pads(size: int, kernel: int, stride: int, dilation: int) -> tuple[int, int, int]:
    """(output size, pad before, pad after) of TFLite's SAME padding (ComputePaddingWithOffset)."""
    out = (size + stride - 1) // stride
    total = max((out - 1) * stride + (kernel - 1) * dilation + 1 - size, 0)
    return out, total // 2, total - total // 2


def _valid_out(size: int, kernel: int, stride: int, dilation: int) -> int:
    return (size - (kernel - 1) * dilation - 1) // stride + 1


def window_pads(
    op: Operator, in_hw: tuple[int, int], out_hw: tuple[int, int], kernel: tuple[int, int]
) -> tuple[int, int, int, int] | None:
    """(top, bottom, left, right) padding of a convolution or pooling operator, as its kernel applies
    it (bottom/right: up to the last output's window), or None for padding it does not state."""
    pads = explicit_padding(op)
    if pads is not None:
        return pads
    padding = op.options.get("padding")
    if padding not in ("SAME", "VALID"):
        return None
    result = []
    for axis, (size, out, k) in enumerate(zip(in_hw, out_hw, kernel, strict=True)):
        stride, dilation = _stride_dilation(op, axis)
        before = _same_pads(size, k, stride, dilation)[1] if padding == "SAME" else 0
        result += [before, (out - 1) * stride + (k - 1) * dilation + 1 - size - before]
    return tuple(result)  # type: ignore[return-value]


def _stride_dilation(op: Operator, axis: int) -> tuple[int, int]:
    o = op.options
    stride = int(o.get("stride_h" if axis == 0 else "stride_w", 1) or 1)
    dilation = int(o.get("dilation_hfactor" if axis == 0 else "dilation_wfactor", 1) or 1)
    return stride, dilation


def canonical_padding(
    in_hw: tuple[int, int],
    out_hw: tuple[int, int],
    kernel: tuple[int, int],
    strides: tuple[int, int],
    dilations: tuple[int, int],
    pads: tuple[int, int, int, int],
) -> dict[str, object]:
    """The padding options for `pads`: SAME or VALID when a kernel would compute exactly that (the
    output size and the pads before it: taps past the end are skipped either way), else EXPLICIT."""
    axes = list(zip(in_hw, out_hw, kernel, strides, dilations, strict=True))
    if all(
        (out, pads[2 * a]) == _same_pads(size, k, st, d)[:2] for a, (size, out, k, st, d) in enumerate(axes)
    ):
        return {"padding": "SAME"}
    if pads[0] == pads[2] == 0 and all(out == _valid_out(size, k, st, d) for size, out, k, st, d in axes):
        return {"padding": "VALID"}
    return {"padding": EXPLICIT, "explicit_padding": tuple(int(p) for p in pads)}


# ---- helpers ------------------------------------------------------------------------------------


def _const_ints(graph: Graph, t: int) -> list[int] | None:
    if t < 0 or graph.tensors[t].data is None:
        return None
    data = np.asarray(graph.tensors[t].data)
    if data.dtype.kind not in "iu":
        return None
    return [int(v) for v in data.reshape(-1)]


def _sole_reader(graph: Graph, t: int) -> Operator | None:
    """The one operator reading activation `t` (as its first input only), if `t` is no graph output."""
    readers = graph.consumers.get(t, ())
    if len(readers) != 1 or t in graph.outputs:
        return None
    op = graph.operators[readers[0]]
    if not op.inputs or op.inputs[0] != t or t in op.inputs[1:]:
        return None
    return op


def _int8_same_quant(graph: Graph, a: int, b: int) -> bool:
    ta, tb = graph.tensors[a], graph.tensors[b]
    return (
        ta.dtype == tb.dtype == "int8"
        and ta.quantization is not None
        and ta.quantization == tb.quantization
        and not ta.quantization.per_channel
    )


def _filter_hw(graph: Graph, op: Operator) -> tuple[int, int] | None:
    if len(op.inputs) < 2 or op.inputs[1] < 0:
        return None
    shape = graph.tensors[op.inputs[1]].shape
    return (int(shape[1]), int(shape[2])) if len(shape) == 4 else None


def _nhwc(graph: Graph, t: int) -> tuple[int, int, int, int] | None:
    shape = graph.tensors[t].shape
    return tuple(int(d) for d in shape) if len(shape) == 4 else None  # type: ignore[return-value]


@dataclass(frozen=True)
class Match:
    """One rewrite found: `op` replaces operator `keep`; `removed_ops` go."""

    kind: str
    keep: int  # the operator replaced by `op`
    op: Operator  # the rewritten operator (its index is fixed when the graph is renumbered)
    removed_ops: tuple[int, ...]
    removed_tensors: tuple[int, ...]
    detail: str


_Matcher = Callable[[Graph, Operator], "Match | None"]


def _apply(graph: Graph, matcher: _Matcher, anchors: tuple[str, ...]) -> RewriteResult:
    """Every non-overlapping match of `matcher` (tried on operators of the types `anchors`) at once."""
    found: list[Match] = []
    used: set[int] = set()
    for op in graph.operators:
        if op.opcode not in anchors or op.index in used:
            continue
        m = matcher(graph, op)
        if m is None or used & {m.keep, *m.removed_ops}:
            continue
        used |= {m.keep, *m.removed_ops}
        found.append(m)
    return apply_matches(graph, found)


def apply_matches(graph: Graph, found: Sequence[Match]) -> RewriteResult:
    """`graph` with every match applied at once (they must not share operators), renumbered."""
    matches = {m.keep: m for m in found}
    if not matches:
        return no_rewrites(graph)
    removed = {v for m in matches.values() for v in m.removed_ops}
    operators, sources, rewrites = [], [], []
    for op in graph.operators:
        if op.index in removed:
            continue
        index = len(operators)
        m = matches.get(op.index)
        if m is None:
            operators.append(_renumbered(op, index))
            sources.append((op.index,))
            continue
        operators.append(_renumbered(m.op, index))
        srcs = (m.keep, *sorted(m.removed_ops))
        sources.append(srcs)
        nbytes = sum(graph.tensors[t].nbytes for t in m.removed_tensors)
        rewrites.append(Rewrite(m.kind, index, srcs, m.removed_tensors, nbytes, m.detail))
    new_graph = graph.derived(graph.tensors, tuple(operators))
    return RewriteResult(new_graph, tuple(rewrites), tuple(sources))


def _renumbered(op: Operator, index: int) -> Operator:
    return Operator(index, op.opcode, op.inputs, op.outputs, dict(op.options), op.version, op.intermediates)


def compose(first: RewriteResult, second: RewriteResult) -> RewriteResult:
    """`second` (applied to `first.graph`) after `first`, against `first`'s input graph."""
    if not second.rewrites:
        return first
    op_map = tuple(tuple(u for v in srcs for u in first.operator_map[v]) for srcs in second.operator_map)
    where = {v: i for i, srcs in enumerate(second.operator_map) for v in srcs}
    rewrites = [replace(r, operator=where[r.operator]) for r in first.rewrites]
    for s in second.rewrites:
        kept = first.operator_map[s.sources[0]][0]
        others = tuple(u for v in s.sources[1:] for u in first.operator_map[v])
        rewrites.append(replace(s, sources=(kept, *others)))
    rewrites.sort(key=lambda r: r.operator)  # stable: an operator's earlier rewrite first
    return RewriteResult(second.graph, tuple(rewrites), op_map)


# ---- SPACE_TO_BATCH_ND -> convolution -> BATCH_TO_SPACE_ND --------------------------------------


def _match_dilated(graph: Graph, stb: Operator) -> Match | None:
    if len(stb.inputs) < 3 or len(stb.outputs) != 1:
        return None
    x, y = stb.inputs[0], stb.outputs[0]
    block, paddings = _const_ints(graph, stb.inputs[1]), _const_ints(graph, stb.inputs[2])
    conv = _sole_reader(graph, y)
    if block is None or paddings is None or len(block) != 2 or len(paddings) != 4 or conv is None:
        return None
    if conv.opcode not in CONVOLUTIONS or len(conv.outputs) != 1:
        return None
    if conv.options.get("padding") not in ("SAME", "VALID"):
        return None
    if any(_stride_dilation(conv, a) != (1, 1) for a in (0, 1)):
        return None
    z = conv.outputs[0]
    bts = _sole_reader(graph, z)
    if bts is None or bts.opcode != "BATCH_TO_SPACE_ND" or len(bts.inputs) < 3 or len(bts.outputs) != 1:
        return None
    out = bts.outputs[0]
    crops = _const_ints(graph, bts.inputs[2])
    if _const_ints(graph, bts.inputs[1]) != block or crops is None or len(crops) != 4:
        return None
    if not (_int8_same_quant(graph, x, y) and _int8_same_quant(graph, z, out)):
        return None
    in_shape, out_shape, fhw = _nhwc(graph, x), _nhwc(graph, out), _filter_hw(graph, conv)
    if in_shape is None or out_shape is None or fhw is None or min(block) < 1 or min(paddings + crops) < 0:
        return None
    (n, h, w, _), (no, ho, wo, oc) = in_shape, out_shape
    filter_shape = graph.tensors[conv.inputs[1]].shape
    if no != n or oc != filter_shape[3 if conv.opcode == "DEPTHWISE_CONV_2D" else 0]:
        return None
    # The intermediate shapes are what TFLite's Prepare derives from x and the constants; the
    # stored ones are not read (a converter may store a dynamic batch as 1, and TFLM once misran
    # such models for trusting them). Only the final output's stored shape must be the derived one.
    rh, rw = block
    pads: list[int] = []
    for size, final, r, k, (pb, pa), (cb, ca) in (
        (h, ho, rh, fhw[0], paddings[0:2], crops[0:2]),
        (w, wo, rw, fhw[1], paddings[2:4], crops[2:4]),
    ):
        if (size + pb + pa) % r:
            return None  # TFLite refuses such a SPACE_TO_BATCH_ND
        sub = (size + pb + pa) // r
        conv_out, inner = (sub - k + 1, 0) if conv.options["padding"] == "VALID" else (sub, (k - 1) // 2)
        if conv_out < 1 or conv_out * r - cb - ca != final:
            return None
        # out[j] = sum_k w[k] * padded[j + crop_before + (k - inner) * r] = dilated conv of x
        before = pb + inner * r - cb
        after = (final - 1) + (k - 1) * r + 1 - size - before
        if before < 0 or after < 0:
            return None
        pads += [before, after]
    options = dict(conv.options)
    options.update(stride_h=1, stride_w=1, dilation_hfactor=rh, dilation_wfactor=rw)
    options.update(canonical_padding((h, w), (ho, wo), fhw, (1, 1), (rh, rw), tuple(pads)))  # type: ignore[arg-type]
    new = Operator(conv.index, conv.opcode, (x, *conv.inputs[1:]), (out,), options, conv.version)
    detail = (
        f"{stb.opcode} -> {conv.opcode} -> {bts.opcode} as one {conv.opcode} with dilation {rh}x{rw}, "
        f"padding {_padding_text(options)}"
    )
    return Match("dilated_conv", conv.index, new, (stb.index, bts.index), (y, z), detail)


def _padding_text(options: dict) -> str:
    if options.get("padding") == EXPLICIT:
        t, b, left, right = options["explicit_padding"]
        return f"top {t} bottom {b} left {left} right {right}"
    return str(options.get("padding"))


def rewrite_dilated_convolutions(graph: Graph) -> RewriteResult:
    """Each exact SPACE_TO_BATCH_ND -> CONV_2D/DEPTHWISE_CONV_2D -> BATCH_TO_SPACE_ND as one dilated
    convolution of the original input."""
    return _apply(graph, _match_dilated, ("SPACE_TO_BATCH_ND",))


# ---- PAD / PADV2 -> convolution or MAX_POOL_2D ------------------------------------------------


def _pad_value(graph: Graph, pad: Operator) -> int | None:
    """The int8 value TFLite pads with: PAD the output zero point, PADV2 its constant."""
    y = graph.tensors[pad.outputs[0]]
    if pad.opcode == "PADV2" and len(pad.inputs) > 2 and pad.inputs[2] >= 0:
        value = _const_ints(graph, pad.inputs[2])
        constant = graph.tensors[pad.inputs[2]]
        if (
            value is None
            or len(value) != 1
            or constant.dtype != "int8"
            or constant.quantization != y.quantization
        ):
            return None  # TFLite refuses a constant quantised unlike the output
        return value[0]
    if y.quantization is None:
        return None
    return int(y.quantization.zero_point[0])


# Fused activations after which every int8 value is at least the output zero point (TFLite's
# CalculateActivationRangeQuantized: act_min = max(-128, zero_point + round(0 / scale))).
_NON_NEGATIVE_ACTIVATIONS = ("RELU", "RELU6")


def _lower_bound(graph: Graph, t: int) -> int:
    """A value no element of int8 activation `t` is below (from its producer's fused clamp)."""
    producer = graph.producer.get(t)
    q = graph.tensors[t].quantization
    if producer is None or q is None:
        return INT8_MIN
    op = graph.operators[producer]
    if op.outputs[:1] == (t,) and op.options.get("fused_activation_function") in _NON_NEGATIVE_ACTIVATIONS:
        return max(INT8_MIN, int(q.zero_point[0]))
    return INT8_MIN


def _every_window_covers(size: int, out: int, k: int, stride: int, dilation: int, before: int) -> bool:
    """Each output's window (after `before` pads) reads at least one element of the input."""
    for o in range(out):
        start = o * stride - before
        if not any(0 <= start + i * dilation < size for i in range(k)):
            return False
    return True


def _match_pad(graph: Graph, pad: Operator) -> Match | None:
    if len(pad.inputs) < 2 or len(pad.outputs) != 1:
        return None
    x, y = pad.inputs[0], pad.outputs[0]
    pads = _const_ints(graph, pad.inputs[1])
    consumer = _sole_reader(graph, y)
    if pads is None or consumer is None or len(pads) != 8 or min(pads) < 0:
        return None
    if pads[0:2] != [0, 0] or pads[6:8] != [0, 0] or not _int8_same_quant(graph, x, y):
        return None
    value = _pad_value(graph, pad)
    if value is None or not consumer.outputs:
        return None
    z = consumer.outputs[0]
    in_shape, padded, out_shape = _nhwc(graph, x), _nhwc(graph, y), _nhwc(graph, z)
    if in_shape is None or padded is None or out_shape is None:
        return None
    (_, h, w, _), (_, hp, wp, _), (_, ho, wo, _) = in_shape, padded, out_shape
    if hp != h + pads[2] + pads[3] or wp != w + pads[4] + pads[5]:
        return None
    if consumer.opcode in CONVOLUTIONS:
        kernel = _filter_hw(graph, consumer)
        zp = graph.tensors[y].quantization.zero_point[0]  # type: ignore[union-attr]
        if kernel is None or value != zp:
            return None  # a padded tap would add filter * (value - zero point) != 0
    elif consumer.opcode == "MAX_POOL_2D":
        kernel = (int(consumer.options.get("filter_height", 0)), int(consumer.options.get("filter_width", 0)))
        if min(kernel) < 1:
            return None
    else:
        return None  # AVERAGE_POOL_2D counts padded taps, which kernels with padding do not
    own = window_pads(consumer, (hp, wp), (ho, wo), kernel)
    if own is None:
        return None
    total = (pads[2] + own[0], pads[3] + own[1], pads[4] + own[2], pads[5] + own[3])
    if consumer.opcode == "MAX_POOL_2D" and value != INT8_MIN:
        # max(real, value) == max(real) needs value <= every real element and a real element in
        # every window (a window of padding alone would give `value`, the fused kernel -128).
        if value > _lower_bound(graph, x):
            return None
        for size, out, k, axis, before in ((h, ho, kernel[0], 0, total[0]), (w, wo, kernel[1], 1, total[2])):
            stride, dilation = _stride_dilation(consumer, axis)
            if not _every_window_covers(size, out, k, stride, dilation, before):
                return None
    strides = (_stride_dilation(consumer, 0)[0], _stride_dilation(consumer, 1)[0])
    dilations = (_stride_dilation(consumer, 0)[1], _stride_dilation(consumer, 1)[1])
    options = {k: v for k, v in consumer.options.items() if k != "explicit_padding"}
    options.update(canonical_padding((h, w), (ho, wo), kernel, strides, dilations, total))
    new = Operator(
        consumer.index,
        consumer.opcode,
        (x, *consumer.inputs[1:]),
        consumer.outputs,
        options,
        consumer.version,
    )
    detail = f"{pad.opcode} of {value} as the padding of {consumer.opcode}: {_padding_text(options)}"
    return Match("pad_fusion", consumer.index, new, (pad.index,), (y,), detail)


def fuse_pads(graph: Graph) -> RewriteResult:
    """Each PAD/PADV2 whose only reader is a convolution or MAX_POOL_2D it can be the padding of,
    exactly, folded into that reader."""
    return _apply(graph, _match_pad, PAD_OPS)


def rewrite_graph(graph: Graph) -> RewriteResult:
    """All rewrites: dilated convolutions first (their input may itself be a fusable PAD's output)."""
    dilated = rewrite_dilated_convolutions(graph)
    return compose(dilated, fuse_pads(dilated.graph))
