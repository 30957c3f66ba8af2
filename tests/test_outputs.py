"""Output folders and files: nothing the user points at is clobbered, nothing is half-written,
files follow the umask, no temporary folder outlives a command, any file name works."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tiers import needs_gcc, require

from tinysched import files
from tinysched.cli import _terminated, main
from tinysched.files import MARKER, STAGING_TAG, output_folder, write_atomic
from tinysched.model.modelgen import tiny_demo_model


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "demo.tflite"
    path.write_bytes(tiny_demo_model())
    return path


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("tinysched: error: "), err
    assert "Traceback" not in err
    return err


def test_a_folder_tinysched_did_not_write_is_refused_unless_forced(
    model: Path, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    assert main(["build", str(model), "-o", str(out), "--no-compile", "--no-report"]) == 2
    assert "not written by tinysched; give --force" in one_error_line(capsys)
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    assert main(["build", str(model), "-o", str(out), "--no-compile", "--no-report", "--force"]) == 0
    assert not (out / "notes.txt").exists() and (out / MARKER).is_file()
    # a folder tinysched wrote is replaced without --force
    assert main(["build", str(model), "-o", str(out), "--no-compile", "--no-report"]) == 0


@pytest.mark.parametrize("where", [".", "", "home", "/", "model's folder"])
def test_folders_that_are_never_replaced(
    model: Path, tmp_path: Path, monkeypatch, capsys, where: str
) -> None:
    monkeypatch.chdir(tmp_path)
    target = {"home": str(Path.home()), "model's folder": str(model.parent)}.get(where, where)
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["build", str(model), "-o", target, "--no-compile", "--no-report", "--force"]) == 2
    one_error_line(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_failed_build_leaves_the_folder_as_it_was(model: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "build"
    assert main(["build", str(model), "-o", str(out), "--no-compile", "--no-report"]) == 0
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(tiny_demo_model()[:200])
    assert main(["build", str(bad), "-o", str(out), "--no-compile", "--no-report"]) == 2
    one_error_line(capsys)
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before
    assert not [p for p in tmp_path.iterdir() if STAGING_TAG in p.name]


def test_outputs_that_are_not_regular_files_are_refused(model: Path, tmp_path: Path, capsys) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert main(["plan", str(model), "-o", str(fifo)]) == 2
    assert "not a regular file" in one_error_line(capsys)
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert main(["plan", str(model), "-o", str(tmp_path)]) == 2
    assert "is a folder" in one_error_line(capsys)
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert main(["plan", str(model), "-o", str(afile / "sub.json")]) == 2
    one_error_line(capsys)
    assert main(["build", str(model), "-o", str(afile / "sub"), "--no-compile", "--no-report"]) == 2
    one_error_line(capsys)
    assert afile.read_text() == "x"


def test_files_and_folders_follow_the_umask(model: Path, tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        assert main(["build", str(model), "-o", str(tmp_path / "b"), "--no-compile", "--no-report"]) == 0
        assert main(["plan", str(model), "-o", str(tmp_path / "plan.json")]) == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "b").stat().st_mode) == 0o750
    assert stat.S_IMODE((tmp_path / "b" / "demo.c").stat().st_mode) == 0o640
    assert stat.S_IMODE((tmp_path / "plan.json").stat().st_mode) == 0o640


def test_stale_staging_folders_of_dead_runs_are_removed(model: Path, tmp_path: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    stale = tmp_path / f".b{STAGING_TAG}{int(dead.stdout)}.abc"
    stale.mkdir()
    (stale / "half.c").write_text("/* half-written */")
    assert main(["build", str(model), "-o", str(tmp_path / "b"), "--no-compile", "--no-report"]) == 0
    assert not stale.exists()


@pytest.mark.qemu
def test_sigterm_cleans_up_like_ctrl_c(model: Path, tmp_path: Path) -> None:
    require("qemu")
    out = tmp_path / "fw"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tinysched.cli",
            "build",
            str(model),
            "--board",
            "nucleo-f767",
            "-o",
            str(out),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if [p for p in tmp_path.iterdir() if STAGING_TAG in p.name]:
            break
        time.sleep(0.005)
    assert proc.poll() is None, "the build ended before it could be interrupted"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if STAGING_TAG in p.name]


@pytest.fixture
def sigterm_interrupts():
    """SIGTERM raises KeyboardInterrupt in this process, as the command line sets it."""
    previous = signal.signal(signal.SIGTERM, _terminated)
    yield
    signal.signal(signal.SIGTERM, previous)


def _signal_after(monkeypatch, name: str, when) -> list[str]:
    """`os.<name>` sends this process SIGTERM just after a call for which `when(path)` holds: the
    interrupt lands exactly between the call and whatever comes next."""
    real = getattr(os, name)
    calls: list[str] = []

    def call_then_signal(path, *args, **kwargs):
        result = real(path, *args, **kwargs)
        if when(os.fspath(path)):
            calls.append(os.fspath(path))
            signal.raise_signal(signal.SIGTERM)
        return result

    monkeypatch.setattr(os, name, call_then_signal)
    return calls


def test_sigterm_just_after_the_staging_folder_exists_removes_it(
    tmp_path: Path, monkeypatch, sigterm_interrupts
) -> None:
    calls = _signal_after(monkeypatch, "mkdir", lambda path: STAGING_TAG in path)
    with pytest.raises(KeyboardInterrupt), output_folder(tmp_path / "fw"):
        pytest.fail("the folder's contents were written after the interrupt")
    assert len(calls) == 1
    assert list(tmp_path.iterdir()) == []


def test_sigterm_just_after_a_temporary_file_exists_removes_it(
    tmp_path: Path, monkeypatch, sigterm_interrupts
) -> None:
    calls = _signal_after(monkeypatch, "open", lambda path: path.endswith(".tmp"))
    with pytest.raises(KeyboardInterrupt):
        write_atomic(tmp_path / "plan.json", "{}")
    assert len(calls) == 1
    assert list(tmp_path.iterdir()) == []


def test_sigterm_while_the_new_folder_is_swapped_in_waits_for_the_swap(
    tmp_path: Path, monkeypatch, sigterm_interrupts
) -> None:
    out = tmp_path / "fw"
    with output_folder(out) as staging:
        (staging / "old").write_text("old")
    # the signal lands after the old folder has moved aside, before the new one takes its place
    calls = _signal_after(monkeypatch, "replace", lambda path: path == str(out))
    with pytest.raises(KeyboardInterrupt), output_folder(out) as staging:
        (staging / "new").write_text("new")
    assert len(calls) == 1
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "new"]
    assert [p.name for p in tmp_path.iterdir()] == ["fw"]


def test_a_second_signal_does_not_stop_the_clean_up(tmp_path: Path, monkeypatch, sigterm_interrupts) -> None:
    real_rmtree = files.shutil.rmtree

    def rmtree_interrupted(path, *args, **kwargs):
        signal.raise_signal(signal.SIGTERM)  # held until the folder is gone
        real_rmtree(path, *args, **kwargs)

    monkeypatch.setattr(files.shutil, "rmtree", rmtree_interrupted)
    with pytest.raises(KeyboardInterrupt), output_folder(tmp_path / "fw") as staging:
        for i in range(50):
            (staging / f"part{i}").write_text("x")
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


@needs_gcc
@pytest.mark.host
def test_a_file_name_that_is_not_utf8_works_everywhere(tmp_path: Path, capsys) -> None:
    name = os.fsdecode(b"caf\xe9 \x1b[31m.tflite")
    model = tmp_path / name
    model.write_bytes(tiny_demo_model())
    assert main(["build", str(model), "-o", str(tmp_path / "b"), "--no-tflm", "--no-recompute-tradeoff"]) == 0
    assert main(["verify", str(model), "--inputs", "1"]) == 0
    report = tmp_path / "r.html"
    argv = ["report", str(model), "--board", "nucleo-f767", "-o", str(report), "--no-build", "--no-tflm"]
    assert main([*argv, "--no-recompute-tradeoff"]) == 0
    out = capsys.readouterr()
    assert "\x1b" not in out.out + out.err
    assert "caf" in report.read_text()


@needs_gcc
@pytest.mark.host
def test_no_temporary_folder_outlives_a_command(model: Path, tmp_path: Path, monkeypatch) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = dict(os.environ, TMPDIR=str(scratch))
    for argv in (["verify", str(model), "--inputs", "1"], ["report", str(model), "--board", "nucleo-f767"]):
        proc = subprocess.run(
            [sys.executable, "-m", "tinysched.cli", *argv], env=env, capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stderr
        assert list(scratch.iterdir()) == [], argv


def _too_big(tmp_path: Path) -> Path:
    """A 96 KiB input and a 192 KiB output: the output alone is more than nucleo-f446re's 128 KiB
    of SRAM, in any memory model (the refined one may put the output over the dying input)."""
    from tinysched.model.modelgen import ModelBuilder

    b = ModelBuilder(seed=1)
    x = b.input("x", (1, 64, 64, 24))
    b.output(b.conv2d(x, 48, kernel=(1, 1)))
    path = tmp_path / "big.tflite"
    path.write_bytes(b.build())
    return path


def test_does_not_fit_is_exit_code_3_for_report_and_no_compile(tmp_path: Path, capsys) -> None:
    model = _too_big(tmp_path)
    argv = ["report", str(model), "--board", "nucleo-f446re", "--no-build", "--no-tflm"]
    assert main([*argv, "--no-recompute-tradeoff", "-o", str(tmp_path / "r.json")]) == 3
    assert "does not fit" in capsys.readouterr().err
    out = tmp_path / "src"
    assert main(["build", str(model), "--board", "nucleo-f446re", "-o", str(out), "--no-compile"]) == 3
    assert "does not fit" in capsys.readouterr().err
    assert (out / "src" / "big.c").is_file()  # the sources are written: the verdict is an estimate
    assert main(["build", str(model), "--board", "nucleo-f767", "-o", str(out), "--no-compile"]) == 0


def test_inputs_that_are_not_model_files_are_refused_in_one_line(model: Path, tmp_path: Path, capsys) -> None:
    for path in ("/dev/zero", str(tmp_path)):
        assert main(["analyze", path]) == 2
        assert "not a regular file" in one_error_line(capsys)
    cut = tmp_path / "cut.tflite"
    cut.write_bytes(model.read_bytes()[:5000])
    assert main(["plan", str(cut)]) == 2
    err = one_error_line(capsys)
    assert "truncated: needs at least" in err and "file has 5,000" in err and "unpack_from" not in err


@pytest.mark.parametrize("alignment", ["3", "24", str(2**40)])
def test_alignments_the_generated_c_cannot_express_are_refused(model: Path, alignment: str, capsys) -> None:
    assert main(["plan", str(model), "--alignment", alignment]) == 2
    assert "--alignment must be" in one_error_line(capsys)


@pytest.mark.parametrize("role", ["inputs", "outputs"])
def test_a_model_without_inputs_or_outputs_is_refused_before_any_c(tmp_path: Path, role: str, capsys) -> None:
    from tflite_edit import edited

    def edit(m) -> None:
        setattr(m.subgraphs[0], role, [])

    path = tmp_path / "m.tflite"
    path.write_bytes(edited(tiny_demo_model(), edit))
    assert main(["build", str(path), "-o", str(tmp_path / "b")]) == 2
    assert f"the model has no {role}" in one_error_line(capsys)
    assert not (tmp_path / "b").exists()


def test_a_flatbuffer_tflites_verifier_rejects_is_refused(model: Path, tmp_path: Path, capsys) -> None:
    """A tensor name without its terminating NUL: tinysched's lazy reader would not notice."""
    import struct

    from tinysched.model.reader import parse_model

    data = model.read_bytes()
    name = parse_model(data).tensors[0].name.encode()
    at = data.find(struct.pack("<I", len(name)) + name) + 4 + len(name)
    assert data[at] == 0
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(data[:at] + b"X" + data[at + 1 :])
    parse_model(bad.read_bytes())  # the reader alone accepts it
    for verb in (["plan"], ["build", "-o", str(tmp_path / "b")], ["analyze"]):
        assert main([verb[0], str(bad), *verb[1:]]) == 2
        assert "not a valid flatbuffer: TFLite's verifier rejects it" in one_error_line(capsys)
