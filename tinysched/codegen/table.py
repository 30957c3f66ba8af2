"""The one table of lowerings: opcode -> the function that turns such an operator into a kernel call.

A lowering is a free function `(ctx, op, call) -> None`: it checks the operator's operands and
options against what its kernel covers (raising `Unsupported` otherwise), computes the kernel's
parameters the way TFLite's `Prepare` would, and fills in `call`. Lowering modules register theirs
with the `lowering` decorator when they are imported (`tinysched/codegen/__init__.py` imports them
all); `SUPPORTED_OPS` is this table's keys."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tinysched.codegen.context import KernelCall, LoweringContext
from tinysched.codegen.errors import Unsupported
from tinysched.codegen.kernel_checks import check_call
from tinysched.errors import TinyschedError
from tinysched.model.graph import Operator

Lowering = Callable[[LoweringContext, Operator, KernelCall], None]


@dataclass(frozen=True)
class _Entry:
    lower: Lowering
    stateful: bool  # keeps its variable tensors in the state buffer (outside the arena)
    internal: bool  # an operator tinysched makes (a streamed pair), never one of a model file


_TABLE: dict[str, _Entry] = {}


def lowering(*opcodes: str, stateful: bool = False, internal: bool = False) -> Callable[[Lowering], Lowering]:
    """Register the decorated function as the lowering of each of `opcodes`.

    `stateful`: the operator reads and writes variable tensors, which then live in the state buffer
    the generated module keeps across invocations. `internal`: an operator only tinysched's own
    rewrites make, left out of the supported list users see."""

    def register(fn: Lowering) -> Lowering:
        for opcode in opcodes:
            if opcode in _TABLE:
                raise ValueError(f"two lowerings registered for {opcode}")
            _TABLE[opcode] = _Entry(fn, stateful, internal)
        return fn

    return register


def registered_lowerings() -> dict[str, Lowering]:
    """A copy of the table: opcode -> its lowering."""
    return {opcode: entry.lower for opcode, entry in _TABLE.items()}


def supported_ops() -> tuple[str, ...]:
    """Every model opcode with a lowering, sorted (tinysched's internal operators left out)."""
    return tuple(sorted(opcode for opcode, entry in _TABLE.items() if not entry.internal))


def lowered_ops() -> frozenset[str]:
    """Every opcode the generator lowers, internal operators included."""
    return frozenset(_TABLE)


def stateful_ops() -> tuple[str, ...]:
    """The opcodes whose variable tensors the generator keeps in the state buffer, sorted."""
    return tuple(sorted(opcode for opcode, entry in _TABLE.items() if entry.stateful))


def lower(ctx: LoweringContext, op: Operator, step: int, label: str = "") -> KernelCall:
    """The kernel call for operator `op` at `step`, or a one-line TinyschedError naming it
    (`label`: the name its parameters get, for an operator run inside a fused one)."""
    entry = _TABLE.get(op.opcode)
    if entry is None:
        raise TinyschedError(
            f"operator {op.index} ({op.opcode}) is not supported by the code generator; "
            f"supported: {', '.join(supported_ops())}"
        )
    call = KernelCall(op.index, step, op.opcode, "", "", [], [], label=label)
    try:
        entry.lower(ctx, op, call)
        check_call(call)  # what the kernel would refuse at run time, refused now
    except Unsupported as why:
        raise TinyschedError(
            f"operator {op.index} ({op.opcode}) is not supported by the code generator: {why}"
        ) from None
    except (KeyError, IndexError, ValueError) as why:
        raise TinyschedError(
            f"operator {op.index} ({op.opcode}) is not supported by the code generator: "
            f"unexpected operands or options ({type(why).__name__}: {why})"
        ) from None
    return call
