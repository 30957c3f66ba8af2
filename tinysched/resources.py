"""Where the non-Python parts (templates, firmware, targets, boards.yaml) are, installed or not.

A wheel carries them inside the package as `tinysched/_data/`; a source checkout (or an editable
install) keeps them at the top of the repository.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

_PACKAGE_DIR = Path(__file__).resolve().parent
RESOURCE_NAMES = ("templates", "firmware", "targets", "boards.yaml")
# libyaml's parser when PyYAML was built with it: the pure-Python one takes about 0.5 s per command
# on boards.yaml and the kernel stack table.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


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


def load_yaml(text: str) -> Any:
    """`yaml.safe_load`, through libyaml where present (same documents, same errors: yaml.YAMLError)."""
    return yaml.load(text, Loader=_YAML_LOADER)  # noqa: S506 - a safe loader
