"""A file store's recorded embedder identity, read again only when the store changed: a
search reports it at no extra query, fresh after any process's write."""

from __future__ import annotations

from collections.abc import Callable

from pywrapai_graph.domain.manifest import EmbedderIdentity

__all__ = ["IdentityCopy"]


class IdentityCopy:
    """The identity as of one change counter (SQLite's ``data_version``, the FAISS generation):
    :meth:`at` is called under the store's lock in the snapshot whose counter it passes,
    :meth:`forget` after the store's own commits (which do not move ``data_version``)."""

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
