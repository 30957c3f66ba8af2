"""The scheduler's two inner loops in C, built with the host C compiler on first use: the exact
decision's layer expansion (tinysched/order/csrc/downsets.c) and the precedence tree with its minimum
cuts (tinysched/order/csrc/cuttree.c).

A RandWire stage's decision holds millions of down-sets; numpy expands some 300,000 a second,
the C loop several times that, with the same states, floors and orders (downsets.c says how it
matches layered.py). A precedence tree solves hundreds of thousands of small minimum cuts, each
some 60 us in OR-Tools plus as much again in Python around it; cuttree.c grows the same kind of
tree with its own max-flow (its bound is rechecked with OR-Tools like the Python tree's). Without
a compiler, or with TINYSCHED_NATIVE=0, `library()` is None and tinysched.order.layered and
tinysched.order.bounds stay in Python: nothing but the speed depends on it.

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

from tinysched import children

__all__ = ["MAX_WORDS", "SOURCES", "Stage", "Tree", "TreeOut", "TREE_STOP", "library", "library_path"]

SOURCES = (Path(__file__).parent / "csrc" / "downsets.c", Path(__file__).parent / "csrc" / "cuttree.c")
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

TREE_STOP = ctypes.CFUNCTYPE(ctypes.c_int)  # cuttree.c's ts_stop_fn: nonzero stops the tree


class Tree(ctypes.Structure):
    """cuttree.c's ts_tree: the stage's cut network and the tree's parameters (pointers into
    numpy arrays the caller keeps alive)."""

    _fields_ = [
        ("nodes", ctypes.c_int32),
        ("arcs", ctypes.c_int32),
        ("tail", ctypes.c_void_p),
        ("head", ctypes.c_void_p),
        ("cap", ctypes.c_void_p),
        ("m", ctypes.c_int32),
        ("words", ctypes.c_int32),
        ("force_in_arc", ctypes.c_void_p),
        ("force_out_arc", ctypes.c_void_p),
        ("pred_start", ctypes.c_void_p),
        ("pred_list", ctypes.c_void_p),
        ("step_extra", ctypes.c_void_p),
        ("heat", ctypes.c_void_p),
        ("by_heat", ctypes.c_void_p),
        ("hot_count", ctypes.c_int32),
        ("infinite", ctypes.c_int64),
        ("target", ctypes.c_int64),
        ("value_cap", ctypes.c_int64),
        ("max_nodes", ctypes.c_int32),
        ("max_depth", ctypes.c_int32),
        ("candidate_pairs", ctypes.c_int32),
        ("resolved_ops", ctypes.c_int32),
        ("seed", ctypes.c_uint64),
        ("stop", TREE_STOP),
    ]


class TreeOut(ctypes.Structure):
    """cuttree.c's ts_tree_out: the grown tree, in arrays of max_nodes the caller allocates."""

    _fields_ = [
        ("nodes", ctypes.c_int32),
        ("leaves", ctypes.c_int32),
        ("cuts", ctypes.c_int64),
        ("bound", ctypes.c_int64),
        ("split", ctypes.c_void_p),
        ("child", ctypes.c_void_p),
        ("leaf_op", ctypes.c_void_p),
        ("leaf_cut", ctypes.c_void_p),
    ]


def _compiler() -> str | None:
    for name in (os.environ.get("CC"), "cc", "gcc"):
        if name and shutil.which(name):
            return name
    return None


def library_path(compiler: str) -> Path:
    """Where the compiled library for these sources, compiler and flags lives."""
    sources = b"".join(source.read_bytes() for source in SOURCES)
    key = hashlib.sha256(sources + "\0".join((compiler, *FLAGS)).encode()).hexdigest()[:16]
    root = os.environ.get("TINYSCHED_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "tinysched"
    )
    return Path(root) / f"tinysched-{key}.so"


def _build(compiler: str, target: Path) -> bool:
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        built = Path(scratch) / target.name
        try:
            done = children.run(
                [compiler, *FLAGS, "-o", str(built), *map(str, SOURCES)],
                capture_output=True,
                timeout=COMPILE_SECONDS,
            )
        except (OSError, subprocess.TimeoutExpired):
            return False
        if done.returncode != 0 or not built.exists():
            return False
        os.replace(built, target)
    return True


@functools.cache
def library() -> ctypes.CDLL | None:
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
    lib.ts_tree_grow.restype = ctypes.c_int
    lib.ts_tree_grow.argtypes = [ctypes.POINTER(Tree), ctypes.POINTER(TreeOut)]
    return lib
