"""Cross-building a firmware image for a board, and its size report read back from the ELF.

`build_firmware` compiles a model module (already generated C), the device harness and the board's
target code with arm-none-eabi-gcc, links them with a linker script generated from the board's
memory regions (targets/linker.ld.j2), writes .elf, .bin and .hex, and reads flash and RAM use
per region from the ELF with pyelftools. A model that does not fit fails with the numbers.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import jinja2
from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from tinysched.boards import Board
from tinysched.errors import TinyschedError
from tinysched.files import write_atomic
from tinysched.resources import resource

CC = "arm-none-eabi-gcc"
OBJCOPY = "arm-none-eabi-objcopy"
WARNINGS = ("-Wall", "-Wextra")
COMMON_CFLAGS = ("-O2", "-g", "-std=gnu11", "-ffunction-sections", "-fdata-sections", "-fno-common")
TIGHT_MARGIN = 0.05  # below 5 % free in a region the report says so


# ---- paths ---------------------------------------------------------------------------------------


def targets_dir() -> Path:
    return resource("targets")


def firmware_dir() -> Path:
    return resource("firmware")


def target_sources(board: Board) -> list[Path]:
    """Startup, counter and the family's clock/UART code."""
    t = targets_dir()
    return [t / "common" / "startup.c", t / "common" / "counter.c", t / board.family / "target.c"]


def harness_sources() -> list[Path]:
    return [firmware_dir() / "harness" / "harness.c"]


def selftest_sources() -> list[Path]:
    """The hand-written test model (firmware/harness/selftest_model.c), symbol `selftest_info`."""
    return [firmware_dir() / "harness" / "selftest_model.c"]


def base_include_dirs() -> list[Path]:
    return [targets_dir() / "include", firmware_dir() / "include", firmware_dir() / "harness"]


def require_toolchain() -> str:
    gcc = shutil.which(CC)
    if gcc is None or shutil.which(OBJCOPY) is None:
        raise TinyschedError(
            f"{CC} not found: install Debian's gcc-arm-none-eabi and libnewlib-arm-none-eabi (`make setup`)"
        )
    return gcc


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
        placement=board.placement,
        stack_bytes=int(stack_bytes if stack_bytes is not None else board.stack_bytes),
    )


# ---- size report -----------------------------------------------------------------------------------


@dataclass
class RegionUse:
    name: str
    origin: int
    length: int
    kind: str
    used: int

    @property
    def free(self) -> int:
        return self.length - self.used

    @property
    def fits(self) -> bool:
        return self.used <= self.length


@dataclass
class SizeReport:
    board: str
    flash_code: int
    flash_weights: int
    flash_other: int
    ram_arena: int
    ram_stack: int
    ram_other: int
    arena_bytes_planned: int | None
    regions: list[RegionUse] = field(default_factory=list)

    @property
    def flash_total(self) -> int:
        return self.flash_code + self.flash_weights + self.flash_other

    @property
    def ram_total(self) -> int:
        return self.ram_arena + self.ram_stack + self.ram_other

    @property
    def fits(self) -> bool:
        return all(r.fits for r in self.regions)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["flash_total"] = self.flash_total
        out["ram_total"] = self.ram_total
        out["fits"] = self.fits
        for r, rj in zip(self.regions, out["regions"], strict=True):
            rj["free"] = r.free
            rj["fits"] = r.fits
        return out

    @property
    def tightest(self) -> RegionUse | None:
        """The used region with the least free space, relative to its size."""
        used = [r for r in self.regions if r.used and r.length]
        return min(used, key=lambda r: r.free / r.length, default=None)

    def verdict(self) -> str:
        """One line: fits with margin, fits but tight, or does not fit (with the numbers)."""
        over = [r for r in self.regions if not r.fits]
        if over:
            return "DOES NOT FIT the board: " + "; ".join(
                f"{r.name} overflows by {-r.free:,} B ({r.used:,} of {r.length:,} B)" for r in over
            )
        t = self.tightest
        if t is None:
            return "fits the board"
        margin = f"{t.free:,} B ({100.0 * t.free / t.length:.1f}%) free in {t.name}"
        if t.free < TIGHT_MARGIN * t.length:
            return f"fits the board, tight: only {margin} (under {TIGHT_MARGIN:.0%})"
        return f"fits the board with margin: at least {margin}"

    def lines(self) -> list[str]:
        """The report as printed by `tinysched build --board` (the region table like ld's
        --print-memory-usage)."""
        out = [
            f"size report for {self.board} (read from the ELF)",
            f"  flash {self.flash_total:>10,} B   code {self.flash_code:,} B, weights {self.flash_weights:,} B, "
            f"other constants and .data image {self.flash_other:,} B",
            f"  RAM   {self.ram_total:>10,} B   arena {self.ram_arena:,} B, stack {self.ram_stack:,} B, "
            f"everything else {self.ram_other:,} B",
            "",
            f"  {'Region':<10} {'Used':>12} {'Size':>12} {'%Used':>8} {'Free':>12}  Origin",
        ]
        for r in self.regions:
            if r.used == 0:
                continue
            pct = 100.0 * r.used / r.length if r.length else 100.0
            flag = "  OVERFLOW" if not r.fits else ("  tight" if r.free < TIGHT_MARGIN * r.length else "")
            out.append(
                f"  {r.name:<10} {r.used:>10,} B {r.length:>10,} B {pct:>7.2f}% {r.free:>10,} B  {r.origin:#010x}{flag}"
            )
        out += ["", "  " + self.verdict()]
        return out


