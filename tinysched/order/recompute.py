"""Capped selective recomputation: lower the peak below the best order by running operators again.

Once no order of the operators peaks lower, memory can only go down by freeing a tensor early and
producing it again, from inputs still at hand, before a later use. `plan_recompute` looks for a
sequence of executions (every operator at least once, each at most 1 + k times) that minimises the
peak of `memory.sequence_profile`, or that minimises the extra multiply-accumulates while meeting a
RAM target. docs/recomputation.md states the semantics and why each shortcut below is sound.

Stages, each only run while the answer is not yet proven:

1. the best order (`scheduler.schedule`, k = 0) and a lower bound valid for every sequence; equal
   values, or a graph where every operator's outputs have at most one use, end the search at once;
2. a greedy heuristic: free a tensor that sits under the peak waiting for a late use, and run its
   producer (and, if that helps, the producers of that producer's inputs) again right before the
   use; then drop every repeat the peak does not need;
3. CP-SAT on a step model (run[v, s], live[t, s]) hinted with the heuristic sequence. With a horizon
   of sum(1 + k) steps the model is exact, so its bound is a lower bound for every capped sequence;
   large graphs get a restricted model (only operators near the peak may repeat) and no proof.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from tinysched.errors import TinyschedError
from tinysched.memory.expand import expansion_of
from tinysched.memory.stream import stream_of
from tinysched.model.graph import Graph, Operator

__all__ = [
    "RecomputePlan",
    "RecomputeRequest",
    "cannot_gain",
    "macs",
    "operator_macs",
    "plan_recompute",
    "recomputable",
    "request_from_values",
    "sequence_lower_bound",
    "total_macs",
]

# Operators that must never run twice: they touch state or draw random numbers.
STATEFUL_OPCODES = frozenset(
    {
        "ASSIGN_VARIABLE",
        "READ_VARIABLE",
        "VAR_HANDLE",
        "CALL_ONCE",
        "CALL",
        "IF",
        "WHILE",
        "RANDOM_UNIFORM",
        "RANDOM_STANDARD_NORMAL",
        "MULTINOMIAL",
    }
)
# Operators that only move or reinterpret bytes: no multiply-accumulates.
DATA_MOVEMENT_OPCODES = frozenset(
    {
        "RESHAPE",
        "SQUEEZE",
        "EXPAND_DIMS",
        "CONCATENATION",
        "PAD",
        "PADV2",
        "MIRROR_PAD",
        "TRANSPOSE",
        "SLICE",
        "STRIDED_SLICE",
        "GATHER",
        "GATHER_ND",
        "SPLIT",
        "SPLIT_V",
        "PACK",
        "UNPACK",
        "SHAPE",
        "SPACE_TO_DEPTH",
        "DEPTH_TO_SPACE",
        "SPACE_TO_BATCH_ND",
        "BATCH_TO_SPACE_ND",
        "TILE",
        "BROADCAST_TO",
        "RESIZE_NEAREST_NEIGHBOR",
        "ZEROS_LIKE",
        "FILL",
        "REVERSE_V2",
    }
)
REDUCE_OPCODES = frozenset(
    {"MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD", "REDUCE_ANY", "ARG_MAX", "ARG_MIN"}
)
POOL_OPCODES = frozenset({"AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D"})

# CP-SAT models larger than this (steps x (operators + tensors)) are not built.
MAX_MODEL_CELLS = 30_000


# ---- multiply-accumulates ----------------------------------------------------------------------


def _elements(shape: Sequence[int]) -> int:
    return math.prod(shape) if shape else 1


def macs(graph: Graph, op: int) -> int:
    """Multiply-accumulates of one execution of `op`, from tensor shapes.

    Convolutions and matrix products count one MAC per weight use; pools count one per window tap;
    reductions one per input element; other arithmetic (ADD, MUL, activations, QUANTIZE, ...) one
    per output element; operators that only move bytes (RESHAPE, CONCATENATION, PAD, ...) zero.
    """
    return _operator_macs(graph, graph.operators[op])


def operator_macs(graph: Graph, o: Operator) -> int:
    """`macs` of an operator given itself (a streamed chain's member is in no graph's list)."""
    return _operator_macs(graph, o)


def _operator_macs(graph: Graph, o: Operator) -> int:
    pair = stream_of(o)
    if pair is not None:  # a streamed chain computes what its operators compute
        return sum(_operator_macs(graph, member) for member in pair.operators)
    expansion = expansion_of(o)
    if expansion is not None:  # once each (a stage member's rows computed again: memory.expand.macs_added)
        return _operator_macs(graph, expansion.expand) + _operator_macs(graph, expansion.depthwise)
    shape = [graph.tensors[t].shape if t >= 0 else None for t in o.inputs]
    # the first output: a kernel's scratch (codegen.with_scratch) is an extra output, computed nothing
    out = _elements(graph.tensors[o.outputs[0]].shape) if o.outputs else 0
    code = o.opcode
    if code in DATA_MOVEMENT_OPCODES:
        return 0
    if code == "CONV_2D" and len(shape) > 1 and shape[1] and len(shape[1]) == 4:
        _, kh, kw, ci = shape[1]
        return out * kh * kw * ci
    if code == "DEPTHWISE_CONV_2D" and len(shape) > 1 and shape[1] and len(shape[1]) == 4:
        return out * shape[1][1] * shape[1][2]
    if code == "CONV_3D" and len(shape) > 1 and shape[1] and len(shape[1]) == 5:
        kd, kh, kw, ci, _ = shape[1]
        return out * kd * kh * kw * ci
    if code == "TRANSPOSE_CONV" and len(shape) > 2 and shape[1] and shape[2] and len(shape[1]) == 4:
        co, kh, kw, _ = shape[1]
        return _elements(shape[2]) * kh * kw * co
    if code == "FULLY_CONNECTED" and len(shape) > 1 and shape[1]:
        return out * shape[1][-1]
    if code == "BATCH_MATMUL" and shape and shape[0]:
        depth = shape[0][-2] if o.options.get("adj_x") else shape[0][-1]
        return out * depth
    if code in POOL_OPCODES:
        return out * int(o.options.get("filter_height", 1)) * int(o.options.get("filter_width", 1))
    if code in REDUCE_OPCODES and shape and shape[0]:
        return _elements(shape[0])
    # Recurrent and other weighted operators: each 2-D constant weight is used once per input row.
    weights = [graph.tensors[t] for t in o.inputs if t >= 0 and graph.tensors[t].is_constant]
    matrices = [w for w in weights if len(w.shape) == 2]
    if matrices and shape and shape[0]:
        rows = _elements(shape[0]) // max(shape[0][-1], 1)
        return rows * sum(_elements(w.shape) for w in matrices)
    return out


def total_macs(graph: Graph) -> int:
    """MACs of one inference that runs every operator once."""
    return sum(macs(graph, v) for v in range(len(graph.operators)))


# ---- what recomputation can and cannot do -------------------------------------------------------


def recomputable(graph: Graph, op: int) -> bool:
    """Whether running `op` again gives the same bytes: no state, no randomness, no custom code."""
    o = graph.operators[op]
    if o.opcode in STATEFUL_OPCODES or o.opcode.startswith("CUSTOM"):
        return False
    touched = [t for t in (*o.inputs, *o.outputs, *o.intermediates) if t >= 0]
    return not any(graph.tensors[t].is_variable for t in touched)


def _uses(graph: Graph, tensor: int) -> int:
    return len(graph.consumers.get(tensor, ())) + (tensor in graph.outputs)


def cannot_gain(graph: Graph) -> bool:
    """True when no sequence can peak below the best order, seen from the structure alone.

    If every operator's outputs have at most one use in total (one reader, or being a graph output),
    each execution a sequence needs feeds exactly one later execution; keeping only those needed
    executions gives an order in which every step holds a subset of what the same step held before.
    Chains, and any graph without fan-out, are in this case. One exception: an unproduced tensor
    nobody reads lives in step 0 only, whichever execution that is, so a spare execution placed
    first could carry it; such graphs are left to the search.
    """
    first_step_only = any(
        graph.tensors[t].nbytes > 0 and t not in graph.producer and _uses(graph, t) == 0
        for t in graph.activation_tensors
    )
    single_use = all(sum(_uses(graph, t) for t in set(op.outputs)) <= 1 for op in graph.operators)
    return single_use and not first_step_only


def sequence_lower_bound(graph: Graph) -> int:
    """Bytes no sequence (any number of repeats) can peak below.

    Every operator runs at least once, next to its inputs, its outputs and the tensors that are
    always live; the first step holds every unproduced tensor; the last step holds every graph output.
    """
    activation = set(graph.activation_tensors)
    size = {t: graph.tensors[t].nbytes for t in activation}
    unproduced = {t for t in activation if t not in graph.producer}
    always = {t for t in unproduced if t in graph.outputs}
    outputs = {t for t in graph.outputs if t in activation}

    def io(v: int) -> set[int]:
        o = graph.operators[v]
        return {t for t in (*o.input_tensors, *o.outputs) if t in activation}

    if not graph.operators:
        return sum(size[t] for t in always)
    ops = range(len(graph.operators))
    each_op = max(sum(size[t] for t in io(v) | always) for v in ops)
    sources = [v for v in ops if not graph.predecessors[v]]
    first = min((sum(size[t] for t in io(v) | unproduced) for v in sources), default=0)
    last = min(sum(size[t] for t in io(v) | outputs | always) for v in ops)
    return max(each_op, first, last)


# ---- the plan ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecomputePlan:
    """A sequence of operator executions and what it costs and saves against the best order."""

    sequence: tuple[int, ...]  # operator indices in execution order; recomputed ones appear again
    k: int  # each operator may run at most 1 + k times
    peak_bytes: int
    baseline_peak_bytes: int  # the best order's peak (k = 0)
    lower_bound_bytes: int  # no sequence within the caps peaks lower
    recomputed: tuple[int, ...]  # operators run more than once
    extra_macs: int
    total_macs: int  # MACs of one inference without recomputation
    seconds: float
    method: str  # "baseline" | "single_use" | "lower_bound" | "greedy" | "cp_sat"
    optimal: bool  # proven: minimum peak (or, under a RAM budget, the least extra MACs)
    ram_budget: int | None = None
    mac_budget_percent: float | None = None
    stored_order_peak_bytes: int | None = None  # the model file's own order, for reports

    # Read like a `scheduler.Schedule` by the plan/build reports: the order is the sequence, and it is
    # certified when proven (the least peak of any capped sequence, or the fewest extra MACs).
    @property
    def order(self) -> tuple[int, ...]:
        return self.sequence

    @property
    def certified(self) -> bool:
        return self.optimal

    @property
    def gap_bytes(self) -> int:
        return self.peak_bytes - self.lower_bound_bytes

    @property
    def gap_percent(self) -> float:
        return 100.0 * self.gap_bytes / self.peak_bytes if self.peak_bytes else 0.0

    @property
    def saving_bytes(self) -> int:
        return self.baseline_peak_bytes - self.peak_bytes

    @property
    def saving_percent(self) -> float:
        return 100.0 * self.saving_bytes / self.baseline_peak_bytes if self.baseline_peak_bytes else 0.0

    @property
    def extra_macs_percent(self) -> float:
        return 100.0 * self.extra_macs / self.total_macs if self.total_macs else 0.0

    @property
    def meets_ram_budget(self) -> bool:
        return self.ram_budget is None or self.peak_bytes <= self.ram_budget

    def as_json(self) -> dict[str, Any]:
        return {
            "order": list(self.sequence),
            "recompute_k": self.k,
            "peak_bytes": self.peak_bytes,
            "baseline_peak_bytes": self.baseline_peak_bytes,
            "lower_bound_bytes": self.lower_bound_bytes,
            "gap_bytes": self.gap_bytes,
            "saving_bytes": self.saving_bytes,
            "saving_percent": round(self.saving_percent, 3),
            "recomputed": list(self.recomputed),
            "extra_macs": self.extra_macs,
            "extra_macs_percent": round(self.extra_macs_percent, 4),
            "total_macs": self.total_macs,
            "ram_budget": self.ram_budget,
            "meets_ram_budget": self.meets_ram_budget,
            "mac_budget_percent": self.mac_budget_percent,
            "recompute_method": self.method,
            "recompute_optimal": self.optimal,
            "recompute_seconds": round(self.seconds, 4),
        }


# ---- fast evaluation of sequences ---------------------------------------------------------------


class _Evaluator:
    """memory.sequence_profile's step costs on plain lists, for the thousands of candidate sequences
    the heuristic tries (the tests check both agree)."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        n = self.n_ops = len(graph.operators)
        activation = graph.activation_tensors
        self.tensor_ids = list(activation)
        dense = {t: i for i, t in enumerate(activation)}
        self.nbytes = [graph.tensors[t].nbytes for t in activation]
        self.reads = [tuple(dense[t] for t in op.input_tensors if t in dense) for op in graph.operators]
        self.writes = [
            tuple(dense[t] for t in dict.fromkeys(op.outputs) if t in dense) for op in graph.operators
        ]
        self.producer = [graph.producer.get(t, -1) for t in activation]
        self.unproduced = [i for i, p in enumerate(self.producer) if p < 0]
        self.is_output = [t in set(graph.outputs) for t in activation]
        self.predecessors = [tuple(sorted(p)) for p in graph.predecessors]
        self.macs = [macs(graph, v) for v in range(n)]
        self.total_macs = sum(self.macs)
        self.recomputable = [recomputable(graph, v) for v in range(n)]

    def spans(self, seq: Sequence[int]) -> list[tuple[int, int, int, list[int]]]:
        """(tensor, first step, last step, read steps) of every instance."""
        last = max(len(seq) - 1, 0)
        current: list[list | None] = [None] * len(self.nbytes)
        done: list[tuple[int, int, int, list[int]]] = []
        for t in self.unproduced:
            current[t] = [t, 0, 0, []]
        for s, v in enumerate(seq):
            for t in self.reads[v]:
                span = current[t]
                span[2] = s
                span[3].append(s)
            for t in self.writes[v]:
                if current[t] is not None:
                    done.append(tuple(current[t]))
                current[t] = [t, s, s, []]
        for t, span in enumerate(current):
            if span is not None:
                if self.is_output[t]:
                    span[2] = last
                done.append(tuple(span))
        return done

    def step_costs(self, seq: Sequence[int]) -> list[int]:
        n = len(seq)
        delta = [0] * (n + 1)
        if n:
            for t, first, end, _ in self.spans(seq):
                delta[first] += self.nbytes[t]
                delta[end + 1] -= self.nbytes[t]
        costs, live = [], 0
        for s in range(n):
            live += delta[s]
            costs.append(live)
        return costs

    def valid(self, seq: Sequence[int]) -> bool:
        ran = [False] * self.n_ops
        for v in seq:
            if not all(ran[u] for u in self.predecessors[v]):
                return False
            ran[v] = True
        return all(ran)

    def extra_macs(self, seq: Sequence[int]) -> int:
        return sum(self.macs[v] for v in seq) - self.total_macs

    def counts(self, seq: Sequence[int]) -> list[int]:
        counts = [0] * self.n_ops
        for v in seq:
            counts[v] += 1
        return counts


