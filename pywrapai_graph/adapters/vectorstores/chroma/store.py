"""ChromaVectorStore: Chroma embedded (``PersistentClient``) or over HTTP (``HttpClient``)."""

from __future__ import annotations

import json
import os
import threading
import weakref
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, fields
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np

from pywrapai_graph.adapters._optional import require
from pywrapai_graph.adapters._per_loop import PerLoop
from pywrapai_graph.adapters._unreachable import refuse_unencoded_userinfo
from pywrapai_graph.adapters.vectorstores.chroma.client import (
    AsyncSide,
    FolderHold,
    FollowingHandle,
    aread_again,
    connect,
    engine_errors,
    read_again,
    validate_collection_name,
)
from pywrapai_graph.adapters.vectorstores.kit.local_files import check_room, subfolder_bytes
from pywrapai_graph.adapters.vectorstores.kit.metadata_json import metadata_json
from pywrapai_graph.adapters.vectorstores.kit.vector_batches import Matrix, PreparedBatch
from pywrapai_graph.adapters.vectorstores.kit.versioned import (
    ID_KEY,
    VERSION_KEY,
    DocRecord,
    Hit,
    StoredChunk,
    VersionedDocuments,
    engine_id,
)
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.domain.manifest import EmbedderIdentity
from pywrapai_graph.errors import ConfigurationError
from pywrapai_graph.ports import MetadataFilter
from pywrapai_graph.ports.identity_probe import report_identity
from pywrapai_graph.ports.offload import offload
from pywrapai_graph.ports.store_inputs import canonical_json, lexical_refusal
from pywrapai_graph.ports.store_query import StoreQuery
from pywrapai_graph.redaction import redact

if TYPE_CHECKING:  # the SDK's own types; imported at run time only when a store is built
    from chromadb.api.models.AsyncCollection import AsyncCollection
    from chromadb.api.models.Collection import Collection
    from chromadb.api.types import Include, QueryResult

__all__ = ["ChromaVectorStore"]

_EMBEDDER = "e:embedder"  # the embedder's record, beside the documents' "d:<doc id>"
T = TypeVar("T")
# a chunk's layout: its metadata as JSON and again as ``where`` fields (``_field``), a flag
# hiding it (a version not committed, or replaced), the embedder it was written under ("")
META = "pywrapai_meta"
DOC = "pywrapai_doc_id"
HIDDEN = "pywrapai_hidden"  # absent on chunks written before it existed
EMBEDDER = "pywrapai_embedder"
HITS: Include = ["documents", "metadatas", "distances"]


def _field(key: str, value: Any) -> tuple[str, Any]:
    """A metadata value as its ``where`` field: scalars as ``m.<key>``, lists and None (which
    Chroma cannot match by equality) as canonical JSON text in ``j.<key>``."""
    if isinstance(value, str | int | float | bool):
        return "m." + key, value
    return "j." + key, canonical_json(value)


def hits_of(result: QueryResult) -> list[list[Hit]]:
    """Each query's hits (with their versions) of one ``query`` result; the embedder their
    chunks were written under is told to the caller's identity probe (None: written while
    the store had none; chunks of release 0.1.0 carry no stamp: the retriever asks)."""
    metas = result["metadatas"] or []
    rows = zip(result["documents"] or [], metas, result["distances"] or [], strict=True)
    hits = [[_hit(*hit) for hit in zip(*row, strict=True)] for row in rows]
    stamps = {m.get(EMBEDDER) for ms in metas for m in ms} - {""}
    if None not in stamps:
        report_identity(EmbedderIdentity.from_json(str(stamps.pop())) if stamps else None)
    return hits


def _hit(text: str | None, meta: Any, distance: float) -> Hit:
    metadata = json.loads(str(meta[META]))
    chunk = Chunk(text or "", doc_id=str(meta[DOC]), metadata=metadata, id=str(meta[ID_KEY]))
    return ScoredChunk(chunk, min(1.0 - float(distance), 1.0)), str(meta[VERSION_KEY])


