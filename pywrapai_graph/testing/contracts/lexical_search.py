"""The lexical (BM25) part of the vector-store contract.

Every store whose ``lexical`` flag is True must rank like the textbook BM25 below (same
analyzer, same formula: a chunk's BM25 plus ``DOCUMENT_WEIGHT`` times its document's, see
:func:`reference_bm25`) and keep that ranking in step with adds, replacements and deletes.
A store computing BM25 from exact statistics at query time (``lexical_exact``, the default)
must return exactly its list (ties by chunk id); an engine that weighs terms when a chunk is
written (Qdrant's sparse vectors) takes the length statistics of that moment, so after later
writes it must agree on quality — at least 8 of the reference top 10, the same best hit, and
scores within 5% — not on the exact list. ``lexical_fixed_bm25`` stores serve the default
k1 and b only, and refuse others with a ValueError. A backend whose engine has no document
field yet declares ``lexical_document_field = False`` (checked against the chunks alone).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from pywrapai_graph.application.text_analysis import DOCUMENT_WEIGHT, analyze, document_parts
from pywrapai_graph.domain import Chunk
from pywrapai_graph.errors import UnsupportedOperationError
from pywrapai_graph.ports import BaseVectorStore

__all__ = ["LexicalSearchContract", "lexical_corpus", "reference_bm25"]

_WORDS = (  # noqa: SIM905 - word lists read best as text
    "wing flow flows flowing boundary layer layers heat heated transfer shock wave waves "
    "pressure supersonic subsonic plate plates cylinder cone vortex turbulent laminar jet "
    "nozzle drag lift buckling shell shells panel stress"
).split()
_FILLER = "the of a in on with is are was for by an to from and".split()  # noqa: SIM905
QUERIES = (
    "heat transfer in laminar boundary layers",
    "shock waves on a cone at supersonic speed",
    "buckling of shells under pressure",
    "turbulent flow of a jet from a nozzle",
    "drag and lift of a wing panel",
)


def lexical_corpus(n: int = 60, dim: int = 16, seed: int = 7) -> list[Chunk]:
    """``n`` short chunks from a small aeronautics vocabulary (with plural/verb variants and
    stop words), random unit embeddings, spread over 6 documents with a ``part`` field."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, dim))
    chunks = []
    for i in range(n):
        length = int(rng.integers(6, 18))
        words = [
            str(rng.choice(_FILLER)) if rng.random() < 0.3 else str(rng.choice(_WORDS))
            for _ in range(length)
        ]
        chunks.append(
            Chunk(
                " ".join(words).capitalize() + ".",
                doc_id=f"doc-{i % 6}",
                metadata={"part": "even" if i % 2 == 0 else "odd", "doc": f"doc-{i % 6}"},
                id=f"lex-{i:03d}",
                embedding=vectors[i].tolist(),
            )
        )
    return chunks


def _bm25(units: Mapping[str, Counter[str]], query: str, k1: float, b: float) -> dict[str, float]:
    """Okapi BM25 (Lucene's idf) of every unit sharing a term with ``query``."""
    n = len(units)
    avgdl = (sum(sum(t.values()) for t in units.values()) / n) if n else 1.0
    avgdl = avgdl or 1.0
    scores = {}
    for key, terms in units.items():
        score = 0.0
        for term in analyze(query):
            tf = terms.get(term, 0)
            if tf == 0:
                continue
            df = sum(1 for t in units.values() if term in t)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * sum(terms.values()) / avgdl))
        if score > 0:
            scores[key] = score
    return scores


def reference_bm25(
    chunks: list[Chunk],
    query: str,
    k: int,
    *,
    k1: float = 1.2,
    b: float = 0.75,
    filter: Mapping[str, Any] | None = None,
    document_weight: float = DOCUMENT_WEIGHT,
) -> list[tuple[str, float]]:
    """Textbook BM25 with a document field, written out plainly: the ranking every store
    must reproduce. A chunk of document ``D`` holding a query term scores
    ``BM25(chunk) + document_weight · BM25(D)``, ``D`` being its chunks' parts (each chunk
    without the overlap it repeats from the chunk before it, :func:`document_parts`, in the
    order of ``chunks``; term counts and lengths summed) scored among the store's documents;
    0 gives the chunks alone."""
    units = {c.id: Counter(analyze(c.text)) for c in chunks}
    parts = document_parts([c.text for c in chunks], [c.doc_id for c in chunks])
    documents: dict[str, Counter[str]] = {}
    for c, part in zip(chunks, parts, strict=True):
        documents.setdefault(c.doc_id, Counter()).update(analyze(part))
    chunk_scores = _bm25(units, query, k1, b)
    doc_scores = _bm25(documents, query, k1, b) if document_weight else {}
    scored = []
    for c in chunks:
        if c.id not in chunk_scores:
            continue
        if filter and any(c.metadata.get(key) != value for key, value in filter.items()):
            continue
        score = chunk_scores[c.id] + document_weight * doc_scores.get(c.doc_id, 0.0)
        scored.append((c.id, score))
    scored.sort(key=lambda pair: (-pair[1], pair[0]))
    return scored[:k]


