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
from pywrapai_graph.adapters.vectorstores.chroma import client as chroma
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
from pywrapai_graph.ports.store_inputs import canonical_json
from pywrapai_graph.ports.store_query import StoreQuery
from pywrapai_graph.redaction import redact

if TYPE_CHECKING:  # the SDK's own types; imported at run time only when a store is built
    from chromadb.api.models.AsyncCollection import AsyncCollection
    from chromadb.api.models.Collection import Collection
    from chromadb.api.types import Include, QueryResult

__all__ = ["ChromaVectorStore"]

_EMBEDDER = "e:embedder"  # the embedder's record, beside the documents' "d:<doc id>"
T = TypeVar("T")
# a chunk's metadata: as JSON and as ``where`` fields (``_field``), a flag hiding an
# uncommitted or replaced version (absent on old chunks), the embedder it was written under
META = "pywrapai_meta"
DOC = "pywrapai_doc_id"
HIDDEN = "pywrapai_hidden"
EMBEDDER = "pywrapai_embedder"
HITS: Include = ["documents", "metadatas", "distances"]


def _field(key: str, value: Any) -> tuple[str, Any]:
    """Scalars as ``m.<key>``; lists and None (no equality in Chroma) as JSON in ``j.<key>``."""
    if isinstance(value, str | int | float | bool):
        return "m." + key, value
    return "j." + key, canonical_json(value)


def hits_of(result: QueryResult) -> list[list[Hit]]:
    """Each query's hits and versions; their chunks' embedder is told to the identity probe
    (0.1.0's chunks carry no stamp: the retriever asks)."""
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


