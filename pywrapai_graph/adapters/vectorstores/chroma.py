"""ChromaVectorStore: Chroma embedded (``PersistentClient``) or over HTTP (``HttpClient``)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import threading
import time
import uuid
import weakref
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast
from urllib.parse import urlparse

import numpy as np

from pywrapai_graph.adapters._optional import require
from pywrapai_graph.adapters._per_loop import PerLoop
from pywrapai_graph.adapters._transport import http_errors
from pywrapai_graph.adapters._unreachable import (
    address,
    cannot_reach,
    probe,
    refuse_unencoded_userinfo,
)
from pywrapai_graph.adapters.vectorstores._chroma_handle import FollowingHandle
from pywrapai_graph.adapters.vectorstores._chroma_lexical import TERMS, bm25_top, ids_where
from pywrapai_graph.adapters.vectorstores._engine_lexical import EngineLexicalSearch
from pywrapai_graph.adapters.vectorstores._exact_index import (
    Matrix,
    PreparedBatch,
    metadata_json,
    prepare_batch,
)
from pywrapai_graph.adapters.vectorstores._local_files import (
    WriteLock,
    check_room,
    nearly_full,
    subfolder_bytes,
)
from pywrapai_graph.adapters.vectorstores._no_follow import refuse_links, sqlite_files
from pywrapai_graph.adapters.vectorstores._process_hold import FolderHold
from pywrapai_graph.adapters.vectorstores._sparse_terms import LengthTotals
from pywrapai_graph.adapters.vectorstores._versioned import (
    ID_KEY,
    VERSION_KEY,
    DocRecord,
    Hit,
    StoredChunk,
    engine_id,
)
from pywrapai_graph.domain import Chunk, ScoredChunk
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
from pywrapai_graph.ports.offload import offload
from pywrapai_graph.ports.store_inputs import canonical_json
from pywrapai_graph.ports.vector_store import check_ids
from pywrapai_graph.redaction import redact, scrubbed

if TYPE_CHECKING:  # the SDK's own types; imported at run time only when a store is built
    from chromadb.api import AsyncClientAPI, ClientAPI
    from chromadb.api.models.AsyncCollection import AsyncCollection
    from chromadb.api.models.Collection import Collection
    from chromadb.api.types import Include, Metadata, QueryResult

__all__ = ["ChromaVectorStore"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,510}[A-Za-z0-9]$")
_IPV4 = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")
_META = "pywrapai_meta"  # the chunk's metadata as JSON
_DOC = "pywrapai_doc_id"
_FIELD = "m."  # scalar metadata values, flattened for Chroma's where filters
# lists and None as canonical JSON text: Chroma cannot match either by equality
_JSON_FIELD = "j."
_SCALARS = (str, int, float, bool)
T = TypeVar("T")
_EMBEDDER = "e:embedder"
_LENGTHS = "e:lengths"
#: collection metadata: every chunk carries its terms (set once older chunks got theirs)
_LEXICAL_MARK = "pywrapai_lexical"
_PAGE = 5000  # chunks per request of a paged read
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


_HITS: Include = ["documents", "metadatas", "distances"]


def _hit(engine_id: str, text: str | None, meta: Any, score: float) -> Hit:
    """One hit (with its chunk version) from a chunk's stored text and metadata."""
    chunk = Chunk(
        text=text or "",
        doc_id=str(meta[_DOC]),
        metadata=json.loads(str(meta[_META])),
        id=str(meta.get(ID_KEY, engine_id)),
    )
    return ScoredChunk(chunk, score), str(meta.get(VERSION_KEY, ""))


def _hits(result: QueryResult) -> list[list[Hit]]:
    """Each query's hits (with their chunk versions) from one ``query`` result."""
    rows = zip(
        result["ids"],
        result.get("documents") or [],
        result.get("metadatas") or [],
        result.get("distances") or [],
        strict=True,
    )
    return [
        [
            _hit(chunk_id, doc, meta, min(1.0 - float(distance), 1.0))
            for chunk_id, doc, meta, distance in zip(*row, strict=True)
        ]
        for row in rows
    ]


