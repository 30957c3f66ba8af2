"""A package's API, loaded on first use.

The stage packages name their API in `__init__` without importing every module at once: a child
process that needs one module (the reference interpreter's, `python -m tinysched.device.reference`)
then loads that module and what it imports, not the whole stage."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_api(package: str, api: Mapping[str, str]) -> Callable[[str], Any]:
    """The module `__getattr__` of `package` for `api` (name -> the submodule defining it)."""

    def attribute(name: str) -> Any:
        if name not in api:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(f"{package}.{api[name]}"), name)

    return attribute
