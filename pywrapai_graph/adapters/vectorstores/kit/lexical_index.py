"""BM25 lexical search computed in the process, for the stores without an engine underneath
(in-memory, SQLite, FAISS); the engines compute it themselves (see the engines' packages).

Terms come from :func:`pywrapai_graph.application.text_analysis.analyze`.

Ranking: a chunk ``c`` of document ``D`` scores its own BM25 plus a document field, the BM25
of the whole document (its chunks together, grouped by ``doc_id``), weighted by
:data:`~pywrapai_graph.application.text_analysis.DOCUMENT_WEIGHT` ``W``::

    score(q, c) = BM25(q, c) + W · BM25_doc(q, D)

Both are Okapi BM25 with Lucene's non-negative idf, for query terms ``t`` (a term repeated
in the query counts each time) and a unit ``u`` (a chunk, or a document)::

    BM25(q, u) = Σ_t idf(t) · tf(t, u) · (k1 + 1) / (tf(t, u) + k1 · (1 − b + b · |u| / avgdl))
    idf(t)     = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))

For chunks, ``N`` is the number of chunks in the store, ``df`` how many contain the term,
``|u|`` the chunk's token count after analysis and ``avgdl`` their mean. For documents, each
chunk adds its part (:func:`~pywrapai_graph.application.text_analysis.document_parts`: its
text without the start it repeats from the previous chunk of its document in the same write,
so a chunker's overlap counts once): ``tf(t, D)`` and ``|D|`` are the sums over D's parts,
``N`` the number of documents, ``df`` how many documents have a part containing the term and
``avgdl`` the mean ``|D|``. With one chunk per document both fields agree and the score is
``(1 + W) · BM25``: the ranking of whole documents is plain BM25. Candidates are the chunks
holding at least one query term; statistics cover the whole store; a metadata filter selects
among the scored chunks. Ties are broken by chunk id. A query reads only the postings of its
terms (and makes one pass over a score array per field): both fields keep their postings and
lengths up to date on every write, nothing is rebuilt per query.

Each of these stores derives this index from the chunks it holds (the store stays the one
source of truth): :class:`LexicalMirror` builds it on the first lexical search (the stored
chunks in their stored order, as one write) and then applies each successful write of this
process; a failed write, or a change made by another process that the store detects, makes
it rebuild.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from pywrapai_graph.application.fusion import fuse, one_sided
from pywrapai_graph.application.text_analysis import DOCUMENT_WEIGHT, analyze, document_parts
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.ports import MetadataFilter
from pywrapai_graph.ports.store_inputs import checked_filter, matches_filter
from pywrapai_graph.ports.store_query import StoreQuery

__all__ = ["InProcessRetrieval", "LexicalIndex", "LexicalMirror", "LexicalSearch"]

Slots = npt.NDArray[np.intp]
Floats = npt.NDArray[np.float64]


class _Field:
    """One BM25 field: units (chunks, or documents) keyed by id, each in a slot with its term
    frequencies (postings) and length, kept current as terms are added and taken away."""

    def __init__(self) -> None:
        self.slots: dict[str, int] = {}
        self._free: list[int] = []
        self.size = 0  # slots ever allocated (live or free)
        self.length = np.zeros(64, dtype=np.float64)
        self.total = 0
        self._postings: dict[str, dict[int, int]] = {}
        self._arrays: dict[str, tuple[Slots, Floats]] = {}

    def __len__(self) -> int:
        return len(self.slots)

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
    """An inverted index of analysed chunks and of their documents, ranked by BM25 with a
    document field (module docstring); not thread-safe on its own.

    Args:
        document_weight: ``W``, the weight of the document field (0: chunks alone).
    """

    def __init__(self, document_weight: float = DOCUMENT_WEIGHT) -> None:
        self._weight = document_weight
        self.clear()

    def clear(self) -> None:
        """Forget every chunk."""
        self._field = _Field()  # chunks
        self._docs = _Field()  # documents
        self._chunks: list[Chunk | None] = []
        self._terms: list[Counter[str] | None] = []  # per chunk slot: its terms
        self._shares: list[Counter[str] | None] = []  # and those it adds to its document
        self._doc_of = np.zeros(64, dtype=np.intp)  # chunk slot -> document slot
        self._members: Counter[str] = Counter()  # chunks per document

    def __len__(self) -> int:
        return len(self._field)

    def upsert(self, chunks: Iterable[Chunk]) -> None:
        """Index chunks (an id already present is replaced); each adds to its document the
        part :func:`document_parts` gives it within this batch (its overlap counted once)."""
        batch = list(chunks)
        parts = document_parts([c.text for c in batch], [c.doc_id for c in batch])
        for chunk, part in zip(batch, parts, strict=True):
            self._remove_one(chunk.id)
            terms = Counter(analyze(chunk.text))
            share = terms if len(part) == len(chunk.text) else Counter(analyze(part))
            slot = self._field.open(chunk.id)
            if slot == len(self._chunks):
                self._chunks.append(None)
                self._terms.append(None)
                self._shares.append(None)
                if slot >= self._doc_of.shape[0]:
                    self._doc_of = np.concatenate([self._doc_of, np.zeros_like(self._doc_of)])
            self._chunks[slot] = Chunk(
                chunk.text, doc_id=chunk.doc_id, metadata=dict(chunk.metadata), id=chunk.id
            )
            self._terms[slot], self._shares[slot] = terms, share
            self._field.add(slot, terms)
            doc_slot = self._docs.open(chunk.doc_id)
            self._docs.add(doc_slot, share)
            self._doc_of[slot] = doc_slot
            self._members[chunk.doc_id] += 1

    def _remove_one(self, chunk_id: str) -> bool:
        slot = self._field.slots.get(chunk_id)
        if slot is None:
            return False
        chunk, terms, share = self._chunks[slot], self._terms[slot], self._shares[slot]
        assert chunk is not None
        assert terms is not None
        assert share is not None
        self._field.add(slot, terms, -1)
        self._field.release(chunk_id)
        self._docs.add(int(self._doc_of[slot]), share, -1)
        self._chunks[slot] = self._terms[slot] = self._shares[slot] = None
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

    def search(
        self,
        query: str,
        k: int,
        filter: Mapping[str, Any] | None = None,
        *,
        k1: float = 1.2,
        b: float = 0.75,
    ) -> list[ScoredChunk]:
        """The ``k`` best chunks (only chunks sharing a term with the query)."""
        return self.top(*self.scored(query, k1, b), k, filter)

    def top(
        self, slots: Slots, scores: Floats, k: int, filter: Mapping[str, Any] | None
    ) -> list[ScoredChunk]:
        """The ``k`` best of :meth:`scored`'s chunks (those equal to ``filter``)."""
        if filter:
            keep = [matches_filter(self._chunk(s).metadata, filter) for s in slots.tolist()]
            slots, scores = slots[keep], scores[keep]
        if slots.shape[0] > k:
            cutoff = np.partition(scores, slots.shape[0] - k)[slots.shape[0] - k]
            slots, scores = slots[scores >= cutoff], scores[scores >= cutoff]
        pairs = zip(slots.tolist(), scores.tolist(), strict=True)
        ranked = sorted(pairs, key=lambda p: (-p[1], self._chunk(p[0]).id))[:k]
        return [ScoredChunk(self._copy(s), score) for s, score in ranked]

    def scores_of(self, query: str, ids: Sequence[str], k1: float, b: float) -> dict[str, float]:
        """The score of each indexed chunk of ``ids`` that shares a term with ``query``."""
        return self.scores_in(*self.scored(query, k1, b), ids) if ids else {}

    def scores_in(self, slots: Slots, scores: Floats, ids: Sequence[str]) -> dict[str, float]:
        """:meth:`scores_of` from :meth:`scored`'s chunks (ascending slots) and scores."""
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
        chunk = self._chunks[slot]
        assert chunk is not None
        return chunk

    def _copy(self, slot: int) -> Chunk:
        c = self._chunk(slot)
        return Chunk(c.text, doc_id=c.doc_id, metadata=dict(c.metadata), id=c.id)


