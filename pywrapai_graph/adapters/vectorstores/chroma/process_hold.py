"""One process at a time on a folder: an exclusive ``flock`` held while any store of this
process has the folder open.

For engines whose embedded mode keeps the folder's state in the memory of the process that
opened it (Chroma's ``PersistentClient`` loads its index once and never reads another
process's writes), a second process would be silently stale. Stores of the *same* process
share the engine's in-memory state, so they share the hold (counted); another process gets
:class:`StoreBusyError` at open. The kernel drops the lock when its holder dies. A forked
child does not inherit the hold: the table is keyed by process id, and the child's own
``flock`` conflicts with its parent's.
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path
from typing import ClassVar

from pywrapai_graph.adapters.vectorstores.kit.no_follow import open_file
from pywrapai_graph.errors import StoreBusyError

__all__ = ["FolderHold"]

_LOCK_NAME = "pywrapai.open.lock"


class FolderHold:
    """A counted share of this process's exclusive hold on ``folder``.

    Args:
        folder: the folder to hold (created if missing).
        refusal: the message of the :class:`StoreBusyError` another process gets.
    """

    _table: ClassVar[dict[tuple[int, str], tuple[int, int]]] = {}  # (pid, folder): (fd, users)
    _guard: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, folder: Path, refusal: str) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self._key = (os.getpid(), os.path.realpath(folder))
        self._held = False
        with self._guard:
            entry = self._table.get(self._key)
            if entry is None:
                fd = open_file(folder / _LOCK_NAME, os.O_RDWR | os.O_CREAT)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    raise StoreBusyError(refusal) from None
                entry = (fd, 0)
            self._table[self._key] = (entry[0], entry[1] + 1)
        self._held = True

    def release(self) -> None:
        """Give this share back (idempotent); the last share of the process unlocks."""
        with self._guard:
            if not self._held:
                return
            self._held = False
            fd, users = self._table[self._key]
            if users > 1:
                self._table[self._key] = (fd, users - 1)
                return
            del self._table[self._key]
        os.close(fd)  # closing the descriptor drops the flock
