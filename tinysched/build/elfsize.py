"""Flash and RAM use of a linked image, per role and per memory region, read from the ELF.

The numbers come from the sections and symbols of the ELF (pyelftools), the way the linker's
`--print-memory-usage` table does, never from estimates: weights are the read-only objects the
model's own object files define, the arena is the object `<prefix>_info` points at.
"""

from __future__ import annotations

import struct
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from tinysched.boards import Board
from tinysched.errors import EXIT_DOES_NOT_FIT, TinyschedError

TIGHT_MARGIN = 0.05  # below 5 % free in a region the report says so


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
    # a split arena (tinysched.arena.pools): each region's static array as linked, {region, symbol,
    # address, bytes, memory} where memory is the board region its address lies in
    arena_regions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def flash_total(self) -> int:
        return self.flash_code + self.flash_weights + self.flash_other

    @property
    def ram_total(self) -> int:
        return self.ram_arena + self.ram_stack + self.ram_other

    @property
    def fits(self) -> bool:
        return all(r.fits for r in self.regions)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SizeReport:
        """The report as `to_json` wrote it (a build's metadata), without the ELF's object files."""
        regions = [
            RegionUse(r["name"], r["origin"], r["length"], r["kind"], r["used"]) for r in data["regions"]
        ]
        fields = (
            "board",
            "flash_code",
            "flash_weights",
            "flash_other",
            "ram_arena",
            "ram_stack",
            "ram_other",
        )
        return cls(**{k: data[k] for k in fields}, arena_bytes_planned=data.get("arena_bytes_planned"),
                   regions=regions, arena_regions=list(data.get("arena_regions") or []))  # fmt: skip

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
        if self.arena_regions:
            n = len(self.arena_regions)
            out += ["", f"  split arena: {n} region{'' if n == 1 else 's'}, each its own array"]
            for a in self.arena_regions:
                where = a["memory"] or "no region of the board"
                out.append(f"  {a['region']:<10} {a['bytes']:>10,} B at {a['address']:#010x} in {where}")
        out += ["", "  " + self.verdict()]
        return out


class DoesNotFit(TinyschedError):
    """The image is larger than the board; `report` has the numbers. Exit code 3."""

    exit_code = EXIT_DOES_NOT_FIT

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


def elf_symbols(elf: ELFFile) -> list[Any]:
    tab = elf.get_section_by_name(".symtab")
    return list(tab.iter_symbols()) if isinstance(tab, SymbolTableSection) else []


def read_at(elf: ELFFile, addr: int, size: int) -> bytes | None:
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
            for sym in elf_symbols(elf):
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

        symbols = elf_symbols(elf)
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
            raw = read_at(elf, info["st_value"], 28)
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
        split = split_arena_symbols(symbols, model_info_symbol, board)
        if split:
            arena_alloc = sum(a["bytes"] for a in split)

    rodata = sizes.get(".rodata", 0) + sizes.get(".ARM.exidx", 0)
    ram_static = sizes.get(".data", 0) + sizes.get(".bss", 0) + sizes.get(".ts_arena", 0)
    ram_static += sum(n for name, n in sizes.items() if name.startswith(".ts_arena_"))
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
        arena_regions=split,
    )


def split_arena_symbols(symbols: list[Any], model_info_symbol: str, board: Board) -> list[dict[str, Any]]:
    """The arrays `<prefix>_arena_<region>` of a split arena (codegen.arena_regions), by address."""
    stem = model_info_symbol.removesuffix("_info") + "_arena_"
    found = []
    for sym in symbols:
        if sym["st_info"]["type"] == "STT_OBJECT" and sym.name.startswith(stem) and sym["st_size"]:
            addr = int(sym["st_value"])
            memory = next((r.name for r in board.memory if r.origin <= addr < r.end), None)
            found.append(
                {"region": sym.name[len(stem) :], "symbol": sym.name, "address": addr,
                 "bytes": int(sym["st_size"]), "memory": memory}
            )  # fmt: skip
    return sorted(found, key=lambda a: a["address"])
