"""The document field of the in-process BM25 index, against hand-computed numbers.

A chunk of document D scores ``BM25(chunk) + W · BM25(D)``, D being its chunks together;
see ``_lexical_index``'s docstring.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pywrapai_graph import InMemoryVectorStore
from pywrapai_graph.adapters.sources.beir import load_beir
from pywrapai_graph.adapters.vectorstores.kit.lexical_index import LexicalIndex
from pywrapai_graph.application.chunker import Chunker
from pywrapai_graph.application.text_analysis import DOCUMENT_WEIGHT as W
from pywrapai_graph.application.text_analysis import document_parts
from pywrapai_graph.domain import Chunk
from pywrapai_graph.testing.contracts.lexical_search import QUERIES, lexical_corpus, reference_bm25
from pywrapai_graph.testing.contracts.store_data import manifest_for

K1, B = 1.2, 0.75


def _chunk(chunk_id: str, doc_id: str, text: str) -> Chunk:
    return Chunk(text, doc_id=doc_id, id=chunk_id, embedding=[1.0, 0.0])


def _bm25(idf: float, tf: int, length: float, avgdl: float) -> float:
    return idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / avgdl))


def _idf(n: int, df: int) -> float:
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def _scores(store: InMemoryVectorStore, query: str) -> dict[str, float]:
    return {h.chunk.id: h.score for h in store.lexical_search(query, k=10)}


def test_a_delete_and_a_replace_update_the_document_statistics() -> None:
    store = InMemoryVectorStore()
    store.add(
        [
            _chunk("a1", "A", "cat dog"),
            _chunk("a2", "A", "cat bird"),
            _chunk("b1", "B", "cat fish"),
            _chunk("c1", "C", "horse cow"),
        ]
    )
    # chunks: N 4, df(cat) 3, every length 2; documents: N 3, df(cat) 2, |A| 4, avgdl 8/3
    chunk = _bm25(_idf(4, 3), 1, 2, 2)
    got = _scores(store, "cat")
    assert got["a1"] == pytest.approx(chunk + W * _bm25(_idf(3, 2), 2, 4, 8 / 3))
    assert got["b1"] == pytest.approx(chunk + W * _bm25(_idf(3, 2), 1, 2, 8 / 3))
    assert got["a1"] == got["a2"] > got["b1"]  # A is more about cats than B

    store.delete_by_doc("B")
    # chunks: N 3, df 2, avgdl 2; documents: N 2, df(cat) 1, |A| 4, avgdl 3
    got = _scores(store, "cat")
    assert set(got) == {"a1", "a2"}
    assert got["a1"] == pytest.approx(_bm25(_idf(3, 2), 1, 2, 2) + W * _bm25(_idf(2, 1), 2, 4, 3))

    new = [_chunk("a3", "A", "cat cat cat")]
    store.replace_document(manifest_for("A", new, 2), new)
    # chunks: N 2 (a3, c1), df 1, avgdl 2.5; documents: N 2, df 1, |A| 3, avgdl 2.5
    got = _scores(store, "cat")
    assert got == {
        "a3": pytest.approx(_bm25(_idf(2, 1), 3, 3, 2.5) + W * _bm25(_idf(2, 1), 3, 3, 2.5))
    }
    store.delete(["a3"])  # the document's last chunk: the document is gone too
    assert _scores(store, "cat") == {}
    assert _scores(store, "horse") == {"c1": pytest.approx((1 + W) * _bm25(_idf(1, 1), 1, 2, 2))}


def test_one_chunk_per_document_ranks_exactly_as_bm25() -> None:
    corpus = [Chunk(c.text, doc_id=c.id, metadata=c.metadata, id=c.id) for c in lexical_corpus(60)]
    index = LexicalIndex()
    index.upsert(corpus)
    for query in QUERIES:
        want = reference_bm25(corpus, query, 10, document_weight=0.0)
        got = index.top(*index.scored(query, K1, B), 10, None)
        assert [h.chunk.id for h in got] == [i for i, _ in want]
        assert [h.score for h in got] == pytest.approx([(1 + W) * s for _, s in want], rel=1e-12)


def test_the_weight_zero_is_chunks_alone_and_writes_keep_both_fields() -> None:
    corpus = lexical_corpus(60)
    alone, index = LexicalIndex(0.0), LexicalIndex()
    for target in (alone, index):
        target.upsert(corpus)
        target.remove([c.id for c in corpus if c.doc_id == "doc-2"])
        target.remove([corpus[7].id])
        target.upsert([Chunk("heat heat transfer", doc_id="doc-2", id="back")])
    live = [c for c in corpus if c.doc_id != "doc-2" and c.id != corpus[7].id]
    live.append(Chunk("heat heat transfer", doc_id="doc-2", id="back"))
    for query in QUERIES:
        for target, weight in ((alone, 0.0), (index, W)):
            want = reference_bm25(live, query, 10, document_weight=weight)
            got = target.top(*target.scored(query, K1, B), 10, None)
            assert [h.chunk.id for h in got] == [i for i, _ in want]
            assert [h.score for h in got] == pytest.approx([s for _, s in want], rel=1e-9)
        ids = [c.id for c in live[::4]]
        scores = index.scores_in(*index.scored(query, K1, B), ids)
        full = dict(reference_bm25(live, query, len(live), document_weight=W))
        assert scores == pytest.approx({i: full[i] for i in ids if i in full}, rel=1e-9)


def test_a_chunkers_overlap_counts_once_in_the_document_field() -> None:
    data = load_beir(Path(__file__).resolve().parents[1] / "fixtures" / "cranfield_subset")
    chunker = Chunker(500, 50)
    chunks = [c for doc in data.corpus for c in chunker.split(doc)]
    assert len(chunks) > len(data.corpus)  # documents were split, with overlaps
    index, alone, whole = LexicalIndex(), LexicalIndex(0.0), LexicalIndex(0.0)
    for doc in data.corpus:  # each document one write, as ingestion makes it
        index.upsert(chunker.split(doc))
    alone.upsert(chunks)
    whole.upsert([Chunk(d.text, doc_id=d.id, id=d.id) for d in data.corpus])
    for query in list(data.queries.values())[:10]:
        documents = whole.scores_in(*whole.scored(query, K1, B), [d.id for d in data.corpus])
        chunk_scores = alone.scores_in(*alone.scored(query, K1, B), [c.id for c in chunks])
        got = index.scores_in(*index.scored(query, K1, B), [c.id for c in chunks])
        # the document field is BM25 over the original documents: each overlap counted once
        want = {
            c.id: chunk_scores[c.id] + W * documents[c.doc_id]
            for c in chunks
            if c.id in chunk_scores
        }
        assert got == pytest.approx(want, rel=1e-9)


def _overlap_by_definition(before: str, text: str) -> int:
    """The definition: the longest start of ``text``, short of all of it, ending ``before``."""
    for size in range(min(len(before), len(text) - 1), 0, -1):
        if before.endswith(text[:size]):
            return size
    return 0


# few letters, so that overlaps, repeats and periodic texts are common
_TEXTS = st.text(alphabet="ab c", max_size=40)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(_TEXTS, st.sampled_from("DE")), max_size=8))
def test_document_parts_drop_exactly_the_overlap_by_its_definition(
    chunks: list[tuple[str, str]],
) -> None:
    texts, doc_ids = [t for t, _ in chunks], [d for _, d in chunks]
    previous: dict[str, str] = {}
    want = []
    for text, doc_id in chunks:
        before = previous.get(doc_id)
        want.append(text[_overlap_by_definition(before, text) :] if before else text)
        previous[doc_id] = text
    assert document_parts(texts, doc_ids) == want


def test_two_long_chunks_of_one_document_are_added_in_linear_time() -> None:
    # The attack: two 800k-character chunks of one document that share no overlap made the
    # old search try every length (7.3 s per add); the issue asks for well under a second.
    words = " ".join(f"w{i}" for i in range(120_000))
    first, second = words[:800_000], "x" + words[1:800_000]
    started = time.monotonic()
    assert document_parts([first, second], ["D", "D"]) == [first, second]
    periodic = "ab" * 400_000
    assert document_parts([periodic + "c", periodic], ["D", "D"])[1] == periodic
    store = InMemoryVectorStore()
    store.add([_chunk("c1", "D", first), _chunk("c2", "D", second)])
    assert store.count() == 2
    assert time.monotonic() - started < 5.0  # a generous deadline, not a benchmark
