"""A generated model as a library folder that a firmware project adds as it is (`tinysched export`).

The folder holds the generated module and weights, only the kernels the model calls with their
headers, and the build glue of the usual embedded build systems; nothing of tinysched's harness,
start-up code or linker script (docs/integration.md):

    README.md                 usage, the RAM to give both ways, the flash it adds, the board flags
    CMakeLists.txt            one STATIC library target named after the prefix
    <name>.mk                 sources, include paths and flags for Make projects (STM32CubeIDE)
    zephyr/                   module.yml, CMakeLists.txt (zephyr_library_named), Kconfig
    library.json              PlatformIO (srcDir src, includeDir include)
    include/                  <name>.h, ts_model.h: the public headers
    src/                      <name>.c, <name>_weights.c/.h, ts_kernels.h
    src/kernels/              the kernels called and their private headers
    example/main.c            the least application (in place: no input or output copy)
    <name>_metadata.json      the metadata document (docs/report-schema.md)

Kernels are the same files in every folder exported by one tinysched version, so a project with
several models links each once: the CMake, Zephyr and PlatformIO libraries are static archives (the
linker takes a kernel's object from the first archive that defines it), and the .mk file collects
`TINYSCHED_KERNEL_SRCS` by file name.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tinysched import __version__
from tinysched.boards import Board
from tinysched.build.firmware import module_stack_bytes
from tinysched.build.sources import KERNEL_HEADERS
from tinysched.codegen.cgen import c_comment
from tinysched.errors import TinyschedError
from tinysched.resources import resource

LIBM_KERNELS = frozenset({"ts_quantize_f32_s8"})  # kernels calling the C library's math functions
FLASH_LEVELS = ("-O2", "-Os")  # the optimisation levels the flash figure is measured at
# what compiles the library, as a project would (no harness, no -Werror: a newer compiler's warning
# must not stop a measurement; the tests compile with -Werror)
FLASH_CFLAGS = ("-std=c99", "-ffunction-sections", "-fdata-sections", "-ffp-contract=off")


@dataclass(frozen=True)
class FlashUse:
    """What the library adds to the image's flash: the model's constant tensors and the generator's
    per-operator arrays, and, when compiled, all of its objects' loaded bytes per level (code,
    constants, .data images; before the linker drops unreferenced functions)."""

    weights_bytes: int
    parameter_bytes: int
    compiled: dict[str, int] | None  # optimisation flag -> flash bytes of every object
    static_ram: dict[str, int] | None  # optimisation flag -> .data + .bss of every object
    note: str

    def to_json(self) -> dict[str, Any]:
        return {
            "weights_bytes": self.weights_bytes,
            "parameter_bytes": self.parameter_bytes,
            "compiled_bytes": self.compiled,
            "static_ram_bytes": self.static_ram,
            "note": self.note,
        }

    def text(self) -> str:
        data = self.weights_bytes + self.parameter_bytes
        head = (
            f"{data:,} B of weights ({self.weights_bytes:,} B of the model's tensors, "
            f"{self.parameter_bytes:,} B of per-operator multipliers, shifts and tables)"
        )
        if not self.compiled:
            return f"{head}; code not measured ({self.note})"
        levels = ", ".join(f"{n:,} B at {level}" for level, n in self.compiled.items())
        return f"{head}; in all, code and parameter structs included, {levels} ({self.note})"


@dataclass(frozen=True)
class ExportedLibrary:
    """What `write_library` wrote."""

    directory: Path
    name: str
    files: tuple[str, ...]  # every file, relative to `directory`, sorted
    sources: tuple[str, ...]  # the C files of the library target, relative
    kernels: tuple[str, ...]  # kernel file stems
    flash: FlashUse


def library_sources(prefix: str, kernels: tuple[str, ...]) -> tuple[str, ...]:
    return (
        f"src/{prefix}.c",
        f"src/{prefix}_weights.c",
        *(f"src/kernels/{k}.c" for k in kernels),
    )


def _render(template: str, **context: Any) -> str:
    from tinysched.codegen.module import render

    return render(f"export/{template}", **context)


def _markdown(text: str) -> str:
    """A model name made safe for one line of Markdown (every markup character escaped)."""
    return "".join(f"\\{ch}" if ch in "\\`*_{}[]()#+-.!|<>~" else ch for ch in c_comment(text, 80))


def library_json(prefix: str, model: str, board: Board, sha256: str) -> str:
    """PlatformIO's manifest: sources under src/ (kernels included), public headers under include/."""
    manifest = {
        "name": prefix,
        "version": __version__,
        "description": f"{model} as C code generated by tinysched for {board.name} (model sha256 {sha256[:16]})",
        "keywords": ["tinysched", "tflite", "int8", "neural network"],
        "frameworks": "*",
        "platforms": "*",
        "build": {
            "srcDir": "src",
            "includeDir": "include",
            "flags": ["-I src", "-I src/kernels", "-ffp-contract=off"],
            "libArchive": True,
        },
        "export": {"exclude": ["example"]},
    }
    return json.dumps(manifest, indent=2) + "\n"


