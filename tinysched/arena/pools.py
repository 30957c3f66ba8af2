"""Memory pools: one arena split over a board's RAM regions, never a tensor across two.

A board lists its RAM regions with a speed rank (boards.yaml, 1 = fastest: DTCM/TCM first). While
the arena fits the board's arena region and nothing asks otherwise, the plan is the single arena of
tinysched.arena.placement, unchanged. When it does not fit, or `--pool NAME=BYTES` caps a region or
`--pin TENSOR=REGION` pins a tensor, the arena is split:

1. Buffers are grouped so that what must share bytes shares a region: a view goes with its root
   and an overlap pair of the refined memory model (tinysched.memory.overlap) stays together.
2. Groups are assigned fastest region first, the most-accessed first (bytes read and written per
   inference, from the graph: one write by the producer or the input copy, one read per consumer
   operand and per output copy). A group goes to the fastest region whose aligned live bytes at
   every step still fit its limit; pinned groups go where they are pinned.
3. Each region is placed with the single-arena placers (tinysched.arena.placement.place_buffers). A region
   whose placement exceeds its limit has its budget lowered by the excess and the assignment is
   redone, so every region ends within its limit or the plan is refused in one line.

The certificate: at every step the live tensors occupy disjoint bytes of the regions, so the sum of
the regions' arenas is at least the single-arena lower bound (the aligned peak). The split plan is
`optimal` when its sum reaches that bound; otherwise the gap is reported, together with each
region's own bound for the buffers assigned to it. `docs/pools.md` says more.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from tinysched.arena.placement import (
    GREEDY_PLACERS,
    PLACERS,
    ArenaPlan,
    Buffer,
    PoolUse,
    aligned_lower_bound,
    arena_buffers,
    assemble_plan,
    place_buffers,
    step_savings,
)
from tinysched.budget import Budget, as_budget
from tinysched.errors import EXIT_DOES_NOT_FIT, TinyschedError
from tinysched.model.graph import Graph
from tinysched.text import quoted

if TYPE_CHECKING:
    from tinysched.boards import Board
    from tinysched.memory.overlap import Refinement


class RegionsTooSmall(TinyschedError):
    """The arena does not fit the board's regions within their limits (exit code 3, as a build
    that does not fit)."""

    exit_code = EXIT_DOES_NOT_FIT


MAX_ROUNDS = 16  # assignment rounds (each lowers an overflowing region's budget)
_SIZE = re.compile(r"^\s*(\d+)\s*(|k|kib|kb|m|mib|mb)\s*$", re.IGNORECASE)
_UNIT = {"": 1, "k": 1024, "kib": 1024, "kb": 1024, "m": 1 << 20, "mib": 1 << 20, "mb": 1 << 20}


@dataclass(frozen=True)
class PoolRegion:
    """A region the arena may use: its name and address, how many bytes of it, its speed rank."""

    name: str
    origin: int
    limit: int
    speed: int


@dataclass(frozen=True)
class PoolRequest:
    """What a board offers the arena and what the user asked of it (`--pool`, `--pin`)."""

    board: str
    regions: tuple[PoolRegion, ...]  # fastest first
    default: str  # the region the single arena lives in (the board's placement.arena)
    pins: tuple[tuple[str, str], ...] = ()  # (tensor name or index, region)
    limited: tuple[str, ...] = ()  # regions whose limit a --pool gave
    auto: bool = True  # split only when needed (False: always split, e.g. for tests)

    @property
    def explicit(self) -> bool:
        """Whether the user asked for something a single arena cannot honour by itself."""
        return bool(self.pins or self.limited or not self.auto)

    def as_json(self) -> dict[str, Any]:
        return {
            "board": self.board,
            "regions": [dict(r.__dict__) for r in self.regions],
            "default": self.default,
            "pins": [list(p) for p in self.pins],
            "limited": list(self.limited),
        }


def parse_bytes(text: str) -> int:
    """65536, 64K, 64KiB, 1M: a non-negative byte count (K and M are binary)."""
    m = _SIZE.match(text)
    if not m:
        raise ValueError(text)
    return int(m.group(1)) * _UNIT[m.group(2).lower()]


def _split(flag: str, item: str, what: str) -> tuple[str, str]:
    name, sep, value = item.partition("=")
    if not sep or not name.strip() or not value.strip():
        raise TinyschedError(f"{flag} {item!r}: expected {what}")
    return name.strip(), value.strip()


def pool_request(
    board: Board, pools: Sequence[str] = (), pins: Sequence[str] = (), *, auto: bool = True
) -> PoolRequest:
    """The board's arena regions with `--pool NAME=BYTES` limits and `--pin TENSOR=REGION` pins
    applied; a bad name or size is one line naming the flag, the item and what was expected."""
    ranked = board.pool_regions
    base = PoolRequest(
        board.name,
        tuple(PoolRegion(r.name, r.origin, board.arena_capacity(r), r.speed) for r in ranked),
        board.placement["arena"],
        auto=auto,
    )
    limits: dict[str, int] = {}
    for item in pools:
        name, value = _split("--pool", item, "NAME=BYTES (e.g. dtcm=65536 or dtcm=64K)")
        region = next((r for r in base.regions if r.name == name), None)
        if region is None:
            known = ", ".join(r.name for r in ranked) or "none"
            raise TinyschedError(
                f"--pool {item}: board {board.name} has no arena region {name!r} (arena regions: {known})"
            )
        try:
            limit = parse_bytes(value)
        except ValueError:
            raise TinyschedError(
                f"--pool {item}: {value!r} is not a byte count (e.g. 65536, 64K or 1M)"
            ) from None
        if limit > region.limit:
            raise TinyschedError(
                f"--pool {item}: region {name} of {board.name} has only {region.limit:,} B for the arena"
            )
        limits[name] = limit
    pinned: list[tuple[str, str]] = []
    for item in pins:
        tensor, name = _split("--pin", item, "TENSOR=REGION (a tensor name or index, a region name)")
        if not any(r.name == name for r in ranked):
            known = ", ".join(r.name for r in ranked) or "none"
            raise TinyschedError(
                f"--pin {item}: board {board.name} has no arena region {name!r} (arena regions: {known})"
            )
        pinned.append((tensor, name))
    regions = tuple(PoolRegion(r.name, r.origin, limits.get(r.name, r.limit), r.speed) for r in base.regions)
    return PoolRequest(board.name, regions, base.default, tuple(pinned), tuple(limits), auto)


# ---- what is accessed how much -------------------------------------------------------------------


def access_bytes(graph: Graph) -> dict[int, int]:
    """Tensor -> bytes read and written per inference by the code the plan runs: one write (its
    producer, or the input copy), one read per operand of a consuming operator and per output copy."""
    count = {t: 1 for t in graph.activation_tensors}
    for op in graph.operators:
        for t in op.inputs:
            if t in count:
                count[t] += 1
    for t in graph.outputs:
        if t in count:
            count[t] += 1
    return {t: n * graph.tensors[t].nbytes for t, n in count.items()}


@dataclass
class _Group:
    """Buffers that must share a region (a view and its root, an overlap pair)."""

    keys: list[tuple[int, int]] = field(default_factory=list)
    access: int = 0
    pin: str | None = None
    profile: np.ndarray | None = None  # aligned live bytes per step


def _groups(
    graph: Graph,
    buffers: Sequence[Buffer],
    savings: dict[int, tuple[int, int, int]],
    model: Refinement | None,
    pins: dict[int, str],
    n_steps: int,
) -> list[_Group]:
    parent: dict[tuple[int, int], tuple[int, int]] = {b.key: b.key for b in buffers}

    def find(k: tuple[int, int]) -> tuple[int, int]:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    def union(a: tuple[int, int], b: tuple[int, int]) -> None:
        if a in parent and b in parent:
            parent[find(a)] = find(b)

    if model is not None and model.refined:
        for view in model.views:
            union((view, 0), (model.root(view), 0))
        for x, y, _ in savings.values():
            union((x, 0), (y, 0))
    access = access_bytes(graph)
    groups: dict[tuple[int, int], _Group] = {}
    for b in buffers:
        g = groups.setdefault(find(b.key), _Group(profile=np.zeros(n_steps + 1, dtype=np.int64)))
        g.keys.append(b.key)
        g.access += access.get(b.index, 0) if b.instance == 0 else 0
        assert g.profile is not None
        g.profile[b.first_step] += b.aligned_bytes
        g.profile[b.last_step + 1] -= b.aligned_bytes
        pin = pins.get(b.index)
        if pin is not None:
            if g.pin is not None and g.pin != pin:
                raise TinyschedError(
                    f"--pin: tensor {b.index} ({quoted(b.name)}) shares its bytes with a tensor pinned to {g.pin}, "
                    f"so it cannot go to {pin}"
                )
            g.pin = pin
    where = {k: find(k) for k in parent}
    for step, (x, _, saved) in savings.items():
        g = groups[where[(x, 0)]]
        assert g.profile is not None
        g.profile[step] -= saved
        g.profile[step + 1] += saved
    for g in groups.values():
        assert g.profile is not None
        g.profile = np.cumsum(g.profile)[:n_steps]
    return sorted(groups.values(), key=lambda g: (g.pin is None, -g.access, min(g.keys)))


def _resolve_pins(graph: Graph, request: PoolRequest) -> dict[int, str]:
    by_name = {graph.tensors[t].name: t for t in graph.activation_tensors}
    out: dict[int, str] = {}
    for tensor, region in request.pins:
        t = by_name.get(tensor)
        if t is None and tensor.isdigit() and int(tensor) in set(graph.activation_tensors):
            t = int(tensor)
        if t is None:
            raise TinyschedError(
                f"--pin {tensor}={region}: the model has no activation tensor named {tensor!r} "
                "(give a tensor name or index from `tinysched plan --json`)"
            )
        out[t] = region
    return out


def _assign(groups: Sequence[_Group], regions: Sequence[PoolRegion], budgets: dict[str, int]) -> list[str]:
    """Region of each group: pinned ones where pinned, then the most-accessed in the fastest region
    whose live bytes at every step stay within its budget."""
    n = len(groups[0].profile) if groups and groups[0].profile is not None else 0
    load = {r.name: np.zeros(n, dtype=np.int64) for r in regions}
    out: list[str] = []
    for g in groups:
        assert g.profile is not None
        if g.pin is not None:
            chosen = g.pin
            need = int((load[chosen] + g.profile).max(initial=0))
            limit = next(r.limit for r in regions if r.name == chosen)
            if need > limit:
                raise TinyschedError(
                    f"--pin: the tensors pinned to {chosen} need {need:,} B live at once, more than its "
                    f"{limit:,} B"
                )
        else:
            chosen = ""
            for r in regions:
                if budgets[r.name] > 0 and int((load[r.name] + g.profile).max(initial=0)) <= budgets[r.name]:
                    chosen = r.name
                    break
            if not chosen:
                need = int(g.profile.max(initial=0))
                free = ", ".join(
                    f"{r.name} {max(budgets[r.name] - int(load[r.name].max(initial=0)), 0):,} B"
                    for r in regions
                )
                raise RegionsTooSmall(
                    f"the arena does not fit the regions: a buffer group of {need:,} B finds no room "
                    f"(left: {free}); raise a --pool limit or use a board with more RAM"
                )
        load[chosen] += g.profile
        out.append(chosen)
    return out


# Orders the assignment tries groups in (pinned ones always first). The first is the one the module
# promises: the most-accessed first. The others (largest first, most bytes x steps first, earliest
# first) may fit where it does not, or fit with fewer bytes. Of the assignments that fit, the one
# with the least traffic-weighted speed rank (sum of access bytes x the region's rank: the most
# traffic in the fastest regions) is kept, then the one whose regions' peaks add up to the least,
# then the first.
ASSIGNMENT_ORDERS = {
    "access": lambda g: -g.access,
    "size": lambda g: -int(g.profile.max(initial=0)),
    "area": lambda g: -int(g.profile.sum()),
    "start": lambda g: int(np.argmax(g.profile > 0)),
}


def _best_assignment(
    groups: Sequence[_Group], regions: Sequence[PoolRegion], budgets: dict[str, int]
) -> list[str]:
    """Region of each group (in `groups` order): the best of `_assign` over ASSIGNMENT_ORDERS."""
    best: tuple[tuple[int, int], list[str]] | None = None
    first_error: RegionsTooSmall | None = None
    for key in ASSIGNMENT_ORDERS.values():
        ranked = sorted(range(len(groups)), key=lambda i: (groups[i].pin is None, key(groups[i]), i))
        try:
            chosen = _assign([groups[i] for i in ranked], regions, budgets)
        except RegionsTooSmall as err:
            first_error = first_error or err
            continue
        assigned = [""] * len(groups)
        for i, name in zip(ranked, chosen, strict=True):
            assigned[i] = name
        rank = {r.name: r.speed for r in regions}
        traffic = sum(g.access * rank[name] for g, name in zip(groups, assigned, strict=True))
        peaks = 0
        for r in regions:
            load = sum(
                (g.profile for g, name in zip(groups, assigned, strict=True) if name == r.name), start=0
            )
            peaks += int(np.max(load, initial=0)) if isinstance(load, np.ndarray) else 0
        score = (traffic, peaks)
        if best is None or score < best[0]:
            best = (score, assigned)
    if best is None:
        assert first_error is not None
        raise first_error
    return best[1]


def split_arena(
    graph: Graph,
    order: Sequence[int],
    request: PoolRequest,
    alignment: int,
    time_limit: float,
    model: Refinement | None = None,
    budget: Budget | None = None,
) -> ArenaPlan:
    """Place every activation tensor of `graph` under `order` in the regions of `request`, each
    tensor inside one region (module docstring), within `budget` (default: `time_limit` work
    seconds of its own, tinysched.budget)."""
    started = time.perf_counter()
    budget = as_budget(budget, time_limit)
    buffers = arena_buffers(graph, order, alignment, model)
    savings = step_savings(model, order, alignment)
    shifts = (
        {} if not savings or model is None else {step: model.pairs[order[step]].shift for step in savings}
    )
    pins = _resolve_pins(graph, request)
    groups = _groups(graph, buffers, savings, model, pins, max(len(order), 1))
    by_key = {b.key: b for b in buffers}
    regions = request.regions
    budgets = {r.name: r.limit - r.limit % alignment for r in regions}
    greedy = [PLACERS[n] for n in GREEDY_PLACERS]
    exact = [p for p in PLACERS.values() if p.exact]
    for _ in range(MAX_ROUNDS):
        assigned = _best_assignment(groups, regions, budgets)
        placed: dict[str, Any] = {}
        over = False
        for k, r in enumerate(regions):
            members = [
                by_key[key]
                for g, name in zip(groups, assigned, strict=True)
                if name == r.name
                for key in g.keys
            ]
            if not members:
                continue
            keys = {b.key for b in members}
            mine = {s: v for s, v in savings.items() if (v[0], 0) in keys and (v[1], 0) in keys}
            share = budget.part(max(len(regions) - k, 1))
            result = place_buffers(members, alignment, mine, shifts, greedy, exact, share)
            placed[r.name] = (members, mine, result)
            if result.arena_units * alignment > r.limit:
                budgets[r.name] -= result.arena_units * alignment - r.limit
                over = True
        if not over:
            break
    else:
        raise RegionsTooSmall(
            f"the arena does not fit the regions of {request.board} within their limits "
            f"({', '.join(f'{r.name} {r.limit:,} B' for r in regions)})"
        )
    access = access_bytes(graph)
    offsets: dict[tuple[int, int], int] = {}
    uses: list[PoolUse] = []
    methods: list[str] = []
    base_units = 0
    greedy_units = 0
    for r in regions:
        if r.name not in placed:
            continue
        members, mine, result = placed[r.name]
        for key, units in result.offsets.items():
            offsets[key] = base_units + units
        nbytes = result.arena_units * alignment
        indices = {b.index for b in members}
        uses.append(
            PoolUse(
                region=r.name,
                origin=r.origin,
                base=base_units * alignment,
                bytes=nbytes,
                limit=r.limit,
                lower_bound_bytes=aligned_lower_bound(members, mine),
                optimal=result.optimal,
                speed=r.speed,
                high_water_bytes=0,  # set from the final placements (views included) below
                tensors=0,
                access_bytes=sum(access.get(t, 0) for t in indices),
            )
        )
        methods += result.methods
        greedy_units += result.greedy_units
        base_units += result.arena_units
    bound = aligned_lower_bound(buffers, savings)
    plan = assemble_plan(
        graph,
        order,
        alignment,
        buffers,
        offsets,
        optimal=base_units * alignment <= bound,
        methods=methods,
        started=started,
        greedy_units=greedy_units,
        model=model,
        pools=tuple(uses),
    )
    return _with_high_waters(plan)


def _with_high_waters(plan: ArenaPlan) -> ArenaPlan:
    """Each region's high-water and tensor count over the final placements, where views carry
    their real bytes (the placer saw them as 0-byte buffers at their root)."""
    pools = []
    for pool in plan.pools:
        mine = [p for p in plan.buffers if pool.base <= p.offset < pool.base + max(pool.bytes, 1)]
        top = max((p.offset - pool.base + p.bytes for p in mine if p.bytes), default=0)
        pools.append(replace(pool, high_water_bytes=top, tensors=len(mine)))
    return replace(plan, pools=tuple(pools))


def plan_pools(
    graph: Graph,
    single: ArenaPlan,
    request: PoolRequest,
    time_limit: float,
    model: Refinement | None = None,
    budget: Budget | None = None,
) -> ArenaPlan:
    """The single arena `single` when it fits the board's arena region and nothing asks for a split
    (byte for byte the plan without pools); otherwise the arena split over the regions. Unasked, a
    split that cannot fit either leaves the single arena, for the link to report with its numbers."""
    default = next((r for r in request.regions if r.name == request.default), None)
    if not request.explicit and (default is None or single.arena_bytes <= default.limit):
        return single
    if not request.regions:
        raise TinyschedError(f"board {request.board} ranks no RAM region for the arena (boards.yaml speed)")
    if not request.explicit and len(request.regions) < 2:
        return single
    try:
        return split_arena(graph, single.order, request, single.alignment, time_limit, model, budget)
    except RegionsTooSmall:
        if request.explicit:
            raise
        return single


def certificate(plan: ArenaPlan) -> str:
    """What the plan proves about its memory, in words."""
    if not plan.pools:
        if plan.arena_bytes <= plan.lower_bound_bytes:
            return f"arena {plan.arena_bytes:,} B equals its lower bound (optimal for the order)"
        proof = "proven minimal by the exact search" if plan.optimal else "not proven minimal"
        return f"arena {plan.arena_bytes:,} B, lower bound {plan.lower_bound_bytes:,} B ({proof})"
    total, bound = plan.arena_bytes, plan.lower_bound_bytes
    regions = " + ".join(f"{p.region} {p.bytes:,} B" for p in plan.pools)
    if total <= bound:
        verdict = "equals the single-arena lower bound: optimal, the split costs nothing"
    else:
        verdict = f"{total - bound:,} B above the single-arena lower bound {bound:,} B"
    each = "; ".join(
        f"{p.region} {'at' if p.bytes <= p.lower_bound_bytes else 'above'} its own bound "
        f"{p.lower_bound_bytes:,} B"
        + ("" if p.bytes <= p.lower_bound_bytes or not p.optimal else " (proven)")
        for p in plan.pools
    )
    return f"split arena {regions} = {total:,} B {verdict}; {each}"