def _bound_requests(client: Any, seconds: float | None) -> None:
    """Give a Chroma HTTP client's connection pool a deadline per request.

    chromadb 1.5.9 builds its ``httpx`` clients with ``timeout=None`` and has no setting for
    it, so a server that stops answering would hang every call for ever. The pool is the
    client's ``_server._session`` (sync) or ``_server._get_client()`` (async, one pool per
    event loop, built on first use); ``httpx`` lets its ``timeout`` be set after creation.
    """
    if seconds is None:
        return
    server: Any = getattr(client, "_server", None)
    pool = getattr(server, "_session", None)
    if pool is None and hasattr(server, "_get_client"):
        pool = server._get_client()
    if pool is None:
        raise VectorStoreError(
            "this chromadb release keeps its HTTP pool elsewhere: pywrapai cannot give Chroma "
            "requests a deadline (pass request_timeout=None to accept that, or pin chromadb)"
        )
    pool.timeout = seconds


def _let_go(client: Any, hold: FolderHold | None) -> None:
    """Embedded mode: close the client (chromadb drops its cached state of the folder with
    the last one), then let the folder go. A server's client closes with the process."""
    if hold is not None:
        client.close()
        hold.release()


def _hold(folder: Path) -> FolderHold:
    return FolderHold(
        folder,
        f"the Chroma folder {str(folder)!r} is open in another process, and an embedded "
        "Chroma serves one process at a time (it would not see the other's writes): close "
        f"the store there, or serve the folder with `chroma run --path {folder}` and open "
        "ChromaVectorStore(url=...) in every process",
    )


def _record(meta: Any) -> DocRecord:
    return DocRecord(
        str(meta["doc_id"]), str(meta["version"]), str(meta["manifest"]), str(meta["pending"])
    )


class _AsyncSide:
    """One event loop's Chroma ``AsyncHttpClient`` and collection handles, built on first use.

    chromadb keeps its async HTTP pools in one class-wide table keyed by the loop's hash, and
    never drops a pool whose loop ended (a new loop may get the same hash and the dead pool).
    :meth:`aclose` therefore removes and closes the loop's pool when the last of our clients
    on that loop closes, and unregisters the client's ``System`` (a new one is made per
    client).
    """

    _users: ClassVar[weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, int]] = (
        weakref.WeakKeyDictionary()
    )
    _users_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, connect: Callable[[], Awaitable[AsyncClientAPI]]) -> None:
        self._connect = connect
        self._client: AsyncClientAPI | None = None
        self._handles: dict[str, AsyncCollection] = {}
        self._opening = asyncio.Lock()
        loop = asyncio.get_running_loop()
        # no strong reference to the loop: PerLoop keys on it weakly
        self._loop = weakref.ref(loop)
        self._loop_hash = hash(loop)
        with self._users_lock:
            self._users[loop] = self._users.get(loop, 0) + 1

    async def collection(self, name: str, ident: uuid.UUID) -> AsyncCollection:
        """The handle of ``name``, fetched again when the sync side re-created it."""
        handle = self._handles.get(name)
        if handle is not None and handle.id == ident:
            return handle
        async with self._opening:
            if self._client is None:
                self._client = await self._connect()
            handle = await self._client.get_collection(name, embedding_function=None)
            self._handles[name] = handle
            return handle

    async def aclose(self) -> None:
        """Forget the handles; close the loop's HTTP pool if no other client of ours uses it."""
        self._handles.clear()
        self._opening = asyncio.Lock()  # a used lock holds its loop
        client, self._client = self._client, None
        loop = self._loop()
        with self._users_lock:
            left = self._users.get(loop, 1) - 1 if loop is not None else 0
            if left and loop is not None:
                self._users[loop] = left
            elif loop is not None:
                self._users.pop(loop, None)
        if client is not None:
            shared = require("chromadb.api.shared_system_client", "chroma", "chromadb")
            identifier = str(getattr(client, "_identifier", ""))
            shared.SharedSystemClient._identifier_to_system.pop(identifier, None)
            shared.SharedSystemClient._identifier_to_refcount.pop(identifier, None)
        if not left:
            fastapi = require("chromadb.api.async_fastapi", "chroma", "chromadb")
            pool = fastapi.AsyncFastAPI._clients.pop(self._loop_hash, None)
            if pool is not None:
                await pool.aclose()


