"""The document field of Qdrant's lexical search (see ``_document_field``).

Each chunk point carries the sparse vector ``pywrapai_bm25`` of its own terms; the *carrier*
of a document version (one of its chunk points) also carries ``pywrapai_bm25_doc``: the BM25
weights of the document's terms (term frequencies summed over its chunks, its length against
the mean document length of :class:`LengthTotals` kept for documents). The collection applies
its IDF modifier to both, and counts for each only the points that have it: for the second,
one point per document version, so ``N`` and document frequencies count documents, as the
engine holds them at query time.

:class:`QdrantDocumentField` is that part of :class:`QdrantVectorStore`. A collection created
before the document field (it lacks the second vector, which Qdrant cannot add to an existing
collection) keeps serving chunk scores alone, and says once how to re-create it.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from pywrapai_graph.adapters.vectorstores._document_field import (
    Group,
    GroupChunk,
    WritePlan,
)
from pywrapai_graph.adapters.vectorstores._engine_lexical import EngineLexicalSearch
from pywrapai_graph.adapters.vectorstores._qdrant_points import (
    DOCUMENT_SPARSE,
    SPARSE,
    chunk_of,
    version_of,
)
from pywrapai_graph.adapters.vectorstores._sparse_terms import query_indices, weights
from pywrapai_graph.adapters.vectorstores._version_records import engine_id
from pywrapai_graph.domain import Chunk

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

__all__ = ["UPGRADE_NEEDED", "QdrantDocumentField"]

_log = logging.getLogger(__name__)
_PAGE = 500  # documents per lookup, points per write

#: what a collection of an earlier release says when asked for lexical search
UPGRADE_NEEDED = (
    "Qdrant collection {name!r} was created before lexical search was served by Qdrant "
    "(it has no sparse vector {sparse!r}, and Qdrant cannot add one to a collection); "
    "re-create it: `pywrapai-graph store clear --yes`, then ingest again (or keep "
    "mode='dense')."
).replace("{sparse!r}", repr(SPARSE))

#: what a collection from before the document field says (once per store)
NO_DOCUMENT_FIELD = (
    "Qdrant collection %r was created before lexical search had a document field (it has no "
    "sparse vector %r, and Qdrant cannot add one to a collection): its lexical scores are "
    "those of chunks alone. To rank chunks of long documents better, re-create it "
    "(`pywrapai-graph store clear --yes`, then ingest again)."
)


class QdrantDocumentField(EngineLexicalSearch):
    """Document fields on carrier points; the store sets ``_client``, ``_models``,
    ``_collection``, ``_mode``, ``_sparse`` and ``_doc_field``."""

    _client: QdrantClient
    _models: Any
    _collection: str
    _mode: str
    _sparse: bool
    #: the collection has the document field's sparse vector
    _doc_field: bool
    _warned = False

    if TYPE_CHECKING:  # the store's

        def _errors(self) -> AbstractContextManager[None]: ...

        def _existing_dimension(self) -> int | None: ...

    def _sparse_of(self, name: str, counts: Counter[str], avgdl: float) -> dict[str, Any]:
        indices, values = weights(counts, avgdl)
        if not indices:
            return {}
        return {name: self._models.SparseVector(indices=indices, values=values)}

    def _vectors(
        self, chunks: Sequence[Chunk], versions: Sequence[str], dense: list[list[float]]
    ) -> list[Any]:
        """Each point's vectors: the dense one, the BM25 sparse one when it has terms, and on
        each document version's carrier its document's; a field moved off a stored point
        is cleared there."""
        if not self._sparse:  # a server collection from before lexical search was Qdrant's
            return dense
        terms, avgdl = self._weigh([c.text for c in chunks])
        plan = self._plan_documents(chunks, versions) if self._doc_field else WritePlan()
        document_avgdl = self._weigh_documents(list(plan.carriers.values()))
        out: list[Any] = []
        for i, (vector, counts) in enumerate(zip(dense, terms, strict=True)):
            point = {"": vector, **self._sparse_of(SPARSE, counts, avgdl)}
            if i in plan.carriers:
                point.update(self._sparse_of(DOCUMENT_SPARSE, plan.carriers[i], document_avgdl))
            out.append(point)
        if plan.clear:
            self._put_fields([(g, None) for g in plan.clear])
        return out

    def _document_field_ready(self) -> bool:
        if self._doc_field or self._known_dim() is None:
            return self._doc_field
        with self._errors():  # another process may have re-created the collection
            self._existing_dimension()
        return self._warn_unless_ready()

    def _warn_unless_ready(self) -> bool:
        if not self._doc_field and not self._warned:
            self._warned = True
            _log.warning(NO_DOCUMENT_FIELD, self._collection, DOCUMENT_SPARSE)
        return self._doc_field

    def _docs_condition(self, doc_ids: Sequence[str]) -> Any:
        m = self._models
        return m.FieldCondition(key="doc_id", match=m.MatchAny(any=list(doc_ids)))

    def _with_docs(self, selector: Any, doc_ids: Sequence[str]) -> Any:
        conditions = [self._docs_condition(doc_ids)]
        return self._models.Filter(must=conditions if selector is None else [selector, *conditions])

    def _sparse_query(
        self, using: str, query: str, n: int, selector: Any, payload: Any
    ) -> list[Any]:
        """The ``n`` points best matching ``query``'s terms (each weighing 1) on a sparse vector."""
        m = self._models
        indices = query_indices(query)
        if not indices:
            return []
        with self._errors():
            result = self._client.query_points(
                self._collection,
                query=m.SparseVector(indices=indices, values=[1.0] * len(indices)),
                using=using,
                limit=n,
                query_filter=selector,
                with_payload=payload,
            )
        return list(result.points)

    def _document_scores(
        self, query: str, n: int, doc_ids: Sequence[str] | None, k1: float, b: float
    ) -> dict[Group, float]:
        """Qdrant weighs terms when writing (k1 and b are the defaults: see ``_check_lexical``)."""
        selector = (
            None if doc_ids is None else self._models.Filter(must=[self._docs_condition(doc_ids)])
        )
        points = self._sparse_query(DOCUMENT_SPARSE, query, n, selector, ["doc_id", "version"])
        out: dict[Group, float] = {}
        for p in points:
            key = (str((p.payload or {})["doc_id"]), version_of(p.payload))
            out[key] = max(out.get(key, 0.0), float(p.score))
        return out

    def _group_chunks(self, groups: Sequence[Group]) -> dict[Group, list[GroupChunk]]:
        m = self._models
        wanted = set(groups)
        docs = sorted({doc for doc, _ in wanted})
        versions = sorted({version for _, version in wanted})
        out: dict[Group, list[GroupChunk]] = {}
        with self._errors():
            for start in range(0, len(docs), _PAGE):
                selector = m.Filter(
                    must=[
                        self._docs_condition(docs[start : start + _PAGE]),
                        m.FieldCondition(key="version", match=m.MatchAny(any=versions)),
                    ]
                )
                for p in self._scroll_vectors(selector):
                    chunk, version = chunk_of(p.payload), version_of(p.payload)
                    if (chunk.doc_id, version) in wanted:
                        vectors = p.vector if isinstance(p.vector, dict) else {}
                        out.setdefault((chunk.doc_id, version), []).append(
                            GroupChunk(
                                engine_id(chunk.id, version),
                                chunk.text,
                                DOCUMENT_SPARSE in vectors,
                                p,
                            )
                        )
        return {g: sorted(found, key=lambda c: c.engine_id) for g, found in out.items()}

    def _scroll_vectors(self, selector: Any) -> list[Any]:
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

    def _put_fields(self, changes: Sequence[tuple[GroupChunk, Counter[str] | None]]) -> None:
        m = self._models
        avgdl = self._weigh_documents([c for _, c in changes if c is not None])
        points = []
        for stored, counts in changes:
            raw = stored.raw
            vector = {k: v for k, v in dict(raw.vector).items() if k != DOCUMENT_SPARSE}
            if counts is not None:
                vector.update(self._sparse_of(DOCUMENT_SPARSE, counts, avgdl))
            points.append(m.PointStruct(id=raw.id, vector=vector, payload=raw.payload))
        with self._errors():
            for start in range(0, len(points), _PAGE):
                self._client.upsert(self._collection, points[start : start + _PAGE], wait=True)