def _ranking(store: BaseVectorStore, query: str, k: int = 10, **kw: Any) -> list[tuple[str, float]]:
    return [(h.chunk.id, h.score) for h in store.lexical_search(query, k, **kw)]


def _assert_same(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> None:
    assert [i for i, _ in got] == [i for i, _ in want]
    assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-9)


def _assert_close(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> None:
    """The same quality: 8 of the reference top 10 (all of a shorter list), its best hit
    first (or one tied with it), every shared chunk's score within 5%."""
    assert len(got) == len(want)
    shared = {i for i, _ in got} & {i for i, _ in want}
    assert len(shared) >= min(len(want), 8), (got, want)
    if want:
        assert dict(want)[got[0][0]] == pytest.approx(want[0][1], rel=0.05), (got, want)
    reference = dict(want)
    for chunk_id, score in got:
        if chunk_id in shared:
            assert score == pytest.approx(reference[chunk_id], rel=0.05), (got, want)


class LexicalSearchContract:
    """Mixed into :class:`VectorStoreContract`; uses its ``store``/``new_store`` fixtures."""

    dim: ClassVar[int] = 16
    #: BM25 from exact statistics at query time: the reference list itself (module docstring)
    lexical_exact: ClassVar[bool] = True
    #: only the default k1 and b are served
    lexical_fixed_bm25: ClassVar[bool] = False
    #: the store scores a chunk with its document field (``reference_bm25``). A backend
    #: whose engine does not compute it yet says False: it is checked against the chunks
    #: alone, and the document-field quality case is a strict expected failure for it.
    lexical_document_field: ClassVar[bool] = True

    def _reference(
        self, chunks: list[Chunk], query: str, k: int, **kw: Any
    ) -> list[tuple[str, float]]:
        weight = DOCUMENT_WEIGHT if self.lexical_document_field else 0.0
        return reference_bm25(chunks, query, k, document_weight=weight, **kw)

    def _check(self, got: list[tuple[str, float]], want: list[tuple[str, float]]) -> None:
        (_assert_same if self.lexical_exact else _assert_close)(got, want)

    def new_store(self, location: Path) -> BaseVectorStore:
        raise NotImplementedError

    @pytest.fixture
    def lexical_store(self, store: BaseVectorStore) -> BaseVectorStore:
        if not store.lexical:  # the declared capability must hold: lexical_search refuses
            with pytest.raises(UnsupportedOperationError):
                store.lexical_search("anything")
            pytest.skip(f"{type(store).__name__} declares no lexical search (lexical=False)")
        return store

    def test_lexical_top10_equals_the_reference_bm25(self, lexical_store: BaseVectorStore) -> None:
        corpus = lexical_corpus(dim=self.dim)
        lexical_store.add(corpus)
        for query in QUERIES:
            self._check(_ranking(lexical_store, query), self._reference(corpus, query, 10))
        if self.lexical_fixed_bm25:
            with pytest.raises(ValueError, match=r"k1=0\.9"):
                lexical_store.lexical_search(QUERIES[0], k1=0.9, b=0.4)
            return
        # k1 and b are honoured per query
        self._check(
            _ranking(lexical_store, QUERIES[0], k1=0.9, b=0.4),
            self._reference(corpus, QUERIES[0], 10, k1=0.9, b=0.4),
        )

    def test_lexical_hits_carry_the_chunk(self, lexical_store: BaseVectorStore) -> None:
        corpus = lexical_corpus(dim=self.dim)
        lexical_store.add(corpus)
        hit = lexical_store.lexical_search(QUERIES[1], k=1)[0]
        original = next(c for c in corpus if c.id == hit.chunk.id)
        assert (hit.chunk.text, hit.chunk.doc_id, hit.chunk.metadata) == (
            original.text,
            original.doc_id,
            original.metadata,
        )
        assert hit.chunk.embedding is None
        assert lexical_store.lexical_search("unrelated zebra words", k=5) == []

    def test_lexical_filter_applies(self, lexical_store: BaseVectorStore) -> None:
        corpus = lexical_corpus(dim=self.dim)
        lexical_store.add(corpus)
        got = _ranking(lexical_store, QUERIES[2], filter={"part": "odd"})
        self._check(got, self._reference(corpus, QUERIES[2], 10, filter={"part": "odd"}))
        assert got

    def test_lexical_stays_in_step_with_writes(self, lexical_store: BaseVectorStore) -> None:
        corpus = lexical_corpus(dim=self.dim)
        lexical_store.add(corpus[:30])
        live = {c.id: c for c in corpus[:30]}

        def check() -> None:
            for query in QUERIES:
                want = self._reference(list(live.values()), query, 10)
                self._check(_ranking(lexical_store, query), want)

        check()  # the index is built now; every later write must update it
        lexical_store.add(corpus[30:])
        live.update({c.id: c for c in corpus[30:]})
        check()
        replaced = Chunk(
            "Vortex vortex vortex shedding behind a cylinder.",
            doc_id=corpus[3].doc_id,
            metadata=dict(corpus[3].metadata),
            id=corpus[3].id,
            embedding=corpus[3].embedding,
        )
        lexical_store.add([replaced])
        live[replaced.id] = replaced
        check()
        assert _ranking(lexical_store, "vortex shedding", k=1)[0][0] == replaced.id
        lexical_store.delete([corpus[5].id, corpus[8].id, "no-such-id"])
        del live[corpus[5].id], live[corpus[8].id]
        check()
        lexical_store.delete_by_doc("doc-1")
        live = {i: c for i, c in live.items() if c.doc_id != "doc-1"}
        check()
        bad = Chunk("heat heat heat", doc_id="doc-9", id="bad", embedding=[math.nan] * self.dim)
        with pytest.raises(ValueError, match="NaN"):
            lexical_store.add([corpus[0], bad])
        check()  # a rejected batch changes neither side
        lexical_store.clear()
        live = {}
        assert lexical_store.lexical_search(QUERIES[0], k=10) == []
        lexical_store.add(corpus[:10])
        live = {c.id: c for c in corpus[:10]}
        check()

    def test_lexical_follows_replace_document(self, lexical_store: BaseVectorStore) -> None:
        from pywrapai_graph.testing.contracts.vector_store import manifest_for

        corpus = lexical_corpus(dim=self.dim)
        lexical_store.add(corpus)
        lexical_store.lexical_search(QUERIES[0], k=1)  # build the index first
        new = [
            Chunk(
                f"Hypersonic ablation study part {i}.",
                doc_id="doc-2",
                metadata={"part": "new", "doc": "doc-2"},
                id=f"doc-2-new-{i}",
                embedding=corpus[i].embedding,
            )
            for i in range(2)
        ]
        lexical_store.replace_document(manifest_for("doc-2", new, self.dim), new)
        live = [c for c in corpus if c.doc_id != "doc-2"] + new
        for query in (*QUERIES, "hypersonic ablation"):
            self._check(_ranking(lexical_store, query), self._reference(live, query, 10))

    def test_lexical_survives_reopening(self, location: Path) -> None:
        corpus = lexical_corpus(dim=self.dim)
        first = self.new_store(location)
        if not first.lexical:
            first.close()
            pytest.skip(f"{type(first).__name__} declares no lexical search (lexical=False)")
        first.add(corpus)
        before = _ranking(first, QUERIES[3])
        first.close()
        again = self.new_store(location)
        try:
            if again.persistent:
                self._check(_ranking(again, QUERIES[3]), before)
            else:
                assert again.lexical_search(QUERIES[3], k=10) == []
        finally:
            again.close()

    def test_lexical_rejects_bad_arguments(self, lexical_store: BaseVectorStore) -> None:
        lexical_store.add(lexical_corpus(10, dim=self.dim))
        for kwargs in ({"k": 0}, {"k1": -1.0}, {"b": 1.5}):
            with pytest.raises(ValueError, match=r"k must|BM25 needs"):
                lexical_store.lexical_search(QUERIES[0], **kwargs)
