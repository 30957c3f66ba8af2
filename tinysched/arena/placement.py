"""Offset assignment: every activation tensor gets a fixed byte offset in one static arena.

For a given operator order each tensor is a rectangle: its lifetime (steps, from `memory.lifetimes`)
by its size rounded up to the alignment. Tensors live at a common step must not overlap in memory.
The arena can never be smaller than the peak over steps of *aligned* live bytes (the lower bound);
when a placement reaches it, that placement is proven optimal for the order.

Greedy placers run first (TFLM's greedy-by-size and best-fit variants, all in one name->function
table). Placement decomposes along the time axis: tensors whose lifetimes are not chained together
by overlaps never constrain one another, so each such component is placed on its own and the best
greedy is taken per component. Only components whose best greedy exceeds the bound go to the exact
search (CP-SAT with NoOverlap2D), under the time budget. `docs/arena.md` explains why the bound is
valid and how the pieces fit together.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from tinysched.budget import (
    CPSAT_WORK_PER_SECOND,
    WALL_FACTOR,
    Budget,
    Shortfall,
    as_budget,
    greedy_work,
)
from tinysched.errors import TinyschedError
from tinysched.memory.tensor import check_sequence, instance_lifetimes, lifetimes, profile, sequence_profile
from tinysched.model.graph import Graph

if TYPE_CHECKING:
    from tinysched.memory.overlap import Refinement
    from tinysched.order.scheduler import Schedule

DEFAULT_ALIGNMENT = 16
DEFAULT_TIME_LIMIT = 1.0  # placement, seconds
DEFAULT_SCHEDULE_TIME_LIMIT = 5.0
# CP-SAT's model of a larger time component takes longer to build and presolve than any budget.
EXACT_MAX_BLOCKS = 2_000
STOCK_TFLM_PLACER = "tflm-greedy-by-size"


@dataclass(frozen=True)
class Buffer:
    """What the placer needs to know about one activation tensor under one order."""

    index: int  # tensor index in the graph
    name: str
    bytes: int
    aligned_bytes: int  # `bytes` rounded up to the alignment: what the tensor occupies in the arena
    first_step: int
    last_step: int
    instance: int = 0  # which execution of the producer wrote it (recomputation); 0 otherwise

    @property
    def key(self) -> tuple[int, int]:
        return (self.index, self.instance)


@dataclass(frozen=True)
class Placement:
    """Where one tensor lives: bytes [offset, offset + bytes) during steps first_step..last_step."""

    index: int
    name: str
    offset: int
    bytes: int
    first_step: int
    last_step: int
    instance: int = 0  # execution instance (docs/recomputation.md); always 0 in a plain order

    @property
    def key(self) -> tuple[int, int]:
        return (self.index, self.instance)

    def as_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "offset": self.offset,
            "bytes": self.bytes,
            "first_step": self.first_step,
            "last_step": self.last_step,
        }


@dataclass(frozen=True)
class PoolUse:
    """One memory region's share of a split arena (tinysched.arena.pools). A split plan lays its regions
    end to end: a buffer's `offset` is `base` + its offset inside the region, so the plan still
    reads as one arena of `arena_bytes` = the sum of the regions' bytes, every check that holds for
    one arena holds for it, and no buffer straddles two regions (check.check_plan verifies that)."""

    region: str  # the board's memory region (boards.yaml)
    origin: int  # its address
    base: int  # where its bytes start among the plan's offsets
    bytes: int  # its allocation (a multiple of the alignment)
    limit: int  # the most it may hold (its size less the stack, or --pool NAME=BYTES)
    lower_bound_bytes: int  # aligned peak of the buffers assigned to it: no placement of them is smaller
    optimal: bool  # its placement is proven minimal for the buffers assigned to it
    speed: int  # the region's speed rank (1 = fastest)
    high_water_bytes: int  # max over its buffers of (offset - base) + bytes: what a program touches
    tensors: int  # buffers placed in it (views included)
    access_bytes: int  # bytes read and written per inference by the tensors in it

    def as_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class ArenaPlan:
    """A placement for one order. `optimal` is a proof: no placement for this order and alignment
    has a smaller arena (arena == aligned lower bound, or the exact search proved its minimum)."""

    order: tuple[int, ...]
    alignment: int
    arena_bytes: int  # max over tensors of offset + aligned size
    lower_bound_bytes: int  # peak over steps of aligned live bytes
    optimal: bool
    method: str  # the placer(s) whose offsets were kept, "+"-joined when components differ
    buffers: tuple[Placement, ...]  # one per activation tensor instance, by (tensor, instance)
    seconds: float
    peak_bytes: int  # unaligned peak of the order (the memory model's peak)
    greedy_bytes: int  # best greedy arena before any exact search
    memory_model: str = "tensor"  # "refined": views share their root, overlaps from tinysched.memory.overlap
    pools: tuple[PoolUse, ...] = ()  # a split arena's regions in `base` order; empty: one arena

    def pool_of(self, offset: int, nbytes: int = 1) -> PoolUse | None:
        """The region holding bytes [offset, offset + nbytes) of a split plan (None: one arena, or
        no region holds them all)."""
        for pool in self.pools:
            if pool.base <= offset and offset + max(nbytes, 1) <= pool.base + pool.bytes:
                return pool
        return None

    @property
    def offsets(self) -> dict[int, int]:
        """Tensor -> offset of its instance 0 (its only one unless the order repeats operators)."""
        return {p.index: p.offset for p in self.buffers if p.instance == 0}

    @property
    def high_water_bytes(self) -> int:
        """max over buffers of offset + bytes (unaligned): the most of the arena a program touches.
        `arena_bytes` (the allocation) rounds the top buffer up to the alignment; this does not."""
        return max((p.offset + p.bytes for p in self.buffers), default=0)

    @property
    def instance_offsets(self) -> dict[tuple[int, int], int]:
        """(tensor, instance) -> offset: every buffer, also when operators run more than once."""
        return {p.key: p.offset for p in self.buffers}

    @property
    def repeats(self) -> bool:
        """Whether the order runs some operator more than once (recomputation)."""
        return len(set(self.order)) != len(self.order)

    def placement(self, tensor: int, instance: int = 0) -> Placement:
        for p in self.buffers:
            if p.index == tensor and p.instance == instance:
                return p
        raise KeyError(tensor if instance == 0 else (tensor, instance))


# ---- buffers and the bound -------------------------------------------------------------------


def align_up(n: int, alignment: int) -> int:
    return -(-n // alignment) * alignment


def check_alignment(alignment: int) -> int:
    if isinstance(alignment, bool) or not isinstance(alignment, int) or alignment < 1:
        raise TinyschedError(f"alignment must be a positive number of bytes, got {alignment!r}")
    return alignment


def is_sequence(order: Sequence[int]) -> bool:
    """Whether `order` runs some operator more than once (a recomputation sequence)."""
    return len(set(order)) != len(order)


def check_order_or_sequence(graph: Graph, order: Sequence[int]) -> None:
    """An order (each operator once, topological), or a valid sequence with repeats."""
    if is_sequence(order):
        check_sequence(graph, order)
    else:
        graph.check_order(list(order))


def _refined(model: Refinement | None, order: Sequence[int]) -> Refinement | None:
    """The model to plan in: a refined one applies to plain orders only (a recomputation sequence
    is planned in the tensor model)."""
    if model is None or not model.refined or is_sequence(order):
        return None
    return model


def order_peak_bytes(graph: Graph, order: Sequence[int], model: Refinement | None = None) -> int:
    """The memory model's peak of an order, or of a sequence with repeated operators."""
    if is_sequence(order):
        return sequence_profile(graph, order).peak_bytes
    return profile(graph, order, _refined(model, order)).peak_bytes


