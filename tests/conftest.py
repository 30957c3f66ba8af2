"""Shared fixtures: the public models in ../shared/models, or the folder TINYSCHED_MODELS names
(skipped cleanly when absent)."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_MODELS = Path(os.environ.get("TINYSCHED_MODELS") or REPO.parent / "shared" / "models")


@pytest.fixture(autouse=True, scope="session")
def native_cache(tmp_path_factory):
    """tinysched.order.native builds its library here, not in the user's cache (once per test process)."""
    before = os.environ.get("TINYSCHED_CACHE")
    os.environ["TINYSCHED_CACHE"] = str(tmp_path_factory.mktemp("native-cache"))
    yield
    if before is None:
        os.environ.pop("TINYSCHED_CACHE", None)
    else:
        os.environ["TINYSCHED_CACHE"] = before


def _run_wide_cache(tmp_path_factory, env: str, name: str):
    """Point `$env` at one folder for the whole run, shared by its xdist workers (their base folders
    sit side by side) and by the commands the tests start; restore it afterwards."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name
    before = os.environ.get(env)
    os.environ[env] = str(folder)
    yield folder
    if before is None:
        os.environ.pop(env, None)
    else:
        os.environ[env] = before


@pytest.fixture(autouse=True, scope="session")
def object_cache(tmp_path_factory):
    """Builds reuse identical kernel compiles (tinysched.build.objects)."""
    yield from _run_wide_cache(tmp_path_factory, "TINYSCHED_OBJECT_CACHE", "object-cache")


@pytest.fixture(autouse=True, scope="session")
def reference_cache(tmp_path_factory):
    """Identical reference-interpreter runs (same model, resolver, inputs) start one child per run
    of the suite (tinysched.device.reference); a test of the child itself unsets it."""
    yield from _run_wide_cache(tmp_path_factory, "TINYSCHED_REFERENCE_CACHE", "reference-cache")


def shared_model_paths() -> list[Path]:
    return sorted(SHARED_MODELS.glob("*.tflite")) if SHARED_MODELS.is_dir() else []


def shared_manifest() -> dict[str, dict[str, str]]:
    manifest = SHARED_MODELS / "MANIFEST.tsv"
    if not manifest.is_file():
        return {}
    with manifest.open(newline="") as handle:
        return {row["name"]: row for row in csv.DictReader(handle, delimiter="\t")}


def shared_model_params():
    """pytest params over shared models, or one skipped param saying why there are none."""
    paths = shared_model_paths()
    if not paths:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"no shared models at {SHARED_MODELS}"))]
    return [pytest.param(p, id=p.stem) for p in paths]


def shared_model(name: str) -> Path:
    path = SHARED_MODELS / f"{name}.tflite"
    if not path.is_file():
        pytest.skip(f"shared model {name} not available at {SHARED_MODELS}")
    return path
