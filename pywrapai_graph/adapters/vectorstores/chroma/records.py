"""The records collection of a Chroma store (``<collection>.docs``): each document's versions
and manifest, and the embedder, with a one-value vector each. (Collections written before
Chroma became dense-only also hold ``e:lengths`` records of BM25 length totals: never read.)

:class:`ChromaRecords` is the part of :class:`ChromaVectorStore` that reads and writes them.
A replace (``kit.versioned``'s) writes its new version hidden (a flag on each chunk that every
query's ``where`` excludes) and, once its record is committed, one ``update`` shows it and
hides the others (:meth:`ChromaRecords._show`), which are then deleted.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, TypeVar

from pywrapai_graph.adapters.vectorstores.chroma.handle import FollowingHandle
from pywrapai_graph.adapters.vectorstores.chroma.points import EMBEDDER, HIDDEN, chunk_metadata
from pywrapai_graph.adapters.vectorstores.kit.local_files import (
    WriteLock,
    check_room,
    subfolder_bytes,
)
from pywrapai_graph.adapters.vectorstores.kit.vector_batches import PreparedBatch
from pywrapai_graph.adapters.vectorstores.kit.versioned import (
    ID_KEY,
    VERSION_KEY,
    DocRecord,
    StoredChunk,
    VersionedDocuments,
    engine_id,
)
from pywrapai_graph.domain.manifest import EmbedderIdentity

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
    _hides = True

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

    def _show(self, record: DocRecord, stored: list[StoredChunk]) -> None:
        """Show the chunks of a committed version and hide the others, in one ``update``
        (a document of more chunks than Chroma's batch limit takes several)."""
        if record.pending != record.version:
            return
        with self._errors():
            limit = int(self._client.get_max_batch_size())
            for start in range(0, len(stored), limit):
                part = stored[start : start + limit]
                self._collection.update(
                    ids=[c.engine_id for c in part],
                    metadatas=[{HIDDEN: c.version != record.version} for c in part],
                )

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
