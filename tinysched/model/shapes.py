"""Shape inference and option checks for every operator the code generator lowers.

The kernels trust the shapes a model states: a convolution loops over the output tensor's height,
width and channels, a pooling window over its filter option, a copy over the input's byte count. A
hostile or broken file can state an output shape its inputs and options do not give (a depthwise
convolution writing batch 65,536 from an input of batch 1), or an option no kernel can take (a filter
width of -2^31), and the generated firmware would then read or write past a buffer. So before any
planning, `infer_shapes` infers each operator's output shapes from its inputs and options the way
TFLite's `Prepare` does, in stored order, compares them with the stated ones and checks every
option's range; the first disagreement is one `TinyschedError` line naming the operator, the tensor
and both shapes.

A stated size is not always a claim: where a converter could not size a dimension (a dynamic
batch, a RESHAPE whose shape input is computed from SHAPE), it stores a placeholder, usually 1, and
-1 in the tensor's shape_signature, and TFLite's Prepare computes the real size. There the inferred
size replaces the stated one, and every later operator is checked against the inferred shapes.
Integer vectors computed from constants (SHAPE -> STRIDED_SLICE -> CONCATENATION, evaluated by
fold.py) are known as the walk reaches them, as Prepare knows them. Outside the placeholders a
stated shape the inference contradicts is refused: the file is inconsistent, and TFLM, which
allocates from the stated shapes, would run it on other shapes than TFLite.

One function per opcode (`INFER`), each returning what it knows about every output: an exact
shape, an element count (`Elements`, for the RESHAPE family and for elementwise operators, whose
kernels compute the count from the inputs and write the bytes in the same order whatever shape the
output states; with the shape Prepare gives where it is known), or `None` when the output depends
on a tensor computed at run time and the function has checked what can be checked. Opcodes without
an entry (the code generator refuses them anyway) are not checked here. All arithmetic is on Python
integers, so nothing wraps.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from tinysched.errors import TinyschedError
from tinysched.model.fold import evaluate_operator
from tinysched.model.graph import Graph, Operator, Tensor
from tinysched.text import quoted

__all__ = [
    "INFER",
    "INT32_MAX",
    "Elements",
    "Expected",
    "check_graph",
    "infer_output_shapes",
    "infer_shapes",
]

INT32_MAX = 2**31 - 1
Shape = tuple[int, ...]
Partial = tuple[int | None, ...]  # a shape with some dimensions left open


@dataclass(frozen=True)
class Elements:
    """The element count an output must have (its kernel counts from the inputs); `shape`, when
    known, is the shape TFLite's Prepare gives it."""

    count: int
    shape: Shape | None = None


Expected = Shape | Partial | Elements | None


class _Invalid(Exception):
    """An operand or option the operator cannot take; becomes a one-line TinyschedError."""


def _name(t: Tensor) -> str:
    return quoted(t.name)


class _Op:
    """An operator with its operands, for the inference functions: shapes, constants and options.

    `tensors` are the tensor records with the shapes inferred so far (the graph's by default) and
    `values` the integer tensors computed from constants so far (a folded shape vector)."""

    def __init__(
        self,
        graph: Graph,
        op: Operator,
        tensors: Sequence[Tensor] | None = None,
        values: Mapping[int, np.ndarray] | None = None,
    ) -> None:
        self.graph = graph
        self.tensors = graph.tensors if tensors is None else tensors
        self.values = values or {}
        self.op = op
        self.options = op.options

    # -- operands

    def present(self, k: int) -> bool:
        return k < len(self.op.inputs) and self.op.inputs[k] >= 0

    def inputs(self, low: int, high: int | None = None) -> None:
        """Refuse fewer than `low` or more than `high` inputs."""
        n = len(self.op.inputs)
        high = low if high is None else high
        if n < low or n > high:
            want = f"{low}" if low == high else f"{low} to {high}"
            raise _Invalid(f"has {n} inputs, {self.op.opcode} takes {want}")

    def outputs(self, n: int) -> None:
        if len(self.op.outputs) != n:
            raise _Invalid(f"has {len(self.op.outputs)} outputs, expected {n}")

    def tensor(self, k: int) -> Tensor:
        if not self.present(k):
            raise _Invalid(f"input {k} is missing")
        return self.tensors[self.op.inputs[k]]

    def shape(self, k: int, rank: int | None = None) -> Shape:
        t = self.tensor(k)
        if rank is not None and len(t.shape) != rank:
            raise _Invalid(f"input {k} (tensor {t.index}) has shape {list(t.shape)}, expected rank {rank}")
        return t.shape

    def out_shape(self, k: int = 0) -> Shape:
        return self.tensors[self.op.outputs[k]].shape

    def const(self, k: int) -> list[int] | None:
        """Input k's constant values as integers, or None when it is computed at run time."""
        t = self.tensor(k)
        data = t.data if t.data is not None else self.values.get(t.index)
        if data is None or t.dtype not in ("int32", "int64", "int16", "int8", "uint8"):
            return None
        return [int(v) for v in np.asarray(data).reshape(-1).tolist()]

    def const_magnitude(self, k: int) -> int | None:
        """The largest |value| of input k's integer constant, or None when it is computed at run time or
        empty: in numpy, since a filter can hold millions of values."""
        t = self.tensor(k)
        data = t.data if t.data is not None else self.values.get(t.index)
        if data is None or t.dtype not in ("int32", "int64", "int16", "int8", "uint8"):
            return None
        values = np.asarray(data).reshape(-1).astype(np.int64)
        return int(np.abs(values).max()) if values.size else None

    def need_const(self, k: int, what: str) -> list[int] | None:
        values = self.const(k)
        if values is None and self.tensor(k).is_constant:
            raise _Invalid(f"{what} (input {k}) is a {self.tensor(k).dtype} constant, expected integers")
        return values

    # -- options

    def int_option(self, key: str, default: int, low: int = 1, high: int = INT32_MAX) -> int:
        value = self.options.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise _Invalid(f"option {key} = {value!r} is outside [{low}, {high}]")
        return value

    def axis(self, value: int, rank: int, what: str = "axis") -> int:
        if not -rank <= value < rank:
            raise _Invalid(f"{what} {value} is outside a rank of {rank}")
        return value + rank if value < 0 else value

    def padding(self) -> str:
        """SAME, VALID, or EXPLICIT (a PAD fused in by rewrite.py: `explicit_padding` holds
        (top, bottom, left, right); bottom/right may be negative where rows are left over)."""
        padding = self.options.get("padding", "SAME")
        if padding == "EXPLICIT":
            pads = self.options.get("explicit_padding")
            if not isinstance(pads, (tuple, list)) or len(pads) != 4 or min(pads[0], pads[2]) < 0:
                raise _Invalid(
                    f"explicit padding {pads!r} is not (top, bottom, left, right) with top, left >= 0"
                )
            return padding
        if padding not in ("SAME", "VALID"):
            raise _Invalid(f"option padding = {padding!r} is neither SAME nor VALID")
        return padding

    def pads(self, axis: str) -> tuple[int, int]:
        """(before, after) explicit padding of the "height" or "width" axis (0, 0 unless EXPLICIT)."""
        if self.options.get("padding") != "EXPLICIT":
            return (0, 0)
        top, bottom, left, right = (int(v) for v in self.options["explicit_padding"])
        return (top, bottom) if axis == "height" else (left, right)