def arena_buffers(
    graph: Graph, order: Sequence[int], alignment: int = DEFAULT_ALIGNMENT, model: Refinement | None = None
) -> tuple[Buffer, ...]:
    """One Buffer per activation tensor, lifetimes from the memory model (the single definition).

    When `order` repeats operators (recomputation) there is one Buffer per execution instance,
    lifetimes from `memory.instance_lifetimes`; a plain order is the case where every instance is 0.
    In a refined model (tinysched.memory.overlap) an alias's buffer has 0 bytes (it is placed at its root's
    offset plus its byte offset) and the root lives as long as its aliases."""
    check_alignment(alignment)
    repeats = is_sequence(order)
    model = _refined(model, order)
    if repeats:
        lives = instance_lifetimes(graph, order)[0]
    else:
        lives = lifetimes(graph, order) if model is None else model.lifetimes(order)
    return tuple(
        Buffer(
            life.tensor,
            graph.tensors[life.tensor].name,
            life.nbytes,
            align_up(life.nbytes, alignment),
            life.first_step,
            life.last_step,
            life.instance if repeats else 0,
        )
        for life in lives
    )


def step_savings(
    model: Refinement | None, order: Sequence[int], alignment: int
) -> dict[int, tuple[int, int, int]]:
    """step -> (input tensor, output tensor, aligned bytes they may share) of the refined model's
    overlaps under `order` (empty in the tensor model)."""
    model = _refined(model, order)
    if model is None:
        return {}
    found = {}
    for step, v in enumerate(order):
        pair = model.pairs.get(v)
        if pair is not None and pair.saving(alignment) > 0:
            found[step] = (pair.root, pair.output, pair.saving(alignment))
    return found


def aligned_lower_bound(
    buffers: Sequence[Buffer], savings: dict[int, tuple[int, int, int]] | None = None
) -> int:
    """Peak over steps of aligned live bytes (less, in a refined model, the most the step's one
    overlapping pair may share). Valid because tensors live at one step are disjoint ranges of the
    arena but for that pair, each at least its aligned size long (offsets are multiples of the
    alignment), and the pair shares at most `Pair.saving(alignment)` bytes."""
    if not buffers:
        return 0
    n_steps = max(b.last_step for b in buffers) + 2
    delta = [0] * n_steps
    for b in buffers:
        delta[b.first_step] += b.aligned_bytes
        delta[b.last_step + 1] -= b.aligned_bytes
    for step, (_, _, saved) in (savings or {}).items():
        delta[step] -= saved
        delta[step + 1] += saved
    live = peak = 0
    for d in delta:
        live += d
        peak = max(peak, live)
    return peak


def time_components(buffers: Sequence[Buffer]) -> list[list[Buffer]]:
    """Split buffers into groups chained by lifetime overlap; groups never constrain each other."""
    groups: list[list[Buffer]] = []
    reach = -1
    for b in sorted(buffers, key=lambda b: (b.first_step, b.last_step, b.index)):
        if not groups or b.first_step > reach:
            groups.append([])
        groups[-1].append(b)
        reach = max(reach, b.last_step)
    return groups


# ---- placers ----------------------------------------------------------------------------------
# Placers work in alignment units: a block's size is its aligned size / alignment, so every offset a
# placer returns is aligned by construction. Zero-size blocks sit at offset 0 and never conflict.


