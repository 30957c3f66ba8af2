"""The C sources of one model on disk: the one place that lists files and include folders.

`write_sources` writes a generated module with the kernels it calls and their headers into a
folder; the `SourceSet` it returns is what the host compiler, the cross compiler and `measure`
compile, so the list of C files and include folders exists once.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tinysched.resources import resource

KERNEL_HEADERS = ("ts_fixedpoint.h", "ts_index.h", "ts_mve.h", "ts_simd.h")
PUBLIC_HEADERS = ("ts_kernels.h", "ts_model.h")


@dataclass(frozen=True)
class SourceSet:
    """C files and include folders of one model module (or the harness's self-test model)."""

    directory: Path
    c_files: tuple[Path, ...]  # absolute
    include_dirs: tuple[Path, ...]  # absolute
    model_info_symbol: str  # the module's `const ts_model_info`
    kernel_files: tuple[Path, ...] = ()  # those of c_files every module calling them shares

    @property
    def module_files(self) -> tuple[Path, ...]:
        """The C files this module alone has (its steps and weights)."""
        return tuple(p for p in self.c_files if p not in self.kernel_files)

    def relative_c_files(self) -> list[str]:
        return [str(p.relative_to(self.directory)) for p in self.c_files]

    def relative_include_dirs(self) -> list[str]:
        return [str(p.relative_to(self.directory)) or "." for p in self.include_dirs]


def module_source_set(directory: Path, prefix: str, kernels: tuple[str, ...]) -> SourceSet:
    """Where `write_sources` puts a module with symbol prefix `prefix` calling `kernels`."""
    directory = Path(directory).resolve()
    kernel_dir = directory / "tinysched" / "kernels"
    kernel_files = tuple(kernel_dir / f"{k}.c" for k in kernels)
    return SourceSet(
        directory=directory,
        c_files=(directory / f"{prefix}.c", directory / f"{prefix}_weights.c", *kernel_files),
        include_dirs=(directory, directory / "tinysched" / "include", kernel_dir),
        model_info_symbol=f"{prefix}_info",
        kernel_files=kernel_files,
    )


def write_sources(module: Any, directory: Path) -> SourceSet:
    """A codegen.GeneratedModule's files, the kernels it calls and their headers, under `directory`."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in module.files.items():
        (directory / name).write_text(text, encoding="ascii")
    firmware = resource("firmware")
    include = directory / "tinysched" / "include"
    kernels = directory / "tinysched" / "kernels"
    include.mkdir(parents=True, exist_ok=True)
    kernels.mkdir(parents=True, exist_ok=True)
    for header in PUBLIC_HEADERS:
        shutil.copyfile(firmware / "include" / header, include / header)
    for header in KERNEL_HEADERS:
        shutil.copyfile(firmware / "kernels" / header, kernels / header)
    for kernel in module.kernels:
        shutil.copyfile(firmware / "kernels" / f"{kernel}.c", kernels / f"{kernel}.c")
    return module_source_set(directory, module.prefix, module.kernels)
