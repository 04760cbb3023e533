"""BM25 computed in the process, for the in-memory and FAISS stores (docs/retrieval.md).

A chunk ``c`` of document ``D`` scores ``BM25(q, c) + W · BM25(q, D)`` (``W``:
``text_analysis.DOCUMENT_WEIGHT``; Lucene's non-negative idf; each chunk adds its
``document_parts`` part to ``D``). A query reads only its terms' postings.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
import numpy.typing as npt

from pywrapai_graph.application.fusion import fuse, one_sided
from pywrapai_graph.application.text_analysis import DOCUMENT_WEIGHT, analyze, document_parts
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.ports.store_inputs import checked_filter, matches_filter
from pywrapai_graph.ports.store_query import StoreQuery

__all__ = ["InProcessRetrieval", "LexicalIndex", "LexicalMirror"]

Slots = npt.NDArray[np.intp]
Floats = npt.NDArray[np.float64]


class _Field:
    """One BM25 field: units (chunks, or documents) by id, each a slot: postings and length."""

    def __init__(self) -> None:
        self.slots: dict[str, int] = {}
        self._free: list[int] = []
        self.size = 0  # slots ever allocated (live or free)
        self.length = np.zeros(64, dtype=np.float64)
        self.total = 0
        self._postings: dict[str, dict[int, int]] = {}
        self._arrays: dict[str, tuple[Slots, Floats]] = {}

    def open(self, key: str) -> int:
        """The slot of ``key``, allocated (empty) if it has none."""
        slot = self.slots.get(key)
        if slot is None:
            slot = self._free.pop() if self._free else self.size
            if slot == self.size:
                self.size += 1
                if slot >= self.length.shape[0]:
                    self.length = np.concatenate([self.length, np.zeros_like(self.length)])
            self.slots[key] = slot
        return slot

    def release(self, key: str) -> None:
        """Free the slot of ``key`` (its terms must have been taken away first)."""
        slot = self.slots.pop(key)
        self.length[slot] = 0.0
        self._free.append(slot)

    def add(self, slot: int, terms: Mapping[str, int], sign: int = 1) -> None:
        """Add (``sign`` 1) or take away (-1) term frequencies to a slot."""
        postings, arrays = self._postings, self._arrays
        for term, tf in terms.items():
            arrays.pop(term, None)
            posting = postings.get(term)
            if posting is None:  # (only when adding)
                postings[term] = {slot: tf}
                continue
            left = posting.get(slot, 0) + sign * tf
            if left:
                posting[slot] = left
            else:
                del posting[slot]
                if not posting:
                    del postings[term]
        change = sign * sum(terms.values())
        self.length[slot] += change
        self.total += change

    def _posting(self, term: str) -> tuple[Slots, Floats] | None:
        cached = self._arrays.get(term)
        if cached is None:
            posting = self._postings.get(term)
            if posting is None:
                return None
            slots = np.fromiter(posting.keys(), dtype=np.intp, count=len(posting))
            tfs = np.fromiter(posting.values(), dtype=np.float64, count=len(posting))
            cached = self._arrays[term] = (slots, tfs)
        return cached

    def scores(self, query: Counter[str], k1: float, b: float) -> Floats:
        """The BM25 score of every slot (0 where no query term occurs)."""
        scores = np.zeros(self.size, dtype=np.float64)
        n = len(self.slots)
        avgdl = self.total / n if self.total and n else 1.0
        for term, qtf in query.items():
            posting = self._posting(term)
            if posting is None:
                continue
            slots, tfs = posting
            idf = math.log(1.0 + (n - len(slots) + 0.5) / (len(slots) + 0.5))
            norm = k1 * (1.0 - b + b * self.length[slots] / avgdl)
            scores[slots] += qtf * idf * tfs * (k1 + 1.0) / (tfs + norm)
        return scores


class LexicalIndex:
    """Chunk and document postings ranked by BM25, ``document_weight`` being ``W`` (0: chunks
    alone; module docstring); not thread-safe on its own."""

    def __init__(self, document_weight: float = DOCUMENT_WEIGHT) -> None:
        self._weight = document_weight
        self.clear()

    def clear(self) -> None:
        """Forget every chunk."""
        self._field = _Field()  # chunks
        self._docs = _Field()  # documents
        # per chunk slot: the chunk, its terms and those it adds to its document
        self._entries: list[tuple[Chunk, Counter[str], Counter[str]] | None] = []
        self._doc_of = np.zeros(64, dtype=np.intp)  # chunk slot -> document slot
        self._members: Counter[str] = Counter()  # chunks per document

    def upsert(self, chunks: Iterable[Chunk]) -> None:
        """Index (or replace) chunks, each adding its :func:`document_parts` part to its doc."""
        batch = list(chunks)
        parts = document_parts([c.text for c in batch], [c.doc_id for c in batch])
        for chunk, part in zip(batch, parts, strict=True):
            self._remove_one(chunk.id)
            terms = Counter(analyze(chunk.text))
            share = terms if len(part) == len(chunk.text) else Counter(analyze(part))
            slot = self._field.open(chunk.id)
            if slot == len(self._entries):
                self._entries.append(None)
                if slot >= self._doc_of.shape[0]:
                    self._doc_of = np.concatenate([self._doc_of, np.zeros_like(self._doc_of)])
            self._entries[slot] = (_copied(chunk), terms, share)
            self._field.add(slot, terms)
            doc_slot = self._docs.open(chunk.doc_id)
            self._docs.add(doc_slot, share)
            self._doc_of[slot] = doc_slot
            self._members[chunk.doc_id] += 1

    def _remove_one(self, chunk_id: str) -> bool:
        slot = self._field.slots.get(chunk_id)
        if slot is None:
            return False
        entry = self._entries[slot]
        assert entry is not None
        chunk, terms, share = entry
        self._field.add(slot, terms, -1)
        self._field.release(chunk_id)
        self._docs.add(int(self._doc_of[slot]), share, -1)
        self._entries[slot] = None
        self._members[chunk.doc_id] -= 1
        if not self._members[chunk.doc_id]:
            del self._members[chunk.doc_id]
            self._docs.release(chunk.doc_id)
        return True

    def remove(self, ids: Iterable[str]) -> int:
        """Forget chunks by id (unknown ids are ignored); returns how many were removed."""
        return sum(1 for chunk_id in ids if self._remove_one(chunk_id))

    def scored(self, query: str, k1: float, b: float) -> tuple[Slots, Floats]:
        """The chunks holding a query term (slots, ascending) and their scores."""
        terms = Counter(analyze(query))
        chunk_scores = self._field.scores(terms, k1, b)
        slots = np.flatnonzero(chunk_scores > 0.0)  # (idf > 0: every chunk holding a term)
        scores = chunk_scores[slots]
        if self._weight:
            doc_scores = self._docs.scores(terms, k1, b)
            scores = scores + self._weight * doc_scores[self._doc_of[slots]]
        return slots, scores

    def top(
        self, slots: Slots, scores: Floats, k: int, filter: Mapping[str, Any] | None
    ) -> list[ScoredChunk]:
        """The ``k`` best of :meth:`scored`'s chunks (those equal to ``filter``), ties by id."""
        if filter:
            keep = [matches_filter(self._chunk(s).metadata, filter) for s in slots.tolist()]
            slots, scores = slots[keep], scores[keep]
        if slots.shape[0] > k:
            cutoff = np.partition(scores, slots.shape[0] - k)[slots.shape[0] - k]
            slots, scores = slots[scores >= cutoff], scores[scores >= cutoff]
        pairs = zip(slots.tolist(), scores.tolist(), strict=True)
        ranked = sorted(pairs, key=lambda p: (-p[1], self._chunk(p[0]).id))[:k]
        return [ScoredChunk(_copied(self._chunk(s)), score) for s, score in ranked]

    def scores_in(self, slots: Slots, scores: Floats, ids: Sequence[str]) -> dict[str, float]:
        """The score of each chunk of ``ids`` among :meth:`scored`'s (ascending slots)."""
        wanted = [(i, self._field.slots[i]) for i in ids if i in self._field.slots]
        if not wanted or not slots.shape[0]:
            return {}
        at = np.minimum(np.searchsorted(slots, [s for _, s in wanted]), slots.shape[0] - 1)
        return {
            chunk_id: float(scores[pos])
            for (chunk_id, slot), pos in zip(wanted, at.tolist(), strict=True)
            if slots[pos] == slot
        }

    def _chunk(self, slot: int) -> Chunk:
        entry = self._entries[slot]
        assert entry is not None
        return entry[0]


