"""What the file-based stores share: a cross-process write lock and honest storage errors."""

from __future__ import annotations

import errno
import fcntl
import os
import sqlite3
import time
from pathlib import Path
from types import TracebackType

from pywrapai_graph.errors import StorageFullError, StoreBusyError, VectorStoreError

__all__ = ["WriteLock", "fsync_dir", "os_failure", "sqlite_failure"]

_FULL = (
    "the disk holding {path!r} is full; the write was undone and nothing of it was kept. "
    "Free some space and run it again."
)


def sqlite_failure(path: str, exc: sqlite3.Error) -> VectorStoreError:
    """Our error for a ``sqlite3`` one: a full disk says so and names the path."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code == sqlite3.SQLITE_FULL or "disk is full" in str(exc):
        return StorageFullError(_FULL.format(path=path), path=path)
    return VectorStoreError(f"the store at {path!r} failed: {exc}")


def os_failure(path: str, exc: BaseException) -> VectorStoreError:
    """Our error for a failed file write (``OSError``, or FAISS's ``RuntimeError``)."""
    if (isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)) or (
        "No space left" in str(exc) or "Disk quota" in str(exc)
    ):
        return StorageFullError(_FULL.format(path=path), path=path)
    return VectorStoreError(f"writing {path!r} failed: {exc}")


def fsync_dir(path: Path) -> None:
    """Make a rename in ``path`` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class WriteLock:
    """An exclusive ``flock`` on ``path`` shared by every process using the store.

    A second writer waits up to ``timeout`` seconds, then gets :class:`StoreBusyError`.
    The kernel drops the lock when its holder dies, so a crash never leaves it held.
    """

    def __init__(self, path: Path, timeout: float) -> None:
        self.path = path
        self.timeout = timeout
        self._fd: int | None = None

    def __enter__(self) -> WriteLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.timeout
        delay = 0.005
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise StoreBusyError(
                        f"another process is writing the store locked by {str(self.path)!r} "
                        f"and did not finish within {self.timeout:g} s; try again when it is done"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.1)
        self._fd = fd
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
