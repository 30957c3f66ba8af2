"""Random small operator graphs (hypothesis) and brute force over all their topological orders.

The graphs exercise every corner of the memory model: tensors with several consumers, operators
with several (or no) outputs, graph inputs read late or never, unproduced activations that are not
graph inputs, outputs nobody reads, graph outputs that are also read (or are graph inputs), and
zero-byte tensors. The stored order is a random topological order, not creation order.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from hypothesis import strategies as st

from tinysched.memory.tensor import lifetimes
from tinysched.model.graph import Graph, make_graph


def random_dag(seed: int, n_ops: int) -> Graph:
    """One random graph of `n_ops` operators (deterministic in `seed`)."""
    rng = random.Random(seed)
    sizes: list[int] = []

    def new_tensor() -> int:
        kind = rng.random()
        sizes.append(0 if kind < 0.06 else rng.choice([100, 256]) if kind < 0.15 else rng.randint(1, 64))
        return len(sizes) - 1

    graph_inputs = [new_tensor() for _ in range(rng.randint(0, 2))]
    floating = [new_tensor() for _ in range(rng.randint(0, 1))]  # read, but not a graph input
    readable = graph_inputs + floating
    ops: list[tuple[list[int], list[int]]] = []
    for _ in range(n_ops):
        reads = [rng.choice(readable) for _ in range(rng.randint(0, 3))] if readable else []
        writes = [new_tensor() for _ in range(rng.choice([0, 1, 1, 1, 2, 2, 3]))]
        ops.append((reads, writes))
        readable = readable + writes
    outputs = [rng.randrange(len(sizes)) for _ in range(rng.randint(0, 3))] if sizes else []
    # store the operators in a random topological order
    producer = {t: i for i, (_, writes) in enumerate(ops) for t in writes}
    preds = [{producer[t] for t in reads if t in producer} for reads, _ in ops]
    stored: list[int] = []
    while len(stored) < n_ops:
        ready = [v for v in range(n_ops) if v not in stored and preds[v] <= set(stored)]
        stored.append(rng.choice(ready))
    return make_graph(
        sizes, [ops[v] for v in stored], graph_inputs, outputs, name=f"random_dag_{seed}_{n_ops}"
    )


def small_dags(max_ops: int = 7) -> st.SearchStrategy[Graph]:
    """Random graphs of 1..max_ops operators. A seed drives the construction (drawing every choice
    through hypothesis made generation the slowest part of the tests, and its integers lean
    towards 1 operator); shrinking the seed shrinks the operator count too."""
    return st.integers(0, 2**32 - 1).map(lambda seed: random_dag(seed, 1 + seed % max_ops))


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
    """Least peak over every topological order, each step's live set taken straight from the
    definition in memory.py (written independently of tinysched's own shortcuts)."""
    n = len(graph.operators)
    outputs = set(graph.outputs)
    tensors = [
        (t, graph.tensors[t].nbytes, graph.producer.get(t), set(graph.consumers.get(t, ())))
        for t in graph.activation_tensors
    ]
    preds = graph.predecessors
    best = [None]

    def live_bytes(done: set[int], v: int) -> int:
        total = 0
        for t, nbytes, producer, readers in tensors:
            if producer == v:
                live = True
            elif producer is None or producer in done:
                live = t in outputs or bool(readers - done) or (not done and not readers and producer is None)
            else:
                live = False
            total += nbytes if live else 0
        return total

    def extend(done: set[int], peak: int) -> None:
        if len(done) == n:
            best[0] = peak if best[0] is None else min(best[0], peak)
            return
        for v in range(n):
            if v not in done and preds[v] <= done:
                extend(done | {v}, max(peak, live_bytes(done, v)))

    extend(set(), 0)
    return best[0] if n else 0


def small_randwire(seed: int, nodes: int = 6, stages: int = 2) -> Graph:
    """A tiny randomly wired network (RandWire-like): per stage a random DAG of `nodes` nodes
    (edges from lower to higher index with probability 0.4), each node an ADD chain over its
    inputs and a conv; source nodes read the stage input, the stage output sums the sink nodes.
    Stored in a random topological order. Small enough for brute force and the plain DP."""
    rng = random.Random(seed)
    sizes = [48]
    ops: list[tuple[list[int], list[int]]] = []

    def op(inputs: list[int], nbytes: int) -> int:
        sizes.append(nbytes)
        ops.append((inputs, [len(sizes) - 1]))
        return len(sizes) - 1

    t = 0
    size = 32
    for _ in range(stages):
        size = max(1, size // 2 + rng.randint(-2, 2))
        preds = [[u for u in range(v) if rng.random() < 0.4] for v in range(nodes)]
        outs: list[int] = []
        for v in range(nodes):
            if not preds[v]:
                outs.append(op([t], size))
                continue
            acc = outs[preds[v][0]]
            for u in preds[v][1:]:
                acc = op([acc, outs[u]], size)
            outs.append(op([acc], size))
        sinks = [outs[v] for v in range(nodes) if not any(v in p for p in preds)]
        acc = sinks[0]
        for s in sinks[1:]:
            acc = op([acc, s], size)
        t = acc
    graph = make_graph(sizes, ops, [0], [t], name=f"small_randwire_{seed}")
    order_rng = random.Random(seed + 1)
    done: set[int] = set()
    order: list[int] = []
    while len(order) < len(ops):
        ready = [v for v in range(len(ops)) if v not in done and graph.predecessors[v] <= done]
        v = order_rng.choice(ready)
        order.append(v)
        done.add(v)
    return graph.reordered(order)


def narrow_dag(seed: int, n_ops: int) -> Graph:
    """A chain of `n_ops` operators with short skips and side branches (at most 3 operators
    incomparable at once): more than 64 operators in one stage, few down-sets."""
    rng = random.Random(seed)
    sizes = [rng.choice([8, 16, 24]) for _ in range(n_ops + 1)]
    ops = []
    for v in range(n_ops):
        inputs = [v] if v < 2 else [v - rng.choice([1, 2])]
        if v >= 3 and rng.random() < 0.4:
            inputs.append(v - 3)
        ops.append((sorted(set(inputs)), [v + 1]))
    return make_graph(sizes, ops, [0], [n_ops])
