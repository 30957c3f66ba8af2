"""Lowerings of the data-movement operators: copies, concatenation and splitting, padding, views,
GATHER and resizing.

RESHAPE, SQUEEZE and EXPAND_DIMS are byte copies, or nothing at all when the plan puts the output
at its input's offset (a view, in the refined memory model). Likewise a CONCATENATION whose inputs
the plan put at their slices of the output (built in place), and a split or a contiguous slice
whose outputs sit at their ranges of the input, call nothing: a comment says so. Data movement that is a strided view of the input
(TRANSPOSE, SLICE, STRIDED_SLICE, TILE, SPACE_TO_DEPTH, DEPTH_TO_SPACE, unpadded SPACE_TO_BATCH_ND /
uncropped BATCH_TO_SPACE_ND) runs on `ts_transpose`, given the view's dimensions, its input strides
and a start offset; PACK runs on `ts_concatenation`; SPLIT, SPLIT_V and UNPACK on `ts_split` (its
mirror image)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tinysched.codegen.cgen import C_TYPES, c_list
from tinysched.codegen.context import KernelCall, LoweringContext
from tinysched.codegen.errors import Unsupported
from tinysched.codegen.shapes import MAX_DIMS, dims_strides, pad_left, rank_axis
from tinysched.codegen.table import lowering
from tinysched.model.fold import NotFoldable, strided_slice_index
from tinysched.model.graph import Operator
from tinysched.model.resize import bilinear_float_map, bilinear_map, nearest_map
from tinysched.model.uint8 import UINT8_ROUNDING


@lowering("RESHAPE", "SQUEEZE", "EXPAND_DIMS")
def lower_copy(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    x, y = op.inputs[0], op.outputs[0]
    if ctx.tensor(x).nbytes != ctx.tensor(y).nbytes or ctx.tensor(x).dtype != ctx.tensor(y).dtype:
        raise Unsupported("input and output differ in type or size")
    if ctx.tensor(x).is_activation and ctx.offsets.get(x) == ctx.offsets.get(y):
        # a view (the refined memory model places it at its input's offset): no copy, no call
        call.comment.append("view: the output is the input's bytes, nothing to do")
        return
    call.kernel, call.params_type = "ts_copy", "ts_copy_params"
    call.params = [("bytes", str(ctx.tensor(x).nbytes))]
    call.args = [ctx.ptr(x), ctx.ptr(y, const=False)]


@lowering("CONCATENATION")
def lower_concatenation(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    y = op.outputs[0]
    ins = [t for t in op.inputs if t >= 0]
    out = ctx.tensor(y)
    if op.options.get("fused_activation_function", "NONE") != "NONE":
        raise Unsupported("a fused activation")
    for t in ins:
        if ctx.tensor(t).dtype != out.dtype:
            raise Unsupported("inputs of different types")
        if out.dtype in ("int8", "uint8") and ctx.quant(t) != ctx.quant(y):
            raise Unsupported("inputs quantised differently from the output")
    rank = len(out.shape)
    axis = int(op.options.get("axis", 0))
    axis = axis + rank if axis < 0 else axis
    itemsize = np.dtype(out.dtype).itemsize
    chunks = [math.prod(ctx.tensor(t).shape[axis:]) * itemsize for t in ins]
    outer = math.prod(out.shape[:axis])
    if outer == 1 and _at_ranges(ctx, y, ins, chunks):
        call.comment.append(
            "in place: each input's producer wrote its slice of the output "
            f"({len(ins)} slices at arena+{ctx.offsets[y]}), nothing to do"
        )
        return
    _concatenation_call(ctx, call, ins, y, outer, chunks)


def _at_ranges(ctx: LoweringContext, whole: int, parts: Sequence[int], sizes: Sequence[int]) -> bool:
    """Whether the plan put every activation in `parts` at `whole`'s offset plus the bytes of the
    parts before it (the refined memory model's in-place concatenation and split views): then the
    copy would move every byte onto itself."""
    if not ctx.tensor(whole).is_activation or whole not in ctx.offsets:
        return False
    at = ctx.offsets[whole]
    for t, size in zip(parts, sizes, strict=True):
        if not ctx.tensor(t).is_activation or ctx.offsets.get(t) != at:
            return False
        at += size
    return True


def _concatenation_call(
    ctx: LoweringContext, call: KernelCall, ins: list[int], y: int, outer: int, chunks: list[int]
) -> None:
    """`ts_concatenation` (CONCATENATION, PACK): `outer` times, each input's chunk of bytes in turn;
    the input pointers in a local array."""
    call.kernel, call.params_type = "ts_concatenation", "ts_concatenation_params"
    name = ctx.array(call, "chunk_bytes", "int32_t", chunks, "bytes of each input per outer slice")
    call.params = [
        ("num_inputs", str(len(ins))),
        ("outer", str(outer)),
        ("chunk_bytes", name),
    ]
    inputs_name = f"op{call.op}_inputs"
    call.pre = [
        f"const void *const {inputs_name}[{len(ins)}] = {{" + ", ".join(ctx.ptr(t) for t in ins) + "};"
    ]
    call.args = [inputs_name, ctx.ptr(y, const=False)]


@lowering("PACK")
def lower_pack(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    ins, y = [t for t in op.inputs if t >= 0], op.outputs[0]
    for t in ins:
        _same_bytes_quant(ctx, t, y)
    rank = len(ctx.tensor(ins[0]).shape)
    axis = rank_axis(op.options.get("axis", 0), rank + 1)
    itemsize = ctx.itemsize(y)
    chunks = [math.prod(ctx.tensor(t).shape[axis:]) * itemsize for t in ins]
    _concatenation_call(ctx, call, ins, y, math.prod(ctx.tensor(ins[0]).shape[:axis]), chunks)


def _split(ctx: LoweringContext, op: Operator, call: KernelCall, x: int, axis: int, keep_axis: bool) -> None:
    src = ctx.tensor(x)
    rank = len(src.shape)
    axis = rank_axis(axis, rank)
    if not 0 <= axis < rank:
        raise Unsupported(f"axis {axis} for rank {rank}")
    for y in op.outputs:
        _same_bytes_quant(ctx, x, y)
    itemsize = ctx.itemsize(x)
    inner = math.prod(src.shape[axis + 1 :]) * itemsize
    sizes = [ctx.tensor(y).shape[axis] if keep_axis else 1 for y in op.outputs]
    if sum(sizes) != src.shape[axis]:
        raise Unsupported(f"outputs of {sum(sizes)} along an axis of {src.shape[axis]}")
    chunks = [s * inner for s in sizes]
    if math.prod(src.shape[:axis]) == 1 and _at_ranges(ctx, x, op.outputs, chunks):
        call.comment.append(
            f"views: each output is its range of the input at arena+{ctx.offsets[x]}, nothing to do"
        )
        return
    call.kernel, call.params_type = "ts_split", "ts_split_params"
    name = ctx.array(call, "chunk_bytes", "int32_t", chunks, "bytes of each output per outer slice")
    call.params = [
        ("num_outputs", str(len(op.outputs))),
        ("outer", str(math.prod(src.shape[:axis]))),
        ("chunk_bytes", name),
    ]
    outputs_name = f"op{call.op}_outputs"
    call.pre = [
        f"void *const {outputs_name}[{len(op.outputs)}] = {{"
        + ", ".join(ctx.ptr(y, const=False) for y in op.outputs)
        + "};"
    ]
    call.args = [ctx.ptr(x), outputs_name]


@lowering("SPLIT")
def lower_split(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    axis = int(ctx.constant(op.inputs[0]).reshape(-1)[0])
    _split(ctx, op, call, op.inputs[1], axis, keep_axis=True)


@lowering("SPLIT_V")
def lower_split_v(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    axis = int(ctx.constant(op.inputs[2]).reshape(-1)[0])
    _split(ctx, op, call, op.inputs[0], axis, keep_axis=True)


@lowering("UNPACK")
def lower_unpack(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    _split(ctx, op, call, op.inputs[0], int(op.options.get("axis", 0)), keep_axis=False)


@lowering("PAD", "PADV2")
def lower_pad(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    call.kernel, call.params_type = "ts_pad_s8", "ts_pad_s8_params"
    x, y = op.inputs[0], op.outputs[0]
    ctx.expect(x, "int8")
    ctx.expect(y, "int8")
    pads = ctx.constant(op.inputs[1]).reshape(-1, 2).astype(np.int64)
    in_shape = ctx.tensor(x).shape
    _, zo = ctx.quant(y)
    if len(op.inputs) > 2 and op.inputs[2] >= 0:
        # pad.cc: PADV2 pads with its constant's int8 value, quantised as the output
        ctx.expect(op.inputs[2], "int8")
        if ctx.tensor(op.inputs[2]).quantization != ctx.tensor(y).quantization:
            raise Unsupported("constant value quantised unlike the output")
        values = ctx.constant(op.inputs[2]).reshape(-1)
        if values.size != 1:
            raise Unsupported(f"{values.size} constant values")
        zo = int(values[0])
    call.params = [
        ("in_dims", c_list(pad_left(in_shape, 1))),
        ("out_dims", c_list(pad_left(ctx.tensor(y).shape, 1))),
        ("pad_before", c_list(pad_left(pads[:, 0].tolist(), 0))),
        ("pad_value", str(zo)),
    ]
    if any(p < 0 for p in pads.reshape(-1).tolist()):
        raise Unsupported("negative padding")
    call.args = [ctx.ptr(x), ctx.ptr(y, const=False)]


@lowering("TRANSPOSE")
def lower_transpose(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    call.kernel, call.params_type = "ts_transpose", "ts_transpose_params"
    x, y = op.inputs[0], op.outputs[0]
    src = ctx.tensor(x)
    perm = [int(p) for p in ctx.constant(op.inputs[1]).reshape(-1)]
    rank = len(src.shape)
    perm = [p + rank if p < 0 else p for p in perm]
    if sorted(perm) != list(range(rank)):
        raise Unsupported(f"permutation {perm}")
    strides = dims_strides(src.shape)
    call.params = [
        ("out_dims", c_list(pad_left([src.shape[p] for p in perm], 1))),
        ("in_strides", c_list(pad_left([strides[p] for p in perm], 0))),
        ("element_bytes", str(np.dtype(src.dtype).itemsize if src.dtype in C_TYPES else 0)),
    ]
    ctx.ptr(x)  # checks the type
    call.args = [ctx.ptr(x), ctx.ptr(y, const=False)]


def _view_params(
    call: KernelCall, out_dims: Sequence[int], in_strides: Sequence[int], element_bytes: int
) -> None:
    call.kernel, call.params_type = "ts_transpose", "ts_transpose_params"
    if len(out_dims) > MAX_DIMS:
        raise Unsupported(f"a view of rank {len(out_dims)}")
    call.params = [
        ("out_dims", c_list(pad_left(list(out_dims), 1))),
        ("in_strides", c_list(pad_left(list(in_strides), 0))),
        ("element_bytes", str(element_bytes)),
    ]


def _offset_ptr(ctx: LoweringContext, index: int, offset: int) -> str:
    base = ctx.ptr(index)
    return base if offset == 0 else f"({base} + {offset})"


def _same_bytes_quant(ctx: LoweringContext, a: int, b: int) -> None:
    ta, tb = ctx.tensor(a), ctx.tensor(b)
    if ta.dtype != tb.dtype:
        raise Unsupported(f"{ta.dtype} input, {tb.dtype} output")
    if ta.dtype in ("int8", "uint8", "int16") and ta.quantization != tb.quantization:
        raise Unsupported("input and output quantised differently")


def _view(
    ctx: LoweringContext,
    op: Operator,
    call: KernelCall,
    dims: Sequence[int],
    strides: Sequence[int],
    start: int,
) -> None:
    """Output = the input's elements at start + sum_d i[d] * strides[d], over dims, in row-major order."""
    x, y = op.inputs[0], op.outputs[0]
    _same_bytes_quant(ctx, x, y)
    if math.prod(dims) != math.prod(ctx.tensor(y).shape):
        raise Unsupported(f"view of {math.prod(dims)} elements for an output of {list(ctx.tensor(y).shape)}")
    # Merge trailing unit dimensions away so that any rank up to 6 after merging is accepted.
    pairs = [(d, s) for d, s in zip(dims, strides, strict=True) if d != 1] or [(1, 0)]
    item = ctx.itemsize(x)
    if _consecutive(pairs) and _placed_at(ctx, y, x, start * item):
        call.comment.append(
            f"view: the output is bytes {start * item}.. of the input, already in place, nothing to do"
        )
        return
    _view_params(call, [d for d, _ in pairs], [s for _, s in pairs], ctx.itemsize(x))
    call.args = [_offset_ptr(ctx, x, start), ctx.ptr(y, const=False)]


def _consecutive(pairs: Sequence[tuple[int, int]]) -> bool:
    """Whether a view's (dimension, stride) pairs walk consecutive elements (one contiguous range)."""
    expected = 1
    for d, s in reversed(pairs):
        if s != expected and d != 1:
            return False
        expected *= d
    return True


def _placed_at(ctx: LoweringContext, y: int, x: int, offset: int) -> bool:
    """Whether the plan put activation `y` at activation `x`'s offset plus `offset` bytes."""
    tx, ty = ctx.tensor(x), ctx.tensor(y)
    if not (tx.is_activation and ty.is_activation) or x not in ctx.offsets or y not in ctx.offsets:
        return False
    return ctx.offsets[y] == ctx.offsets[x] + offset


@lowering("SLICE")
def lower_slice(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    shape = list(ctx.tensor(op.inputs[0]).shape)
    begin = [int(v) for v in ctx.constant(op.inputs[1]).reshape(-1)]
    size = [int(v) for v in ctx.constant(op.inputs[2]).reshape(-1)]
    if len(begin) != len(shape) or len(size) != len(shape):
        raise Unsupported("begin/size of another rank than the input")
    size = [d - b if s < 0 else s for d, b, s in zip(shape, begin, size, strict=True)]
    if any(b < 0 or s < 0 or b + s > d for d, b, s in zip(shape, begin, size, strict=True)):
        raise Unsupported("a slice outside the input")
    strides = dims_strides(shape)
    _view(ctx, op, call, size, strides, sum(b * st for b, st in zip(begin, strides, strict=True)))


@lowering("STRIDED_SLICE")
def lower_strided_slice(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    shape = list(ctx.tensor(op.inputs[0]).shape)
    begin, end, step = (ctx.constant(op.inputs[k]).reshape(-1).tolist() for k in (1, 2, 3))
    try:
        slices, _ = strided_slice_index(shape, begin, end, step, op.options)
    except NotFoldable:
        raise Unsupported("ellipsis/new-axis masks, offset, or a zero stride") from None
    strides = dims_strides(shape)
    dims, view_strides, start = [], [], 0
    for d, sl, st in zip(shape, slices, strides, strict=True):
        first, _, s = sl.indices(d)
        count = len(range(*sl.indices(d)))
        if count == 0:
            raise Unsupported("an empty slice")
        dims.append(count)
        view_strides.append(s * st)
        start += first * st
    _view(ctx, op, call, dims, view_strides, start)


@lowering("TILE")
def lower_tile(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    shape = list(ctx.tensor(op.inputs[0]).shape)
    multiples = [int(v) for v in ctx.constant(op.inputs[1]).reshape(-1)]
    if len(multiples) != len(shape) or any(m < 1 for m in multiples):
        raise Unsupported(f"multiples {multiples}")
    strides = dims_strides(shape)
    dims, view_strides = [], []
    for d, m, st in zip(shape, multiples, strides, strict=True):
        if m > 1:
            dims.append(m)
            view_strides.append(0)
        dims.append(d)
        view_strides.append(st)
    _view(ctx, op, call, dims, view_strides, 0)


@lowering("SPACE_TO_DEPTH")
def lower_space_to_depth(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    n, h, w, c = ctx.nhwc(op.inputs[0])
    b = int(op.options.get("block_size", 0))
    if b < 1 or h % b or w % b:
        raise Unsupported(f"block size {b} for {h}x{w}")
    # out[n][oh][ow][(by * b + bx) * c + k] = in[n][oh * b + by][ow * b + bx][k]
    dims = [n, h // b, w // b, b, b, c]
    _view(ctx, op, call, dims, [h * w * c, b * w * c, b * c, w * c, c, 1], 0)


@lowering("DEPTH_TO_SPACE")
def lower_depth_to_space(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    n, h, w, cin = ctx.nhwc(op.inputs[0])
    b = int(op.options.get("block_size", 0))
    if b < 1 or cin % (b * b):
        raise Unsupported(f"block size {b} for {cin} channels")
    c = cin // (b * b)
    # out[n][h * b + by][w * b + bx][k] = in[n][h][w][(by * b + bx) * c + k]
    dims = [n, h, b, w, b, c]
    _view(ctx, op, call, dims, [h * w * cin, w * cin, b * c, cin, c, 1], 0)


def _block(ctx: LoweringContext, op: Operator) -> tuple[int, int, list[int]]:
    block = [int(v) for v in ctx.constant(op.inputs[1]).reshape(-1)]
    pads = [int(v) for v in ctx.constant(op.inputs[2]).reshape(-1)]
    if len(block) != 2:
        raise Unsupported("block shape of other than 2 spatial dimensions")
    return block[0], block[1], pads


def _space_batch(ctx: LoweringContext, op: Operator, call: KernelCall, to_batch: bool) -> None:
    x, y = op.inputs[0], op.outputs[0]
    _same_bytes_quant(ctx, x, y)
    nb, h, w, c = ctx.nhwc(x)
    ob, oh, ow, _ = ctx.nhwc(y)
    bh, bw, pads = _block(ctx, op)
    if len(pads) != 4 or min(pads) < 0 or bh < 1 or bw < 1:
        raise Unsupported(f"block {bh}x{bw} with paddings/crops {pads}")
    if to_batch:
        ok = ob == nb * bh * bw and (h + pads[0] + pads[1]) == oh * bh and (w + pads[2] + pads[3]) == ow * bw
    else:
        ok = nb == ob * bh * bw and h * bh - pads[0] - pads[1] == oh and w * bw - pads[2] - pads[3] == ow
    if not ok:
        raise Unsupported("output shape does not match the block and paddings/crops")
    itemsize = ctx.itemsize(x)
    if not any(pads):  # a pure view: the general strided copy does it
        if to_batch:
            dims = [bh, bw, nb, oh, ow, c]
            _view(ctx, op, call, dims, [w * c, c, h * w * c, bh * w * c, bw * c, 1], 0)
        else:
            hwc = h * w * c
            _view(ctx, op, call, [ob, h, bh, w, bw, c], [hwc, w * c, bw * ob * hwc, c, ob * hwc, 1], 0)
        return
    zero = ctx.quant(y)[1] & 0xFF if ctx.tensor(y).dtype in ("int8", "uint8") else 0
    call.kernel, call.params_type = "ts_space_batch_nd", "ts_space_batch_nd_params"
    params = [
        ("to_batch", int(to_batch)), ("in_batches", nb), ("in_h", h), ("in_w", w), ("out_batches", ob),
        ("out_h", oh), ("out_w", ow), ("block_h", bh), ("block_w", bw), ("offset_top", pads[0]),
        ("offset_left", pads[2]), ("pixel_bytes", c * itemsize), ("pad_value", zero),
    ]  # fmt: skip
    call.params = [(k, str(v)) for k, v in params]
    call.args = [ctx.ptr(x), ctx.ptr(y, const=False)]


@lowering("SPACE_TO_BATCH_ND")
def lower_space_to_batch_nd(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    _space_batch(ctx, op, call, to_batch=True)


@lowering("BATCH_TO_SPACE_ND")
def lower_batch_to_space_nd(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    _space_batch(ctx, op, call, to_batch=False)


@lowering("GATHER")
def lower_gather(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    x, idx, y = op.inputs[0], op.inputs[1], op.outputs[0]
    _same_bytes_quant(ctx, x, y)
    ctx.expect(idx, "int32", "int64")
    if int(op.options.get("batch_dims", 0) or 0):
        raise Unsupported("batch_dims")
    shape = list(ctx.tensor(x).shape)
    axis = rank_axis(int(op.options.get("axis", 0)), len(shape))
    if not 0 <= axis < len(shape):
        raise Unsupported(f"axis {axis} for rank {len(shape)}")
    if ctx.tensor(idx).is_constant:  # ts_gather.c refuses an index outside the axis at run time
        indices = ctx.constant(idx).astype(np.int64).reshape(-1)
        if indices.size and (indices.min() < 0 or indices.max() >= shape[axis]):
            raise Unsupported(
                f"constant index {int(indices.min()) if indices.min() < 0 else int(indices.max())}"
                f" outside an axis of {shape[axis]}"
            )
    call.kernel, call.params_type = "ts_gather", "ts_gather_params"
    call.params = [
        ("outer", str(math.prod(shape[:axis]))),
        ("axis_size", str(shape[axis])),
        ("inner_bytes", str(math.prod(shape[axis + 1 :]) * ctx.itemsize(x))),
        ("num_indices", str(math.prod(ctx.tensor(idx).shape))),
        ("indices_are_int64", "1" if ctx.tensor(idx).dtype == "int64" else "0"),
    ]
    call.args = [ctx.ptr(x), ctx.ptr(idx), ctx.ptr(y, const=False)]


def _resize_shapes(
    ctx: LoweringContext, op: Operator
) -> tuple[tuple[int, int, int, int], tuple[int, int, int, int]]:
    (n, ih, iw, c), (n2, oh, ow, c2) = ctx.nhwc(op.inputs[0]), ctx.nhwc(op.outputs[0])
    if (n, c) != (n2, c2):
        raise Unsupported("batch or channels change")
    return (n, ih, iw, c), (n2, oh, ow, c2)


@lowering("RESIZE_NEAREST_NEIGHBOR")
def lower_resize_nearest_neighbor(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    x, y = op.inputs[0], op.outputs[0]
    _same_bytes_quant(ctx, x, y)
    (n, ih, iw, c), (_, oh, ow, _) = _resize_shapes(ctx, op)
    align = bool(op.options.get("align_corners", False))
    half = bool(op.options.get("half_pixel_centers", False))
    ymap = ctx.array(call, "y_map", "int32_t", nearest_map(ih, oh, align, half), "source row of each row")
    xmap = ctx.array(
        call, "x_map", "int32_t", nearest_map(iw, ow, align, half), "source column of each column"
    )
    call.kernel, call.params_type = "ts_resize_nearest", "ts_resize_nearest_params"
    call.params = [
        ("batches", str(n)),
        ("in_h", str(ih)),
        ("in_w", str(iw)),
        ("out_h", str(oh)),
        ("out_w", str(ow)),
        ("pixel_bytes", str(c * ctx.itemsize(x))),
        ("y_map", ymap),
        ("x_map", xmap),
    ]
    call.args = [ctx.ptr(x), ctx.ptr(y, const=False)]


@lowering("RESIZE_BILINEAR")
def lower_resize_bilinear(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    x, y = op.inputs[0], op.outputs[0]
    ctx.expect(x, "int8")
    ctx.expect(y, "int8")
    if ctx.quant(x) != ctx.quant(y):
        raise Unsupported("input and output quantised differently")
    (n, ih, iw, c), (_, oh, ow, _) = _resize_shapes(ctx, op)
    align = bool(op.options.get("align_corners", False))
    half = bool(op.options.get("half_pixel_centers", False))
    if align and half:
        raise Unsupported("align_corners together with half_pixel_centers")
    params = [("batches", n), ("in_h", ih), ("in_w", iw), ("channels", c), ("out_h", oh), ("out_w", ow)]
    call.params = [(k, str(v)) for k, v in params]
    call.args = [ctx.ptr(x), ctx.ptr(y, const=False)]
    if op.options.get(UINT8_ROUNDING):  # a legacy uint8 model's resize: TFLite's float version
        call.kernel, call.params_type = "ts_resize_bilinear_float_s8", "ts_resize_bilinear_float_s8_params"
        for axis, (size_in, size_out) in (("y", (ih, oh)), ("x", (iw, ow))):
            lo, hi, frac = bilinear_float_map(size_in, size_out, align, half)
            call.params += [
                (f"{axis}0", ctx.array(call, f"{axis}0", "int32_t", lo, "first source index")),
                (f"{axis}1", ctx.array(call, f"{axis}1", "int32_t", hi, "second source index")),
                (
                    f"d{axis}",
                    ctx.array(call, f"d{axis}", "float", frac, "source coordinate - first, float32"),
                ),
            ]
        return
    for axis, (size_in, size_out) in (("y", (ih, oh)), ("x", (iw, ow))):
        lo, hi, weight = bilinear_map(size_in, size_out, align, half)
        call.params.append((f"{axis}0", ctx.array(call, f"{axis}0", "int32_t", lo, "first source index")))
        call.params.append((f"{axis}1", ctx.array(call, f"{axis}1", "int32_t", hi, "second source index")))
        call.params.append(
            (f"w{axis}", ctx.array(call, f"w{axis}", "int32_t", weight, "weight of the second, /1024"))
        )
    order = ["batches", "in_h", "in_w", "channels", "out_h", "out_w", "y0", "y1", "wy", "x0", "x1", "wx"]
    call.params.sort(key=lambda kv: order.index(kv[0]))
    call.kernel, call.params_type = "ts_resize_bilinear_s8", "ts_resize_bilinear_s8_params"
    call.args = [ctx.ptr(x), ctx.ptr(y, const=False)]
