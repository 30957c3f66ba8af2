"""The tensor memory model: when each activation tensor is live under an order, and what a step costs.

This is the one definition of lifetimes every stage uses (scheduler, bounds, arena planner, codegen
checks). `docs/memory-model.md` states it in prose:

- step s runs operator order[s]; a tensor is live from the step of its producer (step 0 for a graph
  input, or for an activation nobody produces) through the step of its last consumer;
- a graph output stays live through the last step; a tensor nobody reads dies in its producer's step;
- a step costs the bytes of all tensors live during it, and the peak is the costliest step;
- constants live in flash and variable (state) tensors persist outside the arena: neither counts here.

`sequence_profile` extends the same rules to sequences that run an operator more than once
(recomputation): lifetimes then belong to each execution's output instance, and a sequence that runs
every operator once gets exactly `profile`'s numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from tinysched.errors import TinyschedError
from tinysched.model.graph import Graph


@dataclass(frozen=True)
class Lifetime:
    tensor: int
    nbytes: int
    first_step: int
    last_step: int


@dataclass(frozen=True)
class Step:
    step: int
    op: int
    live_bytes: int
    born: tuple[int, ...]  # tensors whose lifetime starts at this step
    freed: tuple[int, ...]  # tensors whose lifetime ends at this step


@dataclass(frozen=True)
class MemoryProfile:
    order: tuple[int, ...]
    lifetimes: tuple[Lifetime, ...]  # one per activation tensor, by tensor index
    steps: tuple[Step, ...]
    peak_bytes: int
    peak_step: int

    def live_at(self, step: int) -> tuple[int, ...]:
        return tuple(life.tensor for life in self.lifetimes if life.first_step <= step <= life.last_step)

    @property
    def peak_tensors(self) -> tuple[int, ...]:
        return self.live_at(self.peak_step) if self.steps else ()


class StepModel(Protocol):
    """What `profile` asks of a memory model that refines this one: its lifetimes and what a step's
    overlap saves (the refined model, `tinysched.memory.overlap.Refinement`, is one). The tensor model
    is defined here without knowing any refinement."""

    @property
    def refined(self) -> bool: ...

    def lifetimes(self, order: Sequence[int]) -> tuple[Lifetime, ...]: ...

    def saving(self, op: int, alignment: int = 1) -> int: ...


def lifetimes(graph: Graph, order: Sequence[int]) -> tuple[Lifetime, ...]:
    """Lifetime of every activation tensor under `order` (assumed to be a valid topological order)."""
    last = max(len(order) - 1, 0)
    position = {op: step for step, op in enumerate(order)}
    graph_outputs = set(graph.outputs)
    result = []
    for t in graph.activation_tensors:
        producer = graph.producer.get(t)
        first = position[producer] if producer is not None else 0
        readers = graph.consumers.get(t, ())
        end = max((position[v] for v in readers), default=first)
        if t in graph_outputs:
            end = last
        result.append(Lifetime(t, graph.tensors[t].nbytes, first, end))
    return tuple(result)


def profile(
    graph: Graph, order: Sequence[int] | None = None, model: StepModel | None = None
) -> MemoryProfile:
    """Per-step live bytes under `order` (stored order by default), checked to be topological.

    With a refined memory model (`tinysched.memory.overlap.refine`) aliases (views, split ranges, slices
    of an in-place concatenation) cost nothing of their own, their root lives as long as any of
    them (an in-place concatenation's output from its first slice's producer on), and a step whose
    operator may overlap its dying input with its output costs that overlap less
    (docs/memory-model.md, "The refined model")."""
    order = tuple(graph.stored_order() if order is None else order)
    graph.check_order(order)
    refined = model is not None and model.refined
    lives = model.lifetimes(order) if refined else lifetimes(graph, order)  # type: ignore[union-attr]
    n = len(order)
    delta = [0] * (n + 1)
    born: list[list[int]] = [[] for _ in range(n)]
    freed: list[list[int]] = [[] for _ in range(n)]
    for life in lives:
        if n == 0:
            break
        delta[life.first_step] += life.nbytes
        delta[life.last_step + 1] -= life.nbytes
        born[life.first_step].append(life.tensor)
        freed[life.last_step].append(life.tensor)
    steps = []
    live = 0
    for s in range(n):
        live += delta[s]
        saved = model.saving(order[s]) if refined else 0  # type: ignore[union-attr]
        steps.append(Step(s, order[s], live - saved, tuple(born[s]), tuple(freed[s])))
    peak_step = max(range(n), key=lambda s: steps[s].live_bytes, default=0)
    peak = steps[peak_step].live_bytes if steps else 0
    return MemoryProfile(order, lives, tuple(steps), peak, peak_step)


def peak_bytes(graph: Graph, order: Sequence[int] | None = None, model: StepModel | None = None) -> int:
    return profile(graph, order, model).peak_bytes


# ---- sequences with repeated operators (recomputation) -----------------------------------------
#
# A *sequence* may run an operator more than once. Each execution writes a new *instance* of each
# of its outputs (instance j = the j-th execution of the producer, from 0); an unproduced tensor
# (graph input, or activation nobody writes) has the single instance 0, born at step 0. The rules
# above then hold per instance (docs/recomputation.md):
#
# - an execution reads the most recent instance of each input produced at an earlier step;
# - an instance is live from its producing step through the last step that reads it; the final
#   instance of a graph output stays live through the last step; an instance nobody reads is live in
#   its producing step only;
# - a step costs the bytes of every instance live during it.
#
# Reading an instance is what keeps it alive, so a sequence is valid as soon as every execution
# comes after some execution of each producer it reads. A sequence that runs every operator once is
# an order, and then these lifetimes are exactly `lifetimes(graph, order)`.


@dataclass(frozen=True)
class InstanceLifetime:
    tensor: int
    instance: int  # which execution of the producer wrote it (0 for an unproduced tensor)
    nbytes: int
    first_step: int
    last_step: int


@dataclass(frozen=True)
class SequenceStep:
    step: int
    op: int
    execution: int  # how many times `op` ran before this step (0: its first run)
    live_bytes: int
    reads: tuple[tuple[int, int], ...]  # (tensor, instance) of each activation input, in input order
    born: tuple[tuple[int, int], ...]  # instances whose lifetime starts at this step
    freed: tuple[tuple[int, int], ...]  # instances whose lifetime ends at this step


@dataclass(frozen=True)
class SequenceProfile:
    sequence: tuple[int, ...]
    instances: tuple[InstanceLifetime, ...]  # sorted by (tensor, instance)
    steps: tuple[SequenceStep, ...]
    peak_bytes: int
    peak_step: int

    def live_at(self, step: int) -> tuple[tuple[int, int], ...]:
        return tuple(
            (life.tensor, life.instance)
            for life in self.instances
            if life.first_step <= step <= life.last_step
        )

    @property
    def executions(self) -> dict[int, int]:
        """Operator -> how many times the sequence runs it."""
        counts: dict[int, int] = {}
        for op in self.sequence:
            counts[op] = counts.get(op, 0) + 1
        return counts

    @property
    def repeated(self) -> tuple[int, ...]:
        """Operators the sequence runs more than once, by index."""
        return tuple(sorted(op for op, count in self.executions.items() if count > 1))


def check_sequence(graph: Graph, sequence: Sequence[int]) -> None:
    """Raise TinyschedError unless `sequence` runs every operator at least once and every execution
    comes after an execution of each producer it reads."""
    n = len(graph.operators)
    ran: set[int] = set()
    for step, v in enumerate(sequence):
        if not isinstance(v, int) or not 0 <= v < n:
            raise TinyschedError(f"sequence names operator {v!r}, model has operators 0..{n - 1}")
        for u in graph.predecessors[v]:
            if u not in ran:
                raise TinyschedError(
                    f"sequence is not valid: operator {v} ({graph.operators[v].opcode}) at step {step} "
                    f"reads the output of operator {u} ({graph.operators[u].opcode}), which has not run yet"
                )
        ran.add(v)
    missing = sorted(set(range(n)) - ran)
    if missing:
        raise TinyschedError(f"sequence misses operators {missing[:10]}")


def instance_lifetimes(
    graph: Graph, sequence: Sequence[int]
) -> tuple[tuple[InstanceLifetime, ...], tuple[tuple[tuple[int, int], ...], ...]]:
    """Lifetime of every activation instance under `sequence` (assumed valid), and for each step the
    (tensor, instance) pairs it reads."""
    last = max(len(sequence) - 1, 0)
    activation = set(graph.activation_tensors)
    graph_outputs = set(graph.outputs)
    # (tensor, instance) -> [first_step, last_step]; the current instance of each tensor
    spans: dict[tuple[int, int], list[int]] = {}
    current: dict[int, int] = {}
    for t in graph.activation_tensors:
        if t not in graph.producer:
            spans[(t, 0)] = [0, 0]
            current[t] = 0
    produced: dict[int, int] = {}  # tensor -> instances written so far
    reads_per_step: list[tuple[tuple[int, int], ...]] = []
    for step, v in enumerate(sequence):
        op = graph.operators[v]
        reads = []
        for t in op.input_tensors:
            if t in activation:
                key = (t, current[t])
                spans[key][1] = step
                reads.append(key)
        reads_per_step.append(tuple(reads))
        for t in dict.fromkeys(op.outputs):
            if t in activation:
                instance = produced.get(t, 0)
                produced[t] = instance + 1
                current[t] = instance
                spans[(t, instance)] = [step, step]
    for t in graph_outputs & activation:
        if t in current:
            spans[(t, current[t])][1] = last
    lives = tuple(
        InstanceLifetime(t, i, graph.tensors[t].nbytes, first, end)
        for (t, i), (first, end) in sorted(spans.items())
    )
    return lives, tuple(reads_per_step)


def sequence_profile(graph: Graph, sequence: Sequence[int]) -> SequenceProfile:
    """Per-step live bytes of a sequence in which operators may repeat, checked to be valid.

    For a sequence that runs every operator once this is `profile(graph, sequence)` with each tensor
    as its instance 0."""
    sequence = tuple(sequence)
    check_sequence(graph, sequence)
    lives, reads = instance_lifetimes(graph, sequence)
    n = len(sequence)
    delta = [0] * (n + 1)
    born: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    freed: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for life in lives if n else ():
        delta[life.first_step] += life.nbytes
        delta[life.last_step + 1] -= life.nbytes
        born[life.first_step].append((life.tensor, life.instance))
        freed[life.last_step].append((life.tensor, life.instance))
    steps = []
    live = 0
    runs: dict[int, int] = {}
    for s, v in enumerate(sequence):
        live += delta[s]
        steps.append(SequenceStep(s, v, runs.get(v, 0), live, reads[s], tuple(born[s]), tuple(freed[s])))
        runs[v] = runs.get(v, 0) + 1
    peak_step = max(range(n), key=lambda s: steps[s].live_bytes, default=0)
    peak = steps[peak_step].live_bytes if steps else 0
    return SequenceProfile(sequence, lives, tuple(steps), peak, peak_step)


# ---- aliasing of pure reinterpretations --------------------------------------------------------

ALIASABLE_OPS = ("RESHAPE", "SQUEEZE", "EXPAND_DIMS")


@dataclass(frozen=True)
class AliasSaving:
    """Peak of one order in the tensor model, and if byte-reinterpreting operators shared memory."""

    peak_bytes: int
    aliased_peak_bytes: int
    operators: tuple[int, ...]  # the RESHAPE/SQUEEZE/EXPAND_DIMS operators that would alias

    @property
    def saving_bytes(self) -> int:
        return self.peak_bytes - self.aliased_peak_bytes

    def as_json(self) -> dict[str, object]:
        return {
            "peak_bytes": self.peak_bytes,
            "aliased_peak_bytes": self.aliased_peak_bytes,
            "saving_bytes": self.saving_bytes,
            "operators": list(self.operators),
        }


def alias_saving(graph: Graph, order: Sequence[int] | None = None) -> AliasSaving:
    """How much lower the peak of `order` would be if RESHAPE/SQUEEZE/EXPAND_DIMS outputs aliased
    their inputs (one buffer living from the input's birth to the output's last use)."""
    order = list(graph.stored_order() if order is None else order)
    base = peak_bytes(graph, order)
    alias: dict[int, int] = {}  # output tensor -> the tensor whose memory it would share

    def root(t: int) -> int:
        while t in alias:
            t = alias[t]
        return t

    removed: list[int] = []
    for v in order:
        op = graph.operators[v]
        if op.opcode not in ALIASABLE_OPS or not op.inputs or len(op.outputs) != 1:
            continue
        x, y = op.inputs[0], op.outputs[0]
        tx, ty = graph.tensors[x], graph.tensors[y]
        if not (tx.is_activation and ty.is_activation) or tx.nbytes != ty.nbytes:
            continue
        if y in graph.outputs and root(x) in graph.inputs:
            continue  # the output buffer and the input buffer are the caller's, not the arena's
        alias[y] = root(x)
        removed.append(v)
    if not removed:
        return AliasSaving(base, base, ())
    gone = set(removed)
    kept = [v for v in order if v not in gone]
    renumber = {v: i for i, v in enumerate(kept)}
    ops = tuple(
        replace(
            graph.operators[v],
            index=renumber[v],
            inputs=tuple(root(t) if t >= 0 else t for t in graph.operators[v].inputs),
        )
        for v in kept
    )
    outs = tuple(dict.fromkeys(root(t) for t in graph.outputs))
    aliased = Graph(graph.tensors, tuple(sorted(ops, key=lambda o: o.index)), graph.inputs, outs, graph.name)
    return AliasSaving(base, peak_bytes(aliased, list(range(len(kept)))), tuple(removed))
