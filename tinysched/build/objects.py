"""Compiling one C file to an object, reusing an earlier identical compile when asked to.

The kernels and the board's start-up code are the same files in every build of every model, and
the cross compiler spends most of a build's time on them (ts_conv2d_s8.c alone takes about a second
for the Cortex-M7). With `$TINYSCHED_OBJECT_CACHE` naming a folder, `compile_object` keys each
compile by what decides its object: the compiler (its path and version), the flags that are not
preprocessor flags, and the preprocessed text (which already holds every header and every -D that
the file uses; the line markers keep their line numbers but lose their folders, so the same
kernel in another build folder has the same key). A hit copies the stored object; a miss compiles
and stores the object when the compiler printed nothing (a compile that warned is never replayed
silently). Without the variable nothing is stored and every file is compiled.

An object from the cache is byte for byte the one the compiler gave for that text, except that its
debug information names the folder it was first compiled in. The cache is never cleaned by
tinysched: delete the folder to empty it.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path

from tinysched import caches, children
from tinysched.errors import TinyschedError
from tinysched.text import first_error_line

__all__ = ["CACHE_ENV", "cache_folder", "compile_object"]

CACHE_ENV = "TINYSCHED_OBJECT_CACHE"

# Flags whose effect reaches the object only through the preprocessed text (which is hashed).
_PREPROCESSOR_FLAGS = ("-D", "-U", "-I", "-include", "-isystem", "-iquote")
_LINE_MARKER = re.compile(rb'^(# \d+ ")[^"]*/([^"/]*")', re.MULTILINE)


def cache_folder() -> Path | None:
    """The folder `$TINYSCHED_OBJECT_CACHE` names, or None when objects are not cached."""
    return caches.folder(CACHE_ENV)


@functools.cache
def _compiler_identity(compiler: str) -> bytes:
    path = shutil.which(compiler) or compiler
    proc = children.run([path, "--version"], capture_output=True)
    return os.path.realpath(path).encode() + b"\0" + proc.stdout


def _key(compiler: str, flags: Sequence[str], source: Path, cwd: Path | None) -> str | None:
    """The compile's key, or None when the file does not preprocess (the compile then says why)."""
    proc = children.run([compiler, *flags, "-E", str(source)], capture_output=True, cwd=cwd)
    if proc.returncode != 0:
        return None
    digest = hashlib.sha256(_compiler_identity(compiler))
    for flag in flags:
        if not flag.startswith(_PREPROCESSOR_FLAGS):
            digest.update(b"\0flag\0" + flag.encode())
    digest.update(b"\0text\0" + _LINE_MARKER.sub(rb"\1\2", proc.stdout))
    return digest.hexdigest()


def compile_object(
    compiler: str,
    flags: Sequence[str],
    source: Path,
    obj: Path,
    *,
    what: str,
    cwd: Path | None = None,
    reuse: bool = True,
) -> None:
    """`compiler flags -c source -o obj` (paths relative to `cwd`), or the cached object of an
    identical compile; `reuse=False` for a file no other build shares (a model's own module).
    Raises a TinyschedError "<what> failed: <first error line>" when the compiler fails."""
    cache = cache_folder() if reuse else None
    key = _key(compiler, flags, source, cwd) if cache is not None else None
    target = Path(cwd or ".", obj)
    if cache is not None and key is not None:
        stored = caches.lookup(cache, f"{key}.o")
        if stored is not None:
            shutil.copyfile(stored, target)
            return
    proc = children.run(
        [compiler, *flags, "-c", str(source), "-o", str(obj)], capture_output=True, text=True, cwd=cwd
    )
    if proc.returncode != 0:
        output = proc.stderr or proc.stdout
        detail = first_error_line(output) if output.strip() else f"exit {proc.returncode}"
        raise TinyschedError(f"{what} failed: {detail}")
    if cache is not None and key is not None and not (proc.stderr or proc.stdout).strip():
        caches.store(cache, f"{key}.o", target.read_bytes())
