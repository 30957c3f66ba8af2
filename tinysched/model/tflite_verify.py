"""TFLite's own flatbuffer verifier, run on a model before tinysched trusts it.

tinysched's reader checks every index and size it uses, but it follows the flatbuffer lazily and
does not check what it never reads (string terminators, alignment, table bounds it skips). The
verifier in TFLite's interpreter does: a child process builds an interpreter from the bytes (so a
crash there cannot take tinysched down) and reports whether the buffer passed.
"""

from __future__ import annotations

import subprocess
import sys

from tinysched import children
from tinysched.errors import TinyschedError
from tinysched.text import printable

_SCRIPT = """
import sys
from ai_edge_litert.interpreter import Interpreter
data = sys.stdin.buffer.read()
try:
    Interpreter(model_content=data)
except ValueError as err:
    if "not a valid Flatbuffer" in str(err):
        print("INVALID")
        sys.exit(0)
    print("OTHER " + str(err).splitlines()[0][:200] if str(err) else "OTHER")
    sys.exit(0)
except Exception as err:  # unresolved custom ops and the like: not the buffer's fault
    print("OTHER " + type(err).__name__)
    sys.exit(0)
print("VALID")
"""
TIMEOUT_SECONDS = 60.0


def check_flatbuffer(data: bytes, source: str) -> None:
    """Refuse, in one line, bytes that TFLite's flatbuffer verifier rejects or that crash it."""
    try:
        proc = children.run(
            [sys.executable, "-c", _SCRIPT], input=data, capture_output=True, timeout=TIMEOUT_SECONDS
        )
    except subprocess.TimeoutExpired:
        raise TinyschedError(f"{printable(source, 120)}: TFLite's verifier did not finish in 60 s") from None
    verdict = proc.stdout.decode("utf-8", "replace").strip()
    if proc.returncode < 0:
        raise TinyschedError(
            f"{printable(source, 120)}: TFLite's own reader crashes on this model (signal {-proc.returncode}): "
            "it is not a model tinysched will build"
        )
    if verdict == "INVALID":
        raise TinyschedError(
            f"{printable(source, 120)}: not a valid flatbuffer: TFLite's verifier rejects it (a string, vector or "
            "table reaches outside the file or is misaligned)"
        )
    if proc.returncode != 0 and not verdict:
        last = (proc.stderr.decode("utf-8", "replace").strip().splitlines() or ["no message"])[-1]
        raise TinyschedError(
            f"{printable(source, 120)}: TFLite's verifier could not run: {printable(last, 200)}"
        )
