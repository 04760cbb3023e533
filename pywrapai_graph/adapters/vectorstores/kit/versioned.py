"""All-or-nothing documents for engines without multi-batch transactions (Chroma, Qdrant, Milvus).

A document's record holds its *committed* version, manifest and *pending* version. A replace
sets pending = v (new), upserts the chunks hidden as ``<chunk id>@v``, commits version = v with
the manifest, shows v and hides the rest in one request (:meth:`_show`), deletes them and clears
pending. A crash leaves the old version or the new: the next open or replace, or :meth:`repair`
beside live writers (compare-and-set; a writer whose version it took refuses to commit), cleans.
"""

from __future__ import annotations

import time
import uuid
from abc import abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, replace
from typing import Any

from pywrapai_graph.adapters._per_loop import PerLoop
from pywrapai_graph.adapters.vectorstores.kit.vector_batches import (
    Matrix,
    PreparedBatch,
    prepare_batch,
    prepare_query,
)
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.domain.manifest import DocumentManifest, EmbedderIdentity, manifests_from_json
from pywrapai_graph.errors import VectorStoreError
from pywrapai_graph.ports import BaseVectorStore, MetadataFilter
from pywrapai_graph.ports.offload import offload
from pywrapai_graph.ports.vector_store import check_embedder

__all__ = [
    "ID_KEY",
    "VERSION_KEY",
    "DocRecord",
    "Hit",
    "StoredChunk",
    "VersionedDocuments",
    "engine_id",
]

#: metadata/payload keys on each chunk
VERSION_KEY = "pywrapai_version"
ID_KEY = "pywrapai_id"


def engine_id(chunk_id: str, version: str) -> str:
    """The id a chunk of ``version`` is stored under (its own id when unversioned)."""
    return f"{chunk_id}@{version}" if version else chunk_id


#: One engine hit: the chunk with its score, and the version it was written under.
Hit = tuple[ScoredChunk, str]


@dataclass(frozen=True, slots=True)
class DocRecord:
    """What the store knows of one document's versions."""

    doc_id: str
    version: str = ""
    manifest: str = ""
    pending: str = ""


#: Record ids of repair marks (``manifest`` = ``<ns, hex>:<version>``: when a repair first
#: saw it pending), records of their own: marking never writes a record being committed.
REPAIR_MARK = "\u2063pywrapai-repair-seen:"


@dataclass(frozen=True, slots=True)
class StoredChunk:
    """A chunk as the engine holds it: engine id, the caller's id, its version."""

    engine_id: str
    chunk_id: str
    version: str
    doc_id: str


def seen_ns(mark: DocRecord | None, pending: str) -> int | None:
    """When a repair first saw ``pending`` pending, if one did."""
    when, colon, version = mark.manifest.partition(":") if mark else ("", "", "")
    if not colon or version != pending:
        return None
    try:
        return int(when, 16)
    except ValueError:
        return None


#: document ids per record request of :meth:`VersionedDocuments.document_manifests`
_RECORDS_BATCH = 500


