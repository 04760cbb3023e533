"""ChromaVectorStore: Chroma embedded (``PersistentClient``) or over HTTP (``HttpClient``)."""

from __future__ import annotations

import os
import re
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np

from pywrapai_graph.adapters._optional import require
from pywrapai_graph.adapters._per_loop import PerLoop
from pywrapai_graph.adapters._transport import http_errors
from pywrapai_graph.adapters._unreachable import (
    refuse_unencoded_userinfo,
)
from pywrapai_graph.adapters.vectorstores.chroma.client import (
    AsyncSide,
    connect_server,
    folder_hold,
    let_go,
)
from pywrapai_graph.adapters.vectorstores.chroma.handle import FollowingHandle
from pywrapai_graph.adapters.vectorstores.chroma.points import (
    DOC,
    HITS,
    found_of,
    ids_where,
    paged_chunks,
    stored_of,
    visible_where,
)
from pywrapai_graph.adapters.vectorstores.chroma.records import ChromaRecords
from pywrapai_graph.adapters.vectorstores.kit.local_files import (
    WriteLock,
    nearly_full,
)
from pywrapai_graph.adapters.vectorstores.kit.no_follow import refuse_links, sqlite_files
from pywrapai_graph.adapters.vectorstores.kit.vector_batches import (
    Matrix,
    prepare_query,
)
from pywrapai_graph.adapters.vectorstores.kit.versioned import (
    Hit,
    StoredChunk,
)
from pywrapai_graph.domain import ScoredChunk
from pywrapai_graph.domain.checks import is_text
from pywrapai_graph.domain.manifest import EmbedderIdentity
from pywrapai_graph.errors import (
    ConfigurationError,
    InvalidStateError,
    StorageFullError,
    StoreTimeoutError,
    VectorStoreError,
)
from pywrapai_graph.ports import MetadataFilter
from pywrapai_graph.ports.identity_probe import report_identity
from pywrapai_graph.ports.offload import offload
from pywrapai_graph.ports.store_inputs import lexical_refusal
from pywrapai_graph.ports.store_query import StoreQuery
from pywrapai_graph.redaction import redact, scrubbed

if TYPE_CHECKING:  # the SDK's own types; imported at run time only when a store is built
    from chromadb.api import ClientAPI
    from chromadb.api.models.AsyncCollection import AsyncCollection
    from chromadb.api.models.Collection import Collection

__all__ = ["ChromaVectorStore"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,510}[A-Za-z0-9]$")
_IPV4 = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")
T = TypeVar("T")
#: HNSW search breadth: Chroma's default (100) gives recall@10 of about 0.90 at 100k vectors.
DEFAULT_EF_SEARCH = 400
DEFAULT_EF_CONSTRUCTION = 200
#: seconds to wait for a Chroma server's first answer (chromadb itself waits forever)
DEFAULT_CONNECT_TIMEOUT = 10.0
#: Seconds a Chroma server has to answer one request (None: wait for ever).
DEFAULT_REQUEST_TIMEOUT = 30.0


def validate_collection_name(name: str) -> str:
    """Chroma's naming rules, checked up front with a clear message."""
    if not is_text(name) or not _NAME.fullmatch(name) or ".." in name or _IPV4.fullmatch(name):
        raise ConfigurationError(
            f"invalid Chroma collection name {name!r}: use 3-512 characters from [a-zA-Z0-9._-], "
            "starting and ending with a letter or digit, without '..', and not an IPv4 address"
        )
    return name


