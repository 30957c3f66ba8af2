"""The firmware's stack reservation: from the stack measured per kernel, not a guess per board.

targets/kernel_stack.yaml (written by bench/kernel_stack.py on QEMU) gives, per C kernel, the deepest
stack a model calling it reached, and the deepest the device harness went around an invoke. A build
reserves max over the model's kernels + the harness's + the model's own frames (GCC -fstack-usage of
the generated steps, `module_frame_bytes`), plus MARGIN_PERCENT and MARGIN_BYTES (other
cores and compilers lay frames out a little differently; an interrupt frame needs room too). A model
that calls a kernel the table does not know gets the board's `stack_bytes`, and `--stack BYTES` wins
over both. The reservation and how it was chosen go into the build's metadata.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from tinysched.boards import Board
from tinysched.errors import TinyschedError
from tinysched.resources import load_yaml, resource

MARGIN_PERCENT = 25
MARGIN_BYTES = 256
ROUND_TO = 16  # the stack section's size keeps the 8-byte alignment AAPCS asks for, with room


@dataclass(frozen=True)
class KernelStackTable:
    """targets/kernel_stack.yaml: bytes per kernel file stem (ts_conv2d_s8, ...), the deepest over
    every measured board, the same per core where measured (`by_core`), and the harness's."""

    kernels: dict[str, int]
    harness_bytes: int
    measured_on: tuple[str, ...]
    by_core: dict[str, dict[str, int]] = field(default_factory=dict)

    def kernel_bytes(self, kernel: str, core: str | None = None) -> int:
        """The kernel's figure on `core` where that core was measured, else the deepest of all."""
        return self.by_core.get(kernel, {}).get(core or "", self.kernels[kernel])


@dataclass(frozen=True)
class StackReservation:
    """The bytes reserved for the stack, the measured need they come from (None when not known) and
    a one-line basis for the report."""

    bytes: int
    measured_bytes: int | None
    basis: str
    unmeasured: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "bytes": self.bytes,
            "measured_bytes": self.measured_bytes,
            "basis": self.basis,
            "unmeasured_kernels": list(self.unmeasured),
        }


def kernel_stack_path() -> Path:
    return resource("targets") / "kernel_stack.yaml"


@cache
def _load(path: str) -> KernelStackTable:
    source = Path(path)
    try:
        doc = load_yaml(source.read_text()) or {}
        entries = (doc.get("kernels") or {}).items()
        kernels = {str(k): int(v["bytes"]) for k, v in entries}
        by_core = {str(k): {str(c): int(b) for c, b in (v.get("by_core") or {}).items()} for k, v in entries}
        measured_on = tuple(doc.get("measured_on") or ())
        return KernelStackTable(kernels, int(doc["harness_bytes"]), measured_on, by_core)
    except OSError as err:
        raise TinyschedError(f"{source}: cannot read the kernel stack table: {err.strerror or err}") from None
    except (yaml.YAMLError, KeyError, TypeError, ValueError) as err:
        raise TinyschedError(f"{source}: not a kernel stack table ({err})") from None


def kernel_stack_table(path: str | Path | None = None) -> KernelStackTable:
    return _load(str(path or kernel_stack_path()))


def with_margin(measured: int) -> int:
    """measured + MARGIN_PERCENT % + MARGIN_BYTES, rounded up to ROUND_TO."""
    raw = measured + (measured * MARGIN_PERCENT + 99) // 100 + MARGIN_BYTES
    return -(-raw // ROUND_TO) * ROUND_TO


_STEP_FUNCTION = re.compile(r"_steps_\d+$")


def module_frame_bytes(stack_usage: str) -> int:
    """The deepest the generated module's own functions go, from GCC's -fstack-usage lines
    (`file:line:col:name<TAB>bytes<TAB>kind`) of its C file: every function but the step functions,
    plus the largest step function (the invoke calls them one after another). A bound, not a
    measurement: the table's kernel figures hold the frames of the invokes they were measured with
    too, so a model's own frames are counted twice rather than missed (a streamed chain's step
    keeps each stage's parameters in its frame: hundreds of bytes the table's models did not have)."""
    steps, others = [0], 0
    for line in stack_usage.splitlines():
        fields = line.split("\t")
        if len(fields) < 2 or not fields[1].strip().isdigit():
            continue
        name, frame = fields[0].rsplit(":", 1)[-1], int(fields[1])
        if _STEP_FUNCTION.search(name):
            steps.append(frame)
        else:
            others += frame
    return others + max(steps)


def stack_reservation(
    board: Board,
    kernels: Iterable[str],
    requested: int | None = None,
    table: KernelStackTable | None = None,
    module_bytes: int = 0,
) -> StackReservation:
    """How much stack a build of a model calling `kernels` (file stems, GeneratedModule.kernels)
    reserves on `board`: `requested` (--stack) when given, else the measured need (with the
    module's own frames, `module_frame_bytes`) plus margin, else (a kernel never measured) the
    board's stack_bytes."""
    table = table or kernel_stack_table()
    used = sorted(set(kernels))
    unmeasured = tuple(k for k in used if k not in table.kernels)
    measured = None
    if not unmeasured:
        deepest_bytes = max((table.kernel_bytes(k, board.core) for k in used), default=0)
        measured = deepest_bytes + table.harness_bytes + module_bytes
    if requested is not None:
        return StackReservation(int(requested), measured, "--stack", unmeasured)
    if measured is None:
        return StackReservation(
            board.stack_bytes,
            None,
            f"the board's stack_bytes: no stack measured for {', '.join(unmeasured)} (targets/kernel_stack.yaml)",
            unmeasured,
        )
    deepest = max(used, key=lambda k: table.kernel_bytes(k, board.core)) if used else "none"
    deepest_bytes = table.kernel_bytes(deepest, board.core) if used else 0
    return StackReservation(
        with_margin(measured),
        measured,
        f"measured {measured:,} B (deepest kernel {deepest} {deepest_bytes:,} B + harness "
        f"{table.harness_bytes:,} B"
        + (f" + the model's own frames {module_bytes:,} B" if module_bytes else "")
        + f") + {MARGIN_PERCENT}% + {MARGIN_BYTES} B",
    )


def invoke_stack(
    kernels: Iterable[str], table: KernelStackTable | None = None, core: str | None = None
) -> StackReservation | None:
    """The stack one invoke of a model calling `kernels` (file stems) needs in the application's own
    firmware: the deepest kernel's measured bytes (its frames and the generated invoke's, GCC -O2 on
    the table's QEMU boards; on `core`'s where it was measured), without the harness and without
    margin; None when one is unmeasured."""
    table = table or kernel_stack_table()
    used = sorted(set(kernels))
    if not used or any(k not in table.kernels for k in used):
        return None
    deepest = max(used, key=lambda k: table.kernel_bytes(k, core))
    measured = table.kernel_bytes(deepest, core)
    return StackReservation(
        measured,
        measured,
        f"measured: deepest kernel {deepest} {measured:,} B (GCC -O2, {', '.join(table.measured_on)}; "
        "more at -O0)",
    )
