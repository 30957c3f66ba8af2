"""Independent check of an arena plan against the graph it claims to place.

Nothing in the plan is trusted but the offsets: lifetimes are re-derived from the graph through
`memory.lifetimes` (the one memory model), so a placer that got lifetimes wrong cannot certify its
own mistake. Every violation is reported as one TinyschedError naming the tensors and the step.
"""

from __future__ import annotations

from tinysched.arena import ArenaPlan, aligned_lower_bound, arena_buffers
from tinysched.errors import TinyschedError
from tinysched.graph import Graph
from tinysched.memory import Lifetime, lifetimes


def check_plan(graph: Graph, plan: ArenaPlan) -> None:
    """Raise TinyschedError unless `plan` is a safe placement of every activation tensor of `graph`.

    Verified: the order is valid; every activation tensor is placed exactly once and nothing else is;
    each placement's size and lifetime match the graph; offsets are non-negative multiples of the
    alignment; the arena covers every tensor; tensors live at a common step never share a byte; and
    the plan's lower bound is the aligned peak, not above the arena."""
    graph.check_order(list(plan.order))
    if plan.alignment < 1:
        raise TinyschedError(f"plan alignment {plan.alignment} is not a positive number of bytes")
    lives = {life.tensor: life for life in lifetimes(graph, plan.order)}
    seen: set[int] = set()
    for p in plan.buffers:
        if p.index not in lives:
            known = 0 <= p.index < len(graph.tensors)
            what = "not an activation tensor" if known else "not a tensor of the graph"
            raise TinyschedError(f"plan places tensor {p.index} ({p.name!r}), {what}")
        if p.index in seen:
            raise TinyschedError(f"plan places tensor {p.index} ({p.name!r}) twice")
        seen.add(p.index)
        life = lives[p.index]
        if p.bytes != life.nbytes:
            raise TinyschedError(
                f"tensor {p.index} ({p.name!r}): plan says {p.bytes} bytes, the graph says {life.nbytes}"
            )
        if (p.first_step, p.last_step) != (life.first_step, life.last_step):
            raise TinyschedError(
                f"tensor {p.index} ({p.name!r}): plan says live at steps {p.first_step}..{p.last_step}, "
                f"the memory model says {life.first_step}..{life.last_step}"
            )
        if p.offset < 0 or p.offset % plan.alignment:
            raise TinyschedError(
                f"tensor {p.index} ({p.name!r}) at offset {p.offset}, not a non-negative multiple of "
                f"the alignment {plan.alignment}"
            )
        if p.offset + p.bytes > plan.arena_bytes:
            raise TinyschedError(
                f"tensor {p.index} ({p.name!r}) at offset {p.offset} with {p.bytes} bytes ends at "
                f"{p.offset + p.bytes}, past the {plan.arena_bytes}-byte arena"
            )
    missing = sorted(set(lives) - seen)
    if missing:
        names = ", ".join(f"{t} ({graph.tensors[t].name!r})" for t in missing[:5])
        raise TinyschedError(f"plan leaves {len(missing)} activation tensor(s) unplaced: {names}")
    _check_no_overlap(graph, plan, lives)
    bound = aligned_lower_bound(arena_buffers(graph, plan.order, plan.alignment))
    if plan.lower_bound_bytes != bound:
        raise TinyschedError(
            f"plan claims a lower bound of {plan.lower_bound_bytes} bytes, the aligned peak is {bound}"
        )
    if plan.arena_bytes < bound:
        raise TinyschedError(
            f"plan arena of {plan.arena_bytes} bytes is below the aligned peak of {bound} bytes, "
            "which no placement can beat: the plan must overlap somewhere"
        )


def _check_no_overlap(graph: Graph, plan: ArenaPlan, lives: dict[int, Lifetime]) -> None:
    """Sweep the steps; at each, the live tensors sorted by offset must not run into each other."""
    n_steps = max(len(plan.order), 1)
    live_at: list[list[int]] = [[] for _ in range(n_steps)]
    by_index = {p.index: p for p in plan.buffers}
    for t, life in lives.items():
        if life.nbytes == 0:
            continue
        for s in range(life.first_step, life.last_step + 1):
            live_at[s].append(t)
    for step, tensors in enumerate(live_at):
        reach_end, reach_tensor = -1, -1
        for t in sorted(tensors, key=lambda t: (by_index[t].offset, t)):
            p = by_index[t]
            if p.offset < reach_end:
                q = by_index[reach_tensor]
                raise TinyschedError(
                    f"tensors {q.index} ({q.name!r}, bytes {q.offset}..{q.offset + q.bytes - 1}) and "
                    f"{p.index} ({p.name!r}, bytes {p.offset}..{p.offset + p.bytes - 1}) overlap in "
                    f"memory while both live at step {step} (operator {plan.order[step]})"
                )
            if p.offset + p.bytes > reach_end:
                reach_end, reach_tensor = p.offset + p.bytes, t
