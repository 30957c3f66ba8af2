"""Cross-building a firmware image for a board, and its size report read back from the ELF.

`build_firmware` compiles a model module (already generated C), the device harness and the board's
target code with arm-none-eabi-gcc, links them with a linker script generated from the board's
memory regions (targets/linker.ld.j2), writes .elf, .bin and .hex, and reads flash and RAM use
per region from the ELF with pyelftools. A model that does not fit fails with the numbers.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import jinja2

from tinysched import children
from tinysched.boards import Board
from tinysched.build.elfsize import DoesNotFit, SizeReport, model_constant_names, size_report
from tinysched.build.objects import compile_object
from tinysched.build.sources import SourceSet, write_sources
from tinysched.build.stack import module_frame_bytes
from tinysched.errors import TinyschedError
from tinysched.files import write_atomic
from tinysched.resources import resource
from tinysched.text import first_error_line, printable_path

CC = "arm-none-eabi-gcc"
OBJCOPY = "arm-none-eabi-objcopy"
WARNINGS = ("-Wall", "-Wextra")
COMMON_CFLAGS = ("-O2", "-g", "-std=gnu11", "-ffunction-sections", "-fdata-sections", "-fno-common")


# ---- paths ---------------------------------------------------------------------------------------


def targets_dir() -> Path:
    return resource("targets")


def firmware_dir() -> Path:
    return resource("firmware")


def target_sources(board: Board) -> list[Path]:
    """Startup, counter and the family's clock/UART code."""
    t = targets_dir()
    return [
        t / "common" / "startup.c",
        t / "common" / "reset.c",
        t / "common" / "counter.c",
        t / board.family / "target.c",
    ]


def harness_sources() -> list[Path]:
    return [firmware_dir() / "harness" / "harness.c"]


def selftest_sources() -> SourceSet:
    """The hand-written test model (firmware/harness/selftest_model.c), symbol `selftest_info`."""
    harness = firmware_dir() / "harness"
    return SourceSet(harness, (harness / "selftest_model.c",), (), "selftest_info")


def base_include_dirs() -> list[Path]:
    return [targets_dir() / "include", firmware_dir() / "include", firmware_dir() / "harness"]


def require_toolchain() -> str:
    gcc = shutil.which(CC)
    if gcc is None or shutil.which(OBJCOPY) is None:
        raise TinyschedError(
            f"{CC} not found: install Debian's gcc-arm-none-eabi and libnewlib-arm-none-eabi (`make setup`)"
        )
    return gcc


# ---- which image: an id compiled into the harness, sent in the hello -------------------------------

IMAGE_ID_SYMBOL = "ts_image_id"  # firmware/harness/harness.c


def image_id(sources: SourceSet, board: Board, defines: Sequence[str] = ()) -> str:
    """The id of the image these inputs build: 16 hex digits of a SHA-256 over the tinysched version,
    the board's linker script and flags, the defines, and the bytes of every source, header (in the
    include folders) and harness/target file. The same inputs give the same id (a rebuild of the
    same model is the same image), any change gives another."""
    import hashlib

    from tinysched import __version__

    h = hashlib.sha256()

    def put(label: str, data: bytes) -> None:
        h.update(label.encode() + b"\0" + len(data).to_bytes(8, "little") + data)

    put("version", __version__.encode())
    put("board", board.name.encode())
    put("cflags", "\0".join(board.cflags).encode())
    put("linker", linker_script(board).encode())
    for d in defines:
        put("define", d.encode())
    files = list(sources.c_files) + harness_sources() + target_sources(board)
    for folder in [*sources.include_dirs, *base_include_dirs()]:
        files += sorted(folder.glob("*.h")) if folder.is_dir() else []
    for f in files:
        try:
            put(f"file {f.name}", f.read_bytes())
        except OSError as err:
            raise TinyschedError(f"cannot read {printable_path(f)}: {err.strerror}") from None
    return h.hexdigest()[:16]


def image_id_define(identity: str) -> str:
    """The compiler flag that puts `identity` into the harness (and so into the hello)."""
    return f'-DTS_IMAGE_ID="{identity}"'


