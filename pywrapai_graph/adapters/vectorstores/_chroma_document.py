"""The document field of Chroma's lexical search (see ``_document_field``).

The *carrier* of a document version (one of its chunk records) holds, besides its own terms,
the document's distinct terms as a metadata list (``pywrapai_doc_terms``), their frequencies
summed over the document's chunks (``pywrapai_doc_tf``, JSON) and its length
(``pywrapai_doc_len``). A query asks, per query term, for the carriers holding it
(``$contains``: document frequencies counted in documents, as Chroma holds them at that
moment) and for the carriers there are (``N``); the best candidates by the sum of their
terms' idf are then scored by BM25 from their frequencies, with the mean document length of
the store's running totals and the query's k1 and b.

:class:`ChromaDocumentField` is that part of :class:`ChromaVectorStore`; a collection written
before the document field gets it when a store opens it (:meth:`_upgrade_lexical`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from pywrapai_graph.adapters.vectorstores._chroma_lexical import (
    LEXICAL_MARK,
    SHORTLIST,
    TERMS,
    add_missing_terms,
    bm25,
    shortlist,
    term_weights,
)
from pywrapai_graph.adapters.vectorstores._chroma_points import DOC, chunk_metadata, pages
from pywrapai_graph.adapters.vectorstores._document_field import (
    Group,
    GroupChunk,
    WritePlan,
    document_counts,
)
from pywrapai_graph.adapters.vectorstores._engine_lexical import EngineLexicalSearch
from pywrapai_graph.adapters.vectorstores._vector_batches import PreparedBatch
from pywrapai_graph.adapters.vectorstores._version_records import ID_KEY, VERSION_KEY

if TYPE_CHECKING:
    from chromadb.api.models.Collection import Collection
    from chromadb.api.types import Metadata

__all__ = ["LEXICAL_VERSION", "ChromaDocumentField"]

DOC_TERMS = "pywrapai_doc_terms"
DOC_TF = "pywrapai_doc_tf"
DOC_LEN = "pywrapai_doc_len"
#: ``LEXICAL_MARK`` of a collection whose chunks have their terms and documents their field
LEXICAL_VERSION = 2
_PAGE = 5000  # records per request
_DOCS_PER_LOOKUP = 500


def field_metadata(counts: Counter[str] | None) -> dict[str, Any]:
    """The document field of a carrier (``None`` values: no field, Chroma drops the keys)."""
    if not counts:
        return {DOC_TERMS: None, DOC_TF: None, DOC_LEN: None}
    terms = sorted(counts)
    return {
        DOC_TERMS: terms,
        DOC_TF: json.dumps({t: counts[t] for t in terms}, separators=(",", ":")),
        DOC_LEN: sum(counts.values()),
    }


#: the ``where`` of the carriers
_CARRIERS: Any = {DOC_LEN: {"$gt": 0}}


def _holding(term: str) -> Any:
    """The ``where`` of the carriers whose document holds ``term``."""
    return {DOC_TERMS: {"$contains": term}}


def _docs_where(doc_ids: Sequence[str]) -> Any:
    return {DOC: {"$in": list(doc_ids)}}


class ChromaDocumentField(EngineLexicalSearch):
    """Document fields on carrier records; the store sets ``_collection``."""

    if TYPE_CHECKING:  # the store's

        @property
        def _collection(self) -> Collection: ...

        def _errors(self) -> AbstractContextManager[None]: ...

    def _chunk_metadatas(
        self, batch: PreparedBatch, versions: Sequence[str]
    ) -> tuple[list[Metadata], WritePlan]:
        """Each chunk's metadata (its terms, and its document's on carriers), and the plan
        whose ``clear`` is left to do once the batch is written."""
        terms, _ = self._weigh([c.text for c in batch.chunks])
        plan = self._plan_documents(batch.chunks, versions)
        self._weigh_documents(list(plan.carriers.values()))
        metadatas: list[Metadata] = [
            {
                **chunk_metadata(c),
                ID_KEY: c.id,
                VERSION_KEY: v,
                **({TERMS: sorted(t)} if t else {}),
                **field_metadata(plan.carriers.get(i)),
            }
            for i, (c, v, t) in enumerate(zip(batch.chunks, versions, terms, strict=True))
        ]
        return metadatas, plan

    def _document_field_ready(self) -> bool:
        return True

    def _with_docs(self, selector: Any, doc_ids: Sequence[str]) -> Any:
        where = _docs_where(doc_ids)
        return where if selector is None else {"$and": [selector, where]}

    def _document_scores(
        self, query: str, n: int, doc_ids: Sequence[str] | None, k1: float, b: float
    ) -> dict[Group, float]:
        with self._errors():
            postings, weight = term_weights(
                query,
                lambda t: set(self._collection.get(where=_holding(t), include=[])["ids"]),
                lambda: len(self._collection.get(where=_CARRIERS, include=[])["ids"]),
            )
            if not postings:
                return {}
            if doc_ids is None:
                best = shortlist(postings, weight, None, max(n, SHORTLIST))
                got = self._collection.get(ids=best, include=["metadatas"])
            else:
                where: Any = {"$and": [_docs_where(doc_ids), _CARRIERS]}
                got = self._collection.get(where=where, include=["metadatas"])
        avgdl = self._length_totals(documents=True).avgdl
        scores: dict[Group, float] = {}
        for meta in got["metadatas"] or []:
            tf, length = json.loads(str(meta[DOC_TF])), int(str(meta[DOC_LEN]))
            key = (str(meta[DOC]), str(meta.get(VERSION_KEY, "")))
            scores[key] = bm25(weight, tf, length, avgdl, k1, b)
        return dict(sorted(scores.items(), key=lambda kv: -kv[1])[:n])

    def _group_chunks(self, groups: Sequence[Group]) -> dict[Group, list[GroupChunk]]:
        wanted = set(groups)
        docs = sorted({doc for doc, _ in wanted})
        versions = sorted({version for _, version in wanted})
        out: dict[Group, list[GroupChunk]] = {}
        with self._errors():
            for start in range(0, len(docs), _DOCS_PER_LOOKUP):
                where: Any = {
                    "$and": [
                        _docs_where(docs[start : start + _DOCS_PER_LOOKUP]),
                        {VERSION_KEY: {"$in": versions}},
                    ]
                }
                got = self._collection.get(where=where, include=["documents", "metadatas"])
                for i, text, meta in zip(
                    got["ids"], got["documents"] or [], got["metadatas"] or [], strict=True
                ):
                    group = (str(meta[DOC]), str(meta.get(VERSION_KEY, "")))
                    if group in wanted:
                        chunk = GroupChunk(i, text or "", DOC_LEN in meta)
                        out.setdefault(group, []).append(chunk)
        return out  # in the collection's order: the order they were written

    def _put_fields(self, changes: Sequence[tuple[GroupChunk, Counter[str] | None]]) -> None:
        self._weigh_documents([c for _, c in changes if c is not None])
        ids = [g.engine_id for g, _ in changes]
        metadatas: list[Metadata] = [field_metadata(c) for _, c in changes]
        with self._errors():
            for start in range(0, len(ids), _PAGE):
                self._collection.update(
                    ids=ids[start : start + _PAGE], metadatas=metadatas[start : start + _PAGE]
                )

    def _upgrade_lexical(self) -> None:
        """Give chunks written before lexical search was Chroma's their terms, and documents
        written before the document field theirs (once; the collection is marked)."""
        mark = int(str((self._collection.metadata or {}).get(LEXICAL_MARK) or 0))
        if mark >= LEXICAL_VERSION:
            return
        if mark < 1:
            add_missing_terms(self._collection, self._weigh)
        self._add_missing_fields(self._carrierless())
        self._collection.modify(metadata={LEXICAL_MARK: LEXICAL_VERSION})

    def _carrierless(self) -> dict[Group, list[GroupChunk]]:
        """Every document version none of whose stored chunks carries its field."""
        groups: dict[Group, list[GroupChunk]] = {}
        for got in pages(self._collection, ["documents", "metadatas"]):
            for i, text, meta in zip(
                got["ids"], got["documents"] or [], got["metadatas"] or [], strict=True
            ):
                group = (str(meta.get(DOC, "")), str(meta.get(VERSION_KEY, "")))
                groups.setdefault(group, []).append(GroupChunk(i, text or "", DOC_LEN in meta))
        return {g: c for g, c in groups.items() if not any(x.carries for x in c)}

    def _add_missing_fields(self, groups: dict[Group, list[GroupChunk]]) -> None:
        """Each version's field on its chunk of the smallest id: processes opening the
        collection together write the same fields."""
        changes: list[tuple[GroupChunk, Counter[str] | None]] = [
            (min(c, key=lambda x: x.engine_id), document_counts([x.text for x in c]))
            for c in groups.values()
        ]
        if changes:
            self._put_fields(changes)
