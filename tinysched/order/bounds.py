"""Lower bounds on the peak activation memory of every operator order, from minimum cuts.

The scheduler can only call an order optimal if something proves that no order does better. The
proofs here are lower bounds, each with a witness that `recheck` recomputes:

- `trivial`: an operator's own inputs and outputs are live while it runs, in every order;
- `first_step`: some operator without predecessors runs first, next to everything live at step 0;
- `op_cut`: while operator v runs, the operators already executed form a down-set D (closed under
  predecessors) holding v's ancestors and none of its descendants. The least memory over all such D
  is a minimum cut (a project-selection / closure problem), and every order pays it at v's step;
- `pair_cut`: two incomparable operators u, v run in one of two relative orders; conditioning the
  cuts on each ("u is done when v runs", "v is not done when u runs") and taking the cheaper order
  is again paid by every order;
- `stage_exhaustive`: between two cut operators (operators every order runs at the same step) the
  stage's operators run after the same executed set in every order, so the least peak of the
  stage alone bounds every order's peak. `stage_bound` proves "no order of the stage keeps every
  step at or below a cap" by holding every down-set reachable under the cap (tinysched.order.layered);
  the cheapest step that was cut is then paid by every order. The witness names the stage and
  the cap, and `recheck` runs the same decision again.

All of them are stated over `OrderingProblem`, which is memory.py's lifetime model rewritten in terms
of sets of executed operators, so they are valid for exactly that model. docs/scheduling.md explains
why each bound holds. Cuts are solved with OR-Tools' C++ max-flow on one network per graph whose
"force into D" / "force out of D" arcs are switched per query, and only cuts that can still raise
the bound are solved (see `lower_bound`).
"""

from __future__ import annotations

import ctypes
import heapq
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from ortools.graph.python import max_flow

from tinysched.model.graph import Graph
from tinysched.order import native
from tinysched.order.layered import LayeredResult, layered_search, stage_is_fixed

if TYPE_CHECKING:
    from tinysched.memory.overlap import Refinement

__all__ = [
    "TREE_MAX_DEPTH",
    "CutNetwork",
    "LowerBound",
    "OrderingProblem",
    "first_step_bound",
    "iter_bits",
    "lower_bound",
    "precedence_tree_bound",
    "recheck",
    "stage_bound",
    "stage_exhaustive_bound",
    "trivial_bound",
]


# Pairs collected per round at most: on wide graphs there are millions, and each costs two cuts.
MAX_PAIR_CANDIDATES = 200_000


@dataclass(frozen=True)
class LowerBound:
    """No topological order has a peak below `bytes`; `witness` says which argument shows it."""

    bytes: int
    kind: str  # "none" | "trivial" | "first_step" | "op_cut" | "pair_cut" | "precedence_tree" | "stage_exhaustive"
    witness: dict = field(default_factory=dict)
    cuts: int = 0  # minimum cuts solved to find it (a cost measure, not part of the proof)


