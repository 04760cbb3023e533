"""Qdrant's BM25 sparse vectors and the one ``query_points`` of a retrieval (server and Edge).

A chunk point holds its own and its document version's BM25 weights (``SPARSE``,
``DOCUMENT_SPARSE``): a query scores ``BM25(chunk) + DOCUMENT_WEIGHT · BM25(document)``. Terms
are indexed by CRC-32, ``tf`` is fixed when written (``avgdl`` from totals in the records) and
the engine's IDF modifier multiplies in Lucene's idf; a write rewrites the document vectors of
its documents' other chunks. ``hybrid`` fuses the dense and lexical prefetches in the engine:
``rrf`` by Qdrant's weighted RRF (``k + 1``: it counts ranks from 0), ``rescored`` and
``weighted`` by DBSF (their formulas need both scores of every candidate, which one query lacks).
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Sequence
from typing import Any

from pywrapai_graph.adapters.vectorstores.kit.versioned import Hit, VersionedDocuments, engine_id
from pywrapai_graph.adapters.vectorstores.qdrant import points
from pywrapai_graph.adapters.vectorstores.qdrant.records import QdrantRecords
from pywrapai_graph.application.text_analysis import DOCUMENT_WEIGHT, analyze, document_parts
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.errors import InvalidArgumentError
from pywrapai_graph.ports.offload import offload
from pywrapai_graph.ports.store_query import StoreQuery

__all__ = ["QdrantLexical"]

#: One document version: (doc_id, version).
_Group = tuple[str, str]
_Fields = list[tuple[dict[str, Any], dict[str, Any]]]
_PAGE = 500  # documents per lookup, points per write
_K1, _B = 1.2, 0.75
#: chunks each sparse prefetch ranks for a lexical query, at least (one a side misses gets 0)
_SHORTLIST = 1000
#: a reply holds this many times the hits asked, so chunks tied at the cut go by chunk id
_TIES = 2


def _index(term: str) -> int:
    return zlib.crc32(term.encode("utf-8"))


def _query_indices(query: str) -> list[int]:
    """The distinct term indices of a query (each weighs 1), sorted."""
    return sorted({_index(t) for t in analyze(query)})


def _weights(terms: Counter[str], avgdl: float) -> dict[str, Any]:
    """A sparse vector's fields (empty: no terms); terms hashing to one index add up."""
    length = sum(terms.values())
    merged: dict[int, float] = {}
    for term, tf in terms.items():
        weight = tf * (_K1 + 1.0) / (tf + _K1 * (1.0 - _B + _B * length / avgdl))
        merged[_index(term)] = merged.get(_index(term), 0.0) + weight
    indices = sorted(merged)
    return {"indices": indices, "values": [merged[i] for i in indices]} if indices else {}


def _hits(query: StoreQuery, found: Sequence[Any], n: int) -> list[Hit]:
    """The ``n`` best of a reply of up to ``_TIES · n``, ties by chunk id (as the other stores)."""
    hits = points.hits_of(found, cosine=query.mode == "dense")
    return sorted(hits, key=lambda h: (-h[0].score, h[0].chunk.id))[:n]


