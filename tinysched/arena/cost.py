"""Estimated instructions per inference of a planned graph, from a table of measured kernel costs.

`--arena-budget` chooses among plans that fit (tinysched.pipeline) by this estimate, so it has to
rank the kernels a plan can run: an in-place ``staged`` variant, the ``wide`` CONV_2D kernel with its
scratch, a streamed chain, the default kernels. Each (core family, opcode, kernel) has a line of
`kernel_costs.json`: instructions = per_mac x MACs + per_output x output elements + per_pixel x
output pixels + per_call (MACs
as `tinysched.order.recompute.macs` counts them); a streamed chain costs `factor` x what its
operators cost with their default kernels, unstreamed. The table is fitted to measured per-operator
instruction counts (`measure --json`'s `per_operator`, QEMU -icount) by
`bench/bench_arena_budget.py --refresh-costs`, which rewrites the file; `measure` prints the
estimate against what it measured. An (opcode, kernel) the table lacks takes the opcode's default
line, then the family's `*` line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from tinysched.arena.placement import ArenaPlan
from tinysched.memory.stream import stream_of
from tinysched.memory.variants import scratch_bytes, variant_of
from tinysched.model.graph import Graph, Operator
from tinysched.order.recompute import macs, operator_macs

__all__ = [
    "CORE_FAMILIES",
    "COST_TABLE",
    "DEFAULT_CORE",
    "KernelCost",
    "core_family",
    "kernel_name",
    "operator_estimate",
    "order_estimate",
    "step_features",
    "stream_estimate_error",
    "stream_overhead",
]

COST_TABLE = Path(__file__).with_name("kernel_costs.json")
DEFAULT_CORE = "cortex-m7"  # mps2-an500, the default stand-in that the table is measured on first

# boards.yaml `core` -> the family whose kernels share fast paths (ts_kernels.h: DSP = SMLAD/SXTB16)
CORE_FAMILIES = {
    "cortex-m4": "dsp",
    "cortex-m7": "dsp",
    "cortex-m33": "dsp",
    "cortex-m55": "mve",
}
FALLBACK_FAMILY = "dsp"  # a core without its own lines (the table says which were measured)
STREAMED = "streamed"


@dataclass(frozen=True)
class KernelCost:
    """One line of the table: instructions = per_mac * MACs + per_output * outputs + per_call."""

    per_mac: float = 0.0
    per_output: float = 0.0
    per_pixel: float = 0.0  # per output pixel (outputs over the last axis): loop and border overhead
    per_call: float = 0.0
    factor: float = 1.0  # streamed chains only: their cost over their operators' unstreamed
    error: float = 0.0  # streamed chains only: the largest |estimate / measured - 1| of the fitted chains

    def instructions(self, mac_count: int, outputs: int, pixels: int = 0) -> float:
        return self.per_mac * mac_count + self.per_output * outputs + self.per_pixel * pixels + self.per_call


@cache
def _table(path: Path = COST_TABLE) -> dict[str, Any]:
    return json.loads(path.read_text())


def core_family(core: str) -> str:
    """The family of a boards.yaml core whose lines the estimate reads (a family the table has)."""
    family = CORE_FAMILIES.get(core, FALLBACK_FAMILY)
    return family if family in _table()["families"] else FALLBACK_FAMILY


def _line(family: str, opcode: str, kernel: str) -> KernelCost:
    lines = _table()["families"][family]
    for key in (f"{opcode}/{kernel}", f"{opcode}/default", "*"):
        if key in lines:
            return KernelCost(**lines[key])
    return KernelCost()


def kernel_name(graph: Graph, op: Operator) -> str:
    """The kernel an operator of a planned graph runs, as the table names it: ``streamed`` for a
    fused chain, its variant's name (``staged``, ``wide``), else ``default``; a staged pointwise
    CONV_2D whose chunk holds three pixels' widened inputs is ``staged-widened`` (its DSP path,
    `staged_wide3` in ts_conv2d_s8.c: in_c a multiple of 4, in_c <= out_c, chunk * out_c >= 6 * in_c)."""
    if stream_of(op) is not None:
        return STREAMED
    variant = variant_of(graph, op)
    if variant is None:
        return "default"
    if op.opcode == "CONV_2D" and variant.name == "staged":
        in_c = int(graph.tensors[op.inputs[0]].shape[-1])
        out_c = variant.out_channels
        if in_c % 4 == 0 and in_c <= out_c and variant.param * out_c >= 6 * in_c:
            return "staged-widened"
    return variant.name


def _outputs(graph: Graph, op: Operator) -> int:
    if not op.outputs:
        return 0
    n = 1
    for d in graph.tensors[op.outputs[0]].shape:
        n *= int(d)
    return n


def _pixels(graph: Graph, op: Operator) -> int:
    """Output elements over the output's last axis (its pixels, for NHWC)."""
    shape = graph.tensors[op.outputs[0]].shape if op.outputs else ()
    return _outputs(graph, op) // max(int(shape[-1]), 1) if shape else _outputs(graph, op)


