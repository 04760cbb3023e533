"""A process's copy of a file store's recorded embedder identity, fresh across processes.

SQLite and FAISS stores read their files locally: the identity is read again only when the
store's change counter moved (SQLite's ``PRAGMA data_version``, the FAISS generation), so a
search reports it (:func:`..ports.identity_probe.report_identity`) at no extra query while
nothing changed, and re-reads it after any process committed a write (a ``clear`` included).
"""

from __future__ import annotations

from collections.abc import Callable

from pywrapai_graph.domain.manifest import EmbedderIdentity

__all__ = ["IdentityCopy"]


class IdentityCopy:
    """The recorded identity as of one value of the store's change counter.

    The store calls :meth:`at` with its lock held, inside the read snapshot whose counter it
    passes, and :meth:`forget` after its own commits (which do not move SQLite's
    ``data_version`` for the connection that made them).
    """

    __slots__ = ("_counter", "_identity", "_read")

    def __init__(self, read: Callable[[], EmbedderIdentity | None]) -> None:
        self._read = read
        self._counter: int | None = None
        self._identity: EmbedderIdentity | None = None

    def at(self, counter: int) -> EmbedderIdentity | None:
        """The identity; read again when ``counter`` is not the one it was read at."""
        if counter != self._counter:
            self._identity = self._read()
            self._counter = counter
        return self._identity

    def forget(self) -> None:
        """Read again at the next :meth:`at` (this process just committed a write)."""
        self._counter = None
