"""Qdrant's document field: every chunk point holds its document's BM25 weights too, so one
``query_points`` scores ``BM25(chunk) + DOCUMENT_WEIGHT · BM25(document)``.

Each chunk point carries two sparse vectors with the collection's IDF modifier:
``pywrapai_bm25``, its own terms' weights (``w`` of :mod:`_sparse_terms`, against the mean
chunk length), and ``pywrapai_bm25_doc``, its document version's (``D``: the concatenation
of its chunks, each without the start it repeats from the one before, ``text_analysis
.document_parts``; against the mean document length); one chunk per document version, its
*carrier*, is flagged in its payload (``pywrapai_carrier``). A query scores the first with
the IDF over every chunk and the second with the IDF over the carriers (Qdrant's IDF corpus
filter), so document frequencies count documents, and adds them with a formula (see
``QdrantVectorStore._request``). Each chunk also lists its own term indices
(``pywrapai_terms``): a chunk ranks only if it holds a query term itself.

A write or delete of some chunks of a document writes its other chunks' document vectors
again (their document changed). :meth:`QdrantDocumentField._migrate_fields` writes every
chunk of a collection of the carrier-point release (``pywrapai-graph store migrate``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pywrapai_graph.adapters.vectorstores.kit.version_records import engine_id
from pywrapai_graph.adapters.vectorstores.kit.versioned import VersionedDocuments
from pywrapai_graph.adapters.vectorstores.qdrant.points import (
    CARRIER,
    DOCUMENT_SPARSE,
    SPARSE,
    TERMS,
    chunk_of,
    version_of,
)
from pywrapai_graph.adapters.vectorstores.qdrant.sparse_terms import (
    LengthTotals,
    check_fixed_bm25,
    query_indices,
    weights,
)
from pywrapai_graph.application.text_analysis import analyze, document_parts
from pywrapai_graph.domain import Chunk

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

__all__ = ["UPGRADE_NEEDED", "QdrantDocumentField"]

#: One document version: (doc_id, version).
_Group = tuple[str, str]
_PAGE = 500  # documents per lookup, points per write

#: what a collection of an earlier release says when asked for lexical search
UPGRADE_NEEDED = (
    "Qdrant collection {name!r} was created before lexical search was served by Qdrant "
    "(it has no sparse vector {sparse!r}, and Qdrant cannot add one to a collection); "
    "re-create it: `pywrapai-graph store clear --yes`, then ingest again (or keep "
    "mode='dense')."
).replace("{sparse!r}", repr(SPARSE))


def document_counts(texts: Sequence[str]) -> Counter[str]:
    """A document's term frequencies from its chunks in order: the sum of their parts'."""
    counts: Counter[str] = Counter()
    for part in document_parts(texts, [""] * len(texts)):
        counts.update(analyze(part))
    return counts


class QdrantDocumentField(VersionedDocuments):
    """The fielded sparse vector of each chunk; the store sets ``_client``, ``_models``,
    ``_collection``, ``_sparse`` and ``_doc_vector``."""

    _client: QdrantClient
    _models: Any
    _collection: str
    #: the collection has the sparse vector of lexical search
    _sparse: bool
    #: ... and of the document field
    _doc_vector: bool

    if TYPE_CHECKING:  # the records'

        def _length_totals(self, documents: bool = False) -> LengthTotals: ...

        def _put_length_totals(self, totals: LengthTotals, documents: bool = False) -> None: ...

    @property
    def lexical(self) -> bool:
        """Lexical (BM25) search is available."""
        return True

    def _check_lexical(self, k1: float, b: float) -> None:
        check_fixed_bm25(k1, b, "Qdrant")

    def _add_lengths(self, lengths: list[int], documents: bool = False) -> float:
        """The running length totals (of chunks, or documents) with ``lengths`` added and
        recorded; their avgdl."""
        totals = self._length_totals(documents).plus(lengths)
        if lengths:
            self._put_length_totals(totals, documents)
        return totals.avgdl

    def _weights_of(self, counts: Counter[str], avgdl: float) -> dict[str, Any]:
        indices, values = weights(counts, avgdl)
        return {"indices": indices, "values": values} if indices else {}

    def _fielded(
        self, texts: Sequence[str], groups: Sequence[_Group]
    ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Each chunk text's sparse vectors and payload fields, the texts of each document
        version in its order (its first is its carrier)."""
        m = self._models
        grouped: dict[_Group, list[str]] = {}
        for text, group in zip(texts, groups, strict=True):
            grouped.setdefault(group, []).append(text)
        documents = [(g, document_counts(t)) for g, t in grouped.items()]
        terms = [Counter(analyze(text)) for text in texts]
        avgdl = self._add_lengths([sum(t.values()) for t in terms])
        document_avgdl = self._add_lengths([sum(d.values()) for _, d in documents], True)
        fields = {g: self._weights_of(d, document_avgdl) for g, d in documents}
        seen: set[_Group] = set()
        out = []
        for text, counts, group in zip(texts, terms, groups, strict=True):
            vectors = {SPARSE: self._weights_of(counts, avgdl)}
            if self._doc_vector:
                vectors[DOCUMENT_SPARSE] = fields[group]
            payload = {TERMS: query_indices(text), CARRIER: group not in seen}
            seen.add(group)
            out.append(({k: m.SparseVector(**v) for k, v in vectors.items() if v}, payload))
        return out

    def _vectors(
        self, chunks: Sequence[Chunk], versions: Sequence[str], dense: list[list[float]]
    ) -> list[tuple[Any, dict[str, Any]]]:
        """Each point's vectors and lexical payload fields; the chunks of its document
        version stored before get theirs again."""
        if not self._sparse:  # a server collection from before lexical search was Qdrant's
            return [(vector, {}) for vector in dense]
        groups = sorted({(c.doc_id, v) for c, v in zip(chunks, versions, strict=True)})
        fields = self._rewrite(groups, chunks, versions)
        return [
            ({"": vector, **sparse}, payload)
            for vector, (sparse, payload) in zip(dense, fields, strict=True)
        ]

    def _rewrite(
        self, groups: Sequence[_Group], chunks: Sequence[Chunk] = (), versions: Sequence[str] = ()
    ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Write the lexical fields of these document versions' stored chunks again (those
        of ``chunks``, about to be written, are left out); returns ``chunks``' fields."""
        written = {engine_id(c.id, v) for c, v in zip(chunks, versions, strict=True)}
        stored = [
            p
            for g, points in self._group_points(groups).items()
            for p in points
            if engine_id(chunk_of(p.payload).id, g[1]) not in written
        ]
        fields = self._fielded(
            [chunk_of(p.payload).text for p in stored] + [c.text for c in chunks],
            [(chunk_of(p.payload).doc_id, version_of(p.payload)) for p in stored]
            + [(c.doc_id, v) for c, v in zip(chunks, versions, strict=True)],
        )
        self._put_fields(stored, fields[: len(stored)])
        return fields[len(stored) :]

    def _delete_chunks(self, chunk_ids: Sequence[str]) -> int:
        """``delete``, and the fields of the documents that lost chunks written again."""
        groups = sorted({(c.doc_id, c.version) for c in self._copies(chunk_ids)})
        deleted = super()._delete_chunks(chunk_ids)
        if groups and self._sparse:
            self._rewrite(groups)
        return deleted

    def _migrate_fields(self) -> int:
        """Every chunk's sparse vector written again as this release writes it (a collection
        of an earlier release: chunk weights alone, its document's on one carrier point);
        returns how many document versions were rewritten."""
        groups = sorted(
            {(chunk_of(p.payload).doc_id, version_of(p.payload)) for p in self._points(None)}
        )
        for start in range(0, len(groups), _PAGE):
            self._rewrite(groups[start : start + _PAGE])
        return len(groups)

    def _group_points(self, groups: Sequence[_Group]) -> dict[_Group, list[Any]]:
        """The stored points (with their vectors) of these document versions, each version's
        in chunk-id order."""
        m = self._models
        wanted = set(groups)
        docs = sorted({doc for doc, _ in wanted})
        out: dict[_Group, list[Any]] = {}
        for start in range(0, len(docs), _PAGE):
            selector = m.Filter(
                must=[
                    m.FieldCondition(
                        key="doc_id", match=m.MatchAny(any=docs[start : start + _PAGE])
                    ),
                    m.FieldCondition(
                        key="version", match=m.MatchAny(any=sorted({v for _, v in wanted}))
                    ),
                ]
            )
            for p in self._points(selector):
                key = (chunk_of(p.payload).doc_id, version_of(p.payload))
                if key in wanted:
                    out.setdefault(key, []).append(p)
        return {g: sorted(found, key=lambda p: str(p.payload["id"])) for g, found in out.items()}

    def _points(self, selector: Any) -> list[Any]:
        """Every chunk point matching ``selector``, with payloads and vectors."""
        points: list[Any] = []
        offset = None
        while True:
            page, offset = self._client.scroll(
                self._collection,
                scroll_filter=selector,
                limit=1000,
                offset=offset,
                with_payload=True,
                with_vectors=True,
            )
            points += page
            if offset is None:
                return points

    def _put_fields(
        self, stored: Sequence[Any], fields: Sequence[tuple[dict[str, Any], dict[str, Any]]]
    ) -> None:
        """Stored points written again with these sparse vectors and payload fields."""
        m = self._models
        points = [
            m.PointStruct(
                id=raw.id,
                vector={"": dict(raw.vector)[""], **sparse},
                payload={**raw.payload, **payload},
            )
            for raw, (sparse, payload) in zip(stored, fields, strict=True)
        ]
        for start in range(0, len(points), _PAGE):
            self._client.upsert(self._collection, points[start : start + _PAGE], wait=True)