@dataclass
class FirmwareImage:
    board: str
    elf: Path
    bin: Path | None
    hex: Path
    map: Path
    linker_script: Path
    model_info_symbol: str
    size: SizeReport


class DoesNotFit(TinyschedError):
    """The image is larger than the board; `report` has the numbers."""

    def __init__(self, report: SizeReport):
        over = [
            f"{r.name} by {-r.free:,} B (needs {r.used:,} of {r.length:,} B)"
            for r in report.regions
            if not r.fits
        ]
        super().__init__(
            f"does not fit {report.board}: overflows {'; '.join(over)}; "
            f"flash {report.flash_total:,} B (weights {report.flash_weights:,} B), "
            f"RAM {report.ram_total:,} B (arena {report.ram_arena:,} B, stack {report.ram_stack:,} B)"
        )
        self.report = report


def _symbols(elf: ELFFile) -> list[Any]:
    tab = elf.get_section_by_name(".symtab")
    return list(tab.iter_symbols()) if isinstance(tab, SymbolTableSection) else []


def _read_at(elf: ELFFile, addr: int, size: int) -> bytes | None:
    for sec in elf.iter_sections():
        if sec["sh_type"] == "SHT_NOBITS" or not sec["sh_flags"] & SH_FLAGS.SHF_ALLOC:
            continue
        if sec["sh_addr"] <= addr and addr + size <= sec["sh_addr"] + sec["sh_size"]:
            off = addr - sec["sh_addr"]
            return sec.data()[off : off + size]
    return None


def model_constant_names(objects: list[Path]) -> set[str]:
    """Names of the read-only data objects the model's own object files define (its weights)."""
    names: set[str] = set()
    for obj in objects:
        with obj.open("rb") as handle:
            elf = ELFFile(handle)
            sections = [s.name for s in elf.iter_sections()]
            for sym in _symbols(elf):
                ndx = sym["st_shndx"]
                if (
                    sym["st_info"]["type"] == "STT_OBJECT"
                    and isinstance(ndx, int)
                    and sections[ndx].startswith(".rodata")
                ):
                    names.add(sym.name)
    return names


