"""One run at a time per output folder, and scratch folders no crash can leave behind.

Two runs writing into one folder would replace each other's points in
silence. A run holds ``OUTPUT/.inferx.lock`` with ``flock`` for as long as
it writes there: the kernel drops the lock when the process ends, however
it ends (SIGKILL included), so no crash leaves the folder locked; the file
only names the holder (pid, host, command) for the message of the run that
is refused. Batch jobs of one manifest (``inferx run-job``) write disjoint
servers into one folder at once: they share the folder's lock and each
holds its own server's (``OUTPUT/.inferx-locks/<unit>.lock``).

Load workers' files go to ``OUTPUT/.inferx-tmp/<host>-<pid>-<random>/``,
held with the same kind of lock; one whose owner died (its lock is free) is
removed when the next run starts or the next scratch folder is made there.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar, cast

from inferx_core.errors import UserFacingError
from inferx_core.sdk.log import get_logger

__all__ = [
    "LOCK_NAME",
    "SCRATCH_NAME",
    "OutputFolderBusy",
    "holding_output",
    "output_lock",
    "scratch_dir",
]

F = TypeVar("F", bound=Callable[..., Any])

log = get_logger(__name__)

LOCK_NAME = ".inferx.lock"
UNITS_NAME = ".inferx-locks"
SCRATCH_NAME = ".inferx-tmp"
OWNER_NAME = ".owner.lock"
#: a scratch folder without its lock file, younger than this, may be one being made
_UNLOCKED_GRACE_S = 60.0
#: filesystems without flock (some Lustre and NFS mounts) answer with these
_NO_FLOCK = {errno.ENOLCK, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL}

# Locks this process holds, by (path, mode): a nested run (the Python API inside a
# script that already holds the folder) takes them again without a second flock,
# which on a new open file would conflict with the first.
_held: dict[tuple[str, int], list[int]] = {}


class OutputFolderBusy(UserFacingError):
    """Another run is writing into the output folder this run was given."""


def _holder() -> dict[str, object]:
    command = " ".join(["inferx", *sys.argv[1:2]]) if sys.argv[:1] else "python"
    since = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    return {"pid": os.getpid(), "host": socket.gethostname(), "command": command, "since": since}


def _flock(path: Path, mode: int) -> int | None:
    """An open descriptor holding ``mode`` on ``path``; None when another process holds it.

    A holder removes its lock file when it lets go, so a lock taken on a file that was
    removed (or replaced) meanwhile holds nothing: then it is taken again on the new one.
    """
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)  # not inherited (PEP 446)
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except (BlockingIOError, FileNotFoundError) as exc:
            os.close(fd)
            if isinstance(exc, BlockingIOError):
                return None
            continue
        except BaseException:
            os.close(fd)
            raise
        if same:
            return fd
        os.close(fd)


def _release(path: Path, fd: int, mode: int) -> None:
    """Let go; an exclusive holder removes the file first (nothing left in the folder)."""
    if mode == fcntl.LOCK_EX:
        with contextlib.suppress(OSError):
            path.unlink()
    os.close(fd)  # closing the last descriptor drops the lock


def _describe_holder(path: Path, wanted: int) -> str:
    """Who holds ``path``: the holder's own note when it holds it alone, else batch jobs."""
    if wanted == fcntl.LOCK_EX:
        probe = _flock(path, fcntl.LOCK_SH)
        if probe is not None:  # only shared holders: the jobs of a batch run
            os.close(probe)
            return "batch jobs (inferx run-job)"
    try:
        note = json.loads(path.read_text() or "{}")
        return f"pid {note['pid']} on {note['host']} (`{note['command']}`, since {note['since']})"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"


def _busy(folder: Path, lock: Path, wanted: int) -> OutputFolderBusy:
    return OutputFolderBusy(
        f"{folder} is in use by another InferX run: {_describe_holder(lock, wanted)}; two runs in "
        "one folder would replace each other's points. Wait for it to end, or give this run "
        "another folder (--output DIR)"
    )


