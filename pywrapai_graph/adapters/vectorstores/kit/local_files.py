"""What the file-based stores share: a cross-process write lock and honest storage errors."""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pywrapai_graph.adapters.vectorstores.kit.no_follow import open_file
from pywrapai_graph.domain.manifest import DocumentManifest, manifests_from_json
from pywrapai_graph.errors import StorageFullError, StoreBusyError, VectorStoreError

__all__ = [
    "ROOM_MARGIN",
    "WriteLock",
    "check_room",
    "nearly_full",
    "os_failure",
    "rows_in",
    "sqlite_failure",
    "sqlite_manifests",
    "subfolder_bytes",
]

#: free bytes below which a disk counts as full, and kept free by :func:`check_room`
ROOM_MARGIN = 1 << 20

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


#: ids per ``IN (...)`` query: well under SQLite's bound-parameter limit
IN_BATCH = 500


def rows_in(conn: sqlite3.Connection, statement: str, values: Sequence[Any]) -> list[Any]:
    """``statement`` run per :data:`IN_BATCH` of ``values`` (one ``IN (?)`` mark each): its rows."""
    rows: list[Any] = []
    for start in range(0, len(values), IN_BATCH):
        part = list(values[start : start + IN_BATCH])
        rows += conn.execute(statement.replace("IN (?)", f"IN ({','.join('?' * len(part))})"), part)
    return rows


def sqlite_manifests(
    conn: sqlite3.Connection, table: str, doc_ids: Sequence[str]
) -> dict[str, DocumentManifest]:
    """The manifests of ``doc_ids`` in ``table`` (quoted, with ``doc_id`` and ``manifest``)."""
    statement = f"SELECT doc_id, manifest FROM {table} WHERE doc_id IN (?)"
    return dict(manifests_from_json(rows_in(conn, statement, doc_ids)))


def os_failure(path: str, exc: BaseException) -> VectorStoreError:
    """Our error for a failed file write (``OSError``, or FAISS's ``RuntimeError``)."""
    if (isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)) or (
        "No space left" in str(exc) or "Disk quota" in str(exc)
    ):
        return StorageFullError(_FULL.format(path=path), path=path)
    return VectorStoreError(f"writing {path!r} failed: {exc}")


def subfolder_bytes(folder: Path) -> int:
    """The bytes of every file in ``folder``'s subfolders (an engine's index segments)."""
    total = 0
    for entry in os.scandir(folder):
        if entry.is_dir(follow_symlinks=False):
            for dirpath, _dirs, files in os.walk(entry.path):
                total += sum(os.lstat(os.path.join(dirpath, f)).st_size for f in files)
    return total


def nearly_full(folder: Path) -> bool:
    """Whether the disk holding ``folder`` has less than :data:`ROOM_MARGIN` free."""
    try:
        return shutil.disk_usage(folder).free < ROOM_MARGIN
    except OSError:  # the folder is gone: whatever failed, it was not for room
        return False


def check_room(folder: Path, needed: int) -> None:
    """Raises StorageFullError, before anything is written, unless the disk holding ``folder``
    has ``needed`` bytes and :data:`ROOM_MARGIN` free (for engines a full disk damages)."""
    free = shutil.disk_usage(folder).free
    if free < needed + ROOM_MARGIN:
        raise StorageFullError(
            f"the disk holding {str(folder)!r} is (nearly) full: {free:,} bytes free, and this "
            f"write may need up to {needed + ROOM_MARGIN:,}; nothing was written. Free some "
            "space and run it again.",
            path=str(folder),
        )


class WriteLock:
    """An exclusive ``flock`` on ``path`` (never a link) for every process using the store, dropped
    if its holder dies; a second writer waits ``timeout`` s, then gets :class:`StoreBusyError`."""

    def __init__(self, path: Path, timeout: float) -> None:
        self.path = path
        self.timeout = timeout
        self._fd: int | None = None

    def __enter__(self) -> WriteLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = open_file(self.path, os.O_RDWR | os.O_CREAT)
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

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
