"""The operator order with the lowest peak activation memory, and a proof that it is the lowest.

One time budget covers these stages, each only run while the best order is not yet proven:

1. upper bounds: the stored order and fast heuristics (`HEURISTICS`, name -> function), one of
   them splitting an order along the minimum cut at its peak (`cut_bisection`);
2. lower bounds from single-operator minimum cuts (tinysched.order.bounds); a bound equal to the best
   peak certifies the order at once;
3. windows: large-neighbourhood search that reorders stretches of the best order around its peak
   exactly, and moves blocks of operators across the peak step;
4. pair ("trap") cuts, which can raise the lower bound further;
5. exact search over down-sets (sets of executed operators closed under predecessors), stage by
   stage between cut operators (`staged_search`): beams for better orders of the peak stage, then
   exact decisions (tinysched.order.layered, vectorised) whose failures raise the floor as
   `stage_exhaustive` bounds until it meets the peak;
6. a precedence tree: branch and bound over the relative orders of hot pairs of the best order,
   each leaf bounded by minimum cuts under its precedences (tinysched.order.bounds);
7. CP-SAT on the ordering problem for what the search could not finish, hinted with the best order
   and told the lower bound.

`Schedule.certified` is only true when an argument proves no order does better: the lower bound
equals the peak, the search exhausted the down-sets, or CP-SAT reported OPTIMAL. docs/scheduling.md
explains each argument."""

from __future__ import annotations

import bisect
import contextlib
import heapq
import math
import multiprocessing
import os
import random
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from ctypes import c_byte
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING

from tinysched import children
from tinysched.errors import TinyschedError
from tinysched.model.graph import Graph
from tinysched.order.bounds import (
    TREE_MAX_DEPTH,
    CutNetwork,
    LowerBound,
    OrderingProblem,
    iter_bits,
    lower_bound,
    precedence_tree_bound,
    stage_exhaustive_bound,
    trivial_bound,
)
from tinysched.order.layered import LayeredResult, layered_search

if TYPE_CHECKING:
    from tinysched.memory.overlap import Refinement

__all__ = [
    "HEURISTICS",
    "Certificate",
    "CpSatResult",
    "Schedule",
    "SearchResult",
    "StagedResult",
    "cp_sat_search",
    "exact_search",
    "improve_by_windows",
    "optimal_orders",
    "ordering_problem",
    "plain_downset_dp",
    "schedule",
    "staged_search",
    "cut_operators",
    "peak_stage",
]

Progress = Callable[[str], None]

# Down-sets the exact search may hold at once: each costs about 300 bytes (a dict slot and a heap
# entry with operator-count-bit integers), so this keeps the search near half a gigabyte.
MAX_SEARCH_STATES = 1_500_000
# Down-sets the layered stage search may hold over all layers: 6 bytes of history each (parent,
# operator), plus one layer at a time (some 60 bytes a down-set in C, a few hundred in numpy).
LAYERED_MAX_STATES = 15_000_000
# Graphs up to this size run every heuristic whatever the budget (they take microseconds).
SMALL_GRAPH_OPS = 200
# CP-SAT's model building and presolve on larger graphs take longer than any budget it would get.
CP_SAT_MAX_OPS = 2_000
# Loading OR-Tools' CP-SAT module the first time in a process (it imports pandas): 0.95-1.35 s
# measured on a loaded 2-core machine. CP-SAT starts only where the time left covers it: loaded
# with 0.4 s left (a 10 s budget), it ended the schedule 0.7 s past its limit.
CP_SAT_LOAD_SECONDS = 1.5
# The precedence tree re-solves a few hundred cuts per split: beyond this size one split costs more
# than its share of a usual budget.
TREE_MAX_OPS = 3_000


@dataclass(frozen=True)
class Certificate:
    """Why no order peaks below `lower_bound_bytes`, in a form that can be checked again."""

    kind: str  # "lower_bound" | "exhaustive" | "cp_sat"
    lower_bound_bytes: int
    witness: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Schedule:
    order: tuple[int, ...]  # operator indices of the input graph, in execution order
    peak_bytes: int
    stored_order_peak_bytes: int
    lower_bound_bytes: int  # no order peaks lower (equal to peak_bytes when certified)
    certified: bool
    certificate: Certificate | None
    method: str  # what found the order: a HEURISTICS name, "windows", "exhaustive" or "cp_sat"
    seconds: float
    stats: dict = field(default_factory=dict, compare=False)  # work done: cuts, search states, ...
    memory_model: str = "tensor"  # the model the peak and the certificate are stated in

    @property
    def gap_bytes(self) -> int:
        return self.peak_bytes - self.lower_bound_bytes

    @property
    def gap_percent(self) -> float:
        """Share of the peak that a better order might still save (0 when certified)."""
        return 100.0 * self.gap_bytes / self.peak_bytes if self.peak_bytes else 0.0

    @property
    def saving_bytes(self) -> int:
        return self.stored_order_peak_bytes - self.peak_bytes

    @property
    def above_optimum_percent(self) -> float:
        """At most this much above the optimal peak: (peak - bound) / bound, 0 when certified."""
        if self.certified or self.gap_bytes <= 0:
            return 0.0
        return math.inf if self.lower_bound_bytes <= 0 else 100.0 * self.gap_bytes / self.lower_bound_bytes

    def status_text(self) -> str:
        """What is known about the order, in the user's terms (for the CLI's summary line).

        Certified: "optimal (proven: ...)". Otherwise the time ran out and the sentence says how far
        from optimal the order can be at most, rounded up so that it never claims more than proven."""
        if self.certified:
            how = {
                "lower_bound": "equals a lower bound",
                "exhaustive": "exhaustive search",
                "cp_sat": "CP-SAT",
            }
            kind = self.certificate.kind if self.certificate else ""
            where = "" if self.memory_model == "tensor" else f" in the {self.memory_model} memory model"
            return f"optimal{where}: peak {self.peak_bytes:,} B, proven by {how.get(kind, kind)}"
        over = self.above_optimum_percent
        within = "an unknown distance" if math.isinf(over) else f"{math.ceil(over * 10 - 1e-9) / 10:.1f}%"
        return (
            f"within {within} of optimal"
            + ("" if self.memory_model == "tensor" else f" in the {self.memory_model} memory model")
            + " (not proven optimal in the time limit): peak "
            f"{self.peak_bytes:,} B, no order peaks below {self.lower_bound_bytes:,} B"
        )


# ---- heuristics (upper bounds) ----------------------------------------------------------------


class _OutOfTime(Exception):
    """A heuristic passed its deadline; the scheduler keeps the orders it already has."""


def _check(deadline: float | None, count: int) -> None:
    if deadline is not None and not count & 63 and time.perf_counter() > deadline:
        raise _OutOfTime


class _Runner:
    """A partial order being built step by step: resident bytes, pending readers, ready operators.

    `freeable_now[v]` is the bytes of v's inputs whose only pending reader is v: running v next frees
    them. It only grows, one tensor at a time, which lets list schedulers keep their ready
    operators in a heap instead of re-scoring all of them at every step (wide graphs have
    thousands of ready operators)."""

    def __init__(self, problem: OrderingProblem) -> None:
        self.p = problem
        self.pending_readers = [len(c) for c in problem.freeable_consumers]
        self.missing_preds = [len(preds) for preds in problem.predecessors]
        self.ready = {v for v in range(problem.n_ops) if not problem.predecessors[v]}
        self.resident = problem.always_bytes + problem.initial_bytes + problem.first_step_only_bytes
        self.order: list[int] = []
        self.done = [False] * problem.n_ops
        self.freeable_now = [0] * problem.n_ops
        for t, readers in enumerate(problem.freeable_consumers):
            if len(readers) == 1:
                self.freeable_now[readers[0]] += problem.freeable_bytes[t]
        self.changed: list[int] = []  # operators whose freeable_now grew in the last run()
        self.became_ready: list[int] = []

    def step_bytes(self, v: int) -> int:
        return self.resident + self.p.output_bytes[v]

    def delta(self, v: int) -> int:
        """Change of resident bytes if v runs next."""
        return self.own_delta(v) - (self.p.first_step_only_bytes if not self.order else 0)

    def own_delta(self, v: int) -> int:
        """`delta` less the part every candidate shares (bytes live in the first step only)."""
        return self.p.kept_output_bytes[v] - self.freeable_now[v]

    def run(self, v: int) -> None:
        p = self.p
        self.resident += self.delta(v)
        self.done[v] = True
        self.changed = []
        for t in p.op_freeable_inputs[v]:
            self.pending_readers[t] -= 1
            if self.pending_readers[t] == 1:
                last = next(c for c in p.freeable_consumers[t] if not self.done[c])
                self.freeable_now[last] += p.freeable_bytes[t]
                self.changed.append(last)
        self.ready.discard(v)
        self.became_ready = []
        for s in p.successors[v]:
            self.missing_preds[s] -= 1
            if self.missing_preds[s] == 0:
                self.ready.add(s)
                self.became_ready.append(s)
        self.order.append(v)


