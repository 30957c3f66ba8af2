"""Structure-aware mutation of small models, and the CLI run that judges each mutant.

Shared by `test_validate.py` (a bounded hypothesis run) and `bench/bench_fuzz.py` (as long as one
likes). A mutant is a seed model from `kernel_models` / `test_kernels_extra` with one to three edits
of its object tree: a dimension, a rank, an option value, a quantisation scale or zero point, an
operand or intermediate index, a graph edge, a constant's values, an operator's code, a tensor's
type. Each edit keeps the file a valid flatbuffer, so the mutant reaches the reader's checks and,
when they accept it, the code generator, the compiler and the generated code under ASan/UBSan.

A run is judged from the outside, as a user sees it: exit 0 (or 1 for `verify`'s "outputs differ"),
or exit 2 with exactly one `tinysched: error:` line; never a traceback, a signal, a sanitizer report
or a run far past its time limit.
"""

from __future__ import annotations

import math
import os
import random
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
from ai_edge_litert import schema_py_generated as schema
from tflite_edit import pack, unpack

REPO = Path(__file__).resolve().parents[1]
PYTHON = sys.executable

INTERESTING_INTS = (-(2**31), -65536, -2, -1, 0, 1, 2, 3, 7, 65536, 2**31 - 1)
INTERESTING_FLOATS = (math.nan, math.inf, -math.inf, 0.0, -1.0, 1e-30, 1e30, 0.5, 3.0)
INTERESTING_SCALES = (math.inf, math.nan, 0.0, -0.5, 1e-30, 1e30, 1e-3, 2.0)
INTERESTING_ZERO_POINTS = (-(2**31), -129, -128, 0, 127, 128, 255, 2**31 - 1)
SANITIZER_MARKS = ("AddressSanitizer", "UndefinedBehaviorSanitizer", "LeakSanitizer", "runtime error:")


@cache
def seed_models() -> dict[str, bytes]:
    """Small models covering the generator's operators (built once per process)."""
    from kernel_models import KERNEL_MODELS
    from test_kernels_extra import EXTRA_MODELS

    builders: dict[str, Callable[[], bytes]] = {**KERNEL_MODELS, **EXTRA_MODELS}
    return {name: build() for name, build in sorted(builders.items())}


# ---- mutations: each edits the tree in place, or raises LookupError when it does not apply ---------


