"""The order: the operator order with the lowest peak, and the certificate that no order does better.

Takes: a `Graph` and its memory model (tinysched.memory). Gives: a `Schedule` (the order, its peak,
its lower bound and the certificate saying how the bound was proved: min cuts, stage decisions,
exact search or CP-SAT), and recomputation sequences that run operators again to go below it.
docs/scheduling.md and docs/recomputation.md describe the search.

    scheduler.py  heuristics, exact search, CP-SAT, the staged search and its budget
    bounds.py     lower bounds: min cuts, the precedence tree, stage decisions; their recheck
    layered.py    a stage's down-sets layer by layer (numpy, or C through native)
    native.py     the C loops (csrc/downsets.c, csrc/cuttree.c), built once and loaded with ctypes
    recompute.py  sequences that run operators more than once to lower the peak
"""

from tinysched.exports import lazy_api

_API = {
    "HEURISTICS": "scheduler",
    "LowerBound": "bounds",
    "RecomputePlan": "recompute",
    "RecomputeRequest": "recompute",
    "Schedule": "scheduler",
    "lower_bound": "bounds",
    "plan_recompute": "recompute",
    "recheck": "bounds",
    "schedule": "scheduler",
}
__all__ = sorted(_API)
__getattr__ = lazy_api(__name__, _API)
