"""How long the in-place pointers of the generated API hold their data (`<prefix>_input(i)`,
`<prefix>_output(i)`, docs/integration.md).

A graph input lives at its planned offset in the arena: the application may write it there and run
`<prefix>_invoke_in_place()`, which copies nothing. The plan is free to give those bytes to another
tensor once the input is dead (or, in the refined memory model, to the output of the step that reads
it last), so after that step they no longer hold the input. A graph output lives at its final
offset from the step that writes it to the end of the invoke; the next input written in place may
land on it. This module reads that off the placement, once, for the header's comments: which step
first writes over each input's bytes, and which inputs each output shares bytes with.

Views, slices and in-place concatenations share their root's storage (tinysched.memory.overlap); a tensor
of the same storage as the input is the input's bytes seen another way, not a write over them.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tinysched.model.graph import Graph


@dataclass(frozen=True)
class InputReuse:
    """The first write over an input's bytes during one invoke (None: its bytes are never reused)."""

    step: int  # position in the run order
    operator: int  # the planned operator run at that step
    opcode: str
    tensor: int  # the tensor it writes there


@dataclass(frozen=True)
class EdgeLifetimes:
    """Per graph input, the first reuse of its bytes; per graph output, the inputs it overlaps."""

    inputs: tuple[InputReuse | None, ...]
    outputs: tuple[tuple[int, ...], ...]  # input positions whose bytes each output shares


def _overlaps(a: int, a_bytes: int, b: int, b_bytes: int) -> bool:
    return a_bytes > 0 and b_bytes > 0 and a < b + b_bytes and b < a + a_bytes


def edge_lifetimes(
    graph: Graph,
    plan: Any,
    inputs: Sequence[tuple[int, int, int]],
    outputs: Sequence[tuple[int, int, int]],
    storage: Any = None,
) -> EdgeLifetimes:
    """`inputs` / `outputs`: (tensor, offset, bytes) of each graph edge as the generated code places
    it (outputs at their final instance); `plan` an ArenaPlan of `graph`'s run order; `storage`
    maps a tensor to the tensor holding its bytes (default: the plan's memory model's)."""
    if storage is None:
        from tinysched.memory.overlap import memory_model

        storage = memory_model(graph, getattr(plan, "memory_model", "tensor")).buffer
    order = list(plan.order)
    reuses: list[InputReuse | None] = []
    for tensor, offset, nbytes in inputs:
        own = storage(tensor)
        writers = [
            p
            for p in plan.buffers
            if _overlaps(p.offset, p.bytes, offset, nbytes)
            and not (p.index == tensor and getattr(p, "instance", 0) == 0)
            and storage(p.index) != own
        ]
        first = min(writers, key=lambda p: (p.first_step, p.index), default=None)
        if first is None:
            reuses.append(None)
        else:
            v = order[first.first_step]
            reuses.append(InputReuse(first.first_step, v, graph.operators[v].opcode, first.index))
    shared = tuple(
        tuple(k for k, (_, i_off, i_bytes) in enumerate(inputs) if _overlaps(offset, nbytes, i_off, i_bytes))
        for _, offset, nbytes in outputs
    )
    return EdgeLifetimes(tuple(reuses), shared)


NOTE_WIDTH = 96  # characters of comment text per header line


def _wrapped(text: str) -> list[str]:
    return textwrap.wrap(text, NOTE_WIDTH, break_long_words=False, break_on_hyphens=False)


def input_note(prefix: str, position: int, reuse: InputReuse | None) -> list[str]:
    """The header comment on input `position`'s in-place pointer, as lines."""
    where = (
        f"In place: write it at {prefix}_input({position}) ({prefix.upper()}_INPUT{position}_OFFSET bytes "
        f"into the arena), then call {prefix}_invoke_in_place()"
    )
    if reuse is None:
        return _wrapped(f"{where}. No tensor reuses its bytes: they still hold the input after the invoke.")
    return _wrapped(
        f"{where}; valid until step {reuse.step} (operator {reuse.operator}, {reuse.opcode}) writes tensor "
        f"{reuse.tensor} over it: write it again before every invoke."
    )


def output_note(prefix: str, position: int, shared_inputs: Sequence[int]) -> list[str]:
    """The header comment on output `position`'s in-place pointer, as lines."""
    text = (
        f"In place: read it at {prefix}_output({position}) ({prefix.upper()}_OUTPUT{position}_OFFSET bytes "
        "into the arena) after an invoke, until the next invoke or until another model runs in the same arena"
    )
    if shared_inputs:
        names = ", ".join(str(k) for k in shared_inputs)
        text += f"; it shares bytes with input {names}: read it before writing the next input in place"
    return _wrapped(text + ".")


def stream_note(prefix: str, position: int, streamed: dict[str, Any]) -> list[str]:
    """The header comment on input `position` with `<prefix>_invoke_streamed` (--stream-input)."""
    rows, row_bytes, passes = streamed["rows"], streamed["row_bytes"], streamed.get("passes", 1)
    asked = (
        f"Streamed: {prefix}_invoke_streamed() asks read_rows for its {rows} rows of {row_bytes} B, rows "
        "ascending, each once"
        + (f" per pass, in {passes} passes (one per column tile of the first stage)" if passes > 1 else "")
    )
    if streamed["whole"]:
        return _wrapped(
            f"{asked}, all in one call, into its bytes in the arena above (the input stays whole)."
        )
    return _wrapped(
        f"{asked}, at most {streamed['window_rows']} at a time: it is never whole in the arena (no offset; "
        f"{prefix}_input({position}) is NULL); {prefix}_invoke() asks them of inputs[{position}]."
    )
