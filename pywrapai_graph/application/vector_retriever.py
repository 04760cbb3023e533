"""VectorRetriever: embeds documents into a vector store and retrieves by query."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pywrapai_graph.application.ingest_documents import (
    IngestDocuments,
    OutcomeCallback,
    ProgressCallback,
    embedder_name,
)
from pywrapai_graph.application.observability.operations import observe_retrieval, observe_store
from pywrapai_graph.application.observability.telemetry import check_hooks
from pywrapai_graph.application.scoped_retriever import ScopedRetriever
from pywrapai_graph.domain import Document, ScoredChunk
from pywrapai_graph.domain.checks import is_positive_int
from pywrapai_graph.domain.ingest_report import IngestReport
from pywrapai_graph.domain.manifest import EmbedderIdentity
from pywrapai_graph.ports import (
    BaseRetriever,
    BaseVectorStore,
    EmbeddingModel,
    MetadataFilter,
    TextSplitter,
)
from pywrapai_graph.ports.embedder import aembed_one
from pywrapai_graph.ports.hooks import Hooks
from pywrapai_graph.ports.offload import offload
from pywrapai_graph.ports.vector_store import check_embedder

__all__ = ["ProgressCallback", "VectorRetriever"]


class VectorRetriever(BaseRetriever):
    """Connects an embedder to a vector store.

    :meth:`aretrieve` embeds with the embedder's native async client when it has one and
    searches with the store's ``asearch``, so retrieval never blocks the event loop;
    ``aadd_documents`` runs the (per-document atomic) ingest in the bounded offload pool.

    Args:
        embedder: turns texts into vectors (``Embedder``, ``HashingEmbedder``, ...).
        store: any :class:`BaseVectorStore`.
        k: default number of chunks to retrieve.
        min_score: minimum cosine similarity a hit needs (0.0 keeps every non-negative hit).
        hooks: observability hooks told about every retrieval.

    Raises:
        ValueError: k < 1 or min_score outside [-1, 1].
    """

    def __init__(
        self,
        embedder: EmbeddingModel,
        store: BaseVectorStore,
        k: int = 4,
        min_score: float = 0.0,
        *,
        batch_size: int = 256,
        hooks: Sequence[Hooks] | None = None,
    ) -> None:
        if not is_positive_int(k):
            raise ValueError(f"k must be a positive int, got {k!r}")
        if not -1.0 <= min_score <= 1.0:
            raise ValueError(f"min_score is a cosine similarity in [-1, 1], got {min_score}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.embedder = embedder
        self.store = store
        self.k = k
        self.min_score = min_score
        self.batch_size = batch_size
        self.hooks = check_hooks(hooks)
        self._checked = -1  # the query dimension whose embedder was checked against the store

    def add_documents(
        self,
        docs: Sequence[Document],
        chunker: TextSplitter | None = None,
        *,
        progress: ProgressCallback | None = None,
    ) -> int:
        """Chunk, embed (batched calls) and store ``docs``, each replacing its previous version.

        With ``chunker=None`` each non-blank document becomes exactly one chunk. After it
        returns the store holds exactly the new chunks of each document (a re-added document
        with fewer chunks loses its extra ones). On the built-in stores each document is
        written all-or-nothing; documents stored before a failure stay stored.

        Returns:
            The number of chunks added.

        Raises:
            EmbedderMismatchError: the store was filled by another embedder.
        """
        report = self.ingest(docs, chunker, skip_unchanged=False, progress=progress)
        return report.chunks_written

    def ingest(
        self,
        docs: Iterable[Document],
        chunker: TextSplitter | None = None,
        *,
        skip_unchanged: bool = True,
        progress: ProgressCallback | None = None,
        on_document: OutcomeCallback | None = None,
    ) -> IngestReport:
        """Like :meth:`add_documents`, with a typed report; unchanged documents are skipped."""
        use_case = IngestDocuments(self.embedder, self.store, chunker, batch_size=self.batch_size)
        return use_case(
            docs, skip_unchanged=skip_unchanged, progress=progress, on_document=on_document
        )

    def retrieve(
        self, query: str, k: int | None = None, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        """Up to ``k`` (default: the constructor's) chunks scoring at least ``min_score``."""
        wanted = self.k if k is None else k
        system = self.store.db_system
        with observe_retrieval(system, query, wanted, hooks=self.hooks) as observed:
            vector = self.embedder.embed_one(query)
            self._check_embedder(len(vector))
            with observe_store(system, "search", k=wanted) as search:
                hits = self.store.search(vector, k=wanted, filter=filter)
                search.result = len(hits)
            observed.result = kept = self._keep(hits)
        return kept

    def retrieve_matching(
        self, query: str, filter: MetadataFilter, k: int | None = None
    ) -> list[ScoredChunk]:
        """:meth:`retrieve` restricted to chunks whose metadata matches ``filter``."""
        return self.retrieve(query, k, filter)

    async def aretrieve(
        self, query: str, k: int | None = None, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        """Async :meth:`retrieve`: async embedding, then the store's ``asearch``."""
        wanted = self.k if k is None else k
        system = self.store.db_system
        with observe_retrieval(system, query, wanted, hooks=self.hooks) as observed:
            vector = await aembed_one(self.embedder, query)
            if self._checked != len(vector):
                await offload(self._check_embedder, len(vector))
            with observe_store(system, "search", k=wanted) as search:
                hits = await self.store.asearch(vector, k=wanted, filter=filter)
                search.result = len(hits)
            observed.result = kept = self._keep(hits)
        return kept

    def _keep(self, hits: list[ScoredChunk]) -> list[ScoredChunk]:
        return [h for h in hits if h.score >= self.min_score]

    def _check_embedder(self, dimension: int) -> None:
        if self._checked == dimension:
            return
        provider, model = embedder_name(self.embedder)
        recorded = self.store.embedder_identity()
        check_embedder(recorded, EmbedderIdentity(provider, model, dimension))
        if recorded is not None:  # an empty store may be filled by another process later
            self._checked = dimension

    def scoped(self, metadata: Mapping[str, Any]) -> ScopedRetriever:
        """A view whose reads always filter by ``metadata`` and whose writes stamp it.

        Example:
            >>> acme = retriever.scoped({"tenant": "acme"})  # doctest: +SKIP
            >>> acme.add_documents(docs)  # chunks carry tenant=acme  # doctest: +SKIP
            >>> acme.retrieve("refund policy")  # only tenant=acme chunks  # doctest: +SKIP
        """
        return ScopedRetriever(self, metadata)

    def __repr__(self) -> str:
        return f"VectorRetriever(store={self.store!r}, k={self.k}, min_score={self.min_score})"