class ChromaVectorStore(VersionedDocuments):
    """A Chroma collection in cosine space, our embeddings, telemetry off. Dense only
    (chromadb has no ranked text index outside its cloud: lexical or hybrid raise
    UnsupportedOperationError); a retrieval is one ``query``. Documents are all or nothing
    (``kit.versioned``, records in ``<collection>.docs``). Embedded mode serves one process;
    a server (``url=``) any number.

    Args:
        path: a directory for embedded mode (``PersistentClient``).
        url: a Chroma server URL (``HttpClient``); exactly one of path/url.
        collection: the collection name (validated against Chroma's rules).
        ef_search: HNSW search breadth (Chroma's 100 gives recall@10 ~0.90 at 100k vectors).
        timeout: seconds to wait for a server's first answer (chromadb waits for ever).
        request_timeout: seconds for each later request (None: no deadline), past which
            it raises :class:`StoreTimeoutError`.

    Raises:
        ConfigurationError: both or neither of path/url, or an invalid collection name.
        MissingExtraError: ``chromadb`` is not installed.
        VectorStoreError: the server cannot be reached.
        StoreBusyError: embedded mode, another process has the folder open.
    """

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
        self._name = chroma.validate_collection_name(collection)
        require("chromadb", "chroma", "chromadb")  # before a folder is made
        self._where = os.fspath(path) if path is not None else redact(str(url))
        self._folder = folder = Path(path) if path is not None else None
        self._failures = partial(chroma.engine_errors, self._where, url, request_timeout, folder)
        hold = chroma.FolderHold(folder) if folder is not None else None
        self._lock: Any = hold.lock if hold is not None else threading.RLock()
        try:
            with self._writing():
                self._client, self._aclients = chroma.connect(
                    folder or str(url), timeout, request_timeout
                )
                self._gone = require("chromadb.errors", "chroma", "chromadb").NotFoundError
                hnsw = {"space": "cosine", "ef_search": ef_search, "ef_construction": 200}
                self._chunks = self._following(self._name, {"hnsw": hnsw})
                self._collection = cast("Collection", self._chunks)  # mypy checks its calls
                self._docs = self._following(f"{self._name}.docs", None)  # records, 1-d vectors
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

    def _following(self, name: str, configuration: Any) -> chroma.FollowingHandle:
        """A handle on ``name``; another process may re-create it: the dimension is asked again."""
        get = self._client.get_or_create_collection
        opened = partial(get, name, embedding_function=None, configuration=configuration)
        return chroma.FollowingHandle(opened, self._gone, lambda: setattr(self, "_dim", None))

    def _engine_dimension(self) -> int | None:
        with self._errors():
            got = chroma.read_again(lambda: self._collection.get(limit=1, include=["embeddings"]))
        embeddings = got.get("embeddings")
        return None if embeddings is None or len(embeddings) == 0 else len(embeddings[0])

    # ------------------------------------------------------------------ records
    def _record_metas(self, **which: Any) -> list[Any]:
        with self._errors():
            return self._docs.get(**which, include=["metadatas"])["metadatas"] or []

    def _records(self, doc_ids: Sequence[str]) -> dict[str, DocRecord]:
        found = map(_record, self._record_metas(ids=["d:" + d for d in doc_ids]))
        return {r.doc_id: r for r in found}

    def _pending_records(self) -> list[DocRecord]:
        return [_record(m) for m in self._record_metas(where={"pending": {"$ne": ""}})]

    def _put(self, record_id: str, metadata: dict[str, Any]) -> None:
        with self._errors():
            self._docs.upsert(ids=[record_id], embeddings=[[1.0]], metadatas=[metadata])

    def _put_record(self, record: DocRecord) -> None:
        self._put("d:" + record.doc_id, asdict(record))

    def _drop_records(self, doc_ids: Sequence[str]) -> None:
        with self._errors():
            self._docs.delete(ids=["d:" + d for d in doc_ids])

    def _recorded_embedder(self) -> EmbedderIdentity | None:
        metas = self._record_metas(ids=[_EMBEDDER])
        return EmbedderIdentity.from_json(str(metas[0]["embedder"])) if metas else None

    def _put_embedder(self, identity: EmbedderIdentity) -> None:
        self._put(_EMBEDDER, {"embedder": identity.to_json(), "pending": ""})

    # ------------------------------------------------------------------ chunks
    def _batches(self, n: int) -> Iterator[slice]:  # within Chroma's largest batch
        limit = int(self._client.get_max_batch_size())
        return (slice(start, start + limit) for start in range(0, n, limit))

    def _stored(self, where: Any) -> list[StoredChunk]:
        with self._errors():
            got = self._collection.get(where=where, include=["metadatas"])
        rows = zip(got["ids"], got["metadatas"] or [], strict=True)
        return [StoredChunk(i, str(m[ID_KEY]), str(m[VERSION_KEY]), str(m[DOC])) for i, m in rows]

    def _stored_chunks(self, doc_id: str) -> list[StoredChunk]:
        return self._stored({DOC: doc_id})

    def _copies(self, chunk_ids: Sequence[str]) -> list[StoredChunk]:
        found: dict[str, StoredChunk] = {}  # an id asked twice is found once
        for start in range(0, len(chunk_ids), 500):
            copies = self._stored({ID_KEY: {"$in": list(chunk_ids[start : start + 500])}})
            found.update((c.engine_id, c) for c in copies)
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
        if not batch.ids:
            return
        embedder = self._replacing[0] if self._replacing else self._recorded_embedder()
        hidden = self._replacing is not None
        stamp = {HIDDEN: hidden, EMBEDDER: embedder.to_json() if embedder else ""}
        pairs = list(zip(batch.chunks, versions, strict=True))
        metadatas: list[Any] = [
            {META: metadata_json(c), DOC: c.doc_id, ID_KEY: c.id, VERSION_KEY: v, **stamp}
            | dict(_field(key, value) for key, value in c.metadata.items())
            for c, v in pairs
        ]
        ids = [engine_id(c.id, v) for c, v in pairs]
        if self._folder is not None:  # a folder that ran out of room mid-write no longer opens
            per_chunk = 12 * int(batch.vectors.shape[1]) + 2048
            text = 8 * sum(len(c.text.encode()) for c in batch.chunks)
            check_room(self._folder, subfolder_bytes(self._folder) + len(ids) * per_chunk + text)
        with self._errors():
            for part in self._batches(len(ids)):
                self._collection.upsert(
                    ids=ids[part],
                    embeddings=batch.vectors[part],
                    documents=[c.text for c in batch.chunks[part]],
                    metadatas=metadatas[part],
                )
        self._dim = int(batch.vectors.shape[1])

    def _count(self, filter: MetadataFilter | None = None) -> int:
        if not filter:
            return len(self)
        with self._lock, self._errors():
            return len(self._collection.get(where=self._selector(filter), include=[])["ids"])

    # ------------------------------------------------------------------ reads
    def _selector(self, filter: MetadataFilter | None) -> Any:
        clauses: list[Any] = [{HIDDEN: {"$ne": True}}]
        clauses += [dict([_field(k, v)]) for k, v in (filter or {}).items()]
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}

    def _query_many(self, queries: Sequence[Matrix], n: int, selector: Any) -> list[list[Hit]]:
        """One ``query`` (an ``n`` above the collection's count gets what it holds)."""
        asked: Any = {"query_embeddings": np.stack(queries), "n_results": n, "where": selector}
        with self._errors():
            return hits_of(chroma.read_again(lambda: self._collection.query(**asked, include=HITS)))

    def _retrieve(self, query: StoreQuery) -> list[ScoredChunk]:
        """The port's (dense: one ``query``), here so that hybrid is refused, not fused."""
        return super()._retrieve(query)

    async def _aretrieve(self, query: StoreQuery) -> list[ScoredChunk]:
        if query.mode != "dense":
            return self._retrieve(query)  # refused before any request
        hits = await self.asearch(query.vector or [], query.k, query.filter)
        return [h for h in hits if h.score >= query.min_score]

    # ------------------------------------------------------------------ native async (server)
    async def _acall(self, call: Callable[[AsyncCollection], Awaitable[T]]) -> T:
        """An async request on the chunks, repeated once as a ``FollowingHandle`` does."""
        sides = cast("PerLoop[chroma.AsyncSide]", self._aclients)  # callers check _native_async

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
        asked: Any = {"query_embeddings": np.stack(queries), "n_results": n, "where": selector}
        found = await self._acall(
            lambda c: chroma.aread_again(lambda: c.query(**asked, include=HITS))
        )
        return hits_of(found)

    async def _acount(self, filter: MetadataFilter | None = None) -> int:
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