@dataclass(frozen=True)
class Block:
    """A buffer as the placers see it: size in alignment units and its lifetime."""

    size: int
    first: int
    last: int
    index: int  # tensor index: the tie-break, so results never depend on input order
    instance: int = 0  # with `index`, names the buffer (several instances under recomputation)

    @property
    def key(self) -> tuple[int, int]:
        return (self.index, self.instance)

    def overlaps_in_time(self, other: Block) -> bool:
        return self.first <= other.last and other.first <= self.last


@dataclass(frozen=True)
class BlockPair:
    """A refined model's overlap (tinysched.memory.overlap.Pair) between two blocks of one problem: at
    `step` the output block may overlap the input block when its offset minus the input's is at most
    `shift` units (or they are disjoint); `saving` units is the most they can share."""

    input: int  # block index
    output: int  # block index
    shift: int  # units (the Pair's shift rounded down to the alignment)
    saving: int  # units
    step: int

    def legal(self, input_offset: int, output_offset: int, blocks: Sequence[Block]) -> bool:
        a, b = blocks[self.input].size, blocks[self.output].size
        disjoint = output_offset >= input_offset + a or output_offset + b <= input_offset
        return disjoint or output_offset - input_offset <= self.shift


@dataclass(frozen=True)
class Problem:
    """One time component to place: its blocks, and what the exact search may use."""

    blocks: tuple[Block, ...]
    target: int  # arena (units) the whole plan needs anyway: reaching it is as good as it gets
    start: tuple[int, ...] | None = None  # best offsets known so far (exact search hint and cap)
    time_limit: float = 0.0  # work seconds the exact search may use (tinysched.budget)
    pairs: tuple[BlockPair, ...] = ()  # overlaps the refined memory model allows
    wall_limit: float | None = None  # wall seconds left, the safety stop (None: WALL_FACTOR x time_limit)


@dataclass(frozen=True)
class Solution:
    offsets: tuple[int, ...]  # one per block, in units
    arena: int  # max offset + size, in units
    lower_bound: int  # proven: no placement of these blocks fits in fewer units
    work: float = 0.0  # work seconds the exact search used (tinysched.budget)
    stopped: str | None = None  # "limit" or "wall": what stopped the exact search short of a proof


def extent(blocks: Sequence[Block], offsets: Sequence[int]) -> int:
    return max((o + b.size for o, b in zip(offsets, blocks, strict=True)), default=0)


def load_peak(blocks: Sequence[Block], pairs: Sequence[BlockPair] = ()) -> int:
    """The largest total size live at one step (less its pair's saving): the blocks' own lower
    bound, in units."""
    events = sorted(
        [(b.first, b.size) for b in blocks]
        + [(b.last + 1, -b.size) for b in blocks]
        + [(p.step, -p.saving) for p in pairs]
        + [(p.step + 1, p.saving) for p in pairs]
    )
    live = peak = 0
    for _, change in events:  # ends (negative) sort before starts at the same step
        live += change
        peak = max(peak, live)
    return peak


def _first_fit(size: int, busy: list[tuple[int, int]]) -> int:
    """Lowest offset where `size` fits between the (offset, end) ranges in `busy` (TFLM's gap search)."""
    candidate = 0
    for start, end in sorted(busy):
        if start - candidate >= size:
            break
        candidate = max(candidate, end)
    return candidate


def _best_fit(size: int, busy: list[tuple[int, int]]) -> int:
    """The smallest gap that holds `size` (lowest such offset on ties), else on top of everything."""
    best_offset, best_gap = None, None
    cursor = 0
    for start, end in sorted(busy):
        gap = start - cursor
        if gap >= size and (best_gap is None or gap < best_gap):
            best_offset, best_gap = cursor, gap
        cursor = max(cursor, end)
    return cursor if best_offset is None else best_offset


def _first_fit_sorted(size: int, starts: np.ndarray, ends: np.ndarray) -> int:
    """`_first_fit` on busy ranges given as arrays sorted by start: the first range whose start is
    at least `size` above the highest end before it closes the gap (cumulative max of the ends)."""
    if not len(starts):
        return 0
    reach = np.maximum.accumulate(ends)
    before = np.concatenate(([0], reach[:-1]))
    fits = np.flatnonzero(starts - before >= size)
    return int(before[fits[0]]) if len(fits) else max(0, int(reach[-1]))


def _best_fit_sorted(size: int, starts: np.ndarray, ends: np.ndarray) -> int:
    """`_best_fit` on busy ranges given as arrays sorted by start."""
    if not len(starts):
        return 0
    reach = np.maximum.accumulate(np.maximum(ends, 0))
    before = np.concatenate(([0], reach[:-1]))
    gaps = starts - before
    fits = np.flatnonzero(gaps >= size)
    if not len(fits):
        return int(reach[-1])
    return int(before[fits[int(np.argmin(gaps[fits]))]])


_SORTED_FIT = {_first_fit: _first_fit_sorted, _best_fit: _best_fit_sorted}


def _partners(blocks: Sequence[Block], pairs: Sequence[BlockPair]) -> dict[int, list[BlockPair]]:
    found: dict[int, list[BlockPair]] = {}
    for p in pairs:
        found.setdefault(p.input, []).append(p)
        found.setdefault(p.output, []).append(p)
    return found


