"""`tinysched verify`: the generated C on the host, every output byte against TFLite's reference.

Seeded random inputs (and any given input files) run through the host runner in one process and
through TFLite's reference kernels (`tinysched.reference`, in a child process); every output byte
is compared.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tinysched import reference
from tinysched.build.host import compile_runner, load_input_file, run_runner, write_runner
from tinysched.build.sources import write_sources
from tinysched.errors import TinyschedError


@dataclass
class VerifyResult:
    model: str
    outputs_match: bool
    inputs: int
    reference: str
    fallback_reason: str | None
    arena_bytes: int
    mismatches: list[dict[str, Any]] = field(default_factory=list)
    sanitize: bool = False
    recompute: Any = None  # the RecomputePlan under --recompute K

    def as_json(self) -> dict[str, Any]:
        payload = {
            "model": self.model,
            "outputs_match": self.outputs_match,
            "inputs": self.inputs,
            "mismatches": self.mismatches,
            "reference": self.reference,
            "fallback_reason": self.fallback_reason,
            "arena_bytes": self.arena_bytes,
            "sanitize": self.sanitize,
        }
        if self.recompute is not None:
            payload.update(self.recompute.as_json())
        return payload


def compare_outputs(
    ours: Sequence[Sequence[np.ndarray]], theirs: Sequence[Sequence[np.ndarray]], names: Sequence[str]
) -> list[dict[str, Any]]:
    mismatches = []
    for n, (a_set, b_set) in enumerate(zip(ours, theirs, strict=True)):
        for k, (a, b) in enumerate(zip(a_set, b_set, strict=True)):
            b = np.asarray(b)
            a_bytes = np.frombuffer(np.ascontiguousarray(a).tobytes(), dtype=np.uint8)
            b_bytes = np.frombuffer(np.ascontiguousarray(b).tobytes(), dtype=np.uint8)
            if a_bytes.shape == b_bytes.shape and np.array_equal(a_bytes, b_bytes):
                continue
            entry: dict[str, Any] = {"input_set": n, "output": k, "name": names[k]}
            if a.shape == b.shape and a.dtype == b.dtype:
                diff = a.reshape(-1) != b.reshape(-1)
                entry["differing_elements"] = int(diff.sum())
                entry["elements"] = int(diff.size)
                entry["first_index"] = int(np.argmax(diff))
                if a.dtype.kind in "iu":
                    entry["max_abs_diff"] = int(np.max(np.abs(a.astype(np.int64) - b.astype(np.int64))))
                else:
                    entry["max_abs_diff"] = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
            else:
                entry["detail"] = f"shape/type {a.dtype}{list(a.shape)} vs reference {b.dtype}{list(b.shape)}"
            mismatches.append(entry)
    return mismatches


def verify(
    model: str | Path,
    planned: Any,
    module: Any,
    *,
    n_inputs: int = 10,
    seed: int = 0,
    input_files: Sequence[str | Path] = (),
    opt: str = "-O2",
    sanitize: bool = False,
) -> VerifyResult:
    """Compile `module` (generated from `planned`) in a temporary folder and compare every output
    byte with TFLite's reference kernels run on `model`."""
    if n_inputs < 0:
        raise TinyschedError("--inputs must be 0 or more")
    input_sets = [list(s) for s in reference.random_inputs(model, seed, n_inputs)] if n_inputs else []
    input_sets += [load_input_file(p, module) for p in input_files]
    if not input_sets:
        raise TinyschedError("nothing to verify: --inputs 0 and no input files")
    graph = planned.graph
    with tempfile.TemporaryDirectory(prefix="tinysched-verify-") as tmp:
        sources = write_sources(module, Path(tmp) / "build")
        write_runner(module, sources, str(model), graph.sha256)
        runner = compile_runner(sources, opt=opt, sanitize=sanitize)
        ours = run_runner(runner, module, input_sets)
    results = reference.run_reference_many(model, input_sets)
    names = [graph.tensors[t].name for t in graph.outputs]
    mismatches = compare_outputs(ours, [r.outputs for r in results], names)
    return VerifyResult(
        model=str(model),
        outputs_match=not mismatches,
        inputs=len(input_sets),
        reference=results[0].resolver,
        fallback_reason=results[0].fallback_reason,
        arena_bytes=planned.arena.arena_bytes,
        mismatches=mismatches,
        sanitize=sanitize,
        recompute=planned.recompute,
    )