def iter_bits(mask: int) -> Iterable[int]:
    """Indices of the set bits of `mask`, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


class OrderingProblem:
    """memory.py's model restated over sets of executed operators, for bounds and exact search.

    After the operators of a down-set D have run (D is a bitmask of operator indices), the bytes
    still live are `resident_bytes(D)`: every tensor whose producer is in D (graph inputs and
    unproduced activations count as produced before step 0) and that is a graph output or still
    has a consumer outside D, plus, before anything ran, the graph inputs nobody reads. The step
    that runs v after D costs `resident_bytes(D) + output_bytes[v]`: v's inputs are resident (v is a
    consumer outside D) and all of v's outputs are live in its step, read or not. This equals
    memory.profile's live bytes at that step.
    """

    def __init__(
        self,
        graph: Graph,
        step_savings: Mapping[int, tuple[int, int]] | None = None,
        stored_order: Sequence[int] | None = None,
    ) -> None:
        """`step_savings`: operator -> (input tensor, bytes), the refined memory model's overlap at
        that operator (tinysched.memory.overlap.Refinement.step_savings, on its storage graph): the input
        has that operator as its last reader in every order, and the step costs that much less.
        `stored_order`: the order that stands for the model file's own (default: the operators'
        indices; a storage graph's synthetic operators come last and need placing)."""
        self.graph = graph
        n = self.n_ops = len(graph.operators)
        self.stored_order = tuple(range(n) if stored_order is None else stored_order)
        self.predecessors: tuple[tuple[int, ...], ...] = tuple(tuple(sorted(p)) for p in graph.predecessors)
        self.successors: tuple[tuple[int, ...], ...] = tuple(tuple(sorted(s)) for s in graph.successors)
        self.predecessor_mask = [sum(1 << p for p in preds) for preds in self.predecessors]
        self.full_mask = (1 << n) - 1

        outputs = set(graph.outputs)
        self.output_bytes = [0] * n  # all of v's outputs, live in v's step
        self.kept_output_bytes = [0] * n  # v's outputs that outlive its step (read later or graph outputs)
        self.graph_output_bytes = [0] * n  # v's outputs that are graph outputs (live to the end)
        self.input_bytes = [0] * n
        self.always_bytes = 0  # unproduced graph outputs: live in every step
        self.first_step_only_bytes = 0  # unproduced, unread, not outputs: live in step 0 only
        self.initial_bytes = 0  # resident before step 0 (unproduced tensors someone reads)
        # "Freeable" tensors: read by someone and not a graph output, so they die with their last reader.
        self.freeable_bytes: list[int] = []
        self.freeable_producer: list[int] = []  # -1: resident from the start
        self.freeable_consumers: list[tuple[int, ...]] = []
        self.freeable_consumer_mask: list[int] = []
        op_freeable_inputs: list[list[int]] = [[] for _ in range(n)]
        # per operator, (tensor, bytes) it reads / writes, always-live tensors left out
        self.op_reads: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        self.op_writes: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        for t in graph.activation_tensors:
            nbytes = graph.tensors[t].nbytes
            if nbytes <= 0:
                continue
            producer = graph.producer.get(t, -1)
            readers = graph.consumers.get(t, ())
            if producer >= 0 or t not in outputs:  # (unproduced outputs are in always_bytes)
                for c in readers:
                    self.input_bytes[c] += nbytes
                    self.op_reads[c].append((t, nbytes))
            if producer >= 0:
                self.output_bytes[producer] += nbytes
                self.op_writes[producer].append((t, nbytes))
            if t in outputs:
                if producer >= 0:
                    self.kept_output_bytes[producer] += nbytes
                    self.graph_output_bytes[producer] += nbytes
                else:
                    self.always_bytes += nbytes
            elif readers:
                if producer >= 0:
                    self.kept_output_bytes[producer] += nbytes
                else:
                    self.initial_bytes += nbytes
                index = len(self.freeable_bytes)
                self.freeable_bytes.append(nbytes)
                self.freeable_producer.append(producer)
                self.freeable_consumers.append(tuple(readers))
                self.freeable_consumer_mask.append(sum(1 << c for c in readers))
                for c in readers:
                    op_freeable_inputs[c].append(index)
            elif producer < 0:
                self.first_step_only_bytes += nbytes
        self.op_freeable_inputs = tuple(tuple(ts) for ts in op_freeable_inputs)
        self.total_bytes = (
            sum(self.output_bytes) + self.always_bytes + self.initial_bytes + self.first_step_only_bytes
        )
        self.topological_order = self._topological_order()
        # Longest paths: from the sources (earliest level) and to the sinks (latest level = the
        # deepest level minus it); heuristics break ties with them instead of stored positions.
        self.earliest_level = [0] * n
        for v in self.topological_order:
            self.earliest_level[v] = max(
                (self.earliest_level[p] + 1 for p in self.predecessors[v]), default=0
            )
        to_sink = [0] * n
        for v in reversed(self.topological_order):
            to_sink[v] = max((to_sink[s] + 1 for s in self.successors[v]), default=0)
        depth = max(to_sink, default=0)
        self.latest_level = [depth - d for d in to_sink]
        self.ancestors = [0] * n
        for v in self.topological_order:
            mask = 0
            for p in self.predecessors[v]:
                mask |= self.ancestors[p] | (1 << p)
            self.ancestors[v] = mask
        self.descendants = [0] * n
        for v in reversed(self.topological_order):
            mask = 0
            for s in self.successors[v]:
                mask |= self.descendants[s] | (1 << s)
            self.descendants[v] = mask
        # The refined model: `output_bytes[v]` is what v's step adds to the resident bytes, so the
        # overlap comes off it (it may go negative); `saved_input[v]` is the freeable index of the
        # input it overlaps (-1: none), whose interval CP-SAT ends before v's step.
        self.step_saving = [0] * n
        self.saved_input = [-1] * n
        freeable_index = {}
        k = 0
        for t in graph.activation_tensors:
            nbytes = graph.tensors[t].nbytes
            if nbytes > 0 and t not in outputs and graph.consumers.get(t, ()):
                freeable_index[t] = k
                k += 1
        for v, (t, saving) in (step_savings or {}).items():
            if saving <= 0:
                continue
            readers = graph.consumers.get(t, ())
            if (
                t not in freeable_index
                or v not in readers
                or any(c != v and not self.ancestors[v] >> c & 1 for c in readers)
            ):
                raise ValueError(f"operator {v} cannot save on tensor {t}: it is not its last reader")
            self.step_saving[v] = saving
            self.saved_input[v] = freeable_index[t]
            self.output_bytes[v] -= saving

    def _topological_order(self) -> list[int]:
        indegree = [len(p) for p in self.predecessors]
        ready = [v for v in range(self.n_ops) if indegree[v] == 0]
        order: list[int] = []
        while ready:
            v = ready.pop()
            order.append(v)
            for s in self.successors[v]:
                indegree[s] -= 1
                if indegree[s] == 0:
                    ready.append(s)
        return order

    # ---- memory over sets of executed operators ----------------------------------------------

    def resident_bytes(self, executed: int) -> int:
        """Bytes live between steps once the operators in `executed` (a down-set) have run."""
        total = self.always_bytes
        if executed == 0:
            total += self.first_step_only_bytes
        for v in iter_bits(executed):
            total += self.graph_output_bytes[v]
        for t, nbytes in enumerate(self.freeable_bytes):
            p = self.freeable_producer[t]
            if (p < 0 or executed >> p & 1) and self.freeable_consumer_mask[t] & ~executed:
                total += nbytes
        return total

    def step_bytes(self, executed: int, op: int) -> int:
        """Live bytes in the step that runs `op` right after the down-set `executed`."""
        return self.resident_bytes(executed) + self.output_bytes[op]

    def freed_bytes(self, executed: int, op: int) -> int:
        """Bytes of op's inputs whose last reader is op, when op runs right after `executed`."""
        after = executed | (1 << op)
        return sum(
            self.freeable_bytes[t]
            for t in self.op_freeable_inputs[op]
            if not self.freeable_consumer_mask[t] & ~after
        )

    def step_profile(self, order: Sequence[int]) -> list[int]:
        """Live bytes of each step of `order` (assumed topological), in O(edges)."""
        remaining = [len(c) for c in self.freeable_consumers]
        resident = self.always_bytes + self.initial_bytes + self.first_step_only_bytes
        steps = []
        for step, v in enumerate(order):
            steps.append(resident + self.output_bytes[v])
            resident += self.kept_output_bytes[v]
            for t in self.op_freeable_inputs[v]:
                remaining[t] -= 1
                if remaining[t] == 0:
                    resident -= self.freeable_bytes[t]
            if step == 0:
                resident -= self.first_step_only_bytes
        return steps

    def peak_bytes(self, order: Sequence[int]) -> int:
        return max(self.step_profile(order), default=0)

    def incomparable(self, u: int, v: int) -> bool:
        return u != v and not (self.ancestors[v] >> u & 1) and not (self.descendants[v] >> u & 1)


