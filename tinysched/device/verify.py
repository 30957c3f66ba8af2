"""`tinysched verify`: the generated C on the host, every output byte against TFLite's reference.

Seeded random inputs (and any given input files) run through the host runner in one process and
through TFLite's reference kernels (`tinysched.device.reference`, in a child process); every output byte
is compared.

When only the optimised kernels can run a model (BUILTIN_REF aborts or lacks an operator version that
`reference.reference_copy` cannot lower), they are no ground truth: they round differently from the
reference (e.g. CONV_2D by one step, DEQUANTIZE in the last float bits), so the result also gives, per output,
the largest difference in quantisation steps (`step_differences`). `compare_intermediates` runs two
of tinysched / BUILTIN_REF / the optimised kernels with every intermediate tensor kept and names the
first operator, in the model's order, whose output differs.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from tinysched.build.host import compile_runner, load_input_file, run_runner, write_runner
from tinysched.build.sources import write_sources
from tinysched.device import reference
from tinysched.device.reference import interface_inputs, reference_io
from tinysched.errors import TinyschedError
from tinysched.model.graph import Graph
from tinysched.model.interface import DEFAULT_IO


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
    version_lowering: str | None = None  # operator versions BUILTIN_REF ran lowered (reference_copy)
    # Per output, against a resolver other than BUILTIN_REF: largest difference in quantisation steps.
    step_differences: list[dict[str, Any]] | None = None
    io: dict[str, Any] | None = None  # the interface's mode and changed edges (Interface.as_json)

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
        if self.version_lowering is not None:
            payload["version_lowering"] = self.version_lowering
        if self.step_differences is not None:
            payload["step_differences"] = self.step_differences
        if self.io is not None:
            payload["io"] = self.io
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
    # the inputs of the generated API (int8 where --io int8 changed an edge); the reference runs on
    # the model's own, and its expected outputs are read where the planned graph's outputs are
    edges = planned.interface.edges
    input_sets = interface_inputs(model, edges, seed, n_inputs) if n_inputs else []
    input_sets += [load_input_file(p, module) for p in input_files]
    if not input_sets:
        raise TinyschedError("nothing to verify: --inputs 0 and no input files")
    graph = planned.graph
    with tempfile.TemporaryDirectory(prefix="tinysched-verify-") as tmp:
        sources = write_sources(module, Path(tmp) / "build")
        write_runner(module, sources, str(model), graph.sha256)
        runner = compile_runner(sources, opt=opt, sanitize=sanitize)
        ours = run_runner(runner, module, input_sets)
    results, theirs = reference_io(model, edges, input_sets)
    names = [graph.tensors[t].name for t in graph.outputs]
    mismatches = compare_outputs(ours, theirs, names)
    steps = None
    if results[0].resolver != "BUILTIN_REF":
        steps = step_differences(ours, theirs, graph, list(graph.outputs))
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
        version_lowering=results[0].version_lowering,
        step_differences=steps,
        io=planned.interface.as_json(),
    )


# ---- differences in quantisation steps -----------------------------------------------------------

# Operators that move elements without changing them: a float output reached through them from a
# DEQUANTIZE has that DEQUANTIZE's input scale as its step.
_MOVES = frozenset(
    {
        "RESHAPE", "SQUEEZE", "EXPAND_DIMS", "TILE", "PACK", "UNPACK", "STRIDED_SLICE", "SLICE",
        "CONCATENATION", "GATHER", "TRANSPOSE", "SPLIT", "SPLIT_V",
    }
)  # fmt: skip


def quantisation_step(graph: Graph, tensor: int) -> float | None:
    """One quantisation step of `tensor` in its stored units: 1 for an integer tensor (a difference
    of its values is already in steps), and for float32 the scale of the DEQUANTIZE its elements
    come from through element moves; None when not determined (float arithmetic on the way, or
    sources with different steps)."""
    t = graph.tensors[tensor]
    if t.dtype != "float32":
        return 1.0 if np.dtype(t.dtype).kind in "iub" else None
    producer = graph.producer.get(tensor)
    if producer is None:
        return None
    op = graph.operators[producer]
    if op.opcode == "DEQUANTIZE":
        q = graph.tensors[op.inputs[0]].quantization
        return float(min(q.scale)) if q is not None and q.scale else None
    if op.opcode not in _MOVES:
        return None
    sources = [t for t in op.input_tensors if graph.tensors[t].dtype == "float32"]
    steps = [quantisation_step(graph, t) for t in sources]
    # Sources of different steps (a PACK of boxes and scores): no one step for the whole tensor.
    return steps[0] if steps and len(set(steps)) == 1 else None


def step_differences(
    ours: Sequence[Sequence[np.ndarray]],
    theirs: Sequence[Sequence[np.ndarray]],
    graph: Graph,
    tensors: Sequence[int],
) -> list[dict[str, Any]]:
    """Per output tensor (in `tensors` order): its step, and the largest |ours - theirs| over all input
    sets, absolute and in steps."""
    rows = []
    for k, t in enumerate(tensors):
        worst = 0.0
        for a_set, b_set in zip(ours, theirs, strict=True):
            a, b = np.asarray(a_set[k], dtype=np.float64), np.asarray(b_set[k], dtype=np.float64)
            if a.shape == b.shape and a.size:
                worst = max(worst, float(np.max(np.abs(a - b))))
        step = quantisation_step(graph, t)
        rows.append(
            {
                "output": k,
                "name": graph.tensors[t].name,
                "step": step,
                "max_abs_diff": worst,
                "max_steps": None if step is None else round(worst / step, 6),
            }
        )
    return rows


# ---- every intermediate tensor, compared -----------------------------------------------------------

SOURCES = ("tinysched", "BUILTIN_REF", "BUILTIN_WITHOUT_DEFAULT_DELEGATES")


@dataclass(frozen=True)
class TensorDifference:
    """One operator output that differs between the two sources (over all input sets)."""

    operator: int  # index in the model's stored order, which the interpreter runs
    opcode: str
    tensor: int
    name: str
    differing: int  # elements, summed over the input sets
    elements: int
    max_abs_diff: float
    step: float | None
    max_steps: float | None

    def as_json(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass(frozen=True)
class IntermediateComparison:
    """Two sources' values of every operator output of a model, on the same input sets."""

    model: str
    sources: tuple[str, str]
    inputs: int
    compared: int  # operator outputs both sources produced
    differences: tuple[TensorDifference, ...]  # in the model's operator order
    notes: tuple[str, ...] = ()

    @property
    def first(self) -> TensorDifference | None:
        """The first operator whose output differs: its inputs all agree (the order is topological)."""
        return self.differences[0] if self.differences else None

    def as_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "sources": list(self.sources),
            "inputs": self.inputs,
            "compared": self.compared,
            "first": None if self.first is None else self.first.as_json(),
            "differences": [d.as_json() for d in self.differences],
            "notes": list(self.notes),
        }


