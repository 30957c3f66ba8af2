"""Independent check of an arena plan against the graph it claims to place.

Nothing in the plan is trusted but the offsets: lifetimes are re-derived from the graph through
`memory.lifetimes` (the one memory model), so a placer that got lifetimes wrong cannot certify its
own mistake. Every violation is reported as one TinyschedError naming the tensors and the step.

A plan for a recomputation sequence (operators repeated) places execution instances: lifetimes are
then re-derived through `memory.instance_lifetimes`, and every (tensor, instance) must be placed
once. A plain order is the case where every instance is 0.

A plan in the refined memory model (`plan.memory_model == "refined"`) may overlap tensors: the
allowed overlaps are re-derived from the graph through `tinysched.memory.overlap` (the one table), never
read from the plan. An alias (view, split range, in-place concatenation slice) must sit exactly at
its root's offset plus its byte offset, inside the root; an operator's output may overlap
its dying input only at that operator's step and only as far as the table's shift allows; any other
shared byte is refused.
"""

from __future__ import annotations

from tinysched.arena.placement import (
    ArenaPlan,
    Placement,
    aligned_lower_bound,
    arena_buffers,
    check_order_or_sequence,
    is_sequence,
    step_savings,
)
from tinysched.errors import TinyschedError
from tinysched.memory.overlap import Refinement, memory_model
from tinysched.memory.tensor import InstanceLifetime, Lifetime, instance_lifetimes, lifetimes
from tinysched.model.graph import Graph
from tinysched.text import quoted

Key = tuple[int, int]  # (tensor, instance)


def _what(p: Placement) -> str:
    instance = getattr(p, "instance", 0)
    return f"tensor {p.index} ({quoted(p.name)})" + (f" instance {instance}" if instance else "")


def _instance_note(p: Placement) -> str:
    instance = getattr(p, "instance", 0)
    return f" instance {instance}" if instance else ""


def _lives(
    graph: Graph, order: tuple[int, ...], model: Refinement | None
) -> dict[Key, Lifetime | InstanceLifetime]:
    if is_sequence(order):
        return {(life.tensor, life.instance): life for life in instance_lifetimes(graph, order)[0]}
    found = lifetimes(graph, order) if model is None else model.lifetimes(order)
    return {(life.tensor, 0): life for life in found}


def _model(graph: Graph, plan: ArenaPlan) -> Refinement | None:
    name = getattr(plan, "memory_model", "tensor")
    if name == "tensor":
        return None
    if is_sequence(plan.order):
        raise TinyschedError(f"plan in the {name} memory model runs operators more than once")
    model = memory_model(graph, name)
    return model if model.refined else None


def check_plan(graph: Graph, plan: ArenaPlan) -> None:
    """Raise TinyschedError unless `plan` is a safe placement of every activation tensor of `graph`.

    Verified: the order is valid; every activation tensor is placed exactly once and nothing else is;
    each placement's size and lifetime match the graph; offsets are non-negative multiples of the
    alignment; the arena covers every tensor; tensors live at a common step never share a byte; and
    the plan's lower bound is the aligned peak, not above the arena."""
    check_order_or_sequence(graph, plan.order)
    if plan.alignment < 1:
        raise TinyschedError(f"plan alignment {plan.alignment} is not a positive number of bytes")
    model = _model(graph, plan)
    lives = _lives(graph, tuple(plan.order), model)
    aliases = {} if model is None else model.aliases
    activation = {t for t, _ in lives}
    seen: set[Key] = set()
    for p in plan.buffers:
        key = (p.index, getattr(p, "instance", 0))
        if key not in lives:
            known = 0 <= p.index < len(graph.tensors)
            what = "not an activation tensor" if known else "not a tensor of the graph"
            if p.index in activation:
                what = "an instance the sequence never writes"
            raise TinyschedError(f"plan places {_what(p)}, {what}")
        if key in seen:
            raise TinyschedError(f"plan places {_what(p)} twice")
        seen.add(key)
        life = lives[key]
        nbytes = graph.tensors[p.index].nbytes
        if p.bytes != nbytes:
            raise TinyschedError(f"{_what(p)}: plan says {p.bytes} bytes, the graph says {nbytes}")
        if (p.first_step, p.last_step) != (life.first_step, life.last_step):
            raise TinyschedError(
                f"{_what(p)}: plan says live at steps {p.first_step}..{p.last_step}, "
                f"the memory model says {life.first_step}..{life.last_step}"
            )
        if p.offset < 0 or (p.offset % plan.alignment and p.index not in aliases):
            raise TinyschedError(
                f"{_what(p)} at offset {p.offset}, not a non-negative multiple of "
                f"the alignment {plan.alignment}"
            )
        if p.offset + p.bytes > plan.arena_bytes:
            raise TinyschedError(
                f"{_what(p)} at offset {p.offset} with {p.bytes} bytes ends at "
                f"{p.offset + p.bytes}, past the {plan.arena_bytes}-byte arena"
            )
    missing = sorted(set(lives) - seen)
    if missing:
        names = ", ".join(
            f"{t} ({quoted(graph.tensors[t].name)})" + (f" instance {i}" if i else "") for t, i in missing[:5]
        )
        raise TinyschedError(f"plan leaves {len(missing)} activation tensor(s) unplaced: {names}")
    if model is not None:
        _check_views(plan, model)
    _check_no_overlap(graph, plan, lives, model)
    bound = aligned_lower_bound(
        arena_buffers(graph, plan.order, plan.alignment, model),
        step_savings(model, plan.order, plan.alignment),
    )
    if plan.lower_bound_bytes != bound:
        raise TinyschedError(
            f"plan claims a lower bound of {plan.lower_bound_bytes} bytes, the aligned peak is {bound}"
        )
    if plan.arena_bytes < bound:
        raise TinyschedError(
            f"plan arena of {plan.arena_bytes} bytes is below the aligned peak of {bound} bytes, "
            "which no placement can beat: the plan must overlap somewhere"
        )
    if getattr(plan, "pools", ()):
        _check_pools(plan)


