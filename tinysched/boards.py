"""The board database (boards.yaml): lookup by name or alias, and the facts every stage needs.

A board is either real (flashed over its debug probe, talked to on its tty) or emulated (run by
qemu-system-arm, talked to on a TCP socket). Every real board names the emulated board(s) that stand
in for it: same core, same FPU and the same code-generation flags. The first is the default; a
second one may run more of the board's own code (netduinoplus2, an STM32F4, for nucleo-f446re).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from tinysched.errors import TinyschedError
from tinysched.resources import load_yaml, resource

FAMILIES = ("stm32f7", "stm32f4", "stm32l4", "stm32h7", "cmsdk")
PLACEMENT_KEYS = ("text", "rodata", "data", "arena")
COUNTERS = ("dwt", "systick", "systick-icount")


@dataclass(frozen=True)
class Region:
    name: str
    origin: int
    length: int
    kind: str  # flash | ram | rom
    note: str = ""
    speed: int = 0  # rank among the RAM regions the arena may use, 1 = fastest; 0: never holds arena buffers

    @property
    def end(self) -> int:
        return self.origin + self.length

    def contains(self, addr: int, size: int = 0) -> bool:
        return self.origin <= addr and addr + size <= self.end


@dataclass(frozen=True)
class Board:
    name: str
    description: str
    mcu: str
    family: str
    core: str
    fpu: str
    float_abi: str
    cflags: tuple[str, ...]
    clock: dict[str, Any]
    memory: tuple[Region, ...]
    placement: dict[str, str]
    stack_bytes: int
    uart: dict[str, Any]
    counter: str
    flash: dict[str, str] = field(default_factory=dict)
    usb: tuple[tuple[int, int], ...] = ()
    emulated_by: str | None = None  # the default stand-in (the first of stand_ins)
    qemu: dict[str, Any] | None = None
    aliases: tuple[str, ...] = ()
    stand_ins: tuple[str, ...] = ()  # every emulated board that can stand in for this one, default first

    @property
    def emulated(self) -> bool:
        return self.qemu is not None

    @property
    def cpu_hz(self) -> int:
        return int(self.clock["hz"])

    def region(self, name: str) -> Region:
        for r in self.memory:
            if r.name == name:
                return r
        raise TinyschedError(f"board {self.name}: no memory region {name!r}")

    def placed(self, what: str) -> Region:
        """The region holding `what` (text, rodata, data or arena)."""
        return self.region(self.placement[what])

    @property
    def pool_regions(self) -> tuple[Region, ...]:
        """The RAM regions the arena may be split over, fastest first (speed rank, then address)."""
        return tuple(sorted((r for r in self.memory if r.speed > 0), key=lambda r: (r.speed, r.origin)))

    def arena_capacity(self, region: Region) -> int:
        """Bytes of `region` an arena may take by default: all of it, less the stack where the
        stack lives (.data/.bss are small and the link checks the rest)."""
        return max(region.length - (self.stack_bytes if region.name == self.placement["data"] else 0), 0)

    @property
    def flash_bytes(self) -> int:
        return sum(
            r.length for r in self.memory if r.name in {self.placement["text"], self.placement["rodata"]}
        )

    @property
    def ram_bytes(self) -> int:
        used = {self.placement["data"], self.placement["arena"], *(r.name for r in self.pool_regions)}
        return sum(r.length for r in self.memory if r.name in used)

    def stand_in(self, name: str | None = None) -> Board:
        """The board that actually runs under emulation: itself when emulated, else emulated_by, or
        the stand-in called `name` (one of stand_ins)."""
        if name is not None:
            wanted = get_board(name)
            if wanted.name == self.name and self.emulated:
                return self
            if wanted.name not in self.stand_ins:
                can = ", ".join(self.stand_ins) or "none"
                raise TinyschedError(
                    f"board {self.name}: {wanted.name} is not one of its stand-ins (stand-ins: {can})"
                )
            return wanted
        if self.emulated:
            return self
        if not self.emulated_by:
            raise TinyschedError(f"board {self.name} has no emulated stand-in")
        return get_board(self.emulated_by)

    @property
    def serial_index(self) -> int:
        """The -serial number of the harness UART under QEMU (QEMU gives -serial i to UART i)."""
        return int((self.qemu or {}).get("serial_index", 0))

    @property
    def systick_hz(self) -> int:
        """The clock QEMU drives the SysTick with (its virtual clock at the machine's SYSCLK)."""
        return int((self.qemu or {}).get("systick_hz", self.cpu_hz))

    def summary(self) -> dict[str, Any]:
        """Plain-data view, as `tinysched boards --json` prints it."""
        return {
            "name": self.name,
            "description": self.description,
            "mcu": self.mcu,
            "family": self.family,
            "core": self.core,
            "fpu": self.fpu,
            "float_abi": self.float_abi,
            "cflags": list(self.cflags),
            "clock_hz": self.cpu_hz,
            "clock_source": str(self.clock.get("source", "")),
            "clock_note": self.clock.get("note"),
            "memory": [
                {"name": r.name, "origin": r.origin, "length": r.length, "kind": r.kind, "speed": r.speed}
                for r in self.memory
            ],
            "placement": dict(self.placement),
            "stack_bytes": self.stack_bytes,
            "uart": {k: self.uart[k] for k in ("peripheral", "base", "baud") if k in self.uart},
            "counter": self.counter,
            "flash": dict(self.flash),
            "usb": [{"vid": v, "pid": p} for v, p in self.usb],
            "emulated": self.emulated,
            "emulated_by": self.emulated_by,
            "stand_ins": list(self.stand_ins),
            "qemu_machine": self.qemu["machine"] if self.qemu else None,
            "aliases": list(self.aliases),
        }


def normalise(name: str) -> str:
    """Case-insensitive, with '-', '_' and '/' treated alike (nucleo_f767zi == NUCLEO-F767ZI)."""
    return re.sub(r"[-_/]+", "-", name.strip().lower())


def _board_from_entry(name: str, entry: dict[str, Any], source: Path) -> Board:
    def need(key: str) -> Any:
        if key not in entry:
            raise TinyschedError(f"{source}: board {name}: missing field {key!r}")
        return entry[key]

    memory = tuple(
        Region(
            str(r["name"]),
            int(r["origin"]),
            int(r["length"]),
            str(r.get("kind", "ram")),
            str(r.get("note", "")),
            int(r.get("speed", 0)),
        )
        for r in need("memory")
    )
    for r in memory:
        if r.speed < 0 or (r.speed and r.kind != "ram"):
            raise TinyschedError(
                f"{source}: board {name}: region {r.name}: speed ranks RAM regions only (>= 1)"
            )
    names = {r.name for r in memory}
    placement = {k: str(v) for k, v in need("placement").items()}
    placement.setdefault("rodata", placement.get("text", ""))
    placement.setdefault("arena", placement.get("data", ""))
    for key in PLACEMENT_KEYS:
        if placement.get(key) not in names:
            raise TinyschedError(f"{source}: board {name}: placement {key} names no memory region")
    family = str(need("family"))
    if family not in FAMILIES:
        raise TinyschedError(
            f"{source}: board {name}: unknown family {family!r} (known: {', '.join(FAMILIES)})"
        )
    raw_stand_ins = entry.get("emulated_by")
    if raw_stand_ins is None:
        stand_ins: tuple[str, ...] = ()
    elif isinstance(raw_stand_ins, str):
        stand_ins = (raw_stand_ins,)
    elif isinstance(raw_stand_ins, list) and raw_stand_ins and all(isinstance(x, str) for x in raw_stand_ins):
        stand_ins = tuple(raw_stand_ins)
    else:
        raise TinyschedError(f"{source}: board {name}: emulated_by must be a board name or a list of them")
    counter = str(need("counter"))
    if counter not in COUNTERS:
        raise TinyschedError(f"{source}: board {name}: unknown counter {counter!r}")
    return Board(
        name=name,
        description=str(entry.get("description", "")),
        mcu=str(need("mcu")),
        family=family,
        core=str(need("core")),
        fpu=str(need("fpu")),
        float_abi=str(need("float_abi")),
        cflags=tuple(str(f) for f in need("cflags")),
        clock=dict(need("clock")),
        memory=memory,
        placement=placement,
        stack_bytes=int(need("stack_bytes")),
        uart=dict(need("uart")),
        counter=counter,
        flash={k: str(v) for k, v in (entry.get("flash") or {}).items()},
        usb=tuple((int(u["vid"]), int(u["pid"])) for u in entry.get("usb") or ()),
        emulated_by=stand_ins[0] if stand_ins else None,
        stand_ins=stand_ins,
        qemu=dict(entry["qemu"]) if entry.get("qemu") else None,
        aliases=tuple(str(a) for a in entry.get("aliases") or ()),
    )


@cache
def _load(path: str) -> tuple[dict[str, Board], dict[str, str]]:
    source = Path(path)
    try:
        data = load_yaml(source.read_text())
    except OSError as err:
        raise TinyschedError(f"{source}: cannot read board database: {err.strerror or err}") from None
    except yaml.YAMLError as err:
        raise TinyschedError(f"{source}: not valid YAML: {err}") from None
    entries = (data or {}).get("boards") or {}
    boards = {name: _board_from_entry(name, entry, source) for name, entry in entries.items()}
    index: dict[str, str] = {}
    for board in boards.values():
        for key in (board.name, *board.aliases):
            norm = normalise(key)
            if index.get(norm, board.name) != board.name:
                raise TinyschedError(f"{source}: name {key!r} is used by {index[norm]} and {board.name}")
            index[norm] = board.name
    for board in boards.values():
        for name in board.stand_ins:
            stand_in = boards.get(name)
            if stand_in is None or not stand_in.emulated:
                raise TinyschedError(
                    f"{source}: board {board.name}: emulated_by {name!r} is not an emulated board"
                )
            if stand_in.cflags != board.cflags:
                raise TinyschedError(
                    f"{source}: board {board.name}: stand-in {stand_in.name} has other cflags"
                )
        if board.emulated and board.stand_ins:
            raise TinyschedError(f"{source}: board {board.name}: an emulated board has no emulated_by")
        if not board.stand_ins and not board.emulated:
            raise TinyschedError(f"{source}: board {board.name}: a real board needs emulated_by")
    return boards, index


def boards_path() -> Path:
    return resource("boards.yaml")


def all_boards(path: str | Path | None = None) -> list[Board]:
    boards, _ = _load(str(path or boards_path()))
    return list(boards.values())


def get_board(name: str, path: str | Path | None = None) -> Board:
    """The board called `name` or one of its aliases; an unknown name lists the known ones."""
    boards, index = _load(str(path or boards_path()))
    found = index.get(normalise(name))
    if found is None:
        import difflib

        known = ", ".join(sorted(boards))
        close = difflib.get_close_matches(normalise(name), list(index), n=1, cutoff=0.6)
        hint = f"; did you mean {index[close[0]]}?" if close else ""
        raise TinyschedError(f"unknown board {name!r}{hint} known boards: {known} (see `tinysched boards`)")
    return boards[found]