class ChromaVectorStore(ChromaRecords):
    """Chroma collection in cosine space; embeddings always passed explicitly.

    Chroma's default embedding function (which downloads a model) is never used, and its
    telemetry is turned off. Metadata is kept as JSON, with scalar values also stored as
    ``m.<key>`` fields so equality filters run inside Chroma. Documents are replaced all or
    nothing through versions and records kept in a second collection, ``<collection>.docs``
    (see ``versioned``), and a flag on each chunk: a new version is written hidden and,
    once its record is committed, one ``update`` (one log submission, so readers see all of
    it or none) shows it and hides every other version, which is then deleted. A crash
    before that ``update`` leaves the old version shown (the open's recovery, or
    ``repair`` on a server, finishes it). Dense only: chromadb 1.5.9 serves no ranked text
    index outside Chroma Cloud (a sparse index is refused, ``search()`` is not implemented
    locally), so ``lexical`` is False and lexical or hybrid retrieval raise
    :class:`UnsupportedOperationError`. A retrieval is one ``query``: its ``where`` keeps
    the shown chunks only, and the hits carry the embedder recorded when they were written
    (when none does, the retriever asks for it).

    Embedded mode is one process at a time: Chroma's ``PersistentClient`` loads the folder
    once and never sees another process's writes, so the first store of a process holds the
    folder (stores of the same process share it) until :meth:`close`, and another process
    gets :class:`StoreBusyError`. Several processes share a Chroma server (``url=``).

    Args:
        path: a directory for embedded mode (``PersistentClient``).
        url: a Chroma server URL (``HttpClient``); exactly one of path/url.
        collection: the collection name (validated against Chroma's rules).
        ef_search: HNSW search breadth (recall vs speed).
        timeout: seconds to wait for a server's first answer.
        request_timeout: seconds a server has to answer each later request, sync or async
            (``None``: no deadline); past it the call raises :class:`StoreTimeoutError`.

    Raises:
        ConfigurationError: both or neither of path/url, or an invalid collection name.
        MissingExtraError: ``chromadb`` is not installed.
        VectorStoreError: the server cannot be reached.
        StoreBusyError: embedded mode, another process has the folder open.
    """

    #: ``db.system.name`` on this store's spans.
    db_system = "chroma"

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        url: str | None = None,
        collection: str = "pywrapai",
        *,
        ef_search: int = DEFAULT_EF_SEARCH,
        timeout: float = DEFAULT_CONNECT_TIMEOUT,
        request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
    ) -> None:
        if (path is None) == (url is None):
            raise ConfigurationError("ChromaVectorStore needs exactly one of path= or url=")
        if url is not None:
            refuse_unencoded_userinfo(url, "Chroma url")
        self._name = validate_collection_name(collection)
        os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
        chromadb = require("chromadb", "chroma", "chromadb")
        config = require("chromadb.config", "chroma", "chromadb")
        settings = config.Settings(anonymized_telemetry=False, allow_reset=False)
        self._lock = threading.RLock()
        self._url = url
        self._where = os.fspath(path) if path is not None else redact(str(url))
        self._ef_search = ef_search
        self._request_timeout = request_timeout
        self._aclients: PerLoop[AsyncSide] | None = None
        hold = folder_hold(Path(path)) if path is not None else None
        try:
            self._open(path, url, timeout, chromadb, config, settings)
        except BaseException:
            if hold is not None:
                hold.release()
            raise
        self._release = weakref.finalize(self, let_go, self._client, hold)

    def _open(
        self,
        path: str | os.PathLike[str] | None,
        url: str | None,
        timeout: float,
        chromadb: Any,
        config: Any,
        settings: Any,
    ) -> None:
        # embedded mode: stores of this process sharing the folder take turns to write it
        self._file_lock = (
            WriteLock(Path(path) / "pywrapai.lock", timeout=30.0) if path is not None else None
        )
        with self._errors(), self._writing():
            if path is not None:  # Chroma opens its database by name, following links
                refuse_links(*sqlite_files(Path(path) / "chroma.sqlite3"))
                self._client: ClientAPI = chromadb.PersistentClient(
                    path=os.fspath(path), settings=settings
                )
            else:
                self._client, self._aclients = connect_server(
                    str(url), timeout, self._request_timeout, chromadb, config, settings
                )
            gone = require("chromadb.errors", "chroma", "chromadb").NotFoundError
            self._chunks_handle = FollowingHandle(self._open_collection, gone, self._forget_dim)
            self._docs_handle = FollowingHandle(self._open_docs, gone)
            self._dim = self._engine_dimension()
            if self._file_lock is not None:  # only here can no other writer be mid-write
                self._recover()

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """The thread lock, and the cross-process write lock in embedded mode."""
        with self._lock:
            if self._file_lock is None:
                yield
                return
            with self._file_lock:
                yield

    @contextmanager
    def _errors(self) -> Iterator[None]:
        errors = require("chromadb.errors", "chroma", "chromadb")
        timeouts, transports = http_errors()
        try:
            yield
        except timeouts as exc:
            raise StoreTimeoutError(
                f"Chroma at {self._where!r} did not answer within {self._request_timeout} s "
                f"({type(exc).__name__}): check that the server is up and not overloaded, or "
                "raise the store's request_timeout_s"
            ) from scrubbed(exc, [self._url])
        except (errors.ChromaError, *transports) as exc:
            lock = self._file_lock
            if lock is not None and nearly_full(lock.path.parent):
                raise StorageFullError(
                    f"the disk holding {self._where!r} is full and Chroma failed "
                    f"({type(exc).__name__}); it may have left the folder damaged. Free some "
                    "space, and restore or re-create the folder if it no longer opens.",
                    path=self._where,
                ) from scrubbed(exc, [self._url])
            raise VectorStoreError(
                f"Chroma at {self._where!r} failed: {type(exc).__name__}: "
                f"{redact(str(exc), [self._url])}"
            ) from scrubbed(exc, [self._url])

    def _open_collection(self) -> Collection:
        return self._client.get_or_create_collection(
            self._name,
            embedding_function=None,
            configuration={
                "hnsw": {
                    "space": "cosine",
                    "ef_search": self._ef_search,
                    "ef_construction": DEFAULT_EF_CONSTRUCTION,
                }
            },
        )

    @property
    def _collection(self) -> Collection:
        """The chunks collection (typed as the SDK's: mypy checks every call on it)."""
        return cast("Collection", self._chunks_handle)

    def _forget_dim(self) -> None:
        """Another process re-created the collection: its dimension is asked again."""
        self._dim = None

    def _engine_dimension(self) -> int | None:
        errors = require("chromadb.errors", "chroma", "chromadb")
        with self._errors():
            for pause in (0.05, 0.2, 0.5, None):
                try:
                    got = self._collection.get(limit=1, include=["embeddings"])
                    break
                except errors.InternalError:
                    # a Chroma server answers "Error creating hnsw segment reader: Nothing
                    # found on disk" for a moment while another process writes a collection
                    # it just made
                    if pause is None:
                        raise
                    time.sleep(pause)
        embeddings = got.get("embeddings")
        if embeddings is None or len(embeddings) == 0:
            return None
        return len(embeddings[0])

    # ------------------------------------------------------------------ port
    @property
    def persistent(self) -> bool:
        return True

    @property
    def exact(self) -> bool:
        return False  # HNSW

    # ------------------------------------------------------------------ engine primitives
    def _stored_chunks(self, doc_id: str) -> list[StoredChunk]:
        with self._errors():
            return stored_of(self._collection.get(where={DOC: doc_id}, include=["metadatas"]))

    def _copies(self, chunk_ids: Sequence[str]) -> list[StoredChunk]:
        found: dict[str, StoredChunk] = {}
        with self._errors():
            for start in range(0, len(chunk_ids), 500):
                part = list(chunk_ids[start : start + 500])
                for got in (
                    self._collection.get(where=ids_where(part), include=["metadatas"]),
                    self._collection.get(ids=part, include=["metadatas"]),
                ):
                    found.update((c.engine_id, c) for c in stored_of(got))
        return list(found.values())

    def _delete_engine_ids(self, ids: Sequence[str]) -> None:
        with self._errors():
            for start in range(0, len(ids), 500):
                self._collection.delete(ids=list(ids[start : start + 500]))

    def _count(self, filter: MetadataFilter | None = None) -> int:
        if not filter:
            return len(self)
        with self._lock, self._errors():
            return len(paged_chunks(self._collection, visible_where(filter)))

    # ------------------------------------------------------------------ port
    def _selector(self, filter: MetadataFilter | None) -> Any:
        return visible_where(filter)

    def _query_many(self, queries: Sequence[Matrix], n: int, selector: Any) -> list[list[Hit]]:
        """One ``query`` request for every query (rows of one float32 matrix); the hits'
        embedder is told to the caller's identity probe."""
        # chromadb 1.5.9 answers an n_results above the collection's count with what it
        # holds, so no count is asked first
        with self._errors():
            result = self._collection.query(
                query_embeddings=np.stack(queries), n_results=n, where=selector, include=HITS
            )
        return _reported(result)

    async def _asearch(
        self, query_vector: Sequence[float], k: int, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        return (await self._asearch_many([query_vector], k, filter))[0]

    async def _asearch_many(
        self, query_vectors: Sequence[Sequence[float]], k: int, filter: MetadataFilter | None
    ) -> list[list[ScoredChunk]]:
        if not self._native_async:
            return await offload(self._search_many, query_vectors, k, filter)
        if self._known_dim() is None or not query_vectors:
            return [[] for _ in query_vectors]
        queries = [prepare_query(q, self._dim) for q in query_vectors]
        found = await self._aquery_many(queries, k, visible_where(filter))
        return [[h for h, _ in hits] for hits in found]

    def _retrieve(self, query: StoreQuery) -> list[ScoredChunk]:
        """Dense retrieval: one ``query`` (:meth:`search`)."""
        hits = self.search(_vector(query), query.k, query.filter)
        return [h for h in hits if h.score >= query.min_score]

    async def _aretrieve(self, query: StoreQuery) -> list[ScoredChunk]:
        hits = await self.asearch(_vector(query), query.k, query.filter)
        return [h for h in hits if h.score >= query.min_score]

    # ------------------------------------------------------------------ native async (server)
    @property
    def _native_async(self) -> bool:
        return self._aclients is not None

    async def _acollection(self, docs: bool = False) -> AsyncCollection:
        if self._aclients is None:  # pragma: no cover - callers check _native_async
            raise InvalidStateError("an embedded ChromaVectorStore has no async client")
        current = self._docs if docs else self._collection
        with self._errors():
            return await self._aclients.get().collection(current.name, current.id)

    async def _acall(
        self, call: Callable[[AsyncCollection], Awaitable[T]], docs: bool = False
    ) -> T:
        """An async request, repeated once on the collection of the same name when another
        process re-created it (see ``FollowingHandle``)."""
        gone = require("chromadb.errors", "chroma", "chromadb").NotFoundError
        collection = await self._acollection(docs)
        with self._errors():
            try:
                return await call(collection)
            except gone:
                await offload((self._docs_handle if docs else self._chunks_handle).refetch)
                return await call(await self._acollection(docs))

    async def _aquery_many(
        self, queries: Sequence[Matrix], n: int, selector: Any
    ) -> list[list[Hit]]:
        result = await self._acall(
            lambda c: c.query(
                query_embeddings=np.stack(queries), n_results=n, where=selector, include=HITS
            )
        )
        return _reported(result)

    async def _acount(self, filter: MetadataFilter | None = None) -> int:
        """Async :meth:`count`: native without a filter (a filtered count is offloaded)."""
        if filter or not self._native_async:
            return await super()._acount(filter)
        return int(await self._acall(lambda c: c.count()))

    async def aclose(self) -> None:
        """Close this loop's async client (server mode)."""
        if self._aclients is not None:
            await self._aclients.aclose()
        await super().aclose()

    def clear(self) -> None:
        """Remove every chunk, every manifest and the recorded embedder."""
        with self._writing(), self._errors():
            self._client.delete_collection(self._name)
            self._client.delete_collection(self._docs_name)
            self._chunks_handle.refetch()
            self._docs_handle.refetch()
            self._dim = None

    def __len__(self) -> int:
        with self._lock, self._errors():
            return int(self._collection.count())

    def close(self) -> None:
        """Embedded mode: close the client and let the folder go (for another process).
        A server's client closes with the process."""
        with self._lock:
            self._release()

    def __repr__(self) -> str:
        return f"ChromaVectorStore(location={self._where!r}, collection={self._name!r})"


def _reported(result: Any) -> list[list[Hit]]:
    """The hits of a ``query`` result; the embedder they were written under (if one was) is
    told to the caller's identity probe, else the retriever asks the store."""
    hits, stamp = found_of(result)
    if stamp:
        report_identity(EmbedderIdentity.from_json(stamp))
    return hits


def _vector(query: StoreQuery) -> Sequence[float]:
    """The query vector of a dense retrieval (lexical and hybrid are refused)."""
    if query.mode != "dense" or query.vector is None:
        raise lexical_refusal("ChromaVectorStore", f"{query.mode} retrieval")
    return query.vector
