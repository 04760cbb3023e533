"""The vector-store port: the reference's ``BaseVectorStore`` ABC, plus what real users need."""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, ClassVar, Self, cast

from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.domain.manifest import DocumentManifest, EmbedderIdentity
from pywrapai_graph.errors import UnsupportedOperationError
from pywrapai_graph.ports.call_clock import timed
from pywrapai_graph.ports.offload import offload
from pywrapai_graph.ports.store_inputs import (
    MAX_K,
    check_bm25,
    check_delete_ids,
    check_doc_id,
    check_embedder,
    check_k,
    check_older_than,
    check_query_text,
    check_query_vector,
    check_vectors,
    checked_chunks,
    checked_document,
    checked_filter,
    checked_query_vectors,
    lexical_refusal,
    paged,
    settled,
)
from pywrapai_graph.ports.store_query import StoreQuery, check_store_query
from pywrapai_graph.ports.sync_async import adrive, drive

__all__ = ["BaseVectorStore", "MetadataFilter", "check_embedder"]

#: Metadata equality filter: every key must be present with exactly this value.
MetadataFilter = Mapping[str, Any]

#: The public methods whose work a store supplies: each calls the primitive ``_<name>``.
TEMPLATE_METHODS = (
    *("add", "delete", "delete_by_doc", "count", "acount", "repair"),
    *("search", "search_many", "asearch", "asearch_many", "lexical_search"),
    *("replace_document", "replace_document_vectors"),
)