def window_padding(in_size: int, out_size: int, kernel: int, stride: int, dilation: int) -> int:
    """ComputePaddingWithOffset: padding before the first row/column (the smaller half)."""
    effective = (kernel - 1) * dilation + 1
    total = max((out_size - 1) * stride + effective - in_size, 0)
    return total // 2


def _elements(shape: Sequence[int]) -> int:
    return math.prod(shape)


def _window(
    size: int, filt: int, stride: int, dilation: int, padding: str, what: str, pads: tuple[int, int] = (0, 0)
) -> int:
    """ComputeOutSize: a window of `filt` taps `dilation` apart, moved by `stride` over `size`
    (with EXPLICIT padding: over `size` plus `pads`)."""
    effective = (filt - 1) * dilation + 1
    if padding == "EXPLICIT":
        size = size + pads[0] + pads[1]
    out = -(-size // stride) if padding == "SAME" else (size - effective + stride) // stride
    if out < 1:
        raise _Invalid(f"a {what} window of {effective} does not fit an input of {size} ({padding})")
    if (out - 1) * stride + effective > INT32_MAX:
        raise _Invalid(f"the {what} window positions overflow int32")
    return out


# |q - zero_point| * |w| <= 255 * 128 for int8 operands: the largest product an accumulator adds.
_MAX_PRODUCT = 255 * 128


def _largest_product(o: _Op) -> int:
    """The largest |input - zero point| x |filter| one product can reach: from the input's zero point
    and, when the filter is constant, its largest magnitude (else the int8 bounds)."""
    data = 2 if o.op.opcode == "TRANSPOSE_CONV" else 0
    x = o.tensor(data)
    zp = x.quantization.zero_point[0] if x.quantization is not None and x.quantization.zero_point else 0
    span = max(127 - zp, zp + 128)
    weights = o.const_magnitude(1) if o.present(1) else None
    return span * (128 if weights is None else weights)


def _bias(o: _Op, k: int, channels: int, products: int | None = None) -> None:
    """The bias has one value per output channel, and with `products` int8 products per output the
    int32 accumulator (bias plus products) cannot overflow."""
    if not o.present(k):
        return
    if _elements(o.shape(k)) != channels:
        raise _Invalid(f"bias (input {k}) has shape {list(o.shape(k))}, expected {channels} elements")
    if products is None or products * _MAX_PRODUCT > INT32_MAX:
        return  # more products than an accumulator holds: the generator refuses the operator itself
    if o.tensor(k).dtype != "int32" or o.tensor(0 if o.op.opcode != "TRANSPOSE_CONV" else 2).dtype != "int8":
        return
    largest = o.const_magnitude(k)
    if largest is not None:
        worst = largest + products * _largest_product(o)
        if worst > INT32_MAX:
            raise _Invalid(
                f"bias (input {k}) of up to {largest:,} plus {products:,} products "
                "per output can overflow the int32 accumulator"
            )


# ---- the inference functions -------------------------------------------------------------------


def _conv_2d(o: _Op) -> tuple[Expected, ...]:
    o.inputs(2, 3)
    o.outputs(1)
    n, h, w, ic = o.shape(0, 4)
    oc, fh, fw, fc = o.shape(1, 4)
    if fc < 1 or ic % fc:
        raise _Invalid(f"filter of {fc} input channels for an input of {ic} channels")
    _bias(o, 2, oc, fh * fw * fc)
    sh, sw = o.int_option("stride_h", 1), o.int_option("stride_w", 1)
    dh = o.int_option("dilation_hfactor", 1, low=0) or 1  # 0 reads as 1, as the generator does
    dw = o.int_option("dilation_wfactor", 1, low=0) or 1
    padding = o.padding()
    oh = _window(h, fh, sh, dh, padding, "height", o.pads("height"))
    ow = _window(w, fw, sw, dw, padding, "width", o.pads("width"))
    return ((n, oh, ow, oc),)


def _depthwise_conv_2d(o: _Op) -> tuple[Expected, ...]:
    o.inputs(2, 3)
    o.outputs(1)
    n, h, w, ic = o.shape(0, 4)
    one, fh, fw, oc = o.shape(1, 4)
    if one != 1 or ic < 1 or oc % ic:
        raise _Invalid(f"depthwise filter of shape {[one, fh, fw, oc]} for an input of {ic} channels")
    _bias(o, 2, oc, fh * fw)
    o.int_option("depth_multiplier", 1, low=0)
    sh, sw = o.int_option("stride_h", 1), o.int_option("stride_w", 1)
    dh = o.int_option("dilation_hfactor", 1, low=0) or 1
    dw = o.int_option("dilation_wfactor", 1, low=0) or 1
    padding = o.padding()
    oh = _window(h, fh, sh, dh, padding, "height", o.pads("height"))
    return ((n, oh, _window(w, fw, sw, dw, padding, "width", o.pads("width")), oc),)


def _transpose_conv(o: _Op) -> tuple[Expected, ...]:
    o.inputs(3, 4)
    o.outputs(1)
    oc, fh, fw, fc = o.shape(1, 4)
    n, h, w, ic = o.shape(2, 4)
    if fc != ic:
        raise _Invalid(f"filter of {fc} input channels for an input of {ic} channels")
    _bias(o, 3, oc, fh * fw * ic)
    o.int_option("stride_h", 1)
    o.int_option("stride_w", 1)
    o.padding()
    if fh < 1 or fw < 1:
        raise _Invalid(f"filter of shape {list(o.shape(1))}")
    if len(o.shape(0)) != 1 or o.shape(0)[0] != 4:
        raise _Invalid(f"output_shape (input 0) has shape {list(o.shape(0))}, expected [4]")
    stated = o.need_const(0, "output_shape")
    if stated is None:
        return ((n, None, None, oc),)
    if stated[0] != n or stated[3] != oc or min(stated) < 1:
        raise _Invalid(f"output_shape {stated} for an input of batch {n} and a filter of {oc} outputs")
    return (tuple(stated),)


def _fully_connected(o: _Op) -> tuple[Expected, ...]:
    o.inputs(2, 3)
    o.outputs(1)
    x = o.shape(0)
    units, depth = o.shape(1, 2)
    size = _elements(x)
    if depth < 1 or size % depth:
        raise _Invalid(f"input of shape {list(x)} is not a whole number of rows of {depth}")
    _bias(o, 2, units, depth)
    if o.options.get("keep_num_dims", False):
        if not x or x[-1] != depth:
            raise _Invalid(f"keep_num_dims with an input of shape {list(x)} and weights of depth {depth}")
        return ((*x[:-1], units),)
    return ((size // depth, units),)


def _pool_2d(o: _Op) -> tuple[Expected, ...]:
    o.inputs(1)
    o.outputs(1)
    n, h, w, c = o.shape(0, 4)
    for key in ("filter_height", "filter_width", "stride_h", "stride_w"):
        if key not in o.options:
            raise _Invalid(f"options lack {key}")
    fh, fw = o.int_option("filter_height", 0), o.int_option("filter_width", 0)
    sh, sw = o.int_option("stride_h", 0), o.int_option("stride_w", 0)
    if fh * fw > INT32_MAX:
        raise _Invalid(f"a {fh}x{fw} window has more taps than int32 counts")
    padding = o.padding()
    oh = _window(h, fh, sh, 1, padding, "height", o.pads("height"))
    return ((n, oh, _window(w, fw, sw, 1, padding, "width", o.pads("width")), c),)


def _same_as_input(o: _Op) -> tuple[Expected, ...]:
    """Elementwise on one input: the output has its element count (the kernels count from the input)."""
    o.inputs(1)
    o.outputs(1)
    return (Elements(_elements(o.shape(0)), o.shape(0)),)


def _broadcast(o: _Op) -> tuple[Expected, ...]:
    o.inputs(2)
    o.outputs(1)
    a, b = o.shape(0), o.shape(1)
    try:
        shape = tuple(int(d) for d in np.broadcast_shapes(a, b))
    except ValueError:
        raise _Invalid(f"input shapes {list(a)} and {list(b)} do not broadcast") from None
    return (Elements(_elements(shape), shape),)


def _new_shape(o: _Op) -> list[int] | None:
    """RESHAPE's target as TFLite's GetOutputShape reads it: a 1-D int32 shape input, else the
    new_shape option ([0] meaning a scalar, as in legacy models); None while the input is computed
    at run time (or the model gives neither)."""
    if o.present(1) and len(o.shape(1)) == 1 and o.tensor(1).dtype == "int32":
        return o.const(1)
    dims = o.options.get("new_shape")
    if dims is None:
        return None
    dims = [int(d) for d in dims]
    return [] if dims == [0] else dims


def _reshape(o: _Op) -> tuple[Expected, ...]:
    """RESHAPE, SQUEEZE, EXPAND_DIMS copy the bytes: the element count is kept, and the shape is
    what TFLite's Prepare computes from the shape input or the options where they are known."""
    o.inputs(1, 2)
    o.outputs(1)
    x = o.shape(0)
    count = _elements(x)
    if o.op.opcode == "SQUEEZE":
        return (Elements(count, _squeezed(o, x)),)
    if o.op.opcode == "EXPAND_DIMS":
        axis = o.need_const(1, "axis")
        if axis is None:
            return (Elements(count),)
        if len(axis) != 1:
            raise _Invalid(f"axis (input 1) holds {len(axis)} values, expected 1")
        at = o.axis(axis[0], len(x) + 1)
        return (Elements(count, (*x[:at], 1, *x[at:])),)
    dims = _new_shape(o)
    if dims is None:
        return (Elements(count),)
    if dims.count(-1) > 1 or any(d < -1 for d in dims):
        raise _Invalid(f"new shape {dims}: at most one -1 and no other negative size")
    known = _elements(d for d in dims if d != -1)
    if -1 in dims:
        if known == 0 or count % known:
            raise _Invalid(f"new shape {dims} cannot hold the input's {count} elements")
        dims[dims.index(-1)] = count // known
    if _elements(dims) != count:
        raise _Invalid(f"new shape {dims} holds {_elements(dims)} elements, the input {count}")
    return (Elements(count, tuple(dims)),)


def _squeezed(o: _Op, x: Shape) -> Shape:
    """SQUEEZE's output: the squeeze_dims axes (each of size 1) dropped, or every axis of size 1."""
    axes = o.options.get("squeeze_dims") or ()
    if not axes:
        return tuple(d for d in x if d != 1)
    drop = {o.axis(int(a), len(x), "squeeze axis") for a in axes}
    if any(x[a] != 1 for a in drop):
        raise _Invalid(f"squeeze axes {sorted(drop)} of an input of {list(x)} are not all of size 1")
    return tuple(d for i, d in enumerate(x) if i not in drop)


def _concatenation(o: _Op) -> tuple[Expected, ...]:
    if not o.op.inputs:
        raise _Invalid("has no inputs")
    o.outputs(1)
    shapes = [o.shape(k) for k in range(len(o.op.inputs))]
    rank = len(shapes[0])
    axis = o.axis(o.int_option("axis", 0, low=-INT32_MAX - 1), max(rank, 1))
    for k, s in enumerate(shapes):
        if len(s) != rank or any(
            d != e for i, (d, e) in enumerate(zip(s, shapes[0], strict=True)) if i != axis
        ):
            raise _Invalid(
                f"input {k} has shape {list(s)}, input 0 {list(shapes[0])}: they join on axis {axis} only"
            )
    if rank == 0:
        raise _Invalid("concatenates scalars")
    return ((*shapes[0][:axis], sum(s[axis] for s in shapes), *shapes[0][axis + 1 :]),)


def _pack(o: _Op) -> tuple[Expected, ...]:
    if not o.op.inputs:
        raise _Invalid("has no inputs")
    o.outputs(1)
    shapes = [o.shape(k) for k in range(len(o.op.inputs))]
    count = o.int_option("values_count", len(shapes), low=0)
    if count not in (0, len(shapes)):
        raise _Invalid(f"option values_count = {count} for {len(shapes)} inputs")
    if any(s != shapes[0] for s in shapes):
        raise _Invalid(f"inputs of shapes {[list(s) for s in shapes]}: PACK needs one shape")
    axis = o.axis(o.int_option("axis", 0, low=-INT32_MAX - 1), len(shapes[0]) + 1)
    return ((*shapes[0][:axis], len(shapes), *shapes[0][axis:]),)


def _unpack(o: _Op) -> tuple[Expected, ...]:
    o.inputs(1)
    x = o.shape(0)
    axis = o.axis(o.int_option("axis", 0, low=-INT32_MAX - 1), len(x))
    num = o.int_option("num", x[axis], low=0)
    if num not in (0, x[axis]) or len(o.op.outputs) != x[axis]:
        raise _Invalid(f"{len(o.op.outputs)} outputs (option num {num}) along an axis of {x[axis]}")
    return tuple((*x[:axis], *x[axis + 1 :]) for _ in o.op.outputs)


def _split_shapes(o: _Op, x: Shape, axis_input: int, sizes: list[int] | None) -> tuple[Expected, ...]:
    axes = o.need_const(axis_input, "axis")
    if axes is None:
        return tuple(None for _ in o.op.outputs)
    if len(axes) != 1:
        raise _Invalid(f"axis (input {axis_input}) holds {len(axes)} values, expected 1")
    axis = o.axis(axes[0], len(x))
    if sizes is None:
        n = len(o.op.outputs)
        if n < 1 or x[axis] % n:
            raise _Invalid(f"{n} outputs do not split an axis of {x[axis]} evenly")
        sizes = [x[axis] // n] * n
    return tuple((*x[:axis], s, *x[axis + 1 :]) for s in sizes)


def _split(o: _Op) -> tuple[Expected, ...]:
    o.inputs(2)
    x = o.shape(1)
    n = o.int_option("num_splits", len(o.op.outputs), low=0)
    if n not in (0, len(o.op.outputs)):
        raise _Invalid(f"option num_splits = {n} for {len(o.op.outputs)} outputs")
    return _split_shapes(o, x, 0, None)


def _split_v(o: _Op) -> tuple[Expected, ...]:
    o.inputs(3)
    x = o.shape(0)
    sizes = o.need_const(1, "size_splits")
    n = o.int_option("num_splits", len(o.op.outputs), low=0)
    if n not in (0, len(o.op.outputs)):
        raise _Invalid(f"option num_splits = {n} for {len(o.op.outputs)} outputs")
    if sizes is None:
        return tuple(None for _ in o.op.outputs)
    if len(sizes) != len(o.op.outputs) or sizes.count(-1) > 1 or any(s < -1 for s in sizes):
        raise _Invalid(f"size_splits {sizes} for {len(o.op.outputs)} outputs")
    axes = o.need_const(2, "axis")
    if axes is None or len(axes) != 1:
        return _split_shapes(o, x, 2, sizes)
    axis = o.axis(axes[0], len(x))
    known = sum(s for s in sizes if s >= 0)
    if -1 in sizes:
        sizes = [x[axis] - known if s == -1 else s for s in sizes]
    if sum(sizes) != x[axis] or min(sizes, default=0) < 0:
        raise _Invalid(f"size_splits {sizes} do not add up to the axis size {x[axis]}")
    return _split_shapes(o, x, 2, sizes)


def _pad(o: _Op) -> tuple[Expected, ...]:
    o.inputs(2, 3)
    o.outputs(1)
    x = o.shape(0)
    pads = o.need_const(1, "paddings")
    if pads is None:
        y = o.out_shape()
        if len(y) != len(x) or any(b < a for a, b in zip(x, y, strict=True)):
            raise _Invalid(f"output of shape {list(y)} cannot be a padding of {list(x)}")
        return (None,)
    if o.shape(1) != (len(x), 2):
        raise _Invalid(f"paddings of shape {list(o.shape(1))} for an input of rank {len(x)}")
    if min(pads, default=0) < 0:
        raise _Invalid(f"negative paddings {pads}")
    return (tuple(d + pads[2 * i] + pads[2 * i + 1] for i, d in enumerate(x)),)


def _transpose(o: _Op) -> tuple[Expected, ...]:
    o.inputs(2)
    o.outputs(1)
    x = o.shape(0)
    perm = o.need_const(1, "permutation")
    if perm is None:
        if sorted(o.out_shape()) != sorted(x):
            raise _Invalid(f"output of shape {list(o.out_shape())} is no permutation of {list(x)}")
        return (None,)
    perm = [p + len(x) if p < 0 else p for p in perm]
    if sorted(perm) != list(range(len(x))):
        raise _Invalid(f"permutation {perm} for an input of rank {len(x)}")
    return (tuple(x[p] for p in perm),)


def _reduce(o: _Op) -> tuple[Expected, ...]:
    """MEAN, SUM, REDUCE_MAX: the axes of input 1 are dropped (kept as 1 with keep_dims)."""
    o.inputs(2)
    o.outputs(1)
    x = o.shape(0)
    axes = o.need_const(1, "axes")
    if axes is None:
        return (None,)
    reduced = {o.axis(a, max(len(x), 1), "reduction axis") for a in axes}
    if o.options.get("keep_dims", False):
        return (tuple(1 if i in reduced else d for i, d in enumerate(x)),)
    return (tuple(d for i, d in enumerate(x) if i not in reduced),)


def _arg_minmax(o: _Op) -> tuple[Expected, ...]:
    o.inputs(2)
    o.outputs(1)
    x = o.shape(0)
    # TFLite's Prepare retypes the output to the output_type option, whatever the tensor states.
    stated, option = o.tensors[o.op.outputs[0]].dtype, o.options.get("output_type")
    if stated != option:
        raise _Invalid(f"output tensor is {stated} but option output_type is {option}")
    axes = o.need_const(1, "axis")
    if axes is None:
        return (None,)
    if len(axes) != 1:
        raise _Invalid(f"axis (input 1) holds {len(axes)} values, expected 1")
    axis = o.axis(axes[0], len(x))
    return ((*x[:axis], *x[axis + 1 :]),)


def _gather(o: _Op) -> tuple[Expected, ...]:
    o.inputs(2)
    o.outputs(1)
    x, idx = o.shape(0), o.shape(1)
    batch_dims = o.int_option("batch_dims", 0, low=0)
    axis = o.axis(o.int_option("axis", 0, low=-INT32_MAX - 1), len(x))
    if batch_dims > min(axis, len(idx)):
        raise _Invalid(f"batch_dims {batch_dims} with axis {axis} and indices of rank {len(idx)}")
    indices = o.need_const(1, "indices")
    if indices is not None and any(not 0 <= i < x[axis] for i in indices):
        raise _Invalid(f"indices outside [0, {x[axis]}) for axis {axis} of {list(x)}")
    return ((*x[:axis], *idx[batch_dims:], *x[axis + 1 :]),)


def _slice(o: _Op) -> tuple[Expected, ...]:
    o.inputs(3)
    o.outputs(1)
    x = o.shape(0)
    begin, size = o.need_const(1, "begin"), o.need_const(2, "size")
    if begin is None or size is None:
        return (None,)
    if len(begin) != len(x) or len(size) != len(x):
        raise _Invalid(f"begin {begin} and size {size} for an input of rank {len(x)}")
    size = [d - b if s == -1 else s for d, b, s in zip(x, begin, size, strict=True)]
    if any(b < 0 or s < 0 or b + s > d for d, b, s in zip(x, begin, size, strict=True)):
        raise _Invalid(f"a slice at {begin} of size {size} outside an input of {list(x)}")
    return (tuple(size),)


def _strided_slice(o: _Op) -> tuple[Expected, ...]:
    o.inputs(4)
    o.outputs(1)
    x = o.shape(0)
    begin, end, strides = (o.need_const(k, what) for k, what in ((1, "begin"), (2, "end"), (3, "strides")))
    opts = o.options
    if begin is None or end is None or strides is None:
        return (None,)
    if opts.get("ellipsis_mask", 0) or opts.get("new_axis_mask", 0) or opts.get("offset", False):
        return (None,)  # not lowered by the generator, which refuses these masks
    if not len(begin) == len(end) == len(strides) <= len(x):
        raise _Invalid(f"begin {begin}, end {end}, strides {strides} for an input of rank {len(x)}")
    out: list[int] = []
    for axis, d in enumerate(x):
        if axis >= len(begin):
            out.append(d)
            continue
        b, e, s = begin[axis], end[axis], strides[axis]
        if s == 0:
            raise _Invalid(f"stride 0 on axis {axis}")
        if opts.get("shrink_axis_mask", 0) >> axis & 1:
            if not -d <= b < d:
                raise _Invalid(f"shrunk axis {axis} takes element {b} of {d}")
            if s < 0:  # TFLite stops a shrunk axis at begin + 1: a negative stride selects nothing
                raise _Invalid(f"shrunk axis {axis} has stride {s} (TFLite then writes no output)")
            continue
        start = None if opts.get("begin_mask", 0) >> axis & 1 else b
        stop = None if opts.get("end_mask", 0) >> axis & 1 else e
        out.append(len(range(*slice(start, stop, s).indices(d))))
    return (tuple(out),)


def _tile(o: _Op) -> tuple[Expected, ...]:
    o.inputs(2)
    o.outputs(1)
    x = o.shape(0)
    multiples = o.need_const(1, "multiples")
    if multiples is None:
        y = o.out_shape()
        if len(y) != len(x) or any(a == 0 or b % a for a, b in zip(x, y, strict=True)):
            raise _Invalid(f"output of shape {list(y)} is no tiling of {list(x)}")
        return (None,)
    if len(multiples) != len(x) or min(multiples, default=1) < 1:
        raise _Invalid(f"multiples {multiples} for an input of {list(x)}")
    return (tuple(d * m for d, m in zip(x, multiples, strict=True)),)


def _space_to_depth(o: _Op) -> tuple[Expected, ...]:
    o.inputs(1)
    o.outputs(1)
    n, h, w, c = o.shape(0, 4)
    b = o.int_option("block_size", 0)
    if h % b or w % b:
        raise _Invalid(f"block size {b} does not divide {h}x{w}")
    return ((n, h // b, w // b, c * b * b),)


def _depth_to_space(o: _Op) -> tuple[Expected, ...]:
    o.inputs(1)
    o.outputs(1)
    n, h, w, c = o.shape(0, 4)
    b = o.int_option("block_size", 0)
    if c % (b * b):
        raise _Invalid(f"block size {b} does not divide {c} channels into {b}x{b} blocks")
    return ((n, h * b, w * b, c // (b * b)),)


def _space_batch(o: _Op, to_batch: bool) -> tuple[Expected, ...]:
    o.inputs(3)
    o.outputs(1)
    x = o.shape(0)
    block, pads = o.need_const(1, "block_shape"), o.need_const(2, "paddings/crops")
    if block is None or pads is None or len(x) != 4:
        return (None,)  # the generator lowers the constant 4-D case only, and refuses the others
    n, h, w, c = x
    if len(block) != 2 or min(block) < 1 or len(pads) != 4 or min(pads) < 0:
        raise _Invalid(f"block {block} with paddings/crops {pads}")
    bh, bw = block
    if to_batch:
        ph, pw = h + pads[0] + pads[1], w + pads[2] + pads[3]
        if ph % bh or pw % bw:
            raise _Invalid(f"block {bh}x{bw} does not divide the padded {ph}x{pw}")
        return ((n * bh * bw, ph // bh, pw // bw, c),)
    if n % (bh * bw):
        raise _Invalid(f"block {bh}x{bw} does not divide a batch of {n}")
    oh, ow = h * bh - pads[0] - pads[1], w * bw - pads[2] - pads[3]
    if oh < 1 or ow < 1:
        raise _Invalid(f"crops {pads} leave nothing of {h * bh}x{w * bw}")
    return ((n // (bh * bw), oh, ow, c),)


def _resize(o: _Op) -> tuple[Expected, ...]:
    o.inputs(2)
    o.outputs(1)
    n, _, _, c = o.shape(0, 4)
    size = o.need_const(1, "size")
    if size is None:
        y = o.out_shape()
        if len(y) != 4 or (y[0], y[3]) != (n, c):
            raise _Invalid(f"output of shape {list(y)} for an input of batch {n} and {c} channels")
        return (None,)
    if len(size) != 2 or min(size) < 1:
        raise _Invalid(f"size {size}, expected two positive values")
    return ((n, size[0], size[1], c),)


def _svdf(o: _Op) -> tuple[Expected, ...]:
    o.inputs(5)
    o.outputs(1)
    batches, input_size = o.shape(0, 2)
    filters, feature_size = o.shape(1, 2)
    time_filters, memory = o.shape(2, 2)
    rank = o.int_option("rank", 1)
    if feature_size != input_size or time_filters != filters or filters % rank:
        raise _Invalid(
            f"weights {list(o.shape(1))} and {list(o.shape(2))} (rank {rank}) for an input of {input_size}"
        )
    units = filters // rank
    _bias(o, 3, units)
    if o.shape(4) != (batches, filters * memory):
        raise _Invalid(f"state of shape {list(o.shape(4))}, expected {[batches, filters * memory]}")
    return ((batches, units),)


def _lstm(o: _Op) -> tuple[Expected, ...]:
    """UNIDIRECTIONAL_SEQUENCE_LSTM: the input's dims with the last one the recurrent weights' width."""
    o.inputs(20, 24)
    o.outputs(1)
    x = o.shape(0, 3)
    n_cell, n_output = o.shape(8, 2)  # recurrent-to-output weights [n_cell, n_output]
    for k in (2, 3, 4):
        if o.shape(k) != (n_cell, x[2]):
            raise _Invalid(
                f"input weights (input {k}) of shape {list(o.shape(k))}, expected {[n_cell, x[2]]}"
            )
    for k in (5, 6, 7):
        if o.present(k) and o.shape(k) != (n_cell, n_output):
            raise _Invalid(f"recurrent weights (input {k}) of shape {list(o.shape(k))}")
    return ((x[0], x[1], n_output),)


INFER: dict[str, Callable[[_Op], tuple[Expected, ...]]] = {
    "CONV_2D": _conv_2d,
    "DEPTHWISE_CONV_2D": _depthwise_conv_2d,
    "TRANSPOSE_CONV": _transpose_conv,
    "FULLY_CONNECTED": _fully_connected,
    "AVERAGE_POOL_2D": _pool_2d,
    "MAX_POOL_2D": _pool_2d,
    "ADD": _broadcast,
    "SUB": _broadcast,
    "MUL": _broadcast,
    "MAXIMUM": _broadcast,
    "MINIMUM": _broadcast,
    "SQUARED_DIFFERENCE": _broadcast,
    "PRELU": _broadcast,
    "RELU": _same_as_input,
    "RELU6": _same_as_input,
    "RELU_N1_TO_1": _same_as_input,
    "LEAKY_RELU": _same_as_input,
    "HARD_SWISH": _same_as_input,
    "TANH": _same_as_input,
    "LOGISTIC": _same_as_input,
    "RSQRT": _same_as_input,
    "SOFTMAX": _same_as_input,
    "L2_NORMALIZATION": _same_as_input,
    "QUANTIZE": _same_as_input,
    "DEQUANTIZE": _same_as_input,
    "RESHAPE": _reshape,
    "SQUEEZE": _reshape,
    "EXPAND_DIMS": _reshape,
    "CONCATENATION": _concatenation,
    "PACK": _pack,
    "UNPACK": _unpack,
    "SPLIT": _split,
    "SPLIT_V": _split_v,
    "PAD": _pad,
    "PADV2": _pad,
    "TRANSPOSE": _transpose,
    "MEAN": _reduce,
    "SUM": _reduce,
    "REDUCE_MAX": _reduce,
    "ARG_MAX": _arg_minmax,
    "ARG_MIN": _arg_minmax,
    "GATHER": _gather,
    "SLICE": _slice,
    "STRIDED_SLICE": _strided_slice,
    "TILE": _tile,
    "SPACE_TO_DEPTH": _space_to_depth,
    "DEPTH_TO_SPACE": _depth_to_space,
    "SPACE_TO_BATCH_ND": lambda o: _space_batch(o, True),
    "BATCH_TO_SPACE_ND": lambda o: _space_batch(o, False),
    "RESIZE_NEAREST_NEIGHBOR": _resize,
    "RESIZE_BILINEAR": _resize,
    "SVDF": _svdf,
    "UNIDIRECTIONAL_SEQUENCE_LSTM": _lstm,
}


# ---- checking ------------------------------------------------------------------------------------


def _check_option_values(op: Operator) -> None:
    """Every numeric option of every operator: finite floats, integers within int32."""
    for key, value in op.options.items():
        values = value if isinstance(value, tuple) else (value,)
        for v in values:
            if isinstance(v, bool):
                continue
            if isinstance(v, float) and not math.isfinite(v):
                raise _Invalid(f"option {key} = {v!r} is not finite")
            if isinstance(v, int) and not -(2**31) <= v <= INT32_MAX:
                raise _Invalid(f"option {key} = {v} is outside int32")


# The kernels requantise with a Q31 multiplier and a left shift of at most 31 bits
# (`ts_fixedpoint.h`): a real rescaling factor of 2^31 or more has no valid parameters. Kernels with a
# narrower range (FULLY_CONNECTED: 30) are refused by codegen.kernel_checks.
MAX_RESCALE = 2.0**31
# Operators whose requantisation multiplier rescales a product (input x filter, or input x input).
PRODUCT_RESCALE_OPS = frozenset(
    {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "TRANSPOSE_CONV", "MUL", "BATCH_MATMUL", "SVDF"}
)


def _check_rescale(graph: Graph, op: Operator) -> None:
    """Every factor an operator can rescale by (one input scale, or the product of two, over an
    output scale) stays below MAX_RESCALE. Integer (int32/int64) operands such as biases carry
    derived scales and are left out."""

    def largest(index: int) -> float | None:
        t = graph.tensors[index]
        if t.quantization is None or t.dtype in ("int32", "int64"):
            return None
        return max(t.quantization.scale)

    ins = sorted((s, k) for k, t in enumerate(op.inputs) if t >= 0 and (s := largest(t)) is not None)
    outs = [(min(graph.tensors[t].quantization.scale), t) for t in op.outputs
            if largest(t) is not None]  # fmt: skip
    if not ins or not outs:
        return
    out_scale, out_tensor = min(outs)
    if op.opcode in PRODUCT_RESCALE_OPS and len(ins) > 1:
        # the accumulator holds products: one multiplier rescales by input x filter (or x other) scale
        factor = ins[-1][0] * ins[-2][0] / out_scale
        why = f"input {ins[-1][1]} scale {ins[-1][0]!r} x input {ins[-2][1]} scale {ins[-2][0]!r}"
    else:
        factor, why = ins[-1][0] / out_scale, f"input {ins[-1][1]} scale {ins[-1][0]!r}"
    if not factor < MAX_RESCALE:
        raise _Invalid(
            f"rescales by {factor:.3g} ({why} / output tensor {out_tensor} scale {out_scale!r}), "
            "at or over the 2^31 the kernels' fixed-point requantisation takes"
        )


def infer_output_shapes(
    graph: Graph,
    op: Operator,
    tensors: Sequence[Tensor] | None = None,
    values: Mapping[int, np.ndarray] | None = None,
) -> tuple[Expected, ...]:
    """What `op`'s inputs and options say about each of its outputs (see the module docstring),
    from the tensor records `tensors` (the graph's by default) and the computed `values`.

    Raises TinyschedError when an operand or option is out of range; () for unknown opcodes."""
    fn = INFER.get(op.opcode)
    try:
        _check_option_values(op)
        if fn is None:
            return ()
        _check_rescale(graph, op)
        return fn(_Op(graph, op, tensors, values))
    except _Invalid as why:
        raise TinyschedError(f"{_where(graph)}operator {op.index} ({op.opcode}) {why}") from None
    except (ArithmeticError, IndexError, KeyError, TypeError, ValueError) as why:  # one line, as promised
        raise TinyschedError(
            f"{_where(graph)}operator {op.index} ({op.opcode}) has unexpected operands or options "
            f"({type(why).__name__}: {why})"
        ) from None


def _where(graph: Graph) -> str:
    return f"{graph.source}: " if graph.source else ""


def _matches(expected: Expected, stated: Shape) -> bool:
    if expected is None:
        return True
    if isinstance(expected, Elements):
        return _elements(stated) == expected.count
    return len(expected) == len(stated) and all(
        e is None or e == s for e, s in zip(expected, stated, strict=True)
    )


def _settle(expected: Expected, stated: Shape, unknown: frozenset[int]) -> Shape | None:
    """The shape an output takes: the inferred one where the stated one differs from it only in
    dimensions the model marks `unknown` (placeholders, which TFLite's Prepare overwrites), else the
    stated one where it agrees with the inference; None where it does not."""
    exact = expected.shape if isinstance(expected, Elements) else expected
    if unknown and exact is not None and len(exact) == len(stated):
        settled = tuple(s if e is None else e for e, s in zip(exact, stated, strict=True))
        if all(e == s or i in unknown for i, (e, s) in enumerate(zip(settled, stated, strict=True))):
            return settled
    return stated if _matches(expected, stated) else None


def _show(expected: Expected) -> str:
    if isinstance(expected, Elements):
        return f"{expected.count} elements"
    assert expected is not None
    return "[" + ", ".join("?" if d is None else str(d) for d in expected) + "]"


# Tensors computed at compile time while shapes are inferred: unquantised integer vectors (shape
# arithmetic), so that a RESHAPE's shape input computed by SHAPE -> STRIDED_SLICE -> CONCATENATION
# is known when the RESHAPE is reached, the way TFLite's Prepare knows it.
_SHAPE_VALUE_TYPES = frozenset({"int32", "int64"})
_SHAPE_VALUE_ELEMENTS = 1 << 16


def _shape_values(tensors: Sequence[Tensor], op: Operator, known: dict[int, np.ndarray]) -> None:
    """Add `op`'s outputs to `known` when they are small unquantised integer tensors that fold.py
    computes from known values (SHAPE reads only its input's inferred shape)."""
    outs = [tensors[t] for t in op.outputs]
    small_integers = all(
        t.dtype in _SHAPE_VALUE_TYPES
        and t.quantization is None
        and _elements(t.shape) <= _SHAPE_VALUE_ELEMENTS
        for t in outs
    )
    if outs and small_integers and (result := evaluate_operator(tensors, op, known)) is not None:
        known.update(zip(op.outputs, result, strict=True))


_BITS = {"int4": 4, "bfloat16": 16}


def _resized(graph: Graph, op: Operator, k: int, t: Tensor, shape: Shape) -> Tensor:
    elements = _elements(shape)
    bits = _BITS.get(t.dtype) or np.dtype(t.dtype).itemsize * 8
    nbytes = (elements * bits + 7) // 8
    if elements > INT32_MAX or nbytes > INT32_MAX:
        raise TinyschedError(
            f"{_where(graph)}operator {op.index} ({op.opcode}) output {k} (tensor {t.index} {_name(t)}) "
            f"of shape {list(shape)} is {elements:,} elements ({nbytes:,} bytes), over int32"
        )
    return replace(t, shape=shape, nbytes=nbytes)


# A converter with a dynamic batch stores SPACE_TO_BATCH_ND's output and BATCH_TO_SPACE_ND's input
# with the placeholder batch 1 where TFLite's Prepare computes N x block; the checks let these pass,
# rewrite.py turns such a triple into one dilated convolution, and the code generator refuses an
# untouched one (its lowering checks the block, paddings and crops against the stated shapes).
BATCH_PLACEHOLDER_OPS = frozenset({"SPACE_TO_BATCH_ND", "BATCH_TO_SPACE_ND"})


def _settle_outputs(
    graph: Graph,
    op: Operator,
    tensors: list[Tensor],
    known: Mapping[int, np.ndarray],
    unknown: Mapping[int, frozenset[int]],
) -> bool:
    """Check `op`'s outputs in `tensors` against its inference and settle their shapes there (see
    `_settle`); True when one changed."""
    expected = infer_output_shapes(graph, op, tensors, known)
    if not expected:
        return False
    if len(expected) != len(op.outputs):
        raise TinyschedError(
            f"{_where(graph)}operator {op.index} ({op.opcode}) has {len(op.outputs)} outputs, "
            f"its inputs and options give {len(expected)}"
        )
    changed = False
    for k, (want, t) in enumerate(zip(expected, op.outputs, strict=True)):
        tensor = tensors[t]
        shape = _settle(want, tensor.shape, unknown.get(t, frozenset()))
        if shape is None:
            raise TinyschedError(
                f"{_where(graph)}operator {op.index} ({op.opcode}) output {k} (tensor {t} {_name(tensor)}) "
                f"has shape {list(tensor.shape)}, its inputs and options give {_show(want)}"
            )
        if shape != tensor.shape:
            tensors[t] = _resized(graph, op, k, tensor, shape)
            changed = True
    return changed


def infer_shapes(
    graph: Graph,
    unknown: Mapping[int, frozenset[int]] | None = None,
    *,
    batch_placeholders: bool = False,
) -> Graph:
    """Every operator's output shapes inferred from its inputs and options, in stored order, from
    the shapes inferred before it and the integer vectors computed from constants so far; one line
    on the first output whose stated shape the inference contradicts.

    `unknown` maps a tensor to the dimensions its shape_signature leaves open (-1): there the stated
    size is the converter's placeholder and TFLite's Prepare computes the real one, and so does this.
    The graph returned holds the inferred shapes (it is `graph` itself when every stated shape
    stood); each operator is checked against the inferred shapes of its inputs, so no kernel runs on
    a shape that was not checked."""
    tensors = list(graph.tensors)
    known: dict[int, np.ndarray] = {t.index: t.data for t in tensors if t.data is not None}
    changed = False
    for op in graph.operators:
        try:
            changed |= _settle_outputs(graph, op, tensors, known, unknown or {})
        except TinyschedError:
            if not (batch_placeholders and op.opcode in BATCH_PLACEHOLDER_OPS):
                raise
        _shape_values(tensors, op, known)
    return graph.derived(tensors, graph.operators) if changed else graph


def check_graph(graph: Graph, *, batch_placeholders: bool = False) -> None:
    """Every operator's outputs against its inputs and options, in stored order; one line on the first
    fault (`infer_shapes` with no placeholders). Run again, strictly, on the planned graph before
    code generation (`batch_placeholders`: see BATCH_PLACEHOLDER_OPS)."""
    infer_shapes(graph, batch_placeholders=batch_placeholders)
