"""Run the TFLite reference interpreter on a model, isolated in a child process.

The reference kernels (`OpResolverType.BUILTIN_REF`) are the ground truth the generated C is
compared against, bit for bit. They are also fragile: on some valid models they abort the whole
process (a failed `TFLITE_CHECK`, an operator version they do not register) instead of raising.
So the interpreter always runs in a child (`python -m tinysched.device.reference --worker DIR RESOLVER`)
that exchanges `.npz`/pickle files through a private temporary directory. If the child dies or
fails with BUILTIN_REF, the run is retried with the optimised builtin kernels
(`BUILTIN_WITHOUT_DEFAULT_DELEGATES`, no XNNPACK) and the result says which resolver produced it.
Several input sets go to one child, because start-up (importing the interpreter) dominates.

With `$TINYSCHED_REFERENCE_CACHE` naming a folder, a child's successful result is stored there under
a digest of the interpreter's version, the resolver, the model bytes and the input sets, and an
identical run later reads it instead of starting a child (the test suite runs the same models on
several boards). Failures are never stored: each run tries its resolvers again.

BUILTIN_REF registers fewer operator versions than the optimised resolver. Where a version it lacks
changes nothing for the element types in use (`REFERENCE_VERSION_LOWERING`: TILE v3 only declares
int8 support, which the one TILE kernel both resolvers register already has), BUILTIN_REF runs a copy
of the model with that operator code's version lowered, and the result says so (`version_lowering`).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import math
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tinysched import caches, children
from tinysched.errors import TinyschedError
from tinysched.model.interface import IoEdge, model_inputs
from tinysched.text import quoted

__all__ = [
    "DEFAULT_RESOLVERS",
    "REFERENCE_VERSION_LOWERING",
    "VersionLowering",
    "InputSpec",
    "ReferenceResult",
    "model_input_specs",
    "interface_inputs",
    "random_inputs",
    "reference_io",
    "reference_copy",
    "run_reference",
    "run_reference_many",
]

DEFAULT_RESOLVERS = ("BUILTIN_REF", "BUILTIN_WITHOUT_DEFAULT_DELEGATES")
CACHE_ENV = "TINYSCHED_REFERENCE_CACHE"

# Reference kernels known to compute a wrong result, by (operator, input dtype): a model using one is
# checked against the other resolver, and the result says why (evidence in docs/codegen.md).
REFERENCE_KERNEL_DEFECTS = {
    ("SUM", "int8"): "BUILTIN_REF's int8 SUM reads its int8 input as uint8",
}


@dataclass(frozen=True)
class VersionLowering:
    """An operator version BUILTIN_REF does not register, and the highest one it does, which computes
    the same for the element types listed (the interpreter's kernels do not read the version)."""

    highest: int
    dtypes: frozenset[str]
    why: str


REFERENCE_VERSION_LOWERING = {
    "TILE": VersionLowering(
        2,
        frozenset({"int8", "uint8", "int16", "int32", "int64", "float32", "bool"}),
        "one kernel (tile.cc) in both resolvers; v3 only declares int8, which v1-2 already copy",
    ),
}


def reference_copy(model_bytes: bytes) -> tuple[bytes, str | None]:
    """`model_bytes` with every operator code of REFERENCE_VERSION_LOWERING above its `highest`
    version lowered to it when all its operators use listed element types, and a note saying which
    (None and the bytes unchanged when there is nothing to lower)."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    root = schema.Model.GetRootAs(model_bytes, 0)
    names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
    candidates: dict[int, tuple[str, VersionLowering, int]] = {}
    for k in range(root.OperatorCodesLength()):
        code = root.OperatorCodes(k)
        name = names.get(max(code.BuiltinCode(), code.DeprecatedBuiltinCode()), "")
        rule = REFERENCE_VERSION_LOWERING.get(name)
        if rule is not None and code.Version() > rule.highest:
            candidates[k] = (name, rule, code.Version())
    if not candidates or root.SubgraphsLength() < 1:
        return model_bytes, None
    subgraph = root.Subgraphs(0)
    for n in range(subgraph.OperatorsLength()):
        op = subgraph.Operators(n)
        if op.OpcodeIndex() not in candidates:
            continue
        rule = candidates[op.OpcodeIndex()][1]
        tensors = [op.Inputs(i) for i in range(op.InputsLength())] + [
            op.Outputs(i) for i in range(op.OutputsLength())
        ]
        types = {_NUMPY_TYPES.get(subgraph.Tensors(t).Type(), "?") for t in tensors if t >= 0}
        if not types <= rule.dtypes:  # an element type the lower version may not compute the same
            candidates.pop(op.OpcodeIndex())
    if not candidates:
        return model_bytes, None
    model = schema.ModelT.InitFromObj(root)
    notes = []
    for k, (name, rule, version) in sorted(candidates.items()):
        model.operatorCodes[k].version = rule.highest
        notes.append(f"{name} v{version} run as v{rule.highest} ({rule.why})")
    builder = flatbuffers.Builder(len(model_bytes) + 1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output()), "BUILTIN_REF ran a copy: " + "; ".join(notes)


def resolvers_for(model_bytes: bytes) -> tuple[tuple[str, ...], str | None]:
    """Resolver order for a model, and why it differs from DEFAULT_RESOLVERS (None when it does not)."""
    from tinysched.model.reader import parse_model

    graph = parse_model(model_bytes)
    defects = sorted(
        {
            REFERENCE_KERNEL_DEFECTS[key]
            for op in graph.operators
            if op.input_tensors
            and (key := (op.opcode, graph.tensors[op.input_tensors[0]].dtype)) in REFERENCE_KERNEL_DEFECTS
        }
    )
    if not defects:
        return DEFAULT_RESOLVERS, None
    return ("BUILTIN_WITHOUT_DEFAULT_DELEGATES",), "; ".join(defects)


# Names of ai_edge_litert.interpreter.OpResolverType members (not imported: the parent stays light).
_RESOLVER_NAMES = frozenset({"AUTO", "BUILTIN", "BUILTIN_REF", "BUILTIN_WITHOUT_DEFAULT_DELEGATES"})

# TFLite TensorType -> numpy dtype name (the types a model interface can reasonably use).
_NUMPY_TYPES = {
    0: "float32",
    1: "float16",
    2: "int32",
    3: "uint8",
    4: "int64",
    6: "bool",
    7: "int16",
    9: "int8",
    10: "float64",
    15: "uint32",
    16: "uint16",
}

_WORKER_ERROR_EXIT = 3

# Random input sets are made in memory (and copied to the interpreter's child process): refuse
# sizes no microcontroller model has before numpy tries to allocate them.
MAX_RANDOM_INPUT_BYTES = 1 << 30


@dataclass(frozen=True)
class ReferenceResult:
    """The reference outputs for one input set, and how they were obtained."""

    outputs: list[np.ndarray]
    resolver: str  # "BUILTIN_REF" or "BUILTIN_WITHOUT_DEFAULT_DELEGATES"
    # Interpreter.get_tensor_details() of the model: name, index, shape, dtype, quantization, ...
    tensor_details: list[dict[str, Any]]
    # Every readable tensor's value after invoke (index -> array), if preserve_all_tensors was set.
    tensors: dict[int, np.ndarray] | None = None
    # Why an earlier resolver in the list was not used (e.g. BUILTIN_REF aborted), else None.
    fallback_reason: str | None = None
    # Which operator versions BUILTIN_REF ran lowered (reference_copy), else None.
    version_lowering: str | None = None


@dataclass(frozen=True)
class InputSpec:
    """What one model input expects."""

    index: int
    name: str
    shape: tuple[int, ...]
    dtype: str


def _model_bytes(model: bytes | str | os.PathLike[str]) -> bytes:
    if isinstance(model, bytes | bytearray | memoryview):
        return bytes(model)
    try:
        return Path(model).read_bytes()
    except OSError as exc:
        raise TinyschedError(f"cannot read model {model}: {exc.strerror or exc}") from exc


def model_input_specs(model: bytes | str | os.PathLike[str]) -> list[InputSpec]:
    """The first subgraph's inputs, read straight from the flatbuffer (no interpreter needed)."""
    from ai_edge_litert import schema_py_generated as schema

    data = _model_bytes(model)
    unreadable = "model is not a readable TFLite flatbuffer"
    if len(data) < 8:
        raise TinyschedError(f"{unreadable}: only {len(data)} bytes")
    try:
        root = schema.Model.GetRootAs(data, 0)
        if root.SubgraphsLength() < 1:
            raise TinyschedError(f"{unreadable}: it has no subgraph")
        subgraph = root.Subgraphs(0)
        specs = []
        for position in range(subgraph.InputsLength()):
            index = int(subgraph.Inputs(position))
            tensor = subgraph.Tensors(index)
            type_code = tensor.Type()
            if type_code not in _NUMPY_TYPES:
                raise TinyschedError(f"model input {index} has unsupported tensor type {type_code}")
            name = (tensor.Name() or b"").decode("utf-8", "replace")
            shape = tuple(int(d) for d in tensor.ShapeAsNumpy()) if tensor.ShapeLength() else ()
            specs.append(InputSpec(index, name, shape, _NUMPY_TYPES[type_code]))
        return specs
    except TinyschedError:
        raise
    except Exception as exc:  # a corrupt flatbuffer raises anything from struct/IndexError
        raise TinyschedError(f"{unreadable}: {exc}") from exc


def random_inputs(model: bytes | str | os.PathLike[str], seed: int, count: int) -> list[list[np.ndarray]]:
    """`count` seeded random input sets matching the model's input dtypes and shapes.

    Integer inputs cover their whole range (int32 a small one), floats are uniform in [-1, 1].
    """
    specs = model_input_specs(model)
    per_set = 0
    for spec in specs:
        if any(d < 0 for d in spec.shape):
            raise TinyschedError(f"model input {quoted(spec.name)} has a dynamic shape {list(spec.shape)}")
        per_set += math.prod(spec.shape) * np.dtype(spec.dtype).itemsize  # exact, never wraps
    if per_set * max(count, 0) > MAX_RANDOM_INPUT_BYTES:
        raise TinyschedError(
            f"{max(count, 0)} random input set(s) of {per_set:,} bytes each exceed the limit of "
            f"{MAX_RANDOM_INPUT_BYTES:,} bytes"
        )
    rng = np.random.default_rng(seed)
    sets = []
    for _ in range(count):
        arrays = []
        for spec in specs:
            dtype = np.dtype(spec.dtype)
            if dtype == np.bool_:
                arrays.append(rng.integers(0, 2, spec.shape).astype(np.bool_))
            elif dtype.kind in "iu":
                info = np.iinfo(dtype)
                lo, hi = (info.min, info.max) if dtype.itemsize <= 2 else (-100, 100)
                arrays.append(rng.integers(lo, hi, spec.shape, endpoint=True).astype(dtype))
            else:
                arrays.append(rng.uniform(-1.0, 1.0, spec.shape).astype(dtype))
        sets.append(arrays)
    return sets


def _check_inputs(specs: list[InputSpec], input_sets: Sequence[Sequence[np.ndarray]]) -> None:
    for n, arrays in enumerate(input_sets):
        if len(arrays) != len(specs):
            raise TinyschedError(
                f"input set {n} has {len(arrays)} arrays but the model has {len(specs)} inputs"
            )
        for spec, array in zip(specs, arrays, strict=True):
            array = np.asarray(array)
            if array.dtype != np.dtype(spec.dtype) or tuple(array.shape) != spec.shape:
                raise TinyschedError(
                    f"input set {n}, input {quoted(spec.name)}: expected {spec.dtype}{list(spec.shape)},"
                    f" got {array.dtype}{list(array.shape)}"
                )


def _one_line(text: str, limit: int = 400) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    summary = " / ".join(lines[-3:])
    return summary if len(summary) <= limit else "..." + summary[-limit:]


def _run_child(
    workdir: Path, resolver: str, preserve_all_tensors: bool, timeout_s: float
) -> tuple[dict[str, Any] | None, str]:
    """Run one worker; return (result, "") or (None, why it failed)."""
    result_path = workdir / "result.pkl"
    error_path = workdir / "error.txt"
    for stale in (result_path, error_path):
        stale.unlink(missing_ok=True)
    package_root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    command = [sys.executable, "-m", "tinysched.device.reference", "--worker", str(workdir), resolver]
    if preserve_all_tensors:
        command.append("--preserve-all-tensors")
    try:
        proc = children.run(command, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        raise TinyschedError(f"reference interpreter ({resolver}) timed out after {timeout_s:g} s") from exc
    if proc.returncode == 0 and result_path.exists():
        with result_path.open("rb") as f:
            return pickle.load(f), ""
    if proc.returncode < 0:
        try:
            how = f"killed by {signal.Signals(-proc.returncode).name}"
        except ValueError:
            how = f"killed by signal {-proc.returncode}"
    elif proc.returncode == _WORKER_ERROR_EXIT and error_path.exists():
        how = error_path.read_text(encoding="utf-8", errors="replace")
    else:
        how = f"exited with status {proc.returncode}"
    detail = _one_line(proc.stderr or "")
    return None, _one_line(f"{how} ({detail})" if detail and detail not in how else how)


@functools.cache
def _interpreter_version() -> str:
    try:
        return importlib.metadata.version("ai-edge-litert")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _cache_key(
    model: bytes, resolver: str, preserve_all_tensors: bool, input_sets: Sequence[Sequence[Any]]
) -> str:
    digest = hashlib.sha256(f"{_interpreter_version()}\0{resolver}\0{preserve_all_tensors}\0".encode())
    digest.update(hashlib.sha256(model).digest())
    for inputs in input_sets:
        digest.update(b"\0set")
        for array in inputs:
            value = np.ascontiguousarray(array)
            digest.update(f"\0{value.dtype.str}{value.shape}\0".encode())
            digest.update(value.tobytes())
    return digest.hexdigest() + ".pkl"


def _run_child_cached(
    workdir: Path,
    resolver: str,
    preserve_all_tensors: bool,
    timeout_s: float,
    cache: Path | None,
    key: str,
) -> tuple[dict[str, Any] | None, str]:
    """`_run_child`, answered from `cache` (None: no cache) when an identical run succeeded."""
    stored = caches.lookup(cache, key) if cache is not None else None
    if stored is not None:
        with stored.open("rb") as f:
            return pickle.load(f), ""
    result, failure = _run_child(workdir, resolver, preserve_all_tensors, timeout_s)
    if cache is not None and result is not None:
        caches.store(cache, key, (workdir / "result.pkl").read_bytes())
    return result, failure


def run_reference_many(
    model: bytes | str | os.PathLike[str],
    input_sets: Sequence[Sequence[np.ndarray]],
    timeout_s: float = 120.0,
    *,
    resolvers: Sequence[str] | None = None,
    preserve_all_tensors: bool = False,
) -> list[ReferenceResult]:
    """Run every input set through one interpreter child; one result per set.

    Resolvers are tried in order until one child succeeds (by default BUILTIN_REF, then the optimised
    kernels; a model using a reference kernel listed in REFERENCE_KERNEL_DEFECTS goes straight to the
    optimised kernels). Raises TinyschedError if all fail or a child exceeds `timeout_s` (a hang is
    not retried: the fallback would likely hang too).
    """
    data = _model_bytes(model)
    specs = model_input_specs(data)
    _check_inputs(specs, input_sets)
    defect = None
    if resolvers is None:
        resolvers, defect = resolvers_for(data)
    unknown = [r for r in resolvers if r not in _RESOLVER_NAMES]
    if unknown or not resolvers:
        raise ValueError(f"resolvers must be a non-empty list of {sorted(_RESOLVER_NAMES)}, not {unknown}")
    failures: list[str] = []
    lowered, lowering = reference_copy(data) if "BUILTIN_REF" in resolvers else (data, None)
    with tempfile.TemporaryDirectory(prefix="tinysched-ref-") as tmp:
        workdir = Path(tmp)
        arrays = {
            f"s{n}_i{k}": np.asarray(a) for n, inputs in enumerate(input_sets) for k, a in enumerate(inputs)
        }
        np.savez(workdir / "inputs.npz", n_sets=np.int64(len(input_sets)), **arrays)
        cache = caches.folder(CACHE_ENV)
        for resolver in resolvers:
            child_model = lowered if resolver == "BUILTIN_REF" else data
            (workdir / "model.tflite").write_bytes(child_model)
            # the key hashes the model and every input: only when the cache is on
            key = _cache_key(child_model, resolver, preserve_all_tensors, input_sets) if cache else ""
            result, failure = _run_child_cached(
                workdir, resolver, preserve_all_tensors, timeout_s, cache, key
            )
            if result is None:
                failures.append(f"{resolver}: {failure}")
                continue
            reason = "; ".join(([defect] if defect else []) + failures) or None
            return [
                ReferenceResult(
                    outputs=outputs,
                    resolver=resolver,
                    tensor_details=result["tensor_details"],
                    tensors=tensors,
                    fallback_reason=reason,
                    version_lowering=lowering if resolver == "BUILTIN_REF" else None,
                )
                for outputs, tensors in zip(result["outputs"], result["tensors"], strict=True)
            ]
    raise TinyschedError("reference interpreter failed: " + "; ".join(failures))


def run_reference(
    model: bytes | str | os.PathLike[str],
    inputs: Sequence[np.ndarray],
    timeout_s: float = 120.0,
    *,
    resolvers: Sequence[str] | None = None,
    preserve_all_tensors: bool = False,
) -> ReferenceResult:
    """Reference outputs for one input set (see `run_reference_many` for several)."""
    return run_reference_many(
        model,
        [inputs],
        timeout_s,
        resolvers=resolvers,
        preserve_all_tensors=preserve_all_tensors,
    )[0]


# ------------------------------------------------------------------------------------ worker


# ---- the reference on the planned interface (model/interface.py's edges) -------------------------


def interface_inputs(
    model: bytes | str | os.PathLike[str], edges: Sequence[IoEdge], seed: int, count: int
) -> list[list[np.ndarray]]:
    """`count` seeded random input sets for the planned interface: the model's own random inputs
    (random_inputs) with every int8 edge drawn over the whole int8 range instead."""
    sets = [list(s) for s in random_inputs(model, seed, count)]
    changed = [e for e in edges if e.role == "input"]
    if changed:
        rng = np.random.default_rng([seed, 8])
        for arrays in sets:
            for e in changed:
                arrays[e.position] = rng.integers(-128, 127, e.shape, endpoint=True).astype(np.int8)
    return sets


def reference_io(
    model: bytes | str | os.PathLike[str],
    edges: Sequence[IoEdge],
    input_sets: Sequence[Sequence[np.ndarray]],
    *,
    preserve_all_tensors: bool = False,
) -> tuple[list[Any], list[list[np.ndarray]]]:
    """TFLite's reference run on the model's own inputs for `input_sets` (of the planned interface):
    (the ReferenceResults, per set the expected outputs of the planned interface, the int8 tensors
    the removed DEQUANTIZEs read in place of their float outputs). With `preserve_all_tensors` (always
    where an edge changed) the results hold every tensor's value, for `step_checks`.

    Raises TinyschedError if the reference's QUANTIZE does not give back an int8 input exactly."""
    if not edges:
        results = run_reference_many(model, input_sets, preserve_all_tensors=preserve_all_tensors)
        return results, [list(r.outputs) for r in results]
    floats = [model_inputs(edges, s) for s in input_sets]
    results = run_reference_many(model, floats, preserve_all_tensors=True)
    expected = []
    for n, (ours, result) in enumerate(zip(input_sets, results, strict=True)):
        values = result.tensors or {}
        outputs = list(result.outputs)
        for e in edges:
            if e.tensor not in values:
                raise TinyschedError(f"the reference kept no value of tensor {e.tensor} ({quoted(e.name)})")
            got = np.asarray(values[e.tensor])
            if e.is_uint8 and got.dtype == np.uint8:  # a uint8 model's edge given as int8
                got = (got.astype(np.int16) - 128).astype(np.int8)
            if e.role == "output":
                outputs[e.position] = got
                continue
            want = np.asarray(ours[e.position])
            if got.dtype != np.int8 or got.shape != want.shape or not np.array_equal(got, want):
                raise TinyschedError(
                    f"input set {n}: TFLite's QUANTIZE (model operator {e.model_op}) does not map the "
                    f"float input back to the int8 values given for input {e.position}"
                )
        expected.append(outputs)
    return results, expected


def step_tensors(steps: Sequence[dict[str, Any]]) -> list[tuple[str, int] | tuple[str, int, str] | None]:
    """Per step of a build record (`steps`: `output_tensor`, `output_bytes`, `output_dtype`), the tensor
    TS_STEP_DONE reports: its name, bytes and type where the record gives it (None: no named output),
    as `step_checks` takes them."""
    return [
        (s["output_tensor"], int(s["output_bytes"]), *([s["output_dtype"]] if s.get("output_dtype") else []))
        if s.get("output_tensor")
        else None
        for s in steps
    ]


def step_checks(
    result: ReferenceResult, outputs: Sequence[tuple[str, int] | tuple[str, int, str] | None]
) -> list[tuple[int, int] | None]:
    """TFLite's (bytes, CRC-32 as zlib's) of the tensor each step's first output is, from a run with
    preserve_all_tensors: `outputs` gives per step its tensor's name and bytes (None: no output),
    and maybe its type: a legacy uint8 model's tensor computed as int8 (tinysched.model.uint8) is
    TFLite's uint8 bytes xor 0x80. A step gets None where the model has no one tensor of that name
    and size with a value."""
    by_name: dict[str, list[int]] = {}
    for detail in result.tensor_details:
        by_name.setdefault(str(detail["name"]), []).append(int(detail["index"]))
    values = result.tensors or {}
    checks: list[tuple[int, int] | None] = []
    for out in outputs:
        found = by_name.get(out[0], []) if out is not None else []
        value = values.get(found[0]) if len(found) == 1 else None
        if out is None or value is None or np.asarray(value).nbytes != out[1]:
            checks.append(None)
            continue
        array = np.ascontiguousarray(value)
        if len(out) > 2 and out[2] == "int8" and array.dtype == np.uint8:
            array = array ^ np.uint8(0x80)
        data = array.tobytes()
        checks.append((len(data), zlib.crc32(data)))
    return checks


def _worker(workdir: Path, resolver: str, preserve_all_tensors: bool) -> dict[str, Any]:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    interpreter = Interpreter(
        model_path=str(workdir / "model.tflite"),
        num_threads=1,
        experimental_op_resolver_type=OpResolverType[resolver],
        experimental_preserve_all_tensors=preserve_all_tensors,
    )
    interpreter.allocate_tensors()
    input_details = interpreter.get_input_details()
    output_details = interpreter.get_output_details()
    all_outputs: list[list[np.ndarray]] = []
    all_tensors: list[dict[int, np.ndarray] | None] = []
    with np.load(workdir / "inputs.npz", allow_pickle=False) as npz:
        for n in range(int(npz["n_sets"])):
            for k, detail in enumerate(input_details):
                interpreter.set_tensor(detail["index"], npz[f"s{n}_i{k}"])
            interpreter.invoke()
            all_outputs.append([interpreter.get_tensor(d["index"]) for d in output_details])
            tensors = None
            if preserve_all_tensors:
                tensors = {}
                for detail in interpreter.get_tensor_details():
                    with contextlib.suppress(ValueError):  # tensors without data, e.g. unallocated
                        tensors[detail["index"]] = interpreter.get_tensor(detail["index"])
            all_tensors.append(tensors)
    return {
        "outputs": all_outputs,
        "tensors": all_tensors,
        "tensor_details": interpreter.get_tensor_details(),
    }


def _worker_main(argv: Sequence[str]) -> int:
    if len(argv) < 3 or argv[0] != "--worker":
        print(
            "usage: python -m tinysched.device.reference --worker DIR RESOLVER [--preserve-all-tensors]",
            file=sys.stderr,
        )
        return 2
    workdir, resolver = Path(argv[1]), argv[2]
    try:
        result = _worker(workdir, resolver, "--preserve-all-tensors" in argv[3:])
    except Exception as exc:  # report Python-level failures as one line for the parent
        (workdir / "error.txt").write_text(_one_line(f"{type(exc).__name__}: {exc}"), encoding="utf-8")
        return _WORKER_ERROR_EXIT
    with (workdir / "result.pkl").open("wb") as f:
        pickle.dump(result, f, protocol=pickle.HIGHEST_PROTOCOL)
    return 0


if __name__ == "__main__":
    sys.exit(_worker_main(sys.argv[1:]))
