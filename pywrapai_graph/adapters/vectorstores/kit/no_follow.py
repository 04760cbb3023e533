"""Store files are never reached through a symbolic link (one planted at ``<index>.lock`` or
``-wal`` would make the store overwrite its target): :func:`open_file` opens them, and
:func:`refuse_links` checks, under the store's lock, those SQLite opens by name."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from pywrapai_graph.errors import VectorStoreError

__all__ = ["open_file", "refuse_links", "sqlite_files"]

_NO_FOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # NONBLOCK: a planted FIFO never hangs


def _link_error(path: Path | str) -> VectorStoreError:
    return VectorStoreError(
        f"{str(path)!r} is a symbolic link; a store never opens its files through a link "
        "(writing through it would change the file it points to). Remove the link, or point "
        "the store at the real path."
    )


def _not_regular(path: Path | str) -> VectorStoreError:
    return VectorStoreError(
        f"{str(path)!r} is not a regular file (a folder, device or pipe); a store keeps its "
        "data in regular files only. Remove it or choose another path."
    )


def open_file(path: Path | str, flags: int, mode: int = 0o644) -> int:
    """``os.open`` with ``O_NOFOLLOW``, refusing anything but a regular file; the caller closes it.

    Raises:
        VectorStoreError: a link at ``path``, or the opened file is not a regular file.
        OSError: any other failure to open (for the caller to translate: a full disk...).
    """
    try:
        fd = os.open(path, flags | _NO_FOLLOW, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _link_error(path) from None
        if exc.errno == errno.ENXIO:  # a FIFO without a reader, a socket
            raise _not_regular(path) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _not_regular(path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def refuse_links(*paths: Path | str) -> None:
    """Raises VectorStoreError for the first of ``paths`` that is a link or not a regular file."""
    for path in paths:
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(mode):
            raise _link_error(path)
        if not stat.S_ISREG(mode):
            raise _not_regular(path)


def sqlite_files(path: Path | str) -> tuple[str, ...]:
    """A SQLite database and the side files SQLite creates beside it."""
    name = os.fspath(path)
    return (name, f"{name}-wal", f"{name}-shm", f"{name}-journal")