def size_report(elf_path: Path, board: Board, model_info_symbol: str, constant_names: set[str]) -> SizeReport:
    """Flash and RAM use of a linked image, per role and per region of `board`."""
    with elf_path.open("rb") as handle:
        elf = ELFFile(handle)
        segments = [s for s in elf.iter_segments() if s["p_type"] == "PT_LOAD"]
        sizes: dict[str, int] = {}
        region_use = {r.name: 0 for r in board.memory}

        def charge(addr: int, size: int) -> None:
            inside = [r for r in board.memory if r.origin <= addr < r.end]
            # beyond every region (only in an oversized relink): the nearest region below
            below = inside or [r for r in board.memory if r.origin <= addr]
            if below:
                region_use[max(below, key=lambda r: r.origin).name] += size

        for sec in elf.iter_sections():
            if not sec["sh_flags"] & SH_FLAGS.SHF_ALLOC or sec["sh_size"] == 0:
                continue
            name, addr, size = sec.name, sec["sh_addr"], sec["sh_size"]
            sizes[name] = sizes.get(name, 0) + size
            if name == ".heap":
                continue  # free RAM, handed to the harness at run time
            charge(addr, size)
            if sec["sh_type"] != "SHT_NOBITS":
                for seg in segments:
                    if seg["p_vaddr"] <= addr < seg["p_vaddr"] + max(seg["p_memsz"], 1):
                        lma = seg["p_paddr"] + (addr - seg["p_vaddr"])
                        if lma != addr:
                            charge(lma, size)
                        break

        symbols = _symbols(elf)
        seen: set[tuple[str, int]] = set()
        weights = 0
        for sym in symbols:
            if sym["st_info"]["type"] == "STT_OBJECT" and sym.name in constant_names:
                key = (sym.name, sym["st_value"])
                if key not in seen:
                    seen.add(key)
                    weights += sym["st_size"]

        arena_alloc = sizes.get(".ts_arena", 0)
        planned = None
        info = next((s for s in symbols if s.name == model_info_symbol), None)
        if info is not None:
            raw = _read_at(elf, info["st_value"], 28)
            if raw is not None and len(raw) == 28:
                _name, _bid, arena_ptr, arena_bytes, _align, _state, _state_bytes = struct.unpack("<7I", raw)
                planned = arena_bytes
                arena_sym = next(
                    (
                        s
                        for s in symbols
                        if s["st_info"]["type"] == "STT_OBJECT"
                        and s["st_value"] == arena_ptr
                        and s["st_size"]
                    ),
                    None,
                )
                arena_alloc = arena_sym["st_size"] if arena_sym is not None else arena_bytes

    rodata = sizes.get(".rodata", 0) + sizes.get(".ARM.exidx", 0)
    ram_static = sizes.get(".data", 0) + sizes.get(".bss", 0) + sizes.get(".ts_arena", 0)
    return SizeReport(
        board=board.name,
        flash_code=sizes.get(".text", 0),
        flash_weights=weights,
        flash_other=max(rodata - weights, 0) + sizes.get(".data", 0),
        ram_arena=arena_alloc,
        ram_stack=sizes.get(".stack", 0),
        ram_other=max(ram_static - arena_alloc, 0),
        arena_bytes_planned=planned,
        regions=[RegionUse(r.name, r.origin, r.length, r.kind, region_use[r.name]) for r in board.memory],
    )


# ---- build -------------------------------------------------------------------------------------------