def _check_pools(plan: ArenaPlan) -> None:
    """A split arena: its regions lie end to end from offset 0, each within its limit, their bytes
    add up to the arena, and every tensor lies inside one region (none straddles two)."""
    base = 0
    for pool in plan.pools:
        if pool.base != base or pool.bytes % plan.alignment:
            raise TinyschedError(
                f"region {pool.region} of the split arena starts at {pool.base} with {pool.bytes} bytes; "
                f"expected to start at {base} with a multiple of the alignment {plan.alignment}"
            )
        if pool.bytes > pool.limit:
            raise TinyschedError(
                f"region {pool.region} holds {pool.bytes} bytes of the arena, above its limit of {pool.limit}"
            )
        base += pool.bytes
    if base != plan.arena_bytes:
        raise TinyschedError(
            f"the split arena's regions add up to {base} bytes, the plan says {plan.arena_bytes}"
        )
    for p in plan.buffers:
        if p.bytes and plan.pool_of(p.offset, p.bytes) is None:
            raise TinyschedError(
                f"{_what(p)} at offset {p.offset} with {p.bytes} bytes is not inside one region of the "
                f"split arena ({', '.join(f'{q.region} {q.base}..{q.base + q.bytes - 1}' for q in plan.pools)})"
            )


def _check_views(plan: ArenaPlan, model: Refinement) -> None:
    """Every alias lies inside its root, at the root's offset plus the offset its layout gives."""
    at = {p.index: p for p in plan.buffers}
    for tensor, alias in model.aliases.items():
        v, r = at[tensor], at[alias.root]
        if alias.offset < 0 or alias.offset + v.bytes > r.bytes:
            raise TinyschedError(
                f"{_what(v)} ({v.bytes} bytes at byte {alias.offset} of {_what(r)}) does not fit in "
                f"its root's {r.bytes} bytes"
            )
        if v.offset != r.offset + alias.offset:
            where = "its root's" if alias.offset == 0 else f"its root's {r.offset} + {alias.offset} ="
            raise TinyschedError(
                f"{_what(v)} is a {alias.kind} alias of {_what(r)} but sits at offset {v.offset}, "
                f"not {where} {r.offset + alias.offset}"
            )


def _shared_ok(a: Placement, b: Placement, step: int, plan: ArenaPlan, model: Refinement | None) -> bool:
    """Whether the refined model lets `a` and `b` share bytes at `step` where they do."""
    if model is None:
        return False
    ra, rb = model.root(a.index), model.root(b.index)
    if ra == rb:  # aliases of one root, each where its layout says (_check_views): the same bytes
        return a.offset - model.offset_in_root(a.index) == b.offset - model.offset_in_root(b.index)
    pair = model.pairs.get(plan.order[step])
    if pair is None:
        return False
    offsets = {p.index: p.offset for p in plan.buffers}
    if {ra, rb} != {pair.root, pair.output}:
        return False
    return pair.allowed(offsets[pair.root], offsets[pair.output])


def _check_no_overlap(
    graph: Graph, plan: ArenaPlan, lives: dict[Key, Lifetime | InstanceLifetime], model: Refinement | None
) -> None:
    """Sweep the steps; at each, every two live tensors whose bytes meet must be allowed to."""
    n_steps = max(len(plan.order), 1)
    live_at: list[list[Key]] = [[] for _ in range(n_steps)]
    by_index = {(p.index, getattr(p, "instance", 0)): p for p in plan.buffers}
    for t, life in lives.items():
        if by_index[t].bytes == 0:
            continue
        for s in range(life.first_step, life.last_step + 1):
            live_at[s].append(t)
    for step, tensors in enumerate(live_at):
        active: list[Placement] = []  # placed below the current offset, still reaching above it
        for t in sorted(tensors, key=lambda t: (by_index[t].offset, t)):
            p = by_index[t]
            active = [q for q in active if q.offset + q.bytes > p.offset]
            for q in active:
                if not _shared_ok(q, p, step, plan, model):
                    what = "overlap in memory" + (
                        "" if model is None else " beyond what the refined model allows"
                    )
                    raise TinyschedError(
                        f"tensors {q.index} ({quoted(q.name)}{_instance_note(q)}, bytes {q.offset}..{q.offset + q.bytes - 1}) "
                        f"and {p.index} ({quoted(p.name)}{_instance_note(p)}, bytes {p.offset}..{p.offset + p.bytes - 1}) {what} "
                        f"while both live at step {step} (operator {plan.order[step]})"
                    )
            active.append(p)
