"""The pipeline's stages chained the way most tests need them: a model file in, generated code,
a host build or a verification out. Each helper is a few calls of the public stage APIs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tinysched.build.sources import SourceSet, write_sources
from tinysched.commands.build import BuildResult, build_model, step_record
from tinysched.device import reference
from tinysched.device.verify import VerifyResult, verify
from tinysched.model.graph import Graph, Operator
from tinysched.model.modelgen import ModelBuilder
from tinysched.model.reader import parse_model, read_model
from tinysched.order.recompute import RecomputeRequest
from tinysched.pipeline import Planned, PlanOptions, generate, plan


def options(
    alignment: int = 16,
    time_limit: float = 6.0,
    recompute: RecomputeRequest | None = None,
    memory_model: str = PlanOptions.memory_model,
    stream_mac_budget: float | None = None,
    core: str = PlanOptions.core,
) -> PlanOptions:
    return PlanOptions(
        alignment=alignment,
        time_limit=time_limit,
        recompute=recompute,
        memory_model=memory_model,
        stream_mac_budget=stream_mac_budget,
        core=core,
    )


def planned_model(model: str | Path | Graph, **kw: Any) -> Planned:
    graph = model if isinstance(model, Graph) else read_model(model)
    return plan(graph, options(**kw))


def generate_module(
    model: str | Path | Graph, prefix: str | None = None, **kw: Any
) -> tuple[Any, Any, Any, Any]:
    """(graph as placed, schedule or RecomputePlan, arena plan, module), as the build generates them."""
    planned = planned_model(model, **kw)
    sched = planned.recompute if planned.recompute is not None else planned.schedule
    return planned.graph, sched, planned.arena, generate(planned, prefix)


def plan_for_codegen(graph: Graph, **kw: Any) -> tuple[Graph, Any, Any]:
    graph_, sched, arena, _ = generate_module(graph, **kw)
    return graph_, sched, arena


def host_verify(
    model: str | Path,
    *,
    n_inputs: int = 10,
    seed: int = 0,
    input_files: tuple[str | Path, ...] = (),
    opt: str = "-O2",
    sanitize: bool = False,
    **kw: Any,
) -> VerifyResult:
    planned = planned_model(model, **kw)
    return verify(
        model,
        planned,
        generate(planned),
        n_inputs=n_inputs,
        seed=seed,
        input_files=input_files,
        opt=opt,
        sanitize=sanitize,
    )


def host_build(
    model: str | Path,
    out_dir: str | Path,
    *,
    opt: str = "-O2",
    compile: bool = True,
    sanitize: bool = False,
    report: bool = False,
    prefix: str | None = None,
    force: bool = False,
    **plan_flags: Any,
) -> BuildResult:
    """`tinysched build MODEL -o DIR` for the host; `plan_flags` as the CLI's (alignment, time_limit,
    recompute=K); without the report's comparisons unless `report`."""
    from tinysched.build import BuildOptions
    from tinysched.report import CompareOptions

    return build_model(
        model,
        out_dir,
        "host",
        options=options(**plan_flags),
        build=BuildOptions(prefix=prefix, compile=compile, opt=opt, sanitize=sanitize),
        comparisons=CompareOptions() if report else CompareOptions(stock_tflm=False, recompute_ks=()),
        report=report,
        force=force,
    )


@dataclass(frozen=True)
class MeasureInputs:
    """A model's generated sources plus seeded inputs and TFLite's reference outputs for them."""

    sources: SourceSet
    inputs: list[list[bytes]]
    expected: list[list[bytes]]
    arena_bytes_planned: int
    arena_high_water_planned: int
    recompute: Any
    # per input set, per step: TFLite's (bytes, CRC-32) of the step's first output (measure_sources)
    expected_steps: list[list[tuple[int, int] | None]] | None = None


def generate_for_measure(
    model: Path,
    out_dir: Path,
    n_inputs: int,
    seed: int = 0,
    recompute: RecomputeRequest | None = None,
    memory_model: str = PlanOptions.memory_model,
    stream_mac_budget: float | None = None,
    core: str = PlanOptions.core,
) -> MeasureInputs:
    """The sources generated for `core` (the Helium tables are a Helium core's only), inputs,
    TFLite's outputs and step checks, the planned arena."""
    planned = planned_model(
        model, recompute=recompute, memory_model=memory_model, stream_mac_budget=stream_mac_budget, core=core
    )
    sources = write_sources(generate(planned), Path(out_dir))
    input_sets = [list(s) for s in reference.random_inputs(model, seed, n_inputs)]
    results = reference.run_reference_many(model, input_sets, preserve_all_tensors=True)
    steps = reference.step_tensors([step_record(planned, v) for v in planned.run_order])
    return MeasureInputs(
        sources,
        [[a.tobytes() for a in s] for s in input_sets],
        [[a.tobytes() for a in r.outputs] for r in results],
        planned.arena.arena_bytes,
        planned.arena.high_water_bytes,
        planned.recompute,
        [reference.step_checks(r, steps) for r in results],
    )


