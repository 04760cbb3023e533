"""Lexical (BM25) search answered by the engine, for the versioned stores (Qdrant, Chroma).

The process keeps no copy of the index: each write stores its chunks' terms with them (in the
engine's form: a sparse vector, a metadata field), and each query is answered from what the
engine holds at that moment, so a write, replace or delete by any process is what every
other process's next query sees. Hits of uncommitted versions are dropped as in dense search
(:meth:`VersionedDocuments._search_visible`). ``avgdl`` comes from running totals kept with
the document records (see :mod:`_sparse_terms`).

Hybrid retrieval re-scores its candidates here too: the same engine queries, restricted to
the candidates' chunk ids (:meth:`EngineLexicalSearch._ids_selector`), give each its cosine
(``similarities``) and its BM25 score (``lexical_scores``), of its committed version.

Both add the document field (see :mod:`_document_field`): a chunk's score is its own BM25
plus ``DOCUMENT_WEIGHT`` times its document's, from the engine's document statistics.
"""

from __future__ import annotations

from abc import abstractmethod
from collections import Counter
from collections.abc import Sequence
from typing import Any

from pywrapai_graph.adapters.vectorstores._document_field import (
    DOCUMENT_SHORTLIST,
    FIELDED_SHORTLIST,
    STRONG_DOCUMENTS,
    Group,
    GroupChunk,
    WritePlan,
    combine,
    document_counts,
    plan_writes,
)
from pywrapai_graph.adapters.vectorstores._sparse_terms import LengthTotals
from pywrapai_graph.adapters.vectorstores._vector_batches import prepare_query
from pywrapai_graph.adapters.vectorstores._versioned import Hit, VersionedDocuments
from pywrapai_graph.application.text_analysis import analyze
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.ports import MetadataFilter

__all__ = ["EngineLexicalSearch"]


