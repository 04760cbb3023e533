"""Qdrant's local mode, sealed: the folder qdrant-client keeps its points in (as pickles) is
handed to the client only as we sealed it, and each write is all or nothing.

:class:`SealedLocalMode` is that part of :class:`QdrantVectorStore`: opening the folder
(recovering a write a crash cut short), and :meth:`_writing`, which runs a write under the
store's lock and, in local mode, inside one sealed all-or-nothing change of the folder
(see ``_qdrant_seal``). A failed write puts the folder, and the client's view of it, back.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pywrapai_graph.adapters._optional import require
from pywrapai_graph.adapters._unreachable import refuse_unencoded_userinfo
from pywrapai_graph.adapters.vectorstores._local_files import os_failure, sqlite_failure
from pywrapai_graph.adapters.vectorstores._qdrant_seal import SealedFolder
from pywrapai_graph.errors import ConfigurationError

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

__all__ = ["SealedLocalMode", "local_location"]


def local_location(
    collection: object,
    location: str | os.PathLike[str] | None,
    path: str | os.PathLike[str] | None,
    url: str | None,
) -> str | os.PathLike[str] | None:
    """The local location (``":memory:"`` by default; None with a url), the arguments checked.

    Raises:
        ConfigurationError: both location= and path=, a location and a url, a url with an
            unencoded userinfo, or no collection name.
    """
    if path is not None and location is not None:
        raise ConfigurationError("pass either location= or path=, not both")
    where = location if location is not None else path
    if url is not None and where is not None:
        raise ConfigurationError("pass either a location (':memory:' or a path) or url=")
    if url is not None:
        refuse_unencoded_userinfo(url, "Qdrant url")
    if not collection or not isinstance(collection, str):
        raise ConfigurationError("collection must be a non-empty string")
    return ":memory:" if url is None and where is None else where


class SealedLocalMode:
    """The sealed local folder of a Qdrant store (``_mode == "local"``); the store sets
    ``_root`` and ``_folder`` before :meth:`_open_local`."""

    _client: QdrantClient
    _lock: AbstractContextManager[Any]
    _mode: str
    _root: Path
    _folder: SealedFolder
    _writes: int
    _dim: int | None

    if TYPE_CHECKING:  # the store's

        def _errors(self) -> AbstractContextManager[None]: ...

        def _existing_dimension(self) -> int | None: ...

    def _open_local(self) -> None:
        """Take the folder (recovering a crashed write), then open the client on it."""
        self._writes = 0
        with self._folder_errors():
            self._folder.open()
        try:
            if self._folder.sealed:  # ours: the client reads it (no space needed on a full disk)
                self._connect()
            else:  # a new folder: the client's first files are a write
                with self._sealed(reopen=False):
                    qc = require("qdrant_client", "qdrant", "qdrant-client")
                    self._client = qc.QdrantClient(path=os.fspath(self._root))
        except BaseException:
            self._folder.close()
            raise

    def _connect(self) -> None:
        """Open the client on the sealed folder, and seal anything it rewrote while opening
        (a client version tidying older rows; our own writes never leave any)."""
        qc = require("qdrant_client", "qdrant", "qdrant-client")
        with self._folder_errors():
            before = self._folder.stamps()
            self._client = qc.QdrantClient(path=os.fspath(self._root))
            if self._folder.stamps() != before:
                self._folder.commit()

    @contextmanager
    def _folder_errors(self) -> Iterator[None]:
        """The engine's file errors as ours: a full disk says so and names the folder."""
        try:
            yield
        except sqlite3.Error as exc:
            raise sqlite_failure(str(self._root), exc) from exc
        except OSError as exc:
            raise os_failure(str(self._root), exc) from exc

    @contextmanager
    def _sealed(self, *, reopen: bool = True) -> Iterator[None]:
        """One all-or-nothing write to the local folder (the outermost one seals)."""
        if self._writes:
            yield
            return
        self._writes += 1
        try:
            with self._folder_errors():
                self._folder.begin()
            try:
                with self._folder_errors():
                    yield
                    self._folder.commit()
            except BaseException:
                self._undo(reopen)
                raise
        finally:
            self._writes -= 1

    def _undo(self, reopen: bool) -> None:
        """After a failed write: the folder, and the client's view of it, as last sealed."""
        if reopen:
            self._client.close()
        with self._folder_errors():
            self._folder.rollback()
        if reopen:
            self._connect()
            with self._errors():
                self._dim = self._existing_dimension()

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Lock and translate errors; in local mode, one sealed all-or-nothing write."""
        with self._lock:
            if self._mode != "local":
                with self._errors():
                    yield
                return
            with self._sealed(), self._errors():
                yield