class CutNetwork:
    """One max-flow network per graph; each query switches the forcing arcs of a few operators.

    Source side = executed operators (the down-set D). Arcs: v -> p (infinite) for each predecessor
    p keeps D closed under predecessors; producer -> tensor node (its bytes) and tensor node ->
    each consumer (infinite) charge a tensor once when its producer is in D and some reader is not;
    source -> tensor node does the same for tensors resident from the start; producer -> sink
    charges graph outputs produced in D. The min cut is then min over down-sets D of the resident
    bytes (less the constant always-live bytes).
    """

    SOURCE, SINK = 0, 1

    def __init__(
        self,
        problem: OrderingProblem,
        precedences: Sequence[tuple[int, int]] = (),
        within: tuple[int, int] | None = None,
    ) -> None:
        """`precedences`: pairs (a, b) that the orders considered run a before b. Each adds an
        arc b -> a (infinite), so D is also closed under them; `required_before[b]` lists the a's,
        which are executed at b's step (`conditioned_step`).

        `within`: (start, ops) bitmasks of a stage (`layered.stage_is_fixed`: every order runs
        `ops` right after `start`). The network then holds only the stage's operators and the
        tensors they touch: a down-set at a stage operator's step is `start` plus some of `ops`,
        so its resident bytes are a constant (tensors of `start` read after the stage) plus what the
        stage's part decides, and every cut at a stage operator equals the whole graph's (smaller
        networks, faster cuts). Cuts may then only be asked for the stage's operators."""
        self.problem = problem
        self.required_before: dict[int, list[int]] = {}
        for a, b in precedences:
            self.required_before.setdefault(b, []).append(a)
        n = problem.n_ops
        self.infinite = problem.total_bytes + 1
        start, inside = within if within is not None else (0, problem.full_mask)
        if within is not None and not stage_is_fixed(problem, start, inside):
            raise ValueError("not a stage: some order does not run these operators right after `start`")
        self.start, self.inside = start, inside
        self.constant_bytes = 0  # resident at every stage step whatever the stage's part of D
        tails: list[int] = []
        heads: list[int] = []
        caps: list[int] = []

        def arc(tail: int, head: int, cap: int) -> int:
            tails.append(tail)
            heads.append(head)
            caps.append(cap)
            return len(tails) - 1

        def op_node(v: int) -> int:
            return 2 + v

        def kind(v: int) -> str:  # "done" (in start), "in" (the stage), "later" (after it)
            return "done" if v < 0 or start >> v & 1 else "in" if inside >> v & 1 else "later"

        self.force_in_arc = [arc(self.SOURCE, op_node(v), 0) if kind(v) == "in" else -1 for v in range(n)]
        self.force_out_arc = [
            arc(op_node(v), self.SINK, problem.graph_output_bytes[v]) if kind(v) == "in" else -1
            for v in range(n)
        ]
        self.base_out_capacity = list(problem.graph_output_bytes)
        for v in range(n):
            if kind(v) == "done":
                self.constant_bytes += problem.graph_output_bytes[v]
            if kind(v) != "in":
                continue
            for p in problem.predecessors[v]:
                if kind(p) == "in":
                    arc(op_node(v), op_node(p), self.infinite)
        node = 2 + n
        for t, nbytes in enumerate(problem.freeable_bytes):
            p = problem.freeable_producer[t]
            readers = problem.freeable_consumers[t]
            kinds = {kind(c) for c in readers}
            if kind(p) == "later" or kinds == {"done"}:
                continue  # never resident at a stage step
            if "later" in kinds:  # its reader after the stage is pending: resident once produced
                if kind(p) == "done":
                    self.constant_bytes += nbytes
                else:
                    arc(op_node(p), self.SINK, nbytes)
                continue
            tail = self.SOURCE if kind(p) == "done" else op_node(p)
            pending = [c for c in readers if kind(c) == "in"]
            if len(pending) == 1:  # one reader: an arc to it charges the same, one node fewer
                arc(tail, op_node(pending[0]), nbytes)
                continue
            arc(tail, node, nbytes)
            for c in pending:
                arc(node, op_node(c), self.infinite)
            node += 1
        self.arcs = (
            np.asarray(tails, dtype=np.int32),
            np.asarray(heads, dtype=np.int32),
            np.asarray(caps, dtype=np.int64),
        )
        self._build(precedences)

    def _build(self, precedences: Sequence[tuple[int, int]]) -> None:
        tails, heads, caps = self.arcs
        inside = self.inside
        kept = []
        for a, b in precedences:
            if inside >> a & 1 and inside >> b & 1:
                kept.append((a, b))
            elif not (self.start >> a & 1 or (not inside >> b & 1 and not self.start >> b & 1)):
                raise ValueError(f"precedence {a} before {b} crosses the stage the other way")
        precedences = kept
        if precedences:
            extra = np.asarray(precedences, dtype=np.int32).reshape(-1, 2) + 2  # op nodes
            tails = np.concatenate([tails, extra[:, 1]])
            heads = np.concatenate([heads, extra[:, 0]])
            caps = np.concatenate([caps, np.full(len(extra), self.infinite, dtype=np.int64)])
        self.flow = max_flow.SimpleMaxFlow()
        self.flow.add_arcs_with_capacity(tails, heads, caps)
        self.solved = 0

    def with_precedences(self, precedences: Sequence[tuple[int, int]]) -> CutNetwork:
        """The same network plus `precedences` (see __init__), without rebuilding the graph's arcs."""
        other = object.__new__(CutNetwork)
        other.problem, other.infinite, other.arcs = self.problem, self.infinite, self.arcs
        other.force_in_arc, other.force_out_arc = self.force_in_arc, self.force_out_arc
        other.base_out_capacity = self.base_out_capacity
        other.start, other.inside, other.constant_bytes = self.start, self.inside, self.constant_bytes
        other.required_before = {}
        for a, b in precedences:
            other.required_before.setdefault(b, []).append(a)
        other._build(precedences)
        return other

    def min_resident(self, forced_in: Iterable[int], forced_out: Iterable[int]) -> int | None:
        """Least resident bytes (less always-live ones) over down-sets D holding `forced_in` and none
        of `forced_out`; None when no such down-set exists."""
        found = self._solve(forced_in, forced_out, want_downset=False)
        return None if found is None else found[0]

    def min_downset(self, forced_in: Iterable[int], forced_out: Iterable[int]) -> tuple[int, int] | None:
        """Like `min_resident`, with a down-set reaching it: (resident bytes less always-live ones,
        bitmask of D's operators), the source side of a minimum cut; None when no D exists."""
        return self._solve(forced_in, forced_out, want_downset=True)

    def _solve(
        self, forced_in: Iterable[int], forced_out: Iterable[int], want_downset: bool
    ) -> tuple[int, int] | None:
        inside = self.inside
        forced_in = tuple(forced_in)
        if any(not inside >> v & 1 for v in forced_in):
            if any(not self.start >> v & 1 and not inside >> v & 1 for v in forced_in):
                return None  # an operator after the stage is in no down-set
            forced_in = tuple(v for v in forced_in if inside >> v & 1)  # `start`'s are in every D
        forced_out = tuple(forced_out)
        if any(not inside >> v & 1 for v in forced_out):
            if any(self.start >> v & 1 for v in forced_out):
                return None  # an operator of `start` is in every down-set
            forced_out = tuple(v for v in forced_out if inside >> v & 1)  # later ones: never in D
        flow = self.flow
        for v in forced_in:
            flow.set_arc_capacity(self.force_in_arc[v], self.infinite)
        for v in forced_out:
            flow.set_arc_capacity(self.force_out_arc[v], self.infinite)
        status = flow.solve(self.SOURCE, self.SINK)
        value = flow.optimal_flow()
        downset = 0
        if want_downset and status == flow.OPTIMAL and value < self.infinite:
            for node in flow.get_source_side_min_cut():
                if 2 <= node < 2 + self.problem.n_ops:
                    downset |= 1 << (node - 2)
        for v in forced_in:
            flow.set_arc_capacity(self.force_in_arc[v], 0)
        for v in forced_out:
            flow.set_arc_capacity(self.force_out_arc[v], self.base_out_capacity[v])
        self.solved += 1
        if status != flow.OPTIMAL:
            raise RuntimeError(f"max-flow failed with status {status}")
        if value >= self.infinite:
            return None
        return int(value) + self.constant_bytes, downset | self.start

    # ---- the per-step bounds ---------------------------------------------------------------

    def _step(self, op: int, resident: int | None) -> int | None:
        if resident is None:
            return None
        return resident + self.problem.always_bytes + self.problem.output_bytes[op]

    def conditioned_step(self, v: int, done: Sequence[int] = (), pending: Sequence[int] = ()) -> int | None:
        """Least live bytes at v's step over the orders obeying the network's precedences that
        have run `done` and not `pending` before v; None when no such order exists."""
        forced_in = (*self.problem.predecessors[v], *self.required_before.get(v, ()), *done)
        return self._step(v, self.min_resident(forced_in, (v, *pending)))

    def conditioned_cut(
        self, v: int, done: Sequence[int] = (), pending: Sequence[int] = ()
    ) -> tuple[int, int] | None:
        """`conditioned_step` with a down-set that reaches it (the least one: a minimum cut's
        source side), so that a caller adding a precedence the down-set obeys knows the step's
        value is unchanged without solving again."""
        forced_in = (*self.problem.predecessors[v], *self.required_before.get(v, ()), *done)
        found = self.min_downset(forced_in, (v, *pending))
        if found is None:
            return None
        resident, downset = found
        step = self._step(v, resident)
        assert step is not None
        return step, downset

    def op_bound(self, v: int) -> int:
        """Least live bytes at v's step over all orders."""
        value = self._step(v, self.min_resident(self.problem.predecessors[v], (v,)))
        assert value is not None
        return value

    def op_bound_after(self, v: int, u: int) -> int | None:
        """Least live bytes at v's step over orders that ran u before v."""
        return self._step(v, self.min_resident((*self.problem.predecessors[v], u), (v,)))

    def op_bound_before(self, u: int, v: int) -> int | None:
        """Least live bytes at u's step over orders that run v after u."""
        return self._step(u, self.min_resident(self.problem.predecessors[u], (u, v)))


