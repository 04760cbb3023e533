"""Qdrant's lexical index: every chunk point holds its own and its document's BM25 term
weights as sparse vectors, so one ``query_points`` scores
``BM25(chunk) + DOCUMENT_WEIGHT · BM25(document)``.

Terms come from :func:`pywrapai_graph.application.text_analysis.analyze`; a term's sparse
index is the CRC-32 of its UTF-8 bytes (the same in every process). A point's weight of a
term is ``tf · (k1 + 1) / (tf + k1 · (1 − b + b · |d| / avgdl))`` (k1 1.2, b 0.75, fixed
when written) and the collection's IDF modifier multiplies it by Lucene's idf, counted by
the engine at query time; a query term weighs 1. ``SPARSE`` holds the chunk's weights
(``avgdl``: the mean chunk length), ``DOCUMENT_SPARSE`` its document version's (the
concatenation of its chunks, each without the start it repeats from the one before,
``text_analysis.document_parts``; against the mean document length). One chunk per document
version, its *carrier*, is flagged (``CARRIER``): the document vector's IDF counts carriers
only, so document frequencies count documents. Each chunk also lists its own term indices
(``TERMS``): a chunk ranks only if it holds a query term itself.

``avgdl`` comes from running totals of lengths in the records (``_add_lengths``): each
write weighs its chunks with the mean including its own batch. Concurrent writers may lose
each other's increments; on Cranfield an ``avgdl`` off by a factor of 0.5 to 1.25 moves
nDCG@10 by under 0.005. A write or delete of some chunks of a document writes its other
chunks' document vectors again (their document changed).
"""

from __future__ import annotations

import zlib
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
from pywrapai_graph.application.text_analysis import analyze, document_parts
from pywrapai_graph.domain import Chunk
from pywrapai_graph.errors import InvalidArgumentError

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

__all__ = ["UPGRADE_NEEDED", "QdrantDocumentField", "query_indices"]

#: One document version: (doc_id, version).
_Group = tuple[str, str]
_PAGE = 500  # documents per lookup, points per write
_K1, _B = 1.2, 0.75

#: what a collection of an earlier release says when asked for lexical search
UPGRADE_NEEDED = (
    f"Qdrant collection {{name!r}} was created before lexical search was served by Qdrant "
    f"as this release serves it (it lacks the sparse vector {SPARSE!r} or {DOCUMENT_SPARSE!r}, "
    "and Qdrant cannot add one to a collection); re-create it: `pywrapai-graph store clear "
    "--yes`, then ingest again (or keep mode='dense')."
)


def _index(term: str) -> int:
    return zlib.crc32(term.encode("utf-8"))


def query_indices(query: str) -> list[int]:
    """The distinct term indices of a query (each weighs 1), sorted."""
    return sorted({_index(t) for t in analyze(query)})


def _weights(terms: Counter[str], avgdl: float) -> dict[str, Any]:
    """A sparse vector's fields (empty: no terms). Two terms hashing to one index (about one
    pair in 10^5 for a 300-term vocabulary) share it: their weights add up."""
    length = sum(terms.values())
    merged: dict[int, float] = {}
    for term, tf in terms.items():
        weight = tf * (_K1 + 1.0) / (tf + _K1 * (1.0 - _B + _B * length / avgdl))
        merged[_index(term)] = merged.get(_index(term), 0.0) + weight
    indices = sorted(merged)
    return {"indices": indices, "values": [merged[i] for i in indices]} if indices else {}


def _document_counts(texts: Sequence[str]) -> Counter[str]:
    """A document's term frequencies from its chunks in order: the sum of their parts'."""
    counts: Counter[str] = Counter()
    for part in document_parts(texts, [""] * len(texts)):
        counts.update(analyze(part))
    return counts


class QdrantDocumentField(VersionedDocuments):
    """The sparse vectors of each chunk; the store sets ``_client``, ``_models``,
    ``_collection`` and ``_sparse``."""

    _client: QdrantClient
    _models: Any
    _collection: str
    #: the collection has the sparse vectors of lexical search
    _sparse: bool

    if TYPE_CHECKING:  # the records'

        def _add_lengths(self, lengths: list[int], documents: bool = False) -> float: ...

        def _scroll(self, collection: str, selector: Any, vectors: bool = False) -> list[Any]: ...

    @property
    def lexical(self) -> bool:
        """Lexical (BM25) search is available."""
        return True

    def _check_lexical(self, k1: float, b: float) -> None:
        if (k1, b) != (_K1, _B):
            raise InvalidArgumentError(
                f"Qdrant weighs terms when a chunk is written, with k1={_K1} and b={_B}; got "
                f"k1={k1}, b={b}. Use the defaults with this store (or PostgreSQL or an "
                "embedded store, which apply k1 and b per query)."
            )

    def _fielded(
        self, texts: Sequence[str], groups: Sequence[_Group]
    ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Each chunk text's sparse vectors and payload fields, the texts of each document
        version in its order (its first is its carrier)."""
        m = self._models
        grouped: dict[_Group, list[str]] = {}
        for text, group in zip(texts, groups, strict=True):
            grouped.setdefault(group, []).append(text)
        documents = [(g, _document_counts(t)) for g, t in grouped.items()]
        terms = [Counter(analyze(text)) for text in texts]
        avgdl = self._add_lengths([sum(t.values()) for t in terms])
        document_avgdl = self._add_lengths([sum(d.values()) for _, d in documents], True)
        fields = {g: _weights(d, document_avgdl) for g, d in documents}
        seen: set[_Group] = set()
        out = []
        for text, counts, group in zip(texts, terms, groups, strict=True):
            vectors = {SPARSE: _weights(counts, avgdl), DOCUMENT_SPARSE: fields[group]}
            payload = {TERMS: query_indices(text), CARRIER: group not in seen}
            seen.add(group)
            out.append(({k: m.SparseVector(**v) for k, v in vectors.items() if v}, payload))
        return out

    def _vectors(
        self, chunks: Sequence[Chunk], versions: Sequence[str], dense: list[list[float]]
    ) -> list[tuple[Any, dict[str, Any]]]:
        """Each point's vectors and lexical payload fields; the chunks of its document
        version stored before get theirs again."""
        if not self._sparse:  # a server collection of an earlier release: dense only
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

    def _group_points(self, groups: Sequence[_Group]) -> dict[_Group, list[Any]]:
        """The stored points (with their vectors) of these document versions, each version's
        in chunk-id order."""
        m = self._models
        wanted = set(groups)
        docs = sorted({doc for doc, _ in wanted})
        versions = m.FieldCondition(
            key="version", match=m.MatchAny(any=sorted({v for _, v in wanted}))
        )
        out: dict[_Group, list[Any]] = {}
        for start in range(0, len(docs), _PAGE):
            of_docs = m.FieldCondition(
                key="doc_id", match=m.MatchAny(any=docs[start : start + _PAGE])
            )
            for p in self._scroll(self._collection, m.Filter(must=[of_docs, versions]), True):
                key = (chunk_of(p.payload).doc_id, version_of(p.payload))
                if key in wanted:
                    out.setdefault(key, []).append(p)
        return {g: sorted(found, key=lambda p: str(p.payload["id"])) for g, found in out.items()}

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