@dataclass(frozen=True)
class _Limits:
    max_runs: tuple[int, ...]  # per operator
    mac_cap: int | None  # extra MACs allowed
    ram_budget: int | None


def _score(ev: _Evaluator, seq: Sequence[int]) -> tuple[int, int, int]:
    """(peak, steps at the peak, extra MACs): smaller is better."""
    costs = ev.step_costs(seq)
    peak = max(costs, default=0)
    return peak, costs.count(peak), ev.extra_macs(seq)


def _within(ev: _Evaluator, seq: Sequence[int], limits: _Limits) -> bool:
    counts = ev.counts(seq)
    if any(c > m for c, m in zip(counts, limits.max_runs, strict=True)):
        return False
    return limits.mac_cap is None or ev.extra_macs(seq) <= limits.mac_cap


# ---- heuristic --------------------------------------------------------------------------------


def _positions(lo: int, hi: int, most: int = 12) -> list[int]:
    """Up to `most` insertion points in lo..hi, always including both ends."""
    if hi - lo + 1 <= most:
        return list(range(lo, hi + 1))
    step = (hi - lo) / (most - 1)
    return sorted({lo + round(i * step) for i in range(most)} | {hi})


def _recompute_moves(ev: _Evaluator, seq: list[int], limits: _Limits, depth: int = 3) -> Iterator[list[int]]:
    """Candidate sequences: at a peak step, free an instance that waits there for a later use and
    rerun its producer (plus, in deeper variants, producers of inputs that are dead by then) just
    before that use."""
    costs = ev.step_costs(seq)
    if not costs:
        return
    peak = max(costs)
    counts = ev.counts(seq)
    spans = ev.spans(seq)
    spans_of: list[list[tuple[int, int]]] = [[] for _ in ev.nbytes]
    for t, first, end, _ in spans:
        spans_of[t].append((first, end))
    for p in [s for s, c in enumerate(costs) if c == peak][:3]:
        for t, first, end, read_steps in spans:
            v = ev.producer[t]
            if not (first < p <= end) or v < 0 or p in read_steps or ev.nbytes[t] == 0:
                continue
            if not ev.recomputable[v] or counts[v] >= limits.max_runs[v]:
                continue
            later = [r for r in read_steps if r > p]
            use = later[0] if later else len(seq)
            for q in _positions(p + 1, use):
                chain = [v]
                for _ in range(depth):
                    yield _insert(ev, seq, q, chain)
                    chain = _grow_chain(ev, spans_of, q, chain, counts, limits)
                    if chain is None:
                        break