def trivial_bound(problem: OrderingProblem) -> LowerBound:
    """Each operator's own inputs and outputs (plus always-live tensors) share its step."""
    if problem.n_ops == 0:
        return LowerBound(0, "none", {})  # no steps: memory.profile's peak is 0
    v = max(range(problem.n_ops), key=lambda op: problem.input_bytes[op] + problem.output_bytes[op])
    value = problem.input_bytes[v] + problem.output_bytes[v] + problem.always_bytes
    return LowerBound(value, "trivial", {"op": v, "op_bytes": value})


def first_step_bound(problem: OrderingProblem) -> LowerBound:
    """Step 0 runs an operator without predecessors next to everything resident before it."""
    sources = [v for v in range(problem.n_ops) if not problem.predecessors[v]]
    if not sources:
        return LowerBound(0, "none", {})
    resident = problem.resident_bytes(0)
    v = min(sources, key=lambda op: problem.output_bytes[op])
    value = resident + problem.output_bytes[v]
    return LowerBound(value, "first_step", {"op": v, "first_step_bytes": value})


def _pair_bound(
    net: CutNetwork, u: int, v: int, beat: int, cache: dict[tuple[int, int, int], int | None]
) -> tuple[int, int, int] | None:
    """min(cost(u before v), cost(v before u)) if it exceeds `beat`, else None. Each branch is
    the larger of two conditioned cuts (the later operator with the earlier one done, and the
    earlier operator with the later one not done); cuts are skipped once a branch can't exceed."""

    def cut(kind: int, a: int, b: int) -> int:
        key = (kind, a, b)
        if key not in cache:
            value = net.op_bound_after(a, b) if kind == 0 else net.op_bound_before(a, b)
            cache[key] = value if value is not None else net.infinite
        return cache[key]  # type: ignore[return-value]

    branches = []
    for first, second in ((u, v), (v, u)):
        cost = cut(0, second, first)  # second's step with first executed
        if cost <= beat:
            cost = max(cost, cut(1, first, second))  # first's step with second pending
        if cost <= beat:
            return None
        branches.append(cost)
    return min(branches), branches[0], branches[1]


