"""Showing untrusted strings on a terminal: names from a model, text from a device, file paths.

A .tflite file, a device's error frame or a file name can carry terminal escapes (ESC [ ...), a
carriage return that overwrites the line, bidi overrides that reorder it, or bytes that are not
UTF-8. `printable` turns any of them into one line of visible characters, escaped the way Python
writes them (\\x1b, \\n, \\u202e, \\\\), and shortens it with an ellipsis. It is for terminal output
only: JSON output keeps the exact string.
"""

from __future__ import annotations

import os
import re
import unicodedata
from typing import Literal

ELLIPSIS = "…"

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}
# Unicode categories that do not draw a visible glyph of their own, or that change how the text
# around them is laid out: controls (C0, DEL, C1), format characters (bidi embeddings, overrides
# and isolates, zero-width joiners, soft hyphen, BOM), surrogates, private use, unassigned, and
# the line and paragraph separators.
_HIDDEN = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}


def _escape_char(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, kept by surrogateescape
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x80:
        return ch if 0x20 <= code < 0x7F else f"\\x{code:02x}"
    if unicodedata.category(ch) in _HIDDEN:
        return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
    return ch


def printable(text: str | bytes, limit: int | None = 80, *, cut: Literal["middle", "end"] = "middle") -> str:
    """`text` as one line of visible characters, at most `limit` of them (None: no limit).

    Bytes are decoded as UTF-8; bytes that are not UTF-8 (and surrogateescape'd bytes in a str, as
    os.fsdecode makes them) show as \\xNN. A longer result loses its middle (`cut="middle"`, the
    default, keeps both ends, which for paths and identifiers tell most) or its end, replaced by an
    ellipsis; an escape sequence is never split.
    """
    if isinstance(text, (bytes, bytearray, memoryview)):
        text = bytes(text).decode("utf-8", "surrogateescape")
    pieces = [_escape_char(ch) for ch in text]
    total = sum(len(p) for p in pieces)
    if limit is None or total <= limit:
        return "".join(pieces)
    room = max(limit - len(ELLIPSIS), 0)
    head_room = room if cut == "end" else (room + 1) // 2
    tail_room = room - head_room
    head: list[str] = []
    used = 0
    for p in pieces:
        if used + len(p) > head_room:
            break
        head.append(p)
        used += len(p)
    tail: list[str] = []
    used = 0
    for p in reversed(pieces[len(head) :]):
        if used + len(p) > tail_room:
            break
        tail.append(p)
        used += len(p)
    return "".join(head) + ELLIPSIS + "".join(reversed(tail))


def printable_path(path: str | bytes | os.PathLike[str] | os.PathLike[bytes], limit: int | None = 120) -> str:
    """A file path for a terminal line: its exact bytes (os.fsencode), escaped and shortened in the
    middle, so the folder's start and the file's name stay visible."""
    return printable(os.fsencode(path), limit, cut="middle")


def quoted(name: str | bytes, limit: int | None = 60) -> str:
    """A name from the model (a tensor's, an input's) as messages show it: in quotes, escaped and
    shortened by `printable`, so every message names model strings the same way."""
    return f"'{printable(name, limit)}'"


def one_line(message: str) -> str:
    """A whole message made one safe line as it stands: newlines, control, format and bidi
    characters are escaped as `printable` does, and nothing else is touched (backslashes stay, no
    shortening), so a message whose parts already went through `printable` comes out unchanged.
    The last line of defence, for `tinysched: error: ...`: whatever reached a message raw (a model
    string, a tool's output) cannot start a line of its own or move the cursor."""
    return "".join(ch if ch == "\\" or _escape_char(ch) == ch else _escape_char(ch) for ch in message)


# gcc's diagnostic line (`file:line:col: error: ...`), then anything else that names a failure (ld's
# `undefined reference`, `region RAM overflowed`, `collect2: error: ...`), in that order of preference.
_ERROR_LINES = (
    re.compile(r":\d+(:\d+)?: (fatal )?error: "),
    re.compile(r"\berror\b|undefined reference|overflowed|cannot find", re.I),
)


def first_error_line(output: str, limit: int = 300) -> str:
    """The line of a compiler's or linker's output that says what failed (gcc's first
    `file:line:col: error: ...`, else the first line naming an error, else the first line), escaped
    and shortened for one message line: the `In function ...` context before it says less."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if not lines:
        return "no output"
    for pattern in _ERROR_LINES:
        hit = next((line for line in lines if pattern.search(line)), None)
        if hit is not None:
            return printable(hit, limit, cut="end")
    return printable(lines[0], limit, cut="end")
