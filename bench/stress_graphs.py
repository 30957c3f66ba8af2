"""Synthetic operator graphs of 200 to 2,000 operators with wide branching, built with make_graph.

Sizes are int8 activation bytes (H*W*C) of plausible microcontroller networks. Each generator is
deterministic in its seed.
"""

from __future__ import annotations

import random

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
