"""Part-file folders of multi-worker runs, and the removal of those a killed run left behind.

Workers write their output to part files in a folder beside the output (``.turnkit-parts-<output name>.*``); the
main process copies them into the output and removes the folder when it ends, even on Ctrl-C. A run killed
outright (SIGKILL, SIGTERM, a power cut) cannot, so every run first removes the part folders of earlier runs on
the same output. Which runs are dead is told by a lock, not a guess: each folder holds a ``.lock`` file that its
run keeps an exclusive ``flock`` on (the kernel releases it when the run's process dies, however it dies), and a
folder is removed only by a process that holds that lock itself, so a live run's folder is never touched.
Without ``fcntl`` (Windows) leftovers are not removed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["parts_folder", "release_inherited_locks", "remove_stale"]

_LOCK = ".lock"
_HELD: set[int] = set()
"""The lock files this process holds open: a forked worker closes its copies (:func:`release_inherited_locks`),
so the lock lives exactly as long as the run's main process."""


def _prefix(output: str) -> str:
    # the output's name (cut to stay well below NAME_MAX): the folders of runs on other outputs are left alone
    return f".turnkit-parts-{os.path.basename(os.path.abspath(output))[:120]}."


def _lock(folder: str, *, wait: bool) -> int | None:
    """An open ``.lock`` in ``folder`` with an exclusive flock on it, or ``None`` when another process holds it
    (``wait=False``) or the file system has no flock. ``OSError`` when the folder is gone."""
    fd = os.open(os.path.join(folder, _LOCK), os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # held by a live run (EWOULDBLOCK), or no locks here (ENOLCK): leave the folder alone
        os.close(fd)
        return None
    return fd


def _still_there(fd: int, folder: str) -> bool:
    """Whether the locked file ``fd`` is still ``folder``'s lock (another run may have removed the folder between
    its creation and the lock)."""
    try:
        return os.path.samestat(os.fstat(fd), os.stat(os.path.join(folder, _LOCK), follow_symlinks=False))
    except OSError:
        return False


@contextlib.contextmanager
def parts_folder(output: str) -> Iterator[str]:
    """A new folder for part files beside ``output``, locked while the ``with`` block runs and removed after it."""
    directory = os.path.dirname(os.path.abspath(output))
    while True:
        folder = tempfile.mkdtemp(prefix=_prefix(output), dir=directory)
        if fcntl is None:
            fd = None
            break
        try:
            fd = _lock(folder, wait=True)
        except FileNotFoundError:
            continue  # a concurrent remove_stale took the new folder before the lock did: make another
        if fd is None or _still_there(fd, folder):
            break
        os.close(fd)
    if fd is not None:
        _HELD.add(fd)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if fd is not None:
            _HELD.discard(fd)
            os.close(fd)


def remove_stale(output: str) -> list[str]:
    """Remove the part folders that dead runs on ``output`` left behind; returns their paths."""
    directory = os.path.dirname(os.path.abspath(output))
    prefix = _prefix(output)
    removed = []
    try:
        with os.scandir(directory) as entries:
            candidates = [entry.path for entry in entries if entry.name.startswith(prefix)]
    except OSError:  # no such folder, or not readable: opening the output says so, naming it
        return []
    for folder in candidates:
        if fcntl is None or not os.path.isdir(folder) or os.path.islink(folder):
            continue
        try:
            fd = _lock(folder, wait=False)
        except OSError:  # removed meanwhile, or not ours to write
            continue
        if fd is None:
            continue
        try:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
        finally:
            os.close(fd)
    return removed


def release_inherited_locks() -> None:
    """In a forked worker: close the copies of the main process's lock files (the locks stay the main's)."""
    while _HELD:
        with contextlib.suppress(OSError):
            os.close(_HELD.pop())