def image_id_in_elf(elf_path: Path) -> str | None:
    """The image id compiled into an ELF (the harness's `ts_image_id`), or None when it has none."""
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection

    with Path(elf_path).open("rb") as handle:
        elf = ELFFile(handle)
        tab = elf.get_section_by_name(".symtab")
        if not isinstance(tab, SymbolTableSection):
            return None
        sym = next((s for s in tab.iter_symbols() if s.name == IMAGE_ID_SYMBOL), None)
        if sym is None:
            return None
        addr, size = sym["st_value"], sym["st_size"]
        for sec in elf.iter_sections():
            if sec["sh_type"] != "SHT_NOBITS" and sec["sh_addr"] <= addr < sec["sh_addr"] + sec["sh_size"]:
                raw = sec.data()[addr - sec["sh_addr"] : addr - sec["sh_addr"] + size]
                return raw.split(b"\0", 1)[0].decode("utf-8", "replace")
    return None


# ---- board -> compiler defines and linker script ---------------------------------------------------


def _pin(name: str) -> tuple[int, int]:
    m = re.fullmatch(r"P([A-K])(\d{1,2})", str(name).upper())
    if not m:
        raise TinyschedError(f"bad pin name {name!r} (expected like PD8)")
    return ord(m.group(1)) - ord("A"), int(m.group(2))


def board_defines(board: Board) -> list[str]:
    """-D flags that targets/ and the harness read (see targets/include/ts_target.h)."""
    uart = board.uart
    d = [
        f'-DTS_BOARD_NAME="{board.name}"',
        f"-DTS_CPU_HZ={board.cpu_hz}u",
        f"-DTS_UART_BASE={int(uart['base']):#010x}u",
        f"-DTS_UART_BAUD={int(uart['baud'])}u",
        f"-DTS_UART_CLOCK_HZ={int(uart.get('clock_hz', board.cpu_hz))}u",
        "-DTS_COUNTER_DWT" if board.counter == "dwt" else "-DTS_COUNTER_SYSTICK",
    ]
    if board.emulated:
        d.append("-DTS_SEMIHOSTING")  # opt-in `measure --semihost-inputs` under QEMU (docs/firmware.md)
    if board.family.startswith("stm32"):
        tx_port, tx_pin = _pin(uart["tx"])
        rx_port, rx_pin = _pin(uart["rx"])
        d += [
            f"-DTS_UART_TX_PORT={tx_port}u",
            f"-DTS_UART_TX_PIN={tx_pin}u",
            f"-DTS_UART_RX_PORT={rx_port}u",
            f"-DTS_UART_RX_PIN={rx_pin}u",
            f"-DTS_UART_AF={int(uart['af'])}u",
        ]
        clock = board.clock
        if str(clock.get("source", "")).endswith("pll"):
            d.append("-DTS_CLOCK_PLL")
            for key in ("pll_m", "pll_n", "pll_p", "pll_q", "pll_r", "apb1_div", "apb2_div", "flash_latency"):
                if key in clock:
                    d.append(f"-DTS_{key.upper()}={int(clock[key])}")
            d.append(f"-DTS_OVERDRIVE={1 if clock.get('overdrive') else 0}")
    return d


