"""Which operators run an in-place kernel variant (tinysched.memory.variants): chosen once, at plan time.

The rule is local and deterministic: in the refined memory model, with preference "memory", an
operator runs its ``staged`` variant when the bytes its step then saves by overlapping its dying
input, less the variant's scratch, beat what the default kernel's overlap saves there. The tensor
model and preference "speed" keep every default kernel (today's sources, byte for byte).

`select_variants(graph, memory_model, prefer, alignment)` is the one entry point (the pipeline
calls it before adding scratch tensors); `--prefer speed|memory` maps onto `prefer`.
"""

from __future__ import annotations

from tinysched.memory.overlap import memory_model as build_model
from tinysched.memory.overlap import variant_shift
from tinysched.memory.variants import KernelVariant, scratch_bytes, with_variants
from tinysched.model.graph import Graph, Operator
from tinysched.model.uint8 import own_kernel_only

__all__ = [
    "DEFAULT_PREFERENCE",
    "PREFERENCES",
    "candidate",
    "select_variants",
    "step_gains",
    "unneeded_variants",
]

PREFERENCES = ("memory", "speed")
DEFAULT_PREFERENCE = "memory"
# Pointwise chunk: the most pixels (even, 2 to 16: the default kernel's 16) whose scratch is at most
# this share of the output tensor; small chunks cost instructions (per chunk, per channel pair).
POINTWISE_SCRATCH_SHARE = 20


def _round_up(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


def _conv_candidate(graph: Graph, op: Operator) -> KernelVariant | None:
    y = graph.tensors[op.outputs[0]]
    if len(y.shape) != 4:
        return None
    channels = max(int(y.shape[-1]), 1)
    chunk = max(2, min(16, (y.nbytes // POINTWISE_SCRATCH_SHARE // channels) // 2 * 2))
    if variant_shift(graph, op, "staged", chunk) is None:
        return None
    return KernelVariant(op.opcode, "staged", chunk, scratch_bytes(graph, op, "staged", chunk))


def _depthwise_candidate(graph: Graph, op: Operator) -> KernelVariant | None:
    """The smallest lag whose D lets the smaller of input and output lie wholly inside the other
    (D >= 0, or D >= input - output bytes for a larger output): the output then sits over its
    input, so chains do not drift."""
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if len(y.shape) != 4:
        return None
    target = min(0, x.nbytes - y.nbytes)
    pixels = y.shape[0] * y.shape[1] * y.shape[2]
    top = variant_shift(graph, op, "staged", pixels)
    if top is None or top < target:
        return None
    lo, hi = 0, pixels  # D is non-decreasing in the lag: binary search for the first D >= 0
    while lo < hi:
        mid = (lo + hi) // 2
        d = variant_shift(graph, op, "staged", mid)
        if d is not None and d >= target:
            hi = mid
        else:
            lo = mid + 1
    return KernelVariant(op.opcode, "staged", lo, scratch_bytes(graph, op, "staged", lo))


CANDIDATES = {"CONV_2D": _conv_candidate, "DEPTHWISE_CONV_2D": _depthwise_candidate}


def candidate(graph: Graph, op: Operator) -> KernelVariant | None:
    """The in-place variant `op` could run (None: none applies to its shapes)."""
    fn = CANDIDATES.get(op.opcode)
    if fn is None or not op.outputs or own_kernel_only(graph, op):
        return None
    try:
        return fn(graph, op)
    except (KeyError, IndexError, ValueError, TypeError, ZeroDivisionError):
        return None  # operands the code generator refuses anyway


def step_gains(
    graph: Graph, memory_model: str, variants: dict[int, KernelVariant], alignment: int = 1
) -> dict[int, int]:
    """operator -> the bytes its step saves by running its variant instead of the default kernel:
    the extra overlap the variant allows, less its scratch (both rounded up to `alignment`)."""
    if not variants:
        return {}
    base = build_model(graph, memory_model)
    staged = build_model(with_variants(graph, variants), memory_model)
    return {
        v: staged.saving(v, alignment)
        - base.saving(v, alignment)
        - _round_up(variant.scratch_bytes, alignment)
        for v, variant in variants.items()
    }


def select_variants(
    graph: Graph, memory_model: str, prefer: str = DEFAULT_PREFERENCE, alignment: int = 1
) -> dict[int, KernelVariant]:
    """operator -> the variant it runs, for the operators where it lowers that step's bytes."""
    if memory_model != "refined" or prefer != "memory":
        return {}
    found = {op.index: c for op in graph.operators if (c := candidate(graph, op)) is not None}
    gains = step_gains(graph, memory_model, found, alignment)
    return {v: variant for v, variant in found.items() if gains[v] > 0}


def unneeded_variants(step_bytes: dict[int, int], gains: dict[int, int], peak_bytes: int) -> set[int]:
    """The variants whose step would stay at or under the plan's peak with the default kernel
    (`step_bytes`: each variant operator's live bytes in the plan; `gains`: `step_gains`): they cost
    flash (their requantisation tables) and, on some cores, speed, and lower no peak. Dropping them
    can still move buffers (a chain may drift again), so the caller re-plans and keeps the result
    only if the arena is no larger."""
    return {v for v, gain in gains.items() if step_bytes.get(v, 0) + gain <= peak_bytes}
