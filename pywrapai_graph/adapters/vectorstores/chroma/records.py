"""The records collection of a Chroma store (``<collection>.docs``): each document's versions
and manifest, and the embedder, with a one-value vector each. (Collections written before
Chroma became dense-only also hold ``e:lengths`` records of BM25 length totals: never read.)

:class:`ChromaRecords` is the part of :class:`ChromaVectorStore` that reads and writes them,
and replaces a document: its new version is written hidden (a flag on each chunk that every
query's ``where`` excludes) and, once its record is committed, one ``update`` shows it and
hides the others (:meth:`ChromaRecords._show`), which are then deleted.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from pywrapai_graph.adapters.vectorstores.chroma.handle import FollowingHandle
from pywrapai_graph.adapters.vectorstores.chroma.points import EMBEDDER, HIDDEN, chunk_metadata
from pywrapai_graph.adapters.vectorstores.kit.local_files import (
    WriteLock,
    check_room,
    subfolder_bytes,
)
from pywrapai_graph.adapters.vectorstores.kit.vector_batches import PreparedBatch, prepare_batch
from pywrapai_graph.adapters.vectorstores.kit.version_records import stale
from pywrapai_graph.adapters.vectorstores.kit.versioned import (
    ID_KEY,
    VERSION_KEY,
    DocRecord,
    StoredChunk,
    VersionedDocuments,
    engine_id,
)
from pywrapai_graph.domain import Chunk
from pywrapai_graph.domain.manifest import DocumentManifest, EmbedderIdentity
from pywrapai_graph.ports.vector_store import check_embedder

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.AsyncCollection import AsyncCollection
    from chromadb.api.models.Collection import Collection

__all__ = ["ChromaRecords"]

_EMBEDDER = "e:embedder"
T = TypeVar("T")


def _record(meta: Any) -> DocRecord:
    return DocRecord(
        str(meta["doc_id"]), str(meta["version"]), str(meta["manifest"]), str(meta["pending"])
    )


class ChromaRecords(VersionedDocuments):
    """Document records and the embedder in ``<collection>.docs``, and document replaces;
    the store sets ``_client``, ``_name`` and ``_docs_handle``."""

    _client: ClientAPI
    _name: str
    _docs_handle: FollowingHandle
    _file_lock: WriteLock | None
    #: set by :meth:`_replace_document` (under the write lock) while its :meth:`_upsert`
    #: writes the new version: hidden, stamped with this identity
    _replacing: tuple[EmbedderIdentity | None] | None = None

    if TYPE_CHECKING:  # the store's

        def _errors(self) -> AbstractContextManager[None]: ...

        async def _acall(
            self, call: Callable[[AsyncCollection], Awaitable[T]], docs: bool = False
        ) -> T: ...

        @property
        def _collection(self) -> Collection: ...

    @property
    def _docs_name(self) -> str:
        return f"{self._name}.docs"

    def _open_docs(self) -> Any:
        """The collection of document records (manifests, versions) and the embedder."""
        return self._client.get_or_create_collection(self._docs_name, embedding_function=None)

    @property
    def _docs(self) -> Any:
        """The records collection (document versions, manifests, the embedder)."""
        return self._docs_handle

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

    def _put(self, record_id: str, metadata: dict[str, Any]) -> None:
        """Write one record (with the one-value vector every record of the collection has)."""
        with self._errors():
            self._docs.upsert(ids=[record_id], embeddings=[[1.0]], metadatas=[metadata])

    def _put_record(self, record: DocRecord) -> None:
        self._put(
            self._record_id(record.doc_id),
            {
                "doc_id": record.doc_id,
                "version": record.version,
                "manifest": record.manifest,
                "pending": record.pending,
            },
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
        self._put(_EMBEDDER, {"embedder": identity.to_json(), "pending": ""})

    def _search_records(self, doc_ids: Sequence[str]) -> dict[str, DocRecord]:
        """Unused by this store's reads: their ``where`` keeps the shown chunks only."""
        return self._records(doc_ids)

    def _replace_document(self, manifest: DocumentManifest, chunks: Sequence[Chunk]) -> int:
        """``versioned``'s replace, with the new version written hidden and shown (old ones
        hidden) by :meth:`_clean` once its record is committed."""
        batch = prepare_batch(chunks, self._known_dim())
        with self._writing():
            recorded = self._recorded_embedder()
            identity = check_embedder(recorded, manifest.embedder)
            old = self._records([manifest.doc_id]).get(manifest.doc_id)
            stored = self._stored_chunks(manifest.doc_id)
            version = f"{time.time_ns():x}-{uuid.uuid4().hex}"
            self._put_record(replace(old or DocRecord(manifest.doc_id), pending=version))
            if identity is not None and recorded is None:
                self._put_embedder(identity)
            self._replacing = (identity,)
            try:
                self._upsert(batch, [version] * len(batch.ids))
            finally:
                self._replacing = None
            self._check_still_pending(manifest.doc_id, version)
            committed = DocRecord(manifest.doc_id, version, manifest.to_json(), pending=version)
            self._put_record(committed)
            self._clean(committed)
            return sum(c.version == (old.version if old else "") for c in stored)

    def _show(self, stored: list[StoredChunk], version: str) -> None:
        """Show the chunks of the committed ``version`` and hide the others, in one
        ``update`` (a document of more chunks than Chroma's batch limit takes several)."""
        with self._errors():
            limit = int(self._client.get_max_batch_size())
            for start in range(0, len(stored), limit):
                part = stored[start : start + limit]
                self._collection.update(
                    ids=[c.engine_id for c in part],
                    metadatas=[{HIDDEN: c.version != version} for c in part],
                )

    def _clean(self, record: DocRecord) -> None:
        """Finish (or undo) an interrupted replace: a committed version is shown first."""
        stored = self._stored_chunks(record.doc_id)
        if record.pending == record.version:
            self._show(stored, record.version)
        gone = stale(record, stored)
        if gone:
            self._delete_engine_ids(gone)
        self._put_record(replace(record, pending=""))

    def _repair_one(self, record: DocRecord) -> bool:
        """``versioned``'s repair of one record, showing a committed version (from the
        listing taken before the claim, as its deletes) before the others go."""
        stored = self._stored_chunks(record.doc_id)
        if not self._put_record_if(replace(record, pending=""), record):
            return False
        if record.pending == record.version:
            self._show(stored, record.version)
        gone = stale(record, stored)
        if gone:
            self._delete_engine_ids(gone)
        return True

    def _upsert(self, batch: PreparedBatch, versions: Sequence[str]) -> None:
        """Write chunks stamped with the recorded embedder: shown at once (``add``), or
        hidden (the new version of :meth:`_replace_document`)."""
        if not batch.ids:
            return
        hidden = self._replacing is not None
        embedder = self._replacing[0] if self._replacing else self._recorded_embedder()
        stamp = embedder.to_json() if embedder is not None else ""
        metadatas: list[Any] = [
            {**chunk_metadata(c), ID_KEY: c.id, VERSION_KEY: v, HIDDEN: hidden, EMBEDDER: stamp}
            for c, v in zip(batch.chunks, versions, strict=True)
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