class EngineLexicalSearch(VersionedDocuments):
    """``lexical_search`` over an engine query primitive, and the write-side term weighing."""

    @property
    def lexical(self) -> bool:
        """Lexical (BM25) search is available."""
        return True

    @abstractmethod
    def _length_totals(self, documents: bool = False) -> LengthTotals:
        """The running totals of chunk (or document) lengths recorded in the engine (zeros
        when none)."""

    @abstractmethod
    def _put_length_totals(self, totals: LengthTotals, documents: bool = False) -> None: ...

    @abstractmethod
    def _document_field_ready(self) -> bool:
        """The collection holds document fields (else: chunk scores alone)."""

    @abstractmethod
    def _document_scores(
        self, query: str, n: int, doc_ids: Sequence[str] | None, k1: float, b: float
    ) -> dict[Group, float]:
        """The engine's ``n`` best document BM25 scores (every version; of ``doc_ids``
        only, unless None), keyed by (doc_id, version)."""

    @abstractmethod
    def _with_docs(self, selector: Any, doc_ids: Sequence[str]) -> Any:
        """``selector`` narrowed to the chunks of these (non-empty) documents."""

    @abstractmethod
    def _group_chunks(self, groups: Sequence[Group]) -> dict[Group, list[GroupChunk]]:
        """The stored chunks of these document versions."""

    @abstractmethod
    def _put_fields(self, changes: Sequence[tuple[GroupChunk, Counter[str] | None]]) -> None:
        """Give each stored chunk these document terms (None: no document field)."""

    @abstractmethod
    def _lexical_query(self, query: str, n: int, selector: Any, k1: float, b: float) -> list[Hit]:
        """The engine's ``n`` best BM25 hits of every version, best first."""

    @abstractmethod
    def _ids_selector(self, ids: Sequence[str]) -> Any:
        """The engine's selector of the chunks with these (non-empty) chunk ids."""

    def _check_lexical(self, k1: float, b: float) -> None:
        """Refuse BM25 parameters the engine cannot apply (all are accepted by default)."""

    def _weigh(self, texts: Sequence[str]) -> tuple[list[Counter[str]], float]:
        """Analyse a batch about to be written and add its lengths to the chunk length
        totals; returns each text's terms and the avgdl."""
        terms = [Counter(analyze(text)) for text in texts]
        return terms, self._add_lengths([sum(t.values()) for t in terms])

    def _weigh_documents(self, documents: Sequence[Counter[str]]) -> float:
        """Add documents about to be written to the document length totals; the avgdl."""
        return self._add_lengths([sum(d.values()) for d in documents], documents=True)

    def _add_lengths(self, lengths: list[int], documents: bool = False) -> float:
        """The length totals (of chunks, or documents) with ``lengths`` added, recorded when
        there are any; returns their avgdl."""
        totals = self._length_totals(documents).plus(lengths)
        if lengths:
            self._put_length_totals(totals, documents)
        return totals.avgdl

    def _plan_documents(self, chunks: Sequence[Chunk], versions: Sequence[str]) -> WritePlan:
        """Where a batch about to be written puts its document fields (see ``plan_writes``)."""
        groups = sorted({(c.doc_id, v) for c, v in zip(chunks, versions, strict=True)})
        return plan_writes(chunks, versions, self._group_chunks(groups))

    def _refresh_documents(self, groups: Sequence[Group]) -> None:
        """Write the document fields of these versions again from the chunks they have."""
        changes: list[tuple[GroupChunk, Counter[str] | None]] = []
        for stored in self._group_chunks(groups).values():
            if stored:
                carrier = next((g for g in stored if g.carries), stored[0])
                changes.append((carrier, document_counts([g.text for g in stored])))
        if changes:
            self._put_fields(changes)

    def _delete_chunks(self, chunk_ids: Sequence[str]) -> int:
        """``delete``, and the document fields of the documents that lost chunks."""
        groups = sorted({(c.doc_id, c.version) for c in self._copies(chunk_ids)})
        deleted = super()._delete_chunks(chunk_ids)
        if groups and self._document_field_ready():
            self._refresh_documents(groups)
        return deleted

    def _fielded_query(self, query: str, n: int, selector: Any, k1: float, b: float) -> list[Hit]:
        """The ``n`` best chunks by BM25 of the chunk plus the weighted BM25 of its document:
        among the best chunks, and the chunks (matching ``selector``) of the best documents."""
        if not self._document_field_ready():
            return self._lexical_query(query, n, selector, k1, b)
        hits = self._lexical_query(query, max(n, FIELDED_SHORTLIST), selector, k1, b)
        documents = self._document_scores(query, max(n, DOCUMENT_SHORTLIST), None, k1, b)
        ranked = sorted(documents, key=lambda key: -documents[key])
        best = sorted({doc for doc, _ in ranked[: max(n, STRONG_DOCUMENTS)]})
        if best:
            hits += self._lexical_query(
                query, 4 * len(best), self._with_docs(selector, best), k1, b
            )
        return self._combined(query, hits, documents, k1, b)[:n]

    def _combined(
        self, query: str, hits: list[Hit], documents: dict[Group, float], k1: float, b: float
    ) -> list[Hit]:
        """``hits`` with their documents' scores added (asked for those not in ``documents``)."""
        missing = sorted({h.chunk.doc_id for h, _ in hits} - {doc for doc, _ in documents})
        if missing:
            asked = self._document_scores(query, 4 * len(missing), missing, k1, b)
            documents = {**documents, **asked}
        return combine(hits, documents)

    def _lexical_search(
        self, query: str, k: int, filter: MetadataFilter | None, *, k1: float, b: float
    ) -> list[ScoredChunk]:
        """The ``k`` chunks whose text best matches ``query`` by BM25, best first."""
        self._check_lexical(k1, b)
        with self._lock:
            if self._known_dim() is None:
                return []
            selector = self._selector(filter)
            return self._search_visible(
                lambda n: self._fielded_query(query, n, selector, k1, b), k, self._available()
            )

    def _lexical_scores(
        self, query: str, ids: list[str], *, k1: float, b: float
    ) -> dict[str, float]:
        """The score of each chunk of ``ids`` sharing a term with ``query`` (as
        :meth:`_fielded_query` scores it): the engine's queries restricted to those ids."""
        self._check_lexical(k1, b)
        with self._lock:
            if not ids or self._known_dim() is None:
                return {}
            selector = self._ids_selector(ids)
            hits = self._search_visible(
                lambda n: self._scored(query, n, selector, k1, b), len(ids), self._available()
            )
        return {h.chunk.id: h.score for h in hits}

    def _scored(self, query: str, n: int, selector: Any, k1: float, b: float) -> list[Hit]:
        hits = self._lexical_query(query, n, selector, k1, b)
        if not hits or not self._document_field_ready():
            return hits
        return self._combined(query, hits, {}, k1, b)

    def _similarities(self, query_vector: Sequence[float], ids: list[str]) -> dict[str, float]:
        """Cosines of ``ids``: the engine's vector query restricted to those ids."""
        with self._lock:
            if not ids or self._known_dim() is None:
                return {}
            query = prepare_query(query_vector, self._dim)
            ask = self._asker(query, self._ids_selector(ids))
            hits = self._search_visible(ask, len(ids), self._available())
        return {h.chunk.id: h.score for h in hits}

    async def _asimilarities(
        self, query_vector: Sequence[float], ids: list[str]
    ) -> dict[str, float]:
        """Async :meth:`_similarities` (the native async client where there is one)."""
        if not self._native_async:
            return await super()._asimilarities(query_vector, ids)
        if not ids or self._known_dim() is None:
            return {}
        query = prepare_query(query_vector, self._dim)
        hits = await self._asearch_visible(query, len(ids), self._ids_selector(ids))
        return {h.chunk.id: h.score for h in hits}
