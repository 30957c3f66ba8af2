"""The lowering of an expansion into its depthwise (tinysched.memory.expand): one ts_expand_dw_s8 call,
whose parameters nest the 1x1's and the depthwise's own (each lowered as it would be alone, without
the generator's tables: the kernel calls them on one group's channels and rows)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from tinysched.codegen.context import KernelCall, LoweringContext
from tinysched.codegen.errors import Unsupported
from tinysched.codegen.kernel_checks import check_call
from tinysched.codegen.lower_conv import lower_conv_2d, lower_depthwise_conv_2d
from tinysched.codegen.table import lowering
from tinysched.memory.expand import EXPAND_OPCODE, expansion_of
from tinysched.model.graph import Operator

# the fields of the parameters of ts_conv2d_s8 / ts_depthwise_conv2d_s8 the nested copies keep (their
# tables stay NULL: the kernel runs them on channel groups, which the whole layer's tables do not fit)
_PLAIN = {"quads", "stem", "blocks"}


def _nested(part: KernelCall) -> str:
    fields = ", ".join(f".{k} = {v}" for k, v in part.params if k not in _PLAIN)
    return "{ " + fields + " }"


def grouped_filter(filter_hwc: np.ndarray, group: int) -> np.ndarray:
    """A depthwise filter [1, fh, fw, C] laid out group by group: group g's [fh][fw][its channels]
    after the groups before it (ts_expand_dw_s8's depthwise_filter)."""
    taps = np.asarray(filter_hwc).reshape(-1, filter_hwc.shape[-1])  # [fh * fw, C]
    channels = taps.shape[1]
    return np.concatenate([taps[:, c : c + group].reshape(-1) for c in range(0, channels, group)])


@lowering(EXPAND_OPCODE, internal=True)
def lower_expand(ctx: LoweringContext, op: Operator, call: KernelCall) -> None:
    pair = expansion_of(op)
    if pair is None:
        raise Unsupported("a fused operator that records no expansion")
    # each half lowered alone, the expanded tensor given a place so its pointer can be written (the
    # nested parameters do not hold pointers to it)
    inner = replace(ctx.at_step({**ctx.offsets, pair.expanded: 0}), dsp_tables=False, whole_layers=False)
    halves = []
    for half, lower_half, suffix in (
        (pair.expand, lower_conv_2d, "expand"),
        (pair.depthwise, lower_depthwise_conv_2d, "depthwise"),
    ):
        part = KernelCall(op.index, call.step, half.opcode, "", "", [], [], label=f"{call.symbol}_{suffix}")
        lower_half(inner, half, part)
        check_call(part)
        if part.local_code or part.pre or part.kernel not in ("ts_conv2d_s8", "ts_depthwise_conv2d_s8"):
            raise Unsupported(f"the {half.opcode} of an expansion must be its plain kernel")
        call.local_arrays += part.local_arrays
        halves.append(part)
    expand, depthwise = halves
    fields = dict(depthwise.params)
    if fields["depth_multiplier"] != "1":
        raise Unsupported("an expansion's depthwise must have depth multiplier 1")
    filt = ctx.constant(pair.depthwise.inputs[1])
    grouped = ctx.array(
        call,
        "depthwise_filter",
        "int8_t",
        grouped_filter(filt, pair.group),
        f"the depthwise's filter by groups of {pair.group} channel(s): per group [filter_h][filter_w][channels]",
    )
    bias_e = pair.expand.inputs[2] if len(pair.expand.inputs) > 2 else -1
    bias_dw = pair.depthwise.inputs[2] if len(pair.depthwise.inputs) > 2 else -1
    call.kernel, call.params_type = "ts_expand_dw_s8", "ts_expand_dw_s8_params"
    call.params = [
        ("in_h", fields["in_h"]),
        ("out_h", fields["out_h"]),
        ("pad_top", fields["pad_top"]),
        ("stride_h", fields["stride_h"]),
        ("expand", _nested(expand)),
        ("depthwise", _nested(depthwise)),
        ("expand_filter", ctx.ptr(pair.expand.inputs[1])),
        ("expand_bias", ctx.ptr(bias_e) if bias_e >= 0 else "NULL"),
        ("depthwise_filter", grouped),
        ("depthwise_bias", ctx.ptr(bias_dw) if bias_dw >= 0 else "NULL"),
        ("group", str(pair.group)),
        # alone: group by group over the whole input, each row once; in a stage (called per row):
        # row by row, the rows each output row reads computed for it
        ("by_rows", "0" if ctx.whole_layers else "1"),
    ]
    scratch = op.outputs[1] if len(op.outputs) > 1 else -1
    at = f"(int8_t *)({ctx.place(ctx.offsets[scratch])})" if scratch >= 0 else "NULL"
    call.args = [ctx.ptr(op.inputs[0]), ctx.ptr(op.outputs[0], const=False), at]
    call.comment.append(
        f"1x1 expansion -> depthwise by groups of {pair.group} channel(s): the expanded "
        f"t{pair.expanded} {list(ctx.tensor(pair.expanded).shape)} is never whole (ts_kernels.h)"
    )
