"""Estimated instructions per inference of a planned graph, from a table of measured kernel costs.

`--arena-budget` chooses among plans that fit (tinysched.pipeline) by this estimate, so it has to
rank the kernels a plan can run: an in-place ``staged`` variant, the ``wide`` CONV_2D kernel with its
scratch, a streamed chain, the default kernels. Each (core family, opcode, kernel) has a line of
`kernel_costs.json`: instructions = per_mac x MACs + per_output x output elements + per_pixel x
output pixels + per_call (MACs as `tinysched.order.recompute.macs` counts them). A CONV_2D that
the DSP kernels run by a path of their own has lines of its own: ``pixels`` and ``stem`` (the
pixel in registers, the 3x3 stem over 3 channels: the code generator's `own_path`, which the
pipeline passes down), ``small`` (a small receptive field). A streamed chain costs what its
members cost as the stage calls them, each by a line of its own (``OPCODE/member``, or the path its
rows take: ``member-pixels``, ``member-stem``, ``member-small``, ``member-staged``, ``member-wide``;
per_call per row call; a path without a line: its fastest unstreamed line), plus the stage loop's
own instructions per member row call (STREAM/streamed, whose `error` is the largest chain error of
the fit). The table is fitted to measured per-operator instruction counts (`measure --json`'s
`per_operator`, each streamed stage member's own count) by `bench/bench_arena_budget.py
--refresh-costs`, which rewrites the file; `measure` prints the estimate against what it measured.
An (opcode, kernel) the table lacks takes the opcode's default line, then the family's `*` line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from tinysched.arena.placement import ArenaPlan
from tinysched.arena.scratch import KeepDefault, stage_member_wide
from tinysched.memory.expand import expansion_of, opcode_text, rows_again_macs
from tinysched.memory.stream import (
    Stream,
    loop_rows,
    pixel_widened_members,
    row_inputs,
    staged_members,
    stream_of,
)
from tinysched.memory.variants import scratch_bytes, variant_of
from tinysched.model.graph import Graph, Operator
from tinysched.order.recompute import macs, operator_macs

__all__ = [
    "CORE_FAMILIES",
    "COST_TABLE",
    "DEFAULT_CORE",
    "KernelCost",
    "chain_estimate",
    "core_family",
    "family_lines",
    "kernel_name",
    "member_estimate",
    "member_kernel",
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
    """One line of the table: instructions = per_mac * MACs + per_output * outputs + per_pixel *
    pixels + per_call * calls (one call for an operator, its row calls for a stage's member)."""

    per_mac: float = 0.0
    per_output: float = 0.0
    per_pixel: float = 0.0  # per output pixel (outputs over the last axis): loop and border overhead
    per_call: float = 0.0
    error: float = 0.0  # STREAM/streamed only: the largest |estimate / measured - 1| of the fitted chains

    def instructions(self, mac_count: int, outputs: int, pixels: int = 0, calls: int = 1) -> float:
        return (
            self.per_mac * mac_count
            + self.per_output * outputs
            + self.per_pixel * pixels
            + self.per_call * calls
        )


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


SMALL_FIELD_BYTES = 124  # TS_CONV_PATCH_BYTES in firmware/kernels/ts_conv2d_s8.c


def _small_field(graph: Graph, op: Operator) -> bool:
    """A CONV_2D that ts_conv2d_s8 runs by its small receptive field paths whatever strip it is
    given (patches, or the generator's quads table: conv_paths): a filter that is not 1x1 over
    fewer than 8 input channels, fh * fw * in_c <= TS_CONV_PATCH_BYTES (KWS's 10x4x1, HAR's 2x2x1)."""
    if op.opcode != "CONV_2D" or len(op.inputs) < 2:
        return False
    w = graph.tensors[op.inputs[1]].shape
    if len(w) != 4:
        return False
    fh, fw, in_c = (int(d) for d in w[1:])
    return fh * fw > 1 and in_c < 8 and fh * fw * in_c <= SMALL_FIELD_BYTES


def _offset_filter(graph: Graph, op: Operator) -> bool:
    """A CONV_2D, DEPTHWISE_CONV_2D or FULLY_CONNECTED whose filter has a non-zero zero point (a
    legacy uint8 model's, tinysched.model.uint8): the legacy kernels run it."""
    if op.opcode not in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED") or len(op.inputs) < 2:
        return False
    q = graph.tensors[op.inputs[1]].quantization
    return q is not None and any(int(z) != 0 for z in q.zero_point)


def _own_path_name(graph: Graph, op: Operator, own_path: KeepDefault | None) -> str | None:
    """``pixels`` or ``stem`` for a CONV_2D that `own_path` (the code generator's test, None on a
    core without such paths) says runs by a path of its own: the 1x1 pixel in registers, the 3x3
    stem over 3 input channels; None otherwise."""
    if own_path is None or op.opcode != "CONV_2D" or not own_path(graph, op):
        return None
    w = graph.tensors[op.inputs[1]].shape
    return "pixels" if tuple(int(d) for d in w[1:3]) == (1, 1) else "stem"


def kernel_name(graph: Graph, op: Operator, own_path: KeepDefault | None = None) -> str:
    """The kernel an operator of a planned graph runs, as the table names it: ``streamed`` for a
    fused chain; its variant's name (``staged``, ``wide``); without one, ``pixels`` / ``stem`` for a
    CONV_2D that `own_path` gives a path of its own, ``small`` for one of small receptive field
    (`_small_field`), else ``default``; a staged pointwise CONV_2D whose chunk holds three pixels' widened inputs is ``staged-widened`` (its DSP path,
    `staged_wide3` in ts_conv2d_s8.c: in_c a multiple of 4, in_c <= out_c, chunk * out_c >= 6 * in_c)."""
    if stream_of(op) is not None:
        return STREAMED
    variant = variant_of(graph, op)
    if variant is None:
        return _own_path_name(graph, op, own_path) or ("small" if _small_field(graph, op) else "default")
    if op.opcode == "CONV_2D" and variant.name == "staged":
        in_c = int(graph.tensors[op.inputs[0]].shape[-1])
        out_c = variant.out_channels
        if in_c % 4 == 0 and in_c <= out_c and variant.param * out_c >= 6 * in_c:
            return "staged-widened"
    return variant.name


def member_kernel(graph: Graph, chain: Stream, j: int, own_path: KeepDefault | None = None) -> str:
    """The line of member j of a streamed stage, by the path its row calls take (as
    tinysched.codegen's lower_stream picks it): ``member-pixels`` / ``member-stem`` (`own_path`),
    ``member-small`` (`_small_field`), ``member-legacy`` (a legacy uint8 model's filter with a zero
    point: ts_legacy_uint8.c's rows, which no refresh measures: the QEMU harness cannot hold
    deeplab), ``member-staged`` (a narrow 1x1 on its one row,
    `staged_members`), ``member-widened-pixel`` (a 1x1 on rows one pixel wide whose in_c is a
    multiple of 8: `pixel_widened_members`, the generator's widened table), ``member-wide`` (a CONV_2D whose rows fill a block of the widened path,
    `stage_member_wide`: the strip where the stage has room for it), else ``member`` (the kernel's
    checked row calls)."""
    op = chain.operators[j]
    if _offset_filter(graph, op):
        return "member-legacy"
    own = _own_path_name(graph, op, own_path) or ("small" if _small_field(graph, op) else None)
    if own is not None:
        return f"member-{own}"
    if op.opcode != "CONV_2D" or chain.tiles is not None:
        return "member"  # (over column tiles no member has a strip: lower_stream gives tiles no room)
    if j in staged_members(graph, chain):
        return "member-staged"
    if j in pixel_widened_members(graph, chain) and int(graph.tensors[op.inputs[0]].shape[-1]) % 8 == 0:
        return "member-widened-pixel"  # ts_conv2d_s8_pixel_widened's widened table (DSP cores)
    return "member-wide" if stage_member_wide(graph, op) else "member"


def _row_calls(graph: Graph, chain: Stream, j: int) -> int:
    """The row calls the stage makes of member j, in every column tile: one per row it computes
    (`loop_rows`), but a head (reading no streamed tensor, lower_stream's `heads`) computes the rows
    its reader needs in one call, so it is called at most as often as the member after it."""
    tiles = 1 if chain.tiles is None else chain.tiles.count
    streamed = set(chain.tensors)
    calls = 0
    for k in range(len(chain.operators) - 1, j - 1, -1):
        op = chain.operators[k]
        rows = loop_rows(graph, op)
        head = not any(u in streamed for u in row_inputs(graph, op))
        calls = rows if k == len(chain.operators) - 1 or not head else min(rows, calls)
    return calls * tiles


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


def own_strip_share(
    graph: Graph, op: Operator, arena: ArenaPlan | None, own_path: KeepDefault | None = None
) -> float:
    """The share of a default-kernel CONV_2D's output (``default``, or ``small``: KWS-L's first
    layer) that takes the widened path with its strip in the operator's own output (ts_kernels.h
    "CONV_2D wide": the leading rows whose outputs end before a strip that fits in the part of the
    output holding no input bytes), from the placed offsets: 0 without an arena, for another kernel
    (a path of its own, `own_path`, takes no strip), or where no strip fits."""
    from tinysched.arena.scratch import wide_eligible

    if arena is None or kernel_name(graph, op, own_path) not in ("default", "small"):
        return 0.0
    if not wide_eligible(graph, op):
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


def step_features(
    graph: Graph, v: int, arena: ArenaPlan | None = None, own_path: KeepDefault | None = None
) -> dict[str, Any]:
    """What the table is indexed and fitted by, for operator `v` of a planned graph (the build
    record's steps carry it, so measured counts can be fitted without planning again); a streamed
    chain's members each with theirs (`member_estimate`: their share of columns computed, with
    column tiles, and their row calls)."""
    op = graph.operators[v]
    features: dict[str, Any] = {
        "kernel": kernel_name(graph, op, own_path),
        "macs": macs(graph, v),
        "outputs": _outputs(graph, op),
        "pixels": _pixels(graph, op) * _groups(graph, op),
        "own_strip": round(own_strip_share(graph, op, arena, own_path), 4),
    }
    if expansion_of(op) is not None:
        features["calls"] = _groups(graph, op) * loop_rows(graph, op)
    chain = stream_of(op)
    if chain is not None:  # each member's line is fitted from these and its own count
        features["members"] = [
            {
                "opcode": opcode_text(m),  # (an expansion by groups: its users' name, the table's key)
                "kernel": member_kernel(graph, chain, j, own_path),
                "macs": operator_macs(graph, m) + rows_again_macs(graph, (m,)),
                "outputs": _outputs(graph, m),
                "pixels": _pixels(graph, m) * _groups(graph, m),
                "halo": round(_halo(graph, chain, j), 4),
                "row_calls": _row_calls(graph, chain, j) * _groups(graph, m),
            }
            for j, m in enumerate(chain.operators)
        ]
    return features


def _groups(graph: Graph, op: Operator) -> int:
    """The channel groups an expansion into its depthwise runs by (tinysched.memory.expand), each a
    call of both kernels per output row and a pass over the output's pixels; 1 for any other."""
    pair = expansion_of(op)
    if pair is None:
        return 1
    channels = int(graph.tensors[op.outputs[0]].shape[-1])
    return -(-channels // pair.group)


def family_lines(core: str) -> Mapping[str, Mapping[str, float]]:
    """The table's lines for `core`'s family, by ``OPCODE/KERNEL`` (what `chain_estimate` reads)."""
    return _table()["families"][core_family(core)]


def member_estimate(member: Mapping[str, Any], lines: Mapping[str, Mapping[str, float]]) -> float:
    """One member of a streamed stage (its entry of `step_features`' members) as the stage runs it:
    its member line of `lines` (``OPCODE/KERNEL``) over the columns it computes (`halo`), per_call
    for each row call; without one (a path no refresh measured): its operator's fastest line
    unstreamed (default or wide, else `*`), called once."""
    opcode, sizes = member["opcode"], (member["macs"], member["outputs"], member["pixels"])
    key = f"{opcode}/{member['kernel']}"
    if key in lines:
        line = KernelCost(**lines[key])
        return member["halo"] * line.instructions(*sizes, calls=0) + line.per_call * member["row_calls"]
    found = [KernelCost(**lines[k]) for k in (f"{opcode}/default", f"{opcode}/wide") if k in lines]
    return member["halo"] * min(
        line.instructions(*sizes) for line in found or [KernelCost(**lines.get("*", {}))]
    )


def _halo(graph: Graph, chain: Stream, j: int) -> float:
    """Member j's output columns a stage over column tiles computes, over its output's width (1.0
    for whole rows): its work scales with them (its row calls are counted per tile)."""
    if chain.tiles is None:
        return 1.0
    width = int(graph.tensors[chain.operators[j].outputs[0]].shape[2])
    return chain.tiles.computed_columns(j) / width


def chain_estimate(members: Sequence[Mapping[str, Any]], lines: Mapping[str, Mapping[str, float]]) -> float:
    """A streamed chain (its members' `step_features` entries) by `lines`: the sum of its members'
    estimates plus the stage loop's own instructions, STREAM/streamed's per_call for each member
    row call (the loop's bounds and window bookkeeping between calls, the member hooks)."""
    loop = KernelCost(**lines.get(f"STREAM/{STREAMED}", {})).per_call
    return sum(member_estimate(m, lines) + loop * m["row_calls"] for m in members)


def stream_overhead(
    graph: Graph,
    v: int,
    whole: Mapping[int, int],
    core: str = DEFAULT_CORE,
    own_path: KeepDefault | None = None,
) -> tuple[int, int] | None:
    """(streamed, unstreamed): the estimate of streamed chain `v` against its operators run whole;
    None for an operator that is not a chain. `whole`: the estimate of each operator of the graph
    before streaming, as the plan without streams runs it (its kernels, the wide ones where its
    arena has room: each member's fastest kernel would flatter the whole run where the arena leaves
    no such room)."""
    chain = stream_of(graph.operators[v])
    if chain is None:
        return None
    return operator_estimate(graph, v, core, own_path=own_path), sum(whole[m.index] for m in chain.operators)


def operator_estimate(
    graph: Graph,
    v: int,
    core: str = DEFAULT_CORE,
    arena: ArenaPlan | None = None,
    own_path: KeepDefault | None = None,
) -> int:
    """Estimated instructions of one execution of operator `v` of a planned graph on `core` (with
    `arena`, the placed plan: a default CONV_2D's rows that widen in its own output cost as wide;
    `own_path`: the code generator's test for the CONV_2D layers it runs by a path of its own)."""
    family = core_family(core)
    op = graph.operators[v]
    features = step_features(graph, v, arena, own_path)
    if "members" in features:
        return round(chain_estimate(features["members"], _table()["families"][family]))
    sizes = (features["macs"], features["outputs"], features["pixels"])
    cost = _line(family, opcode_text(op), features["kernel"]).instructions(
        *sizes, calls=features.get("calls", 1)
    )
    share = features["own_strip"]
    if share:
        cost += share * (_line(family, op.opcode, "wide").instructions(*sizes) - cost)
    return round(cost)


def order_estimate(
    graph: Graph,
    order: Sequence[int],
    core: str = DEFAULT_CORE,
    arena: ArenaPlan | None = None,
    own_path: KeepDefault | None = None,
) -> int:
    """Estimated instructions per inference of running `order` (repeats counted each time)."""
    return sum(operator_estimate(graph, v, core, arena, own_path) for v in order)


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
