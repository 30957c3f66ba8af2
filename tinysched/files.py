"""Writing outputs so that a failed or interrupted run never leaves a half-written file or folder,
and never replaces something tinysched did not write.

`write_atomic` writes one file through a temporary sibling and a rename. `output_folder` stages a
whole folder beside its target and swaps it in only when everything in it succeeded; the folder is
marked (`MARKER`) so that a later run may replace it, while a folder holding anything else is
refused unless the user says `--force`. Files and folders follow the user's umask.

Interrupts (Ctrl-C, and SIGTERM, which the command line turns into the same KeyboardInterrupt) may
arrive at any point. A temporary file or staging folder is therefore created inside the block that
removes it, under a name chosen beforehand: an interrupt right after it exists still removes it.
Its removal, and the swap of a finished folder into place, run with interrupts held until they are
done (`_interrupts_held`), so that a second signal cannot leave half a folder behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import stat
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from tinysched import __version__
from tinysched.errors import TinyschedError

MARKER = ".tinysched-output"  # a file in every folder tinysched wrote
STAGING_TAG = ".tinysched-staging-"


@contextlib.contextmanager
def _interrupts_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block is done, then act as they would have (in the main
    thread, where Python runs signal handlers; elsewhere the block runs as it is)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    held = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.getsignal(sig) for sig in held}
    for sig, handler in previous.items():
        if handler not in (signal.SIG_IGN, None):
            signal.signal(sig, lambda signum, _frame: pending.append(signum))
    try:
        yield
    finally:
        for sig, handler in previous.items():
            if handler is not None:
                signal.signal(sig, handler)
        for sig in dict.fromkeys(pending):
            signal.raise_signal(sig)


def _remove(path: Path) -> None:
    """Remove a temporary file or folder of ours, whatever signal arrives meanwhile."""
    with _interrupts_held():
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def _unique_part() -> str:
    """The end of a temporary name, chosen before the file exists: this process's id (stale ones
    are known by it) and 64 random bits (no other run picks the same)."""
    return f"{os.getpid()}.{secrets.token_hex(8)}"


def _refuse_os_error(path: Path, err: OSError, doing: str) -> TinyschedError:
    return TinyschedError(f"{path}: cannot {doing}: {err.strerror or err}")


def write_atomic(path: str | Path, data: bytes | str) -> Path:
    """Write `data` to `path` through a temporary file in the same folder and an atomic rename.

    Only a regular file (or nothing) is replaced: a folder, a device or a pipe at `path` is refused."""
    path = Path(path)
    # Text from models and paths may hold surrogate escapes (a file name that is not UTF-8).
    payload = data.encode("utf-8", "backslashreplace") if isinstance(data, str) else data
    if path.is_symlink() or path.exists():
        mode = path.stat().st_mode if path.exists() else 0
        if path.is_dir():
            raise TinyschedError(f"{path}: is a folder; give a file name to write to")
        if path.exists() and not stat.S_ISREG(mode):
            raise TinyschedError(f"{path}: exists and is not a regular file; refusing to replace it")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise _refuse_os_error(path, err, "write") from None
    tmp = path.parent / f".{path.name}.{_unique_part()}.tmp"
    try:  # created inside the block that removes it: an interrupt right after still cleans up
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
        os.replace(tmp, path)
    except OSError as err:
        _remove(tmp)
        raise _refuse_os_error(path, err, "write") from None
    except BaseException:
        _remove(tmp)
        raise
    return path


def is_tinysched_folder(path: Path) -> bool:
    return (path / MARKER).is_file()


def _check_target(target: Path, force: bool, keep: Sequence[Path]) -> None:
    """Refuse output folders whose replacement would delete what the user needs."""
    resolved = target.resolve()
    home = Path.home().resolve()
    if resolved == Path(resolved.anchor) or resolved == home or resolved == Path.cwd().resolve():
        raise TinyschedError(f"{target}: refusing to replace this folder; give a new folder for the output")
    for path in keep:
        p = Path(path).resolve()
        if p == resolved or resolved in p.parents:
            raise TinyschedError(f"{target}: holds the input {path}; give another folder for the output")
    if not target.exists() and not target.is_symlink():
        return
    if target.is_symlink() or not target.is_dir():
        raise TinyschedError(f"{target}: exists and is not a folder")
    if force or is_tinysched_folder(target):
        return
    if any(target.iterdir()):
        raise TinyschedError(
            f"{target}: folder is not empty and was not written by tinysched; "
            "give --force to replace it, or another folder"
        )


def _remove_stale_staging(parent: Path, name: str) -> None:
    """Staging folders of killed runs (their process is gone) are removed by the next run."""
    for stale in parent.glob(f".{name}{STAGING_TAG}*"):
        pid_text = stale.name.rsplit(STAGING_TAG, 1)[-1].split(".", 1)[0]
        if not pid_text.isdigit():
            continue
        try:
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            shutil.rmtree(stale, ignore_errors=True)
        except PermissionError:
            pass


@contextlib.contextmanager
def output_folder(target: str | Path, *, force: bool = False, keep: Sequence[Path] = ()) -> Iterator[Path]:
    """A staging folder for everything that belongs in `target`; it replaces `target` on success.

    `target` may be absent, empty, a folder tinysched wrote, or (with `force`) any folder; the
    paths in `keep` (the input model) must not be inside it. On any failure `target` is left as
    it was and the staging folder is removed."""
    if str(target).strip() == "":
        raise TinyschedError("output folder name is empty")
    target = Path(target).absolute()
    _check_target(target, force, keep)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale_staging(target.parent, target.name)
    except OSError as err:
        raise _refuse_os_error(target, err, "create the output folder") from None
    staging = target.parent / f".{target.name}{STAGING_TAG}{_unique_part()}"
    try:  # created inside the block that removes it: an interrupt right after still cleans up
        try:
            os.mkdir(staging, 0o777)  # the umask applies
        except OSError as err:
            raise _refuse_os_error(target, err, "create the output folder") from None
        yield staging
        (staging / MARKER).write_text(json.dumps({"written_by": "tinysched", "version": __version__}) + "\n")
        _replace_dir(staging, target)
    except OSError as err:
        _remove(staging)
        raise _refuse_os_error(target, err, "write the output folder") from None
    except BaseException:
        _remove(staging)
        raise


def _replace_dir(staging: Path, target: Path) -> None:
    """Move `staging` to `target`, replacing an existing folder as close to atomically as POSIX
    allows; an interrupt waits until the new folder is in place."""
    with _interrupts_held():
        backup = None
        if target.exists():
            backup = target.parent / f".{target.name}.old.{_unique_part()}"
            os.mkdir(backup, 0o700)
            os.replace(target, backup / target.name)
        try:
            os.replace(staging, target)
        except OSError:
            if backup is not None:  # put the old folder back
                os.replace(backup / target.name, target)
            raise
        finally:
            if backup is not None:
                shutil.rmtree(backup, ignore_errors=True)
