"""The vector-store port: the reference's ``BaseVectorStore`` ABC, plus what real users need."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Self, cast

from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.domain.manifest import DocumentManifest, EmbedderIdentity
from pywrapai_graph.errors import (
    ArgumentTypeError,
    EmbedderMismatchError,
    InvalidArgumentError,
    UnsupportedOperationError,
)
from pywrapai_graph.ports.checked_methods import guard_methods, score_ids
from pywrapai_graph.ports.offload import offload
from pywrapai_graph.ports.store_inputs import check_delete_ids, check_filter, check_older_than

__all__ = [
    "BaseVectorStore",
    "MetadataFilter",
    "check_document",
    "check_embedder",
    "check_ids",
    "check_vectors",
]

#: Metadata equality filter: every key must be present with exactly this value.
MetadataFilter = Mapping[str, Any]


class BaseVectorStore(ABC):
    """Stores embedded chunks and finds the nearest ones to a query vector.

    Every backend behaves the same:

    * ``add`` upserts by chunk id (adding an id again replaces it) and is all-or-nothing: a
      batch with any bad vector (missing, NaN/inf, zero norm, wrong dimension) raises
      ``ValueError`` naming the chunk and the problem, and the store is left as it was.
    * ``search`` returns at most ``k`` hits, highest cosine similarity first, whatever the
      engine's native measure; an empty store gives ``[]``. Returned chunks carry no
      embedding (``chunk.embedding is None``).
    * ``filter`` keeps chunks whose metadata has every given key with an equal value.

    * ``delete`` takes a sequence of ids; a bare ``str`` is refused (it is not ``list(s)``).
    * ``replace_document`` makes a list of chunks the whole of one document. Built-in stores
      do it atomically (``atomic_documents``): a reader, or a process that opens the store
      after a crash, sees the old version or the new one, never a mix; they keep a
      :class:`DocumentManifest` per document (written last) and the
      :class:`EmbedderIdentity` of the first write, and refuse a different embedder.
    * ``search_many`` searches a batch of queries (one list of hits per query), equal to
      ``search`` of each.

    Async twins (``aadd``, ``asearch``, ``asearch_many``, ``adelete``, ``adelete_by_doc``,
    ``areplace_document``, ``aclear``,
    ``acount``, ``aclose``) behave exactly like their sync methods. By default they run the
    sync method in a bounded thread pool, so a store written with sync methods only has a
    correct async side that never blocks the event loop; a backend with a native async
    client overrides them.

    Capability flags (properties, as some depend on the mode a store was opened in) tell
    the contract suite what a backend promises: ``persistent`` (data survives closing and
    reopening), ``exact`` (exhaustive, not approximate, search), ``atomic_documents`` and
    ``supports_delete`` and ``lexical`` (``lexical_search`` ranks chunks by BM25 over their
    text; every built-in store does, with the same analyzer: the engine computes it where
    there is one, so rankings may differ in ties and length statistics, not in quality).

    Only ``add``, ``search``, ``clear`` and ``__len__`` are required (the reference's own
    custom-store example defines just those). ``delete``/``delete_by_doc`` are optional: a
    store without them raises :class:`UnsupportedOperationError` there, reports
    ``supports_delete = False``, and ``replace_document`` then only upserts.
    ``dimension`` and ``count(filter)`` have defaults built on the required methods.

    The base class checks the inputs of every public method a subclass defines before that
    method runs (:mod:`pywrapai_graph.ports.checked_methods`): chunks (valid Unicode,
    metadata values JSON scalars or flat lists of them), ``k`` (any integral number of at
    least 1, clamped), filters (the same values), delete's ids (a list of str, never a bare
    str); and it drops from ``search``/``lexical_search`` results any hit whose metadata is
    not *equal* to the filter (``True`` never equals ``1``), asking for more when it had
    to. A store written by a user follows the same rules as the built-in ones for free.

    ``db_system`` names the engine on tracing spans (``db.system.name``).
    """

    db_system: str = "other"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        guard_methods(cls, BaseVectorStore)

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

    def lexical_search(
        self,
        query: str,
        k: int = 4,
        filter: MetadataFilter | None = None,
        *,
        k1: float = 1.2,
        b: float = 0.75,
    ) -> list[ScoredChunk]:
        """The ``k`` chunks whose text best matches ``query`` by BM25, best first.

        Scores are BM25 scores (positive, unbounded), not cosine similarities; only chunks
        sharing at least one analysed term with the query are returned.

        Raises:
            UnsupportedOperationError: the store has no lexical index (``lexical`` is False).
            ValueError: k < 1, k1 < 0 or b outside [0, 1].
        """
        raise UnsupportedOperationError(
            f"{type(self).__name__} has no lexical search; use a built-in store or "
            "VectorRetriever(mode='dense')"
        )

    @abstractmethod
    def add(self, chunks: Sequence[Chunk]) -> None:
        """Insert or replace ``chunks`` (each must have ``embedding`` set).

        Raises:
            ValueError: any chunk lacks a usable embedding; nothing is written.
        """

    @abstractmethod
    def search(
        self, query_vector: Sequence[float], k: int = 4, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        """The ``k`` chunks most similar to ``query_vector``, best first.

        Raises:
            ValueError: the query has the wrong dimension, NaN/inf or zero norm, or k < 1.
        """

    def search_many(
        self,
        query_vectors: Sequence[Sequence[float]],
        k: int = 4,
        filter: MetadataFilter | None = None,
    ) -> list[list[ScoredChunk]]:
        """:meth:`search` for each query vector, as one list per query, in order.

        Equal to ``[self.search(q, k, filter) for q in query_vectors]`` (this default does
        exactly that); stores override it with one engine call for the whole batch (a
        matrix product on the exact stores, the engine's batch API on the server stores).

        Raises:
            ValueError: as for :meth:`search`, for any of the queries.
        """
        return [self.search(q, k, filter) for q in query_vectors]

    @property
    def supports_delete(self) -> bool:
        """``delete``/``delete_by_doc`` work (a subclass that defines them says so itself)."""
        cls = type(self)
        return (
            cls.delete is not BaseVectorStore.delete
            and cls.delete_by_doc is not BaseVectorStore.delete_by_doc
        )

    def delete(self, ids: Sequence[str]) -> int:
        """Remove chunks by id (unknown ids are ignored); returns how many were removed.

        Raises:
            UnsupportedOperationError: the backend cannot delete (``supports_delete``).
        """
        raise UnsupportedOperationError(
            f"{type(self).__name__} cannot delete chunks (supports_delete is False); "
            "use clear() and add() again, or a store that supports delete"
        )

    def delete_by_doc(self, doc_id: str) -> int:
        """Remove every chunk of one document; returns how many were removed.

        Raises:
            UnsupportedOperationError: the backend cannot delete (``supports_delete``).
        """
        raise UnsupportedOperationError(
            f"{type(self).__name__} cannot delete documents (supports_delete is False); "
            "use clear() and add() again, or a store that supports delete"
        )

    @abstractmethod
    def clear(self) -> None:
        """Remove every chunk."""

    @abstractmethod
    def __len__(self) -> int:
        """Number of stored chunks."""

    @property
    def dimension(self) -> int | None:
        """The vector size the store holds, or None while it is empty and unconfigured."""
        return None

    def count(self, filter: MetadataFilter | None = None) -> int:
        """How many chunks match ``filter`` (all of them without one).

        This default answers without a filter only; backends that filter natively override
        it.

        Raises:
            UnsupportedOperationError: a filter was given and the backend cannot count by one.
        """
        check_filter(filter)
        if not filter:
            return len(self)
        raise UnsupportedOperationError(
            f"{type(self).__name__} cannot count by metadata filter; call count() without one"
        )

    # ------------------------------------------------------------------ documents
    def replace_document(self, manifest: DocumentManifest, chunks: Sequence[Chunk]) -> int:
        """Make ``chunks`` (all of ``manifest.doc_id``, embedded) the whole document.

        This default (for stores written before manifests existed) deletes the document,
        then adds the chunks: not atomic, and it keeps no manifest. Built-in stores override
        it with an all-or-nothing write that also records the manifest and the embedder.

        Returns:
            How many chunks the document had before.

        Raises:
            ValueError: a chunk belongs to another document or lacks a usable embedding.
            EmbedderMismatchError: the store was filled by another embedder.
        """
        check_document(manifest, chunks)
        if not self.supports_delete:  # upsert by chunk id is all such a store can do
            self.add(chunks)
            return 0
        removed = self.delete_by_doc(manifest.doc_id)
        self.add(chunks)
        return removed

    def replace_document_vectors(
        self, manifest: DocumentManifest, chunks: Sequence[Chunk], vectors: memoryview
    ) -> int:
        """:meth:`replace_document` with the embeddings given as one float32 matrix.

        ``vectors`` is a 2-D float32 ``memoryview`` (row-major), row ``i`` the embedding of
        ``chunks[i]``; the chunks' own ``embedding`` is ignored. Ingest calls this so vectors
        travel as arrays: built-in stores override it and never build a Python float per
        value. This default sets each ``chunk.embedding`` to a list and calls
        :meth:`replace_document`, so any store accepts it.

        Raises:
            ValueError: ``vectors`` does not have one row per chunk, or as for
                :meth:`replace_document`.
        """
        check_vectors(chunks, vectors)
        rows = cast(list[list[float]], vectors.tolist())
        for chunk, row in zip(chunks, rows, strict=True):
            chunk.embedding = row
        return self.replace_document(manifest, chunks)

    def bulk_load(self) -> AbstractContextManager[None]:
        """A context for writing many chunks at once (ingest runs inside one).

        Stores that load faster that way override it (pgvector: binary COPY for every
        write, and the HNSW index built once after loading an empty table). This default
        does nothing.
        """
        return nullcontext()

    def document_manifest(self, doc_id: str) -> DocumentManifest | None:
        """The manifest of the complete stored version of ``doc_id``, or None.

        An indexed lookup (never a vector search). None also for a version a crash left
        incomplete, so the next ingest writes it again.
        """
        return None

    def document_manifests(self, doc_ids: Sequence[str]) -> dict[str, DocumentManifest]:
        """:meth:`document_manifest` of many documents: those that have one, by id.

        Ingest asks for a batch of documents at once; stores override this with one
        query (this default asks for each id in turn).
        """
        found: dict[str, DocumentManifest] = {}
        for doc_id in doc_ids:
            manifest = self.document_manifest(doc_id)
            if manifest is not None:
                found[doc_id] = manifest
        return found

    def embedder_identity(self) -> EmbedderIdentity | None:
        """The embedder recorded by the first ``replace_document``, or None."""
        return None

    def repair(self, *, older_than_s: float = 600.0) -> int:
        """Remove what interrupted writes left behind; returns how many documents it repaired.

        Stores whose writes are transactions, or that clean up when they open, have nothing
        to do here (this default). Chroma and Qdrant servers keep the chunks of a version
        whose writer died mid-replace (never visible) until the document's next replace or
        this call; versions younger than ``older_than_s`` seconds are left to their writer.

        Raises:
            InvalidArgumentError: ``older_than_s`` is not a finite number >= 0.
        """
        check_older_than(older_than_s)
        return 0

    def close(self) -> None:  # noqa: B027 - optional hook, most stores hold nothing
        """Release connections and file locks (no-op for stores that hold none)."""

    # ------------------------------------------------------------------ re-scoring
    # Hybrid retrieval gives every candidate of either side both of its scores. Built-in
    # stores answer for exactly the ids asked; these defaults (for stores written before)
    # rank the whole store once and keep the ids asked.
    def similarities(self, query_vector: Sequence[float], ids: Sequence[str]) -> dict[str, float]:
        """The cosine similarity of ``query_vector`` to each stored chunk of ``ids``.

        Ids not stored are left out.

        Raises:
            ValueError: as for :meth:`search`; ``ids`` not a list of str.
        """
        wanted = set(score_ids(ids, "similarities"))
        if not wanted or len(self) == 0:
            return {}
        hits = self.search(query_vector, k=len(self))
        return {h.chunk.id: h.score for h in hits if h.chunk.id in wanted}

    def lexical_scores(
        self, query: str, ids: Sequence[str], *, k1: float = 1.2, b: float = 0.75
    ) -> dict[str, float]:
        """The BM25 score of each chunk of ``ids`` sharing a term with ``query``, as
        :meth:`lexical_search` scores it (the same statistics over the whole store).

        Chunks sharing no term (score 0) and ids not stored are left out.

        Raises:
            UnsupportedOperationError: the store has no lexical index (``lexical`` is False).
            ValueError: as for :meth:`lexical_search`; ``ids`` not a list of str.
        """
        wanted = set(score_ids(ids, "lexical_scores"))
        if not wanted or len(self) == 0:
            self.lexical_search(query, 1, k1=k1, b=b)  # refuses as lexical_search does
            return {}
        hits = self.lexical_search(query, len(self), k1=k1, b=b)
        return {h.chunk.id: h.score for h in hits if h.chunk.id in wanted}

    async def asimilarities(
        self, query_vector: Sequence[float], ids: Sequence[str]
    ) -> dict[str, float]:
        """Async :meth:`similarities`."""
        return await offload(self.similarities, query_vector, ids)

    # ------------------------------------------------------------------ async twins
    async def aadd(self, chunks: Sequence[Chunk]) -> None:
        """Async :meth:`add`."""
        await offload(self.add, chunks)

    async def asearch(
        self, query_vector: Sequence[float], k: int = 4, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        """Async :meth:`search`."""
        return await offload(self.search, query_vector, k, filter)

    async def asearch_many(
        self,
        query_vectors: Sequence[Sequence[float]],
        k: int = 4,
        filter: MetadataFilter | None = None,
    ) -> list[list[ScoredChunk]]:
        """Async :meth:`search_many`."""
        return await offload(self.search_many, query_vectors, k, filter)

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
        return await offload(self.count, filter)

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


def check_document(manifest: DocumentManifest, chunks: Sequence[Chunk]) -> None:
    """Raises ValueError unless every chunk belongs to the manifest's document."""
    if isinstance(chunks, Chunk):
        raise ArgumentTypeError("replace_document() takes a list of chunks, not a single Chunk")
    for c in chunks:
        if not isinstance(c, Chunk):
            raise ArgumentTypeError(f"expected Chunk objects, got {type(c).__name__}")
        if c.doc_id != manifest.doc_id:
            raise InvalidArgumentError(
                f"chunk {c.id!r} belongs to document {c.doc_id!r}, not {manifest.doc_id!r}"
            )
    if len({c.id for c in chunks}) != manifest.chunk_count:
        raise InvalidArgumentError(
            f"document {manifest.doc_id!r}: the manifest counts {manifest.chunk_count} chunks, "
            f"{len({c.id for c in chunks})} distinct ones were given"
        )


def check_vectors(chunks: Sequence[Chunk], vectors: memoryview) -> None:
    """Raises ValueError unless ``vectors`` is a float32 matrix with one row per chunk."""
    given: object = vectors  # callers outside mypy may pass an array
    if not isinstance(given, memoryview) or given.ndim != 2 or given.format != "f":
        raise InvalidArgumentError("vectors must be a 2-D float32 memoryview, one row per chunk")
    if vectors.shape is None or vectors.shape[0] != len(chunks):
        rows = vectors.shape[0] if vectors.shape else 0
        raise InvalidArgumentError(f"{rows} vectors were given for {len(chunks)} chunks")


#: The distinct ids, in order; a bare ``str`` or a non-str id is refused.
check_ids = check_delete_ids


def check_embedder(
    recorded: EmbedderIdentity | None, given: EmbedderIdentity
) -> EmbedderIdentity | None:
    """The identity a store should hold after a write by ``given``.

    A dimension of 0 means "not known yet" (a document without chunks) and is never recorded.

    Raises:
        EmbedderMismatchError: a store filled by ``recorded`` meets another embedder.
    """
    if recorded is None:
        return given if given.dimension else None
    same_model = (recorded.provider, recorded.model) == (given.provider, given.model)
    if not same_model or given.dimension not in (0, recorded.dimension):
        raise EmbedderMismatchError(
            f"this store holds vectors from {recorded}, but the embedder in use is {given}; "
            "vectors of different models do not compare. Configure the store's embedder, or "
            "clear the store (store.clear(), or `pywrapai-graph store clear`) and ingest again"
        )
    return recorded