def lower_bound(
    graph: Graph | OrderingProblem,
    orders: Sequence[Sequence[int]] = (),
    target: int | None = None,
    deadline: float | None = None,
    pairs: bool = True,
) -> LowerBound:
    """The strongest bound found before `deadline` (time.perf_counter()), stopping at `target`.

    `orders` are known topological orders: their step costs are upper estimates of each cut (the
    order's own executed set is a feasible D), so a cut is only solved when every known order
    leaves room above the current bound. Pairs are tried in decreasing order of that estimate and
    must contain an operator whose step in the best known order is above the bound.
    """
    problem = graph if isinstance(graph, OrderingProblem) else OrderingProblem(graph)
    n = problem.n_ops
    best = max(trivial_bound(problem), first_step_bound(problem), key=lambda b: b.bytes)
    if n == 0:
        return best
    target = problem.total_bytes if target is None else target
    # Upper estimates per operator step: rows are orders, columns operators.
    if orders:
        profiles = np.empty((len(orders), n), dtype=np.int64)
        for row, order in enumerate(orders):
            profiles[row, list(order)] = problem.step_profile(order)
    else:
        profiles = np.full((1, n), problem.total_bytes, dtype=np.int64)
    single_estimate = profiles.min(axis=0)
    net = CutNetwork(problem)

    def out_of_time() -> bool:
        return deadline is not None and time.perf_counter() > deadline

    for v in sorted(range(n), key=lambda op: -single_estimate[op]):
        if best.bytes >= target or single_estimate[v] <= best.bytes or out_of_time():
            break
        value = net.op_bound(v)
        if value > best.bytes:
            best = LowerBound(value, "op_cut", {"op": v, "cut_bytes": value})
    if not pairs or best.bytes >= target or out_of_time():
        return LowerBound(best.bytes, best.kind, best.witness, net.solved)

    peak_row = int(profiles.max(axis=1).argmin())
    cache: dict[tuple[int, int, int], int | None] = {}
    while best.bytes < target and not out_of_time():
        hot = np.flatnonzero(profiles[peak_row] > best.bytes).tolist()
        hot_set = set(hot)
        candidates: list[tuple[int, int, int]] = []
        for h in hot:
            if out_of_time():
                break
            free = problem.full_mask & ~(problem.ancestors[h] | problem.descendants[h] | 1 << h)
            others = np.array([w for w in iter_bits(free) if w not in hot_set or w > h], dtype=np.int64)
            if not len(others):
                continue
            estimate = np.maximum(profiles[:, others], profiles[:, [h]]).min(axis=0)
            keep = estimate > best.bytes
            candidates.extend(
                zip(estimate[keep].tolist(), [h] * int(keep.sum()), others[keep].tolist(), strict=True)
            )
            if len(candidates) > MAX_PAIR_CANDIDATES:  # any subset of pairs gives a valid bound
                break
        candidates.sort(reverse=True)
        raised = False
        for est, u, v in candidates:
            if est <= best.bytes or best.bytes >= target or out_of_time():
                break
            found = _pair_bound(net, u, v, best.bytes, cache)
            if found is not None:
                value, u_first, v_first = found
                best = LowerBound(
                    value,
                    "pair_cut",
                    {
                        "ops": [u, v],
                        "cut_bytes": value,
                        "u_before_v_bytes": u_first,
                        "v_before_u_bytes": v_first,
                    },
                )
                raised = True
        if not raised:
            break
    return LowerBound(best.bytes, best.kind, best.witness, net.solved)


# The precedence tree: pairs screened per split, splits at most, and ops whose cuts a child re-solves.
TREE_CANDIDATE_PAIRS = 40
TREE_MAX_NODES = 20_000
# Cuts held over all leaves at most (one per leaf and operator, some 100 bytes each): caps the
# nodes of a tree over many operators.
TREE_MAX_VALUES = 2_000_000
TREE_HOT_OPS = 20
TREE_RESOLVED_OPS = 10
# Precedences on one leaf at most: a leaf that deep is not split (the tree stops when it is the
# least), so that the witness stays within the nesting json.dumps accepts (about 500 levels).
TREE_MAX_DEPTH = 400
# Operators the tree in C bounds at most: it keeps the root's flow for each of them (some 8 MB for
# 1,024 operators on a RandWire stage's network); wider ones grow in Python.
TREE_NATIVE_MAX_OPS = 1024


def _closure_ancestors(
    problem: OrderingProblem, precedences: Sequence[tuple[int, int]], ops: int | None = None
) -> list[int] | None:
    """Ancestor masks of the DAG plus the precedences (a before b), None if they form a cycle.
    `ops`: only these operators' ancestors among themselves (a stage: every path between two of
    its operators stays inside it); the others' masks are 0."""
    members = (
        problem.topological_order if ops is None else [v for v in problem.topological_order if ops >> v & 1]
    )
    inside = problem.full_mask if ops is None else ops
    preds = {v: [p for p in problem.predecessors[v] if inside >> p & 1] for v in members}
    for a, b in precedences:
        preds[b].append(a)
    indegree = {v: len(p) for v, p in preds.items()}
    succ: dict[int, list[int]] = {v: [] for v in members}
    for v in members:
        for q in preds[v]:
            succ[q].append(v)
    ready = [v for v in members if not indegree[v]]
    ancestors = [0] * problem.n_ops
    seen = 0
    while ready:
        v = ready.pop()
        seen += 1
        mask = 0
        for q in preds[v]:
            mask |= ancestors[q] | (1 << q)
        ancestors[v] = mask
        for s in succ[v]:
            indegree[s] -= 1
            if not indegree[s]:
                ready.append(s)
    return ancestors if seen == len(members) else None