def _grow_chain(
    ev: _Evaluator,
    spans_of: list[list[tuple[int, int]]],
    q: int,
    chain: list[int],
    counts: list[int],
    limits: _Limits,
) -> list[int] | None:
    """`chain` plus the producers of its inputs that are not live just before step q (the chain
    would otherwise keep an old instance alive until q); None if nothing can be added."""
    in_chain = set(chain)
    added: list[int] = []
    for v in chain:
        for t in ev.reads[v]:
            w = ev.producer[t]
            if w < 0 or w in in_chain or not ev.recomputable[w] or counts[w] >= limits.max_runs[w]:
                continue
            if not any(first <= q - 1 <= end for first, end in spans_of[t]):
                in_chain.add(w)
                added.append(w)
    if not added:
        return None
    return _topological(ev, chain + added)


def _topological(ev: _Evaluator, ops: list[int]) -> list[int]:
    members = set(ops)
    placed: list[int] = []
    pending = sorted(members)
    while pending:
        for v in pending:
            if not any(u in members and u not in placed for u in ev.predecessors[v]):
                placed.append(v)
                pending.remove(v)
                break
    return placed


def _insert(ev: _Evaluator, seq: list[int], q: int, chain: list[int]) -> list[int]:
    return seq[:q] + _topological(ev, chain) + seq[q:]


