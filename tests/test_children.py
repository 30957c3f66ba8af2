"""Every process tinysched starts ends with it (tinysched.children): a command and everything it
started, when it times out, when tinysched is interrupted and when tinysched is killed outright;
forked workers stop at once and quietly when asked, wherever they are, and die with their parent."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from tiers import needs_gcc

from tinysched import children
from tinysched.model.modelgen import tiny_demo_model

REPO = Path(__file__).resolve().parents[1]
TAG = "TINYSCHED_TEST_TAG"


def tagged_env() -> tuple[dict[str, str], str]:
    """An environment whose mark every descendant inherits, to find them wherever they went."""
    tag = uuid.uuid4().hex
    return dict(os.environ, **{TAG: tag}, PYTHONPATH=str(REPO)), tag


def tagged(tag: str) -> dict[int, str]:
    """Live processes (pid: command name) whose environment carries `tag`; zombies excluded."""
    found = {}
    mark = f"{TAG}={tag}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if mark not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name, state = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2]
        if state != "Z":
            found[int(entry.name)] = name
    return found


def wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def gone(tag: str, seconds: float = 5.0) -> dict[int, str]:
    """What still runs with `tag` after `seconds` of waiting for it to end."""
    wait_for(lambda: not tagged(tag), seconds)
    return tagged(tag)


pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")


def test_a_command_that_times_out_ends_with_everything_it_started() -> None:
    env, tag = tagged_env()
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        children.run(["sh", "-c", "sleep 30 & sleep 30"], env=env, timeout=0.5)
    assert time.monotonic() - started < 5
    assert gone(tag, 2.0) == {}


def test_an_interrupted_command_ends_with_everything_it_started() -> None:
    env, tag = tagged_env()
    with pytest.raises(KeyboardInterrupt):
        proc = children.popen(["sh", "-c", "sleep 30 & sleep 30"], env=env)
        try:
            assert wait_for(lambda: len(tagged(tag)) >= 3, 5.0)  # sh and both sleeps
            raise KeyboardInterrupt
        finally:
            children.stop(proc)
    assert gone(tag, 2.0) == {}


def _killed_parent(script: str, ready: int) -> dict[int, str]:
    """Run `script` in a Python of its own, SIGKILL it once `ready` processes carry its tag
    (itself included), and return what is left of them afterwards."""
    env, tag = tagged_env()
    parent = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script)], env=env, stderr=subprocess.PIPE
    )
    try:
        assert wait_for(lambda: len(tagged(tag)) >= ready, 30.0), tagged(tag)
    finally:
        parent.kill()
        _, err = parent.communicate()
    assert parent.returncode == -signal.SIGKILL, err
    return gone(tag)


def test_a_killed_parent_takes_its_commands_and_theirs_with_it() -> None:
    # sh, then its two sleeps: the parent-death signal alone would leave both sleeps running
    script = """
        from tinysched import children
        children.run(["sh", "-c", "sleep 60 & sleep 60"])
    """
    assert _killed_parent(script, ready=5) == {}  # parent, reaper, sh, two sleeps


def test_a_killed_parent_takes_its_workers_with_it() -> None:
    script = """
        import multiprocessing, time
        from tinysched import children

        def work():
            while True:
                time.sleep(1)

        children.start_worker(multiprocessing.get_context("fork"), work, ())
        time.sleep(60)
    """
    assert _killed_parent(script, ready=2) == {}


def test_commands_still_run_when_the_reaper_has_gone() -> None:
    """A command's first process writes its group to the reaper's pipe before it execs; with the
    reaper gone that write must fail quietly (EPIPE), not end the command by SIGPIPE."""
    env, tag = tagged_env()
    script = """
        import os, signal, sys, time
        from tinysched import children
        children.run(["true"])  # starts the reaper
        reaper = int(sys.stdin.readline())
        os.kill(reaper, signal.SIGKILL)
        while os.path.exists(f"/proc/{reaper}") and open(f"/proc/{reaper}/stat").read().split()[2] != "Z":
            time.sleep(0.01)
        print(children.run(["echo", "ran"], capture_output=True, text=True).stdout.strip())
    """
    parent = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script)], env=env, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip

    def reapers() -> list[int]:
        found = []
        for pid in tagged(tag):
            with contextlib.suppress(OSError):
                if b"groups = set()" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    found.append(pid)
        return found

    try:
        assert wait_for(reapers, 30.0), tagged(tag)
        (reaper,) = reapers()
        out, err = parent.communicate(f"{reaper}\n", timeout=30)
    finally:
        parent.kill()
        parent.wait()
    assert parent.returncode == 0, err
    assert out.strip() == "ran"


@needs_gcc
@pytest.mark.host
def test_a_killed_build_takes_its_compiler_with_it(tmp_path: Path) -> None:
    model = tmp_path / "demo.tflite"
    model.write_bytes(tiny_demo_model())
    # a compiler driver whose compiler proper takes its time, as gcc's cc1 did on a 10,000-step
    # invoke (seen compiling 19 minutes after tinysched had been killed)
    cc = tmp_path / "slowcc"
    cc.write_text('#!/bin/sh\nsh -c "sleep 120"\nexec gcc "$@"\n')
    cc.chmod(0o755)
    env, tag = tagged_env()
    argv = ["build", str(model), "--board", "host", "-o", str(tmp_path / "out"), "--no-report", "--no-tflm"]
    cli = subprocess.Popen(
        [sys.executable, "-m", "tinysched.cli", *argv],
        env={**env, "CC": str(cc)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert wait_for(lambda: "sleep" in tagged(tag).values(), 120.0), "the host compiler never ran"
    finally:
        cli.kill()
        cli.wait()
    assert gone(tag) == {}


def test_a_worker_stops_at_once_and_quietly_right_after_it_was_forked(capfd) -> None:
    """SIGTERM as early as it can come: the worker's signals are held across the fork until it
    has set them to their default action (an inherited handler raising KeyboardInterrupt printed
    "Process ForkProcess-1: Traceback" from a worker stopped while it started)."""
    from tinysched.cli import _terminated

    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        context = multiprocessing.get_context("fork")
        for _ in range(20):
            worker = children.start_worker(context, time.sleep, (30,))
            started = time.monotonic()
            children.stop_worker(worker)
            assert time.monotonic() - started < children.STOP_GRACE_SECONDS
            assert worker.exitcode == -signal.SIGTERM
    finally:
        signal.signal(signal.SIGTERM, previous)
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == ""


# ---- the order search's worker: the precedence tree beside the search ----------------------------


@pytest.fixture(scope="module")
def wired(tmp_path_factory) -> Path:
    """A RandWire graph (Watts-Strogatz, 383 operators) whose precedence tree grows in C until its
    deadline: nothing certifies it within seconds."""
    sys.path.insert(0, str(REPO / "bench"))
    from stress_graphs import randwire_wiring

    from tinysched.model.modelgen import wired_model

    path = tmp_path_factory.mktemp("wired") / "ws_91_69_s7.tflite"
    wiring = randwire_wiring([91, 69], "ws", seed=7, hard=True)
    path.write_bytes(wired_model(wiring, hw=16, channels=4, order_seed=7))
    return path


def _native_tree() -> None:
    from tinysched.order import native

    if native.library() is None:
        pytest.skip("no C compiler for the native tree")


def test_the_tree_beside_the_search_stops_at_once_inside_native_code(wired: Path, capfd) -> None:
    """Asked to stop while cuttree.c calls its ctypes stop callback, under the command line's
    SIGTERM handler: the worker ends within the grace, quietly (it printed "Exception ignored on
    calling ctypes callback function ... KeyboardInterrupt" and went on, outliving the join)."""
    _native_tree()
    from tinysched.cli import _terminated
    from tinysched.model.reader import read_model
    from tinysched.order.scheduler import HEURISTICS, _TreeBeside, ordering_problem

    problem = ordering_problem(read_model(wired))
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        beside = _TreeBeside(problem, time.perf_counter() + 60)
        beside.start(HEURISTICS["greedy_reverse"](problem))
        worker = beside._process
        assert worker is not None
        time.sleep(1.0)  # the tree is in C from some 40 ms on
        assert worker.is_alive() and not beside.proved()
        started = time.perf_counter()
        beside.stop()
        assert time.perf_counter() - started < children.STOP_GRACE_SECONDS
        assert not worker.is_alive() and worker.exitcode == -signal.SIGTERM
    finally:
        signal.signal(signal.SIGTERM, previous)
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == ""


def _schedule(model: Path, limit: float) -> tuple[subprocess.Popen, str]:
    env, tag = tagged_env()
    argv = [
        sys.executable,
        "-m",
        "tinysched.cli",
        "schedule",
        str(model),
        "--json",
        "--time-limit",
        str(limit),
    ]
    proc = subprocess.Popen(
        argv,
        env={**env, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return proc, tag


def _worker_of(proc: subprocess.Popen, tag: str) -> int | None:
    """The order search's forked worker: a child of `proc` running the same command."""
    command = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
    for pid in tagged(tag):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            same = Path(f"/proc/{pid}/cmdline").read_bytes() == command
        except OSError:
            continue
        if same and int(stat[stat.rindex(")") + 2 :].split()[1]) == proc.pid:
            return pid
    return None


def test_schedule_exits_right_after_its_answer_with_nothing_left(wired: Path) -> None:
    """The tree grows in C when the limit strikes; the answer comes within the limit and a stated
    margin (docs/pipeline.md), the process ends soon after it, quietly, and takes its worker along."""
    _native_tree()
    limit, margin = 4.0, 1.0
    proc, tag = _schedule(wired, limit)
    assert wait_for(lambda: _worker_of(proc, tag) is not None, 30.0), "no tree beside the search"
    first = proc.stdout.readline()  # unbuffered: the answer arrives as it is printed
    answered = time.monotonic()
    answer = first + proc.stdout.read()
    err = proc.stderr.read()
    proc.wait(30)
    exited = time.monotonic()
    assert proc.returncode == 0 and err == ""
    result = json.loads(answer)
    assert not result["certified"] and result["seconds"] <= limit + margin
    assert exited - answered < margin
    assert gone(tag, 2.0) == {}


def test_sigterm_while_the_tree_grows_ends_the_run_at_once(wired: Path) -> None:
    _native_tree()
    proc, tag = _schedule(wired, 60.0)
    assert wait_for(lambda: _worker_of(proc, tag) is not None, 30.0), "no tree beside the search"
    time.sleep(0.5)  # inside the C tree
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert time.monotonic() - started < 2.0
    assert proc.returncode == 130 and out == "" and err == "tinysched: interrupted\n"
    assert gone(tag, 2.0) == {}
