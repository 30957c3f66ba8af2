"""The object cache (tinysched.build.objects): a hit is the object the compiler gives for the same
text, anything that changes the code is a miss, and a compile that warned is never replayed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tinysched.build.objects import CACHE_ENV, compile_object
from tinysched.errors import TinyschedError

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs the host gcc")

FLAGS = ["-O2", "-Wall", "-Wextra"]


def _tree(root: Path, scale: int, body: str = "return x * SCALE;") -> Path:
    """kernel.c including scale.h, in a folder of its own (as each build writes its copy)."""
    root.mkdir(parents=True)
    (root / "scale.h").write_text(f"#define SCALE {scale}\n")
    (root / "kernel.c").write_text(f'#include "scale.h"\nint kernel(int x) {{ {body} }}\n')
    return root / "kernel.c"


def _stored(cache: Path) -> list[Path]:
    return sorted(cache.glob("*.o")) if cache.is_dir() else []


def test_the_same_text_in_another_folder_is_a_hit(tmp_path: Path, monkeypatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(cache))
    first, second = _tree(tmp_path / "a", 3), _tree(tmp_path / "b", 3)
    compile_object("gcc", [*FLAGS, f"-I{first.parent}"], first, tmp_path / "a.o", what="compiling")
    assert len(_stored(cache)) == 1
    _stored(cache)[0].write_bytes(b"the stored object")  # a hit copies the store, it does not compile
    compile_object("gcc", [*FLAGS, f"-I{second.parent}", "-DUNUSED=1"], second, tmp_path / "b.o", what="c")
    assert (tmp_path / "b.o").read_bytes() == b"the stored object"


def test_a_header_or_a_code_flag_that_changes_is_a_miss(tmp_path: Path, monkeypatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(cache))
    base, header = _tree(tmp_path / "a", 3), _tree(tmp_path / "b", 5)
    compile_object("gcc", FLAGS, base, tmp_path / "a.o", what="c")
    compile_object("gcc", FLAGS, header, tmp_path / "b.o", what="c")
    compile_object("gcc", ["-O0", *FLAGS[1:]], base, tmp_path / "c.o", what="c")
    assert len(_stored(cache)) == 3
    assert len({(tmp_path / f"{n}.o").read_bytes() for n in "abc"}) == 3


def test_a_compile_that_warned_is_not_stored(tmp_path: Path, monkeypatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(cache))
    warned = _tree(tmp_path / "a", 3, body="int unused; return x * SCALE;")
    compile_object("gcc", FLAGS, warned, tmp_path / "a.o", what="c")
    assert (tmp_path / "a.o").stat().st_size > 0 and _stored(cache) == []


def test_without_the_variable_nothing_is_stored(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(CACHE_ENV, raising=False)
    compile_object("gcc", FLAGS, _tree(tmp_path / "a", 3), tmp_path / "a.o", what="c")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "a.o"]


def test_a_failing_compile_names_what_failed(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    broken = _tree(tmp_path / "a", 3, body="return x * ;")
    with pytest.raises(TinyschedError, match=r"^compiling kernel.c failed: .*kernel.c:2"):
        compile_object("gcc", FLAGS, broken, tmp_path / "a.o", what="compiling kernel.c")
    assert _stored(tmp_path / "cache") == []
