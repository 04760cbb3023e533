"""The records collection of a Chroma store (``<collection>.docs``): each document's versions
and manifest, and the embedder, with a one-value vector each. (Collections written before
Chroma became dense-only also hold ``e:lengths`` records of BM25 length totals: never read.)

:class:`ChromaRecords` is the part of :class:`ChromaVectorStore` that reads and writes them,
sync and (with a server) async.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, TypeVar

from pywrapai_graph.adapters.vectorstores.chroma.handle import FollowingHandle
from pywrapai_graph.adapters.vectorstores.kit.versioned import DocRecord
from pywrapai_graph.domain.manifest import EmbedderIdentity
from pywrapai_graph.ports.identity_probe import report_identity

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.AsyncCollection import AsyncCollection

__all__ = ["ChromaRecords"]

_EMBEDDER = "e:embedder"
T = TypeVar("T")


def _record(meta: Any) -> DocRecord:
    return DocRecord(
        str(meta["doc_id"]), str(meta["version"]), str(meta["manifest"]), str(meta["pending"])
    )


def _seen_records(got: Any) -> dict[str, DocRecord]:
    """The document records of a ``get``; the embedder record's identity (None: there is
    none) is told to the caller's identity probe."""
    pairs = list(zip(got["ids"], got["metadatas"] or [], strict=True))
    embedder = [str(m["embedder"]) for i, m in pairs if i == _EMBEDDER]
    report_identity(EmbedderIdentity.from_json(embedder[0]) if embedder else None)
    return {r.doc_id: r for r in (_record(m) for i, m in pairs if i != _EMBEDDER)}


class ChromaRecords:
    """Document records and the embedder in ``<collection>.docs``; the store
    sets ``_client``, ``_name`` and ``_docs_handle``."""

    _client: ClientAPI
    _name: str
    _docs_handle: FollowingHandle

    if TYPE_CHECKING:  # the store's

        def _errors(self) -> AbstractContextManager[None]: ...

        async def _acall(
            self, call: Callable[[AsyncCollection], Awaitable[T]], docs: bool = False
        ) -> T: ...

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
        """:meth:`_records` of a search's hits, with the embedder record in the same request:
        the identity is told to the caller's probe (:mod:`...ports.identity_probe`)."""
        ids = [_EMBEDDER, *map(self._record_id, doc_ids)]
        with self._errors():
            return _seen_records(self._docs.get(ids=ids, include=["metadatas"]))

    async def _asearch_records(self, doc_ids: Sequence[str]) -> dict[str, DocRecord]:
        """:meth:`_search_records` on the async client."""
        ids = [_EMBEDDER, *map(self._record_id, doc_ids)]
        got = await self._acall(lambda c: c.get(ids=ids, include=["metadatas"]), docs=True)
        return _seen_records(got)