def _run(cmd: list[str], what: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise TinyschedError(f"{what} failed:\n$ {' '.join(cmd)}\n{(proc.stderr or proc.stdout).strip()}")
    return proc


def build_firmware(
    sources: list[Path],
    include_dirs: list[Path],
    model_info_symbol: str,
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

    `model_info_symbol` names the module's `const ts_model_info`. Writes <name>.elf/.bin/.hex/.map
    and the linker script into `out_dir`. Raises DoesNotFit (a TinyschedError carrying the size
    report) when the image is larger than the board.
    """
    gcc = require_toolchain()
    out_dir = Path(out_dir)
    obj_dir = out_dir / "obj"
    obj_dir.mkdir(parents=True, exist_ok=True)
    model_sources = [Path(s) for s in sources]
    all_sources = target_sources(board) + (harness_sources() if with_harness else []) + model_sources
    cflags = [
        *board.cflags,
        *COMMON_CFLAGS,
        *WARNINGS,
        *(["-Werror"] if werror else []),
        *board_defines(board),
        f"-DTS_MODEL_INFO={model_info_symbol}",
        *defines,
        *[f"-I{p}" for p in [*base_include_dirs(), *map(Path, include_dirs)]],
    ]

    def compile_one(item: tuple[int, Path]) -> Path:
        index, src = item
        obj = obj_dir / f"{index:02d}_{src.stem}.o"
        _run([gcc, *cflags, "-c", str(src), "-o", str(obj)], f"compiling {src} for {board.name}")
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
        return subprocess.run(cmd, capture_output=True, text=True)

    proc = link(ld, [])
    constants = model_constant_names(model_objects)
    if proc.returncode != 0:
        if not re.search(r"overflowed by|will not fit in region|move location counter backward", proc.stderr):
            raise TinyschedError(f"linking for {board.name} failed:\n{proc.stderr.strip()}")
        # Relink into enlarged regions only to measure how much is needed, then fail with the numbers.
        big = write_atomic(out_dir / f"{name}.sizing.ld", linker_script(board, stack_bytes, grow=1 << 28))
        sizing = link(big, ["-Wl,--no-check-sections"])
        if sizing.returncode != 0:
            raise TinyschedError(f"linking for {board.name} failed:\n{proc.stderr.strip()}")
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
    )


# ---- `tinysched build MODEL --board B -o DIR` for a microcontroller board ------------------------------


@dataclass
class BoardBuild:
    """What `build --board B` wrote into `directory` (which appeared atomically)."""

    directory: Path
    board: Board
    image: FirmwareImage
    module: Any
    graph: Any
    schedule: Any
    plan: Any
    metadata: Path | None


def _toolchain_version(gcc: str) -> str:
    proc = subprocess.run([gcc, "--version"], capture_output=True, text=True)
    return (proc.stdout.splitlines() or ["unknown"])[0].strip()


def build_for_board(
    model: str | Path,
    out_dir: str | Path,
    board: Board | str,
    *,
    prefix: str | None = None,
    alignment: int = 16,
    time_limit: float = 1.0,
    recompute: Any = None,
    report: bool = True,
) -> BoardBuild:
    """Generates the model module (the same code generator as `--board host`), cross-compiles it with
    the harness and the board's target into `out_dir`: <name>.elf/.bin/.hex/.map/.ld, the sources
    under src/, and <name>_metadata.json (plus the report rendered from it) unless `report` is off.

    Everything is built in a temporary sibling of `out_dir` that is renamed into place only when the
    image fits; a model that does not fit raises DoesNotFit and leaves nothing behind."""
    from tinysched.boards import get_board
    from tinysched.hostbuild import _replace_dir, generate_module, write_sources

    board = get_board(board) if isinstance(board, str) else board
    gcc = require_toolchain()
    graph, schedule, plan, module = generate_module(model, prefix, alignment, time_limit, recompute)
    target = Path(out_dir).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    name = module.prefix
    try:
        src = staging / "src"
        write_sources(module, graph, src)
        for host_only in ("runner.c", "Makefile"):  # the host runner; the harness replaces it here
            (src / host_only).unlink(missing_ok=True)
        sources = [src / f"{name}.c", src / f"{name}_weights.c"]
        sources += [src / "tinysched" / "kernels" / f"{k}.c" for k in module.kernels]
        includes = [src, src / "tinysched" / "include", src / "tinysched" / "kernels"]
        image = build_firmware(sources, includes, f"{name}_info", board, staging, name=name)
        shutil.rmtree(staging / "obj", ignore_errors=True)
        metadata = None
        if report:
            from tinysched.report import write_build_report

            extra = firmware_metadata(image, board, plan, _toolchain_version(gcc))
            written = write_build_report(
                staging,
                name,
                model,
                (graph, schedule, plan),
                board=board,
                size=image.size.to_json(),
                extra=extra,
            )
            metadata = target / written["json"].name
        _replace_dir(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise

    def moved(p: Path | None) -> Path | None:
        return None if p is None else target / p.relative_to(staging)

    image = FirmwareImage(
        board=image.board,
        elf=target / image.elf.name,
        bin=moved(image.bin),
        hex=target / image.hex.name,
        map=target / image.map.name,
        linker_script=target / image.linker_script.name,
        model_info_symbol=image.model_info_symbol,
        size=image.size,
    )
    return BoardBuild(target, board, image, module, graph, schedule, plan, metadata)


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
        "model_info_symbol": image.model_info_symbol,
        "toolchain": toolchain,
        "cflags": [*board.cflags, *COMMON_CFLAGS, *WARNINGS, "-Werror"],
        "arena_bytes": int(plan.arena_bytes),
        "arena_high_water_bytes": int(plan.high_water_bytes),
        "arena_alignment": int(plan.alignment),
        "size_report": image.size.to_json(),
        "fits": image.size.fits,
        "fit_text": image.size.verdict(),
    }


def cmd_build_board(args: Any) -> int:
    """`tinysched build MODEL --board B -o DIR` for a microcontroller board (hostbuild routes here)."""
    from tinysched.recompute import request_from_args

    result = build_for_board(
        args.model,
        args.output,
        args.board,
        prefix=args.prefix,
        alignment=args.alignment,
        time_limit=args.time_limit,
        recompute=request_from_args(args),
        report=not getattr(args, "no_report", False),
    )
    module, plan, board, image = result.module, result.plan, result.board, result.image
    stand_in = f", emulated by {board.emulated_by}" if board.emulated_by else ""
    print(f"model       {result.graph.source}  (sha256 {result.graph.sha256[:16]}...)")
    print(f"board       {board.name}: {board.mcu}, {board.core} at {board.cpu_hz / 1e6:.0f} MHz{stand_in}")
    print(
        f"arena       {plan.arena_bytes:,} B allocated, high-water {plan.high_water_bytes:,} B, "
        f"aligned to {module.alignment}"
    )
    print(f"weights     {module.weights_bytes:,} B (const arrays, in flash)")
    print(f"kernels     {', '.join(module.kernels)}")
    print()
    print("\n".join(image.size.lines()))
    print()
    files = [image.elf, image.bin, image.hex, image.map]
    print(f"wrote       {result.directory}/ ({', '.join(p.name for p in files if p)}, src/)")
    if result.metadata is not None:
        print(f"metadata    {result.metadata}  (and the report beside it)")
    return 0