def _good_enough(score: tuple[int, int, int], limits: _Limits) -> bool:
    return limits.ram_budget is not None and score[0] <= limits.ram_budget


def _greedy(ev: _Evaluator, start: Sequence[int], limits: _Limits, deadline: float) -> list[int]:
    """Apply the best recompute move while it lowers (peak, steps at the peak), then prune."""
    seq = list(start)
    score = _score(ev, seq)
    while not _good_enough(score, limits) and time.perf_counter() < deadline:
        best, best_score = None, score
        for move in _recompute_moves(ev, seq, limits):
            if time.perf_counter() >= deadline:
                break
            if not _within(ev, move, limits):
                continue
            candidate = _score(ev, move)
            if candidate < best_score and candidate[:2] < score[:2]:
                best, best_score = move, candidate
        if best is None:
            break
        seq, score = best, best_score
    return _prune(ev, seq, limits, deadline)


def _prune(ev: _Evaluator, seq: Sequence[int], limits: _Limits, deadline: float) -> list[int]:
    """Drop executions the peak (or the RAM budget) does not need, latest first."""
    seq = list(seq)
    peak = max(ev.step_costs(seq), default=0)
    allowed = peak if limits.ram_budget is None else max(peak, limits.ram_budget)
    changed = True
    while changed and time.perf_counter() < deadline:
        changed = False
        counts = ev.counts(seq)
        for i in sorted(range(len(seq)), key=lambda i: (-ev.macs[seq[i]], -i)):
            if counts[seq[i]] < 2:
                continue
            trial = seq[:i] + seq[i + 1 :]
            if ev.valid(trial) and max(ev.step_costs(trial), default=0) <= allowed:
                seq = trial
                changed = True
                break
    return seq