def _list_schedule(
    problem: OrderingProblem, key: Callable[[_Runner, int], tuple], deadline: float | None = None
) -> list[int]:
    """Run the ready operator with the smallest `key` at every step. `key` may only depend on the
    runner through `freeable_now` of its operator and on quantities common to all candidates (the
    resident bytes, whether it is the first step), so a lazy heap finds the same operator as a
    scan over every ready one."""
    runner = _Runner(problem)
    heap = [(key(runner, v), v) for v in runner.ready]
    heapq.heapify(heap)
    while heap:
        _check(deadline, len(runner.order))
        k, v = heapq.heappop(heap)
        if runner.done[v] or k != key(runner, v):
            continue
        runner.run(v)
        for u in {*runner.changed, *runner.became_ready}:
            if u in runner.ready:
                heapq.heappush(heap, (key(runner, u), u))
    return runner.order


def greedy_step(problem: OrderingProblem, deadline: float | None = None) -> list[int]:
    """Run the ready operator whose step is cheapest (then the one that frees most)."""
    latest = problem.latest_level
    out = problem.output_bytes
    return _list_schedule(problem, lambda r, v: (out[v], r.own_delta(v), latest[v], v), deadline)


def greedy_delta(problem: OrderingProblem, deadline: float | None = None) -> list[int]:
    """Run the ready operator that leaves the least memory resident (then the cheapest step)."""
    latest = problem.latest_level
    out = problem.output_bytes
    return _list_schedule(problem, lambda r, v: (r.own_delta(v), out[v], latest[v], v), deadline)


def depth_first(problem: OrderingProblem, deadline: float | None = None) -> list[int]:
    """Finish the branch in progress before starting another: prefer successors of recent operators."""
    runner = _Runner(problem)
    latest = problem.latest_level
    recent: list[int] = []
    while runner.ready:
        _check(deadline, len(runner.order))
        choice = None
        while recent and choice is None:
            near = [s for s in problem.successors[recent[-1]] if s in runner.ready]
            if near:
                choice = min(near, key=lambda v: (runner.step_bytes(v), runner.delta(v), latest[v], v))
            else:
                recent.pop()
        if choice is None:
            choice = min(runner.ready, key=lambda v: (runner.delta(v), runner.step_bytes(v), latest[v], v))
        runner.run(choice)
        recent.append(choice)
    return runner.order


def greedy_reverse(problem: OrderingProblem, deadline: float | None = None) -> list[int]:
    """List scheduling from the last step backwards: each operator as late as possible.

    Going backwards a tensor appears at its last reader and disappears at its producer, so
    choosing the cheapest step among operators whose successors are all placed runs producers
    right before their readers (branches of a later block are not started early). The ready
    operators sit in a lazy heap: an operator's score only changes when one of its inputs becomes
    live, once per tensor.
    """
    graph_outputs = {t for v in range(problem.n_ops) for t, _ in problem.op_writes[v]} & set(
        problem.graph.outputs
    )
    needed = set(graph_outputs)  # tensors live at the current (earliest placed) step
    readers: dict[int, list[tuple[int, int]]] = {}
    new_inputs = [0] * problem.n_ops  # bytes of v's inputs not live yet
    for v in range(problem.n_ops):
        for t, b in problem.op_reads[v]:
            readers.setdefault(t, []).append((v, b))
            if t not in needed:
                new_inputs[v] += b
    missing = [len(s) for s in problem.successors]
    placed_flag = [False] * problem.n_ops
    placed: list[int] = []
    earliest = problem.earliest_level

    def cost(v: int) -> tuple[int, int, int, int]:
        own_outputs = sum(b for t, b in problem.op_writes[v] if t not in needed)
        needed_outputs = sum(b for t, b in problem.op_writes[v] if t in needed)
        return new_inputs[v] + own_outputs, new_inputs[v] - needed_outputs, -earliest[v], -v

    heap = [(cost(v), v) for v in range(problem.n_ops) if not missing[v]]
    heapq.heapify(heap)
    while heap:
        _check(deadline, len(placed))
        key, v = heapq.heappop(heap)
        if placed_flag[v] or key != cost(v):
            continue
        placed_flag[v] = True
        placed.append(v)
        for t, _ in problem.op_writes[v]:
            needed.discard(t)
        touched = []
        for t, _ in problem.op_reads[v]:
            if t not in needed:
                needed.add(t)
                for c, b in readers[t]:
                    new_inputs[c] -= b
                    if not placed_flag[c] and not missing[c]:
                        touched.append(c)
        for p in problem.predecessors[v]:
            missing[p] -= 1
            if not missing[p]:
                touched.append(p)
        for u in set(touched):
            heapq.heappush(heap, (cost(u), u))
    return placed[::-1]


def _post_order(problem: OrderingProblem, heavy_first: bool) -> list[int]:
    """Post-order DFS from the sinks: each operator right after its predecessor subgraphs, the
    subgraph needing most memory first (Sethi-Ullman's rule) or in stored order."""
    need = [0] * problem.n_ops
    for v in problem.topological_order:
        own = problem.input_bytes[v] + problem.output_bytes[v]
        need[v] = max([own] + [need[p] for p in problem.predecessors[v]])

    def children(v: int) -> list[int]:
        preds = list(problem.predecessors[v])
        return sorted(preds, key=lambda p: (-need[p], p)) if heavy_first else preds

    done = [False] * problem.n_ops
    order: list[int] = []
    sinks = [v for v in range(problem.n_ops) if not problem.successors[v]]
    for root in sorted(sinks, key=lambda v: (-need[v], v)) if heavy_first else sinks:
        if done[root]:
            continue
        stack = [(root, iter(children(root)))]
        done[root] = True
        while stack:
            v, it = stack[-1]
            nxt = next((p for p in it if not done[p]), None)
            if nxt is None:
                order.append(v)
                stack.pop()
            else:
                done[nxt] = True
                stack.append((nxt, iter(children(nxt))))
    return order


def depth_first_heavy(problem: OrderingProblem, deadline: float | None = None) -> list[int]:
    return _post_order(problem, heavy_first=True)


def depth_first_stored(problem: OrderingProblem, deadline: float | None = None) -> list[int]:
    return _post_order(problem, heavy_first=False)


