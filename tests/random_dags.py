"""Random small operator graphs (hypothesis) and brute force over all their topological orders.

The graphs exercise every corner of the memory model: tensors with several consumers, operators
with several (or no) outputs, graph inputs read late or never, unproduced activations that are not
graph inputs, outputs nobody reads, graph outputs that are also read (or are graph inputs), and
zero-byte tensors. The stored order is a random topological order, not creation order.
"""

from __future__ import annotations

from collections.abc import Iterator

from hypothesis import strategies as st

from tinysched.graph import Graph, make_graph
from tinysched.memory import lifetimes


@st.composite
def small_dags(draw: st.DrawFn, max_ops: int = 7) -> Graph:
    sizes: list[int] = []

    def new_tensor() -> int:
        sizes.append(draw(st.one_of(st.integers(1, 64), st.just(0), st.sampled_from([100, 256]))))
        return len(sizes) - 1

    graph_inputs = [new_tensor() for _ in range(draw(st.integers(0, 2)))]
    floating = [new_tensor() for _ in range(draw(st.integers(0, 1)))]  # read, but not a graph input
    readable = graph_inputs + floating
    n_ops = draw(st.integers(1, max_ops))
    ops: list[tuple[list[int], list[int]]] = []
    for _ in range(n_ops):
        reads = draw(st.lists(st.sampled_from(readable), max_size=3)) if readable else []
        writes = [new_tensor() for _ in range(draw(st.sampled_from([0, 1, 1, 1, 2, 2, 3])))]
        ops.append((reads, writes))
        readable = readable + writes
    outputs = draw(st.lists(st.integers(0, len(sizes) - 1), max_size=3)) if sizes else []
    # store the operators in a random topological order
    producer = {t: i for i, (_, writes) in enumerate(ops) for t in writes}
    preds = [{producer[t] for t in reads if t in producer} for reads, _ in ops]
    stored: list[int] = []
    while len(stored) < n_ops:
        ready = [v for v in range(n_ops) if v not in stored and preds[v] <= set(stored)]
        stored.append(draw(st.sampled_from(ready)))
    return make_graph(sizes, [ops[v] for v in stored], graph_inputs, outputs, name="random_dag")


def topological_orders(graph: Graph) -> Iterator[tuple[int, ...]]:
    n = len(graph.operators)
    preds = graph.predecessors
    order: list[int] = []
    done: set[int] = set()

    def extend() -> Iterator[tuple[int, ...]]:
        if len(order) == n:
            yield tuple(order)
            return
        for v in range(n):
            if v not in done and preds[v] <= done:
                order.append(v)
                done.add(v)
                yield from extend()
                done.discard(v)
                order.pop()

    yield from extend()


def peak_of(graph: Graph, order: tuple[int, ...]) -> int:
    """Peak straight from memory.lifetimes (no shortcut shared with the code under test)."""
    n = len(order)
    delta = [0] * (n + 1)
    for life in lifetimes(graph, order):
        delta[life.first_step] += life.nbytes
        delta[life.last_step + 1] -= life.nbytes
    peak = live = 0
    for s in range(n):
        live += delta[s]
        peak = max(peak, live)
    return peak


def brute_force_optimum(graph: Graph) -> int:
    return min(peak_of(graph, order) for order in topological_orders(graph))