# ---- CP-SAT --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _SolverResult:
    sequence: tuple[int, ...] | None
    status: str
    bound: int  # proven lower bound on the objective (peak bytes, or weighted extra MACs)


def _cp_sat(
    ev: _Evaluator,
    limits: _Limits,
    horizon: int,
    hint: Sequence[int] | None,
    objective: str,
    peak_range: tuple[int, int],
    deadline: float,
) -> _SolverResult:
    """Step model: step s runs at most one operator (idle steps only at the end); live[t, s] says an
    instance of t is live at s. An instance is live where it is produced or read, and a live instance
    that was not produced at s was live at s - 1, so each read is joined to the latest production
    before it; a graph output is live at the last step. The solver keeps `live` minimal wherever it
    matters, so step costs equal memory.sequence_profile's. `objective` is "peak" (minimise the
    peak within `peak_range`) or "macs" (minimise extra MACs, then extra executions, with the peak
    at most peak_range[1]). Building the model counts against `deadline`."""
    from ortools.sat.python import cp_model

    n, steps = ev.n_ops, range(horizon)
    model = cp_model.CpModel()
    run = [[model.new_bool_var(f"run{v}_{s}") for s in steps] for v in range(n)]
    busy = []
    for s in steps:
        busy_s = model.new_bool_var(f"busy{s}")
        model.add(sum(run[v][s] for v in range(n)) == busy_s)
        busy.append(busy_s)
    for s in range(1, horizon):
        model.add_implication(busy[s], busy[s - 1])
    counts = []
    for v in range(n):
        count = model.new_int_var(1, limits.max_runs[v], f"count{v}")
        model.add(sum(run[v]) == count)
        counts.append(count)
    consumers: list[list[int]] = [[] for _ in ev.nbytes]
    for v in range(n):
        for t in ev.reads[v]:
            consumers[t].append(v)
    cost = [[] for _ in steps]  # (bytes, literal) terms per step
    constant = [0] * horizon
    live: dict[int, list] = {}
    for t, nbytes in enumerate(ev.nbytes):
        p = ev.producer[t]
        if p < 0:
            if ev.is_output[t]:
                constant = [c + nbytes for c in constant]
                continue
            if not consumers[t]:
                constant[0] += nbytes
                continue
            if nbytes == 0:
                continue
            lit = [model.new_bool_var(f"live{t}_{s}") for s in steps]
            model.add(lit[0] == 1)
            for s in range(1, horizon):
                model.add_implication(lit[s], lit[s - 1])
        else:
            lit = [model.new_bool_var(f"live{t}_{s}") for s in steps]
            model.add_implication(lit[0], run[p][0])
            for s in steps:
                model.add_implication(run[p][s], lit[s])
                if s:
                    model.add_bool_or([run[p][s], lit[s - 1], lit[s].Not()])
            if ev.is_output[t]:
                model.add(lit[horizon - 1] == 1)
        for c in consumers[t]:
            for s in steps:
                model.add_implication(run[c][s], lit[s])
        live[t] = lit
        if nbytes:
            for s in steps:
                cost[s].append((nbytes, lit[s]))
    lo, hi = peak_range
    peak = model.new_int_var(lo if objective == "peak" else 0, hi, "peak")
    for s in steps:
        model.add(peak >= constant[s] + sum(b * lit for b, lit in cost[s]))
    extra = [ev.macs[v] * (counts[v] - 1) for v in range(n)]
    if limits.mac_cap is not None:
        model.add(sum(extra) <= limits.mac_cap)
    if objective == "peak":
        model.minimize(peak)
    else:
        tie = sum(limits.max_runs) + 1
        model.minimize(tie * sum(extra) + sum(counts) - n)
    if hint is not None and len(hint) <= horizon:
        padded = list(hint) + [-1] * (horizon - len(hint))
        for v in range(n):
            for s in steps:
                model.add_hint(run[v][s], padded[s] == v)
        alive = {t: [False] * horizon for t in live}
        for t, first, end, _ in ev.spans(hint):
            if t in alive:
                for s in range(first, horizon if ev.is_output[t] and end == len(hint) - 1 else end + 1):
                    alive[t][s] = True
        for t, lits in live.items():
            for s in steps:
                model.add_hint(lits[s], alive[t][s])
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(deadline - time.perf_counter(), 0.01)
    solver.parameters.num_workers = max(1, min(8, os.cpu_count() or 1))
    # Probing and symmetry detection cost seconds on these models and rarely pay back in time.
    solver.parameters.cp_model_probing_level = 0
    solver.parameters.symmetry_level = 0
    status = solver.solve(model)
    name = solver.status_name(status)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return _SolverResult(None, name, math.inf if name == "INFEASIBLE" else lo)
    seq = tuple(v for s in steps for v in range(n) if solver.boolean_value(run[v][s]))
    return _SolverResult(seq, name, math.ceil(solver.best_objective_bound - 1e-6))