def _paired_offset(
    i: int,
    blocks: Sequence[Block],
    offsets: Sequence[int],
    placed: set[int],
    mine: Sequence[BlockPair],
    free: Callable[[int, set[int]], bool],
) -> int | None:
    """Offset for block i at its best overlap with an already placed partner, if that is free of
    every other placed block live with it and legal with every placed partner; else None."""
    for p in mine:
        other = p.input if p.output == i else p.output
        if other not in placed:
            continue
        delta = min(p.shift, 0)  # output offset minus input offset at the largest overlap
        offset = offsets[other] + delta if p.output == i else offsets[other] - delta
        if offset < 0:
            continue
        legal = True
        for q in mine:
            j = q.input if q.output == i else q.output
            if j in placed:
                inp, out = (offset, offsets[j]) if q.input == i else (offsets[j], offset)
                legal = legal and q.legal(inp, out, blocks)
        if legal and free(offset, {q.input if q.output == i else q.output for q in mine}):
            return offset
    return None


def _place_in_order(
    blocks: Sequence[Block], priority: Sequence[int], fit: Callable, pairs: Sequence[BlockPair] = ()
) -> tuple[int, ...]:
    """Place blocks one by one in `priority` order at `fit`'s offset among the placed blocks that
    overlap them in time. The placed blocks are kept sorted by offset in numpy arrays, so each
    placement is a few vector operations rather than a Python loop over every placed block (a
    wide graph has thousands of tensors live together).

    A block with a refined-model partner already placed (`pairs`) first tries the offset at which
    the two share the most bytes; otherwise the partner counts as busy like any other block."""
    offsets = [0] * len(blocks)
    sorted_fit = _SORTED_FIT.get(fit)
    partners = _partners(blocks, pairs)
    if partners:
        return _place_paired(blocks, priority, fit, offsets, partners)
    if sorted_fit is None:  # a fit function without a vector form: the plain definition
        placed: list[int] = []
        for i in priority:
            block = blocks[i]
            if block.size == 0:
                continue
            busy = [
                (offsets[j], offsets[j] + blocks[j].size) for j in placed if blocks[j].overlaps_in_time(block)
            ]
            offsets[i] = fit(block.size, busy)
            placed.append(i)
        return tuple(offsets)
    # rows: offset, end, first step, last step of the placed blocks, sorted by offset
    table = np.empty((4, len(blocks)), dtype=np.int64)
    k = 0
    for i in priority:
        block = blocks[i]
        if block.size == 0:
            continue
        starts, ends, firsts, lasts = table[:, :k]
        live = (firsts <= block.last) & (lasts >= block.first)
        offset = sorted_fit(block.size, starts[live], ends[live])
        offsets[i] = offset
        at = int(np.searchsorted(starts, offset, side="right"))
        table[:, at + 1 : k + 1] = table[:, at:k].copy()
        table[:, at] = (offset, offset + block.size, block.first, block.last)
        k += 1
    return tuple(offsets)


def _place_paired(
    blocks: Sequence[Block],
    priority: Sequence[int],
    fit: Callable,
    offsets: list[int],
    partners: dict[int, list[BlockPair]],
) -> tuple[int, ...]:
    """`_place_in_order` with pairs: the plain loop, since each placement may try a paired offset."""
    placed: set[int] = set()
    order_placed: list[int] = []
    for i in priority:
        block = blocks[i]
        if block.size == 0:
            continue
        live = [j for j in order_placed if blocks[j].overlaps_in_time(block)]

        def free(offset: int, exempt: set[int], live: list[int] = live, size: int = block.size) -> bool:
            return all(
                j in exempt or offsets[j] >= offset + size or offsets[j] + blocks[j].size <= offset
                for j in live
            )

        offset = _paired_offset(i, blocks, offsets, placed, partners.get(i, ()), free)
        if offset is None:
            offset = fit(block.size, [(offsets[j], offsets[j] + blocks[j].size) for j in live])
        offsets[i] = offset
        placed.add(i)
        order_placed.append(i)
    return tuple(offsets)


def _by_size(bs: Sequence[Block]) -> list[int]:
    # TFLM adds buffers in tensor order but fills its sort array from the tail, then bubble-sorts it
    # stably by size: equal sizes end up highest tensor index first. Copying that matters, it changes
    # the stock arena of e.g. the MLPerf VWW model by 9 KiB.
    return sorted(range(len(bs)), key=lambda i: (-bs[i].size, -bs[i].index))


def _by_lifetime(bs: Sequence[Block]) -> list[int]:
    return sorted(range(len(bs)), key=lambda i: (-(bs[i].last - bs[i].first), -bs[i].size, bs[i].index))


def _by_conflicts(bs: Sequence[Block]) -> list[int]:
    # bytes overlapping each block in time (itself included): all, less those that end before it
    # starts and those that start after it ends (prefix sums over blocks sorted by end / start)
    sizes = np.array([b.size for b in bs], dtype=np.int64)
    firsts = np.array([b.first for b in bs], dtype=np.int64)
    lasts = np.array([b.last for b in bs], dtype=np.int64)
    by_last, by_first = np.argsort(lasts, kind="stable"), np.argsort(firsts, kind="stable")
    ended = np.concatenate(([0], np.cumsum(sizes[by_last])))
    started = np.concatenate(([0], np.cumsum(sizes[by_first])))
    before = ended[np.searchsorted(lasts[by_last], firsts, side="left")]
    after = started[-1] - started[np.searchsorted(firsts[by_first], lasts, side="right")]
    weight = (int(sizes.sum()) - before - after).tolist()
    return sorted(range(len(bs)), key=lambda i: (-weight[i], -bs[i].size, bs[i].index))


def _by_area(bs: Sequence[Block]) -> list[int]:
    return sorted(range(len(bs)), key=lambda i: (-bs[i].size * (bs[i].last - bs[i].first + 1), bs[i].index))


