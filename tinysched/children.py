"""Every process tinysched starts ends with it: commands (compilers, QEMU, flash tools, the child
Pythons of TFLite's reference interpreter and of TFLM) and forked workers (the order search's
precedence tree). Everything in tinysched that starts a process goes through this module.

A command runs in a process group of its own, with everything it starts (a compiler driver's
`cc1`, `as` and `ld`): `stop` and `run` end the whole group, not only the process tinysched
started. So that the group ends too when tinysched is killed outright (SIGKILL, a CI timeout),
where no Python code runs:

- each command's first process gets a parent-death signal (Linux `prctl(PR_SET_PDEATHSIG,
  SIGKILL)`, armed between fork and exec; a parent gone before it was armed ends it at once);
- one small reaper per tinysched process, in a session of its own, is told each group as it
  starts (by the group's first process, before it execs) and ends; when tinysched's end of the
  pipe closes, however tinysched ended, the reaper kills the groups still running. The
  parent-death signal alone would leave a killed compiler driver's `cc1` running (it was seen
  compiling 19 minutes after its parent died).

A forked worker starts with SIGINT and SIGTERM blocked (held across the fork) and sets both to
their default action before it unblocks them: a stop request ends it at any point, inside native
code and its ctypes callbacks too, without a traceback (an inherited handler raising
KeyboardInterrupt in a callback was printed as "Exception ignored" and the worker went on). It also
dies with its parent. `stop_worker` asks with SIGTERM and kills after a short grace.

The parent-death signal follows the thread that started the child: start children from the
thread that waits for them.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from multiprocessing.context import BaseContext
from multiprocessing.process import BaseProcess
from typing import Any

__all__ = ["STOP_GRACE_SECONDS", "popen", "run", "start_worker", "stop", "stop_worker"]

# How long a process asked to stop (SIGTERM) has before it is killed.
STOP_GRACE_SECONDS = 0.5

_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _prctl() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return prctl


_PRCTL = _prctl()  # looked up here: between fork and exec the child only calls it


def _die_with(parent: int, reaper_fd: int = -1) -> None:
    """In a new child: be killed when `parent` (the process that started it) dies. A command's
    first process (`reaper_fd` >= 0) also tells the reaper its group itself, before it execs: were
    the parent to tell it after Popen returns, a parent killed in between would leave the group's
    later processes running (seen on a loaded machine: a compiler driver's children)."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if reaper_fd >= 0:
        # subprocess has restored SIGPIPE's default action by now: a reaper that has gone must
        # give EPIPE here, not end the command before it starts
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        with contextlib.suppress(OSError):  # one write under PIPE_BUF: atomic beside the parent's
            os.write(reaper_fd, b"+%d\n" % os.getpid())
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)


# ---- the reaper ---------------------------------------------------------------------------------

_REAPER = """
import os, signal, sys
groups = set()
signal.signal(signal.SIGTERM, lambda *_: sys.exit())
try:
    for line in sys.stdin.buffer:
        (groups.add if line[:1] == b"+" else groups.discard)(int(line[1:]))
finally:
    for group in groups:
        try:
            os.killpg(group, signal.SIGKILL)
        except OSError:
            pass
"""


class _Reaper:
    """The reaper's pipe: "+GROUP" when a command starts, "-GROUP" when it has ended."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fd: int | None = None  # None: not started; -1: it could not start or has gone

    def _start(self) -> None:
        read, write = os.pipe()
        try:
            os.posix_spawn(
                sys.executable,
                [sys.executable, "-I", "-S", "-c", _REAPER],
                os.environ,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, read, 0),
                    (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                    (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
                ],
                setsid=True,  # no terminal signal reaches it; it outlives a killed process group
                setsigmask=(),
            )
        except OSError:
            os.close(write)  # no reaper: the parent-death signal still ends each first process
            write = -1
        finally:
            os.close(read)
        self._fd = write

    def _started(self) -> int:
        """The pipe's write end, the reaper started on first use; -1 when there is none. Call it
        holding the lock."""
        if self._fd is None:
            self._start()
        return self._fd if self._fd is not None else -1

    def fd(self) -> int:
        with self._lock:
            return self._started()

    def tell(self, sign: str, group: int) -> None:
        with self._lock:
            if self._started() < 0:
                return
            try:
                os.write(self._fd, f"{sign}{group}\n".encode())
            except OSError:  # the reaper is gone
                os.close(self._fd)
                self._fd = -1


_reaper = _Reaper()


# ---- commands -----------------------------------------------------------------------------------


def popen(args: Sequence[str], **kwargs: Any) -> subprocess.Popen:
    """`subprocess.Popen(args, **kwargs)` in a process group of its own that dies with this
    process (stdin from /dev/null unless given). End it with `stop`."""
    kwargs.setdefault("stdin", subprocess.DEVNULL)
    # the child registers its group with the reaper before it execs (_die_with); close_fds closes
    # the pipe only after that
    starter = functools.partial(_die_with, os.getpid(), _reaper.fd())
    return subprocess.Popen(args, process_group=0, preexec_fn=starter, **kwargs)


def _signal_group(group: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, sig)


def stop(proc: subprocess.Popen, grace: float = 0.0) -> None:
    """End a command started by `popen` and everything in its group: SIGTERM and up to `grace`
    seconds to exit when `grace`, then SIGKILL to whatever is left. Returns once it is reaped."""
    if grace > 0 and proc.poll() is None:
        _signal_group(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(grace)
    _signal_group(proc.pid, signal.SIGKILL)
    proc.wait()
    _reaper.tell("-", proc.pid)


def run(
    args: Sequence[str],
    *,
    input: bytes | str | None = None,  # noqa: A002 (subprocess.run's name)
    timeout: float | None = None,
    capture_output: bool = False,
    **kwargs: Any,
) -> subprocess.CompletedProcess:
    """`subprocess.run` through `popen`: on a timeout, an interrupt or any error, and after the
    command exits, nothing it started is left running."""
    if input is not None:
        kwargs["stdin"] = subprocess.PIPE
    if capture_output:
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    with popen(args, **kwargs) as proc:
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise subprocess.TimeoutExpired(proc.args, timeout or 0.0) from None
        finally:
            stop(proc)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


# ---- forked workers -----------------------------------------------------------------------------


def _worker_main(parent: int, target: Callable[..., None], args: tuple[Any, ...]) -> None:
    _die_with(parent)
    for sig in _STOP_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    target(*args)


def start_worker(context: BaseContext, target: Callable[..., None], args: tuple[Any, ...]) -> BaseProcess:
    """`target(*args)` in a daemon process of `context` (a fork context) that stops at once and
    quietly on SIGTERM or SIGINT, wherever it is, and dies with this process."""
    process = context.Process(target=_worker_main, args=(os.getpid(), target, args), daemon=True)
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        process.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
    return process


def stop_worker(process: BaseProcess, grace: float = STOP_GRACE_SECONDS) -> None:
    """End a worker of `start_worker`: SIGTERM, then SIGKILL after `grace` seconds; returns once it
    has exited."""
    if process.is_alive():
        process.terminate()
        process.join(grace)
    if process.is_alive():
        process.kill()
    process.join()
