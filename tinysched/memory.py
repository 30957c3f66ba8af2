"""The tensor memory model: when each activation tensor is live under an order, and what a step costs.

This is the one definition of lifetimes every stage uses (scheduler, bounds, arena planner, codegen
checks). `docs/memory-model.md` states it in prose:

- step s runs operator order[s]; a tensor is live from the step of its producer (step 0 for a graph
  input, or for an activation nobody produces) through the step of its last consumer;
- a graph output stays live through the last step; a tensor nobody reads dies in its producer's step;
- a step costs the bytes of all tensors live during it, and the peak is the costliest step;
- constants live in flash and variable (state) tensors persist outside the arena: neither counts here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tinysched.graph import Graph


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


def profile(graph: Graph, order: Sequence[int] | None = None) -> MemoryProfile:
    """Per-step live bytes under `order` (stored order by default), checked to be topological."""
    order = tuple(graph.stored_order() if order is None else order)
    graph.check_order(order)
    lives = lifetimes(graph, order)
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
        steps.append(Step(s, order[s], live, tuple(born[s]), tuple(freed[s])))
    peak_step = max(range(n), key=lambda s: steps[s].live_bytes, default=0)
    peak = steps[peak_step].live_bytes if steps else 0
    return MemoryProfile(order, lives, tuple(steps), peak, peak_step)


def peak_bytes(graph: Graph, order: Sequence[int] | None = None) -> int:
    return profile(graph, order).peak_bytes