def _dims(rng: random.Random, d: int) -> int:
    return rng.choice((*INTERESTING_INTS[3:], d - 1, d + 1, 2 * d, d // 2, d * 65536))


def _tensor(m: schema.ModelT, rng: random.Random) -> schema.TensorT:
    sub = m.subgraphs[0]
    if rng.random() < 0.7 and sub.operators:  # mostly an operator's operand
        op = rng.choice(sub.operators)
        touched = [t for t in (*list(op.inputs), *list(op.outputs)) if 0 <= t < len(sub.tensors)]
        if touched:
            return sub.tensors[rng.choice(touched)]
    return rng.choice(sub.tensors)


def _shape_dim(m: schema.ModelT, rng: random.Random) -> str:
    t = _tensor(m, rng)
    shape = [int(d) for d in (t.shape if t.shape is not None else [])]
    if not shape:
        raise LookupError
    k = rng.randrange(len(shape))
    shape[k] = max(-1, min(_dims(rng, shape[k]), 2**31 - 1))
    t.shape = shape
    return f"tensor {t.name!r} dim {k} -> {shape[k]}"


def _shape_rank(m: schema.ModelT, rng: random.Random) -> str:
    t = _tensor(m, rng)
    shape = [int(d) for d in (t.shape if t.shape is not None else [])]
    if shape and rng.random() < 0.5:
        del shape[rng.randrange(len(shape))]
    else:
        shape.insert(rng.randrange(len(shape) + 1), rng.choice((1, 2, 3)))
    t.shape = shape
    return f"tensor {t.name!r} shape -> {shape}"


def _options(m: schema.ModelT, rng: random.Random) -> tuple[schema.OperatorT, object]:
    ops = [op for op in m.subgraphs[0].operators if op.builtinOptions is not None]
    if not ops:
        raise LookupError
    op = rng.choice(ops)
    return op, op.builtinOptions


def _option_value(m: schema.ModelT, rng: random.Random) -> str:
    op, options = _options(m, rng)
    fields = [k for k, v in vars(options).items() if isinstance(v, int | float)]
    if not fields:
        raise LookupError
    key = rng.choice(fields)
    value = getattr(options, key)
    if isinstance(value, bool):
        new: object = not value
    elif isinstance(value, float):
        new = rng.choice(INTERESTING_FLOATS)
    elif key in ("padding", "fusedActivationFunction", "weightsFormat", "outputType"):
        new = rng.choice((0, 1, 2, 3, 4, 5, 6, 7, 100))  # enums stored in a byte
    else:
        new = rng.choice((*INTERESTING_INTS, value + 1, value - 1, 2 * value))
    setattr(options, key, new)
    return f"option {key} {value!r} -> {new!r}"


def _quant(m: schema.ModelT, rng: random.Random) -> str:
    quantised = [
        t for t in m.subgraphs[0].tensors if t.quantization is not None and t.quantization.scale is not None
    ]
    if not quantised:
        raise LookupError
    t = rng.choice(quantised)
    q = t.quantization
    roll = rng.random()
    if roll < 0.5:
        scale = [float(s) for s in q.scale]
        k = rng.randrange(len(scale))
        scale[k] = rng.choice(INTERESTING_SCALES)
        q.scale = scale
        return f"tensor {t.name!r} scale[{k}] -> {scale[k]}"
    if roll < 0.85 and q.zeroPoint is not None and len(q.zeroPoint):
        zp = [int(z) for z in q.zeroPoint]
        k = rng.randrange(len(zp))
        zp[k] = rng.choice(INTERESTING_ZERO_POINTS)
        q.zeroPoint = zp
        return f"tensor {t.name!r} zero point[{k}] -> {zp[k]}"
    q.quantizedDimension = rng.choice((0, 1, 2, 3, 5, -1))
    return f"tensor {t.name!r} quantised axis -> {q.quantizedDimension}"


def _index(m: schema.ModelT, rng: random.Random) -> int:
    n = len(m.subgraphs[0].tensors)
    return rng.choice((-1, n, n + 1, 2**31 - 1, rng.randrange(n), rng.randrange(n)))


def _operand(m: schema.ModelT, rng: random.Random) -> str:
    op = rng.choice(m.subgraphs[0].operators)
    role = rng.choice(("inputs", "outputs", "intermediates", "inputs"))
    values = [int(v) for v in (getattr(op, role) if getattr(op, role) is not None else [])]
    roll = rng.random()
    if values and roll < 0.6:
        k = rng.randrange(len(values))
        values[k] = _index(m, rng)
    elif values and roll < 0.8:
        del values[rng.randrange(len(values))]
    else:
        values.append(_index(m, rng))
    setattr(op, role, values)
    return f"operator {role} -> {values}"


def _graph_edge(m: schema.ModelT, rng: random.Random) -> str:
    sub = m.subgraphs[0]
    role = rng.choice(("inputs", "outputs"))
    values = [int(v) for v in getattr(sub, role)]
    if values and rng.random() < 0.7:
        values[rng.randrange(len(values))] = _index(m, rng)
    else:
        values.append(_index(m, rng))
    setattr(sub, role, values)
    return f"graph {role} -> {values}"


def _constant(m: schema.ModelT, rng: random.Random) -> str:
    sub = m.subgraphs[0]
    consts = [
        t for t in sub.tensors if 0 < t.buffer < len(m.buffers) and m.buffers[t.buffer].data is not None
    ]
    if not consts:
        raise LookupError
    t = rng.choice(consts)
    buf = m.buffers[t.buffer]
    raw = bytearray(bytes(np.asarray(buf.data, dtype=np.uint8)))
    if not raw:
        raise LookupError
    roll = rng.random()
    if t.type in (schema.TensorType.INT32, schema.TensorType.INT64) and roll < 0.7:
        width, fmt = (4, "<i") if t.type == schema.TensorType.INT32 else (8, "<q")
        k = rng.randrange(len(raw) // width) * width
        value = rng.choice(INTERESTING_INTS)
        raw[k : k + width] = struct.pack(fmt, value)
        what = f"element {k // width} -> {value}"
    elif roll < 0.85:
        k = rng.randrange(len(raw))
        raw[k] = rng.randrange(256)
        what = f"byte {k} -> {raw[k]}"
    else:
        raw = raw[: rng.randrange(len(raw))]
        what = f"truncated to {len(raw)} bytes"
    buf.data = np.frombuffer(bytes(raw), dtype=np.uint8).copy()
    return f"constant {t.name!r} {what}"


def _opcode(m: schema.ModelT, rng: random.Random) -> str:
    op = rng.choice(m.subgraphs[0].operators)
    op.opcodeIndex = rng.randrange(len(m.operatorCodes))
    return f"operator opcode index -> {op.opcodeIndex}"


def _tensor_type(m: schema.ModelT, rng: random.Random) -> str:
    t = _tensor(m, rng)
    types = (schema.TensorType.INT8, schema.TensorType.UINT8, schema.TensorType.INT16,
             schema.TensorType.INT32, schema.TensorType.INT64, schema.TensorType.FLOAT32)  # fmt: skip
    t.type = rng.choice(types)
    if rng.random() < 0.2:
        t.isVariable = not t.isVariable
    return f"tensor {t.name!r} type -> {t.type}, variable {t.isVariable}"


MUTATIONS: dict[str, Callable[[schema.ModelT, random.Random], str]] = {
    "shape_dim": _shape_dim,
    "shape_rank": _shape_rank,
    "option": _option_value,
    "quantisation": _quant,
    "operand": _operand,
    "graph_edge": _graph_edge,
    "constant": _constant,
    "opcode": _opcode,
    "tensor_type": _tensor_type,
}
# Shape and option edits are what reach the kernels most often: drawn more often.
_WEIGHTS = {"shape_dim": 4, "option": 4, "constant": 3, "shape_rank": 2, "quantisation": 2}


def mutate(data: bytes, seed: int, edits: int | None = None) -> tuple[bytes, list[str]]:
    """`data` with one to three structure-aware edits drawn from `seed`, and what they were."""
    rng = random.Random(seed)
    names = sorted(MUTATIONS)
    weights = [_WEIGHTS.get(n, 1) for n in names]
    for _ in range(50):
        model = unpack(data)
        done = []
        for _ in range(edits or rng.choice((1, 1, 2, 3))):
            try:
                done.append(MUTATIONS[rng.choices(names, weights)[0]](model, rng))
            except LookupError:
                continue
        if not done:
            continue
        try:
            return pack(model), done
        except (struct.error, OverflowError, TypeError, ValueError):
            continue  # a value that its field cannot hold: draw another edit
    return data, ["unmutated"]


# ---- judging a CLI run -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """How one CLI run ended, as a user sees it."""

    verb: str
    returncode: int
    seconds: float
    stderr: str
    stdout: str
    time_limit: float | None = None
    startup: float = 2.0  # seconds the CLI takes to start on this machine now (at least 2)

    @property
    def kind(self) -> str:
        """clean, mismatch, traceback, crash, sanitizer, several-lines or overrun."""
        text = self.stderr + self.stdout
        if any(mark in text for mark in SANITIZER_MARKS):
            return "sanitizer"
        if "Traceback (most recent call last)" in self.stderr:
            return "traceback"
        if self.returncode not in (0, 1, 2):
            return "crash"
        if self.returncode == 1:
            return "mismatch" if self.verb == "verify" else "crash"
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        if self.returncode == 2 and (len(lines) != 1 or not lines[0].startswith("tinysched: error: ")):
            return "several-lines"
        if self.overrun:
            return "overrun"
        return "clean"

    @property
    def overrun(self) -> bool:
        """Longer than the verb's --time-limit, plus 10%, plus start-up (2 s, or more while the
        machine is loaded: `startup_seconds`)."""
        return self.time_limit is not None and self.seconds > self.time_limit * 1.1 + self.startup

    def summary(self) -> str:
        tail = (self.stderr.strip().splitlines() or [""])[-1][:300]
        return f"{self.verb}: exit {self.returncode} after {self.seconds:.1f} s: {tail}"


def startup_seconds() -> float:
    """What `tinysched --version` takes now (imports every verb's module), at least 2 s: the start-up
    allowance of an overrun, measured so that a loaded machine does not count as overruns."""
    return max(2.0, run_cli(["--version"]).seconds)


def run_cli(
    args: list[str], verb_timeout: float = 300.0, time_limit: float | None = None, startup: float = 2.0
) -> Outcome:
    """`python -m tinysched.cli ARGS` from this checkout, on one core's worth of threads."""
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    env["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=0"
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            [PYTHON, "-m", "tinysched.cli", *args],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=verb_timeout,
            env=env,
            check=False,
        )
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out, err = -9, str(exc.stdout or ""), f"killed after {verb_timeout} s"
    return Outcome(args[0], rc, time.perf_counter() - start, err, out, time_limit, startup)


def verify_sanitized(model: Path, time_limit: float = 1.0) -> Outcome:
    """Build, run under ASan/UBSan on one random input set and compare with the reference."""
    return run_cli(
        ["verify", str(model), "--sanitize", "--inputs", "1", "--opt=-O1", "--time-limit", str(time_limit)]
    )


def schedule_timed(model: Path, time_limit: float = 1.0) -> Outcome:
    """`schedule` with its time limit, judged for overruns too (start-up measured just before)."""
    startup = startup_seconds()
    return run_cli(
        ["schedule", str(model), "--time-limit", str(time_limit)], time_limit=time_limit, startup=startup
    )