def cut_bisection(problem: OrderingProblem, max_cuts: int = 200, deadline: float | None = None) -> list[int]:
    """Split an order at its peak along the minimum cut that bounds that peak (HMCOS-style).

    Start from `depth_first_heavy`. The order is a sequence of segments whose boundaries stay put
    (the operators before a boundary stay before it, so reordering inside a segment changes no
    step outside it). Take the first peak step, running v in segment [lo, hi): the cheapest
    down-set D that holds everything before lo and v's predecessors, and neither v nor anything
    after hi, is a minimum cut (`CutNetwork.min_downset`). If running v right after D is cheaper
    than the peak, reorder the segment as D's operators, v, the rest (each in their current
    order) and make both sides of v new segments. Stop when the peak step's cut cannot lower it
    (or at once when the start order already meets the trivial bound); return the best order seen.
    Each cut finishes whatever the cheapest executed set finishes, e.g. a whole layer of an
    unrolled recurrence, whatever order the file stores the operators in.
    """
    order = depth_first_heavy(problem)
    n = len(order)
    steps = problem.step_profile(order)
    if n < 2 or max(steps) <= trivial_bound(problem).bytes:
        return order
    net = CutNetwork(problem)
    bounds = [0, n]  # segment boundaries, sorted
    best, best_key = list(order), _peak_key(steps)
    successors, predecessors = problem.successors, problem.predecessors
    readers, out = problem.freeable_consumers, problem.output_bytes
    position = [0] * n
    for i, u in enumerate(order):
        position[u] = i
    for _ in range(max_cuts):
        if deadline is not None and time.perf_counter() > deadline:
            break
        peak = max(steps)
        s = steps.index(peak)
        k = bisect.bisect_right(bounds, s)
        lo, hi = bounds[k - 1], bounds[k]
        if hi - lo < 2:
            break
        v = order[s]
        # Forcing the prefix's operators with a successor outside it (or none) into D forces the
        # whole prefix (every other one is their ancestor); likewise out of D for the suffix.
        forced_in = [
            u for u in order[:lo] if not successors[u] or any(position[w] >= lo for w in successors[u])
        ]
        forced_out = [
            u for u in order[hi:] if not predecessors[u] or any(position[w] < hi for w in predecessors[u])
        ]
        found = net.min_downset((*predecessors[v], *forced_in), (v, *forced_out))
        if found is None or found[0] + problem.always_bytes + out[v] >= peak:
            break
        downset = found[1]
        segment = order[lo:hi]
        left = [u for u in segment if downset >> u & 1]
        order[lo:hi] = left + [v] + [u for u in segment if u != v and not downset >> u & 1]
        for i in range(lo, hi):
            position[order[i]] = i
        for b in (lo + len(left), lo + len(left) + 1):
            if lo < b < hi:
                bisect.insort(bounds, b)
        # only the segment's steps change: replay it from the bytes resident at lo
        resident = steps[lo] - out[segment[0]]
        pending: dict[int, int] = {}
        for i in range(lo, hi):
            u = order[i]
            steps[i] = resident + out[u]
            resident += problem.kept_output_bytes[u]
            for t in problem.op_freeable_inputs[u]:
                if t not in pending:
                    pending[t] = sum(1 for c in readers[t] if position[c] >= lo)
                pending[t] -= 1
                if not pending[t]:
                    resident -= problem.freeable_bytes[t]
            if i == 0:
                resident -= problem.first_step_only_bytes
        key = _peak_key(steps)
        if key < best_key:
            best, best_key = list(order), key
    return best


HEURISTICS: dict[str, Callable[..., list[int]]] = {  # (problem, deadline=None) -> order
    "stored": lambda problem, deadline=None: list(problem.stored_order),
    "greedy_step": greedy_step,
    "greedy_delta": greedy_delta,
    "greedy_reverse": greedy_reverse,
    "depth_first": depth_first,
    "depth_first_heavy": depth_first_heavy,
    "depth_first_stored": depth_first_stored,
    "cut_bisection": lambda problem, deadline=None: cut_bisection(problem, deadline=deadline),
}
# The order the scheduler runs them in: cheapest first, so that a short budget still has answers.
HEURISTIC_RUN_ORDER = (
    "stored",
    "depth_first_heavy",
    "depth_first_stored",
    "greedy_step",
    "greedy_delta",
    "greedy_reverse",
    "cut_bisection",
    "depth_first",
)
ESSENTIAL_HEURISTICS = ("stored", "depth_first_heavy", "greedy_step")


# ---- exact search over down-sets --------------------------------------------------------------


@dataclass(frozen=True)
class SearchResult:
    order: tuple[int, ...] | None  # the optimal order when it peaks below `upper`, else None
    peak_bytes: int | None
    complete: bool  # True: the optimum is peak_bytes, or (order None) at least `upper`
    states: int  # down-sets expanded
    stored_states: int  # down-sets held in memory at the end (capped by max_states)
    frontier_bytes: int  # every order peaks at >= min(frontier_bytes, upper), complete or not


def exact_search(
    problem: OrderingProblem,
    upper: int,
    lower: int = 0,
    deadline: float | None = None,
    max_states: int = MAX_SEARCH_STATES,
    dominance: bool = True,
    start: int = 0,
    ops: int | None = None,
) -> SearchResult:
    """Lowest-peak order below `upper`, by bottleneck Dijkstra over down-sets.

    A state's key is max(peak so far, `lower`): every order reaches `lower`, so states under that
    floor are interchangeable and explored deepest-first, and a floor-reaching order is found
    almost without branching. Steps costing `upper` or more are cut (branch and bound). The
    dominance rule (`dominance`): if a ready operator frees at least as much as it keeps and its
    step is within the key, running it now is never worse (its resident saving only grows in
    later states), so it becomes the state's only move. When the search stops early, the
    smallest key still unexpanded is a valid lower bound (`frontier_bytes`).

    With `start` (a down-set already executed) and `ops` (a bitmask of operators such that start
    plus ops is a down-set) it orders only `ops` after `start`, minimising the peak of just those
    steps: a window of a longer order (see `improve_by_windows`). Its result `order` is then the
    window's order.
    """
    n = problem.n_ops
    goal = start | ops if ops is not None else problem.full_mask
    if n == 0:  # no steps, so memory.profile's peak is 0
        return SearchResult(() if upper > 0 else None, 0 if upper > 0 else None, True, 0, 1, 0)
    out = problem.output_bytes
    kept = problem.kept_output_bytes
    freeable_bytes = problem.freeable_bytes
    reader_mask = problem.freeable_consumer_mask
    inputs = problem.op_freeable_inputs
    pred_mask = problem.predecessor_mask
    successors = problem.successors
    first_only = problem.first_step_only_bytes
    stride = n + 1
    todo = goal & ~start
    start_ready = sum(1 << v for v in iter_bits(todo) if not pred_mask[v] & ~start)
    start_resident = problem.resident_bytes(start)
    best: dict[int, int] = {start: lower * stride + n}  # mask -> key * stride + last operator
    heap = [(lower, 0, start_resident, start, start_ready)]
    expanded = 0
    check_every = 255 if n <= 1000 else 0  # an expansion scans every ready operator
    while heap:
        key, neg_depth, resident, mask, ready = heapq.heappop(heap)
        if best[mask] // stride < key:
            continue
        if mask == goal:
            order = []
            while mask != start:
                v = best[mask] % stride
                order.append(v)
                mask ^= 1 << v
            order.reverse()
            return SearchResult(tuple(order), key, True, expanded, len(best), key)
        expanded += 1
        if len(best) > max_states or (
            deadline is not None and not expanded & check_every and time.perf_counter() > deadline
        ):
            return SearchResult(None, None, False, expanded, len(best), min(key, upper))
        moves = []
        r = ready
        while r:
            low = r & -r
            r ^= low
            v = low.bit_length() - 1
            step = resident + out[v]
            if step >= upper:
                continue
            after = mask | low
            change = kept[v] - sum(freeable_bytes[t] for t in inputs[v] if not reader_mask[t] & ~after)
            moves.append((v, low, step, change))
            if dominance and change <= 0 and step <= key:
                moves = [moves[-1]]
                break
        depth = 1 - neg_depth
        for v, low, step, change in moves:
            child = mask | low
            child_key = step if step > key else key
            old = best.get(child)
            if old is not None and old // stride <= child_key:
                continue
            best[child] = child_key * stride + v
            child_ready = ready ^ low
            for s in successors[v]:
                if not pred_mask[s] & ~child and todo >> s & 1:
                    child_ready |= 1 << s
            child_resident = resident + change - (first_only if not mask else 0)
            heapq.heappush(heap, (child_key, -depth, child_resident, child, child_ready))
    return SearchResult(None, None, True, expanded, len(best), upper)


