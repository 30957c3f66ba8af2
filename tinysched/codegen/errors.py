"""The one exception a lowering raises for a construct the kernels do not cover."""

from __future__ import annotations


class Unsupported(Exception):
    """A variant the kernels do not cover, raised inside a lowering or a helper it calls.

    `table.lower` turns it into a TinyschedError naming the operator, so its message is the reason
    only (e.g. "non-constant filter")."""
