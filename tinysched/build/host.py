"""The host runner: the generated C compiled with the host gcc, and a way to run inputs through it.

The runner (templates/host/runner.c.j2) reads all input sets from one file, runs them through the
model in one process and writes every output, so `verify` and the benchmarks start one process
for any number of inputs. The folder is self-contained: `make` rebuilds the runner from its Makefile.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from tinysched import __version__, children
from tinysched.build.objects import compile_object
from tinysched.build.sources import SourceSet
from tinysched.errors import TinyschedError
from tinysched.text import first_error_line

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


def write_runner(module: Any, sources: SourceSet, model_name: str, sha256: str) -> None:
    """runner.c and its Makefile beside the module's sources."""
    from tinysched.codegen import c_comment, render

    context = {
        "version": __version__,
        "model": c_comment(model_name, 100),
        "sha256": sha256 or "unknown",
        "prefix": module.prefix,
        "kernels": module.kernels,
        "inputs": list(module.input_bytes),
        "outputs": list(module.output_bytes),
    }
    directory = sources.directory
    (directory / "runner.c").write_text(render("host/runner.c.j2", **context), encoding="ascii")
    (directory / "Makefile").write_text(render("host/Makefile.j2", **context), encoding="ascii")


def compile_runner(
    sources: SourceSet,
    opt: str = "-O2",
    sanitize: bool = False,
    cc: str | None = None,
    extra_flags: Sequence[str] = (),
) -> Path:
    """Compile the runner beside `sources` with the host compiler (the same flags as its Makefile)."""
    compiler = cc or os.environ.get("CC") or "gcc"
    if shutil.which(compiler) is None:
        raise TinyschedError(f"host C compiler {compiler!r} not found")
    directory = sources.directory
    flags = [
        *HOST_CFLAGS,
        opt,
        *(SANITIZE_FLAGS if sanitize else ()),
        *extra_flags,
        *(f"-I{d}" for d in sources.relative_include_dirs()),
    ]
    own = [str(p.relative_to(directory)) for p in sources.module_files]
    with tempfile.TemporaryDirectory(prefix="tinysched-host-") as objects:

        def compile_kernel(src: Path) -> str:
            obj = str(Path(objects, f"{src.stem}.o"))
            compile_object(
                compiler, flags, src.relative_to(directory), obj, what="host compiler", cwd=directory
            )
            return obj

        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            kernel_objects = list(pool.map(compile_kernel, sources.kernel_files))
        command = [compiler, *flags, "-o", "runner", "runner.c", *own, *kernel_objects, "-lm"]
        proc = children.run(command, cwd=directory, capture_output=True, text=True)
    if proc.returncode != 0:
        output = proc.stderr or proc.stdout
        detail = first_error_line(output) if output.strip() else f"exit {proc.returncode}"
        raise TinyschedError(f"host compiler failed: {detail}")
    return directory / "runner"


def run_runner(
    runner: Path, module: Any, input_sets: Sequence[Sequence[np.ndarray]]
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
        proc = children.run(
            [str(runner), "run", str(inputs_path), str(outputs_path), str(len(input_sets))],
            capture_output=True,
            text=True,
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


def bench_runner(runner: Path, module: Any, inputs: Sequence[np.ndarray], iterations: int) -> float:
    """Nanoseconds per invoke of the generated code, measured inside the runner."""
    with tempfile.TemporaryDirectory(prefix="tinysched-bench-") as tmp:
        path = Path(tmp) / "inputs.bin"
        path.write_bytes(b"".join(np.ascontiguousarray(a).tobytes() for a in inputs))
        proc = children.run(
            [str(runner), "bench", str(path), str(iterations)], capture_output=True, text=True
        )
    if proc.returncode != 0:
        raise TinyschedError(f"generated code failed: {proc.stderr.strip()[:300]}")
    return float(proc.stdout.split()[1])


def load_input_file(path: str | Path, module: Any) -> list[np.ndarray]:
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