@contextlib.contextmanager
def _hold(path: Path, mode: int, folder: Path, note: bool) -> Iterator[None]:
    key = (str(path.resolve()), mode)
    if key in _held:
        _held[key][1] += 1
    else:
        fd = _flock(path, mode)
        if fd is None:
            raise _busy(folder, path, mode)
        if note:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(_holder()).encode(), 0)
        _held[key] = [fd, 1]
    try:
        yield
    finally:
        _held[key][1] -= 1
        if not _held[key][1]:
            _release(path, _held.pop(key)[0], mode)


@contextlib.contextmanager
def output_lock(folder: Path | str | None, *, unit: str | None = None) -> Iterator[None]:
    """Hold ``folder`` while a run writes there; :class:`OutputFolderBusy` when another does.

    ``unit`` (a batch job's server id): share the folder with the other jobs and hold
    only ``unit`` alone. A folder that cannot be made or locked here is not held: the
    write check that follows names what is wrong with it, and a filesystem without
    ``flock`` is logged and run unguarded. None (a run that writes nothing): no lock.
    """
    held = None
    try:
        held = _take(Path(folder), unit) if folder is not None else None
    except OSError as exc:
        if exc.errno in _NO_FLOCK:
            log.warning(
                "output folder not locked: its filesystem has no flock; "
                "a second run into it would not be refused",
                folder=str(folder),
            )
    with held or contextlib.nullcontext():
        yield


def _file_name(unit: str) -> str:
    """A file name for any unit id: readable where it can be, unique by its digest."""
    readable = re.sub(r"[^A-Za-z0-9._-]", "_", unit)[:80]
    return f"{readable}-{hashlib.sha256(unit.encode()).hexdigest()[:8]}"


def _take(folder: Path, unit: str | None) -> contextlib.ExitStack:
    """The locks of :func:`output_lock`, held; stale scratch folders removed."""
    folder.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        mode = fcntl.LOCK_EX if unit is None else fcntl.LOCK_SH
        stack.enter_context(_hold(folder / LOCK_NAME, mode, folder, note=unit is None))
        if unit is not None:
            (folder / UNITS_NAME).mkdir(exist_ok=True)
            unit_lock = folder / UNITS_NAME / f"{_file_name(unit)}.lock"
            stack.enter_context(_hold(unit_lock, fcntl.LOCK_EX, folder, note=True))
        remove_stale_scratch(folder / SCRATCH_NAME)
        return stack.pop_all()


def holding_output(folder_of: Callable[..., Path | str | None]) -> Callable[[F], F]:
    """Decorate a run function: it holds ``folder_of(*its arguments)`` while it runs."""

    def decorate(run: F) -> F:
        @functools.wraps(run)
        def held(*args: Any, **kwargs: Any) -> Any:
            with output_lock(folder_of(*args, **kwargs)):
                return run(*args, **kwargs)

        return cast(F, held)

    return decorate


def remove_stale_scratch(root: Path) -> list[Path]:
    """Remove the scratch folders under ``root`` whose owner is gone; returns them."""
    removed: list[Path] = []
    try:
        entries = list(root.iterdir())
    except OSError:
        return removed
    for entry in entries:
        owner = entry / OWNER_NAME
        try:
            if not owner.exists():
                if time.time() - entry.stat().st_mtime < _UNLOCKED_GRACE_S:
                    continue  # maybe being made right now
                shutil.rmtree(entry, ignore_errors=True)
            else:
                fd = _flock(owner, fcntl.LOCK_EX)
                if fd is None:
                    continue  # its owner lives
                try:
                    shutil.rmtree(entry, ignore_errors=True)
                finally:
                    os.close(fd)
        except OSError:
            continue
        removed.append(entry)
        log.info("removed a dead run's scratch folder", path=str(entry))
    return removed


@contextlib.contextmanager
def scratch_dir(root: Path) -> Iterator[Path]:
    """A folder of this process under ``root``, removed after use, and after a crash by
    the next run (:func:`remove_stale_scratch`)."""
    root.mkdir(parents=True, exist_ok=True)
    remove_stale_scratch(root)
    path = Path(tempfile.mkdtemp(prefix=f"{socket.gethostname()}-{os.getpid()}-", dir=root))
    fd = _flock(path / OWNER_NAME, fcntl.LOCK_EX)
    assert fd is not None  # a folder just made: nobody else holds its lock
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        os.close(fd)
        with contextlib.suppress(OSError):
            root.rmdir()  # the last one out leaves no empty folder behind