def metadata_for_model(
    model: str | Path,
    board: str,
    *,
    build_firmware: bool | None = None,
    stock_tflm: bool = True,
    recompute_ks: tuple[int, ...] | None = (0, 1, 2),
    recompute_time_limit: float = 1.0,
    measured: str | Path | None = None,
) -> dict[str, Any]:
    """What `tinysched report MODEL --board B` puts in its document."""
    import argparse

    from tinysched.commands.report import metadata_for_model as command_metadata

    args = argparse.Namespace(
        no_build=build_firmware is False,
        tflm=stock_tflm,
        recompute_tradeoff=bool(recompute_ks),
        recompute_time_limit=recompute_time_limit,
        measured=measured,
    )
    return command_metadata(model, board, args)


def graph_metadata(
    graph: Graph,
    board: Any,
    *,
    recompute_ks: tuple[int, ...] = (),
    recompute: RecomputeRequest | None = None,
) -> dict[str, Any]:
    """The document for an in-memory graph (no model file: no stock TFLM, no firmware)."""
    from tinysched.report import CompareOptions, collect_metadata, run_comparisons

    planned = plan(graph, options(recompute=recompute))
    module = generate(planned) if planned.codegen_note is None else None
    comparisons = run_comparisons(planned, None, CompareOptions(stock_tflm=False, recompute_ks=recompute_ks))
    return collect_metadata(
        planned,
        board=board,
        kernels=dict(module.op_kernels) if module is not None else None,
        comparisons=comparisons,
    )


def measured_equal_on_qemu(gen: MeasureInputs, work: Path, board: str = "mps2-an500") -> Any:
    """Run generated sources on a QEMU board and require what every refined-model test requires:
    outputs bit-identical to TFLite and the painted arena high-water equal to the plan."""
    from tinysched.device.runner import measure_sources

    result = measure_sources(
        gen.sources, board, gen.inputs, gen.expected, gen.arena_bytes_planned, work,
        arena_high_water_planned=gen.arena_high_water_planned,
        expected_steps=gen.expected_steps,
    )  # fmt: skip
    assert result.outputs_match is True, result.mismatches
    assert result.arena_bytes_measured == gen.arena_high_water_planned
    assert result.ok
    return result


def streamed_input_on_qemu(path: Path, planned: Planned, work: Path) -> Any:
    """A plan of `path` with its input streamed, generated and run on QEMU's mps2-an500 on two seeded
    inputs, the harness feeding the rows from its own buffer: outputs bit-identical to TFLite and the
    painted high-water the plan's (the result, for what else a test asserts)."""
    from tinysched.device.runner import measure_sources

    sources = write_sources(generate(planned), work / "gen")
    sets = [list(s) for s in reference.random_inputs(path, 4, 2)]
    expected = [[a.tobytes() for a in r.outputs] for r in reference.run_reference_many(path, sets)]
    result = measure_sources(
        sources, "mps2-an500", [[a.tobytes() for a in s] for s in sets], expected, planned.arena.arena_bytes,
        work / "qemu", arena_high_water_planned=planned.arena.high_water_bytes,
    )  # fmt: skip
    assert result.hello["streamed_input"] is True
    assert result.outputs_match is True and result.ok, result.mismatches
    assert result.arena_bytes_measured == planned.arena.high_water_bytes
    return result


def planned_c_text(planned: Planned) -> str:
    """The model's generated C file for `planned` (the kernels' files left out)."""
    return next(text for name, text in generate(planned).files.items() if name.endswith(".c"))


def model_c_text(gen: MeasureInputs) -> str:
    """The generated model's own C (the kernels' files left out)."""
    return "".join(p.read_text() for p in gen.sources.c_files if not p.name.startswith("ts_"))


def model_bytes(build: Any, seed: int = 0, order_seed: int | None = None) -> bytes:
    """A generated model: `build(builder)` adds its tensors and operators (ModelBuilder(seed)); with
    `order_seed` the file stores them in a random topological order."""
    b = ModelBuilder(seed=seed)
    build(b)
    return b.build(None if order_seed is None else b.random_order(order_seed))


def built_graph(build: Any, seed: int = 0, order_seed: int | None = None) -> Graph:
    return parse_model(model_bytes(build, seed, order_seed))


def saved_model(path: Path, build: Any, seed: int = 0, order_seed: int | None = None) -> Path:
    """`model_bytes` written to `path` (the tests that run the CLI, TFLite or a board read a file)."""
    path.write_bytes(model_bytes(build, seed, order_seed))
    return path


def first_op(graph: Graph, opcode: str) -> Operator:
    return next(op for op in graph.operators if op.opcode == opcode)


def residual_blocks(b: ModelBuilder, x: Any) -> Any:
    """resnet8 in small on `x`: a head conv, a residual block (its input on the skip path), a
    downsampling block (3x3 stride 2 -> 3x3 on the main path, a 1x1 stride-2 projection on the skip
    path); the last ADD's output. The streamed-stage tests' model (test_stream, test_member_counts)."""
    h = b.conv2d(x, 8, (3, 3), activation="RELU", name="head")  # read by main1 and sum
    t = b.conv2d(h, 8, (3, 3), activation="RELU", name="main1")
    t = b.conv2d(t, 8, (3, 3), name="main2")
    s = b.add(h, t, activation="RELU", name="sum")  # read by down1 and project
    d = b.conv2d(s, 16, (3, 3), stride=(2, 2), activation="RELU", name="down1")
    d = b.conv2d(d, 16, (3, 3), name="down2")
    p = b.conv2d(s, 16, (1, 1), stride=(2, 2), name="project")
    return b.add(p, d, activation="RELU", name="sum2")