class BaseVectorStore(ABC):
    """Stores embedded chunks and finds the nearest ones to a query vector; every backend
    behaves the same (docs/writing-a-store.md); capability flags say what it promises.

    Each public method checks its inputs, then calls the store's *primitive* (``search``
    calls ``_search``); searches keep only hits equal to the filter, asking for more when a
    full page lost some. A store implements ``_add``, ``_search``, ``clear``, ``__len__``
    and any optional primitive (a reference-style ``add``/``search`` becomes its primitive);
    ``db_system`` names the engine on tracing spans.
    """

    db_system: str = "other"

    #: False for a reference-style ``search(query_vector, k)``: the base filters its hits.
    _search_filters: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A public method (``search``) defined without a primitive becomes it (``_search``)."""
        super().__init_subclass__(**kwargs)
        for public in TEMPLATE_METHODS:
            primitive, method = f"_{public}", cls.__dict__.get(public)
            if method is None or getattr(cls, primitive) is not getattr(BaseVectorStore, primitive):
                continue
            if public == "search" and "filter" not in inspect.signature(method).parameters:
                cls._search_filters = False
                method = _ignoring_filter(method)
            setattr(cls, primitive, method)
            delattr(cls, public)

    @property
    def persistent(self) -> bool:
        """Data survives closing and reopening the store."""
        return False

    @property
    def exact(self) -> bool:
        """Search is exhaustive, not approximate."""
        return True

    @property
    def atomic_documents(self) -> bool:
        """``replace_document`` is all-or-nothing and manifests are kept."""
        return False

    @property
    def lexical(self) -> bool:
        """``lexical_search`` is available."""
        return False

    @property
    def supports_delete(self) -> bool:
        """``delete``/``delete_by_doc`` work (a store that implements them says so itself)."""
        names = ("_delete", "_delete_by_doc")
        return all(getattr(type(self), n) is not getattr(BaseVectorStore, n) for n in names)

    @property
    def dimension(self) -> int | None:
        """The vector size the store holds, or None while it is empty and unconfigured."""
        return None

    # ------------------------------------------------------------------ writes
    def add(self, chunks: Sequence[Chunk]) -> None:
        """Insert or replace ``chunks`` (each with its ``embedding``).

        Raises:
            ValueError: a chunk lacks a usable embedding or breaks the metadata rules.
        """
        self._add(checked_chunks(chunks, "add"))

    def _add(self, chunks: Sequence[Chunk]) -> None:
        """:meth:`add`'s work: ``chunks`` is a checked list (vectors are the store's to check)."""
        raise NotImplementedError

    @abstractmethod
    def clear(self) -> None:
        """Remove every chunk."""

    @abstractmethod
    def __len__(self) -> int:
        """Number of stored chunks."""

    def delete(self, ids: Sequence[str]) -> int:
        """Remove chunks by id (unknown ids are ignored); returns how many were removed.

        Raises:
            UnsupportedOperationError: the backend cannot delete (``supports_delete``).
        """
        return self._delete(check_delete_ids(ids))

    def _delete(self, ids: list[str]) -> int:
        """:meth:`delete`'s work: distinct str ids, in order."""
        raise UnsupportedOperationError(
            f"{type(self).__name__} cannot delete chunks (supports_delete is False); "
            "use clear() and add() again, or a store that supports delete"
        )

    def delete_by_doc(self, doc_id: str) -> int:
        """Remove every chunk of one document; returns how many were removed.

        Raises:
            UnsupportedOperationError: the backend cannot delete (``supports_delete``).
        """
        check_doc_id(doc_id)
        return self._delete_by_doc(doc_id)

    def _delete_by_doc(self, doc_id: str) -> int:
        """:meth:`delete_by_doc`'s work."""
        raise UnsupportedOperationError(
            f"{type(self).__name__} cannot delete documents (supports_delete is False); "
            "use clear() and add() again, or a store that supports delete"
        )

    # ------------------------------------------------------------------ searches
    def search(
        self, query_vector: Sequence[float], k: int = 4, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        """The ``k`` chunks most similar to ``query_vector``, best first, among those whose
        metadata *equals* ``filter`` (``True`` is not ``1``).

        Raises:
            ValueError: the query has the wrong dimension, NaN/inf or zero norm, or k < 1.
        """
        check_query_vector(query_vector, "search")
        k, filter, asked = self._first_page(k, filter)
        pages = paged(k, filter, asked)
        return drive(pages, lambda n: self._search(query_vector, n, filter))

    def _search(
        self, query_vector: Sequence[float], k: int, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        """:meth:`search`'s work: ``k`` is a plain int, the filter checked (or None)."""
        raise NotImplementedError

    if not TYPE_CHECKING:  # required; hidden from mypy (a store's public add/search may be them)
        _add = abstractmethod(_add)
        _search = abstractmethod(_search)

    def _first_page(
        self, k: int, filter: MetadataFilter | None
    ) -> tuple[int, MetadataFilter | None, int]:
        """Checked ``k`` and filter, and the first page (``4 * k``: the primitive cannot filter)."""
        k, filter = check_k(k), checked_filter(filter)
        return k, filter, k if self._search_filters or not filter else min(4 * k, MAX_K)

    def search_many(
        self,
        query_vectors: Sequence[Sequence[float]],
        k: int = 4,
        filter: MetadataFilter | None = None,
    ) -> list[list[ScoredChunk]]:
        """:meth:`search` for each query vector, as one list per query, in order.

        Raises:
            ValueError: as for :meth:`search`, for any of the queries.
        """
        vectors = checked_query_vectors(query_vectors)
        k, filter, asked = self._first_page(k, filter)
        batch = self._search_many(vectors, asked, filter) if vectors else []
        pages = [settled(hits, k, filter, asked) for hits in batch]
        return [  # a query whose page lost hits to the filter is searched again alone
            self.search(v, k, filter) if page is None else page
            for v, page in zip(vectors, pages, strict=True)
        ]

    def _search_many(
        self, query_vectors: Sequence[Sequence[float]], k: int, filter: MetadataFilter | None
    ) -> list[list[ScoredChunk]]:
        """:meth:`search_many`'s work; this default searches each query in turn."""
        return [self._search(q, k, filter) for q in query_vectors]

    def lexical_search(
        self,
        query: str,
        k: int = 4,
        filter: MetadataFilter | None = None,
        *,
        k1: float = 1.2,
        b: float = 0.75,
    ) -> list[ScoredChunk]:
        """The ``k`` chunks sharing a term with ``query``, best BM25 score first.

        Raises:
            UnsupportedOperationError: ``lexical`` is False.
            ValueError: k < 1, k1 < 0 or b outside [0, 1].
        """
        if not self.lexical:
            raise lexical_refusal(type(self).__name__, "lexical_search")
        check_query_text(query, "lexical_search")
        check_bm25(k1, b)
        k, filter = check_k(k), checked_filter(filter)
        pages = paged(k, filter, k)
        return drive(pages, lambda n: self._lexical_search(query, n, filter, k1=k1, b=b))

    def _lexical_search(
        self, query: str, k: int, filter: MetadataFilter | None, *, k1: float, b: float
    ) -> list[ScoredChunk]:
        """:meth:`lexical_search`'s work; by default :meth:`_retrieve` (``native_retrieval``)."""
        if not self.native_retrieval:
            raise NotImplementedError
        return self._retrieve(StoreQuery("lexical", k, text=query, filter=filter, k1=k1, b=b))

    def count(self, filter: MetadataFilter | None = None) -> int:
        """How many chunks match ``filter`` (all of them without one).

        Raises:
            UnsupportedOperationError: a filter was given and the backend cannot count by one.
        """
        return self._count(checked_filter(filter))

    def _count(self, filter: MetadataFilter | None) -> int:
        """:meth:`count`'s work; this default answers without a filter only."""
        if not filter:
            return len(self)
        raise UnsupportedOperationError(
            f"{type(self).__name__} cannot count by metadata filter; call count() without one"
        )

    # ------------------------------------------------------------------ documents
    def replace_document(self, manifest: DocumentManifest, chunks: Sequence[Chunk]) -> int:
        """Make ``chunks`` (all of ``manifest.doc_id``, embedded) the whole document; returns
        how many chunks it had before.

        Raises:
            ValueError: a chunk belongs to another document or lacks a usable embedding.
            EmbedderMismatchError: the store was filled by another embedder.
        """
        return self._replace_document(manifest, checked_document(manifest, chunks))

    def _replace_document(self, manifest: DocumentManifest, chunks: Sequence[Chunk]) -> int:
        """:meth:`replace_document`'s work; by default delete, then add: not atomic, no manifest."""
        removed = self._delete_by_doc(manifest.doc_id) if self.supports_delete else 0
        self._add(chunks)
        return removed

    def replace_document_vectors(
        self, manifest: DocumentManifest, chunks: Sequence[Chunk], vectors: memoryview
    ) -> int:
        """:meth:`replace_document` with the embeddings as a 2-D float32 ``memoryview``, row
        ``i`` for ``chunks[i]`` (their ``embedding`` is ignored): ingest's bulk path.

        Raises:
            ValueError: not one float32 row per chunk, or as for :meth:`replace_document`.
        """
        chunks = checked_document(manifest, chunks)
        check_vectors(chunks, vectors)
        return self._replace_document_vectors(manifest, chunks, vectors)

    def _replace_document_vectors(
        self, manifest: DocumentManifest, chunks: Sequence[Chunk], vectors: memoryview
    ) -> int:
        """:meth:`replace_document_vectors`' work; this default sets the embeddings."""
        rows = cast(list[list[float]], vectors.tolist())
        for chunk, row in zip(chunks, rows, strict=True):
            chunk.embedding = row
        return self._replace_document(manifest, chunks)

    def bulk_load(self) -> AbstractContextManager[None]:
        """A context for writing many chunks at once (ingest's; pgvector loads by COPY in it)."""
        return nullcontext()

    def document_manifest(self, doc_id: str) -> DocumentManifest | None:
        """The manifest of the complete stored version of ``doc_id``, or None (also for a
        version a crash left incomplete, so the next ingest writes it again)."""
        return self.document_manifests([doc_id]).get(doc_id)

    def document_manifests(self, doc_ids: Sequence[str]) -> dict[str, DocumentManifest]:
        """:meth:`document_manifest` of many documents: those that have one, by id. A store
        keeps manifests by overriding either method."""
        if not keeps_manifests(self):
            return {}
        found = {doc_id: self.document_manifest(doc_id) for doc_id in doc_ids}
        return {doc_id: m for doc_id, m in found.items() if m is not None}

    def embedder_identity(self) -> EmbedderIdentity | None:
        """The embedder recorded by the first ``replace_document``, or None."""
        return None

    def repair(self, *, older_than_s: float = 600.0) -> int:
        """Remove what interrupted writes left (versions younger than ``older_than_s``
        seconds are left to their writer); returns how many documents it repaired.

        Raises:
            InvalidArgumentError: ``older_than_s`` is not a finite number >= 0.
        """
        return self._repair(older_than_s=check_older_than(older_than_s))

    def _repair(self, *, older_than_s: float) -> int:
        """:meth:`repair`'s work; this default has nothing to repair."""
        return 0

    # ------------------------------------------------------------------ one-request retrieval
    @property
    def native_retrieval(self) -> bool:
        """The store answers a whole :class:`StoreQuery` itself (it has a ``_retrieve``)."""
        return type(self)._retrieve is not BaseVectorStore._retrieve

    def retrieve(self, query: StoreQuery) -> list[ScoredChunk]:
        """Up to ``query.k`` hits, best first (cosines, BM25 or fused scores, by mode).

        Raises:
            UnsupportedOperationError: ``hybrid`` without ``native_retrieval`` (the retriever
                fuses its two sides), or a mode the store has no index for.
            ValueError: the query's vector or text is malformed.
        """
        check_store_query(query, "retrieve", type(self).__name__, self.native_retrieval)
        return self._retrieve(query)

    def _retrieve(self, query: StoreQuery) -> list[ScoredChunk]:
        """:meth:`retrieve`'s work; this default asks ``search`` or ``lexical_search``."""
        if query.mode == "dense":
            hits = self.search(query.vector or [], query.k, query.filter)
            return [h for h in hits if h.score >= query.min_score]
        return self.lexical_search(query.text or "", query.k, query.filter, k1=query.k1, b=query.b)

    async def aretrieve(self, query: StoreQuery) -> list[ScoredChunk]:
        """Async :meth:`retrieve` (by default ``asearch``, or the bounded offload pool)."""
        check_store_query(query, "aretrieve", type(self).__name__, self.native_retrieval)
        return await self._aretrieve(query)

    async def _aretrieve(self, query: StoreQuery) -> list[ScoredChunk]:
        if query.mode == "dense" and not self.native_retrieval:
            hits = await self.asearch(query.vector or [], query.k, query.filter)
            return [h for h in hits if h.score >= query.min_score]
        return await offload(self._retrieve, query)

    def close(self) -> None:  # noqa: B027 - an optional hook, not abstract
        """Release connections and file locks (no-op for stores that hold none)."""

    # ------------------------------------------------------------------ async twins
    async def aadd(self, chunks: Sequence[Chunk]) -> None:
        """Async :meth:`add`."""
        await offload(self.add, chunks)

    async def asearch(
        self, query_vector: Sequence[float], k: int = 4, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        """Async :meth:`search`."""
        check_query_vector(query_vector, "asearch")
        k, filter, asked = self._first_page(k, filter)
        pages = paged(k, filter, asked)
        return await adrive(pages, lambda n: self._asearch(query_vector, n, filter))

    async def _asearch(
        self, query_vector: Sequence[float], k: int, filter: MetadataFilter | None
    ) -> list[ScoredChunk]:
        """:meth:`asearch`'s work; this default runs :meth:`_search` in the thread pool."""
        return await offload(self._search, query_vector, k, filter)

    async def asearch_many(
        self,
        query_vectors: Sequence[Sequence[float]],
        k: int = 4,
        filter: MetadataFilter | None = None,
    ) -> list[list[ScoredChunk]]:
        """Async :meth:`search_many`."""
        vectors = checked_query_vectors(query_vectors)
        k, filter, asked = self._first_page(k, filter)
        batch = await self._asearch_many(vectors, asked, filter) if vectors else []
        pages = [settled(hits, k, filter, asked) for hits in batch]
        return [
            await self.asearch(v, k, filter) if page is None else page
            for v, page in zip(vectors, pages, strict=True)
        ]

    async def _asearch_many(
        self, query_vectors: Sequence[Sequence[float]], k: int, filter: MetadataFilter | None
    ) -> list[list[ScoredChunk]]:
        """:meth:`asearch_many`'s work; this default runs :meth:`_search_many` in the pool."""
        return await offload(self._search_many, query_vectors, k, filter)

    async def adelete(self, ids: Sequence[str]) -> int:
        """Async :meth:`delete`."""
        return await offload(self.delete, ids)

    async def adelete_by_doc(self, doc_id: str) -> int:
        """Async :meth:`delete_by_doc`."""
        return await offload(self.delete_by_doc, doc_id)

    async def areplace_document(self, manifest: DocumentManifest, chunks: Sequence[Chunk]) -> int:
        """Async :meth:`replace_document`."""
        return await offload(self.replace_document, manifest, chunks)

    async def aclear(self) -> None:
        """Async :meth:`clear`."""
        await offload(self.clear)

    async def acount(self, filter: MetadataFilter | None = None) -> int:
        """Async :meth:`count` (``len(store)`` without a filter)."""
        return await self._acount(checked_filter(filter))

    async def _acount(self, filter: MetadataFilter | None) -> int:
        """:meth:`acount`'s work; this default runs :meth:`_count` in the thread pool."""
        return await offload(self._count, filter)

    async def aclose(self) -> None:
        """Async :meth:`close` (also releases native async clients, if any)."""
        await offload(self.close)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _ignoring_filter(search: Any) -> Any:
    """A reference-style ``search(query_vector, k)`` as a primitive ignoring the filter."""
    return lambda self, query_vector, k, filter=None: search(self, query_vector, k)


# Each public call but ``repair`` notes when it was made: its deadline starts (call_clock).
for _name in (
    *(name for name in TEMPLATE_METHODS if name != "repair"),
    *("aadd", "adelete", "adelete_by_doc", "areplace_document", "aclear"),
):
    setattr(BaseVectorStore, _name, timed(getattr(BaseVectorStore, _name)))


def keeps_manifests(store: BaseVectorStore) -> bool:
    """Whether ``store`` overrides :meth:`~BaseVectorStore.document_manifest` or its batch."""
    names = ("document_manifest", "document_manifests")
    return any(getattr(type(store), n) is not getattr(BaseVectorStore, n) for n in names)