def linker_script(board: Board, stack_bytes: int | None = None, grow: int = 0) -> str:
    """The board's linker script; `grow` enlarges every region (used only to size an overflow)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(targets_dir())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    regions = [
        {"name": r.name, "origin": r.origin, "length": r.length + grow, "kind": r.kind, "note": r.note}
        for r in board.memory
    ]
    return env.get_template("linker.ld.j2").render(
        board=board,
        regions=regions,
        pools=[{"name": r.name} for r in board.pool_regions],
        placement=board.placement,
        stack_bytes=int(stack_bytes if stack_bytes is not None else board.stack_bytes),
    )


@dataclass(frozen=True)
class FirmwareImage:
    board: str
    elf: Path
    bin: Path | None
    hex: Path
    map: Path
    linker_script: Path
    model_info_symbol: str
    size: SizeReport
    sha256: str  # of the ELF: `measure BUILD_DIR` runs exactly this image
    image_id: str  # compiled into the harness and sent in its hello: the device names what it runs

    def moved(self, old: Path, new: Path) -> FirmwareImage:
        """The same image after its folder `old` was renamed to `new`."""

        def rebase(p: Path | None) -> Path | None:
            return None if p is None else Path(new) / Path(p).relative_to(old)

        return replace(
            self,
            elf=rebase(self.elf),
            bin=rebase(self.bin),
            hex=rebase(self.hex),
            map=rebase(self.map),
            linker_script=rebase(self.linker_script),
        )


def _run(cmd: list[str], what: str) -> subprocess.CompletedProcess[str]:
    proc = children.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise TinyschedError(f"{what} failed: {first_error_line(proc.stderr or proc.stdout)}")
    return proc


def build_firmware(
    sources: SourceSet,
    board: Board,
    out_dir: Path,
    *,
    name: str = "firmware",
    defines: list[str] | tuple[str, ...] = (),
    stack_bytes: int | None = None,
    werror: bool = True,
    with_harness: bool = True,
) -> FirmwareImage:
    """Cross-compile `sources` (a generated model module) with the harness and the board's target.

    Writes <name>.elf/.bin/.hex/.map
    and the linker script into `out_dir`. Raises DoesNotFit (a TinyschedError carrying the size
    report) when the image is larger than the board.
    """
    gcc = require_toolchain()
    out_dir = Path(out_dir)
    obj_dir = out_dir / "obj"
    obj_dir.mkdir(parents=True, exist_ok=True)
    model_info_symbol = sources.model_info_symbol
    model_sources = list(sources.c_files)
    identity = image_id(sources, board, defines)
    defines = [*defines, image_id_define(identity)]
    harness = harness_sources() if with_harness else []  # names the model: never shared
    all_sources = target_sources(board) + harness + model_sources
    cflags = [
        *board.cflags,
        *COMMON_CFLAGS,
        *WARNINGS,
        *(["-Werror"] if werror else []),
        *board_defines(board),
        f"-DTS_MODEL_INFO={model_info_symbol}",
        *(["-DTS_PROFILE_STEPS"] if with_harness else []),
        *defines,
        *[f"-I{p}" for p in [*base_include_dirs(), *sources.include_dirs]],
    ]

    own_files = set(sources.module_files)

    def compile_one(item: tuple[int, Path]) -> Path:
        index, src = item
        obj = obj_dir / f"{index:02d}_{src.stem}.o"
        shared = src not in own_files and src not in harness
        compile_object(gcc, cflags, src, obj, what=f"compiling {src.name} for {board.name}", reuse=shared)
        return obj

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        objects = list(pool.map(compile_one, enumerate(all_sources)))
    model_objects = objects[len(all_sources) - len(model_sources) :]

    ld = write_atomic(out_dir / f"{name}.ld", linker_script(board, stack_bytes))
    elf = out_dir / f"{name}.elf"
    map_file = out_dir / f"{name}.map"

    def link(script: Path, extra: list[str]) -> subprocess.CompletedProcess[str]:
        cmd = [
            gcc,
            *board.cflags,
            "-nostartfiles",
            "--specs=nano.specs",
            "--specs=nosys.specs",
            "-Wl,--gc-sections",
            f"-Wl,-Map={map_file}",
            "-T",
            str(script),
            *map(str, objects),
            "-lm",
            "-o",
            str(elf),
            *extra,
        ]
        return children.run(cmd, capture_output=True, text=True)

    proc = link(ld, [])
    constants = model_constant_names(model_objects)
    if proc.returncode != 0:
        if not re.search(r"overflowed by|will not fit in region|move location counter backward", proc.stderr):
            raise TinyschedError(f"linking for {board.name} failed: {first_error_line(proc.stderr)}")
        # Relink into enlarged regions only to measure how much is needed, then fail with the numbers.
        big = write_atomic(out_dir / f"{name}.sizing.ld", linker_script(board, stack_bytes, grow=1 << 28))
        sizing = link(big, ["-Wl,--no-check-sections"])
        if sizing.returncode != 0:
            raise TinyschedError(f"linking for {board.name} failed: {first_error_line(proc.stderr)}")
        report = size_report(elf, board, model_info_symbol, constants)
        elf.unlink(missing_ok=True)
        raise DoesNotFit(report)

    report = size_report(elf, board, model_info_symbol, constants)
    if not report.fits:
        raise DoesNotFit(report)
    hex_path = out_dir / f"{name}.hex"
    bin_path: Path | None = None
    if board.placement["text"] == board.placement["rodata"]:
        # a raw image only makes sense for one contiguous flash; QEMU and the runners use the ELF
        bin_path = out_dir / f"{name}.bin"
        _run([OBJCOPY, "-O", "binary", str(elf), str(bin_path)], "objcopy")
    _run([OBJCOPY, "-O", "ihex", str(elf), str(hex_path)], "objcopy")
    return FirmwareImage(
        board=board.name,
        elf=elf,
        bin=bin_path,
        hex=hex_path,
        map=map_file,
        linker_script=ld,
        model_info_symbol=model_info_symbol,
        size=report,
        sha256=hashlib.sha256(elf.read_bytes()).hexdigest(),
        image_id=identity,
    )


def module_stack_usage(sources: SourceSet, board: Board) -> str:
    """GCC's -fstack-usage lines for the module's steps file compiled as `build_firmware` compiles it
    for `board` (tinysched.build.stack.module_frame_bytes reads them)."""
    gcc = require_toolchain()
    steps = sources.module_files[0]
    flags = [
        *board.cflags,
        *COMMON_CFLAGS,
        *board_defines(board),
        f"-DTS_MODEL_INFO={sources.model_info_symbol}",
    ]
    flags += [f"-I{p}" for p in [*base_include_dirs(), *sources.include_dirs]]
    with tempfile.TemporaryDirectory(prefix="tinysched-stack-") as work:
        obj = Path(work, f"{steps.stem}.o")
        _run([gcc, *flags, "-fstack-usage", "-c", str(steps), "-o", str(obj)], f"compiling {steps.name}")
        return obj.with_suffix(".su").read_text()


def module_stack_bytes(module: Any, board: Board) -> int:
    """The deepest the generated module's own functions go on `board` (GCC -fstack-usage of its
    steps file; tinysched.build.stack.module_frame_bytes), for the stack reservation."""
    with tempfile.TemporaryDirectory(prefix="tinysched-frames-") as work:
        return module_frame_bytes(module_stack_usage(write_sources(module, Path(work)), board))


def toolchain_version() -> str:
    proc = children.run([require_toolchain(), "--version"], capture_output=True, text=True)
    return (proc.stdout.splitlines() or ["unknown"])[0].strip()


def firmware_metadata(image: FirmwareImage, board: Board, plan: Any, toolchain: str) -> dict[str, Any]:
    """build's own keys in <name>_metadata.json (under "build"; documented in docs/firmware.md)."""
    return {
        "kind": "firmware",
        "board": board.name,
        "emulated_by": board.emulated_by,
        "files": {
            "elf": image.elf.name,
            "bin": image.bin.name if image.bin else None,
            "hex": image.hex.name,
            "map": image.map.name,
            "linker_script": image.linker_script.name,
            "sources": "src/",
        },
        "clock": {
            "hz": board.cpu_hz,
            "source": str(board.clock.get("source", "")),
            "note": board.clock.get("note"),
        },  # the clock the firmware sets (a clock that does not come up is reported by the device)
        "model_info_symbol": image.model_info_symbol,
        "image_sha256": image.sha256,
        "image_id": image.image_id,
        "toolchain": toolchain,
        "cflags": [*board.cflags, *COMMON_CFLAGS, *WARNINGS, "-Werror"],
        "arena_bytes": int(plan.arena_bytes),
        "arena_high_water_bytes": int(plan.high_water_bytes),
        "arena_alignment": int(plan.alignment),
        "size_report": image.size.to_json(),
        "fits": image.size.fits,
        "fit_text": image.size.verdict(),
    }
