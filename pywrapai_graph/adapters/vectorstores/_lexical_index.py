"""BM25 lexical search computed in the process, for the stores without an engine underneath
(in-memory, SQLite, FAISS); the engines compute it themselves (see ``_engine_lexical``).

Terms come from :func:`pywrapai_graph.application.text_analysis.analyze`.

Ranking (Okapi BM25, with Lucene's non-negative idf), for a query with terms ``t`` (a term
repeated in the query counts each time) and a chunk ``d``::

    score(q, d) = Σ_t idf(t) · tf(t, d) · (k1 + 1) / (tf(t, d) + k1 · (1 − b + b · |d| / avgdl))
    idf(t)      = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))

``N`` is the number of chunks in the store, ``df`` how many contain the term, ``|d|`` the
chunk's token count after analysis and ``avgdl`` their mean. Statistics cover the whole store;
a metadata filter selects among the scored chunks. Ties are broken by chunk id.

Each of these stores derives this index from the chunks it holds (the store stays the one
source of truth): :class:`LexicalMirror` builds it on the first lexical search and then applies each
successful write of this process; a failed write, or a change made by another process that
the store detects, makes it rebuild.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt

from pywrapai_graph.application.text_analysis import analyze
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.ports import MetadataFilter
from pywrapai_graph.ports.store_inputs import matches_filter

__all__ = ["LexicalIndex", "LexicalMirror", "LexicalSearch"]


class LexicalIndex:
    """An inverted index of analysed chunks with BM25 ranking (not thread-safe on its own)."""

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        """Forget every chunk."""
        self._slot: dict[str, int] = {}
        self._free: list[int] = []
        self._chunks: list[Chunk | None] = []
        self._terms: list[Counter[str] | None] = []
        self._length = np.zeros(64, dtype=np.float64)
        self._postings: dict[str, dict[int, int]] = {}
        self._arrays: dict[str, tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]] = {}
        self._by_doc: dict[str, set[str]] = {}
        self._total = 0

    def __len__(self) -> int:
        return len(self._slot)

    def upsert(self, chunks: Iterable[Chunk]) -> None:
        """Index chunks (an id already present is replaced)."""
        for chunk in chunks:
            self._remove_one(chunk.id)
            terms = Counter(analyze(chunk.text))
            slot = self._free.pop() if self._free else len(self._chunks)
            if slot == len(self._chunks):
                self._chunks.append(None)
                self._terms.append(None)
                if slot >= self._length.shape[0]:
                    self._length = np.concatenate([self._length, np.zeros_like(self._length)])
            self._chunks[slot] = Chunk(
                chunk.text, doc_id=chunk.doc_id, metadata=dict(chunk.metadata), id=chunk.id
            )
            self._terms[slot] = terms
            self._slot[chunk.id] = slot
            length = sum(terms.values())
            self._length[slot] = length
            self._total += length
            for term, tf in terms.items():
                self._postings.setdefault(term, {})[slot] = tf
                self._arrays.pop(term, None)
            self._by_doc.setdefault(chunk.doc_id, set()).add(chunk.id)

    def _remove_one(self, chunk_id: str) -> bool:
        slot = self._slot.pop(chunk_id, None)
        if slot is None:
            return False
        chunk, terms = self._chunks[slot], self._terms[slot]
        assert chunk is not None
        assert terms is not None
        for term in terms:
            posting = self._postings[term]
            del posting[slot]
            if not posting:
                del self._postings[term]
            self._arrays.pop(term, None)
        self._total -= int(self._length[slot])
        self._length[slot] = 0.0
        self._chunks[slot] = self._terms[slot] = None
        self._free.append(slot)
        members = self._by_doc[chunk.doc_id]
        members.discard(chunk_id)
        if not members:
            del self._by_doc[chunk.doc_id]
        return True

    def remove(self, ids: Iterable[str]) -> int:
        """Forget chunks by id (unknown ids are ignored); returns how many were removed."""
        return sum(1 for chunk_id in ids if self._remove_one(chunk_id))

    def remove_doc(self, doc_id: str) -> int:
        """Forget every chunk of one document."""
        return self.remove(sorted(self._by_doc.get(doc_id, ())))

    def _posting(self, term: str) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]] | None:
        cached = self._arrays.get(term)
        if cached is None:
            posting = self._postings.get(term)
            if posting is None:
                return None
            slots = np.fromiter(posting.keys(), dtype=np.intp, count=len(posting))
            tfs = np.fromiter(posting.values(), dtype=np.float64, count=len(posting))
            cached = self._arrays[term] = (slots, tfs)
        return cached

    def scores(self, query: str, k1: float, b: float) -> npt.NDArray[np.float64]:
        """The BM25 score of every slot (0 where no query term occurs)."""
        scores = np.zeros(len(self._chunks), dtype=np.float64)
        n = len(self._slot)
        if n == 0:
            return scores
        avgdl = self._total / n if self._total else 1.0
        for term, qtf in Counter(analyze(query)).items():
            posting = self._posting(term)
            if posting is None:
                continue
            slots, tfs = posting
            idf = math.log(1.0 + (n - len(slots) + 0.5) / (len(slots) + 0.5))
            norm = k1 * (1.0 - b + b * self._length[slots] / avgdl)
            scores[slots] += qtf * idf * tfs * (k1 + 1.0) / (tfs + norm)
        return scores

    def search(
        self,
        query: str,
        k: int,
        filter: Mapping[str, Any] | None = None,
        *,
        k1: float = 1.2,
        b: float = 0.75,
    ) -> list[ScoredChunk]:
        """The ``k`` best chunks by BM25 (only chunks sharing a term with the query)."""
        scores = self.scores(query, k1, b)
        hits = np.flatnonzero(scores > 0.0)
        if filter:
            hits = np.asarray(
                [s for s in hits.tolist() if matches_filter(self._chunk(s).metadata, filter)],
                dtype=np.intp,
            )
        if hits.shape[0] > k:
            cutoff = np.partition(scores[hits], hits.shape[0] - k)[hits.shape[0] - k]
            hits = hits[scores[hits] >= cutoff]
        slots: list[int] = hits.tolist()
        ranked = sorted(slots, key=lambda s: (-scores[s], self._chunk(s).id))[:k]
        return [ScoredChunk(self._copy(s), float(scores[s])) for s in ranked]

    def scores_of(self, query: str, ids: Sequence[str], k1: float, b: float) -> dict[str, float]:
        """The BM25 score of each indexed chunk of ``ids`` that shares a term with ``query``."""
        found = [(i, self._slot[i]) for i in ids if i in self._slot]
        if not found:
            return {}
        scores = self.scores(query, k1, b)
        return {i: float(scores[s]) for i, s in found if scores[s] > 0.0}

    def _chunk(self, slot: int) -> Chunk:
        chunk = self._chunks[slot]
        assert chunk is not None
        return chunk

    def _copy(self, slot: int) -> Chunk:
        c = self._chunk(slot)
        return Chunk(c.text, doc_id=c.doc_id, metadata=dict(c.metadata), id=c.id)


class LexicalChanges:
    """The lexical effect of one store write, applied only when the write succeeds."""

    def __init__(self, mirror: LexicalMirror) -> None:
        self._mirror = mirror
        self.steps: list[Callable[[], object]] = []

    def upsert(self, chunks: Sequence[Chunk]) -> None:
        self.steps.append(partial(self._mirror.upsert, list(chunks)))

    def remove(self, ids: Sequence[str]) -> None:
        self.steps.append(partial(self._mirror.remove, list(ids)))

    def remove_doc(self, doc_id: str) -> None:
        self.steps.append(partial(self._mirror.remove_doc, doc_id))

    def clear(self) -> None:
        self.steps.append(self._mirror.clear)


class LexicalMirror:
    """A store's BM25 index, built from the store on first use and kept in step with its writes.

    Not locked on its own: the store calls it under the lock that guards its writes. Until
    the first lexical search nothing is indexed and writes cost nothing here.

    Args:
        load: returns every chunk the store holds (text, doc id, metadata, id).
    """

    def __init__(self, load: Callable[[], Iterable[Chunk]]) -> None:
        self._load = load
        self._index: LexicalIndex | None = None

    @contextmanager
    def writing(self) -> Iterator[LexicalChanges]:
        """Record a write's changes; apply them if the block succeeds, else rebuild later."""
        changes = LexicalChanges(self)
        try:
            yield changes
        except BaseException:
            self.reset()
            raise
        for step in changes.steps:
            step()

    def upsert(self, chunks: Sequence[Chunk]) -> None:
        """Apply a committed upsert."""
        if self._index is not None:
            self._index.upsert(chunks)

    def remove(self, ids: Sequence[str]) -> None:
        """Apply a committed delete."""
        if self._index is not None:
            self._index.remove(ids)

    def remove_doc(self, doc_id: str) -> None:
        """Apply a committed delete of one document's chunks."""
        if self._index is not None:
            self._index.remove_doc(doc_id)

    def clear(self) -> None:
        """Apply a committed clear."""
        if self._index is not None:
            self._index.clear()

    def reset(self) -> None:
        """Forget the index: the next search rebuilds it from the store."""
        self._index = None

    def _built(self) -> LexicalIndex:
        if self._index is None:
            index = LexicalIndex()
            index.upsert(self._load())
            self._index = index
        return self._index

    def search(
        self, query: str, k: int, filter: Mapping[str, Any] | None, k1: float, b: float
    ) -> list[ScoredChunk]:
        """BM25 top ``k`` (see the module docstring)."""
        return self._built().search(query, k, filter, k1=k1, b=b)

    def scores_of(self, query: str, ids: Sequence[str], k1: float, b: float) -> dict[str, float]:
        """:meth:`LexicalIndex.scores_of` (a store's ``_lexical_scores``)."""
        return self._built().scores_of(query, ids, k1, b)


class LexicalSearch:
    """Mixin giving a store ``lexical_search`` through its ``_lexical`` mirror.

    The store sets ``self._lexical`` and ``self._lock`` (the lock of its writes) and may
    override ``_before_lexical`` to notice changes made by other processes.
    """

    _lexical: LexicalMirror
    _lock: AbstractContextManager[Any]

    @property
    def lexical(self) -> bool:
        """Lexical (BM25) search is available."""
        return True

    def _before_lexical(self) -> None:
        """Hook run under the lock before a lexical search."""

    def _lexical_search(
        self, query: str, k: int, filter: MetadataFilter | None, *, k1: float, b: float
    ) -> list[ScoredChunk]:
        """The ``k`` chunks whose text best matches ``query`` by BM25, best first."""
        with self._lock:
            self._before_lexical()
            return self._lexical.search(query, k, filter, k1, b)

    def _lexical_scores(
        self, query: str, ids: list[str], *, k1: float, b: float
    ) -> dict[str, float]:
        """The BM25 score of each chunk of ``ids`` sharing a term with ``query``."""
        with self._lock:
            self._before_lexical()
            return self._lexical.scores_of(query, ids, k1, b)
