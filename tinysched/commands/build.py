"""`build` and `verify`: plan, generate, compile; for verify also run and compare with TFLite.

`build` is the pipeline end to end, each stage a call on the record of the stage before:
read -> pipeline.plan -> pipeline.generate -> build.build_host / build.build_board -> report
metadata (+ the comparisons it shows) -> one output folder, swapped in only when all succeeded.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tinysched.arena.cost import operator_estimate, step_features
from tinysched.arena.pools import certificate as pool_certificate
from tinysched.boards import Board, get_board
from tinysched.build import DEFAULT_BUILD_OPTIONS, BuildOptions, build_board, build_host, module_stack_bytes
from tinysched.build.firmware import FirmwareImage, firmware_metadata, toolchain_version
from tinysched.build.sources import write_sources
from tinysched.build.stack import stack_reservation
from tinysched.commands.common import (
    StageClock,
    add_output_arguments,
    certificate_line,
    format_bytes,
    print_json,
    read_bytes,
    read_checked_model,
    shown,
)
from tinysched.errors import EXIT_DOES_NOT_FIT, TinyschedError
from tinysched.files import output_folder
from tinysched.memory.stream import operator_type, stream_of
from tinysched.model.graph import Graph, Operator
from tinysched.order.recompute import macs, summary_lines, total_macs
from tinysched.pipeline import (
    DEFAULT_PLAN_OPTIONS,
    Planned,
    PlanOptions,
    add_plan_arguments,
    generate,
    options_from_args,
    plan,
)
from tinysched.report import (
    NO_COMPARISONS,
    CompareOptions,
    collect_metadata,
    run_comparisons,
    write_beside_firmware,
)
from tinysched.report.compare import DEFAULT_RECOMPUTE_KS, DEFAULT_RECOMPUTE_TIME_LIMIT
from tinysched.report.format import doc_headline
from tinysched.text import printable


def add_compare_arguments(parser: Any) -> None:
    """The comparisons the report shows and that cost time: each can be switched off."""
    parser.add_argument(
        "--tflm",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run stock TFLM (tflite-micro, when installed) for its arena, shown in the report (default on)",
    )
    parser.add_argument(
        "--recompute-tradeoff",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="search the recomputation trade-off for k = 0, 1, 2 for the report (default on)",
    )
    parser.add_argument(
        "--recompute-time-limit",
        type=float,
        metavar="S",
        help=f"seconds per k for the trade-off (default {DEFAULT_RECOMPUTE_TIME_LIMIT:g})",
    )


def compare_options_from_args(args: Any) -> CompareOptions:
    limit = getattr(args, "recompute_time_limit", None)
    if limit is None:
        limit = DEFAULT_RECOMPUTE_TIME_LIMIT
    elif not 0 <= limit < float("inf"):
        raise TinyschedError("--recompute-time-limit must be a non-negative number of seconds")
    return CompareOptions(
        stock_tflm=getattr(args, "tflm", True),
        recompute_ks=DEFAULT_RECOMPUTE_KS if getattr(args, "recompute_tradeoff", True) else (),
        recompute_time_limit=limit,
    )


def add_stack_argument(parser: Any) -> None:
    parser.add_argument(
        "--stack",
        type=int,
        metavar="BYTES",
        help="firmware stack reservation (default: the stack measured for the model's kernels, "
        "targets/kernel_stack.yaml, + 25%% + 256 B, else the board's; `measure` reports the measured maximum)",
    )


def kernels_of(module: Any) -> dict[int, str]:
    """The C kernel each operator of the planned graph calls (from the generated module)."""
    return dict(module.op_kernels)


@dataclass(frozen=True)
class BuildResult:
    """What `build` wrote into `directory`."""

    directory: Path
    planned: Planned
    module: Any  # codegen.GeneratedModule
    board: Board | None
    image: FirmwareImage | None  # firmware builds
    runner: Path | None  # host builds, compiled
    metadata: Path
    record: dict[str, Any]
    stage_seconds: dict[str, float]


def build_options_from_args(args: Any) -> BuildOptions:
    return BuildOptions(
        prefix=getattr(args, "prefix", None),
        compile=not getattr(args, "no_compile", False),
        opt=getattr(args, "opt", "-O2"),
        sanitize=getattr(args, "sanitize", False),
        stack_bytes=getattr(args, "stack", None),
    )


def build_model(
    model: str | Path,
    out_dir: str | Path,
    board: str = "host",
    *,
    options: PlanOptions = DEFAULT_PLAN_OPTIONS,
    build: BuildOptions = DEFAULT_BUILD_OPTIONS,
    comparisons: CompareOptions = NO_COMPARISONS,
    report: bool = True,
    force: bool = False,
    verbose: bool = False,
) -> BuildResult:
    """The `build` verb as a function: plan with `options`, build with `build`, run `comparisons`
    for the report (rendered unless `report` is off; the metadata is always written)."""
    target_board = None if board == "host" else get_board(board)
    prefix, compile, opt, sanitize = build.prefix, build.compile, build.opt, build.sanitize
    clock = StageClock(verbose)
    model_path = Path(model)
    model_bytes = read_bytes(model_path)
    graph = read_checked_model(model_path)
    clock.lap("read")
    planned = plan(graph, options)
    clock.lap("plan")
    clock.report(planned.stage_seconds, "plan")
    module = generate(planned, prefix)
    clock.lap("generate")
    image, runner, size = None, None, None
    stand_ins: tuple[Any, ...] = ()
    stack = None
    if target_board is not None:
        frames = module_stack_bytes(module, target_board) if compile and build.stack_bytes is None else 0
        stack = stack_reservation(target_board, module.kernels, build.stack_bytes, module_bytes=frames)
    with output_folder(out_dir, force=force, keep=[model_path]) as staging:
        if target_board is None:
            host = build_host(
                module,
                staging,
                model_name=graph.source,
                sha256=graph.sha256,
                compile=compile,
                opt=opt,
                sanitize=sanitize,
            )
            runner = host.runner
        elif compile:
            images = build_board(module, target_board, staging, stack_bytes=stack.bytes if stack else None)
            image, stand_ins = images.image, images.stand_ins
            size = image.size.to_json()
        else:
            write_sources(module, staging / "src")
        clock.lap("compile" if compile else "write sources")
        model_copy = f"{module.prefix}.tflite"
        shutil.copyfile(model_path, staging / model_copy)
        record = build_record(
            planned, module, target_board, image, model_copy, graph.sha256, stack.bytes if stack else None
        )
        if stack is not None:
            record["stack_reservation"] = stack.to_json()
        if stand_ins:
            images_json = [
                {
                    "board": emulated.board,
                    "elf": str(emulated.elf.relative_to(staging)),
                    "sha256": emulated.sha256,
                    "image_id": emulated.image_id,
                    "size_report": emulated.size.to_json(),
                }
                for emulated in stand_ins
            ]
            record["emulated_image"] = images_json[0]  # the default stand-in
            record["emulated_images"] = images_json
        facts = None
        if image is not None and target_board is not None:
            facts = firmware_metadata(image, target_board, planned.arena, toolchain_version())
        facts = {**(facts or {"kind": "host" if target_board is None else "sources"}), **record}
        comparisons_run = run_comparisons(planned, model_bytes, comparisons)
        clock.lap("compare")
        note = None
        if target_board is not None:
            note = "read from the ELF of this build" if size is not None else "firmware not built"
        doc = collect_metadata(
            planned,
            board=target_board,
            kernels=kernels_of(module),
            size=size,
            size_note=note,
            comparisons=comparisons_run,
            extra=facts,
        )
        written = write_beside_firmware(staging, module.prefix, doc, rendered=report)
        clock.lap("report" if report else "metadata")
    directory = Path(out_dir).absolute()
    if image is not None:
        image = image.moved(staging, directory)
    if runner is not None:
        runner = directory / runner.name
    return BuildResult(
        directory,
        planned,
        module,
        target_board,
        image,
        runner,
        directory / written["json"].name,
        record,
        clock.seconds,
    )


def step_record(planned: Planned, op: int) -> dict[str, Any]:
    """One step of the firmware's invoke: its operator, type, MACs (from shapes, as the planned
    graph runs it), the shapes it reads and writes, and the kernel variant the plan gave it (None:
    the type's default kernel, which picks its fast path itself; `kernel` is the cost table's name
    for it, tinysched.arena.cost.step_features)."""
    graph = planned.graph
    o = graph.operators[op]
    variant = planned.wide_variants.get(op) or planned.variants.get(op)
    return {
        "op": op,
        "model_op": planned.source_operator(op),
        "macs": macs(graph, op),
        **operator_shapes(graph, o),
        "kernel_function": variant.kernel if variant is not None else None,
        # the tensor TS_STEP_DONE reports (`measure` compares it with TFLite's of the same name)
        "output_tensor": graph.tensors[o.outputs[0]].name if o.outputs and o.outputs[0] >= 0 else None,
        "output_bytes": int(graph.tensors[o.outputs[0]].nbytes) if o.outputs and o.outputs[0] >= 0 else 0,
        "output_dtype": graph.tensors[o.outputs[0]].dtype if o.outputs and o.outputs[0] >= 0 else None,
    }


def operator_shapes(graph: Graph, o: Operator) -> dict[str, Any]:
    """An operator's type and the shapes it reads and writes (the filter's of a convolution), as a
    step's row and a streamed stage's member show them (bench_kernels checks targets by them)."""
    return {
        "type": operator_type(o),
        "input_shape": list(graph.tensors[o.inputs[0]].shape) if o.inputs and o.inputs[0] >= 0 else None,
        "filter_shape": list(graph.tensors[o.inputs[1]].shape)
        if o.opcode in ("CONV_2D", "DEPTHWISE_CONV_2D") and len(o.inputs) > 1
        else None,
        "output_shape": list(graph.tensors[o.outputs[0]].shape) if o.outputs else None,
    }


def step_entry(planned: Planned, v: int) -> dict[str, Any]:
    """A step of the build record: step_record, the cost table's features and estimate; a streamed
    stage's members with their types and shapes too (measure adds each one's count)."""
    graph = planned.graph
    entry = {
        **step_record(planned, v),
        **step_features(graph, v, planned.arena, planned.own_path_layers),
        "estimate": operator_estimate(graph, v, planned.options.core, planned.arena, planned.own_path_layers),
    }
    chain = stream_of(graph.operators[v])
    if chain is not None and "members" in entry:
        entry["members"] = [
            {**operator_shapes(graph, m), **features}
            for m, features in zip(chain.operators, entry["members"], strict=True)
        ]
    return entry


def build_record(
    planned: Planned,
    module: Any,
    board: Board | None,
    image: FirmwareImage | None,
    model_copy: str,
    sha: str,
    stack: int | None = None,
) -> dict[str, Any]:
    """The keys `measure BUILD_DIR` reads (under "build" in <prefix>_metadata.json)."""
    options = planned.options
    return {
        "prefix": module.prefix,
        "target": "host" if board is None else board.name,
        "model_file": model_copy,
        "model_sha256": sha,
        "image_sha256": image.sha256 if image is not None else None,
        "model_info_symbol": f"{module.prefix}_info",
        "macs": total_macs(planned.graph),
        # what each step of the firmware's invoke runs (measure's per-operator counts follow it)
        # (and the kernel it calls, its MACs, shapes and outputs, and its estimated instructions on
        # `plan_options.core`: what measure compares and bench_arena_budget fits the cost table to)
        "steps": [step_entry(planned, v) for v in planned.run_order],
        "instructions_estimate": planned.instructions_estimate,
        "arena_budget": planned.budget.as_json() if planned.budget is not None else None,
        "arena_bytes": int(planned.arena.arena_bytes),
        "arena_high_water_bytes": int(planned.arena.high_water_bytes),
        "arena_alignment": int(planned.arena.alignment),
        "arena_lower_bound_bytes": int(planned.arena.lower_bound_bytes),
        "arena_regions": [
            pool.as_json() for pool in planned.arena.pools
        ],  # a split arena (tinysched.arena.pools)
        "stack_reserved_bytes": None if board is None else int(stack or board.stack_bytes),
        "order_certified": bool(planned.schedule.certified),
        # the generated API's edges: `measure` feeds and compares int8 where --io int8 changed one
        "io": planned.interface.as_json(),
        "kernel_variants": planned.variants_json(),
        "streams": planned.streams_json(),
        # --stream-input: the arena both ways, and why the input stays whole when it does (None: not asked)
        "input_streaming": None if planned.input_streaming is None else planned.input_streaming.as_json(),
        "wide_kernels": planned.wide_json(),
        "time_limit_shortfalls": planned.shortfalls_json(),
        "plan_options": {
            "io": options.io,
            "prefer": options.prefer,
            "stream_input": options.stream_input,
            "memory_model": planned.memory_model,
            "alignment": options.alignment,
            "time_limit": options.time_limit,
            "arena_budget": options.arena_budget,
            "core": options.core,
            "recompute": None
            if options.recompute is None
            else {
                "k": options.recompute.k,
                "ram_budget": options.recompute.ram_budget,
                "mac_budget_percent": options.recompute.mac_budget_percent,
            },
        },
    }


def print_build(result: BuildResult) -> None:
    module, planned, board = result.module, result.planned, result.board
    graph = planned.source
    doc = json.loads(result.metadata.read_text())
    print(doc_headline(doc))
    print(f"model       {shown(graph.source)}  (sha256 {graph.sha256[:16]}...)")
    print(f"certificate {certificate_line(planned.schedule, planned.graph, planned)}")
    whole = doc["schedule"].get("tensor_model_optimum")
    if whole:
        print(
            f"            tensor-model optimum {format_bytes(whole['peak_bytes'])} "
            f"({'certified' if whole['certified'] else 'not proven'}): the least peak with whole, "
            f"separate tensors; this plan's refined peak is {format_bytes(planned.schedule.peak_bytes)}"
        )
    if planned.options.memory_model_note:
        print(f"            {planned.options.memory_model_note}")
    arena = planned.arena
    if board is None:
        print("board       host")
        print(
            f"arena       {format_bytes(arena.arena_bytes)}, aligned to {arena.alignment} (one static array)"
        )
    else:
        note = board.clock.get("note")
        clock = f"{board.cpu_hz / 1e6:.0f} MHz" + (f" ({note})" if note else "")
        stand_in = f", emulated by {board.emulated_by}" if board.emulated_by else ""
        print(f"board       {board.name}: {board.mcu}, {board.core} at {clock}{stand_in}")
        print(
            f"arena       {format_bytes(arena.arena_bytes)} allocated, high-water "
            f"{arena.high_water_bytes:,} B, aligned to {arena.alignment}"
        )
        for pool in arena.pools:  # a split arena (tinysched.arena.pools)
            print(
                f"  region    {pool.region} @ {pool.origin:#010x}: {pool.bytes:,} B of {pool.limit:,} B, "
                f"high-water {pool.high_water_bytes:,} B, {pool.tensors} tensors (speed rank {pool.speed})"
            )
        if arena.pools:
            print(f"  proof     {pool_certificate(arena)}")
        reservation = result.record.get("stack_reservation")
        if reservation:
            print(f"stack       {reservation['bytes']:,} B reserved: {reservation['basis']}")
    ram = doc["summary"].get("application_ram")
    if ram:
        print(f"app ram     {application_ram_line(ram)}")
    print(
        f"weights     {format_bytes(module.weights_bytes + module.parameter_bytes)} in flash: "
        f"{module.weights_bytes:,} B of the model's constant tensors + {module.parameter_bytes:,} B of "
        "per-operator parameters (multipliers, shifts, lookup tables)"
    )
    if result.image is not None:
        size = result.image.size
        structs = size.flash_weights - module.weights_bytes - module.parameter_bytes
        print(
            f"            the ELF's {size.flash_weights:,} B of weights also hold {structs:,} B of per-operator "
            "parameter structs (laid out by the compiler)"
        )
    print(f"kernels     {', '.join(module.kernels)}")
    if planned.memory_model != "tensor":
        print(f"            {planned.variants_summary()}")
    if planned.streams_summary() is not None:
        print(f"streamed    {planned.streams_summary()}")
    if planned.budget is not None:
        print(f"budget      {planned.budget.summary()}")
    if planned.input_streaming is not None:
        print(f"input       {planned.input_streaming.summary()}")
    if planned.shortfalls_summary() is not None:
        print(f"time limit  {planned.shortfalls_summary()}")
    if planned.options.io != "model" or planned.interface.retyping is not None:
        print(f"io          {planned.interface.summary()}")
        for edge in planned.interface.edges:
            print(f"            {edge.line()}")
    if planned.folding.count:
        print(f"folding     {planned.folding.summary()}: no code, no arena; the plan is for the folded graph")
    if planned.recompute is not None:
        print("\n".join(summary_lines(planned.recompute, format_bytes)))
    if result.image is not None:
        print()
        print("\n".join(result.image.size.lines()))
        print()
        files = [result.image.elf, result.image.bin, result.image.hex, result.image.map]
        print(f"wrote       {shown(result.directory)}/ ({', '.join(p.name for p in files if p)}, src/)")
    else:
        print(
            f"wrote       {shown(result.directory)}/ ({', '.join(sorted(module.files))}, runner.c, Makefile)"
        )
    if result.runner is not None:
        print(f"runner      {shown(result.runner)}  (run INPUTS OUTPUTS COUNT | bench INPUTS N)")
    print(f"metadata    {shown(result.metadata)}  (and the report beside it)")


def application_ram_line(ram: dict[str, Any]) -> str:
    """The RAM an application pays for the model both ways (summary.application_ram), one line."""
    stack = ram["invoke_stack_bytes"]
    return (
        f"{ram['zero_copy_bytes']:,} B in place (arena + state), {ram['copying_bytes']:,} B with the copying "
        f"invoke (+ {ram['input_bytes'] + ram['output_bytes']:,} B input and output buffers); stack of one "
        f"invoke {f'{stack:,} B' if stack is not None else 'not measured'}"
    )


def estimated_fit(result: BuildResult) -> dict[str, Any] | None:
    """Without an ELF (`--no-compile`): what is known to land in each region."""
    if result.board is None or result.image is not None:
        return None
    return json.loads(result.metadata.read_text()).get("fit")


def cmd_build(args: argparse.Namespace) -> int:
    result = build_model(
        args.model,
        args.output,
        args.board,
        options=options_from_args(args),
        build=build_options_from_args(args),
        comparisons=NO_COMPARISONS if args.no_report else compare_options_from_args(args),
        report=not args.no_report,
        force=args.force,
        verbose=args.verbose,
    )
    print_build(result)
    fit = estimated_fit(result)
    if fit is not None and fit["verdict"] == "does-not-fit":
        print(f"tinysched: {fit['text']} (estimate without code: weights, arena and stack)", file=sys.stderr)
        return EXIT_DOES_NOT_FIT
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from tinysched.device.verify import verify

    if args.board != "host":
        raise TinyschedError(f"board {args.board!r} is not supported by verify; supported: host")
    planned = plan(read_checked_model(args.model), options_from_args(args))
    module = generate(planned)
    result = verify(
        args.model,
        planned,
        module,
        n_inputs=args.inputs,
        seed=args.seed,
        input_files=args.input_file or (),
        opt=args.opt,
        sanitize=args.sanitize,
    )
    intermediates = None
    if args.intermediates:
        from tinysched.device.verify import compare_intermediates

        intermediates = compare_intermediates(
            args.model, ("tinysched", result.reference), seed=args.seed, opt=args.opt, options=planned.options
        )
    if args.json:
        payload = result.as_json()
        payload["memory_model"] = planned.memory_model
        payload["memory_model_note"] = planned.options.memory_model_note
        if intermediates is not None:
            payload["intermediates"] = intermediates.as_json()
        print_json(payload)
        return 0 if result.outputs_match else 1
    verdict = (
        "all outputs bit-exact" if result.outputs_match else f"{len(result.mismatches)} output(s) differ"
    )
    print(f"model       {shown(result.model)}")
    print(
        f"reference   {result.reference}"
        + (f" (fallback: {result.fallback_reason})" if result.fallback_reason else "")
    )
    if result.version_lowering:
        print(f"            {result.version_lowering}")
    print(f"inputs      {result.inputs} set(s), seed {args.seed}" + (", ASan+UBSan" if args.sanitize else ""))
    note = planned.options.memory_model_note
    print(
        f"arena       {format_bytes(result.arena_bytes)} ({planned.memory_model} memory model"
        + (f"; {note})" if note else ")")
    )
    if planned.options.io != "model" or planned.interface.retyping is not None:
        print(f"io          {planned.interface.summary()}")
    if result.recompute is not None:
        print("\n".join(summary_lines(result.recompute, format_bytes)))
    print(f"result      {verdict}")
    for m in result.mismatches[:10]:
        print(
            f"  input set {m['input_set']} output {m['output']} ({printable(m['name'])}): "
            + ", ".join(f"{k} {v}" for k, v in m.items() if k not in ("input_set", "output", "name"))
        )
    if result.step_differences is not None:
        print(
            f"steps       only {result.reference} could run the model: no ground truth; largest differences"
        )
        for row in result.step_differences:
            steps = "step unknown" if row["max_steps"] is None else f"{row['max_steps']:g} step(s)"
            print(f"  output {row['output']} ({printable(row['name'])}): {row['max_abs_diff']:g}, {steps}")
    if intermediates is not None:
        first = intermediates.first
        if first is None:
            print(
                f"intermediates  all {intermediates.compared} operator outputs agree with {result.reference}"
            )
        else:
            steps = "" if first.max_steps is None else f", {first.max_steps:g} step(s)"
            print(
                f"intermediates  first difference: operator {first.operator} ({first.opcode}) output "
                f"{printable(first.name)}: {first.differing} of {first.elements} elements, "
                f"max {first.max_abs_diff:g}{steps} ({len(intermediates.differences)} outputs differ)"
            )
    return 0 if result.outputs_match else 1


def register(sub: Any) -> None:
    build_p = sub.add_parser(
        "build",
        help="generate C for a model and compile it for the host or cross-compile firmware for a board",
    )
    build_p.add_argument("model", help=".tflite file")
    build_p.add_argument(
        "--board", default="host", help="host (default), or a board from `tinysched boards`: .elf/.bin/.hex"
    )
    add_output_arguments(build_p)
    build_p.add_argument("--prefix", help="C symbol prefix (default: the model file name, sanitised)")
    build_p.add_argument("--opt", default="-O2", help="optimisation flag for the host compiler (default -O2)")
    add_plan_arguments(build_p)
    build_p.add_argument("--no-compile", action="store_true", help="write the sources without compiling")
    add_stack_argument(build_p)
    build_p.add_argument(
        "--no-report",
        action="store_true",
        help="write only <prefix>_metadata.json, no rendered report and no comparisons",
    )
    add_compare_arguments(build_p)
    build_p.add_argument("-v", "--verbose", action="store_true", help="print each stage's time on stderr")
    build_p.set_defaults(func=cmd_build)

    verify_p = sub.add_parser(
        "verify", help="build, run and compare every output byte with TFLite's reference"
    )
    verify_p.add_argument("model", help=".tflite file")
    verify_p.add_argument("--board", default="host", help="target board (default and only one so far: host)")
    verify_p.add_argument(
        "--inputs", type=int, default=10, metavar="N", help="seeded random input sets (default 10)"
    )
    verify_p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    verify_p.add_argument(
        "--input-file",
        action="append",
        metavar="FILE",
        help="also run this input set (.npy, .npz or raw bytes of all inputs); repeatable",
    )
    verify_p.add_argument(
        "--opt", default="-O2", help="optimisation flag for the host compiler (default -O2)"
    )
    verify_p.add_argument("--sanitize", action="store_true", help="compile with AddressSanitizer and UBSan")
    verify_p.add_argument("--json", action="store_true", help="print one JSON object")
    verify_p.add_argument(
        "--intermediates",
        action="store_true",
        help="also compare every operator output with the reference and name the first that differs",
    )
    add_plan_arguments(verify_p)
    verify_p.set_defaults(func=cmd_verify)