def measure_flash(
    directory: Path, sources: tuple[str, ...], board: Board
) -> tuple[dict[str, int], dict[str, int]]:
    """Compile the library's sources for `board` at each of FLASH_LEVELS into a temporary folder and
    add up their loaded sections (flash) and writable ones (static RAM), read from the objects."""
    from elftools.elf.constants import SH_FLAGS
    from elftools.elf.elffile import ELFFile

    from tinysched.build.firmware import require_toolchain

    gcc = require_toolchain()
    includes = [f"-I{directory / d}" for d in ("include", "src", "src/kernels")]
    jobs = [(level, src) for level in FLASH_LEVELS for src in sources]
    with tempfile.TemporaryDirectory(prefix="tinysched-flash-") as tmp:

        def compile_one(item: tuple[int, tuple[str, str]]) -> tuple[str, int, int]:
            index, (level, src) = item
            obj = Path(tmp) / f"{index:03d}.o"
            cmd = [
                gcc,
                *board.cflags,
                level,
                *FLASH_CFLAGS,
                *includes,
                "-c",
                str(directory / src),
                "-o",
                str(obj),
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                raise TinyschedError(f"compiling {src} for {board.name} failed:\n{proc.stderr.strip()}")
            flash = ram = 0
            with obj.open("rb") as handle:
                for sec in ELFFile(handle).iter_sections():
                    if not sec["sh_flags"] & SH_FLAGS.SHF_ALLOC:
                        continue
                    writable = bool(sec["sh_flags"] & SH_FLAGS.SHF_WRITE)
                    if sec["sh_type"] != "SHT_NOBITS":
                        flash += sec["sh_size"]
                    if writable:
                        ram += sec["sh_size"]
            return level, flash, ram

        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            results = list(pool.map(compile_one, enumerate(jobs)))
    flash = {level: sum(f for lv, f, _ in results if lv == level) for level in FLASH_LEVELS}
    ram = {level: sum(r for lv, _, r in results if lv == level) for level in FLASH_LEVELS}
    return flash, ram


def write_library(
    module: Any,
    board: Board,
    directory: Path,
    *,
    model_name: str,
    sha256: str,
    ram: dict[str, Any],
    folder_hint: str = "path/to/this/folder",
    compile: bool = True,
) -> ExportedLibrary:
    """The library folder of a codegen.GeneratedModule under `directory` (which must exist and be
    empty: the caller's staging folder). `ram` is the metadata's summary.application_ram."""
    directory = Path(directory)
    prefix = module.prefix
    firmware = resource("firmware")
    for sub in ("include", "src/kernels", "zephyr", "example"):
        (directory / sub).mkdir(parents=True, exist_ok=True)
    written: dict[str, str] = {}  # relative path -> text (files tinysched renders)
    copied: dict[str, Path] = {  # relative path -> file of tinysched's own
        "include/ts_model.h": firmware / "include" / "ts_model.h",
        "src/ts_kernels.h": firmware / "include" / "ts_kernels.h",
        **{f"src/kernels/{h}": firmware / "kernels" / h for h in KERNEL_HEADERS},
        **{f"src/kernels/{k}.c": firmware / "kernels" / f"{k}.c" for k in module.kernels},
    }
    for name, text in module.files.items():
        written[f"include/{name}" if name == f"{prefix}.h" else f"src/{name}"] = text
    sources = library_sources(prefix, module.kernels)
    needs_libm = bool(LIBM_KERNELS & set(module.kernels))
    model = c_comment(model_name, 100)
    context = {
        "name": prefix,
        "NAME": prefix.upper(),
        "version": __version__,
        "model": model,
        "model_md": _markdown(model_name),
        "sha256": sha256,
        "board": board,
        "sources": sources,
        "kernels": module.kernels,
        "needs_libm": needs_libm,
        "alignment": module.alignment,
        "folder": folder_hint,
        "streamed": module.streamed,  # <name>_invoke_streamed (--stream-input); None: none
    }
    written["CMakeLists.txt"] = _render("CMakeLists.txt.j2", **context)
    written[f"{prefix}.mk"] = _render("model.mk.j2", **context)
    written["zephyr/module.yml"] = _render("zephyr/module.yml.j2", **context)
    written["zephyr/CMakeLists.txt"] = _render("zephyr/CMakeLists.txt.j2", **context)
    written["zephyr/Kconfig"] = _render("zephyr/Kconfig.j2", **context)
    written["library.json"] = library_json(prefix, model, board, sha256)
    edges = _edges(module)
    written["example/main.c"] = _render("main.c.j2", **context, **edges)
    for rel, text in written.items():
        (directory / rel).write_text(text, encoding="ascii")
    for rel, src in copied.items():
        shutil.copyfile(src, directory / rel)

    weights, params = module.weights_bytes, module.parameter_bytes
    if not compile:
        flash = FlashUse(weights, params, None, None, "not compiled: --no-compile")
    elif shutil.which("arm-none-eabi-gcc") is None:
        flash = FlashUse(weights, params, None, None, "arm-none-eabi-gcc not installed")
    else:
        compiled, static_ram = measure_flash(directory, sources, board)
        flash = FlashUse(
            weights,
            params,
            compiled,
            static_ram,
            f"every object compiled for {board.core} with arm-none-eabi-gcc, before --gc-sections drops unused functions",
        )
    stack = ram.get("invoke_stack_bytes")
    if (
        stack is not None and flash.compiled is not None
    ):  # the generated steps' own frames on top (build.stack)
        stack += module_stack_bytes(module, board)
    readme = _render(
        "README.md.j2",
        **context,
        ram=ram,
        stack_text=f"about {stack:,}" if stack is not None else "not measured",
        flash_text=flash.text(),
    )
    (directory / "README.md").write_text(readme, encoding="ascii")
    written["README.md"] = readme
    files = tuple(sorted([*written, *copied]))
    return ExportedLibrary(directory, prefix, files, sources, module.kernels, flash)


def _edges(module: Any) -> dict[str, Any]:
    """The inputs and outputs as example/main.c describes them."""

    def rows(shapes: Any, dtypes: Any) -> list[dict[str, Any]]:
        return [
            {"position": k, "shape": list(shape), "dtype": dtype, "scale": None}
            for k, (shape, dtype) in enumerate(zip(shapes, dtypes, strict=True))
        ]

    return {
        "inputs": rows(module.input_shapes, module.input_dtypes),
        "outputs": rows(module.output_shapes, module.output_dtypes),
    }
