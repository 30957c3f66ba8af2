"""The arena: every tensor of the planned order at a fixed byte offset in one static buffer.

Takes: a `Graph`, its memory model and an order (tinysched.memory, tinysched.order). Gives: an
`ArenaPlan` (offsets, sizes, lifetimes, the arena's bytes against its aligned lower bound), split
over a board's RAM regions where asked (`plan_pools`), checked by an independent checker
(`check_plan`), with the wide kernels' scratch placed in gaps it leaves, and the same plan written
for stock TFLM as its offline memory plan. docs/arena.md and docs/pools.md describe the placers.

    placement.py  placers (greedy, CP-SAT) behind one name -> function table
    pools.py      one arena over several RAM regions, never a tensor across two
    check.py      the plan checker: order, lifetimes, overlaps, alignment, bound
    scratch.py    scratch for the wide CONV_2D kernel where the placed arena has room
    tflm.py       the plan as TFLM's offline plan, and stock TFLM run on it in a child process
"""

from tinysched.exports import lazy_api

_API = {
    "DEFAULT_ALIGNMENT": "placement",
    "PLACERS": "placement",
    "ArenaPlan": "placement",
    "PoolRequest": "pools",
    "check_plan": "check",
    "plan_arena": "placement",
    "plan_model": "placement",
    "plan_pools": "pools",
    "run_tflm": "tflm",
    "tflm_model": "tflm",
    "with_wide_scratch": "scratch",
}
__all__ = sorted(_API)
__getattr__ = lazy_api(__name__, _API)
