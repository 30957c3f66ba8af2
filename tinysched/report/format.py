"""Formatting shared by the report's forms and the terminal: sizes, escaping, certificate witnesses."""

from __future__ import annotations

import html
import math
from typing import Any


def fmt_bytes(n: int | None) -> str:
    """18,432 B (18.0 KiB); '-' for unknown."""
    if n is None:
        return "-"
    if abs(n) < 1024:
        return f"{n:,} B"
    if abs(n) < 1024 * 1024:
        return f"{n:,} B ({n / 1024:.1f} KiB)"
    return f"{n:,} B ({n / 1048576:.2f} MiB)"


def fmt_int(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def esc(text: Any) -> str:
    """Text for HTML or SVG content and attribute values (quotes included)."""
    return html.escape(str(text), quote=True)


_MD_SPECIAL = set("\\`*_[]<>|&~")


def md_escape(text: Any) -> str:
    """Text for a Markdown table cell: punctuation that means something is backslash-escaped."""
    out = []
    for ch in str(text).replace("\r", " ").replace("\n", " "):
        out.append("\\" + ch if ch in _MD_SPECIAL else ch)
    return "".join(out)


def percent(part: int, whole: int) -> float | None:
    return round(100.0 * part / whole, 2) if whole else None


def witness_text(witness: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in witness.items())


def _op(index: Any, op_types: dict[int, str], model_ops: dict[int, int] | None = None) -> str:
    kind = op_types.get(index)
    shown = index if model_ops is None else model_ops.get(index, index)
    return f"operator {shown} ({kind})" if kind else f"operator {shown}"


def certificate_sentence(
    certificate: dict[str, Any] | None,
    op_types: dict[int, str],
    *,
    peak_bytes: int | None = None,
    lower_bound_bytes: int | None = None,
    model_ops: dict[int, int] | None = None,
) -> str:
    """Why the order is optimal (or how far from optimal it may be), in a firmware engineer's words.

    `certificate` is the JSON form (kind, lower_bound_bytes, witness) that `schedule --json` and the
    metadata keep; `op_types` maps the operators it names to their types, and `model_ops` (planned
    operator -> the input model's index) makes the sentence name operators as the user's model does."""
    if certificate is None:
        if peak_bytes and lower_bound_bytes:
            # (peak - bound) / bound, rounded up: never claims more than is proven
            over = math.ceil(1000.0 * (peak_bytes - lower_bound_bytes) / lower_bound_bytes - 1e-9) / 10
            return (
                f"not proven optimal in the time limit: within {over:.1f}% of optimal (no order peaks "
                f"below {fmt_bytes(lower_bound_bytes)})"
            )
        return "not proven optimal in the time limit"
    kind, w = certificate.get("kind"), certificate.get("witness") or {}
    bound = certificate.get("lower_bound_bytes")
    if kind == "lower_bound":
        how = w.get("bound")
        if how == "trivial":
            why = f"{_op(w.get('op'), op_types, model_ops)} alone needs {fmt_bytes(w.get('op_bytes'))} for its inputs and outputs"
        elif how == "first_step":
            why = (
                f"whichever operator runs first needs {fmt_bytes(w.get('first_step_bytes'))} with the graph's "
                f"inputs still live (least for {_op(w.get('op'), op_types, model_ops)})"
            )
        elif how == "op_cut":
            why = (
                f"while {_op(w.get('op'), op_types, model_ops)} runs, every order still holds at least "
                f"{fmt_bytes(w.get('cut_bytes'))} (a minimum cut of the graph at that operator)"
            )
        elif how == "pair_cut":
            u, v = (w.get("ops") or [None, None])[:2]
            why = (
                f"{_op(u, op_types, model_ops)} and {_op(v, op_types, model_ops)} run in one of two orders, and either way some step "
                f"holds at least {fmt_bytes(w.get('cut_bytes'))}"
            )
        elif how == "precedence_tree":
            why = (
                f"splitting the orders by which of two operators runs first, again and again, gives "
                f"{w.get('leaves', 0):,} groups of orders that each have a step holding at least "
                f"{fmt_bytes(bound)} (a minimum cut under each group's precedences)"
            )
        elif how == "stage_exhaustive":
            why = (
                f"the {len(w.get('stage_ops') or [])} operators between two operators every order runs at "
                f"the same step cannot be ordered with every step at or under {fmt_bytes(w.get('cap_bytes'))}: "
                f"a search of {w.get('states', 0):,} partial orders of that stage found none"
            )
        else:
            why = f"a lower bound ({how}) of {fmt_bytes(bound)} holds for every order"
        return f"optimal: no order can need less, because {why}"
    if kind == "exhaustive":
        return f"optimal: an exhaustive search of {w.get('states', 0):,} partial orders found none lower"
    if kind == "cp_sat":
        return "optimal: the CP-SAT solver proved that no order peaks lower"
    return f"optimal ({kind})"


VERDICT_WORDS = {
    "fits": "FITS",
    "tight": "FITS (tight)",
    "does-not-fit": "DOES NOT FIT",
    "unknown": "FIT UNKNOWN",
}


def headline(
    *,
    arena_bytes: int,
    arena_lower_bound_bytes: int,
    order_certified: bool,
    board: str | None = None,
    verdict: str | None = None,
    ram: tuple[int, int] | None = None,
    flash: tuple[int, int] | None = None,
    measured_equal: bool | None = None,
) -> str:
    """The one line that says it all: fit on the board, arena and its proof, RAM, flash, measured.

    `ram` and `flash` are (used, size) in bytes; `measured_equal` whether the device's arena
    high-water equalled the plan (None: not measured)."""
    parts = []
    if board is not None:
        parts.append(f"{VERDICT_WORDS.get(verdict or 'unknown', 'FIT UNKNOWN')} {board}")
    if arena_bytes <= arena_lower_bound_bytes:
        proof = "optimal: equals its lower bound" if order_certified else "equals the bound of this order"
    else:
        proof = f"{arena_bytes - arena_lower_bound_bytes:,} B above its lower bound"
    parts.append(f"arena {arena_bytes:,} B ({proof})")
    if ram is not None:
        parts.append(f"RAM {ram[0]:,} / {ram[1]:,} B")
    if flash is not None:
        parts.append(f"flash {flash[0]:,} / {flash[1]:,} B")
    if measured_equal is not None:
        parts.append("measured = plan" if measured_equal else "MEASURED != PLAN")
    return " · ".join(parts)


def used_of_kind(size_report: dict[str, Any], kind: str) -> tuple[int, int] | None:
    """(used, size) over the board's regions of one kind that the image uses (a size report's JSON)."""
    regions = [r for r in size_report.get("regions", ()) if r["kind"] == kind and r["used"]]
    if not regions:
        return None
    return sum(r["used"] for r in regions), sum(r["length"] for r in regions)


def doc_headline(doc: dict[str, Any]) -> str:
    """`headline` for a metadata document."""
    fit, measured, size = doc.get("fit"), doc.get("measured"), None
    if fit and fit.get("size_report"):
        size = fit["size_report"]
    return headline(
        arena_bytes=doc["arena"]["arena_bytes"],
        arena_lower_bound_bytes=doc["arena"]["lower_bound_bytes"],
        order_certified=doc["schedule"]["certified"],
        board=doc["board"]["name"] if doc.get("board") else None,
        verdict=fit["verdict"] if fit else None,
        ram=used_of_kind(size, "ram") if size else None,
        flash=used_of_kind(size, "flash") if size else None,
        measured_equal=measured.get("arena_matches_plan") if measured else None,
    )


def shorten(text: Any, limit: int = 48) -> str:
    """Long tensor names cut in the middle for tables and plots (the full name stays in the JSON and
    in the hover title)."""
    text = str(text)
    if len(text) <= limit:
        return text
    keep = limit - 1
    return text[: keep - keep // 2] + "…" + text[len(text) - keep // 2 :]