def _horizon_cells(ev: _Evaluator, horizon: int) -> int:
    return horizon * (ev.n_ops + len(ev.nbytes))


def _restricted_limits(ev: _Evaluator, seq: Sequence[int], limits: _Limits, k: int) -> _Limits:
    """Only operators whose outputs are live at a peak step of `seq`, their producers two levels up
    and the ones `seq` already repeats may repeat: a model small enough for large graphs."""
    costs = ev.step_costs(seq)
    peak = max(costs, default=0)
    near: set[int] = {v for v, c in enumerate(ev.counts(seq)) if c > 1}
    frontier: set[int] = set()
    for t, first, end, _ in ev.spans(seq):
        if any(costs[s] == peak for s in range(first, end + 1)) and ev.producer[t] >= 0:
            frontier.add(ev.producer[t])
    for _ in range(3):
        near |= frontier
        frontier = {u for v in frontier for u in ev.predecessors[v]} - near
    max_runs = tuple(min(limits.max_runs[v], 1 + k) if v in near else 1 for v in range(ev.n_ops))
    return _Limits(max_runs, limits.mac_cap, limits.ram_budget)


# ---- the planner ---------------------------------------------------------------------------------


def plan_recompute(
    graph: Graph,
    k: int,
    ram_budget: int | None = None,
    mac_budget_percent: float | None = None,
    time_limit: float = 5.0,
) -> RecomputePlan:
    """The sequence with the lowest peak when each operator may run up to 1 + k times (or, with a
    `ram_budget`, the one meeting it with the fewest extra MACs), within `time_limit` seconds.

    `mac_budget_percent` caps the extra MACs as a share of one inference's MACs. The result is
    `optimal` only when proven: by the lower bound, by structure (no fan-out) or by CP-SAT on the
    exact model. If the budget cannot be met, the lowest-peak sequence found is returned
    (`meets_ram_budget` is then False).
    """
    from tinysched.order.scheduler import schedule

    if k < 0:
        raise TinyschedError(f"recompute cap k must be >= 0, not {k}")
    if mac_budget_percent is not None and mac_budget_percent < 0:
        raise TinyschedError(f"MAC budget must be >= 0 %, not {mac_budget_percent}")
    started = time.perf_counter()
    deadline = started + time_limit
    ev = _Evaluator(graph)
    baseline = schedule(graph, time_limit=0.3 * time_limit)
    bound = max(sequence_lower_bound(graph), 0)
    base_peak = baseline.peak_bytes

    def finish(seq: Sequence[int], lower: int, method: str, optimal: bool) -> RecomputePlan:
        counts = ev.counts(seq)
        peak = max(ev.step_costs(seq), default=0)
        return RecomputePlan(
            sequence=tuple(seq),
            k=k,
            peak_bytes=peak,
            baseline_peak_bytes=base_peak,
            lower_bound_bytes=min(lower, peak),
            recomputed=tuple(v for v, c in enumerate(counts) if c > 1),
            extra_macs=ev.extra_macs(seq),
            total_macs=ev.total_macs,
            seconds=time.perf_counter() - started,
            method=method,
            optimal=optimal,
            ram_budget=ram_budget,
            mac_budget_percent=mac_budget_percent,
            stored_order_peak_bytes=baseline.stored_order_peak_bytes,
        )

    order = list(baseline.order)
    if ram_budget is not None and base_peak <= ram_budget:
        return finish(order, bound, "baseline", True)  # no extra MACs needed
    if k == 0:
        return finish(order, baseline.lower_bound_bytes, "baseline", baseline.certified)
    if cannot_gain(graph):
        return finish(order, baseline.lower_bound_bytes, "single_use", baseline.certified)
    if base_peak <= bound:
        return finish(order, bound, "lower_bound", True)

    max_runs = tuple(1 + k if ev.recomputable[v] else 1 for v in range(ev.n_ops))
    mac_cap = None if mac_budget_percent is None else math.floor(ev.total_macs * mac_budget_percent / 100)
    limits = _Limits(max_runs, mac_cap, ram_budget)
    greedy_deadline = started + 0.3 * time_limit + 0.3 * (deadline - time.perf_counter())
    greedy_deadline = min(greedy_deadline, deadline)
    best = order
    if k > 1:  # first with one repeat per operator, so a larger k never does worse in the same time
        halfway = (time.perf_counter() + greedy_deadline) / 2
        best = _greedy(ev, best, _Limits(tuple(min(m, 2) for m in max_runs), mac_cap, ram_budget), halfway)
    best = _greedy(ev, best, limits, greedy_deadline)
    best_peak = max(ev.step_costs(best), default=0)
    method = "greedy" if best_peak < base_peak or ev.counts(best) != ev.counts(order) else "baseline"
    lower, optimal = bound, best_peak <= bound

    full_horizon = sum(max_runs)
    exact = _horizon_cells(ev, full_horizon) <= MAX_MODEL_CELLS
    model_limits = limits if exact else _restricted_limits(ev, best, limits, k)
    horizon = sum(model_limits.max_runs)
    if not optimal and _horizon_cells(ev, horizon) <= MAX_MODEL_CELLS:
        remaining = deadline - time.perf_counter()
        if ram_budget is None and remaining > 0.05:
            phase_end = time.perf_counter() + 0.7 * remaining
            result = _cp_sat(ev, model_limits, horizon, best, "peak", (lower, best_peak), phase_end)
            if result.sequence is not None and ev.valid(result.sequence):
                peak = max(ev.step_costs(result.sequence), default=0)
                if peak < best_peak:
                    best, best_peak, method = list(result.sequence), peak, "cp_sat"
            if exact:
                lower = max(lower, min(result.bound, best_peak))
                optimal = result.status == "OPTIMAL" or lower >= best_peak
        remaining = deadline - time.perf_counter()
        cap = best_peak if ram_budget is None else max(ram_budget, lower)
        if remaining > 0.05 and (ram_budget is not None or ev.extra_macs(best) > 0):
            # fewest extra MACs at this peak (or within the RAM budget)
            hint = best if best_peak <= cap else None
            result = _cp_sat(ev, model_limits, horizon, hint, "macs", (0, cap), deadline)
            if result.sequence is not None and ev.valid(result.sequence):
                candidate = list(result.sequence)
                peak = max(ev.step_costs(candidate), default=0)
                if peak <= cap and (best_peak > cap or ev.extra_macs(candidate) < ev.extra_macs(best)):
                    best, best_peak, method = candidate, peak, "cp_sat"
            if ram_budget is not None and exact:
                optimal = result.status == "OPTIMAL" and best_peak <= ram_budget
    best = _prune(ev, best, limits, math.inf)
    return finish(best, lower, method, optimal)