class LexicalMirror:
    """A store's BM25 index, built from the store on first use and kept in step with its writes.

    It watches the store's writes: each committed change is told to it (the in-memory and
    SQLite stores' :class:`ExactIndex` tells it, FAISS's transaction once it commits), a
    failed write or another process's change resets it. Not locked on its own: it is told
    under the lock that guards the store's writes. Until the first lexical search nothing is
    indexed and writes cost nothing here.

    Args:
        load: returns every chunk the store holds (text, doc id, metadata, id).
    """

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
            return self._lexical.index().search(query, k, filter, k1=k1, b=b)


class InProcessRetrieval(LexicalSearch):
    """``retrieve`` answered in one pass over the store's own structures (in-memory, FAISS).

    One read (:meth:`_reading`: the store's lock, and for FAISS one committed generation)
    takes the dense candidates from the matrix, the lexical ones from the BM25 index (the
    query scored once: its top and the dense candidates' missing scores both come from that
    one score array), the lexical candidates' missing cosines from the matrix, and fuses them
    with :mod:`pywrapai_graph.application.fusion`.
    """

    if TYPE_CHECKING:  # the store's

        def search(
            self, query_vector: Sequence[float], k: int = 4, filter: MetadataFilter | None = None
        ) -> list[ScoredChunk]: ...

        def _similarities(
            self, query_vector: Sequence[float], ids: list[str]
        ) -> dict[str, float]: ...

    def _reading(self) -> AbstractContextManager[Any]:
        """Hold what one read of the store holds (by default its lock)."""
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
            cosines: dict[str, float] = {}
            bm25: dict[str, float] = {}
            if query.fusion == "rescored":
                need_cosine, need_bm25 = one_sided(dense, lexical)
                cosines = self._similarities(vector, need_cosine) if need_cosine else {}
                bm25 = index.scores_in(slots, scores, need_bm25)
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
