"""Drop-in for stock TFLM: the reordered model with tinysched's offsets as an offline memory plan.

TFLM reads a model metadata entry named "OfflineMemoryAllocation" whose buffer is a little-endian
int32 array: [version = 1, subgraph index = 0, N, offset_0 .. offset_{N-1}], with N the number of
tensors (TFLM compares it with the tensor count of *all* subgraphs and indexes it by tensor index
within a subgraph, so only single-subgraph models can be planned offline). Offset -1 asks TFLM to
plan the tensor online; constants, variables and zero-size tensors are never planned, so they get -1.

TFLM rounds every planned buffer up to 16 bytes (MicroArenaBufferAlignment) and reports the
non-persistent "head" as the largest offset + rounded size, so a plan made with alignment 16 gives a
head equal to its `arena_bytes`. Kernels that request scratch buffers (LSTM, SVDF, ...) still get
them planned online, in the gaps around the offline plan, which can make the head larger.

`run_tflm` runs a model in the `tflite-micro` Python interpreter in a child process (an interpreter
crash must not take the caller down) and returns its outputs and the arena sizes it reports.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from ai_edge_litert import schema_py_generated as schema

from tinysched import children
from tinysched.arena.placement import ArenaPlan
from tinysched.errors import TinyschedError
from tinysched.model.reader import parse_model
from tinysched.model.writer import rewrite_model

OFFLINE_PLAN_METADATA = "OfflineMemoryAllocation"
OFFLINE_PLAN_VERSION = 1
TFLM_ALIGNMENT = 16  # MicroArenaBufferAlignment(): TFLM rounds every planned buffer up to this
ONLINE = -1  # offset value that leaves a tensor to TFLM's own planner
# Reference kernels seen requesting arena scratch buffers, which TFLM plans online around the offline
# plan (measured on the shared models: the head then exceeds the plan's arena).
SCRATCH_KERNELS = frozenset({"SVDF", "UNIDIRECTIONAL_SEQUENCE_LSTM"})


def offline_plan_bytes(plan: ArenaPlan, tensor_count: int) -> bytes:
    """The OfflineMemoryAllocation payload: header then one int32 offset per tensor of subgraph 0."""
    offsets = [ONLINE] * tensor_count
    for p in plan.buffers:
        if not 0 <= p.index < tensor_count:
            raise TinyschedError(f"plan places tensor {p.index}, the model has {tensor_count} tensors")
        offsets[p.index] = p.offset
    header = [OFFLINE_PLAN_VERSION, 0, tensor_count]
    return np.asarray(header + offsets, dtype="<i4").tobytes()


def parse_offline_plan(payload: bytes) -> tuple[int, int, tuple[int, ...]]:
    """(version, subgraph, offsets) from an OfflineMemoryAllocation payload."""
    values = np.frombuffer(payload, dtype="<i4")
    if len(values) < 3 or len(values) != 3 + int(values[2]):
        raise TinyschedError(f"offline plan of {len(payload)} bytes does not match its own tensor count")
    return int(values[0]), int(values[1]), tuple(int(v) for v in values[3:])


def tflm_model(model_bytes: bytes, plan: ArenaPlan) -> bytes:
    """`model_bytes` with operators in `plan.order` and the plan's offsets as OfflineMemoryAllocation."""
    if plan.alignment % TFLM_ALIGNMENT:
        raise TinyschedError(
            f"TFLM rounds every buffer up to {TFLM_ALIGNMENT} bytes; an offline plan needs an alignment "
            f"that is a multiple of {TFLM_ALIGNMENT}, not {plan.alignment}"
        )
    model = schema.Model.GetRootAs(model_bytes, 0)
    if model.SubgraphsLength() != 1:
        raise TinyschedError(
            f"the model has {model.SubgraphsLength()} subgraphs; TFLM's offline plan format only "
            "works for single-subgraph models"
        )
    graph = parse_model(model_bytes)
    payload = offline_plan_bytes(plan, len(graph.tensors))
    return rewrite_model(model_bytes, order=plan.order, metadata={OFFLINE_PLAN_METADATA: payload})


# ---- running the tflite-micro interpreter ------------------------------------------------------


@dataclass(frozen=True)
class TflmRun:
    outputs: tuple[np.ndarray, ...]
    head_bytes: int  # non-persistent arena: the tensor plan (and scratch buffers)
    tail_bytes: int  # persistent arena: interpreter structures, variables, kernel data
    total_bytes: int


_ALLOCATION_LINE = re.compile(r"Arena allocation (total|head|tail) (\d+) bytes")


def run_tflm(model_bytes: bytes, inputs: Sequence[np.ndarray], timeout: float = 300.0) -> TflmRun:
    """Invoke the model once in tflite-micro (child process); outputs and the reported arena sizes."""
    with tempfile.TemporaryDirectory(prefix="tinysched-tflm-") as tmp:
        folder = Path(tmp)
        (folder / "model.tflite").write_bytes(model_bytes)
        np.savez(folder / "inputs.npz", *inputs)
        try:
            done = children.run(
                [sys.executable, "-m", "tinysched.arena.tflm", str(folder)],
                capture_output=True,
                text=True,
                timeout=timeout,
                cwd=Path(__file__).resolve().parents[1],
            )
        except subprocess.TimeoutExpired:
            raise TinyschedError(f"tflite-micro did not finish within {timeout:.0f} s") from None
        if done.returncode != 0 or not (folder / "outputs.npz").is_file():
            detail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise TinyschedError(f"tflite-micro failed (exit {done.returncode}): {detail}")
        sizes = {kind: int(n) for kind, n in _ALLOCATION_LINE.findall(done.stderr)}
        if set(sizes) != {"total", "head", "tail"}:
            raise TinyschedError("tflite-micro did not report its arena allocations")
        with np.load(folder / "outputs.npz") as saved:
            outputs = tuple(saved[f"arr_{i}"] for i in range(len(saved.files)))
    return TflmRun(outputs, sizes["head"], sizes["tail"], sizes["total"])


def _child(folder: Path) -> None:
    """In the child: load, invoke once, save outputs, print allocations (TFLM writes them to stderr)."""
    from tflite_micro.python.tflite_micro import runtime

    model_bytes = (folder / "model.tflite").read_bytes()
    arena_size = 10 * len(model_bytes) + (16 << 20)
    interpreter = runtime.Interpreter.from_bytes(model_bytes, arena_size=arena_size)
    with np.load(folder / "inputs.npz") as saved:
        for i in range(len(saved.files)):
            interpreter.set_input(saved[f"arr_{i}"], i)
    interpreter.invoke()
    graph = parse_model(model_bytes)
    outputs = [np.array(interpreter.get_output(i)) for i in range(len(graph.outputs))]
    np.savez(folder / "outputs.npz", *outputs)
    sys.stderr.flush()
    interpreter.print_allocations()


if __name__ == "__main__":
    _child(Path(sys.argv[1]))