class VersionedDocuments(BaseVectorStore):
    """``replace_document``, manifests and the embedder record over an engine's primitives."""

    _dim: int | None
    _lock: AbstractContextManager[Any]
    #: while :meth:`_replace_document`'s :meth:`_upsert` writes the new version: its embedder
    _replacing: tuple[EmbedderIdentity | None] | None = None

    # ------------------------------------------------------------------ engine primitives
    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Hold this store's write locks (an engine may add a process lock), errors translated."""
        with self._lock, self._errors():
            yield

    def _errors(self) -> AbstractContextManager[None]:
        """Translate the engine's failures into ours (this default translates none)."""
        return nullcontext()

    @abstractmethod
    def _records(self, doc_ids: Sequence[str]) -> dict[str, DocRecord]:
        """The records of these documents (absent ones are left out)."""

    @abstractmethod
    def _pending_records(self) -> list[DocRecord]:
        """Records whose pending version is set."""

    @abstractmethod
    def _put_record(self, record: DocRecord) -> None: ...

    @abstractmethod
    def _drop_records(self, doc_ids: Sequence[str]) -> None: ...

    @abstractmethod
    def _recorded_embedder(self) -> EmbedderIdentity | None: ...

    @abstractmethod
    def _put_embedder(self, identity: EmbedderIdentity) -> None: ...

    @abstractmethod
    def _stored_chunks(self, doc_id: str) -> list[StoredChunk]:
        """Every chunk the engine holds for one document, of any version."""

    @abstractmethod
    def _copies(self, chunk_ids: Sequence[str]) -> list[StoredChunk]:
        """Every stored copy (any version) of these caller ids."""

    @abstractmethod
    def _upsert(self, batch: PreparedBatch, versions: Sequence[str]) -> None:
        """Write a validated batch, chunk i tagged with ``versions[i]``."""

    @abstractmethod
    def _delete_engine_ids(self, ids: Sequence[str]) -> None: ...

    @abstractmethod
    def _selector(self, filter: MetadataFilter | None) -> Any:
        """The engine's filter of the shown chunks a metadata filter keeps."""

    def _query(self, query: Matrix, n: int, selector: Any) -> list[Hit]:
        """The engine's ``n`` nearest shown hits."""
        return self._query_many([query], n, selector)[0]

    @abstractmethod
    def _query_many(self, queries: Sequence[Matrix], n: int, selector: Any) -> list[list[Hit]]:
        """:meth:`_query` for each query, in one engine request."""

    @abstractmethod
    def _engine_dimension(self) -> int | None:
        """The vector dimension as the engine holds it now (None: no vectors yet)."""

    @property
    def dimension(self) -> int | None:
        return self._dim

    def _known_dim(self) -> int | None:
        """The dimension, asked of the engine while unknown (another process may write first)."""
        if self._dim is None:
            self._dim = self._engine_dimension()
        return self._dim

    def _put_record_if(self, record: DocRecord, expected: DocRecord) -> bool:
        """Write ``record`` if the stored one is still ``expected`` (this default reads first)."""
        if self._records([record.doc_id]).get(record.doc_id) != expected:
            return False
        self._put_record(record)
        return True

    # ------------------------------------------------------------------ native async reads
    #: a server store's async clients, one per event loop (None: async reads are offloaded)
    _aclients: PerLoop[Any] | None = None

    @property
    def _native_async(self) -> bool:
        """The async reads below run on the engine's async client (else: the thread offload)."""
        return self._aclients is not None

    async def _aquery_many(
        self, queries: Sequence[Matrix], n: int, selector: Any
    ) -> list[list[Hit]]:
        return await offload(self._query_many, queries, n, selector)

    # ------------------------------------------------------------------ documents
    @property
    def atomic_documents(self) -> bool:
        return True

    def _replace_document(self, manifest: DocumentManifest, chunks: Sequence[Chunk]) -> int:
        batch = prepare_batch(chunks, self._known_dim())
        with self._writing():
            recorded = self._recorded_embedder()
            identity = check_embedder(recorded, manifest.embedder)
            old = self._records([manifest.doc_id]).get(manifest.doc_id, DocRecord(manifest.doc_id))
            before = sum(c.version == old.version for c in self._stored_chunks(manifest.doc_id))
            version = f"{time.time_ns():x}-{uuid.uuid4().hex}"
            self._put_record(replace(old, pending=version))
            self._replacing = (identity,)
            try:
                self._upsert(batch, [version] * len(batch.ids))
            finally:
                self._replacing = None
            if identity is not None and recorded is None:
                self._put_embedder(identity)
            self._check_still_pending(manifest.doc_id, version)
            committed = DocRecord(manifest.doc_id, version, manifest.to_json(), pending=version)
            self._put_record(committed)
            self._clean(committed)
            return before

    def _check_still_pending(self, doc_id: str, version: str) -> None:
        """Refuse to commit a version a repair or another writer took over; remove its chunks."""
        current = self._records([doc_id]).get(doc_id)
        if current is None or current.pending != version:
            mine = [c.engine_id for c in self._stored_chunks(doc_id) if c.version == version]
            if mine:
                self._delete_engine_ids(mine)
            raise VectorStoreError(
                f"document {doc_id!r} was not written: while this write was in progress, "
                "`store repair` (or another process writing the same document) removed its "
                "unfinished version; write the document again (nothing of it is visible)"
            )

    def _clean(self, record: DocRecord) -> None:
        """Finish (or undo) an interrupted replace of one document."""
        self._drop_stale(record, self._stored_chunks(record.doc_id))
        self._put_record(replace(record, pending=""))

    def _drop_stale(self, record: DocRecord, stored: list[StoredChunk]) -> None:
        """Show the committed version, then delete the others (or the uncommitted one)."""
        self._show(record, stored)
        committed = record.pending == record.version
        gone = [c.engine_id for c in stored if (c.version == record.pending) != committed]
        if gone:
            self._delete_engine_ids(gone)

    @abstractmethod
    def _show(self, record: DocRecord, stored: list[StoredChunk]) -> None:
        """Show a committed version and hide the others in one engine request (else nothing)."""

    def _recover(self) -> None:
        """Clean what crashed writers left (call with the store's write lock held)."""
        for record in self._pending_records():
            self._clean(record)

    def _repair(self, *, older_than_s: float = 600.0) -> int:
        """Finish committed clean-ups; drop uncommitted versions seen pending ``older_than_s``."""
        guard = int(older_than_s * 1e9)
        repaired = 0
        with self._writing():
            now = time.time_ns()
            pending = self._pending_records()
            marks = self._records([REPAIR_MARK + r.doc_id for r in pending]) if pending else {}
            for record in pending:
                mark = marks.get(REPAIR_MARK + record.doc_id)
                if self._due(record, mark, now, guard) and self._repair_one(record):
                    repaired += 1
                    if mark is not None:
                        self._drop_records([mark.doc_id])
        return repaired

    def _due(self, record: DocRecord, mark: DocRecord | None, now: int, guard: int) -> bool:
        """Whether to repair the record now; marks an uncommitted version first seen."""
        if record.pending == record.version:  # committed: only its clean-up is left
            return True
        seen = seen_ns(mark, record.pending)
        if seen is None:
            self._put_record(
                DocRecord(REPAIR_MARK + record.doc_id, manifest=f"{now:x}:{record.pending}")
            )
            seen = now
        return now - seen >= guard

    def _repair_one(self, record: DocRecord) -> bool:
        """Claim the record (compare-and-set), then delete the stale chunks listed before it
        (a replace begun after the claim writes chunks this listing cannot hold)."""
        stored = self._stored_chunks(record.doc_id)
        if not self._put_record_if(replace(record, pending=""), record):
            return False
        self._drop_stale(record, stored)
        return True

    def document_manifests(self, doc_ids: Sequence[str]) -> dict[str, DocumentManifest]:
        """The manifests of ``doc_ids`` that have one: one record request per 500 ids."""
        unique = list(dict.fromkeys(doc_ids))  # engines refuse repeated ids in one request
        rows: list[tuple[str, str]] = []
        for start in range(0, len(unique), _RECORDS_BATCH):
            records = self._records(unique[start : start + _RECORDS_BATCH])
            rows += [(r.doc_id, r.manifest) for r in records.values() if r.manifest]
        return dict(manifests_from_json(rows))

    def embedder_identity(self) -> EmbedderIdentity | None:
        return self._recorded_embedder()

    # ------------------------------------------------------------------ plain writes
    def _add(self, chunks: Sequence[Chunk]) -> None:
        """Chunks join their document's committed version, whose manifest is dropped."""
        batch = prepare_batch(chunks, self._known_dim())
        if batch.ids:
            with self._writing():
                records = self._records(sorted({c.doc_id for c in batch.chunks}))
                self._drop_manifests(records.values())
                versions = [records.get(c.doc_id, DocRecord("")).version for c in batch.chunks]
                kept = {engine_id(i, v) for i, v in zip(batch.ids, versions, strict=True)}
                others = [c.engine_id for c in self._copies(batch.ids) if c.engine_id not in kept]
                if others:
                    self._delete_engine_ids(others)
                self._upsert(batch, versions)

    def _delete_chunks(self, chunk_ids: Sequence[str]) -> int:
        """``delete``: every copy of these ids; their documents lose their manifests."""
        copies = self._copies(chunk_ids)
        if not copies:
            return 0
        self._drop_manifests(self._records(sorted({c.doc_id for c in copies})).values())
        self._delete_engine_ids([c.engine_id for c in copies])
        return len({c.chunk_id for c in copies})

    def _drop_manifests(self, records: Iterable[DocRecord]) -> None:
        for record in records:
            if record.manifest:
                self._put_record(replace(record, manifest=""))

    def _delete(self, ids: list[str]) -> int:
        if not ids:
            return 0
        with self._writing():
            return self._delete_chunks(ids)

    def _delete_by_doc(self, doc_id: str) -> int:
        """Every chunk of every version, and the record."""
        with self._writing():
            record = self._records([doc_id]).get(doc_id)
            stored = self._stored_chunks(doc_id)
            if stored:
                self._delete_engine_ids([c.engine_id for c in stored])
            if record is not None:
                self._drop_records([doc_id])
            committed = record.version if record else ""
            return sum(c.version == committed for c in stored)

    # ------------------------------------------------------------------ reads
    def _prepared(self, query_vectors: Sequence[Sequence[float]]) -> list[Matrix] | None:
        """The normalised queries, or None while the engine holds no vectors."""
        if self._known_dim() is None:
            return None
        return [prepare_query(q, self._dim) for q in query_vectors]

    def _search(
        self, query_vector: Sequence[float], k: int, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        with self._lock:
            queries = self._prepared([query_vector])
            hits = [] if queries is None else self._query(queries[0], k, self._selector(filter))
            return [h for h, _ in hits[:k]]

    def _search_many(
        self, query_vectors: Sequence[Sequence[float]], k: int, filter: MetadataFilter | None
    ) -> list[list[ScoredChunk]]:
        """One engine request for the batch."""
        with self._lock:
            queries = self._prepared(query_vectors)
            if queries is None:
                return [[] for _ in query_vectors]
            batches = self._query_many(queries, k, self._selector(filter))
            return [[h for h, _ in hits[:k]] for hits in batches]

    async def _asearch(
        self, query_vector: Sequence[float], k: int, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        if not self._native_async:
            return await super()._asearch(query_vector, k, filter)
        return (await self._asearch_many([query_vector], k, filter))[0]

    async def _asearch_many(
        self, query_vectors: Sequence[Sequence[float]], k: int, filter: MetadataFilter | None
    ) -> list[list[ScoredChunk]]:
        if not self._native_async:
            return await super()._asearch_many(query_vectors, k, filter)
        queries = self._prepared(query_vectors)
        if queries is None:
            return [[] for _ in query_vectors]
        batches = await self._aquery_many(queries, k, self._selector(filter))
        return [[h for h, _ in hits[:k]] for hits in batches]

    async def aclose(self) -> None:
        """Close this loop's async client (a server store), then the store as :meth:`close`."""
        if self._aclients is not None:
            await self._aclients.aclose()
        await super().aclose()
