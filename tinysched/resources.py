"""Where the non-Python parts (templates, firmware, targets, boards.yaml) are, installed or not.

A wheel carries them inside the package as `tinysched/_data/`; a source checkout (or an editable
install) keeps them at the top of the repository.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent
RESOURCE_NAMES = ("templates", "firmware", "targets", "boards.yaml")


def resource_root() -> Path:
    """The folder holding templates/, firmware/, targets/ and boards.yaml."""
    for root in (_PACKAGE_DIR / "_data", _PACKAGE_DIR.parent):
        if all((root / name).exists() for name in RESOURCE_NAMES):
            return root
    raise FileNotFoundError(
        f"tinysched resources ({', '.join(RESOURCE_NAMES)}) not found beside {_PACKAGE_DIR}"
    )


def resource(name: str) -> Path:
    """Path of one resource, e.g. resource("templates") or resource("boards.yaml")."""
    return resource_root() / name