def _by_start(bs: Sequence[Block]) -> list[int]:
    return sorted(range(len(bs)), key=lambda i: (bs[i].first, -bs[i].size, bs[i].index))


def _greedy(priority: Callable[[Sequence[Block]], list[int]], fit: Callable) -> Callable[[Problem], Solution]:
    def run(problem: Problem) -> Solution:
        offsets = _place_in_order(problem.blocks, priority(problem.blocks), fit, problem.pairs)
        return Solution(offsets, extent(problem.blocks, offsets), load_peak(problem.blocks, problem.pairs))

    return run


def _cp_sat(problem: Problem) -> Solution:
    """Minimise the arena with CP-SAT: fixed x = lifetime, variable y = offset, NoOverlap2D.

    The arena variable's domain starts at `problem.target` (what the whole plan needs anyway), so
    the solver stops as soon as it reaches it; `problem.start` is the hint and caps the domain.
    One worker, a fixed seed and a limit in deterministic time (`problem.time_limit` work seconds,
    tinysched.budget) give the same answer however loaded the machine is; the wall-clock limit is
    only the safety stop (`problem.wall_limit`)."""
    from ortools.sat.python import cp_model

    blocks = problem.blocks
    own_bound = load_peak(blocks, problem.pairs)
    start = problem.start or _greedy(_by_size, _first_fit)(problem).offsets
    cap = extent(blocks, start)
    if cap <= max(problem.target, own_bound):
        return Solution(tuple(start), cap, own_bound)
    model = cp_model.CpModel()
    arena = model.new_int_var(problem.target, cap, "arena")
    ys: list[Any] = []
    x_intervals, y_intervals, sizes = [], [], []
    # Time in half steps: step s is slots 2s (reads) and 2s+1 (writes). A pair's input ends after
    # slot 2s and its output starts at 2s+1, so NoOverlap2D leaves the two alone; their own
    # constraint (overlap within the shift, or disjoint) is the disjunction below.
    late_start = {p.output for p in problem.pairs}
    early_end = {p.input for p in problem.pairs}
    for k, b in enumerate(blocks):
        if b.size == 0:
            ys.append(None)
            continue
        y = model.new_int_var(0, cap - b.size, f"y{k}")
        model.add(y + b.size <= arena)
        model.add_hint(y, start[k])
        ys.append(y)
        first = 2 * b.first + (1 if k in late_start else 0)
        end = 2 * b.last + 2 - (1 if k in early_end else 0)
        x_intervals.append(model.new_fixed_size_interval_var(first, end - first, f"x{k}"))
        y_intervals.append(model.new_fixed_size_interval_var(y, b.size, f"m{k}"))
        sizes.append(b.size)
    model.add_no_overlap_2d(x_intervals, y_intervals)
    for k, p in enumerate(problem.pairs):
        yi, yo = ys[p.input], ys[p.output]
        if yi is None or yo is None:
            continue
        within, above, below = (model.new_bool_var(f"pair{k}_{w}") for w in ("in", "above", "below"))
        model.add(yo - yi <= p.shift).only_enforce_if(within)
        model.add(yo >= yi + blocks[p.input].size).only_enforce_if(above)
        model.add(yo + blocks[p.output].size <= yi).only_enforce_if(below)
        model.add_bool_or([within, above, below])
    # Redundant, and it hands the solver the bound's own argument: at every step the live sizes fit.
    model.add_cumulative(x_intervals, sizes, arena)
    model.add_hint(arena, cap)
    model.minimize(arena)
    work_limit = problem.time_limit * CPSAT_WORK_PER_SECOND
    wall_limit = WALL_FACTOR * problem.time_limit if problem.wall_limit is None else problem.wall_limit
    solver = cp_model.CpSolver()
    solver.parameters.max_deterministic_time = work_limit
    solver.parameters.max_time_in_seconds = max(wall_limit, 0.01)
    solver.parameters.num_workers = 1  # deterministic, and the machines have 2 cores
    solver.parameters.random_seed = 0
    status = solver.solve(model)
    work = solver.deterministic_time / CPSAT_WORK_PER_SECOND
    stopped = None
    if status not in (cp_model.OPTIMAL, cp_model.INFEASIBLE, cp_model.MODEL_INVALID):
        stopped = "limit" if solver.deterministic_time >= 0.99 * work_limit else "wall"
    # The arena variable only bounds the extent from above, so an objective bound b above the
    # domain's floor (`target`) proves every placement needs >= b; at the floor it proves nothing.
    objective_bound = int(math.ceil(solver.best_objective_bound - 1e-9))
    proven = max(own_bound, objective_bound if objective_bound > problem.target else 0)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        bound = proven if status == cp_model.UNKNOWN else own_bound
        return Solution(tuple(start), cap, bound, work, stopped)
    offsets = tuple(0 if y is None else int(solver.value(y)) for y in ys)
    found = extent(blocks, offsets)
    if found > cap:  # cannot happen (the domain caps it); keep the start rather than trust it
        return Solution(tuple(start), cap, proven, work, stopped)
    return Solution(offsets, found, proven, work, stopped)


@dataclass(frozen=True)
class Placer:
    name: str
    exact: bool  # exact placers run only where the greedy ones miss the bound, under the time limit
    summary: str
    run: Callable[[Problem], Solution]


