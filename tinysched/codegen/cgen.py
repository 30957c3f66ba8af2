"""C literals: what makes names and numbers from a model safe and exact in the generated sources.

Every piece of model text that reaches C (tensor names in comments, the model name as a string,
symbol prefixes) goes through one of these; the Jinja2 templates get `c_comment` and `c_string` as
filters (`module.render`)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

from tinysched.errors import TinyschedError

C_KEYWORDS = frozenset(
    [
        "auto",
        "break",
        "case",
        "char",
        "const",
        "continue",
        "default",
        "do",
        "double",
        "else",
        "enum",
        "extern",
        "float",
        "for",
        "goto",
        "if",
        "inline",
        "int",
        "long",
        "register",
        "restrict",
        "return",
        "short",
        "signed",
        "sizeof",
        "static",
        "struct",
        "switch",
        "typedef",
        "union",
        "unsigned",
        "void",
        "volatile",
        "while",
        "_Bool",
        "_Complex",
        "_Imaginary",
    ]
)


def c_identifier(name: str, fallback: str = "model") -> str:
    """A valid C identifier from any text: other characters become `_`, never a leading digit."""
    ident = re.sub(r"[^0-9A-Za-z_]", "_", name)
    ident = re.sub(r"_+", "_", ident).strip("_") or fallback
    if ident[0].isdigit():
        ident = f"{fallback}_{ident}"
    if ident in C_KEYWORDS:
        ident = f"{ident}_"
    return ident


def check_prefix(prefix: str) -> str:
    """A user-given symbol prefix must already be a valid C identifier."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", prefix or "") or prefix in C_KEYWORDS:
        raise TinyschedError(f"prefix {prefix!r} is not a valid C identifier")
    return prefix


def c_comment(text: str, limit: int = 160) -> str:
    """Text that is safe inside a `/* ... */` comment: one line, ASCII, no `*/`, no trigraphs.

    Control and non-ASCII characters are written as escapes; long text is cut with `...`."""
    out = []
    for ch in text:
        if ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\\":
            out.append("\\\\")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) > 0x7E:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
        else:
            out.append(ch)
    safe = "".join(out)
    # `*/` would end the comment, `/*` nests badly in some tools, `??x` may be a trigraph.
    while "*/" in safe or "/*" in safe or "??" in safe:
        safe = safe.replace("*/", "* /").replace("/*", "/ *").replace("??", "? ?")
    if len(safe) > limit:
        safe = safe[: limit - 3].rstrip("\\") + "..."
    return safe


def c_string(text: str) -> str:
    """A C string literal holding `text` as UTF-8: quotes, backslashes, `?` (trigraphs) and every byte
    outside printable ASCII escaped; octal escapes are always three digits, so none absorbs the next
    character. A file name that is not UTF-8 (Python holds its bytes as surrogate escapes) keeps
    its own bytes."""
    out = ['"']
    for byte in text.encode("utf-8", "surrogateescape"):
        ch = chr(byte)
        if ch in '"\\?':
            out.append("\\" + ch)
        elif 0x20 <= byte < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    out.append('"')
    return "".join(out)


def c_float(value: float) -> str:
    """A double literal that reads back as exactly `value` (shortest round-trip form)."""
    if not math.isfinite(value):
        raise TinyschedError(f"cannot write non-finite constant {value!r} into C")
    text = repr(float(value))
    return text if any(c in text for c in ".en") else text + ".0"


def c_float32(value: float) -> str:
    """A float literal (suffix f) that reads back as exactly `value`, a float32 number (shortest
    round-trip form): arithmetic with it stays in float32, where a double literal would promote
    `x / SCALE` to a double quotient that rounds otherwise."""
    single = np.float32(value)
    if not math.isfinite(value) or float(single) != value:
        raise TinyschedError(f"cannot write {value!r} into C as an exact float32 constant")
    text = str(single)
    return (text if any(c in text for c in ".en") else text + ".0") + "f"


# The C type of each tensor element type the generator handles.
C_TYPES = {
    "int8": "int8_t",
    "uint8": "uint8_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "int64": "int64_t",  # ARG_MAX/ARG_MIN outputs, GATHER indices
    "float32": "float",
}


def c_array_lines(values: Sequence[int] | np.ndarray, per_line: int = 16, indent: str = "    ") -> str:
    """Integer values as the body of a C initializer, `per_line` per line, each line comma-ended."""
    flat = np.asarray(values).reshape(-1)
    if flat.size == 0:
        return f"{indent}0,"
    if flat.dtype.kind == "f":
        raise TinyschedError("float arrays are not written by c_array_lines")
    text = flat.astype(np.int64).astype(str)
    lines = []
    for start in range(0, text.size, per_line):
        lines.append(indent + ", ".join(text[start : start + per_line].tolist()) + ",")
    return "\n".join(lines)


def c_list(values: Sequence[int]) -> str:
    """Integers as a brace-enclosed C initializer on one line: `{1, 2, 3}`."""
    return "{" + ", ".join(str(int(v)) for v in values) + "}"


def float_lines(values: np.ndarray, per_line: int = 6, indent: str = "    ") -> str:
    """float32 values as the body of a C initializer, each in its shortest round-trip `f` form."""
    flat = np.asarray(values, dtype=np.float32).reshape(-1)
    items = []
    for v in flat.tolist():
        text = repr(float(np.float32(v)))
        if not math.isfinite(v):
            text = "(1.0f / 0.0f)" if v > 0 else ("(-1.0f / 0.0f)" if v < 0 else "(0.0f / 0.0f)")
        else:
            # Shortest float32 round-trip form.
            text = np.format_float_positional(np.float32(v), unique=True, trim="0") + "f"
            if text.startswith(".") or text.startswith("-."):
                text = text.replace(".", "0.", 1)
        items.append(text)
    lines = [indent + ", ".join(items[i : i + per_line]) + "," for i in range(0, len(items), per_line)]
    return "\n".join(lines) or f"{indent}0.0f,"
