"""The planning budget: `--time-limit S` as work that flows from step to step.

What a plan contains must not depend on the machine's load, so each step's allowance is counted in
work, in seconds of an idle core ("work seconds"), and the steps measure what they used without
reading the clock wherever they can:

- CP-SAT (tinysched.arena's exact placer) runs one worker with a fixed seed under a limit in its own
  deterministic time, `CPSAT_WORK_PER_SECOND` of it per work second, and is charged what it reports;
- the greedy placers are charged an estimate from the component's size (`greedy_work`), which also
  decides whether the second and later ones run;
- the order search (tinysched.scheduler) runs against the clock, but a search that finishes (a
  certified order) is charged nothing, since any longer limit finds the same order, and one stopped
  by its limit is charged its whole allowance.

A step gets a share of what is left (`Budget.part`), and what it does not use is left for the steps
after it: a stage that finishes early hands its time on. The wall clock is only a safety stop, at
`WALL_FACTOR` x S after planning starts (a machine more than that much slower than an idle one); a
step it cuts, like a step its allowance cuts, leaves a `Shortfall`: what a longer limit would try.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

# CP-SAT's deterministic time per second of work on the exact placer's NoOverlap2D models: 0.020 to
# 0.029 per wall second measured under a load of 2.4 on 2 cores (random 200-block problems: 0.2113
# in 7.43 s, 0.0983 in 3.58 s, 0.0377 in 1.64 s), about 0.03 on an idle core.
CPSAT_WORK_PER_SECOND = 0.03
# The greedy placers' cost (tinysched.arena._place_in_order), measured on 500 to 6,000 random blocks:
# about 150 us a block with vector fits, plus about 250 ns a pair of blocks when the refined model's
# pairs make each placement a Python loop over the placed blocks.
GREEDY_SECONDS_PER_BLOCK = 1.5e-4
GREEDY_SECONDS_PER_PAIRED_BLOCK_PAIR = 2.5e-7
WALL_FACTOR = 1.0  # the wall clock stops planning at WALL_FACTOR x the limit, whatever work is left


@dataclass(frozen=True)
class Shortfall:
    """A step of planning that its allowance (or the wall clock) stopped before it was done."""

    stage: str  # what a longer limit would run further: "cp-sat", "greedy placers", "other orders", "order search"
    what: str  # that step, in words
    bound_bytes: int  # no result of that step can be smaller: it matters while below the arena
    wall: bool = False  # stopped by the wall clock (WALL_FACTOR x the limit), not by its allowance

    def as_json(self) -> dict[str, object]:
        return {"stage": self.stage, "what": self.what, "bound_bytes": self.bound_bytes, "wall": self.wall}


def shortfalls_line(shortfalls: Sequence[Shortfall], time_limit: float) -> str | None:
    """One line: what a longer --time-limit would try, by stage (None: nothing)."""
    if not shortfalls:
        return None
    stages: dict[str, list[Shortfall]] = {}
    for s in shortfalls:
        stages.setdefault(s.stage, []).append(s)
    parts = [f"{name} ({len(found)} step(s), e.g. {found[0].what})" for name, found in stages.items()]
    walled = sum(s.wall for s in shortfalls)
    wall = (
        f"; {walled} of them stopped by the wall clock at {WALL_FACTOR:g}x the limit (a loaded machine)"
        if walled
        else ""
    )
    least = min(s.bound_bytes for s in shortfalls)
    return (
        f"a longer --time-limit (now {time_limit:g} s) would run more {'; '.join(parts)}{wall}; "
        f"an arena down to {least:,} B may exist"
    )


@dataclass(eq=False)
class Budget:
    """An allowance of work seconds and the wall-clock stop; `part` hands out shares of what is left,
    and what a share spends is spent from every budget above it."""

    seconds: float  # the allowance
    deadline: float = field(default=-1.0)  # time.perf_counter() of the wall-clock stop (-1: from seconds)
    parent: Budget | None = None
    spent: float = 0.0
    _shortfalls: list[Shortfall] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.seconds = max(float(self.seconds), 0.0)
        if self.deadline < 0:
            self.deadline = time.perf_counter() + WALL_FACTOR * self.seconds

    @property
    def left(self) -> float:
        return max(self.seconds - self.spent, 0.0)

    def part(self, parts: float = 1.0) -> Budget:
        """A share of 1 / `parts` of what is left, under the same wall-clock stop."""
        return Budget(self.left / max(parts, 1.0), self.deadline, self)

    def spend(self, seconds: float) -> None:
        budget: Budget | None = self
        while budget is not None:
            budget.spent += max(seconds, 0.0)
            budget = budget.parent

    def wall_left(self) -> float:
        return self.deadline - time.perf_counter()

    @property
    def root(self) -> Budget:
        return self if self.parent is None else self.parent.root

    def fall_short(self, shortfall: Shortfall) -> None:
        found = self.root._shortfalls
        if shortfall not in found:
            found.append(shortfall)

    @property
    def shortfalls(self) -> tuple[Shortfall, ...]:
        return tuple(self.root._shortfalls)


def as_budget(budget: Budget | None, seconds: float) -> Budget:
    """`budget`, or a budget of its own of `seconds` (the API's plain time limits)."""
    return Budget(seconds) if budget is None else budget


def greedy_work(blocks: int, paired: bool) -> float:
    """Work seconds one greedy placer is charged for a component of `blocks` blocks."""
    pairs = blocks * blocks / 2 if paired else 0.0
    return blocks * GREEDY_SECONDS_PER_BLOCK + pairs * GREEDY_SECONDS_PER_PAIRED_BLOCK_PAIR