@dataclass(frozen=True)
class StagedResult:
    order: tuple[int, ...]  # the best order found (the start order if nothing better)
    complete: bool  # True: `order` is optimal (its peak is at most `frontier_bytes`)
    states: int  # down-sets held, over all stages and searches
    frontier_bytes: int  # every order peaks at >= this
    stages: int  # stages the order splits into at operators every order runs at the same step
    stage_ops: list[int] | None = None  # the bottleneck stage's operators, when complete
    bound: LowerBound | None = None  # the stage bound that raised the floor above `lower`, if any


def peak_stage(problem: OrderingProblem, order: Sequence[int]) -> tuple[int, int]:
    """(start, ops) bitmasks of the stage holding the first peak step of `order`: the operators
    between the cut operators around it, and everything before them (`layered.stage_is_fixed`).
    The whole graph when there is no cut operator."""
    position = {v: i for i, v in enumerate(order)}
    edges = sorted({0, len(order), *(position[c] + 1 for c in cut_operators(problem))})
    steps = problem.step_profile(order)
    s = steps.index(max(steps)) if steps else 0
    lo = max((e for e in edges if e <= s), default=0)
    hi = min((e for e in edges if e > s), default=len(order))
    return sum(1 << v for v in order[:lo]), sum(1 << v for v in order[lo:hi])


def cut_operators(problem: OrderingProblem) -> list[int]:
    """Operators comparable with every other one: every order runs all their ancestors before them
    and all their descendants after, so each runs at the same step in every order (stride-2 stage
    boundaries of a RandWire network, the joins of a chain of blocks)."""
    n = problem.n_ops
    return [
        v
        for v in problem.topological_order
        if problem.ancestors[v].bit_count() + problem.descendants[v].bit_count() + 1 == n
    ]


# Beam widths tried on a stage before the exact decisions, while they lower its peak (narrow:
# a backward decision below the peak often settles the stage sooner than a wide beam).
STAGE_BEAM_WIDTHS = (64, 512)
# Share of the time left that a stage's beams may take.
STAGE_BEAM_SHARE = 0.3
# Wider beams for a stage whose exact decision gave up (`give_up`), while time is left.
STAGE_WIDE_BEAM_WIDTHS = (4096, 16384, 65536)
# Share of the time left that the decision just below a stage's peak may take (`give_up`; it
# gives up sooner when its layers say it cannot finish): the wide beams keep the rest. At 0.7
# ws_53_87_56_s93's decision still finishes and ws_37_95_90_s71's 16,384-wide beam has its 2 s.
STAGE_TOP_SHARE = 0.7


# Stage decisions try both directions briefly and finish the one that got further
# (`layered.layered_search(backward=None)`): backward, an operator that keeps at least what it
# frees is best run last, so most down-sets of a RandWire stage have one way back (a few hundred
# thousand down-sets back for tens of millions forward); forward wins where many operators free
# more than they keep when run last (dead ends: outputs nobody reads).
DECISION_DIRECTION: bool | None = None


def _share_of(deadline: float | None, share: float) -> float | None:
    """The deadline that leaves `share` of the time until `deadline` from now (None: no deadline)."""
    if deadline is None:
        return None
    now = time.perf_counter()
    return now + share * (deadline - now)


