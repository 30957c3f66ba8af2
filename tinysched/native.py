"""The exact decision's layer expansion in C (tinysched/csrc/downsets.c), built with the host C
compiler on first use.

A RandWire stage's decision holds millions of down-sets; numpy expands some 300,000 a second,
the C loop several times that, with the same states, floors and orders (downsets.c says how it
matches layered.py). Without a compiler, or with TINYSCHED_NATIVE=0, `downsets()` is None and
tinysched.layered stays on numpy: nothing but the speed depends on it.

The library is cached under $TINYSCHED_CACHE (default $XDG_CACHE_HOME/tinysched or
~/.cache/tinysched), named by the hash of its source, compiler and flags, and written by rename so
that concurrent first uses never load a half-written file.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["MAX_WORDS", "SOURCE", "Stage", "downsets", "library_path"]

SOURCE = Path(__file__).parent / "csrc" / "downsets.c"
FLAGS = ("-O3", "-shared", "-fPIC", "-std=c99", "-D_POSIX_C_SOURCE=199309L")
COMPILE_SECONDS = 60


class Stage(ctypes.Structure):
    """downsets.c's ts_stage: pointers into numpy arrays the caller keeps alive."""

    _fields_ = [
        ("m", ctypes.c_int32),
        ("words", ctypes.c_int32),
        ("pred", ctypes.c_void_p),
        ("out", ctypes.c_void_p),
        ("kept", ctypes.c_void_p),
        ("input_start", ctypes.c_void_p),
        ("input_list", ctypes.c_void_p),
        ("readers", ctypes.c_void_p),
        ("tensor_bytes", ctypes.c_void_p),
        ("succ_start", ctypes.c_void_p),
        ("succ_list", ctypes.c_void_p),
    ]


MAX_WORDS = 4  # downsets.c's MAX_WORDS: stages of up to 256 operators


def _compiler() -> str | None:
    for name in (os.environ.get("CC"), "cc", "gcc"):
        if name and shutil.which(name):
            return name
    return None


def library_path(compiler: str) -> Path:
    """Where the compiled library for this source, compiler and flags lives."""
    key = hashlib.sha256(SOURCE.read_bytes() + "\0".join((compiler, *FLAGS)).encode()).hexdigest()[:16]
    root = os.environ.get("TINYSCHED_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "tinysched"
    )
    return Path(root) / f"downsets-{key}.so"


def _build(compiler: str, target: Path) -> bool:
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        built = Path(scratch) / target.name
        try:
            done = subprocess.run(
                [compiler, *FLAGS, "-o", str(built), str(SOURCE)],
                capture_output=True,
                timeout=COMPILE_SECONDS,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return False
        if done.returncode != 0 or not built.exists():
            return False
        os.replace(built, target)
    return True


@functools.cache
def downsets() -> ctypes.CDLL | None:
    """The loaded library with its functions typed, or None (no compiler, a failed build, an
    unwritable cache, or TINYSCHED_NATIVE=0)."""
    if os.environ.get("TINYSCHED_NATIVE", "1") == "0":
        return None
    compiler = _compiler()
    if compiler is None:
        return None
    try:
        path = library_path(compiler)
        if not path.exists() and not _build(compiler, path):
            return None
        lib = ctypes.CDLL(str(path))
    except OSError:
        return None
    pointer = ctypes.c_void_p
    lib.ts_expand.restype = pointer
    lib.ts_expand.argtypes = [
        ctypes.POINTER(Stage),
        pointer,
        pointer,
        pointer,
        pointer,
        ctypes.c_int64,
        ctypes.c_int64,
        ctypes.c_int32,
        ctypes.c_int64,
        ctypes.c_double,
        ctypes.POINTER(ctypes.c_int64),
        ctypes.POINTER(ctypes.c_int64),
    ]
    lib.ts_layer_take.restype = None
    lib.ts_layer_take.argtypes = [pointer] * 7
    lib.ts_layer_free.restype = None
    lib.ts_layer_free.argtypes = [pointer]
    return lib
