"""Building what the code generator wrote: host runner or cross-compiled firmware, and ELF sizes.

Every function here takes a generated module (`codegen.GeneratedModule`) and never plans:

    sources.py    the module's files on disk and the one list of C files and include folders
    host.py       the host runner (gcc), running inputs through it
    firmware.py   arm-none-eabi-gcc, the linker script from boards.yaml, .elf/.bin/.hex
    objects.py    one C file to an object, reusing identical compiles ($TINYSCHED_OBJECT_CACHE)
    elfsize.py    flash and RAM per role and region, read from the ELF
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tinysched.boards import Board
from tinysched.build.elfsize import DoesNotFit, SizeReport
from tinysched.build.firmware import FirmwareImage, build_firmware, module_stack_bytes
from tinysched.build.host import compile_runner, write_runner
from tinysched.build.sources import SourceSet, write_sources
from tinysched.errors import TinyschedError

__all__ = [
    "BoardImages",
    "BuildOptions",
    "DEFAULT_BUILD_OPTIONS",
    "DoesNotFit",
    "FirmwareImage",
    "HostImage",
    "SizeReport",
    "SourceSet",
    "build_board",
    "build_host",
    "file_sha256",
    "module_stack_bytes",
]


@dataclass(frozen=True)
class BuildOptions:
    """What `build` compiles and how (planning has its own record, pipeline.PlanOptions)."""

    prefix: str | None = None  # C symbol prefix (default: the model's file name, sanitised)
    compile: bool = True  # False: write the sources only
    opt: str = "-O2"  # host compiler optimisation
    sanitize: bool = False  # host runner under ASan and UBSan
    stack_bytes: int | None = None  # firmware stack reservation (default: the board's)

    def __post_init__(self) -> None:
        if self.stack_bytes is not None and not 256 <= self.stack_bytes <= 1 << 24:
            raise TinyschedError(f"--stack must be between 256 B and 16 MiB, got {self.stack_bytes}")


DEFAULT_BUILD_OPTIONS = BuildOptions()


@dataclass(frozen=True)
class HostImage:
    """A host build: its sources, and the runner when compiled."""

    sources: SourceSet
    runner: Path | None


def file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def build_host(
    module: Any,
    directory: Path,
    *,
    model_name: str,
    sha256: str,
    compile: bool = True,
    opt: str = "-O2",
    sanitize: bool = False,
) -> HostImage:
    """The module, its kernels, runner.c and a Makefile in `directory`; the runner compiled."""
    sources = write_sources(module, directory)
    write_runner(module, sources, model_name, sha256)
    runner = compile_runner(sources, opt=opt, sanitize=sanitize) if compile else None
    return HostImage(sources, runner)


@dataclass(frozen=True)
class BoardImages:
    """A board build: the board's image and, for a board QEMU cannot run, the same sources built for
    each of its emulated stand-ins (same core and compiler flags; the default stand-in first), so
    `measure BUILD_DIR [--stand-in NAME]` runs an image the build wrote instead of building one."""

    image: FirmwareImage
    stand_ins: tuple[FirmwareImage, ...] = ()

    @property
    def emulated(self) -> FirmwareImage | None:
        """The default stand-in's image, if any."""
        return self.stand_ins[0] if self.stand_ins else None


def build_board(
    module: Any, board: Board, directory: Path, *, stand_in: bool = True, stack_bytes: int | None = None
) -> BoardImages:
    """The module's sources under `directory/src`, cross-compiled with the harness and the board's
    target into `directory` (<prefix>.elf/.bin/.hex/.map/.ld), and for the stand-in into
    `directory/emulated/<stand-in>/` for every stand-in. Raises DoesNotFit with the numbers."""
    import shutil

    directory = Path(directory)
    sources = write_sources(module, directory / "src")
    image = build_firmware(sources, board, directory, name=module.prefix, stack_bytes=stack_bytes)
    shutil.rmtree(directory / "obj", ignore_errors=True)
    stand_ins = []
    if stand_in and not board.emulated:
        for name in board.stand_ins:
            runner = board.stand_in(name)
            where = directory / "emulated" / runner.name
            stand_ins.append(
                build_firmware(sources, runner, where, name=module.prefix, stack_bytes=stack_bytes)
            )
            shutil.rmtree(where / "obj", ignore_errors=True)
    return BoardImages(image, tuple(stand_ins))
