"""Formatting shared by the report's forms and the terminal: sizes, escaping, certificate witnesses."""

from __future__ import annotations

import html
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