class QdrantLexical(QdrantRecords, VersionedDocuments):
    """The sparse vectors, ``retrieve`` and ``lexical_search`` of the store."""

    lexical = True

    # ------------------------------------------------------------------ writes
    def _fielded(self, texts: Sequence[str], groups: Sequence[_Group]) -> _Fields:
        """Each text's sparse vectors and payload fields (a version's first: the IDF carrier;
        a document: its chunks, overlaps removed)."""
        grouped: dict[_Group, list[str]] = {}
        for text, group in zip(texts, groups, strict=True):
            grouped.setdefault(group, []).append(text)
        documents = {g: Counter[str]() for g in grouped}
        for g, parts in grouped.items():
            for part in document_parts(parts, [""] * len(parts)):
                documents[g].update(analyze(part))
        terms = [Counter(analyze(text)) for text in texts]
        avgdl = self._add_lengths([sum(t.values()) for t in terms])
        document_avgdl = self._add_lengths([sum(d.values()) for d in documents.values()], True)
        fields = {g: _weights(d, document_avgdl) for g, d in documents.items()}
        seen: set[_Group] = set()
        out = []
        for text, counts, group in zip(texts, terms, groups, strict=True):
            sparse = _weights(counts, avgdl)
            vectors = {points.SPARSE: sparse, points.DOCUMENT_SPARSE: fields[group]}
            payload = {points.TERMS: _query_indices(text), points.CARRIER: group not in seen}
            seen.add(group)
            out.append(
                ({k: self._models.SparseVector(**v) for k, v in vectors.items() if v}, payload)
            )
        return out

    def _rewrite(
        self, groups: Sequence[_Group], chunks: Sequence[Chunk] = (), versions: Sequence[str] = ()
    ) -> _Fields:
        """Rewrite the lexical fields of these versions' stored chunks (not ``chunks``, about to
        be written); returns ``chunks``' fields."""
        written = {engine_id(c.id, v) for c, v in zip(chunks, versions, strict=True)}
        stored = [
            p
            for g, group in self._group_points(groups).items()
            for p in group
            if engine_id(points.chunk_of(p.payload).id, g[1]) not in written
        ]
        fields = self._fielded(
            [points.chunk_of(p.payload).text for p in stored] + [c.text for c in chunks],
            [(points.chunk_of(p.payload).doc_id, points.version_of(p.payload)) for p in stored]
            + [(c.doc_id, v) for c, v in zip(chunks, versions, strict=True)],
        )
        self._write(
            [
                self._models.PointStruct(
                    id=str(p.id),
                    vector={"": dict(p.vector)[""], **sparse},
                    payload={**p.payload, **payload},
                )
                for p, (sparse, payload) in zip(stored, fields[: len(stored)], strict=True)
            ]
        )
        return fields[len(stored) :]

    def _write(self, made: Sequence[Any]) -> None:
        for start in range(0, len(made), _PAGE):
            self._client.upsert(self._collection, made[start : start + _PAGE], wait=True)

    def _delete_chunks(self, chunk_ids: Sequence[str]) -> int:
        """``delete``, and the fields of the documents that lost chunks written again."""
        groups = sorted({(c.doc_id, c.version) for c in self._copies(chunk_ids)})
        deleted = super()._delete_chunks(chunk_ids)
        if groups:
            self._rewrite(groups)
        return deleted

    def _group_points(self, groups: Sequence[_Group]) -> dict[_Group, list[Any]]:
        """The stored points (with vectors) of these document versions, in chunk-id order."""
        m = self._models
        wanted = set(groups)
        docs = sorted({doc for doc, _ in wanted})
        versions = self._match("version", sorted({v for _, v in wanted}))
        out: dict[_Group, list[Any]] = {}
        for start in range(0, len(docs), _PAGE):
            of_docs = self._match("doc_id", docs[start : start + _PAGE])
            for p in self._scroll(self._collection, m.Filter(must=[of_docs, versions]), True):
                key = (points.chunk_of(p.payload).doc_id, points.version_of(p.payload))
                if key in wanted:
                    out.setdefault(key, []).append(p)
        return {g: sorted(found, key=lambda p: str(p.payload["id"])) for g, found in out.items()}

    # ------------------------------------------------------------------ reads
    def _retrieve(self, query: StoreQuery) -> list[ScoredChunk]:
        with self._lock:
            selector = self._ready(query)
            return [] if selector is False else [h for h, _ in self._ranked(query, selector)]

    async def _aretrieve(self, query: StoreQuery) -> list[ScoredChunk]:
        if not self._native_async:
            return await offload(self._retrieve, query)
        selector = self._ready(query)
        if selector is False:
            return []
        with self._errors():
            got = await self._aclient().query_points(**self._request(query, selector))
        return [h for h, _ in _hits(query, got.points, query.k)]

    def _ready(self, query: StoreQuery) -> Any:
        """The engine filter of ``query`` (False: nothing to rank)."""
        if query.mode != "dense" and (query.k1, query.b) != (_K1, _B):
            raise InvalidArgumentError(
                f"Qdrant weighs terms when a chunk is written, with k1={_K1} and b={_B}; got "
                f"k1={query.k1}, b={query.b}. Use the defaults with this store (or PostgreSQL "
                "or an embedded store, which apply k1 and b per query)."
            )
        if self._known_dim() is None:
            return False
        if query.mode == "lexical" and not _query_indices(query.text or ""):
            return False
        return self._selector(query.filter)

    def _ranked(self, query: StoreQuery, selector: Any) -> list[Hit]:
        with self._errors():
            got = self._client.query_points(**self._request(query, selector))
        return _hits(query, got.points, query.k)

    def _request(self, query: StoreQuery, selector: Any) -> dict[str, Any]:
        """``query_points``' arguments: a nearest query, a lexical formula, or both fused."""
        m, n = self._models, query.k
        threshold = query.min_score if query.min_score > -1.0 else None
        dense = {"query": list(query.vector or []), "score_threshold": threshold}
        asked = {"collection_name": self._collection, "limit": _TIES * n, "query_filter": selector}
        asked.update(with_payload=True, **self._consistency)
        if query.mode == "dense":
            return {**dense, **asked}
        indices = _query_indices(query.text or "")
        if query.mode == "lexical":
            side = self._lexical(indices, n, selector)
            return {"query": side.query, "using": side.using, "prefetch": side.prefetch, **asked}
        depth = max(query.depth, n)
        sides = [m.Prefetch(limit=depth, filter=selector, **dense)]
        if indices:
            sides.append(self._lexical(indices, depth, selector))
        if query.fusion == "rrf":
            weights = list(query.weights[: len(sides)])
            fused = m.RrfQuery(rrf=m.Rrf(k=query.rrf_k + 1, weights=weights))
        else:
            fused = m.FusionQuery(fusion=m.Fusion.DBSF)
        return {"query": fused, "prefetch": sides, **asked}

    def _lexical(self, indices: list[int], n: int, selector: Any) -> Any:
        """A prefetch of the ``n`` best by the formula (module docstring) among the chunks
        holding a query term (``TERMS``)."""
        m = self._models
        terms = m.SparseVector(indices=indices, values=[1.0] * len(indices))
        held = self._match(points.TERMS, indices)
        carriers = self._match(points.CARRIER, True)
        wide = max(n, _SHORTLIST)
        sides = [
            m.Prefetch(query=terms, using=points.SPARSE, limit=wide, filter=selector),
            m.Prefetch(
                query=terms,
                using=points.DOCUMENT_SPARSE,
                limit=wide,
                filter=m.Filter(must=[held] if selector is None else [selector, held]),
                params=m.SearchParams(idf=m.IdfCorpusParams(corpus=m.Filter(must=[carriers]))),
            ),
        ]
        formula = m.SumExpression(
            sum=["$score[0]", m.MultExpression(mult=[float(DOCUMENT_WEIGHT), "$score[1]"])]
        )
        fielded = m.FormulaQuery(formula=formula, defaults={"$score[0]": 0.0, "$score[1]": 0.0})
        return m.Prefetch(prefetch=sides, query=fielded, limit=n, filter=selector)
