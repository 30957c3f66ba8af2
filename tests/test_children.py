"""Every process tinysched starts ends with it (tinysched.children): a command and everything it
started, when it times out, when tinysched is interrupted and when tinysched is killed outright;
forked workers stop at once and quietly when asked, wherever they are, and die with their parent."""

from __future__ import annotations

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
from tinysched.modelgen import tiny_demo_model

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