# ---- the pipeline's view: what the CLI asks for ----------------------------------------------------


@dataclass(frozen=True)
class RecomputeRequest:
    """`--recompute K [--ram-budget BYTES] [--mac-budget PERCENT]` as every pipeline stage takes it.

    With k = 0 and no budget the pipeline runs the scheduler's order exactly as without the flags."""

    k: int = 0
    ram_budget: int | None = None
    mac_budget_percent: float | None = None
    time_limit: float = 5.0

    @property
    def active(self) -> bool:
        return self.k > 0

    def plan(self, graph: Graph, time_limit: float | None = None) -> RecomputePlan:
        """The plan within `time_limit` seconds (default: the request's own)."""
        limit = self.time_limit if time_limit is None else time_limit
        return plan_recompute(graph, self.k, self.ram_budget, self.mac_budget_percent, limit)


def request_from_values(
    k: int, ram_budget: int | None, mac_budget: float | None, time_limit: float | None = None
) -> RecomputeRequest | None:
    """`--recompute K --ram-budget B --mac-budget P` checked, or None without recomputation."""
    if k < 0:
        raise TinyschedError(f"--recompute must be 0 or more, got {k}")
    if ram_budget is not None and ram_budget < 0:
        raise TinyschedError(f"--ram-budget must be a non-negative number of bytes, got {ram_budget}")
    if mac_budget is not None and not mac_budget >= 0:
        raise TinyschedError(f"--mac-budget must be a non-negative percentage, got {mac_budget}")
    if k == 0:
        if ram_budget is not None:
            raise TinyschedError("--ram-budget needs --recompute K (K >= 1)")
        return None  # --mac-budget alone caps the MACs two-pass streams add (tinysched.pipeline)
    if time_limit is None or not 0 < time_limit < math.inf:
        time_limit = 5.0
    return RecomputeRequest(k, ram_budget, mac_budget, time_limit)


