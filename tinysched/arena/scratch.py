"""Scratch for faster kernels, only where the arena has room for it at that step.

The widened CONV_2D kernel (``wide`` variant, `ts_conv2d_s8_wide` in firmware/include/ts_kernels.h)
needs a strip of int16 receptive fields: `blocks` * 4 * roundup(K, 4) * 2 bytes for K = fh * fw * in_c.
After the arena is placed, each CONV_2D operator that runs the default kernel gets the variant with
the largest strip (up to `WIDE_MAX_BLOCKS` blocks, at most `WIDE_STRIP_BYTES` unless one block is
more) that fits in a gap of the placed arena at its own step (bytes no tensor live at that step
occupies, below the high-water) and keeps that step's aligned live bytes within the plan's lower
bound and its live bytes below the peak (so the bound, the peak and its step, the certificate and
the optimality claims stay exactly as they were). The scratch is then a tensor of the plan (an unread output of that operator, live at its
step only) at that gap's offset, so the arena does not grow, `check.check_plan` verifies it like
any other tensor, and the painted high-water measures it. An operator at a step with no such gap
keeps the default kernel (whose own fast paths may still use the unwritten part of its output).
Only in the refined memory model: the tensor model is the one `--tflm` hands to stock TFLM.
The variant's read/write order allows every overlap the default kernel's does (its D is the
default's), so the placement stays valid.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from tinysched.arena.placement import (
    ArenaPlan,
    Placement,
    align_up,
    aligned_lower_bound,
    arena_buffers,
    step_savings,
)
from tinysched.memory.overlap import memory_model
from tinysched.memory.stream import stream_of
from tinysched.memory.tensor import profile
from tinysched.memory.variants import KernelVariant, scratch_bytes, variant_of, with_scratch, with_variants
from tinysched.model.graph import Graph, Operator
from tinysched.model.uint8 import own_kernel_only

__all__ = [
    "STREAM_STRIP_OPTION",
    "KeepDefault",
    "WIDE_MAX_BLOCKS",
    "WIDE_STRIP_BYTES",
    "member_strip",
    "stage_member_wide",
    "stage_strip",
    "strip_blocks",
    "wide_eligible",
    "wide_worth",
    "with_wide_scratch",
]

WIDE_MAX_BLOCKS = 8  # TS_WIDE_STRIP in firmware/kernels/ts_conv2d_s8.c
WIDE_STRIP_BYTES = 1024  # TS_WIDE_STRIP_BYTES there
WIDE_BLOCK_PIXELS = 6  # TS_WIDE_PX there


STREAM_STRIP_OPTION = "stream_strip"  # a streamed stage's option: bytes of its strip tensor (its last output)


# (graph, operator) -> whether its default kernel runs it faster than the ``wide`` one would (the
# code generator's own choice, passed down by the pipeline): such operators get no strip scratch
KeepDefault = Callable[[Graph, Operator], bool]


def strip_blocks(graph: Graph, member: Operator) -> tuple[int, int]:
    """(bytes of one block of the widened path's strip, the most blocks a strip takes) for a
    CONV_2D (WIDE_MAX_BLOCKS, at most WIDE_STRIP_BYTES unless one block is more)."""
    block = scratch_bytes(graph, member, "wide", 1)
    return block, max(1, min(WIDE_MAX_BLOCKS, WIDE_STRIP_BYTES // block))


def stage_member_wide(graph: Graph, member: Operator) -> bool:
    """Whether a streamed stage's member runs the ``wide`` kernel on its rows given a strip: a
    CONV_2D whose output row fills a block of pixels at least (HAR's rows of 2 pixels, a block of 6
    computing 2 more, measured 0.75 M instructions dearer than the default kernel's small-field path)."""
    y = graph.tensors[member.outputs[0]]
    return (
        _wants_wide(graph, member, any_kernel=True, rows=True)
        and len(y.shape) == 4
        and int(y.shape[2]) >= WIDE_BLOCK_PIXELS
    )


def _stage_convs(graph: Graph, op: Operator, keep_default: KeepDefault | None = None) -> list[Operator]:
    """The CONV_2D members of a streamed stage that could run the ``wide`` kernel on their rows."""
    stream = stream_of(op)
    if stream is None:
        return []
    return [
        m
        for m in stream.operators
        if stage_member_wide(graph, m) and (keep_default is None or not keep_default(graph, m))
    ]


PAIR_STACK_K4 = 144  # TS_PAIR_K4 in firmware/kernels/ts_conv2d_s8.c: the pair path's fields on the stack


def pair_strip_bytes(graph: Graph, member: Operator) -> int:
    """Scratch for the pair path's two widened fields (`ts_conv2d_s8_strip`: 4 * roundup(K, 4) bytes)
    where they exceed its stack block and its runs are whole words (fw * in_c a multiple of 4); 0:
    the stack holds them, or the path does not take the member."""
    w = graph.tensors[member.inputs[1]]
    fh, fw, in_c = (int(d) for d in w.shape[1:])
    k4 = (fh * fw * in_c + 3) // 4 * 4
    dilated = int(member.options.get("dilation_wfactor", 1) or 1) != 1
    return 4 * k4 if k4 > PAIR_STACK_K4 and (fw * in_c) % 4 == 0 and not dilated else 0


QUAD_BLOCK_PIXELS = 4  # TS_QUAD_PX in firmware/kernels/ts_conv2d_s8.c


def quad_strip_bytes(graph: Graph, member: Operator) -> int:
    """Bytes of one quad block (`ts_conv2d_s8_strip` where no six-pixel block fits: 4 pixels of
    widened fields, 8 * K bytes) for a member whose fields are whole words of its input (in_c a
    multiple of 4, no column dilation); 0: the quad path does not take it."""
    w = graph.tensors[member.inputs[1]]
    fh, fw, in_c = (int(d) for d in w.shape[1:])
    dilated = int(member.options.get("dilation_wfactor", 1) or 1) != 1
    return 2 * QUAD_BLOCK_PIXELS * fh * fw * in_c if in_c % 4 == 0 and not dilated else 0


def member_strip(graph: Graph, member: Operator, room: int) -> int:
    """Bytes of `room` a stage's CONV_2D member's planned strip takes (`ts_conv2d_s8_strip`, which
    uses whatever room it is given): the most wide blocks that fit (`strip_blocks`), else the most
    quad blocks, else the pair path's fields, else 0 (no path takes any)."""
    block, most = strip_blocks(graph, member)
    if block <= room:
        return min(most, room // block) * block
    quad = quad_strip_bytes(graph, member)
    if 0 < quad <= room:
        return min(WIDE_MAX_BLOCKS, room // quad) * quad
    pair = pair_strip_bytes(graph, member)
    return pair if 0 < pair <= room else 0


def stage_strip(graph: Graph, op: Operator, room: int, keep_default: KeepDefault | None = None) -> int:
    """Bytes of the strip scratch a streamed stage's CONV_2D members share (they run one at a time)
    within `room` bytes: the most any member uses (`member_strip`; 0: none fits)."""
    return max((member_strip(graph, m, room) for m in _stage_convs(graph, op, keep_default)), default=0)


def wide_worth(pixels: int) -> bool:
    """`wide_worth` of ts_conv2d_s8.c: the blocks (a short last one computes all six pixels) hold at
    most 1.6 slots per output pixel (not for 1, 2, 3 or 7 pixels)."""
    slots = -(-pixels // WIDE_BLOCK_PIXELS) * WIDE_BLOCK_PIXELS
    return pixels > 0 and 10 * slots <= 16 * pixels


def wide_eligible(graph: Graph, op: Operator) -> bool:
    """Whether `op` could run the ``wide`` kernel given its scratch (an int8 CONV_2D with constant
    filters and enough output pixels), whatever it runs now."""
    return _wants_wide(graph, op, any_kernel=True)


def _wants_wide(graph: Graph, op: Operator, any_kernel: bool = False, rows: bool = False) -> bool:
    """(`rows`: the operator runs row by row in a stage, so per call its output's one row is what
    `wide_worth` judges.)"""
    if op.opcode != "CONV_2D" or (variant_of(graph, op) is not None and not any_kernel) or len(op.inputs) < 2:
        return False
    if own_kernel_only(graph, op):
        return False  # a filter offset: the plain kernel of a legacy uint8 model only
    x, w, y = (graph.tensors[t] for t in (op.inputs[0], op.inputs[1], op.outputs[0]))
    pixels = int(y.shape[1] if not rows else 1) * int(y.shape[2]) if len(y.shape) == 4 else 0
    return (
        x.dtype == w.dtype == y.dtype == "int8" and len(w.shape) == 4 and w.is_constant and wide_worth(pixels)
    )


def _gaps(arena: ArenaPlan, step: int, ceiling: int | None = None) -> list[tuple[int, int]]:
    """Free [start, end) byte ranges of the arena at `step` (aligned starts), below its high-water
    (so that does not move either; with `ceiling`, below that instead) and, in a split arena, inside
    one region each."""
    used = sorted(
        (p.offset, p.offset + align_up(p.bytes, arena.alignment))
        for p in arena.buffers
        if p.first_step <= step <= p.last_step and p.bytes > 0
    )
    top = max((p.offset + p.bytes for p in arena.buffers), default=0)
    if ceiling is not None and not arena.pools:
        top = max(top, ceiling)
    regions = [(q.base, min(q.base + q.bytes, top)) for q in arena.pools] or [
        (0, top if ceiling is not None else min(arena.arena_bytes, top))
    ]
    gaps = []
    for base, end in regions:
        at = base
        for lo, hi in used:
            if lo > at:
                gaps.append((at, min(lo, end)))
            at = max(at, hi)
        gaps.append((at, end))
    return [(a, hi) for lo, hi in gaps if (a := align_up(lo, arena.alignment)) < hi]


def _step_live(graph: Graph, arena: ArenaPlan) -> tuple[list[int], list[int]]:
    """Aligned live bytes per step (as `arena.aligned_lower_bound` counts them) and the memory
    model's own (unaligned): a scratch that keeps its step within the plan's lower bound and below
    its peak leaves the bound, the peak and its step, and so the certificate's and the arena's
    optimality statements, as they are."""
    order = tuple(arena.order)
    model = memory_model(graph, arena.memory_model)
    refined = model if model.refined else None
    live = [0] * (len(order) + 1)
    for b in arena_buffers(graph, order, arena.alignment, refined):
        for step in range(b.first_step, b.last_step + 1):
            live[step] += b.aligned_bytes
    for step, (_, _, saved) in step_savings(refined, order, arena.alignment).items():
        live[step] -= saved
    plain = [s.live_bytes for s in profile(graph, order, refined).steps]
    return live, plain


def _best_fit(
    graph: Graph, op: Operator, gaps: list[tuple[int, int]], capped: bool
) -> tuple[int, int, int] | None:
    """(blocks, bytes, offset) of the largest strip that fits a gap (the smallest such gap): up to
    WIDE_MAX_BLOCKS blocks and no more than the layer's pixels fill; `capped` (bytes that may grow
    the arena), at most WIDE_STRIP_BYTES unless one block is more. More blocks a strip pay each
    channel's set-up (bias, requantisation, filter pointer) once for more pixels."""
    one = scratch_bytes(graph, op, "wide", 1)
    y = graph.tensors[op.outputs[0]]
    pixels = int(y.shape[1]) * int(y.shape[2]) if len(y.shape) == 4 else WIDE_MAX_BLOCKS * WIDE_BLOCK_PIXELS
    most = min(WIDE_MAX_BLOCKS, -(-pixels // WIDE_BLOCK_PIXELS))
    most = max(1, min(most, WIDE_STRIP_BYTES // one) if capped else most)
    for blocks in range(most, 0, -1):
        need = blocks * one
        fits = [(hi - lo, lo) for lo, hi in gaps if hi - lo >= need]
        if fits:
            return blocks, need, min(fits)[1]
    return None


def with_wide_scratch(
    graph: Graph, arena: ArenaPlan, ceiling: int | None = None, keep_default: KeepDefault | None = None
) -> tuple[Graph, ArenaPlan]:
    """`graph` and `arena` with the ``wide`` CONV_2D variant on every operator whose strip scratch
    fits in a gap of the arena at its step, the scratch placed there; unchanged when none fits or
    the plan runs operators more than once or is in the tensor memory model (the model `--tflm`
    writes for stock TFLM, whose tensors are the model's own).

    With `ceiling` (`--arena-budget`: bytes the arena may grow to), a strip may also take bytes above
    the high-water up to the ceiling and raise its step above the lower bound: the arena grows (to
    at most `ceiling`) and is then no longer claimed optimal, its bound the widened graph's.

    `keep_default` names the operators (and stage members) to leave on their default kernel."""
    order = tuple(arena.order)
    if len(set(order)) != len(order) or arena.memory_model == "tensor":
        return graph, arena
    live, plain = _step_live(graph, arena)
    chosen: dict[int, tuple[KernelVariant, int]] = {}
    strips: dict[int, tuple[int, int]] = {}  # streamed stage -> (strip bytes, offset)
    for step, v in enumerate(order):
        op = graph.operators[v]
        stage = bool(_stage_convs(graph, op, keep_default)) and not arena.pools  # the strip beside the output
        keep = keep_default is not None and keep_default(graph, op)
        if (keep or not _wants_wide(graph, op)) and not stage:
            continue
        # below the peak (strictly: the peak step the reports name stays the same one)
        most = free = min(arena.lower_bound_bytes - live[step], arena.peak_bytes - 1 - plain[step])
        if ceiling is not None and not arena.pools:
            most = ceiling
        room = [(lo, min(hi, lo + most)) for lo, hi in _gaps(arena, step, ceiling)]
        if stage:  # in the bytes free at its step only: the estimate does not see a stage's strip
            room = [(lo, min(hi, lo + free)) for lo, hi in _gaps(arena, step)]
            widest = max(((hi - lo, lo) for lo, hi in room if hi > lo), default=(0, 0))
            need = stage_strip(graph, op, widest[0], keep_default)
            if need:
                strips[v] = (need, widest[1])
            continue
        fit = _best_fit(graph, op, [(lo, hi) for lo, hi in room if hi > lo], ceiling is not None)
        if fit is not None:
            blocks, need, offset = fit
            y = graph.tensors[op.outputs[0]]
            chosen[v] = (KernelVariant(op.opcode, "wide", blocks, need, int(y.shape[-1])), offset)
    if not chosen and not strips:
        return graph, arena
    base = len(graph.tensors)
    widened = with_scratch(
        with_variants(graph, {v: c[0] for v, c in chosen.items()}),
        {v: c[0].scratch_bytes for v, c in chosen.items()},
    )
    steps = {v: s for s, v in enumerate(order)}
    added = tuple(
        Placement(base + i, widened.tensors[base + i].name, offset, variant.scratch_bytes, steps[v], steps[v])
        for i, (v, (variant, offset)) in enumerate(sorted(chosen.items()))
    )
    if strips:  # each stage's strip: its last output, its bytes in the stage's options
        first = len(widened.tensors)
        operators = list(widened.operators)
        for v, (need, _) in strips.items():
            operators[v] = replace(operators[v], options={**operators[v].options, STREAM_STRIP_OPTION: need})
        widened = with_scratch(
            widened.derived(widened.tensors, tuple(operators)), {v: c[0] for v, c in strips.items()}, "strip"
        )
        added += tuple(
            Placement(first + i, widened.tensors[first + i].name, offset, need, steps[v], steps[v])
            for i, (v, (need, offset)) in enumerate(sorted(strips.items()))
        )
    model = memory_model(widened, arena.memory_model)
    refined = model if model.refined else None
    bound = aligned_lower_bound(
        arena_buffers(widened, order, arena.alignment, refined), step_savings(refined, order, arena.alignment)
    )
    pools = tuple(
        replace(q, tensors=q.tensors + sum(q.base <= p.offset < q.base + q.bytes for p in added))
        for q in arena.pools
    )
    grown = max([arena.arena_bytes, *(align_up(p.offset + p.bytes, arena.alignment) for p in added)])
    if grown == arena.arena_bytes:
        return widened, replace(arena, buffers=arena.buffers + added, lower_bound_bytes=bound, pools=pools)
    peak = max(s.live_bytes for s in profile(widened, order, refined).steps)
    return widened, replace(
        arena,
        buffers=arena.buffers + added,
        lower_bound_bytes=bound,
        pools=pools,
        arena_bytes=grown,
        optimal=grown <= bound,
        peak_bytes=max(arena.peak_bytes, peak),
        method=f"{arena.method}+wide scratch",
    )
