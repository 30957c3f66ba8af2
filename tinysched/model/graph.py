"""The operator graph every later stage works on: tensors, operators and the DAG between them.

The reader builds a `Graph` from a `.tflite` file; tests and the stress benchmarks build one directly.
Everything here is plain data plus the derived relations (producer, consumers, predecessors) that the
memory model and the scheduler need, computed once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from tinysched.errors import TinyschedError
from tinysched.text import quoted


@dataclass(frozen=True)
class Quantization:
    """Affine quantisation `real = scale * (q - zero_point)`, per tensor or per channel along `axis`."""

    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    axis: int = 0

    @property
    def per_channel(self) -> bool:
        return len(self.scale) > 1


@dataclass(frozen=True, eq=False)
class Tensor:
    index: int
    name: str
    dtype: str  # numpy-style name: "int8", "int32", "float32", ...
    shape: tuple[int, ...]
    nbytes: int
    quantization: Quantization | None = None
    data: np.ndarray | None = None  # read-only constant data, None for activations and state
    is_variable: bool = False
    buffer: int = 0  # the model's buffer index; tensors may share one, and weights count once

    @property
    def is_constant(self) -> bool:
        return self.data is not None

    @property
    def int8_image(self) -> tuple[int, int, int] | None:
        """(h, w, c) of an int8 NHWC activation of batch 1, none of them 0: what a row stream and an
        expansion by channel groups run over (tinysched.memory); else None."""
        if self.dtype != "int8" or not self.is_activation or len(self.shape) != 4 or self.shape[0] != 1:
            return None
        h, w, c = (int(d) for d in self.shape[1:])
        return (h, w, c) if h > 0 and w > 0 and c > 0 else None

    @property
    def is_activation(self) -> bool:
        """Activations are what the arena holds: neither constant data nor persistent state."""
        return self.data is None and not self.is_variable


@dataclass(frozen=True)
class Operator:
    index: int  # position in the file's operator vector
    opcode: str  # builtin name, e.g. "CONV_2D"; custom operators "CUSTOM:<code>", the code text.printable'd
    inputs: tuple[int, ...]  # tensor indices by position; -1 marks an absent optional input
    outputs: tuple[int, ...]
    options: dict[str, Any] = field(default_factory=dict)
    version: int = 1
    intermediates: tuple[int, ...] = ()

    @property
    def input_tensors(self) -> tuple[int, ...]:
        """The tensors actually read, each once, absent optional inputs left out."""
        return tuple(t for t in dict.fromkeys(self.inputs) if t >= 0)


@dataclass(eq=False)
class Graph:
    """Subgraph 0 of a model. Operator indices are positions in `operators` (the stored order)."""

    tensors: tuple[Tensor, ...]
    operators: tuple[Operator, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    name: str = ""
    description: str = ""
    metadata: dict[str, bytes] = field(default_factory=dict)
    source: str = ""
    sha256: str = ""

    def __post_init__(self) -> None:
        self._validate()

    def derived(
        self,
        tensors: Sequence[Tensor],
        operators: Sequence[Operator],
        inputs: Sequence[int] | None = None,
        outputs: Sequence[int] | None = None,
    ) -> Graph:
        """The same model (names, source; edges unless given) with other tensors and operators: what
        folding, rewriting, scratch tensors and the interface's edge changes produce."""
        return Graph(
            tuple(tensors),
            tuple(operators),
            self.inputs if inputs is None else tuple(inputs),
            self.outputs if outputs is None else tuple(outputs),
            self.name,
            self.description,
            self.metadata,
            self.source,
            self.sha256,
        )

    # ---- derived relations -------------------------------------------------------------------

    @cached_property
    def producer(self) -> dict[int, int]:
        """Tensor index -> the operator that writes it."""
        producer: dict[int, int] = {}
        for op in self.operators:
            for t in op.outputs:
                producer[t] = op.index
        return producer

    @cached_property
    def consumers(self) -> dict[int, tuple[int, ...]]:
        """Tensor index -> operators that read it, each once, in stored order."""
        readers: dict[int, list[int]] = {}
        for op in self.operators:
            for t in op.input_tensors:
                readers.setdefault(t, []).append(op.index)
        return {t: tuple(ops) for t, ops in readers.items()}

    @cached_property
    def predecessors(self) -> tuple[frozenset[int], ...]:
        """Operator -> operators whose outputs it reads (its direct DAG predecessors)."""
        producer = self.producer
        return tuple(
            frozenset(producer[t] for t in op.input_tensors if t in producer) for op in self.operators
        )

    @cached_property
    def successors(self) -> tuple[frozenset[int], ...]:
        succ: list[set[int]] = [set() for _ in self.operators]
        for v, preds in enumerate(self.predecessors):
            for u in preds:
                succ[u].add(v)
        return tuple(frozenset(s) for s in succ)

    @cached_property
    def activation_tensors(self) -> tuple[int, ...]:
        """Tensors the arena holds: every activation that an operator or the graph's edges touch."""
        touched: dict[int, None] = dict.fromkeys(self.inputs)
        for op in self.operators:
            touched.update(dict.fromkeys(op.input_tensors))
            touched.update(dict.fromkeys(op.outputs))
        touched.update(dict.fromkeys(self.outputs))
        return tuple(sorted(t for t in touched if self.tensors[t].is_activation))

    @property
    def weights_bytes(self) -> int:
        """Bytes of constant tensor data (flash), each buffer counted once."""
        by_buffer = {t.buffer: t.data.nbytes for t in self.tensors if t.data is not None}
        return sum(by_buffer.values())

    @property
    def persistent_bytes(self) -> int:
        """Variable (state) tensors live across invocations, outside the activation arena."""
        return sum(t.nbytes for t in self.tensors if t.is_variable)

    @property
    def op_types(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for op in self.operators:
            counts[op.opcode] = counts.get(op.opcode, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    # ---- checks ------------------------------------------------------------------------------

    def _validate(self) -> None:
        n_tensors = len(self.tensors)
        where = self.source or "graph"
        for pos, t in enumerate(self.tensors):
            if t.index != pos:
                raise TinyschedError(f"{where}: tensor at position {pos} carries index {t.index}")
        for pos, op in enumerate(self.operators):
            if op.index != pos:
                raise TinyschedError(f"{where}: operator at position {pos} carries index {op.index}")
            for role, indices in (
                ("input", op.inputs),
                ("output", op.outputs),
                ("intermediate", op.intermediates),
            ):
                for t in indices:
                    if not 0 <= t < n_tensors and not (role != "output" and t == -1):
                        raise TinyschedError(
                            f"{where}: operator {pos} ({op.opcode}) {role} tensor index {t} "
                            f"out of range (model has {n_tensors} tensors)"
                        )
        for role, indices in (("input", self.inputs), ("output", self.outputs)):
            for t in indices:
                if not 0 <= t < n_tensors:
                    raise TinyschedError(
                        f"{where}: graph {role} tensor index {t} out of range (model has {n_tensors} tensors)"
                    )
        writer: dict[int, int] = {}
        for op in self.operators:
            for t in op.outputs:
                if t in writer:
                    raise TinyschedError(
                        f"{where}: tensor {t} ({quoted(self.tensors[t].name)}) has two producers, "
                        f"operators {writer[t]} and {op.index}"
                    )
                if self.tensors[t].is_constant:
                    raise TinyschedError(
                        f"{where}: operator {op.index} ({op.opcode}) writes constant tensor {t} "
                        f"({quoted(self.tensors[t].name)})"
                    )
                writer[t] = op.index
        for t in self.inputs:
            if t in writer:
                raise TinyschedError(
                    f"{where}: graph input tensor {t} is also written by operator {writer[t]}"
                )
        cycle = self._find_cycle()
        if cycle:
            names = " -> ".join(f"{v} ({self.operators[v].opcode})" for v in cycle)
            raise TinyschedError(f"{where}: the operator graph has a cycle: {names}")

    def _find_cycle(self) -> list[int]:
        """Return operators forming a cycle (closed path), or [] for a DAG. Iterative DFS."""
        WHITE, GREY, BLACK = 0, 1, 2
        colour = [WHITE] * len(self.operators)
        parent = [-1] * len(self.operators)
        succ = self.successors
        for root in range(len(self.operators)):
            if colour[root] != WHITE:
                continue
            stack: list[tuple[int, Iterable[int]]] = [(root, iter(sorted(succ[root])))]
            colour[root] = GREY
            while stack:
                v, it = stack[-1]
                nxt = next(it, None)
                if nxt is None:
                    colour[v] = BLACK
                    stack.pop()
                elif colour[nxt] == GREY:
                    path = [v]
                    while path[-1] != nxt:
                        path.append(parent[path[-1]])
                    return path[::-1] + [nxt]
                elif colour[nxt] == WHITE:
                    parent[nxt] = v
                    colour[nxt] = GREY
                    stack.append((nxt, iter(sorted(succ[nxt]))))
        return []

    def check_order(self, order: Sequence[int]) -> None:
        """Raise TinyschedError unless `order` runs every operator once, after its predecessors."""
        n = len(self.operators)
        if sorted(order) != list(range(n)):
            seen: set[int] = set()
            for v in order:
                if not isinstance(v, int) or not 0 <= v < n:
                    raise TinyschedError(f"order names operator {v!r}, model has operators 0..{n - 1}")
                if v in seen:
                    raise TinyschedError(f"order runs operator {v} twice")
                seen.add(v)
            missing = sorted(set(range(n)) - seen)
            raise TinyschedError(f"order misses operators {missing[:10]}")
        position = {v: i for i, v in enumerate(order)}
        for v in order:
            for u in self.predecessors[v]:
                if position[u] > position[v]:
                    raise TinyschedError(
                        f"order is not topological: operator {v} ({self.operators[v].opcode}) "
                        f"at step {position[v]} reads the output of operator {u} "
                        f"({self.operators[u].opcode}) which runs later, at step {position[u]}"
                    )

    def stored_order(self) -> list[int]:
        return list(range(len(self.operators)))

    def reordered(self, order: Sequence[int]) -> Graph:
        """The same graph with its operators renumbered in `order` (for writing a reordered model)."""
        self.check_order(order)
        ops = tuple(
            Operator(i, o.opcode, o.inputs, o.outputs, o.options, o.version, o.intermediates)
            for i, o in enumerate(self.operators[v] for v in order)
        )
        return Graph(
            self.tensors,
            ops,
            self.inputs,
            self.outputs,
            self.name,
            self.description,
            self.metadata,
            self.source,
            self.sha256,
        )


def make_graph(
    tensor_bytes: Sequence[int],
    ops: Sequence[tuple[Sequence[int], Sequence[int]]],
    inputs: Sequence[int] = (),
    outputs: Sequence[int] = (),
    name: str = "synthetic",
) -> Graph:
    """A graph of int8 activation tensors from sizes and (inputs, outputs) pairs: for tests and stress benchmarks."""
    tensors = tuple(Tensor(i, f"t{i}", "int8", (int(b),), int(b)) for i, b in enumerate(tensor_bytes))
    operators = tuple(Operator(i, "SYNTHETIC", tuple(ins), tuple(outs)) for i, (ins, outs) in enumerate(ops))
    return Graph(tensors, operators, tuple(inputs), tuple(outputs), name=name, source=name)
