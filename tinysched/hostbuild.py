"""`tinysched build --board host` and `tinysched verify`: the generated C, compiled and checked.

`build` writes a self-contained folder: the generated module, the kernels it calls and their headers
(under `tinysched/`), a small runner and a Makefile, and compiles the runner with the host gcc. The
folder appears atomically: everything is written into a temporary sibling that is renamed into place
only once the compiler has accepted it.

`verify` builds into a temporary folder, runs seeded random inputs (and any given input files)
through the runner in one process, runs the same inputs through TFLite's reference kernels
(`tinysched.reference`, in a child process) and compares every output byte.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tinysched.codegen import GeneratedModule, generate, plan_for_codegen, render
from tinysched.errors import TinyschedError
from tinysched.graph import Graph
from tinysched.reader import read_model
from tinysched.resources import resource

BOARDS = ("host",)
HOST_CFLAGS = (
    "-std=c99",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-ffp-contract=off",
    "-D_POSIX_C_SOURCE=199309L",
)
SANITIZE_FLAGS = (
    "-fsanitize=address,undefined",
    "-fno-sanitize-recover=all",
    "-fno-omit-frame-pointer",
    "-g",
)
KERNEL_HEADERS = ("ts_fixedpoint.h", "ts_index.h", "ts_simd.h")
PUBLIC_HEADERS = ("ts_kernels.h", "ts_model.h")


@dataclass
class HostBuild:
    directory: Path
    module: GeneratedModule
    graph: Graph
    schedule: Any
    plan: Any
    runner: Path | None = None
    compile_seconds: float = 0.0


def _check_board(board: str) -> None:
    if board not in BOARDS:
        raise TinyschedError(
            f"board {board!r} is not supported by this command; supported: {', '.join(BOARDS)}"
        )


def generate_module(
    model: str | Path | Graph,
    prefix: str | None = None,
    alignment: int = 16,
    time_limit: float = 1.0,
    recompute: Any = None,
) -> tuple[Graph, Any, Any, GeneratedModule]:
    """Read (if needed), check, schedule, place and generate: nothing is written.

    `recompute` (a `recompute.RecomputeRequest`) lets operators run again; the schedule returned is
    then the `RecomputePlan`."""
    graph = read_model(model) if not isinstance(model, Graph) else model
    planned, schedule, plan = plan_for_codegen(
        graph, alignment=alignment, time_limit=time_limit, recompute=recompute
    )
    module = generate(planned, plan, prefix=prefix, schedule=schedule)
    return planned, schedule, plan, module


def write_sources(module: GeneratedModule, graph: Graph, directory: Path) -> None:
    """The generated files, the kernels they call, the headers, the runner and the Makefile."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in module.files.items():
        (directory / name).write_text(text, encoding="ascii")
    firmware = resource("firmware")
    (directory / "tinysched" / "include").mkdir(parents=True, exist_ok=True)
    (directory / "tinysched" / "kernels").mkdir(parents=True, exist_ok=True)
    for header in PUBLIC_HEADERS:
        shutil.copyfile(firmware / "include" / header, directory / "tinysched" / "include" / header)
    for header in KERNEL_HEADERS:
        shutil.copyfile(firmware / "kernels" / header, directory / "tinysched" / "kernels" / header)
    for kernel in module.kernels:
        shutil.copyfile(
            firmware / "kernels" / f"{kernel}.c", directory / "tinysched" / "kernels" / f"{kernel}.c"
        )
    context = _template_context(module, graph)
    (directory / "runner.c").write_text(render("host/runner.c.j2", **context), encoding="ascii")
    (directory / "Makefile").write_text(render("host/Makefile.j2", **context), encoding="ascii")


def _template_context(module: GeneratedModule, graph: Graph) -> dict[str, Any]:
    from tinysched import __version__
    from tinysched.codegen import c_comment, model_name

    return {
        "version": __version__,
        "model": c_comment(model_name(graph), 100),
        "sha256": graph.sha256 or "unknown",
        "prefix": module.prefix,
        "kernels": module.kernels,
        "inputs": list(module.input_bytes),
        "outputs": list(module.output_bytes),
    }


