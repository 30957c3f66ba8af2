"""Opt-in caches of results that are a pure function of their inputs, one folder per cache.

A cache is a folder named by an environment variable (`folder`); nothing is stored when it is
unset. Entries are files named by a digest of everything that decides them, written by rename
(`store`), so concurrent runs may store the same entry at once and a reader never sees half a
file. tinysched never cleans a cache: delete the folder to empty it.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["folder", "lookup", "store"]


def folder(env: str) -> Path | None:
    """The folder `$env` names, or None when that cache is off."""
    value = os.environ.get(env, "").strip()
    return Path(value) if value else None


def lookup(cache: Path, name: str) -> Path | None:
    """The stored entry `name`, or None when there is none."""
    path = cache / name
    return path if path.is_file() else None


def store(cache: Path, name: str, data: bytes) -> None:
    """Put `data` under `name` atomically."""
    cache.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=cache, prefix=f".{name[:16]}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, cache / name)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
