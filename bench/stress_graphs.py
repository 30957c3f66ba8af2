"""Synthetic operator graphs of 200 to 2,000 operators with wide branching, built with make_graph.

Sizes are int8 activation bytes (H*W*C) of plausible microcontroller networks. Each generator is
deterministic in its seed.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from tinysched.model.graph import Graph, make_graph


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
    """Watts-Strogatz as networkx builds it (the RandWire paper's generator): a ring lattice of n
    nodes, each joined to its k/2 nearest on either side; then for j = 1..k/2 and each node u, the
    edge (u, u+j) is rewired with probability p to (u, w), w uniform among the nodes that are
    neither u nor already joined to u. Undirected edges as (low, high) pairs."""
    adjacent: list[set[int]] = [set() for _ in range(n)]
    for u in range(n):
        for j in range(1, k // 2 + 1):
            v = (u + j) % n
            adjacent[u].add(v)
            adjacent[v].add(u)
    for j in range(1, k // 2 + 1):
        for u in range(n):
            v = (u + j) % n
            if v not in adjacent[u] or rng.random() >= p:
                continue
            choices = [w for w in range(n) if w != u and w not in adjacent[u]]
            if not choices:
                continue
            w = rng.choice(choices)
            adjacent[u].discard(v)
            adjacent[v].discard(u)
            adjacent[u].add(w)
            adjacent[w].add(u)
    return {(min(u, v), max(u, v)) for u in range(n) for v in adjacent[u]}


def _watts_strogatz_hard(n: int, k: int, p: float, rng: random.Random) -> set[tuple[int, int]]:
    """The first generator's rewiring (kept so that the "hard" suite stays reproducible): each
    (low, high) ring edge in sorted order is rewired with probability p, keeping its low end."""
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


def _stage_edges(n: int, wiring: str, rng: random.Random, hard: bool) -> list[list[int]]:
    """Per node, its predecessors in the stage's random graph, edges oriented low -> high index."""
    if wiring == "ws":
        edges = (_watts_strogatz_hard if hard else _watts_strogatz)(n, 4, 0.75, rng)
    elif wiring == "er":
        edges = _erdos_renyi(n, 0.2, rng)
    else:
        raise ValueError(f"wiring {wiring!r}: 'ws' or 'er'")
    preds: list[list[int]] = [[] for _ in range(n)]
    for a, c in sorted(edges):
        preds[c].append(a)
    return preds


def randwire_wiring(
    nodes: Sequence[int], wiring: str = "ws", seed: int = 0, hard: bool = False
) -> list[list[list[int]]]:
    """Per stage, per node, the nodes it reads: the wiring `randwire` (or with `hard`,
    `randwire_hard`) draws for the same arguments, for int8 models of it (modelgen.wired_model)."""
    rng = random.Random(seed)
    return [_stage_edges(n, wiring, rng, hard) for n in nodes]


def randwire(
    nodes: Sequence[int], wiring: str = "ws", seed: int = 0, hw: int = 32, channels: int = 16
) -> Graph:
    """A randomly wired network as the RandWire paper (Xie et al. 2019) builds it: one random graph
    per stage (`nodes` per stage), Watts-Strogatz (k=4, p=0.75) or Erdos-Renyi (p=0.2), edges
    oriented from lower to higher node index. A node is one ADD aggregating all its inputs (none
    for a single input) followed by one ReLU-conv (the paper's separable 3x3 conv, fused), whose
    output every successor reads. The graph's input nodes read the stage input through a stride-2
    conv; one operator averages the output nodes into the stage output. Activations are int8
    H*W*C: constant within a stage, channels doubled and H*W quartered from stage to stage."""
    rng = random.Random(seed)
    b = _Builder()
    x = b.tensor(hw * hw * 3)
    t = b.op([x], hw * hw * channels)[0]  # stem conv
    size = hw * hw * channels
    for n in nodes:
        size //= 2  # stride 2 (H*W / 4), channels doubled
        preds = _stage_edges(n, wiring, rng, hard=False)
        has_succ = [False] * n
        out: list[int] = []
        for v in range(n):
            for u in preds[v]:
                has_succ[u] = True
            if not preds[v]:
                out.append(b.op([t], size)[0])  # input node: stride-2 ReLU-conv on the stage input
                continue
            inputs = [out[u] for u in preds[v]]
            agg = b.op(inputs, size)[0] if len(inputs) > 1 else inputs[0]  # ADD aggregation
            out.append(b.op([agg], size)[0])  # ReLU-conv
        sinks = [out[v] for v in range(n) if not has_succ[v]]
        t = b.op(sinks, size)[0]  # average of the output nodes
    pooled = b.op([t], max(1, size // 16))[0]
    head = b.op([pooled], 10)[0]
    stages = "_".join(str(n) for n in nodes)
    return b.graph([x], [head], f"randwire_{wiring}_{stages}_s{seed}")


def randwire_hard(
    nodes: Sequence[int], wiring: str = "ws", seed: int = 0, hw: int = 32, channels: int = 16
) -> Graph:
    """The first RandWire generator, kept as a harder variant: each node sums its inputs with a
    chain of two-input ADDs (one more partial sum live per extra input, in a fixed order), the
    stage output is an ADD chain over the output nodes, and its WS rewiring differs slightly
    (`_watts_strogatz_hard`). Its stages reach 20-30 live tensors in the best known orders."""
    rng = random.Random(seed)
    b = _Builder()
    x = b.tensor(hw * hw * 3)
    t = b.op([x], hw * hw * channels)[0]  # stem conv
    size = hw * hw * channels
    for n in nodes:
        size //= 2
        preds = _stage_edges(n, wiring, rng, hard=True)
        has_succ = [False] * n
        for ps in preds:
            for u in ps:
                has_succ[u] = True
        out: list[int] = []
        for v in range(n):
            if not preds[v]:
                out.append(b.op([t], size)[0])
                continue
            acc = out[preds[v][0]]
            for u in preds[v][1:]:
                acc = b.op([acc, out[u]], size)[0]  # ADD chain
            out.append(b.op([acc], size)[0])
        sinks = [out[v] for v in range(n) if not has_succ[v]]
        acc = sinks[0]
        for s in sinks[1:]:
            acc = b.op([acc, s], size)[0]
        t = acc
    pooled = b.op([t], max(1, size // 16))[0]
    head = b.op([pooled], 10)[0]
    stages = "_".join(str(n) for n in nodes)
    return b.graph([x], [head], f"randwire_hard_{wiring}_{stages}_s{seed}")


RANDWIRE_VARIANTS = {"paper": randwire, "hard": randwire_hard}


def randwire_suite(
    count: int,
    seed: int = 0,
    min_ops: int = 300,
    max_ops: int = 500,
    variant: str = "paper",
    stages: Sequence[int] = (2, 3),
    nodes: tuple[int, int] = (32, 96),
) -> list[Graph]:
    """`count` RandWire graphs of min_ops..max_ops operators (WS and ER alternately, a stage count
    drawn from `stages`, each stage of nodes[0]..nodes[1] nodes, drawn from `seed`), each stored in
    a random topological order.

    `variant` "paper" is `randwire`; "hard" is `randwire_hard` with the first suite's draws (ER
    stages of 32-64 nodes, WS of 48-96, whatever `nodes` says), so its graphs are exactly the
    first suite's."""
    build = RANDWIRE_VARIANTS[variant]
    rng = random.Random(seed)
    graphs: list[Graph] = []
    attempt = 0
    while len(graphs) < count:
        attempt += 1
        if attempt > 100 * count + 1000:
            raise ValueError(f"no RandWire graphs of {min_ops}..{max_ops} operators from these draws")
        wiring = "ws" if len(graphs) % 2 == 0 else "er"
        stage_count = rng.choice(list(stages))
        if variant == "hard":
            low, high = (32, 64) if wiring == "er" else (48, 96)
        else:
            low, high = nodes
        drawn = [rng.randint(low, high) for _ in range(stage_count)]
        graph = build(drawn, wiring, seed=1000 * seed + attempt)
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