def _copied(c: Chunk) -> Chunk:
    """A copy whose metadata later edits of ``c`` do not reach (without its embedding)."""
    return Chunk(c.text, doc_id=c.doc_id, metadata=dict(c.metadata), id=c.id)


class LexicalMirror:
    """A store's BM25 index, built from ``load()`` (every chunk) on the first lexical search,
    then told each committed write under the store's write lock (nothing before that); a
    failed write or another process's change resets it."""

    def __init__(self, load: Callable[[], Iterable[Chunk]]) -> None:
        self._load = load
        self._index: LexicalIndex | None = None

    def upsert(self, chunks: Sequence[Chunk]) -> None:
        """Apply a committed upsert."""
        if self._index is not None:
            self._index.upsert(chunks)

    def remove(self, ids: Sequence[str]) -> None:
        """Apply a committed delete."""
        if self._index is not None:
            self._index.remove(ids)

    def clear(self) -> None:
        """Apply a committed clear."""
        if self._index is not None:
            self._index.clear()

    def reset(self) -> None:
        """Forget the index: the next search rebuilds it from the store."""
        self._index = None

    def index(self) -> LexicalIndex:
        """The index, built from the store's chunks if it is not."""
        if self._index is None:
            index = LexicalIndex()
            index.upsert(self._load())
            self._index = index
        return self._index