PLACERS: dict[str, Placer] = {
    p.name: p
    for p in (
        Placer(
            STOCK_TFLM_PLACER,
            False,
            "TFLM GreedyMemoryPlanner: largest first, lowest gap that fits",
            _greedy(_by_size, _first_fit),
        ),
        Placer(
            "best-fit-by-size", False, "largest first, smallest gap that fits", _greedy(_by_size, _best_fit)
        ),
        Placer(
            "first-fit-by-lifetime",
            False,
            "longest-lived first, lowest gap",
            _greedy(_by_lifetime, _first_fit),
        ),
        Placer(
            "best-fit-by-lifetime",
            False,
            "longest-lived first, smallest gap",
            _greedy(_by_lifetime, _best_fit),
        ),
        Placer(
            "first-fit-by-conflicts",
            False,
            "most bytes overlapping in time first, lowest gap",
            _greedy(_by_conflicts, _first_fit),
        ),
        Placer(
            "best-fit-by-conflicts",
            False,
            "most bytes overlapping in time first, smallest gap",
            _greedy(_by_conflicts, _best_fit),
        ),
        Placer(
            "first-fit-by-area",
            False,
            "largest size x lifetime first, lowest gap",
            _greedy(_by_area, _first_fit),
        ),
        Placer(
            "first-fit-by-start", False, "earliest-born first, lowest gap", _greedy(_by_start, _first_fit)
        ),
        Placer(
            "cp-sat", True, "CP-SAT NoOverlap2D minimising the arena (exact, under the time limit)", _cp_sat
        ),
    )
}
GREEDY_PLACERS = tuple(name for name, p in PLACERS.items() if not p.exact)


def placer(name: str) -> Placer:
    """Look up a placer by name; an unknown name lists the valid ones."""
    try:
        return PLACERS[name]
    except KeyError:
        raise TinyschedError(f"unknown placement method {name!r}; valid: {', '.join(PLACERS)}") from None


# ---- planning ----------------------------------------------------------------------------------