def own_strip_share(graph: Graph, op: Operator, arena: ArenaPlan | None) -> float:
    """The share of a default-kernel CONV_2D's output that takes the widened path with its strip in
    the operator's own output (ts_kernels.h "CONV_2D wide": the leading rows whose outputs end
    before a strip that fits in the part of the output holding no input bytes), from the placed
    offsets: 0 without an arena, for another kernel, or where no strip fits."""
    from tinysched.arena.scratch import wide_eligible

    if arena is None or kernel_name(graph, op) != "default" or not wide_eligible(graph, op):
        return 0.0
    where = {p.index: p for p in arena.buffers if p.instance == 0}
    x, y = where.get(op.inputs[0]), where.get(op.outputs[0])
    if x is None or y is None or y.bytes <= 0:
        return 0.0
    if x.offset >= y.offset + y.bytes or y.offset >= x.offset + x.bytes:
        free = y.bytes
    else:
        free = max(x.offset - y.offset, y.offset + y.bytes - (x.offset + x.bytes), 0)
    strip = scratch_bytes(graph, op, "wide", 1)
    return max(0.0, min(1.0, (free - strip) / y.bytes))


def step_features(graph: Graph, v: int, arena: ArenaPlan | None = None) -> dict[str, Any]:
    """What the table is indexed and fitted by, for operator `v` of a planned graph (the build
    record's steps carry it, so measured counts can be fitted without planning again)."""
    op = graph.operators[v]
    features: dict[str, Any] = {
        "kernel": kernel_name(graph, op),
        "macs": macs(graph, v),
        "outputs": _outputs(graph, op),
        "pixels": _pixels(graph, op),
        "own_strip": round(own_strip_share(graph, op, arena), 4),
    }
    chain = stream_of(op)
    if chain is not None:  # what the chain's operators would cost unstreamed is fitted from these
        features["members"] = [
            {
                "opcode": m.opcode,
                "macs": operator_macs(graph, m),
                "outputs": _outputs(graph, m),
                "pixels": _pixels(graph, m),
            }
            for m in chain.operators
        ]
    return features


def _member_estimate(graph: Graph, op: Operator, family: str) -> float:
    """A streamed chain's operator as if it ran unstreamed with its fastest kernel (the widened
    CONV_2D's line where the table has one: the stages' members run paths about as fast, and that
    line is fitted to the most layers), the base the chain's fitted factor multiplies."""
    sizes = (operator_macs(graph, op), _outputs(graph, op), _pixels(graph, op))
    return min(_line(family, op.opcode, k).instructions(*sizes) for k in ("default", "wide"))


def _halo(graph: Graph, chain: Any, j: int) -> float:
    """Member j's output columns a stage over column tiles computes, over its output's width (1.0
    for whole rows): its estimate scales with them (the tiles' extra kernel calls are not counted:
    the fitted factor has seen no tiled stage)."""
    if chain.tiles is None:
        return 1.0
    width = int(graph.tensors[chain.operators[j].outputs[0]].shape[2])
    return chain.tiles.computed_columns(j) / width


def stream_overhead(
    graph: Graph, v: int, whole: Mapping[int, int], core: str = DEFAULT_CORE
) -> tuple[int, int] | None:
    """(streamed, unstreamed): the estimate of streamed chain `v` against its operators run whole;
    None for an operator that is not a chain. `whole`: the estimate of each operator of the graph
    before streaming, as the plan without streams runs it (its kernels, the wide ones where its
    arena has room: each member's fastest kernel would flatter the whole run where the arena leaves
    no such room)."""
    chain = stream_of(graph.operators[v])
    if chain is None:
        return None
    return operator_estimate(graph, v, core), sum(whole[m.index] for m in chain.operators)


def operator_estimate(graph: Graph, v: int, core: str = DEFAULT_CORE, arena: ArenaPlan | None = None) -> int:
    """Estimated instructions of one execution of operator `v` of a planned graph on `core` (with
    `arena`, the placed plan: a default CONV_2D's rows that widen in its own output cost as wide)."""
    family = core_family(core)
    op = graph.operators[v]
    chain = stream_of(op)
    if chain is not None:
        factor = _line(family, "STREAM", STREAMED).factor
        return round(
            factor
            * sum(
                _member_estimate(graph, m, family) * _halo(graph, chain, j)
                for j, m in enumerate(chain.operators)
            )
        )
    features = step_features(graph, v, arena)
    sizes = (features["macs"], features["outputs"], features["pixels"])
    cost = _line(family, op.opcode, features["kernel"]).instructions(*sizes)
    share = features["own_strip"]
    if share:
        cost += share * (_line(family, op.opcode, "wide").instructions(*sizes) - cost)
    return round(cost)


def order_estimate(
    graph: Graph, order: Sequence[int], core: str = DEFAULT_CORE, arena: ArenaPlan | None = None
) -> int:
    """Estimated instructions per inference of running `order` (repeats counted each time)."""
    return sum(operator_estimate(graph, v, core, arena) for v in order)


def stream_estimate_error(core: str = DEFAULT_CORE) -> float:
    """How far a streamed chain's estimate was from its count, at most, on the chains the table was
    fitted to (0: not recorded)."""
    return _line(core_family(core), "STREAM", STREAMED).error


def table_note(core: str = DEFAULT_CORE) -> str:
    """Where the estimate's lines come from, in words (which board's counts, which commit)."""
    family = core_family(core)
    measured = _table().get("measured", {}).get(family, {})
    board = measured.get("board", "?")
    source = f"kernel cost table ({family} family, fitted to per-operator counts measured on {board})"
    if CORE_FAMILIES.get(core, FALLBACK_FAMILY) != family:
        source += f"; {core} has no lines of its own"
    return source
