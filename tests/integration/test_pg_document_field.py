"""PostgreSQL's lexical scores with the document field: BM25(chunk) + DOCUMENT_WEIGHT ·
BM25(its document), from statistics the triggers keep exact, across processes."""

from __future__ import annotations

import multiprocessing
import random
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from pywrapai_graph import Chunker, Document, PGVectorStore
from pywrapai_graph.application.text_analysis import DOCUMENT_WEIGHT, analyze
from pywrapai_graph.domain import Chunk
from pywrapai_graph.testing.contracts.lexical_search import QUERIES, lexical_corpus
from pywrapai_graph.testing.contracts.store_data import manifest_for
from tests.integration.bm25_documents import chunk_bm25, expected_ranking

pytestmark = pytest.mark.integration
DIM = 16
WORDS = ("shock", "wave", "cone", "plate", "heat", "transfer", "nozzle", "jet", "buckling", "shell")
_SUFFIXES = ("", "__docs", "__info", "__terms", "__doclen", "__bm25")


@pytest.fixture
def table(admin: Any) -> Iterator[str]:
    name = f"docf_{uuid.uuid4().hex[:10]}"
    yield name
    with admin.cursor() as cur:
        for suffix in _SUFFIXES:
            cur.execute(f'DROP TABLE IF EXISTS "{name}{suffix}" CASCADE')
        cur.execute(f'DROP FUNCTION IF EXISTS "{name}__bm25_count"()')
        cur.execute("DELETE FROM pywrapai_schema WHERE table_name = %s", (name,))


def chunked_corpus() -> list[Chunk]:
    """The contract's 60 chunks over 6 documents, and documents of 1 to 5 chunks beside them."""
    rng = random.Random(3)
    words = [*WORDS, "drag", "lift"]
    extra = [
        Chunk(  # capitalised, with a full stop: no chunk starts with what the one before ends
            " ".join(rng.choices(words, k=rng.randint(3, 12))).capitalize() + ".",
            doc_id=f"x{d}",
            metadata={"part": "odd" if (d + i) % 2 else "even"},
            id=f"x{d}-{i}",
            embedding=[1.0] * DIM,
        )
        for d in range(8)
        for i in range(1 + d % 5)
    ]
    return lexical_corpus(dim=DIM) + extra


def ranking(store: PGVectorStore, query: str, **kw: Any) -> list[tuple[str, float]]:
    return [(h.chunk.id, round(h.score, 9)) for h in store.lexical_search(query, 10, **kw)]


def expected(chunks: list[Chunk], query: str, **kw: Any) -> list[tuple[str, float]]:
    return [(i, round(s, 9)) for i, s in expected_ranking(chunks, query, 10, **kw)]


def stored_chunks(admin: Any, table: str) -> list[Chunk]:
    with admin.cursor() as cur:
        cur.execute(f'SELECT id, doc_id, text, metadata FROM "{table}"')
        return [Chunk(r[2], doc_id=r[1], metadata=r[3], id=r[0]) for r in cur.fetchall()]


def assert_statistics_exact(admin: Any, table: str) -> None:
    """The document lengths, the counts and the postings agree with a recount of the chunks."""
    t = f'"{table}"'
    with admin.cursor() as cur:
        cur.execute(f'SELECT doc_id, chunks, len FROM "{table}__doclen" ORDER BY doc_id')
        kept = cur.fetchall()
        part = "coalesce(lex_doc, lex_len)"  # a chunk's share of its document (NULL: whole)
        cur.execute(f"SELECT doc_id, count(*), sum({part}) FROM {t} GROUP BY doc_id ORDER BY 1")
        assert kept == cur.fetchall()
        cur.execute(f'SELECT sum(n), sum(total), sum(docs), sum(dtotal) FROM "{table}__bm25"')
        counts = cur.fetchone()
        cur.execute(f"SELECT count(*), sum(lex_len), count(DISTINCT doc_id), sum({part}) FROM {t}")
        assert counts == cur.fetchone()
        cur.execute(  # every posting carries its chunk's document, and only stored chunks have any
            f'SELECT count(*) FROM "{table}__terms" p LEFT JOIN {t} c ON c.id = p.chunk_id '
            "WHERE c.doc_id IS DISTINCT FROM p.doc_id"
        )
        assert cur.fetchone()[0] == 0
    chunks = stored_chunks(admin, table)
    with admin.cursor() as cur:
        cur.execute(f'SELECT count(*) FROM "{table}__terms"')
        assert cur.fetchone()[0] == sum(len(set(analyze(c.text))) for c in chunks)


def test_scores_are_chunk_plus_weighted_document_bm25(pg_url: str, admin: Any, table: str) -> None:
    corpus = chunked_corpus()
    store = PGVectorStore(pg_url, table_name=table, dimension=DIM)
    store.add(corpus)
    for query in (*QUERIES, "shock shock cone"):
        assert ranking(store, query) == expected(corpus, query)
    assert ranking(store, QUERIES[0], k1=0.9, b=0.4) == expected(corpus, QUERIES[0], k1=0.9, b=0.4)
    odd = {"part": "odd"}
    assert ranking(store, QUERIES[1], filter=odd) == expected(corpus, QUERIES[1], filter=odd)
    assert_statistics_exact(admin, table)
    store.close()


def test_one_chunk_per_document_ranks_as_plain_bm25(pg_url: str, table: str) -> None:
    corpus = [
        Chunk(c.text, doc_id=c.id, metadata=c.metadata, id=c.id, embedding=c.embedding)
        for c in lexical_corpus(dim=DIM)
    ]
    store = PGVectorStore(pg_url, table_name=table, dimension=DIM)
    store.add(corpus)
    for query in QUERIES:
        plain = sorted(chunk_bm25(corpus, query).items(), key=lambda p: (-p[1], p[0]))[:10]
        got = store.lexical_search(query, 10)
        assert [h.chunk.id for h in got] == [i for i, _ in plain]
        assert [h.score for h in got] == pytest.approx(
            [(1 + DOCUMENT_WEIGHT) * s for _, s in plain], rel=1e-12
        )
    store.close()