class InProcessRetrieval(BaseVectorStore):
    """``lexical_search`` and ``retrieve`` over a store's own structures (in-memory, FAISS): one
    read for both sides' candidates and missing scores, fused. The store sets ``_lexical``."""

    _lexical: LexicalMirror
    _lock: AbstractContextManager[Any]
    #: the store's cosines of a query to chunks by id (a method here would hide ExactSearch's)
    _similarities: Callable[[Sequence[float], list[str]], dict[str, float]]

    @property
    def lexical(self) -> bool:
        """Lexical (BM25) search is available."""
        return True

    def _before_lexical(self) -> None:
        """Hook run in the read before a lexical search."""

    def _reading(self) -> AbstractContextManager[Any]:
        """What one read of the store holds (by default ``_lock``)."""
        return self._lock

    def _retrieve(self, query: StoreQuery) -> list[ScoredChunk]:
        where = checked_filter(query.filter)
        vector = [] if query.vector is None else list(query.vector)
        with self._reading():
            dense: list[ScoredChunk] = []
            if query.mode != "lexical":
                found = self.search(vector, query.depth, where)  # type-exact filter
                dense = [h for h in found if h.score >= query.min_score]
                if query.mode == "dense":
                    return dense
            self._before_lexical()
            index = self._lexical.index()
            slots, scores = index.scored(query.text or "", query.k1, query.b)
            lexical = index.top(slots, scores, query.depth, where)
            if query.mode == "lexical":
                return lexical
            need_cos, need_bm = (
                one_sided(dense, lexical) if query.fusion == "rescored" else ([], [])
            )
            cosines = self._similarities(vector, need_cos) if need_cos else {}
            bm25 = index.scores_in(slots, scores, need_bm)
        return fuse(
            query.fusion,
            dense,
            lexical,
            cosines,
            bm25,
            weights=query.weights,
            rrf_k=query.rrf_k,
            k=query.k,
        )