class ChromaVectorStore(EngineLexicalSearch):
    """Chroma collection in cosine space; embeddings always passed explicitly.

    Chroma's default embedding function (which downloads a model) is never used, and its
    telemetry is turned off. Metadata is kept as JSON, with scalar values also stored as
    ``m.<key>`` fields so equality filters run inside Chroma. Documents are replaced all or
    nothing through versions and records kept in a second collection, ``<collection>.docs``
    (see ``_versioned``). Lexical search is answered from terms stored with each chunk
    (see ``_chroma_lexical``: chromadb 1.5.9 serves no sparse index outside Chroma Cloud).

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
    _ids_selector = staticmethod(ids_where)

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
        self._aclients: PerLoop[_AsyncSide] | None = None
        hold = _hold(Path(path)) if path is not None else None
        try:
            self._open(path, url, timeout, chromadb, config, settings)
        except BaseException:
            if hold is not None:
                hold.release()
            raise
        self._release = weakref.finalize(self, _let_go, self._client, hold)

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
                parsed = urlparse(str(url))
                host = parsed.hostname or "localhost"
                port = parsed.port or (443 if parsed.scheme == "https" else 8000)
                secure = parsed.scheme == "https"
                try:
                    shown = f"[{host}]" if ":" in host else host
                    scheme = "https" if secure else "http"
                    probe(f"{scheme}://{shown}:{port}/api/v2/heartbeat", timeout)
                    self._client = chromadb.HttpClient(
                        host=host, port=port, ssl=secure, settings=settings
                    )
                    _bound_requests(self._client, self._request_timeout)

                    async def connect() -> AsyncClientAPI:
                        # its first requests run before its pool can be given a deadline
                        client: AsyncClientAPI = await asyncio.wait_for(
                            chromadb.AsyncHttpClient(
                                host=host,
                                port=port,
                                ssl=secure,
                                settings=config.Settings(anonymized_telemetry=False),
                            ),
                            self._request_timeout,
                        )
                        _bound_requests(client, self._request_timeout)
                        return client

                    self._aclients = PerLoop(lambda: _AsyncSide(connect), _AsyncSide.aclose)
                except (OSError, ValueError) as exc:  # ValueError: "Could not connect to..."
                    raise VectorStoreError(
                        cannot_reach("Chroma", address(str(url), default_port=port), exc)
                    ) from scrubbed(exc, [url])
            gone = require("chromadb.errors", "chroma", "chromadb").NotFoundError
            self._chunks_handle = FollowingHandle(self._open_collection, gone, self._forget_dim)
            self._docs_handle = FollowingHandle(self._open_docs, gone)
            self._dim = self._stored_dimension()
            if self._file_lock is not None:  # only here can no other writer be mid-write
                self._recover()
            self._add_missing_terms()

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
    def _docs_name(self) -> str:
        return f"{self._name}.docs"

    def _open_docs(self) -> Any:
        """The collection of document records (manifests, versions) and the embedder."""
        return self._client.get_or_create_collection(self._docs_name, embedding_function=None)

    def _add_missing_terms(self) -> None:
        """Give chunks written before lexical search was Chroma's their terms (once)."""
        if (self._collection.metadata or {}).get(_LEXICAL_MARK):
            return
        offset = 0
        while True:
            got = self._collection.get(include=["documents"], limit=_PAGE, offset=offset)
            if not got["ids"]:
                break
            texts = [t or "" for t in got.get("documents") or []]
            terms, _ = self._weigh(texts)
            self._collection.update(
                ids=got["ids"], metadatas=[{TERMS: sorted(t)} if t else {} for t in terms]
            )
            offset += len(got["ids"])
        self._collection.modify(metadata={_LEXICAL_MARK: 1})

    @property
    def _collection(self) -> Collection:
        """The chunks collection (typed as the SDK's: mypy checks every call on it)."""
        return cast("Collection", self._chunks_handle)

    @property
    def _docs(self) -> Any:
        """The records collection (document versions, manifests, the embedder)."""
        return self._docs_handle

    def _forget_dim(self) -> None:
        """Another process re-created the collection: its dimension is asked again."""
        self._dim = None

    def _engine_dimension(self) -> int | None:
        with self._errors():
            return self._stored_dimension()

    def _stored_dimension(self) -> int | None:
        errors = require("chromadb.errors", "chroma", "chromadb")
        for pause in (0.05, 0.2, 0.5, None):
            try:
                got = self._collection.get(limit=1, include=["embeddings"])
                break
            except errors.InternalError:
                # a Chroma server answers "Error creating hnsw segment reader: Nothing found
                # on disk" for a moment while another process writes a collection it just made
                if pause is None:
                    raise
                time.sleep(pause)
        embeddings = got.get("embeddings")
        if embeddings is None or len(embeddings) == 0:
            return None
        return len(embeddings[0])

    @staticmethod
    def _where_filter(filter: MetadataFilter | None, doc_id: str | None = None) -> Any:
        clauses: list[dict[str, Any]] = []
        if doc_id is not None:
            clauses.append({_DOC: doc_id})
        for key, value in (filter or {}).items():
            if isinstance(value, _SCALARS):
                clauses.append({_FIELD + key: value})
            else:  # a list or None: the canonical JSON text written next to it
                clauses.append({_JSON_FIELD + key: canonical_json(value)})
        if not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}

    @staticmethod
    def _metadata(chunk: Chunk) -> Metadata:
        out: dict[str, Any] = {_META: metadata_json(chunk), _DOC: chunk.doc_id}
        for key, value in chunk.metadata.items():
            if isinstance(value, _SCALARS):
                out[_FIELD + key] = value
            else:
                out[_JSON_FIELD + key] = canonical_json(value)
        return out

    # ------------------------------------------------------------------ port
    @property
    def persistent(self) -> bool:
        return True

    @property
    def exact(self) -> bool:
        return False  # HNSW

    @property
    def dimension(self) -> int | None:
        """Vector dimension, or None while the collection is empty."""
        return self._dim

    # ------------------------------------------------------------------ engine primitives
    def _record_id(self, doc_id: str) -> str:
        return "d:" + doc_id

    def _records(self, doc_ids: Sequence[str]) -> dict[str, DocRecord]:
        if not doc_ids:
            return {}
        with self._errors():
            got = self._docs.get(ids=[self._record_id(d) for d in doc_ids], include=["metadatas"])
        return {r.doc_id: r for r in map(_record, got["metadatas"] or [])}

    def _pending_records(self) -> list[DocRecord]:
        with self._errors():
            got = self._docs.get(where={"pending": {"$ne": ""}}, include=["metadatas"])
        return [
            _record(m)
            for i, m in zip(got["ids"], got["metadatas"] or [], strict=True)
            if i[:2] == "d:"
        ]

    def _now_ns(self) -> int:
        """The Chroma server's clock (its heartbeat), so repairs age versions alike."""
        with self._errors():
            return int(self._client.heartbeat())

    def _put_record(self, record: DocRecord) -> None:
        with self._errors():
            self._docs.upsert(
                ids=[self._record_id(record.doc_id)],
                embeddings=[[1.0]],
                metadatas=[
                    {
                        "doc_id": record.doc_id,
                        "version": record.version,
                        "manifest": record.manifest,
                        "pending": record.pending,
                    }
                ],
            )

    def _drop_records(self, doc_ids: Sequence[str]) -> None:
        with self._errors():
            self._docs.delete(ids=[self._record_id(d) for d in doc_ids])

    def _recorded_embedder(self) -> EmbedderIdentity | None:
        with self._errors():
            got = self._docs.get(ids=[_EMBEDDER], include=["metadatas"])
        metas = got["metadatas"] or []
        return EmbedderIdentity.from_json(str(metas[0]["embedder"])) if metas else None

    def _put_embedder(self, identity: EmbedderIdentity) -> None:
        with self._errors():
            self._docs.upsert(
                ids=[_EMBEDDER],
                embeddings=[[1.0]],
                metadatas=[{"embedder": identity.to_json(), "pending": ""}],
            )

    def _length_totals(self) -> LengthTotals:
        with self._errors():
            metas = self._docs.get(ids=[_LENGTHS], include=["metadatas"])["metadatas"] or []
        got = metas[0] if metas else {}
        return LengthTotals(int(got.get("tokens", 0) or 0), int(got.get("chunks", 0) or 0))

    def _put_length_totals(self, totals: LengthTotals) -> None:
        with self._errors():
            self._docs.upsert(
                ids=[_LENGTHS],
                embeddings=[[1.0]],
                metadatas=[{"tokens": totals.tokens, "chunks": totals.chunks, "pending": ""}],
            )

    def _stored(self, got: Any) -> list[StoredChunk]:
        return [
            StoredChunk(i, str(m.get(ID_KEY, i)), str(m.get(VERSION_KEY, "")), str(m.get(_DOC, "")))
            for i, m in zip(got["ids"], got["metadatas"] or [], strict=True)
        ]

    def _stored_chunks(self, doc_id: str) -> list[StoredChunk]:
        with self._errors():
            return self._stored(self._collection.get(where={_DOC: doc_id}, include=["metadatas"]))

    def _copies(self, chunk_ids: Sequence[str]) -> list[StoredChunk]:
        found: dict[str, StoredChunk] = {}
        with self._errors():
            for start in range(0, len(chunk_ids), 500):
                part = list(chunk_ids[start : start + 500])
                for got in (
                    self._collection.get(where=ids_where(part), include=["metadatas"]),
                    self._collection.get(ids=part, include=["metadatas"]),
                ):
                    found.update((c.engine_id, c) for c in self._stored(got))
        return list(found.values())

    def _upsert(self, batch: PreparedBatch, versions: Sequence[str]) -> None:
        if not batch.ids:
            return
        terms, _ = self._weigh([c.text for c in batch.chunks])
        metadatas: list[Metadata] = [
            {**self._metadata(c), ID_KEY: c.id, VERSION_KEY: v, **({TERMS: sorted(t)} if t else {})}
            for c, v, t in zip(batch.chunks, versions, terms, strict=True)
        ]
        ids = [engine_id(c.id, v) for c, v in zip(batch.chunks, versions, strict=True)]
        self._check_room(batch)
        with self._errors():
            limit = int(self._client.get_max_batch_size())
            for start in range(0, len(ids), limit):
                end = start + limit
                self._collection.upsert(
                    ids=ids[start:end],
                    embeddings=batch.vectors[start:end],
                    documents=[c.text for c in batch.chunks[start:end]],
                    metadatas=metadatas[start:end],
                )
        self._dim = int(batch.vectors.shape[1])

    def _check_room(self, batch: PreparedBatch) -> None:
        """Embedded mode: refuse a write the disk may not hold, before Chroma starts it.

        Chroma does not survive running out of room mid-write (its index files are left
        cut short and the folder no longer opens), so a write needs room for a rewrite of
        the index segments plus a generous share per chunk (log, metadata, text index).
        """
        if self._file_lock is None:
            return
        folder = self._file_lock.path.parent
        text = sum(len(c.text.encode()) for c in batch.chunks)
        per_chunk = 12 * int(batch.vectors.shape[1]) + 2048
        check_room(folder, subfolder_bytes(folder) + len(batch.ids) * per_chunk + 8 * text)

    def _delete_engine_ids(self, ids: Sequence[str]) -> None:
        with self._errors():
            for start in range(0, len(ids), 500):
                self._collection.delete(ids=list(ids[start : start + 500]))

    def _paged(self, where: Any) -> list[tuple[Chunk, str]]:
        pairs: list[tuple[Chunk, str]] = []
        with self._errors():
            while True:
                got = self._collection.get(
                    where=where, include=["documents", "metadatas"], limit=_PAGE, offset=len(pairs)
                )
                texts, metas = got.get("documents") or [], got.get("metadatas") or []
                pairs += [
                    (
                        Chunk(
                            text or "",
                            str(m[_DOC]),
                            json.loads(str(m[_META])),
                            str(m.get(ID_KEY, chunk_id)),
                        ),
                        str(m.get(VERSION_KEY, "")),
                    )
                    for chunk_id, text, m in zip(got["ids"], texts, metas, strict=True)
                ]
                if len(got["ids"]) < _PAGE:
                    return pairs

    def count(self, filter: MetadataFilter | None = None) -> int:
        if not filter:
            return len(self)
        with self._lock:
            return len(self._committed(self._paged(self._where_filter(filter))))

    # ------------------------------------------------------------------ port
    def add(self, chunks: Sequence[Chunk]) -> None:
        batch = prepare_batch(chunks, self._known_dim())
        if not batch.ids:
            return
        with self._writing():
            self._add_versioned(batch)

    def _selector(self, filter: MetadataFilter | None) -> Any:
        return self._where_filter(filter)

    def _available(self) -> int | None:
        with self._errors():
            return int(self._collection.count())  # Chroma refuses n_results above it

    def _query(self, query: Matrix, n: int, selector: Any) -> list[Hit]:
        return self._query_many([query], n, selector)[0]

    def _lexical_query(self, query: str, n: int, selector: Any, k1: float, b: float) -> list[Hit]:
        avgdl = self._length_totals().avgdl
        with self._errors():
            top = bm25_top(self._collection, query, n, selector, avgdl, k1, b)
            if not top:
                return []
            got = self._collection.get(ids=[i for i, _ in top], include=["documents", "metadatas"])
        rows = {
            i: (text, meta)
            for i, text, meta in zip(
                got["ids"], got.get("documents") or [], got.get("metadatas") or [], strict=True
            )
        }
        return [_hit(i, *rows[i], score) for i, score in top if i in rows]

    def _query_many(self, queries: Sequence[Matrix], n: int, selector: Any) -> list[list[Hit]]:
        """One ``query`` request for every query (rows of one float32 matrix)."""
        with self._errors():
            result = self._collection.query(
                query_embeddings=np.stack(queries), n_results=n, where=selector, include=_HITS
            )
        return _hits(result)

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

    async def _aavailable(self) -> int | None:
        return int(await self._acall(lambda c: c.count()))

    async def _aquery_many(
        self, queries: Sequence[Matrix], n: int, selector: Any
    ) -> list[list[Hit]]:
        result = await self._acall(
            lambda c: c.query(
                query_embeddings=np.stack(queries), n_results=n, where=selector, include=_HITS
            )
        )
        return _hits(result)

    async def _arecords(self, doc_ids: Sequence[str]) -> dict[str, DocRecord]:
        if not doc_ids:
            return {}
        ids = [self._record_id(d) for d in doc_ids]
        got = await self._acall(lambda c: c.get(ids=ids, include=["metadatas"]), docs=True)
        return {r.doc_id: r for r in map(_record, got["metadatas"] or [])}

    async def acount(self, filter: MetadataFilter | None = None) -> int:
        """Async :meth:`count`: native without a filter (a filtered count is offloaded)."""
        if filter or not self._native_async:
            return await super().acount(filter)
        return int(await self._aavailable() or 0)

    async def aclose(self) -> None:
        """Close this loop's async client (server mode)."""
        if self._aclients is not None:
            await self._aclients.aclose()
        await super().aclose()

    def delete(self, ids: Sequence[str]) -> int:
        wanted = check_ids(ids)
        if not wanted:
            return 0
        with self._writing():
            return self._delete_chunks(wanted)

    def delete_by_doc(self, doc_id: str) -> int:
        with self._writing():
            return self._delete_document(doc_id)

    def clear(self) -> None:
        """Remove every chunk, every manifest and the recorded embedder."""
        with self._writing(), self._errors():
            self._client.delete_collection(self._name)
            self._client.delete_collection(self._docs_name)
            self._chunks_handle.refetch()
            self._docs_handle.refetch()
            self._collection.modify(metadata={_LEXICAL_MARK: 1})
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