def test_a_document_counts_the_overlap_of_its_chunks_once(
    pg_url: str, admin: Any, table: str
) -> None:
    sentence = "Shock waves on a cone at supersonic speed heat the plate behind the nozzle."
    text = " ".join(f"{sentence} Part {i} of the report on {WORDS[i]}." for i in range(8))
    chunks = [
        Chunk(c.text, doc_id="report", id=f"report-{i:02d}", embedding=[1.0] * DIM)
        for i, c in enumerate(Chunker(160, 40).split(Document(text, id="report")))
    ]
    others = [
        Chunk(f"{w.capitalize()} {WORDS[-1 - i]} plate.", doc_id=w, id=w, embedding=[1.0] * DIM)
        for i, w in enumerate(WORDS)
    ]
    assert len(chunks) > 3
    store = PGVectorStore(pg_url, table_name=table, dimension=DIM)
    store.add(chunks + others)  # one write, the document's chunks in their order
    with admin.cursor() as cur:
        cur.execute(f'SELECT len FROM "{table}__doclen" WHERE doc_id = %s', ("report",))
        length = cur.fetchone()[0]
    assert length == len(analyze(text)) < sum(len(analyze(c.text)) for c in chunks)
    for query in ("shock on a cone", "heat transfer nozzle", "plate"):
        assert ranking(store, query) == expected(chunks + others, query)
    store.close()


# ----------------------------------------------------------------------------- processes
def _in_process(url: str, table: str, action: str, *args: Any) -> None:
    store = PGVectorStore(url, table_name=table, dimension=DIM)
    if action == "add":
        store.add(args[0])
    elif action == "replace":
        store.replace_document(manifest_for(args[0][0].doc_id, args[0], DIM), args[0])
    else:
        store.delete_by_doc(args[0])
    store.close()


def run_in_another_process(*args: Any) -> None:
    process = multiprocessing.get_context("spawn").Process(target=_in_process, args=args)
    process.start()
    process.join(120)
    assert process.exitcode == 0


def test_another_process_changes_the_document_statistics_of_the_next_query(
    pg_url: str, admin: Any, table: str
) -> None:
    corpus = chunked_corpus()
    store = PGVectorStore(pg_url, table_name=table, dimension=DIM)
    store.add(corpus)
    query = "shock waves on a cone"
    before = ranking(store, query)
    assert before == expected(corpus, query)
    # another process makes doc-1 longer (its |D| and tf change) and adds a document
    more = [
        Chunk("Cone cone shock plate.", doc_id="doc-1", id="doc-1-more", embedding=[1.0] * DIM),
        Chunk("A shock on a cone.", doc_id="new", id="new-0", embedding=[1.0] * DIM),
    ]
    run_in_another_process(pg_url, table, "add", more)
    live = corpus + more
    assert ranking(store, query) == expected(live, query) != before
    run_in_another_process(pg_url, table, "delete_by_doc", "doc-1")
    live = [c for c in live if c.doc_id != "doc-1"]
    assert ranking(store, query) == expected(live, query)
    new = [  # doc-2's new version: two chunks instead of ten
        Chunk(t, doc_id="doc-2", id=f"doc-2-v2-{i}", embedding=[1.0] * DIM)
        for i, t in enumerate(("Shock cone cone.", "A wave behind a plate."))
    ]
    run_in_another_process(pg_url, table, "replace", new)
    live = [c for c in live if c.doc_id != "doc-2"] + new
    assert ranking(store, query) == expected(live, query)
    assert_statistics_exact(admin, table)
    store.close()


def _churn(url: str, table: str, seed: int, start: Any) -> None:
    """Random adds (chunk ids and documents shared with the other writers, so a chunk moves
    between documents), deletes and document deletes, sorted ids in every batch."""
    rng = random.Random(seed)
    words = WORDS
    store = PGVectorStore(url, table_name=table, dimension=DIM)
    start.wait()
    for _ in range(40):
        ids = sorted(rng.sample(range(60), rng.randint(1, 8)))
        roll = rng.random()
        if roll < 0.6:
            store.add(
                [
                    Chunk(
                        " ".join(rng.choices(words, k=rng.randint(0, 9))) + ".",
                        doc_id=f"d{rng.randrange(6)}",
                        id=f"c{i:02d}",
                        embedding=[1.0] * DIM,
                    )
                    for i in ids
                ]
            )
        elif roll < 0.85:
            store.delete([f"c{i:02d}" for i in ids])
        else:
            store.delete_by_doc(f"d{rng.randrange(6)}")
    store.close()


def test_writers_in_several_processes_keep_the_document_statistics_exact(
    pg_url: str, admin: Any, table: str
) -> None:
    PGVectorStore(pg_url, table_name=table, dimension=DIM).close()
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(3)
    processes = [
        context.Process(target=_churn, args=(pg_url, table, seed, start)) for seed in range(3)
    ]
    for p in processes:
        p.start()
    for p in processes:
        p.join(300)
        assert p.exitcode == 0
    assert_statistics_exact(admin, table)
    live = stored_chunks(admin, table)
    assert live  # the rounds leave chunks behind
    store = PGVectorStore(pg_url, table_name=table, dimension=DIM)
    for query in ("shock on a cone", "heat transfer of a plate", "jet nozzle shell"):
        assert ranking(store, query) == expected(live, query)
    store.close()