def summary_lines(plan: RecomputePlan, format_bytes: Any = lambda n: f"{n:,} B") -> list[str]:
    """Human-readable lines: the peak at k = 0 against the peak with recomputation, and the cost."""
    lines = [f"peak at k=0       {format_bytes(plan.baseline_peak_bytes)}  (best order, no recomputation)"]
    if plan.saving_bytes > 0:
        lines.append(
            f"with recompute={plan.k}  {format_bytes(plan.peak_bytes)}  "
            f"(saves {format_bytes(plan.saving_bytes)}, {plan.saving_percent:.1f}%)"
        )
        lines.append(
            f"recomputed        operators {', '.join(map(str, plan.recomputed))}; "
            f"extra MACs {plan.extra_macs:,} ({plan.extra_macs_percent:.2f}% of {plan.total_macs:,})"
        )
    else:
        lines.append(f"with recompute={plan.k}  {format_bytes(plan.peak_bytes)}  (no gain: {plan.method})")
    proof = (
        "proven optimal"
        if plan.optimal
        else f"not proven (lower bound {format_bytes(plan.lower_bound_bytes)})"
    )
    lines.append(f"recompute search  {plan.method}, {proof}, {plan.seconds:.2f} s")
    if plan.ram_budget is not None and not plan.meets_ram_budget:
        lines.append(f"RAM budget        {format_bytes(plan.ram_budget)} NOT met")
    return lines
