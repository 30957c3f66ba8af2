"""Synthetic operator graphs of 200 to 2,000 operators with wide branching, built with make_graph.

Sizes are int8 activation bytes (H*W*C) of plausible microcontroller networks. Each generator is
deterministic in its seed.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from tinysched.graph import Graph, make_graph


class _Builder:
    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.ops: list[tuple[list[int], list[int]]] = []

    def tensor(self, nbytes: int) -> int:
        self.sizes.append(max(1, int(nbytes)))
        return len(self.sizes) - 1

    def op(self, inputs: list[int], *output_bytes: int) -> list[int]:
        outs = [self.tensor(b) for b in output_bytes]
        self.ops.append((list(inputs), outs))
        return outs

    def graph(self, inputs: list[int], outputs: list[int], name: str) -> Graph:
        return make_graph(self.sizes, self.ops, inputs, outputs, name=name)


def nas_cells(n_cells: int, branches: int, depth: int, seed: int = 0) -> Graph:
    """DARTS/NAS-style cells: each cell reads the two previous cell outputs; `branches` parallel
    chains of `depth` operators (random expansion), concatenated and projected."""
    rng = random.Random(seed)
    b = _Builder()
    hw, c = 32 * 32, 16
    x = b.tensor(hw * 3)
    prev_prev = prev = b.op([x], hw * c)[0]
    for cell in range(n_cells):
        if cell and cell % max(1, n_cells // 3) == 0 and hw > 16:
            hw //= 4
            c *= 2
        outs = []
        for _ in range(branches):
            t = rng.choice([prev, prev_prev])
            for _ in range(depth - 1):
                t = b.op([t], hw * c * rng.choice([1, 2, 3, 4]) // 2)[0]
            outs.append(b.op([t], hw * c // 2)[0])
        concat = b.op(outs, hw * c * branches // 2)[0]
        prev_prev, prev = prev, b.op([concat], hw * c)[0]
    head = b.op([prev], 10)[0]
    return b.graph([x], [head], f"nas_{n_cells}x{branches}x{depth}")


def recurrent_unrolled(steps: int, layers: int, hidden: int = 64, seed: int = 0) -> Graph:
    """An LSTM unrolled over `steps` time steps and `layers` layers: per step four gates, each two
    matmuls, an add and an activation, then the cell and hidden updates. The input sequence is
    split by one operator with `steps` outputs."""
    rng = random.Random(seed)
    b = _Builder()
    seq = b.tensor(steps * hidden)
    xs = b.op([seq], *([hidden] * steps))
    for _ in range(layers):
        h = b.op([], hidden)[0]  # initial state (a constant-producing op)
        cell = b.op([], hidden * 2)[0]
        hs = []
        for t in range(steps):
            gates = []
            for _ in range(4):
                wx = b.op([xs[t]], hidden * rng.choice([2, 4]))[0]
                wh = b.op([h], hidden * rng.choice([2, 4]))[0]
                s = b.op([wx, wh], hidden * 2)[0]
                gates.append(b.op([s], hidden)[0])
            i, f, g, o = gates
            fc = b.op([f, cell], hidden * 2)[0]
            ig = b.op([i, g], hidden * 2)[0]
            cell = b.op([fc, ig], hidden * 2)[0]
            tc = b.op([cell], hidden)[0]
            h = b.op([o, tc], hidden)[0]
            hs.append(h)
        xs = hs
    out = b.op(xs, hidden * steps)[0]
    return b.graph([seq], [out], f"lstm_{steps}x{layers}")


def unet(levels: int, blocks: int, branches: int = 3, seed: int = 0) -> Graph:
    """A U-Net with `levels` resolutions and `blocks` residual blocks of `branches` parallel
    branches per level on both paths; each long skip has its own projection that can run any
    time between the encoder and the decoder."""
    rng = random.Random(seed)
    b = _Builder()
    hw, c = 64 * 64, 8
    x = b.tensor(hw * 3)
    t = b.op([x], hw * c)[0]

    def block(t: int, size: int) -> int:
        for _ in range(blocks):
            outs = []
            for _ in range(branches):
                u = b.op([t], size * rng.choice([1, 2, 4]))[0]
                outs.append(b.op([u], size)[0])
            t = b.op([t, *outs], size)[0]
        return t

    skips = []
    for _ in range(levels):
        t = block(t, hw * c)
        skips.append((b.op([t], hw * c // 2)[0], hw, c))
        hw, c = hw // 4, c * 2
        t = b.op([t], hw * c)[0]
    t = block(t, hw * c)
    for skip, shw, sc in reversed(skips):
        hw, c = shw, sc
        up = b.op([t], hw * c)[0]
        t = b.op([up, skip], hw * c * 3 // 2)[0]
        t = b.op([t], hw * c)[0]
        t = block(t, hw * c)
    out = b.op([t], hw)[0]
    return b.graph([x], [out], f"unet_{levels}x{blocks}x{branches}")


def random_topological_order(graph: Graph, seed: int) -> list[int]:
    """A uniformly random choice among ready operators at every step."""
    rng = random.Random(seed)
    missing = [len(p) for p in graph.predecessors]
    ready = [v for v, m in enumerate(missing) if m == 0]
    order = []
    while ready:
        v = ready.pop(rng.randrange(len(ready)))
        order.append(v)
        for s in sorted(graph.successors[v]):
            missing[s] -= 1
            if missing[s] == 0:
                ready.append(s)
    return order


def shuffled(graph: Graph, seed: int) -> Graph:
    """The same graph with its operators stored in a random topological order."""
    return graph.reordered(random_topological_order(graph, seed))


def _watts_strogatz(n: int, k: int, p: float, rng: random.Random) -> set[tuple[int, int]]:
    """Ring lattice of n nodes, each joined to its k/2 nearest on either side, each edge rewired
    with probability p to a uniformly chosen other end (no self-loops, no duplicates)."""
    edges = {(i, (i + j) % n) for i in range(n) for j in range(1, k // 2 + 1)}
    edges = {(min(a, b), max(a, b)) for a, b in edges}
    for a, b in sorted(edges):
        if rng.random() < p:
            choices = [c for c in range(n) if c != a and (min(a, c), max(a, c)) not in edges]
            if choices:
                c = rng.choice(choices)
                edges.discard((a, b))
                edges.add((min(a, c), max(a, c)))
    return edges


def _erdos_renyi(n: int, p: float, rng: random.Random) -> set[tuple[int, int]]:
    return {(a, b) for a in range(n) for b in range(a + 1, n) if rng.random() < p}


def randwire(
    nodes: Sequence[int], wiring: str = "ws", seed: int = 0, hw: int = 32, channels: int = 16
) -> Graph:
    """A randomly wired network (RandWire, Xie et al. 2019): one random graph per stage (`nodes` per
    stage), Watts-Strogatz (k=4, p=0.75) or Erdos-Renyi (p=0.2) wiring, edges oriented from lower to
    higher node index. A node sums its inputs with a chain of ADDs and applies a ReLU-conv; nodes
    without inputs read the stage input through a stride-2 conv, and the stage output is the sum of
    the nodes nobody reads. Activations are int8 H*W*C; channels double as the resolution halves."""
    rng = random.Random(seed)
    b = _Builder()
    x = b.tensor(hw * hw * 3)
    t = b.op([x], hw * hw * channels)[0]  # stem conv
    size = hw * hw * channels
    for n in nodes:
        size //= 2  # stride 2 (H*W / 4), channels doubled
        edges = _watts_strogatz(n, 4, 0.75, rng) if wiring == "ws" else _erdos_renyi(n, 0.2, rng)
        preds: list[list[int]] = [[] for _ in range(n)]
        has_succ = [False] * n
        for a, c in sorted(edges):
            preds[c].append(a)
            has_succ[a] = True
        out: list[int] = []
        for v in range(n):
            if not preds[v]:
                out.append(b.op([t], size)[0])  # stride-2 ReLU-conv on the stage input
                continue
            acc = out[preds[v][0]]
            for u in preds[v][1:]:
                acc = b.op([acc, out[u]], size)[0]  # ADD aggregation
            out.append(b.op([acc], size)[0])  # ReLU-conv
        sinks = [out[v] for v in range(n) if not has_succ[v]]
        acc = sinks[0]
        for s in sinks[1:]:
            acc = b.op([acc, s], size)[0]
        t = acc
    pooled = b.op([t], max(1, size // 16))[0]
    head = b.op([pooled], 10)[0]
    stages = "_".join(str(n) for n in nodes)
    return b.graph([x], [head], f"randwire_{wiring}_{stages}_s{seed}")


def randwire_suite(count: int, seed: int = 0, min_ops: int = 300, max_ops: int = 500) -> list[Graph]:
    """`count` RandWire graphs of min_ops..max_ops operators (WS and ER alternately, 2-3 stages of
    32-96 nodes drawn from `seed`), each stored in a random topological order."""
    rng = random.Random(seed)
    graphs: list[Graph] = []
    attempt = 0
    while len(graphs) < count:
        attempt += 1
        wiring = "ws" if len(graphs) % 2 == 0 else "er"
        stages = rng.choice([2, 3])
        low, high = (32, 64) if wiring == "er" else (48, 96)
        nodes = [rng.randint(low, high) for _ in range(stages)]
        graph = randwire(nodes, wiring, seed=1000 * seed + attempt)
        if min_ops <= len(graph.operators) <= max_ops:
            graphs.append(shuffled(graph, attempt))
    return graphs


def wide_branches(branches: int, join: str = "add", depth: int = 1, nbytes: int = 64) -> Graph:
    """`branches` parallel chains of `depth` operators between one input and one output, joined
    by one CONCATENATION (`join="concat"`) or a chain of two-input ADDs (`join="add"`)."""
    b = _Builder()
    x = b.tensor(nbytes)
    ends = []
    for i in range(branches):
        t = x
        for _ in range(depth):
            t = b.op([t], nbytes * (1 + i % 3))[0]
        ends.append(t)
    if join == "concat":
        out = b.op(ends, nbytes * branches)[0]
    else:
        out = ends[0]
        for e in ends[1:]:
            out = b.op([out, e], nbytes)[0]
    return b.graph([x], [out], f"wide_{join}_{branches}x{depth}")


def long_chain(length: int, seed: int = 0) -> Graph:
    """A chain of `length` operators with an occasional residual skip over a few operators."""
    rng = random.Random(seed)
    b = _Builder()
    x = b.tensor(1024)
    t = x
    skip = None
    for i in range(length):
        if skip is not None and i % 4 == 3:
            t = b.op([t, skip], 1024)[0]
            skip = None
        else:
            t = b.op([t], 256 * rng.choice([2, 4, 6]))[0]
            if i % 4 == 0:
                skip = t
    return b.graph([x], [t], f"chain_{length}")
