"""Comparisons that cost time (stock TFLM's arena, the recomputation trade-off, the tensor-model
optimum beside a refined certificate), computed once.

`build` and `report` call `compare` after planning and store its result in the metadata document,
so rendering never runs an interpreter or a search; both switch each comparison off by flag.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from tinysched.errors import TinyschedError

DEFAULT_RECOMPUTE_KS = (0, 1, 2)
DEFAULT_RECOMPUTE_TIME_LIMIT = 1.0  # seconds per k


@dataclass(frozen=True)
class CompareOptions:
    stock_tflm: bool = True  # run the tflite-micro interpreter on the stored model for its arena
    recompute_ks: tuple[int, ...] = DEFAULT_RECOMPUTE_KS  # caps of the trade-off; () skips it
    recompute_time_limit: float = DEFAULT_RECOMPUTE_TIME_LIMIT  # seconds per cap
    tensor_model: bool = True  # a refined plan: the tensor-model optimum beside its certificate


NO_COMPARISONS = CompareOptions(stock_tflm=False, recompute_ks=(), tensor_model=False)
DEFAULT_TENSOR_MODEL_TIME_LIMIT = 5.0  # seconds at most (as `plan` prints it)


def tensor_model_entry(planned: Any, time_limit: float) -> dict[str, Any] | None:
    """The least peak of any order with whole, separate tensors, for a plan in another memory model
    (None: the plan is in the tensor model, its own certificate says it)."""
    from tinysched.pipeline import stage_budget, tensor_model_optimum

    if planned.schedule.memory_model == "tensor":
        return None
    started = time.perf_counter()
    whole = tensor_model_optimum(planned, min(time_limit, stage_budget(planned.options).schedule))
    return {
        "peak_bytes": whole.peak_bytes,
        "lower_bound_bytes": whole.lower_bound_bytes,
        "certified": whole.certified,
        "certificate_kind": whole.certificate.kind if whole.certificate else None,
        "method": whole.method,
        "seconds": round(time.perf_counter() - started, 4),
    }


def stock_tflm_arena(model_bytes: bytes | None) -> dict[str, Any]:
    """Stock TFLM's arena for the model as stored, from the tflite-micro interpreter when installed."""
    if model_bytes is None:
        return {"available": False, "reason": "model file not given"}
    try:
        import importlib.util

        if importlib.util.find_spec("tflite_micro") is None:
            return {"available": False, "reason": "the tflite-micro package is not installed"}
    except (ImportError, ValueError):
        return {"available": False, "reason": "the tflite-micro package is not installed"}
    from tinysched.arena.tflm import run_tflm
    from tinysched.device.reference import random_inputs

    try:
        run = run_tflm(model_bytes, random_inputs(model_bytes, seed=0, count=1)[0], timeout=120.0)
    except TinyschedError as err:
        return {"available": False, "reason": str(err)}
    return {
        "available": True,
        "arena_bytes": run.head_bytes,
        "head_bytes": run.head_bytes,
        "tail_bytes": run.tail_bytes,
        "total_bytes": run.total_bytes,
        "source": "tflite-micro interpreter, stored order, its own planner",
    }


def recompute_entry(p: Any) -> dict[str, Any]:
    return {
        "k": p.k,
        "peak_bytes": p.peak_bytes,
        "baseline_peak_bytes": p.baseline_peak_bytes,
        "saving_bytes": p.saving_bytes,
        "saving_percent": round(p.saving_percent, 3),
        "lower_bound_bytes": p.lower_bound_bytes,
        "extra_macs": p.extra_macs,
        "extra_macs_percent": round(p.extra_macs_percent, 4),
        "total_macs": p.total_macs,
        "recomputed": list(p.recomputed),
        "sequence": list(p.sequence),
        "method": p.method,
        "optimal": p.optimal,
        "seconds": round(p.seconds, 4),
    }


def run_comparisons(planned: Any, model_bytes: bytes | None, options: CompareOptions) -> dict[str, Any]:
    """{"stock_tflm": ..., "recompute_tradeoff": ... or None, "seconds": {...}} for `planned`
    (a pipeline.Planned); stock TFLM runs in a child process while the trade-off is searched."""
    from tinysched.order.recompute import plan_recompute

    seconds: dict[str, float] = {}
    pool = ThreadPoolExecutor(max_workers=1)

    def timed_stock() -> dict[str, Any]:
        started = time.perf_counter()
        result = stock_tflm_arena(model_bytes)
        seconds["stock_tflm"] = round(time.perf_counter() - started, 3)
        return result

    if options.stock_tflm:
        stock_job = pool.submit(timed_stock)
    else:
        stock_job = pool.submit(dict, available=False, reason="not run (switched off)")
    pool.shutdown(wait=False)
    tradeoff = None
    if options.recompute_ks:
        started = time.perf_counter()
        plans = [
            plan_recompute(
                planned.default_kernels_graph or planned.graph, k, time_limit=options.recompute_time_limit
            )
            for k in options.recompute_ks
        ]
        seconds["recompute_tradeoff"] = round(time.perf_counter() - started, 3)
        tradeoff = {
            "memory_model": "tensor",  # recomputation sequences are planned in the tensor model
            "time_limit_seconds": options.recompute_time_limit,
            "plans": [recompute_entry(p) for p in plans],
        }
    tensor = None
    if options.tensor_model:
        tensor = tensor_model_entry(planned, DEFAULT_TENSOR_MODEL_TIME_LIMIT)
        if tensor is not None:
            seconds["tensor_model"] = tensor["seconds"]
    return {
        "stock_tflm": stock_job.result(),
        "recompute_tradeoff": tradeoff,
        "tensor_model": tensor,
        "seconds": seconds,
    }