def _infinite_or(net: CutNetwork, value: int | None) -> int:
    return net.infinite if value is None else value


def precedence_tree_bound(
    problem: OrderingProblem,
    order: Sequence[int],
    target: int,
    deadline: float | None = None,
    max_nodes: int = TREE_MAX_NODES,
    within: tuple[int, int] | None = None,
    stop: Callable[[], bool] | None = None,
    use_native: bool = True,
) -> LowerBound:
    """Branch and bound over relative orders of operator pairs (`pair_cut`, repeated).

    A node of the tree is a set of precedences (a before b); every order obeys one leaf's. At a
    leaf, the step of any operator w costs at least the minimum cut over the down-sets closed
    under the DAG and the leaf's precedences (a `CutNetwork` with them), so the leaf's value is
    the largest such cut found, and the least leaf value bounds every order. The leaf of least
    value is split on the incomparable pair whose two orders raise the cheaper child most (screened
    with the four conditioned cuts of `pair_cut`, candidates from the hot steps of `order`), until
    every leaf reaches `target`, the deadline or `max_nodes`. The witness is the tree.

    `within` (start, ops): only the stage's operators are split and bounded, on the stage's
    smaller cut network (`CutNetwork`): the bound of the stage holding the peak, found faster.
    Its leaf cuts equal the whole graph's, so `recheck` needs no stage. `stop`: asked with the
    deadline (True: stop as if it had passed, with the bound reached so far). The tree grows in
    C (tinysched/order/csrc/cuttree.c, its own max-flow) when tinysched.order.native can build it and the
    operators bounded number at most TREE_NATIVE_MAX_OPS (`use_native`): the same kind of tree
    with its own tie-breaks, several times faster, its witness the same and rechecked the same
    way."""
    n = problem.n_ops
    members = list(iter_bits(within[1])) if within is not None else list(range(n))
    steps = problem.step_profile(order)
    step_of = dict(zip(order, steps, strict=True))

    def out_of_time() -> bool:
        return deadline is not None and time.perf_counter() > deadline or stop is not None and stop()

    # A leaf's cut at w is (bytes, down-set reaching them, or 0 when only a lower bound is known).
    # A child's cuts are at least its parent's (fewer down-sets), and equal to them when the
    # parent's down-set obeys the child's new precedence: only those that break it are solved.
    def solve(net: CutNetwork, w: int) -> tuple[int, int]:
        found = net.conditioned_cut(w)
        return (net.infinite, 0) if found is None else found

    def leaf_values(
        net: CutNetwork, ops: Iterable[int], known: dict[int, tuple[int, int]]
    ) -> dict[int, tuple[int, int]]:
        values = dict(known)
        for w in ops:
            if values and out_of_time():
                break
            if w not in values or not values[w][1]:
                values[w] = solve(net, w)
        return values

    def inherited(known: dict[int, tuple[int, int]], a: int, b: int) -> dict[int, tuple[int, int]]:
        """The parent's cuts under the new precedence a before b: a down-set holding b but not a,
        or b's own without a, no longer reaches its value."""
        values = {}
        for w, (value, downset) in known.items():
            if downset and not downset >> a & 1 and (downset >> b & 1 or w == b):
                downset = 0
            values[w] = (value, downset)
        return values

    def branch_cut(
        net: CutNetwork,
        known: dict[int, tuple[int, int]],
        w: int,
        done: tuple[int, ...],
        pending: tuple[int, ...],
    ) -> int:
        """w's cut with `done` executed and `pending` not: the leaf's own value when its down-set
        already agrees."""
        value, downset = known.get(w, (0, 0))
        if downset and all(downset >> d & 1 for d in done) and not any(downset >> p & 1 for p in pending):
            return value
        return _infinite_or(net, net.conditioned_step(w, done=done, pending=pending))

    def top(values: dict[int, tuple[int, int]]) -> int:
        return max((value for value, _ in values.values()), default=0)

    noise = np.random.default_rng(0)  # tie-breaks among equally hot pairs (uniform sizes tie a lot)
    root_net = CutNetwork(problem, within=within)
    by_step = sorted(members, key=lambda v: (-step_of[v], v))  # every operator, hottest first
    hot = by_step[:TREE_HOT_OPS]
    local = {v: i for i, v in enumerate(members)}
    hot_local = np.array([local[h] for h in hot], dtype=np.int64)
    member_steps = np.array([step_of[v] for v in members], dtype=np.int64)
    pair_heat = np.maximum(member_steps[hot_local][:, None], member_steps[None, :])  # (hot, members)
    member_index = np.array(members, dtype=np.int64)
    mask_bytes = (n + 7) // 8

    def candidate_pairs(ancestors: list[int], known: dict[int, tuple[int, int]]) -> list[tuple[int, int]]:
        """The incomparable (hot, member) pairs to screen: hottest pair first, then the member's
        cut, then chance."""
        packed = b"".join(ancestors[v].to_bytes(mask_bytes, "little") for v in members)
        bits = np.unpackbits(
            np.frombuffer(packed, dtype=np.uint8).reshape(len(members), -1), axis=1, bitorder="little"
        )
        among = bits[:, member_index].astype(bool)  # among[i, j]: member j runs before member i
        comparable = among[hot_local, :] | among[:, hot_local].T
        comparable[np.arange(len(hot)), hot_local] = True
        cut = np.array([known.get(o, (0, 0))[0] for o in members], dtype=np.int64)
        chance = noise.random(comparable.shape)
        rows, cols = np.nonzero(~comparable)
        rank = np.lexsort((-chance[rows, cols], -cut[cols], -pair_heat[rows, cols]))[:TREE_CANDIDATE_PAIRS]
        return [(hot[rows[k]], members[cols[k]]) for k in rank]

    max_nodes = min(max_nodes, 2 * TREE_MAX_VALUES // max(1, len(members)))
    lib = native.library() if use_native and len(members) <= TREE_NATIVE_MAX_OPS else None
    if lib is not None:
        grown = _native_tree(
            lib, problem, root_net, members, by_step, step_of, target, max_nodes, out_of_time
        )
        if grown is not None:
            return grown

    root = {"values": leaf_values(root_net, by_step, {}), "before": ()}
    tree: dict = {}
    root["node"] = tree
    counter = 0
    heap = [(top(root["values"]), counter, root)]
    cuts = root_net.solved
    nodes = 1

    while heap and heap[0][0] < target and nodes + 2 <= max_nodes and not out_of_time():
        value, _, leaf = heapq.heappop(heap)
        before = leaf["before"]
        ancestors = (
            _closure_ancestors(problem, before, within[1] if within is not None else None)
            if len(before) < TREE_MAX_DEPTH
            else None
        )
        if ancestors is None:
            # too deep to split, or (cannot happen: such leaves are infinite) precedences in a
            # cycle: the least leaf stays a leaf, and the bound stops here
            heapq.heappush(heap, (value, -1, leaf))
            break
        net = root_net.with_precedences(before)
        known = leaf["values"]
        chosen = None
        for a, b in candidate_pairs(ancestors, known):
            if out_of_time():
                break
            beat = chosen[0][0] if chosen else -1
            branches = []
            for first, second in ((a, b), (b, a)):
                cost = branch_cut(net, known, second, (first,), ())
                if cost <= beat:
                    cost = max(cost, branch_cut(net, known, first, (), (second,)))
                branches.append(cost)
                if cost <= beat:
                    break
            if len(branches) == 2 and min(branches) > beat:
                chosen = ((min(branches), max(branches)), a, b)
        cuts += net.solved
        if chosen is None:  # the leaf's precedences leave one order: keep its value
            heapq.heappush(heap, (value, -1, leaf))
            break
        _, a, b = chosen
        node = leaf["node"]
        node["split"] = [a, b]
        node["children"] = [{}, {}]
        resolve = sorted(known, key=lambda w: -known[w][0])[:TREE_RESOLVED_OPS]
        for k, (first, second) in enumerate(((a, b), (b, a))):
            child_before = (*before, (first, second))
            child_net = root_net.with_precedences(child_before)
            values = leaf_values(child_net, {*resolve, a, b}, inherited(known, first, second))
            cuts += child_net.solved
            counter += 1
            child = {"values": values, "before": child_before, "node": node["children"][k]}
            heapq.heappush(heap, (top(values), counter, child))
        nodes += 2
    # the least leaf value, every leaf with the operator that proves its value
    for _, _, leaf in heap:
        values = leaf["values"]
        w = max(values, key=lambda op: (values[op][0], -op))
        leaf["node"].update({"op": w, "cut_bytes": min(values[w][0], problem.total_bytes + 1)})
    value = min((leaf_value for leaf_value, _, _ in heap), default=0)
    value = min(value, problem.total_bytes + 1)
    return LowerBound(value, "precedence_tree", {"tree": tree, "nodes": nodes, "leaves": len(heap)}, cuts)


def _native_tree(
    lib: ctypes.CDLL,
    problem: OrderingProblem,
    net: CutNetwork,
    members: list[int],
    by_step: list[int],
    step_of: Mapping[int, int],
    target: int,
    max_nodes: int,
    out_of_time: Callable[[], bool],
) -> LowerBound | None:
    """`precedence_tree_bound`'s tree grown by cuttree.c on `net` (the root's network); None when
    C ran out of memory. C numbers the members 0..m-1 and the network's nodes 0 (source), 1
    (sink), 2 + i (member i), then the tensor nodes."""
    n, m = problem.n_ops, len(members)
    local = {v: i for i, v in enumerate(members)}
    tails, heads, caps = net.arcs
    top = max(int(tails.max(initial=1)), int(heads.max(initial=1)), 1 + n)
    renumber = np.full(top + 1, -1, dtype=np.int64)
    renumber[:2] = (0, 1)
    renumber[[2 + v for v in members]] = 2 + np.arange(m)
    renumber[2 + n :] = 2 + m + np.arange(top - 1 - n)
    tail = renumber[tails].astype(np.int32)
    head = renumber[heads].astype(np.int32)
    assert (tail >= 0).all() and (head >= 0).all()  # arcs touch members and tensor nodes only
    cap = np.ascontiguousarray(caps, dtype=np.int64)
    preds = [[local[p] for p in problem.predecessors[v] if p in local] for v in members]
    arrays = {
        "tail": tail,
        "head": head,
        "cap": cap,
        "force_in_arc": np.array([net.force_in_arc[v] for v in members], dtype=np.int32),
        "force_out_arc": np.array([net.force_out_arc[v] for v in members], dtype=np.int32),
        "pred_start": np.concatenate([[0], np.cumsum([len(x) for x in preds])]).astype(np.int32),
        "pred_list": np.array([p for x in preds for p in x] or [0], dtype=np.int32),
        "step_extra": np.array(
            [net.constant_bytes + problem.always_bytes + problem.output_bytes[v] for v in members],
            dtype=np.int64,
        ),
        "heat": np.array([step_of[v] for v in members], dtype=np.int64),
        "by_heat": np.array([local[v] for v in by_step], dtype=np.int32),
    }
    stop = native.TREE_STOP(lambda: int(out_of_time()))
    tree_in = native.Tree(
        nodes=int(2 + m + max(0, top - 1 - n)),
        arcs=len(tail),
        m=m,
        words=(m + 63) // 64,
        hot_count=min(TREE_HOT_OPS, m),
        infinite=net.infinite,
        target=target,
        value_cap=problem.total_bytes + 1,
        max_nodes=max(1, max_nodes),
        max_depth=TREE_MAX_DEPTH,
        candidate_pairs=TREE_CANDIDATE_PAIRS,
        resolved_ops=TREE_RESOLVED_OPS,
        seed=1,
        stop=stop,
        **{name: array.ctypes.data for name, array in arrays.items()},
    )
    size = max(1, max_nodes)
    split = np.full(2 * size, -1, dtype=np.int32)
    child = np.full(2 * size, -1, dtype=np.int32)
    leaf_op = np.zeros(size, dtype=np.int32)
    leaf_cut = np.zeros(size, dtype=np.int64)
    out = native.TreeOut(
        split=split.ctypes.data,
        child=child.ctypes.data,
        leaf_op=leaf_op.ctypes.data,
        leaf_cut=leaf_cut.ctypes.data,
    )
    if not lib.ts_tree_grow(ctypes.byref(tree_in), ctypes.byref(out)):
        return None
    # the witness the Python loop writes: nested nodes, linked from the arrays without recursion
    # (trees may be deep)
    nodes: list[dict] = [{} for _ in range(out.nodes)]
    for i in range(out.nodes):
        if split[2 * i] >= 0:
            a, b = int(split[2 * i]), int(split[2 * i + 1])
            nodes[i]["split"] = [members[a], members[b]]
            nodes[i]["children"] = [nodes[int(child[2 * i])], nodes[int(child[2 * i + 1])]]
        else:
            nodes[i].update({"op": members[int(leaf_op[i])], "cut_bytes": int(leaf_cut[i])})
    witness = {"tree": nodes[0], "nodes": int(out.nodes), "leaves": int(out.leaves)}
    return LowerBound(int(out.bound), "precedence_tree", witness, int(out.cuts))


def _recheck_tree(problem: OrderingProblem, tree: dict, claimed: int) -> bool:
    """Every leaf of the tree proves `claimed` for the orders obeying its precedences, and each
    split covers every order (one of a, b runs first)."""
    stack: list[tuple[dict, tuple[tuple[int, int], ...]]] = [(tree, ())]
    base = CutNetwork(problem)
    while stack:
        node, before = stack.pop()
        if "split" in node:
            a, b = node["split"]
            if a == b or not (0 <= a < problem.n_ops and 0 <= b < problem.n_ops):
                return False
            left, right = node["children"]
            stack.append((left, (*before, (a, b))))
            stack.append((right, (*before, (b, a))))
            continue
        w = node.get("op", -1)
        if not 0 <= w < problem.n_ops:
            return False
        found = base.with_precedences(before).conditioned_step(w)
        if found is not None and found < claimed:
            return False
    return True


def stage_bound(
    problem: OrderingProblem,
    start: int,
    ops: int,
    cap: int,
    deadline: float | None = None,
    max_states: int = 4_000_000,
    backward: bool | None = None,
) -> LowerBound | None:
    """Every order peaks above `cap` if the stage `ops` (run after `start` in every order) cannot
    keep its steps <= cap; the bound is then the cheapest step the decision had to cut. None when
    the stage does fit under the cap, or the decision ran out of time or states. The decision
    searches `backward` from the stage's end, forward, or (None) whichever a short try of both
    says is narrower (`layered.layered_search`); the witness says which, and `recheck` decides
    the same way."""
    if not stage_is_fixed(problem, start, ops):
        raise ValueError("not a stage: some order does not run these operators right after `start`")
    found = layered_search(
        problem, start, ops, cap, deadline=deadline, max_states=max_states, backward=backward
    )
    if found.order is not None or not found.complete:
        return None
    return stage_exhaustive_bound(start, ops, cap, found)


def stage_exhaustive_bound(start: int, ops: int, cap: int, found: LayeredResult) -> LowerBound:
    """The bound a finished decision that found no order proves: its floor, with the witness
    (the operators before the stage and in it, the cap, the direction) `recheck` decides again."""
    witness = {
        "start_ops": list(iter_bits(start)),
        "stage_ops": list(iter_bits(ops)),
        "cap_bytes": cap,
        "states": found.states,
        "direction": "backward" if found.backward else "forward",
    }
    return LowerBound(found.floor_bytes, "stage_exhaustive", witness)


def recheck(graph: Graph, bound: LowerBound, model: Refinement | None = None) -> bool:
    """Recompute a bound from its witness alone (fresh network), for anyone who doubts it.

    A certificate stated in a refined memory model is rechecked in that model: pass the
    `tinysched.memory.overlap` refinement of `graph`, derived again from the kernels' table (never taken
    from the plan); its storage graph and step savings define the bound's problem."""
    problem = (
        OrderingProblem(graph)
        if model is None or not model.refined
        else OrderingProblem(model.storage, model.step_savings())
    )
    w = bound.witness
    if bound.kind == "none":
        return bound.bytes <= 0
    if bound.kind == "trivial":
        v = w["op"]
        return bound.bytes <= problem.input_bytes[v] + problem.output_bytes[v] + problem.always_bytes
    if bound.kind == "first_step":
        sources = [v for v in range(problem.n_ops) if not problem.predecessors[v]]
        return bool(sources) and bound.bytes <= min(problem.step_bytes(0, v) for v in sources)
    net = CutNetwork(problem)
    if bound.kind == "op_cut":
        return bound.bytes <= net.op_bound(w["op"])
    if bound.kind == "pair_cut":
        u, v = w["ops"]
        if not problem.incomparable(u, v):
            return False
        branch = []
        for first, second in ((u, v), (v, u)):
            after = net.op_bound_after(second, first)
            before = net.op_bound_before(first, second)
            branch.append(max(net.infinite if a is None else a for a in (after, before)))
        return bound.bytes <= min(branch)
    if bound.kind == "precedence_tree":
        return _recheck_tree(problem, w["tree"], bound.bytes)
    if bound.kind == "stage_exhaustive":
        start = sum(1 << v for v in w["start_ops"])
        ops = sum(1 << v for v in w["stage_ops"])
        if not stage_is_fixed(problem, start, ops):
            return False
        backward = w.get("direction", "forward") == "backward"
        again = layered_search(problem, start, ops, w["cap_bytes"], max_states=2**62, backward=backward)
        return again.order is None and again.complete and bound.bytes <= again.floor_bytes
    return False