def _blocks(buffers: Sequence[Buffer], alignment: int) -> tuple[Block, ...]:
    return tuple(
        Block(b.aligned_bytes // alignment, b.first_step, b.last_step, b.index, b.instance) for b in buffers
    )


def _block_pairs(
    blocks: Sequence[Block], savings: dict[int, tuple[int, int, int]], shifts: dict[int, int], alignment: int
) -> tuple[BlockPair, ...]:
    """The refined model's overlaps between blocks of one component (by step), in units."""
    where = {b.index: k for k, b in enumerate(blocks) if b.instance == 0}
    found = []
    for step, (x, y, saved) in sorted(savings.items()):
        if x in where and y in where and blocks[where[x]].size and blocks[where[y]].size:
            found.append(BlockPair(where[x], where[y], shifts[step] // alignment, saved // alignment, step))
    return tuple(found)


def _pair_shifts(model: Refinement | None, order: Sequence[int]) -> dict[int, int]:
    """step -> the pair's shift in bytes, for the steps `step_savings` lists."""
    model = _refined(model, order)
    if model is None:
        return {}
    return {step: model.pairs[v].shift for step, v in enumerate(order) if v in model.pairs}


def _view_placements(
    graph: Graph, order: Sequence[int], model: Refinement | None, placements: Sequence[Placement]
) -> tuple[Placement, ...]:
    """Each alias at its root's offset plus its byte offset, with its real bytes (its own lifetime
    is already the placement's)."""
    model = _refined(model, order)
    if model is None or not model.aliases:
        return tuple(placements)
    at = {p.index: p for p in placements}
    out = []
    for p in placements:
        alias = model.aliases.get(p.index)
        if alias is not None:
            p = replace(p, offset=at[alias.root].offset + alias.offset, bytes=graph.tensors[p.index].nbytes)
        out.append(p)
    return tuple(out)


def assemble_plan(
    graph: Graph,
    order: Sequence[int],
    alignment: int,
    buffers: Sequence[Buffer],
    offset_units: dict[tuple[int, int], int],
    *,
    optimal: bool,
    methods: Sequence[str],
    started: float,
    greedy_units: int,
    model: Refinement | None = None,
    pools: tuple[PoolUse, ...] = (),
) -> ArenaPlan:
    """The ArenaPlan of offsets found by `place_buffers` (per region, for a split arena: `pools`,
    whose bytes add up to the plan's `arena_bytes`)."""
    placements = tuple(
        Placement(
            b.index, b.name, offset_units[b.key] * alignment, b.bytes, b.first_step, b.last_step, b.instance
        )
        for b in sorted(buffers, key=lambda b: b.key)
    )
    placements = _view_placements(graph, order, model, placements)
    refined = _refined(model, order)
    single_arena = max((align_up(p.offset + p.bytes, alignment) for p in placements), default=0)
    return ArenaPlan(
        order=tuple(order),
        alignment=alignment,
        arena_bytes=sum(p.bytes for p in pools) if pools else single_arena,
        lower_bound_bytes=aligned_lower_bound(buffers, step_savings(model, order, alignment)),
        optimal=optimal,
        method="+".join(dict.fromkeys(methods)) or "empty",
        buffers=placements,
        seconds=time.perf_counter() - started,
        peak_bytes=order_peak_bytes(graph, order, model),
        greedy_bytes=greedy_units * alignment,
        memory_model="tensor" if refined is None else refined.name,
        pools=pools,
    )


def greedy_plan(
    graph: Graph,
    order: Sequence[int],
    method: str = STOCK_TFLM_PLACER,
    alignment: int = DEFAULT_ALIGNMENT,
    model: Refinement | None = None,
) -> ArenaPlan:
    """One greedy placer on the whole graph: the stock-TFLM-like baseline, or any greedy table entry."""
    started = time.perf_counter()
    chosen = placer(method)
    if chosen.exact:
        raise TinyschedError(f"{method!r} is not a greedy placer; greedy ones: {', '.join(GREEDY_PLACERS)}")
    check_order_or_sequence(graph, order)
    buffers = arena_buffers(graph, order, alignment, model)
    blocks = _blocks(buffers, alignment)
    savings = step_savings(model, order, alignment)
    bound = aligned_lower_bound(buffers, savings) // alignment
    pairs = _block_pairs(blocks, savings, _pair_shifts(model, order), alignment)
    solution = chosen.run(Problem(blocks, bound, pairs=pairs))
    return assemble_plan(
        graph,
        order,
        alignment,
        buffers,
        {b.key: o for b, o in zip(blocks, solution.offsets, strict=True)},
        optimal=solution.arena <= bound,
        methods=[method],
        started=started,
        greedy_units=solution.arena,
        model=model,
    )


def plan_arena(
    graph: Graph,
    order: Sequence[int] | None = None,
    alignment: int = DEFAULT_ALIGNMENT,
    time_limit: float = DEFAULT_TIME_LIMIT,
    methods: Sequence[str] | None = None,
    model: Refinement | None = None,
    budget: Budget | None = None,
) -> ArenaPlan:
    """Place every activation tensor of `graph` under `order` (stored order by default).

    In a refined memory model (`model`, tinysched.memory.overlap) views sit at their root's offset and each
    allowed overlap is a pair constraint: the greedy placers try the pair's best overlap first, the
    exact one has the disjunction (overlap within the kernel's shift, or disjoint).

    Every greedy placer in `methods` (default: the whole table) runs on each time component and the
    best per component is kept; components still above the aligned lower bound then go to the exact
    placers in `methods`, sharing `budget` (default: `time_limit` work seconds of its own,
    tinysched.budget), hardest first. The plan is `optimal` when the arena equals the bound, or an
    exact search proved the minimum of a component that sets it.

    `order` may also be a recomputation sequence (operators repeated, `tinysched.order.recompute`): each
    execution instance of a tensor is then its own buffer, and placements carry their `instance`."""
    started = time.perf_counter()
    order = tuple(graph.stored_order() if order is None else order)
    check_order_or_sequence(graph, order)
    chosen = [placer(m) for m in (PLACERS if methods is None else methods)]
    greedy = [p for p in chosen if not p.exact] or [PLACERS[STOCK_TFLM_PLACER]]  # exact ones need a start
    exact = [p for p in chosen if p.exact]
    buffers = arena_buffers(graph, order, alignment, model)
    savings = step_savings(model, order, alignment)
    placed = place_buffers(
        buffers, alignment, savings, _pair_shifts(model, order), greedy, exact, as_budget(budget, time_limit)
    )
    return assemble_plan(
        graph,
        order,
        alignment,
        buffers,
        placed.offsets,
        optimal=placed.optimal,
        methods=placed.methods,
        started=started,
        greedy_units=placed.greedy_units,
        model=model,
    )


@dataclass(frozen=True)
class Placed:
    """Offsets for one set of buffers (one arena, or one region of a split arena), in units."""

    offsets: dict[tuple[int, int], int]  # buffer key -> offset in alignment units
    arena_units: int
    bound_units: int  # the buffers' aligned lower bound, in units
    optimal: bool  # arena == bound, or an exact search proved the minimum of a component that sets it
    methods: tuple[str, ...]
    greedy_units: int


def place_buffers(
    buffers: Sequence[Buffer],
    alignment: int,
    savings: dict[int, tuple[int, int, int]],
    shifts: dict[int, int],
    greedy: Sequence[Placer],
    exact: Sequence[Placer],
    budget: Budget,
) -> Placed:
    """Place `buffers` in one arena of their own: the greedy placers per time component, then the
    exact ones on components above the buffers' aligned lower bound, within `budget`
    (tinysched.budget). Greedy placers after the first run while their estimated work fits half of
    the budget (each is O(blocks x live blocks); on wide graphs that is seconds), so the exact ones
    keep the rest; those share what is left, hardest component first, and what one does not use is
    there for the next. A component left above the bound by the budget is noted on it (a
    `Shortfall`). `savings` / `shifts` are the refined model's overlaps by step (`step_savings`);
    pairs whose two tensors are not both among `buffers` are ignored."""
    bound = aligned_lower_bound(buffers, savings) // alignment

    offsets: dict[tuple[int, int], int] = {}
    used: list[str] = []
    settled: list[Solution] = []
    greedy_units = 0
    hard: list[tuple[tuple[Block, ...], tuple[BlockPair, ...], Solution, str]] = []
    greedy_allowance = budget.left / 2
    greedy_spent = 0.0
    for group in time_components(buffers):
        blocks = _blocks(group, alignment)
        pairs = _block_pairs(blocks, savings, shifts, alignment)
        cost = greedy_work(len(blocks), bool(pairs))
        best, best_name = None, ""
        skipped: tuple[str, ...] = ()
        for k, p in enumerate(greedy):
            if best is not None and greedy_spent + cost > greedy_allowance:
                skipped = tuple(q.name for q in greedy[k:])
                break
            solution = p.run(Problem(blocks, bound, pairs=pairs))
            greedy_spent += cost
            budget.spend(cost)
            if best is None or solution.arena < best.arena:
                best, best_name = solution, p.name
            if best.arena <= bound:
                break
        assert best is not None
        greedy_units = max(greedy_units, best.arena)
        if best.arena > bound and exact and len(blocks) <= EXACT_MAX_BLOCKS:
            hard.append((blocks, pairs, best, best_name))
        else:
            if best.arena > bound and skipped:
                budget.fall_short(
                    Shortfall(
                        "greedy placers",
                        f"{', '.join(skipped)} on a component of {len(blocks)} tensors placed in "
                        f"{best.arena * alignment:,} B (bound {bound * alignment:,} B)",
                        bound * alignment,
                    )
                )
            offsets.update({b.key: o for b, o in zip(blocks, best.offsets, strict=True)})
            used.append(best_name)
            settled.append(best)

    # Hardest first: whatever one component cannot get below becomes the target for the rest.
    hard.sort(key=lambda h: -h[2].arena)
    target = bound
    for k, (blocks, pairs, best, name) in enumerate(hard):
        for p in exact:
            if best.arena <= target:
                break
            share, wall = budget.left / (len(hard) - k), budget.wall_left()
            stopped = "limit" if share <= 0 else "wall" if wall <= 0 else None
            if stopped is None:
                solution = p.run(Problem(blocks, target, best.offsets, share, pairs, wall))
                budget.spend(solution.work)
                if solution.arena < best.arena:
                    best, name = solution, p.name
                elif solution.lower_bound > best.lower_bound:
                    best = replace(best, lower_bound=solution.lower_bound)
                stopped = solution.stopped
            if stopped is not None and best.arena > max(target, best.lower_bound):
                floor = max(target, best.lower_bound) * alignment
                budget.fall_short(
                    Shortfall(
                        p.name,
                        f"a component of {len(blocks)} tensors placed in {best.arena * alignment:,} B "
                        f"(bound {floor:,} B)",
                        floor,
                        wall=stopped == "wall",
                    )
                )
        target = max(target, best.arena)
        offsets.update({b.key: o for b, o in zip(blocks, best.offsets, strict=True)})
        used.append(name)
        settled.append(best)

    arena = max((s.arena for s in settled), default=0)
    optimal = arena <= bound or any(s.lower_bound >= arena for s in settled)
    return Placed(offsets, arena, bound, optimal, tuple(used), greedy_units)


def plan_model(
    graph: Graph,
    alignment: int = DEFAULT_ALIGNMENT,
    time_limit: float = DEFAULT_TIME_LIMIT,
    schedule_time_limit: float = DEFAULT_SCHEDULE_TIME_LIMIT,
    max_orders: int = 20,
    methods: Sequence[str] | None = None,
    model: Refinement | None = None,
    budget: Budget | None = None,
    order_share: float | None = None,
) -> tuple[Schedule, ArenaPlan]:
    """Schedule (lowest-peak order), then place it, both in `model`'s memory model (the tensor
    model by default).

    Order and placement interact: when a certified order's placement misses its bound, other orders
    with the same certified peak are placed too and the smallest arena wins. The returned schedule
    carries the order actually placed (same peak, same certificate).

    Both draw on `budget` (default: `schedule_time_limit` + `time_limit` work seconds): the order
    search gets `order_share` of it (default: the two limits' ratio) and is charged nothing when it
    certifies its order (any longer search finds the same), so placement gets everything it leaves."""
    from tinysched.order import scheduler

    if budget is None:
        budget = Budget(schedule_time_limit + time_limit)
        order_share = schedule_time_limit / max(schedule_time_limit + time_limit, 1e-9)
    allowance = budget.left * (1.0 if order_share is None else order_share)
    limit = max(min(allowance, budget.wall_left()), 0.0)
    sched = scheduler.schedule(graph, time_limit=limit, model=model)
    if not sched.certified:
        budget.spend(allowance)
        budget.fall_short(
            Shortfall(
                "order search",
                f"an order peaking at {sched.peak_bytes:,} B, none proven below {sched.lower_bound_bytes:,} B",
                sched.lower_bound_bytes,
                wall=limit < allowance,
            )
        )
    plan = plan_arena(graph, sched.order, alignment, methods=methods, model=model, budget=budget.part())
    if plan.arena_bytes <= plan.lower_bound_bytes or not sched.certified:
        return sched, plan
    best = plan
    # one placement budget, shared by every order tried
    started, limit = time.perf_counter(), max(min(budget.left, budget.wall_left()), 0.0)
    others = scheduler.optimal_orders(
        graph, sched.peak_bytes, limit=max_orders, time_limit=max(limit, 0.05), model=model
    )
    if time.perf_counter() - started >= limit:  # stopped by its limit, not by running out of orders
        budget.spend(limit)
    others = [
        order
        for order in others
        if tuple(order) != best.order and order_peak_bytes(graph, order, model) == sched.peak_bytes
    ]
    for k, order in enumerate(others):
        if budget.left <= 0 or budget.wall_left() <= 0:
            budget.fall_short(
                Shortfall(
                    "orders of the same peak",
                    f"{len(others) - k} order(s) not placed (the best placed in {best.arena_bytes:,} B, "
                    f"bound {best.lower_bound_bytes:,} B)",
                    best.lower_bound_bytes,
                    wall=budget.left > 0,
                )
            )
            break
        candidate = plan_arena(
            graph, order, alignment, methods=methods, model=model, budget=budget.part(len(others) - k)
        )
        if (candidate.arena_bytes, not candidate.optimal) < (best.arena_bytes, not best.optimal):
            best = candidate
        if best.arena_bytes <= best.lower_bound_bytes:
            break
    if best is not plan:
        sched = replace(sched, order=best.order)
    return sched, best