def with_every_tensor_as_output(model_bytes: bytes, tensors: Sequence[int]) -> bytes:
    """A copy of the model whose subgraph 0 also outputs `tensors` (after its own outputs)."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    model = schema.ModelT.InitFromObj(schema.Model.GetRootAs(model_bytes, 0))
    subgraph = model.subgraphs[0]
    outputs = [int(t) for t in subgraph.outputs]
    subgraph.outputs = outputs + [t for t in tensors if t not in outputs]
    builder = flatbuffers.Builder(len(model_bytes) + 1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def _computed_tensors(graph: Graph) -> list[int]:
    """Operator outputs computed at run time (not folded from constants), in operator order."""
    constant = {t.index for t in graph.tensors if t.is_constant}
    found = []
    for op in graph.operators:
        if all(t in constant for t in op.input_tensors):
            constant.update(t for t in op.outputs if t >= 0)
            continue
        found += [t for t in op.outputs if t >= 0 and not graph.tensors[t].is_variable]
    return found


def _tinysched_tensors(
    data: bytes, graph: Graph, input_sets: list[list[np.ndarray]], opt: str, options: Any
) -> list[dict[int, np.ndarray]]:
    """Every computed operator output of the generated C, per input set (a copy of the model with
    all of them as outputs is planned, generated and run: other order and arena, same arithmetic)."""
    from tinysched.model.reader import parse_model
    from tinysched.pipeline import DEFAULT_PLAN_OPTIONS, generate, plan

    tensors = _computed_tensors(graph)
    copy = with_every_tensor_as_output(data, tensors)
    copy_graph = parse_model(copy, "<model with every tensor as an output>")
    # the model's own interface: the input sets and every intermediate are the model's
    planned = plan(copy_graph, replace(options or DEFAULT_PLAN_OPTIONS, io=DEFAULT_IO))
    module = generate(planned)
    order = list(copy_graph.outputs)
    if len(planned.graph.outputs) != len(order):
        raise TinyschedError("planning changed the number of outputs of the copy with every tensor as output")
    with tempfile.TemporaryDirectory(prefix="tinysched-intermediates-") as tmp:
        sources = write_sources(module, Path(tmp) / "build")
        write_runner(module, sources, "intermediates", copy_graph.sha256)
        runner = compile_runner(sources, opt=opt)
        runs = run_runner(runner, module, input_sets)
    return [dict(zip(order, run, strict=True)) for run in runs]


def compare_intermediates(
    model: str | Path | bytes,
    sources: tuple[str, str] = ("tinysched", "BUILTIN_REF"),
    *,
    n_inputs: int = 3,
    seed: int = 0,
    opt: str = "-O2",
    options: Any = None,
) -> IntermediateComparison:
    """Run `model` through both `sources` (two of SOURCES) with every intermediate tensor kept and
    compare each operator's outputs, in the model's order."""
    if len(sources) != 2 or any(s not in SOURCES for s in sources):
        raise TinyschedError(f"compare two of {', '.join(SOURCES)}, not {list(sources)}")
    from tinysched.model.reader import parse_model

    data = model if isinstance(model, bytes) else Path(model).read_bytes()
    shown = "<bytes>" if isinstance(model, bytes) else str(model)
    graph = parse_model(data, shown)
    input_sets = [list(s) for s in reference.random_inputs(data, seed, n_inputs)]
    values: list[list[dict[int, np.ndarray]]] = []
    notes: list[str] = []
    for source in sources:
        if source == "tinysched":
            values.append(_tinysched_tensors(data, graph, input_sets, opt, options))
            continue
        results = reference.run_reference_many(
            data, input_sets, resolvers=[source], preserve_all_tensors=True
        )
        if results[0].version_lowering:
            notes.append(results[0].version_lowering)
        values.append([r.tensors or {} for r in results])
    differences = []
    compared = 0
    for op in graph.operators:
        for t in op.outputs:
            if t < 0 or any(t not in v for side in values for v in side):
                continue
            compared += 1
            differing = elements = 0
            worst = 0.0
            for a_set, b_set in zip(*values, strict=True):
                a, b = np.asarray(a_set[t]), np.asarray(b_set[t])
                if a.shape != b.shape or a.dtype != b.dtype:
                    raise TinyschedError(
                        f"tensor {t} is {a.dtype}{list(a.shape)} from {sources[0]}, "
                        f"{b.dtype}{list(b.shape)} from {sources[1]}"
                    )
                diff = np.abs(a.astype(np.float64) - b.astype(np.float64)).reshape(-1)
                same_bytes = np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()
                differing += 0 if same_bytes else max(int((diff > 0).sum()), 1)  # NaN bytes differ too
                elements += diff.size
                worst = max(worst, float(np.nanmax(diff)) if diff.size else 0.0)
            if differing:
                step = quantisation_step(graph, t)
                differences.append(
                    TensorDifference(
                        operator=op.index,
                        opcode=op.opcode,
                        tensor=t,
                        name=graph.tensors[t].name,
                        differing=differing,
                        elements=elements,
                        max_abs_diff=worst,
                        step=step,
                        max_steps=None if step is None else round(worst / step, 6),
                    )
                )
    return IntermediateComparison(
        model=shown,
        sources=(sources[0], sources[1]),
        inputs=len(input_sets),
        compared=compared,
        differences=tuple(differences),
        notes=tuple(notes),
    )