def staged_search(
    problem: OrderingProblem,
    order: Sequence[int],
    lower: int,
    deadline: float | None = None,
    max_states: int = LAYERED_MAX_STATES,
    beam: bool = True,
    give_up: bool = False,
    beam_deadline: float | None = None,
    on_better: Callable[[list[int]], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> StagedResult:
    """Exact search stage by stage between cut operators (divide and conquer, as Serenity does).

    The down-set executed when a cut operator runs is the same in every order, so the steps of the
    operators between two cuts depend on their own order only, and the lowest peak is the largest
    of the stages' lowest peaks. Repeatedly take the stage holding the peak step:

    1. beams over its down-sets (`layered_search` with a width, growing) look for an order of the
       stage below the peak; one found replaces the stage and the next peak is attacked;
    2. otherwise decide exactly whether the stage fits under the floor (every reachable down-set
       held, `bounds.stage_bound`): it does -> its order replaces the stage (nothing can be lower);
       it does not -> the cheapest cut step is a new floor for every order (a `stage_exhaustive`
       bound), and the decision is repeated at that floor, until the floor reaches the peak (the
       order is optimal) or the time or the states run out.

    The floors climb one achievable step at a time, so the cheap decisions come first and the one
    at the optimum, the dearest, comes last. With no cut operator the whole graph is one stage.
    `give_up`: first decide at once whether the stage fits below the peak (no -> optimal), and
    climb from the floor only when that decision cannot finish; a decision stops once its first
    half of layers took longer than the time left (`layered_search`); wider beams
    (`STAGE_WIDE_BEAM_WIDTHS`) then look for a better order of the stage until `beam_deadline`
    (default: `deadline`), and the rest of the budget goes to the caller's other bounds.
    `on_better` is called with each better order (a stage's peak lowered) as it is found; `stop`
    is asked with the deadline (True: stop as if it had passed)."""
    order = list(order)
    n = len(order)
    position = {v: i for i, v in enumerate(order)}
    edges = sorted({0, n, *(position[c] + 1 for c in cut_operators(problem))})
    stages = [(lo, hi) for lo, hi in zip(edges, edges[1:], strict=False) if hi > lo]
    states = 0
    floor = lower
    floor_bound: LowerBound | None = None
    beamed: set[tuple[int, int]] = set()
    given_up: set[tuple[int, int, int]] = set()  # (stage, floor) whose decision gave up
    topped: set[tuple[int, int, int]] = set()  # (stage, peak) decided just below the peak
    widest: dict[tuple[int, int, int], int] = {}  # (stage, peak) -> widest beam that found nothing
    steps = problem.step_profile(order)
    beam_deadline = deadline if beam_deadline is None else beam_deadline

    def result(complete: bool, stage_ops: list[int] | None = None) -> StagedResult:
        return StagedResult(tuple(order), complete, states, floor, len(stages), stage_ops, floor_bound)

    reported = list(order)
    while True:
        peak = max(steps, default=0)
        if peak <= floor:
            return result(True)
        if deadline is not None and time.perf_counter() > deadline or stop is not None and stop():
            return result(False)
        if on_better is not None and order != reported:
            reported = list(order)
            on_better(reported)
        s = steps.index(peak)
        lo, hi = next(stage for stage in stages if stage[0] <= s < stage[1])
        prefix = sum(1 << v for v in order[:lo])
        ops = sum(1 << v for v in order[lo:hi])
        if beam and (lo, hi) not in beamed and hi - lo > 2:
            beamed.add((lo, hi))
            beam_end = _share_of(deadline, STAGE_BEAM_SHARE)
            improved = False
            for width in STAGE_BEAM_WIDTHS:
                found = layered_search(
                    problem, prefix, ops, peak - 1, width=width, deadline=beam_end, stop=stop
                )
                states += found.states
                if found.order is not None:
                    order[lo:hi] = found.order
                    steps = problem.step_profile(order)
                    beamed.discard((lo, hi))  # a lower peak: the next beam may go lower still
                    improved = True
                    break
                if beam_end is not None and time.perf_counter() > beam_end:
                    break
                widest[lo, hi, peak] = width  # ran to its end without a lower peak
            if improved:
                continue
        if give_up and floor < peak - 1 and (lo, hi, peak) not in topped:
            # first the decision that settles the stage at once: does any order of it stay below
            # the peak? No -> the order is optimal; yes -> a better order. Only when it cannot
            # finish do the cheaper decisions below raise the floor a step at a time.
            topped.add((lo, hi, peak))
            top = layered_search(
                problem,
                prefix,
                ops,
                peak - 1,
                deadline=_share_of(deadline, STAGE_TOP_SHARE),
                max_states=max_states,
                give_up=True,
                stop=stop,
                backward=DECISION_DIRECTION,
            )
            states += top.states
            if top.order is not None:
                order[lo:hi] = top.order
                steps = problem.step_profile(order)
                continue
            if not top.complete:  # the cheaper decisions would give up too: wider beams instead
                given_up.add((lo, hi, floor))
            else:
                floor = top.floor_bytes
                floor_bound = stage_exhaustive_bound(prefix, ops, peak - 1, top)
                return result(True, sorted(order[lo:hi]))
        cap = floor
        if (lo, hi, floor) in given_up:
            found = LayeredResult(None, None, False, 0, 0)
        else:
            found = layered_search(
                problem,
                prefix,
                ops,
                cap,
                deadline=deadline,
                max_states=max_states,
                give_up=give_up,
                stop=stop,
                backward=DECISION_DIRECTION,
            )
            states += found.states
        if not found.complete and found.order is None and give_up:
            given_up.add((lo, hi, floor))
            improved = False
            for width in STAGE_WIDE_BEAM_WIDTHS if beam else ():
                if width <= widest.get((lo, hi, peak), 0):
                    continue  # this stage's peak already survived a beam this wide
                if beam_deadline is not None and time.perf_counter() > beam_deadline:
                    break
                wide = layered_search(
                    problem, prefix, ops, peak - 1, width=width, deadline=beam_deadline, stop=stop
                )
                states += wide.states
                if wide.order is not None:
                    order[lo:hi] = wide.order
                    steps = problem.step_profile(order)
                    improved = True
                    break
            if improved:
                continue
            return result(False)
        if found.order is not None:  # the stage fits under the floor: nothing can do better there
            order[lo:hi] = found.order
            steps = problem.step_profile(order)
            continue
        if not found.complete:
            return result(False)
        floor = found.floor_bytes
        floor_bound = stage_exhaustive_bound(prefix, ops, cap, found)
        if floor >= peak:
            return result(True, sorted(order[lo:hi]))


def _peak_key(steps: Sequence[int]) -> tuple[int, int]:
    peak = max(steps, default=0)
    return peak, sum(1 for cost in steps if cost == peak)


def _move_blocks(
    problem: OrderingProblem, order: list[int], reach: int = 48, deadline: float | None = None
) -> list[int] | None:
    """The best block move against the first peak step s, or None if none lowers (peak, number of
    peak steps). A block is an operator p before s with all its descendants up to s, moved right
    after s (nothing left behind depends on them); or an operator after s with its ancestors from
    s on, moved right before s. Single shifts of one producer or reader are the smallest case."""
    steps = problem.step_profile(order)
    best_key = _peak_key(steps)
    s = steps.index(best_key[0])
    n = len(order)
    best = None

    def consider(trial: list[int]) -> None:
        nonlocal best, best_key
        if deadline is not None and time.perf_counter() > deadline:
            return
        key = _peak_key(problem.step_profile(trial))
        if key < best_key:
            best, best_key = trial, key

    for i in range(max(0, s - reach), s):
        below = problem.descendants[order[i]] | (1 << order[i])
        block = [v for v in order[i : s + 1] if below >> v & 1]
        if order[s] in block and len(block) == s + 1 - i:
            continue  # the whole stretch: moving it changes nothing
        rest = [v for v in order[i : s + 1] if not below >> v & 1]
        consider(order[:i] + rest + block + order[s + 1 :])
    for j in range(s + 1, min(n, s + 1 + reach)):
        above = problem.ancestors[order[j]] | (1 << order[j])
        block = [v for v in order[s : j + 1] if above >> v & 1]
        if len(block) == j + 1 - s:
            continue
        rest = [v for v in order[s : j + 1] if not above >> v & 1]
        consider(order[:s] + block + rest + order[j + 1 :])
    return best


def improve_by_windows(
    problem: OrderingProblem,
    order: Sequence[int],
    lower: int = 0,
    deadline: float | None = None,
    sizes: Sequence[int] = (16, 32, 64),
    max_states: int = 50_000,
) -> list[int]:
    """Large-neighbourhood search: reorder windows of consecutive steps around peak steps exactly.

    The operators before a window stay before it and those after stay after, so a window's new
    order changes no step outside it; exact search over the window's down-sets with the peak as
    the ceiling removes the peak steps inside it when any order of the window can. Repeats until
    the peak reaches `lower`, no window helps, or the deadline.
    """
    order = list(order)
    n = len(order)
    while deadline is None or time.perf_counter() < deadline:
        if max(problem.step_profile(order), default=0) <= lower:
            break
        shifted = _move_blocks(problem, order, deadline=deadline)
        if shifted is not None:
            order = shifted
            continue
        steps = problem.step_profile(order)
        peak = max(steps, default=0)
        improved = False
        for size in sizes:
            for s in [s for s, cost in enumerate(steps) if cost == peak]:
                lo = max(0, min(s - size // 2, n - size))
                hi = min(n, lo + size)
                prefix = sum(1 << v for v in order[:lo])
                window = sum(1 << v for v in order[lo:hi])
                # first aim at the floor, then settle for any improvement (a floor just under
                # the peak turns the search into a depth-first dive)
                for floor in (lower, peak - 1):
                    result = exact_search(
                        problem,
                        upper=peak,
                        lower=floor,
                        deadline=deadline,
                        max_states=max_states,
                        start=prefix,
                        ops=window,
                    )
                    if result.order is not None or result.complete:
                        break
                if result.order is not None:
                    order[lo:hi] = result.order
                    steps = problem.step_profile(order)
                    improved = True
                    if max(steps) < peak:
                        break
            if improved:
                break
            if size >= n or (deadline is not None and time.perf_counter() > deadline):
                break
        if not improved:
            break
    return order


def plain_downset_dp(
    problem: OrderingProblem, max_states: int = 2_000_000, deadline: float | None = None
) -> SearchResult:
    """The published baseline: dynamic programming over every down-set, layer by layer, no pruning.

    For comparison in the benchmark only; `exact_search` is the one the scheduler uses.
    """
    n = problem.n_ops
    start_resident = problem.always_bytes + problem.initial_bytes + problem.first_step_only_bytes
    layers: list[dict[int, tuple[int, int, int]]] = [{0: (0, start_resident, -1)}]
    states = 1
    for _ in range(n):
        nxt: dict[int, tuple[int, int, int]] = {}
        for count, (mask, (peak, resident, _)) in enumerate(layers[-1].items()):
            if deadline is not None and not count & 1023 and time.perf_counter() > deadline:
                return SearchResult(None, None, False, states + len(nxt), states + len(nxt), 0)
            for v in range(n):
                if mask >> v & 1 or problem.predecessor_mask[v] & ~mask:
                    continue
                step = resident + problem.output_bytes[v]
                child = mask | (1 << v)
                child_peak = max(peak, step)
                old = nxt.get(child)
                if old is None or child_peak < old[0]:
                    freed = problem.freed_bytes(mask, v)
                    child_resident = resident + problem.kept_output_bytes[v] - freed
                    if not mask:
                        child_resident -= problem.first_step_only_bytes
                    nxt[child] = (child_peak, child_resident, v)
        states += len(nxt)
        layers.append(nxt)
        if states > max_states or (deadline is not None and time.perf_counter() > deadline):
            return SearchResult(None, None, False, states, states, 0)
    if n == 0:
        return SearchResult((), 0, True, 1, 1, 0)
    mask = problem.full_mask
    peak = layers[-1][mask][0]
    order = []
    for layer in reversed(layers[1:]):
        v = layer[mask][2]
        order.append(v)
        mask ^= 1 << v
    return SearchResult(tuple(reversed(order)), peak, True, states, states, peak)


# ---- CP-SAT ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CpSatResult:
    order: tuple[int, ...] | None  # best order CP-SAT found (None if none)
    peak_bytes: int | None
    status: str  # "OPTIMAL" | "FEASIBLE" | "INFEASIBLE" | "UNKNOWN" | ...
    bound_bytes: int  # CP-SAT's proven lower bound on the peak


def cp_sat_search(
    problem: OrderingProblem,
    hint: Sequence[int],
    upper: int,
    lower: int,
    deadline: float,
    progress: Progress | None = None,
) -> CpSatResult:
    """CP-SAT: operator positions form a permutation respecting the DAG; each tensor is an interval
    from its producer's position to its last reader's (or the end for graph outputs) and a
    cumulative constraint with capacity `peak` bounds the live bytes of every step. The solve
    gets whatever is left until `deadline` (time.perf_counter()) once the model is built; none
    left once OR-Tools is loaded (a second or more, the first time, on a busy machine) or the
    model built: not solved ("NOT_RUN"), so that the stage ends near its deadline."""
    from ortools.sat.python import cp_model

    n = problem.n_ops
    if n == 0:
        return CpSatResult((), 0, "OPTIMAL", 0)
    not_run = CpSatResult(None, None, "NOT_RUN", lower)
    if time.perf_counter() >= deadline:
        return not_run
    model = cp_model.CpModel()
    position = {v: i for i, v in enumerate(hint)}
    pos = [model.new_int_var(0, n - 1, f"pos{v}") for v in range(n)]
    model.add_all_different(pos)
    for v in range(n):
        for p in problem.predecessors[v]:
            model.add(pos[p] + 1 <= pos[v])
    peak = model.new_int_var(lower, upper, "peak")
    intervals = []
    demands = []
    fixed_bytes = problem.always_bytes
    # A refined model's overlap at v: the overlapped input's interval ends before v's step, and v's
    # step carries that input's bytes less the saving instead (never negative: saving <= its bytes).
    ends_early = {problem.saved_input[v]: v for v in range(n) if problem.saved_input[v] >= 0}
    for v in range(n):  # outputs nobody reads: live in their producer's step only
        transient = problem.output_bytes[v] - problem.kept_output_bytes[v]
        if problem.saved_input[v] >= 0:
            transient += problem.freeable_bytes[problem.saved_input[v]]
        if transient:
            intervals.append(model.new_fixed_size_interval_var(pos[v], 1, f"transient{v}"))
            demands.append(transient)
        if problem.graph_output_bytes[v]:
            size = model.new_int_var(1, n, f"out_size{v}")
            model.add_hint(size, n - position[v])
            intervals.append(model.new_interval_var(pos[v], size, n, f"out{v}"))
            demands.append(problem.graph_output_bytes[v])
    if problem.first_step_only_bytes:
        intervals.append(model.new_fixed_size_interval_var(0, 1, "first_step"))
        demands.append(problem.first_step_only_bytes)
    for t, nbytes in enumerate(problem.freeable_bytes):
        p = problem.freeable_producer[t]
        readers = problem.freeable_consumers[t]
        start = pos[p] if p >= 0 else 0
        last_read = max(position[c] for c in readers)
        if t in ends_early:  # its last reader in every order; the interval stops before its step
            v = ends_early[t]
            size = model.new_int_var(0, n, f"size{t}")
            model.add_hint(size, position[v] - (position[p] if p >= 0 else 0))
            intervals.append(model.new_interval_var(start, size, pos[v], f"tensor{t}"))
            demands.append(nbytes)
            continue
        if len(readers) == 1:
            end = pos[readers[0]]
        else:
            end = model.new_int_var(0, n - 1, f"end{t}")
            model.add_hint(end, last_read)
            for c in readers:
                model.add(end >= pos[c])
        size = model.new_int_var(1, n, f"size{t}")
        model.add_hint(size, last_read + 1 - (position[p] if p >= 0 else 0))
        intervals.append(model.new_interval_var(start, size, end + 1, f"tensor{t}"))
        demands.append(nbytes)
    if fixed_bytes:
        intervals.append(model.new_fixed_size_interval_var(0, n, "always"))
        demands.append(fixed_bytes)
    model.add_cumulative(intervals, demands, peak)
    model.minimize(peak)
    for v in range(n):
        model.add_hint(pos[v], position[v])
    model.add_hint(peak, problem.peak_bytes(hint))
    if time.perf_counter() >= deadline:
        return not_run

    def new_solver() -> cp_model.CpSolver:
        solver = cp_model.CpSolver()
        # a margin for presolve overrun and teardown, larger on a busy machine
        solver.parameters.max_time_in_seconds = max(0.9 * (deadline - time.perf_counter()) - 0.05, 0.01)
        solver.parameters.num_workers = max(1, min(8, os.cpu_count() or 1))
        # OR-Tools 9.15's presolve can fail inside symmetry detection on hinted models
        # (IndexError: absl::btree_map::at); symmetry breaking is not needed here.
        solver.parameters.symmetry_level = 0
        return solver

    class Callback(cp_model.CpSolverSolutionCallback):
        def on_solution_callback(self) -> None:
            if progress is not None:
                progress(f"cp-sat: order with peak {int(self.objective_value):,} B")

    solver = new_solver()
    try:
        status = solver.solve(model, Callback())
    except (IndexError, RuntimeError):  # the same presolve failure by another path: drop the hints
        model.clear_hints()
        solver = new_solver()
        status = solver.solve(model, Callback())
    name = solver.status_name(status)
    if status == cp_model.INFEASIBLE:  # no order peaks at `upper` or less
        return CpSatResult(None, None, name, upper + 1)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return CpSatResult(None, None, name, lower)
    bound = max(lower, math.ceil(solver.best_objective_bound - 1e-6))
    order = tuple(sorted(range(n), key=lambda v: solver.value(pos[v])))
    return CpSatResult(order, problem.peak_bytes(order), name, bound)


# ---- the precedence tree beside the search -----------------------------------------------------

# Least time left for the tree that is worth a second process (forking and sending the tree back
# take some 10-50 ms), and how long past its deadline the parent waits for the tree to arrive.
TREE_BESIDE_SECONDS = 1.0
TREE_BESIDE_MARGIN = 0.3
# How long a tree being replaced may take to stop and send its bound.
TREE_BESIDE_STOP_SECONDS = 0.3


def _second_core() -> bool:
    """A core besides this process's own, and processes that can be forked (POSIX)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return cores >= 2 and "fork" in multiprocessing.get_all_start_methods()


def _grow_tree(
    send: Connection,
    problem: OrderingProblem,
    order: list[int],
    target: int,
    deadline: float,
    within: tuple[int, int],
    stop: c_byte,  # a multiprocessing.Value: raised by the parent
) -> None:
    """The child process's work: the tree, sent back whole when it ends (its deadline, its target,
    or the parent raising `stop`: the bound reached so far is still a bound)."""
    try:
        bound = precedence_tree_bound(
            problem, order, target, deadline=deadline, within=within, stop=lambda: bool(stop.value)
        )
        # pickling the nested tree recurses some four frames a level (this process only)
        sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * TREE_MAX_DEPTH))
        send.send(bound)
    except Exception:  # the parent sees no answer and goes on without the tree
        pass
    finally:
        send.close()


class _TreeBeside:
    """`precedence_tree_bound` in a forked process while this one searches for orders: the two
    attack the gap from both sides. Each better order the search finds starts a new tree for it
    (the tree splits on the pairs of the order's hottest steps: a tree grown from a worse order's
    steps was measured to reach lower bounds); the tree it replaces is asked to stop and send what
    it proved, and the best of the trees' bounds is the answer."""

    def __init__(self, problem: OrderingProblem, deadline: float) -> None:
        self.problem, self.deadline = problem, deadline
        self._context = multiprocessing.get_context("fork")
        self._process: multiprocessing.process.BaseProcess | None = None
        self._receive: Connection | None = None
        self._stop = self._context.Value("b", 0, lock=False)
        self._answer: LowerBound | None = None  # the running tree's, once sent
        self._best: LowerBound | None = None  # the best bound of the trees that ended
        self._target = 0
        self.started = 0

    def start(self, order: Sequence[int]) -> None:
        """A tree for `order` (the one before stops and sends its bound), unless too little time
        is left for it."""
        self._finish(time.perf_counter() + TREE_BESIDE_STOP_SECONDS, ask=True)
        if self.deadline - time.perf_counter() <= TREE_BESIDE_SECONDS:
            return
        order = list(order)
        self._target = self.problem.peak_bytes(order)
        self._stop.value = 0
        self._receive, send = self._context.Pipe(duplex=False)
        stage = peak_stage(self.problem, order)
        args = (send, self.problem, order, self._target, self.deadline, stage, self._stop)
        self._process = children.start_worker(self._context, _grow_tree, args)
        send.close()
        self.started += 1

    def proved(self) -> bool:
        """True once the running tree has answered with a bound at its order's peak (the search
        can stop)."""
        if self._answer is None and self._receive is not None:
            try:
                if self._receive.poll(0):
                    self._answer = self._receive.recv()
            except (EOFError, OSError):
                self.stop()
        return self._answer is not None and self._answer.bytes >= self._target

    def result(self, wait_until: float) -> LowerBound | None:
        """The best bound of the trees: the running one's if it answers by `wait_until`."""
        self._finish(wait_until, ask=False)
        return self._best

    def _finish(self, wait_until: float, ask: bool) -> None:
        """End the running tree, keeping its bound if it arrives by `wait_until` (`ask`: tell it to
        stop and send what it has now)."""
        try:
            if self._answer is None and self._receive is not None:
                if ask:
                    self._stop.value = 1
                if self._receive.poll(max(0.0, wait_until - time.perf_counter())):
                    self._answer = self._receive.recv()
        except (EOFError, OSError):
            pass
        finally:
            self.stop()
        if self._answer is not None and (self._best is None or self._answer.bytes > self._best.bytes):
            self._best = self._answer
        self._answer = None

    def stop(self) -> None:
        if self._process is not None:
            children.stop_worker(self._process)
            self._process = None
        if self._receive is not None:
            self._receive.close()
            self._receive = None


# ---- the scheduler -----------------------------------------------------------------------------


def ordering_problem(graph: Graph, model: Refinement | None = None) -> OrderingProblem:
    """The ordering problem of `graph` in the tensor model, or in a refined memory model
    (tinysched.memory.overlap): its storage graph, with each overlap's saving off its step."""
    if model is None or not model.refined:
        return OrderingProblem(graph)
    return OrderingProblem(model.storage, model.step_savings(), model.storage_order(graph.stored_order()))


def _graph_order(model: Refinement | None, order: Sequence[int]) -> tuple[list[int], list[int]]:
    """A problem's order as (the graph's own order, the problem order it stands for): a refined
    model's storage graph has synthetic no-code operators, placed where they cost nothing extra."""
    if model is None or not model.refined:
        return list(order), list(order)
    real = model.real_order(order)
    return real, model.storage_order(real)


def schedule(
    graph: Graph, time_limit: float = 5.0, progress: Progress | None = None, model: Refinement | None = None
) -> Schedule:
    """The lowest-peak order found within `time_limit` seconds, certified when proven optimal.

    Each stage runs only while the best order is unproven, and each has a share of the budget:
    heuristics and single-operator cuts (always), windows until 20 %, pair cuts until 30 %, exact
    search until 80 %, the precedence tree (from the search's best order) until 93 %, CP-SAT until
    97 % (a margin for its teardown).
    """
    started = time.perf_counter()
    say = progress or (lambda message: None)
    try:
        graph.check_order(graph.stored_order())
    except TinyschedError as err:
        raise TinyschedError(f"the stored operator order is not an execution order: {err}") from None
    problem = ordering_problem(graph, model)
    model_name = "tensor" if model is None or not model.refined else model.name
    n = problem.n_ops
    stats = {"cuts": 0, "search_states": 0}

    base, span = started, time_limit

    def at(share: float) -> float:
        """A stage's deadline: `share` of the time left after the heuristics."""
        return base + share * span

    def finish(order: Sequence[int], lower: int, certificate: Certificate | None, method: str) -> Schedule:
        real, order = _graph_order(model, order)
        peak = problem.peak_bytes(order)
        if certificate is not None and problem.n_ops > len(graph.operators):
            # a bound's operators are the storage graph's: name its synthetic ones for the reader
            synthetic = list(range(len(graph.operators), problem.n_ops))
            certificate = replace(
                certificate, witness={**certificate.witness, "in_place_buffer_ops": synthetic}
            )
        return Schedule(
            order=tuple(real),
            peak_bytes=peak,
            stored_order_peak_bytes=stored_peak,
            lower_bound_bytes=peak if certificate else min(lower, peak),
            certified=certificate is not None,
            certificate=certificate,
            method=method,
            seconds=time.perf_counter() - started,
            stats={**stats, "bound_kind": certificate.witness.get("bound", "") if certificate else ""},
            memory_model=model_name,
        )

    # Cheapest first, so that there is always an answer: the stored order needs no time at all.
    # Small graphs run every heuristic (microseconds); larger ones stop starting new ones at 30 %
    # of the budget and abandon one that runs past it. The later stages share what is left.
    heuristic_deadline = started + 0.3 * time_limit if n > SMALL_GRAPH_OPS else None
    found: dict[str, list[int]] = {}
    for name in HEURISTIC_RUN_ORDER:
        essential = name in ESSENTIAL_HEURISTICS  # O(edges log n): run whatever the budget
        if not essential and heuristic_deadline is not None and time.perf_counter() > heuristic_deadline:
            break
        try:
            limit = started + 0.9 * time_limit if essential else heuristic_deadline
            found[name] = HEURISTICS[name](problem, deadline=None if heuristic_deadline is None else limit)
        except _OutOfTime:
            pass
    stats["heuristics"] = len(found)
    base = time.perf_counter()
    span = max(0.0, started + time_limit - base)
    candidates = {name: found[name] for name in HEURISTICS if name in found}
    peaks = {name: problem.peak_bytes(order) for name, order in candidates.items()}
    stored_peak = peaks["stored"]
    method = min(peaks, key=lambda name: peaks[name])  # first (stored) wins ties
    best_order, best_peak = candidates[method], peaks[method]
    say(
        f"{len(graph.operators)} operators; stored order peaks at {stored_peak:,} B, "
        f"best heuristic ({method}) at {best_peak:,} B"
    )

    def certified_by_bound(bound: LowerBound) -> Schedule:
        certificate = Certificate("lower_bound", bound.bytes, {"bound": bound.kind, **bound.witness})
        return finish(best_order, bound.bytes, certificate, method)

    orders = list(candidates.values())
    bound = lower_bound(problem, orders=orders, target=best_peak, deadline=at(0.2), pairs=False)
    stats["cuts"] += bound.cuts
    if bound.bytes >= best_peak:
        return certified_by_bound(bound)
    say(f"lower bound {bound.bytes:,} B ({bound.kind}); reordering windows around the peak")
    improved = improve_by_windows(problem, best_order, bound.bytes, at(0.2))
    if problem.peak_bytes(improved) < best_peak:
        best_order, best_peak, method = improved, problem.peak_bytes(improved), "windows"
        orders.append(improved)
    if bound.bytes >= best_peak:
        return certified_by_bound(bound)
    say(f"best order peaks at {best_peak:,} B; pair bounds")
    pair = lower_bound(problem, orders=orders, target=best_peak, deadline=at(0.3))
    stats["cuts"] += pair.cuts
    bound = max(bound, pair, key=lambda b: b.bytes)
    if bound.bytes >= best_peak:
        return certified_by_bound(bound)

    say(f"lower bound {bound.bytes:,} B ({bound.kind}); exact search over down-sets")
    search_end = at(0.8) if n <= CP_SAT_MAX_OPS else at(0.95)  # no CP-SAT on large graphs
    # Large graphs with a precedence tree to follow: a stage decision that cannot finish gives
    # up early, wider beams look for better orders until 65 %, the tree has the rest. With a
    # second core the tree grows beside the search instead, from here to 93 %, and the search
    # (its wide beams included) has until 88 %.
    tree_follows = n <= TREE_MAX_OPS
    beside = None
    if tree_follows and _second_core() and at(0.93) - time.perf_counter() > TREE_BESIDE_SECONDS:
        beside = _TreeBeside(problem, at(0.93))
        beside.start(best_order)
        search_end = at(0.88)
    try:
        staged = staged_search(
            problem,
            best_order,
            bound.bytes,
            deadline=search_end,
            give_up=tree_follows,
            beam_deadline=(search_end if beside is not None else at(0.65)) if tree_follows else None,
            on_better=beside.start if beside is not None else None,  # a tree for the better order
            stop=beside.proved if beside is not None else None,  # the tree proved the order optimal
        )
    except BaseException:  # an interrupt or an error: the tree's process ends with the search
        if beside is not None:
            beside.stop()
        raise
    stats["search_states"] = staged.states
    stats["stages"] = staged.stages
    if problem.peak_bytes(staged.order) < best_peak:
        best_order, best_peak, method = list(staged.order), problem.peak_bytes(staged.order), "exhaustive"
    if staged.bound is not None and staged.bound.bytes > bound.bytes:
        bound = staged.bound  # a stage that cannot fit under the cut bound: a higher floor
    if staged.complete:  # the peak reached the floor: the cut bound's or a stage bound's
        if beside is not None:
            beside.stop()
        return certified_by_bound(bound)
    if tree_follows:
        if beside is not None:
            say(f"best order peaks at {best_peak:,} B; precedence tree grown beside the search")
            tree = beside.result(at(0.93) + TREE_BESIDE_MARGIN)
            stats["tree_beside"] = f"{beside.started} started" + ("" if tree is not None else ", no answer")
        else:
            say(f"best order peaks at {best_peak:,} B; precedence tree from its hot steps")
            stage = peak_stage(problem, best_order)
            tree = precedence_tree_bound(problem, best_order, best_peak, deadline=at(0.93), within=stage)
        if tree is not None:
            stats["cuts"] += tree.cuts
            stats["tree_nodes"] = tree.witness["nodes"]
            bound = max(bound, tree, key=lambda b: b.bytes)
            if bound.bytes >= best_peak:
                return certified_by_bound(bound)
    search = staged
    lower = max(bound.bytes, staged.frontier_bytes)
    remaining = at(0.97) - time.perf_counter()
    loading = 0.0 if "ortools.sat.python.cp_model" in sys.modules else CP_SAT_LOAD_SECONDS
    if n > CP_SAT_MAX_OPS:
        stats["cp_sat_status"] = f"not run (over {CP_SAT_MAX_OPS:,} operators)"
    elif 0.2 < remaining <= 0.2 + loading:
        stats["cp_sat_status"] = (
            f"not run ({remaining:.1f} s left; loading OR-Tools takes about {loading:.1f} s)"
        )
    elif remaining > 0.2:
        say(
            f"search stopped after {search.states:,} states, peak in {lower:,}..{best_peak:,} B; "
            f"CP-SAT for {remaining:.1f} s"
        )
        result = cp_sat_search(problem, best_order, best_peak, lower, at(0.97), progress)
        stats["cp_sat_status"] = result.status
        if result.order is not None and problem.peak_bytes(result.order) < best_peak:
            best_order, best_peak, method = list(result.order), problem.peak_bytes(result.order), "cp_sat"
        if result.status == "OPTIMAL" or result.bound_bytes >= best_peak:
            witness = {"solver_status": result.status, "solver_floor_bytes": lower}
            return finish(best_order, best_peak, Certificate("cp_sat", best_peak, witness), method)
        if lower >= best_peak:  # CP-SAT's order came down to a bound proven before it ran
            return certified_by_bound(bound)
        lower = max(lower, result.bound_bytes)
    return finish(best_order, lower, None, method)


# ---- alternative optimal orders ----------------------------------------------------------------


def optimal_orders(
    graph: Graph,
    peak_bytes: int,
    limit: int = 20,
    time_limit: float = 1.0,
    model: Refinement | None = None,
) -> list[tuple[int, ...]]:
    """Up to `limit` distinct orders peaking at no more than `peak_bytes`.

    Order and arena placement interact: when an order's tensors cannot be packed into its peak, a
    different order with the same peak may pack. The heuristics' orders come first when they reach
    the peak, then depth-first searches: the first greedy (cheapest step first), the others with
    randomly perturbed preferences, all sharing one memo of down-sets that have no completion under
    the peak so that later searches waste no time on dead ends.
    """
    deadline = time.perf_counter() + time_limit
    problem = ordering_problem(graph, model)
    n = problem.n_ops
    if n == 0:
        return [()] if peak_bytes >= 0 else []
    out = problem.output_bytes
    kept = problem.kept_output_bytes
    pred_mask = problem.predecessor_mask
    first_only = problem.first_step_only_bytes
    dead: set[int] = set()
    found: dict[tuple[int, ...], None] = {}
    orders = []
    for name in HEURISTIC_RUN_ORDER:
        if orders and time.perf_counter() > deadline:
            break
        with contextlib.suppress(_OutOfTime):
            orders.append(HEURISTICS[name](problem, deadline=deadline if orders else None))
    for order in sorted(orders, key=problem.peak_bytes):
        if problem.peak_bytes(order) > peak_bytes:
            share = deadline - time.perf_counter()
            order = improve_by_windows(problem, order, peak_bytes, time.perf_counter() + share / 8)
        if problem.peak_bytes(order) <= peak_bytes and len(found) < limit:
            found.setdefault(tuple(order), None)
    rng = random.Random(0)

    def moves(mask: int, resident: int, randomised: bool) -> list[tuple[int, int]]:
        options = []
        for v in range(n):
            if mask >> v & 1 or pred_mask[v] & ~mask:
                continue
            if resident + out[v] > peak_bytes or mask | (1 << v) in dead:
                continue
            after = resident + kept[v] - problem.freed_bytes(mask, v) - (first_only if not mask else 0)
            options.append((v, after))
        noise = [1.0 + rng.random() if randomised else 1.0 for _ in options]
        order = sorted(
            range(len(options)), key=lambda i: ((out[options[i][0]] + options[i][1]) * noise[i], i)
        )
        return [options[i] for i in order]

    start = problem.always_bytes + problem.initial_bytes + first_only
    attempts = fruitless = 0
    while len(found) < limit and fruitless < 8 and time.perf_counter() < deadline:
        randomised = attempts > 0
        attempts += 1
        fruitless += 1
        path: list[int] = []
        masks = [0]
        residents = [start]
        stack = [moves(0, start, randomised)]
        while stack and len(path) < n:
            if time.perf_counter() > deadline:
                return _graph_orders(model, found)
            if not stack[-1]:
                dead.add(masks[-1])
                stack.pop()
                masks.pop()
                residents.pop()
                if path:
                    path.pop()
                continue
            v, after = stack[-1].pop(0)
            mask = masks[-1] | (1 << v)
            path.append(v)
            masks.append(mask)
            residents.append(after)
            stack.append(moves(mask, after, randomised) if mask != problem.full_mask else [])
        if len(path) < n:
            break  # the empty set is dead: no order reaches peak_bytes
        if tuple(path) not in found:
            found[tuple(path)] = None
            fruitless = 0
    return _graph_orders(model, found)


def _graph_orders(model: Refinement | None, found: Mapping[tuple[int, ...], None]) -> list[tuple[int, ...]]:
    return list(dict.fromkeys(tuple(_graph_order(model, order)[0]) for order in found))