def compile_runner(
    directory: Path,
    module: GeneratedModule,
    opt: str = "-O2",
    sanitize: bool = False,
    cc: str | None = None,
    extra_flags: Sequence[str] = (),
) -> Path:
    """Compile the runner in `directory` with the host compiler (the same flags as its Makefile)."""
    compiler = cc or os.environ.get("CC") or "gcc"
    if shutil.which(compiler) is None:
        raise TinyschedError(f"host C compiler {compiler!r} not found")
    sources = ["runner.c", f"{module.prefix}.c", f"{module.prefix}_weights.c"]
    sources += [f"tinysched/kernels/{k}.c" for k in module.kernels]
    command = [
        compiler,
        *HOST_CFLAGS,
        opt,
        *(SANITIZE_FLAGS if sanitize else ()),
        *extra_flags,
        "-I.",
        "-Itinysched/include",
        "-Itinysched/kernels",
        "-o",
        "runner",
        *sources,
        "-lm",
    ]
    proc = subprocess.run(command, cwd=directory, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        raise TinyschedError(
            "host compiler failed: " + " / ".join(detail[:3] if detail else [f"exit {proc.returncode}"])
        )
    return directory / "runner"


def _replace_dir(staging: Path, target: Path) -> None:
    """Move `staging` to `target`, replacing an existing folder as close to atomically as POSIX allows."""
    if target.exists() and not target.is_dir():
        raise TinyschedError(f"{target} exists and is not a folder")
    backup = None
    if target.exists():
        backup = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
        os.replace(target, backup / target.name)
    os.replace(staging, target)
    if backup is not None:
        shutil.rmtree(backup, ignore_errors=True)


def build(
    model: str | Path,
    out_dir: str | Path,
    board: str = "host",
    prefix: str | None = None,
    opt: str = "-O2",
    alignment: int = 16,
    time_limit: float = 1.0,
    compile: bool = True,
    sanitize: bool = False,
    recompute: Any = None,
    report: bool = True,
) -> HostBuild:
    """Generate, write and compile into `out_dir`, which appears only when everything succeeded.

    With `report`, `<prefix>_metadata.json` and the report rendered from it (`<prefix>_report.html`,
    `.md`) are written beside the sources (tinysched.report.write_build_report)."""
    _check_board(board)
    graph, schedule, plan, module = generate_module(model, prefix, alignment, time_limit, recompute)
    target = Path(out_dir).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        write_sources(module, graph, staging)
        if compile:
            compile_runner(staging, module, opt=opt, sanitize=sanitize)
        if report and not isinstance(model, Graph):
            from tinysched.report import write_build_report

            write_build_report(staging, module.prefix, model, (graph, schedule, plan))
        _replace_dir(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    runner = target / "runner" if compile else None
    return HostBuild(target, module, graph, schedule, plan, runner)


def run_runner(
    runner: Path, module: GeneratedModule, input_sets: Sequence[Sequence[np.ndarray]]
) -> list[list[np.ndarray]]:
    """All input sets through one runner process; outputs as arrays of the model's types and shapes."""
    with tempfile.TemporaryDirectory(prefix="tinysched-run-") as tmp:
        inputs_path, outputs_path = Path(tmp) / "inputs.bin", Path(tmp) / "outputs.bin"
        with inputs_path.open("wb") as f:
            for arrays in input_sets:
                for k, array in enumerate(arrays):
                    raw = np.ascontiguousarray(array).tobytes()
                    if len(raw) != module.input_bytes[k]:
                        raise TinyschedError(
                            f"input {k} has {len(raw)} bytes, the model expects {module.input_bytes[k]}"
                        )
                    f.write(raw)
        proc = subprocess.run(
            [str(runner), "run", str(inputs_path), str(outputs_path), str(len(input_sets))],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            lines = (proc.stderr or "").strip().splitlines()
            detail = " / ".join(lines[:4]) if lines else f"exit status {proc.returncode}"
            raise TinyschedError(f"generated code failed: {detail}")
        data = outputs_path.read_bytes()
    per_set = sum(module.output_bytes)
    results = []
    for n in range(len(input_sets)):
        chunk = data[n * per_set : (n + 1) * per_set]
        arrays, pos = [], 0
        for size, dtype, shape in zip(
            module.output_bytes, module.output_dtypes, module.output_shapes, strict=True
        ):
            arrays.append(np.frombuffer(chunk[pos : pos + size], dtype=dtype).reshape(shape))
            pos += size
        results.append(arrays)
    return results


def bench_runner(
    runner: Path, module: GeneratedModule, inputs: Sequence[np.ndarray], iterations: int
) -> float:
    """Nanoseconds per invoke of the generated code, measured inside the runner."""
    with tempfile.TemporaryDirectory(prefix="tinysched-bench-") as tmp:
        path = Path(tmp) / "inputs.bin"
        path.write_bytes(b"".join(np.ascontiguousarray(a).tobytes() for a in inputs))
        proc = subprocess.run(
            [str(runner), "bench", str(path), str(iterations)], capture_output=True, text=True, check=False
        )
    if proc.returncode != 0:
        raise TinyschedError(f"generated code failed: {proc.stderr.strip()[:300]}")
    return float(proc.stdout.split()[1])


def load_input_file(path: str | Path, module: GeneratedModule) -> list[np.ndarray]:
    """One input set from `.npy` (one input), `.npz` (inputs in order) or raw bytes (all inputs)."""
    path = Path(path)
    try:
        if path.suffix == ".npy":
            arrays = [np.load(path, allow_pickle=False)]
        elif path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as npz:
                arrays = [npz[k] for k in npz.files]
        else:
            raw = path.read_bytes()
            if len(raw) != sum(module.input_bytes):
                raise TinyschedError(
                    f"{path}: {len(raw)} bytes, the model's inputs take {sum(module.input_bytes)}"
                )
            arrays, pos = [], 0
            for size, dtype, shape in zip(
                module.input_bytes, module.input_dtypes, module.input_shapes, strict=True
            ):
                arrays.append(np.frombuffer(raw[pos : pos + size], dtype=dtype).reshape(shape))
                pos += size
    except OSError as err:
        raise TinyschedError(f"{path}: cannot read: {err.strerror or err}") from None
    except ValueError as err:
        raise TinyschedError(f"{path}: not a valid input file: {err}") from None
    if len(arrays) != len(module.input_bytes):
        raise TinyschedError(f"{path}: {len(arrays)} arrays, the model has {len(module.input_bytes)} inputs")
    fixed = []
    for k, array in enumerate(arrays):
        dtype, shape = np.dtype(module.input_dtypes[k]), module.input_shapes[k]
        if array.dtype != dtype or array.size != int(np.prod(shape)):
            raise TinyschedError(
                f"{path}: input {k} is {array.dtype}{list(array.shape)}, expected {dtype}{list(shape)}"
            )
        fixed.append(array.reshape(shape))
    return fixed


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
    board: str = "host",
    n_inputs: int = 10,
    seed: int = 0,
    input_files: Sequence[str | Path] = (),
    opt: str = "-O2",
    sanitize: bool = False,
    time_limit: float = 1.0,
    recompute: Any = None,
) -> VerifyResult:
    """Build in a temporary folder and compare every output byte with TFLite's reference kernels."""
    from tinysched import reference

    _check_board(board)
    if n_inputs < 0:
        raise TinyschedError("--inputs must be 0 or more")
    graph, schedule, plan, module = generate_module(model, time_limit=time_limit, recompute=recompute)
    input_sets = [list(s) for s in reference.random_inputs(model, seed, n_inputs)] if n_inputs else []
    input_sets += [load_input_file(p, module) for p in input_files]
    if not input_sets:
        raise TinyschedError("nothing to verify: --inputs 0 and no input files")
    with tempfile.TemporaryDirectory(prefix="tinysched-verify-") as tmp:
        directory = Path(tmp) / "build"
        write_sources(module, graph, directory)
        runner = compile_runner(directory, module, opt=opt, sanitize=sanitize)
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
        arena_bytes=plan.arena_bytes,
        mismatches=mismatches,
        sanitize=sanitize,
        recompute=schedule if recompute is not None and recompute.active else None,
    )


# ---- command line (registered by tinysched.cli) ------------------------------------------------


def cmd_build(args: Any) -> int:
    from tinysched.recompute import request_from_args, summary_lines

    if args.board != "host":  # a microcontroller board: cross-compiled firmware (tinysched.firmware)
        from tinysched.firmware import cmd_build_board

        return cmd_build_board(args)
    request = request_from_args(args)
    result = build(
        args.model,
        args.output,
        board=args.board,
        prefix=args.prefix,
        opt=args.opt,
        alignment=args.alignment,
        time_limit=args.time_limit,
        compile=not args.no_compile,
        recompute=request,
        report=not args.no_report,
    )
    module = result.module
    print(f"model       {result.graph.source}  (sha256 {result.graph.sha256[:16]}...)")
    print(f"board       {args.board}")
    print(f"arena       {module.arena_bytes:,} B, aligned to {module.alignment} (one static array)")
    print(f"weights     {module.weights_bytes:,} B (const arrays)")
    print(f"kernels     {', '.join(module.kernels)}")
    from tinysched.fold import fold_info

    folding = fold_info(result.graph)
    if folding is not None:
        print(f"folding     {folding.summary()}: no code, no arena; the plan is for the folded graph")
    if request is not None:
        print("\n".join(summary_lines(result.schedule)))
    print(f"wrote       {result.directory}/ ({', '.join(sorted(module.files))}, runner.c, Makefile)")
    if result.runner is not None:
        print(f"runner      {result.runner}  (run INPUTS OUTPUTS COUNT | bench INPUTS N)")
    if not args.no_report:
        print(f"report      {result.directory}/{module.prefix}_report.html  (and _metadata.json, _report.md)")
    return 0


def cmd_verify(args: Any) -> int:
    import json
    import sys

    from tinysched.recompute import request_from_args, summary_lines

    result = verify(
        args.model,
        board=args.board,
        n_inputs=args.inputs,
        seed=args.seed,
        input_files=args.input_file or (),
        opt=args.opt,
        sanitize=args.sanitize,
        time_limit=args.time_limit,
        recompute=request_from_args(args),
    )
    if args.json:
        json.dump(result.as_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        verdict = (
            "all outputs bit-exact" if result.outputs_match else f"{len(result.mismatches)} output(s) differ"
        )
        print(f"model       {result.model}")
        print(
            f"reference   {result.reference}"
            + (f" (fallback: {result.fallback_reason})" if result.fallback_reason else "")
        )
        print(
            f"inputs      {result.inputs} set(s), seed {args.seed}"
            + (", ASan+UBSan" if args.sanitize else "")
        )
        print(f"arena       {result.arena_bytes:,} B")
        if result.recompute is not None:
            print("\n".join(summary_lines(result.recompute)))
        print(f"result      {verdict}")
        for m in result.mismatches[:10]:
            print(
                f"  input set {m['input_set']} output {m['output']} ({m['name']}): "
                + ", ".join(f"{k} {v}" for k, v in m.items() if k not in ("input_set", "output", "name"))
            )
    return 0 if result.outputs_match else 1


def register_commands(sub: Any) -> None:
    """Add `build` and `verify` to the CLI's sub-command parser."""
    build_p = sub.add_parser(
        "build",
        help="generate C for a model and compile it for the host or cross-compile firmware for a board",
    )
    build_p.add_argument("model", help=".tflite file")
    build_p.add_argument(
        "--board", default="host", help="host (default), or a board from `tinysched boards`: .elf/.bin/.hex"
    )
    build_p.add_argument(
        "-o", "--output", required=True, metavar="DIR", help="output folder (replaced atomically)"
    )
    build_p.add_argument("--prefix", help="C symbol prefix (default: the model file name, sanitised)")
    build_p.add_argument("--opt", default="-O2", help="optimisation flag for the host compiler (default -O2)")
    build_p.add_argument("--alignment", type=int, default=16, help="arena and tensor alignment (default 16)")
    build_p.add_argument("--time-limit", type=float, default=1.0, metavar="S", help="planning time limit")
    build_p.add_argument("--no-compile", action="store_true", help="write the sources without compiling")
    build_p.add_argument(
        "--no-report", action="store_true", help="skip <prefix>_metadata.json and the report beside the build"
    )
    from tinysched.recompute import add_recompute_arguments

    add_recompute_arguments(build_p)
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
    verify_p.add_argument("--time-limit", type=float, default=1.0, metavar="S", help="planning time limit")
    verify_p.add_argument("--json", action="store_true", help="print one JSON object")
    add_recompute_arguments(verify_p)
    verify_p.set_defaults(func=cmd_verify)