def stored_of(got: Any) -> list[StoredChunk]:
    return [
        StoredChunk(i, str(m[ID_KEY]), str(m[VERSION_KEY]), str(m[DOC]))
        for i, m in zip(got["ids"], got["metadatas"] or [], strict=True)
    ]


class ChromaVectorStore(VersionedDocuments):
    """Chroma collection in cosine space, embeddings passed explicitly (Chroma's embedding
    function and telemetry off). Dense only: chromadb 1.5.9 serves no ranked text index
    outside Chroma Cloud, so lexical or hybrid retrieval raise UnsupportedOperationError.

    A retrieval is one ``query`` whose ``where`` holds the filter and keeps the shown chunks;
    its hits carry the embedder they were written under. Documents are replaced all or
    nothing (``kit.versioned``, records in ``<collection>.docs``). Embedded mode serves one
    process at a time (a ``PersistentClient`` never sees another's writes); any number of
    processes share a server (``url=``).

    Args:
        path: a directory for embedded mode (``PersistentClient``).
        url: a Chroma server URL (``HttpClient``); exactly one of path/url.
        collection: the collection name (validated against Chroma's rules).
        ef_search: HNSW search breadth (Chroma's 100 gives recall@10 ~0.90 at 100k vectors).
        timeout: seconds to wait for a server's first answer (chromadb waits for ever).
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
    persistent = True
    exact = False  # HNSW

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        url: str | None = None,
        collection: str = "pywrapai",
        *,
        ef_search: int = 400,
        timeout: float = 10.0,
        request_timeout: float | None = 30.0,
    ) -> None:
        if (path is None) == (url is None):
            raise ConfigurationError("ChromaVectorStore needs exactly one of path= or url=")
        refuse_unencoded_userinfo(url, "Chroma url")
        self._name = validate_collection_name(collection)
        require("chromadb", "chroma", "chromadb")  # before a folder is made
        self._where = os.fspath(path) if path is not None else redact(str(url))
        self._ef_search = ef_search
        self._folder = folder = Path(path) if path is not None else None
        self._failures = partial(engine_errors, self._where, url, request_timeout, folder)
        hold = FolderHold(folder) if folder is not None else None
        self._lock: Any = hold.lock if hold is not None else threading.RLock()
        try:
            with self._writing():
                self._client, self._aclients = connect(folder or str(url), timeout, request_timeout)
                self._gone = require("chromadb.errors", "chroma", "chromadb").NotFoundError
                # another process may re-create the collections: the dimension is asked again
                forget = lambda: setattr(self, "_dim", None)  # noqa: E731
                self._chunks = FollowingHandle(self._open_collection, self._gone, forget)
                self._collection = cast("Collection", self._chunks)  # mypy checks its calls
                self._docs = FollowingHandle(self._open_docs, self._gone, forget)
                self._dim = self._engine_dimension()
                if folder is not None:  # only here can no other writer be mid-write
                    self._recover()
        except BaseException:
            if hold is not None:
                hold.release()
            raise
        # embedded mode: close the client, then let the folder go (once)
        self._release = weakref.finalize(self, hold.release, self._client) if hold else None

    def _errors(self) -> AbstractContextManager[None]:
        return self._failures()

    def _open_collection(self) -> Collection:
        hnsw: Any = {"space": "cosine", "ef_search": self._ef_search, "ef_construction": 200}
        return self._client.get_or_create_collection(
            self._name, embedding_function=None, configuration={"hnsw": hnsw}
        )

    def _open_docs(self) -> Collection:  # document and embedder records, 1-d vectors
        return self._client.get_or_create_collection(f"{self._name}.docs", embedding_function=None)

    def _engine_dimension(self) -> int | None:
        with self._errors():
            got = read_again(lambda: self._collection.get(limit=1, include=["embeddings"]))
        embeddings = got.get("embeddings")
        return None if embeddings is None or len(embeddings) == 0 else len(embeddings[0])

    # ------------------------------------------------------------------ records
    def _records(self, doc_ids: Sequence[str]) -> dict[str, DocRecord]:
        with self._errors():
            got = self._docs.get(ids=["d:" + d for d in doc_ids], include=["metadatas"])
        return {r.doc_id: r for r in map(_record, got["metadatas"] or [])}

    def _pending_records(self) -> list[DocRecord]:
        with self._errors():
            got = self._docs.get(where={"pending": {"$ne": ""}}, include=["metadatas"])
        return [_record(m) for m in got["metadatas"] or []]

    def _put(self, record_id: str, metadata: dict[str, Any]) -> None:
        with self._errors():
            self._docs.upsert(ids=[record_id], embeddings=[[1.0]], metadatas=[metadata])

    def _put_record(self, record: DocRecord) -> None:
        self._put("d:" + record.doc_id, asdict(record))

    def _drop_records(self, doc_ids: Sequence[str]) -> None:
        with self._errors():
            self._docs.delete(ids=["d:" + d for d in doc_ids])

    def _recorded_embedder(self) -> EmbedderIdentity | None:
        with self._errors():
            metas = self._docs.get(ids=[_EMBEDDER], include=["metadatas"])["metadatas"] or []
        return EmbedderIdentity.from_json(str(metas[0]["embedder"])) if metas else None

    def _put_embedder(self, identity: EmbedderIdentity) -> None:
        self._put(_EMBEDDER, {"embedder": identity.to_json(), "pending": ""})

    # ------------------------------------------------------------------ chunks
    def _batches(self, n: int) -> Iterator[slice]:  # within Chroma's largest batch
        limit = int(self._client.get_max_batch_size())
        return (slice(start, start + limit) for start in range(0, n, limit))

    def _stored_chunks(self, doc_id: str) -> list[StoredChunk]:
        with self._errors():
            return stored_of(self._collection.get(where={DOC: doc_id}, include=["metadatas"]))

    def _copies(self, chunk_ids: Sequence[str]) -> list[StoredChunk]:
        found: dict[str, StoredChunk] = {}  # an id asked twice is found once
        with self._errors():
            for start in range(0, len(chunk_ids), 500):
                copies: Any = {ID_KEY: {"$in": list(chunk_ids[start : start + 500])}}
                got = self._collection.get(where=copies, include=["metadatas"])
                found.update((c.engine_id, c) for c in stored_of(got))
        return list(found.values())

    def _delete_engine_ids(self, ids: Sequence[str]) -> None:
        with self._errors():
            for part in self._batches(len(ids)):
                self._collection.delete(ids=list(ids[part]))

    def _show(self, record: DocRecord, stored: list[StoredChunk]) -> None:
        """Show a committed version, hide the others: one ``update`` per largest batch."""
        if record.pending != record.version:
            return
        with self._errors():
            for part in self._batches(len(stored)):
                self._collection.update(
                    ids=[c.engine_id for c in stored[part]],
                    metadatas=[{HIDDEN: c.version != record.version} for c in stored[part]],
                )

    def _upsert(self, batch: PreparedBatch, versions: Sequence[str]) -> None:
        """Write chunks stamped with the recorded embedder, hidden while a replace writes."""
        if not batch.ids:
            return
        embedder = self._replacing[0] if self._replacing else self._recorded_embedder()
        stamp = {
            HIDDEN: self._replacing is not None,
            EMBEDDER: embedder.to_json() if embedder else "",
        }
        pairs = list(zip(batch.chunks, versions, strict=True))
        metadatas: list[Any] = [
            {META: metadata_json(c), DOC: c.doc_id, ID_KEY: c.id, VERSION_KEY: v, **stamp}
            | dict(_field(key, value) for key, value in c.metadata.items())
            for c, v in pairs
        ]
        ids = [engine_id(c.id, v) for c, v in pairs]
        self._check_room(batch)
        with self._errors():
            for part in self._batches(len(ids)):
                self._collection.upsert(
                    ids=ids[part],
                    embeddings=batch.vectors[part],
                    documents=[c.text for c in batch.chunks[part]],
                    metadatas=metadatas[part],
                )
        self._dim = int(batch.vectors.shape[1])

    def _check_room(self, batch: PreparedBatch) -> None:
        """Embedded mode: refuse a write the disk may not hold (a Chroma folder that ran
        out of room mid-write no longer opens): room to rewrite the index, and per chunk."""
        if self._folder is not None:
            text = sum(len(c.text.encode()) for c in batch.chunks)
            per_chunk = 12 * int(batch.vectors.shape[1]) + 2048
            need = subfolder_bytes(self._folder) + len(batch.ids) * per_chunk + 8 * text
            check_room(self._folder, need)

    def _count(self, filter: MetadataFilter | None = None) -> int:
        if not filter:
            return len(self)
        with self._lock, self._errors():
            return len(self._collection.get(where=self._selector(filter), include=[])["ids"])

    # ------------------------------------------------------------------ reads
    def _selector(self, filter: MetadataFilter | None) -> Any:
        """The ``where`` of the shown chunks ``filter`` keeps."""
        clauses: list[Any] = [{HIDDEN: {"$ne": True}}]
        clauses += [dict([_field(k, v)]) for k, v in (filter or {}).items()]
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}

    def _query_many(self, queries: Sequence[Matrix], n: int, selector: Any) -> list[list[Hit]]:
        """One ``query`` (an ``n`` above the collection's count gets what it holds)."""
        stacked = np.stack(queries)
        with self._errors():
            return hits_of(
                read_again(
                    lambda: self._collection.query(
                        query_embeddings=stacked, n_results=n, where=selector, include=HITS
                    )
                )
            )

    def _retrieve(self, query: StoreQuery) -> list[ScoredChunk]:
        """Dense retrieval: one ``query`` (:meth:`search`)."""
        hits = self.search(_vector(query), query.k, query.filter)
        return [h for h in hits if h.score >= query.min_score]

    async def _aretrieve(self, query: StoreQuery) -> list[ScoredChunk]:
        hits = await self.asearch(_vector(query), query.k, query.filter)
        return [h for h in hits if h.score >= query.min_score]

    # ------------------------------------------------------------------ native async (server)
    async def _acall(self, call: Callable[[AsyncCollection], Awaitable[T]]) -> T:
        """An async request on the chunks, repeated once as :class:`FollowingHandle` does."""
        sides = cast("PerLoop[AsyncSide]", self._aclients)  # callers check _native_async

        async def current() -> AsyncCollection:
            return await sides.get().collection(self._collection.name, self._collection.id)

        with self._errors():
            try:
                return await call(await current())
            except self._gone:
                await offload(self._chunks.refetch)
                return await call(await current())

    async def _aquery_many(
        self, queries: Sequence[Matrix], n: int, selector: Any
    ) -> list[list[Hit]]:
        stacked = np.stack(queries)

        def query(c: AsyncCollection) -> Awaitable[QueryResult]:
            return aread_again(
                lambda: c.query(query_embeddings=stacked, n_results=n, where=selector, include=HITS)
            )

        return hits_of(await self._acall(query))

    async def _acount(self, filter: MetadataFilter | None = None) -> int:
        """Async :meth:`count`: native without a filter (a filtered count is offloaded)."""
        if filter or not self._native_async:
            return await super()._acount(filter)
        return int(await self._acall(lambda c: c.count()))

    def clear(self) -> None:
        """Remove every chunk, every manifest and the recorded embedder."""
        with self._writing(), self._errors():
            self._client.delete_collection(self._name)
            self._client.delete_collection(f"{self._name}.docs")
            self._chunks.refetch()
            self._docs.refetch()

    def __len__(self) -> int:
        with self._lock, self._errors():
            return int(self._collection.count())

    def close(self) -> None:
        """Embedded mode: close the client and let the folder go (for another process)."""
        if self._release is not None:
            with self._lock:
                self._release()

    def __repr__(self) -> str:
        return f"ChromaVectorStore(location={self._where!r}, collection={self._name!r})"


def _record(meta: Any) -> DocRecord:
    return DocRecord(*(str(meta[f.name]) for f in fields(DocRecord)))


def _vector(query: StoreQuery) -> Sequence[float]:
    """The query vector of a dense retrieval (lexical and hybrid are refused)."""
    if query.mode != "dense" or query.vector is None:
        raise lexical_refusal("ChromaVectorStore", f"{query.mode} retrieval")
    return query.vector
