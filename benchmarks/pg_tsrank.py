"""Lexical quality on PostgreSQL: PGVectorStore's BM25 (postings, document field) against
PostgreSQL's own ``ts_rank_cd`` over a ``tsvector`` GIN index, Cranfield nDCG@10.

Run: .venv/bin/python -m benchmarks.pg_tsrank [FOLDER]
(starts the embedded PostgreSQL of the integration tests, or uses PYWRAPAI_TEST_PG_URL;
FOLDER defaults to ../shared/data/cranfield beside the repository.)

Whole abstracts and ``Chunker(500, 50)`` chunks (a document ranks by its best chunk, 300
chunks asked, 100 documents scored). ``ts_rank_cd`` is asked as pgvector-haystack's keyword
retriever asks it — ``to_tsvector('english', content) @@ plainto_tsquery('english', q)``, a
GIN index on the expression — and with the query's lexemes OR-ed (``plainto_tsquery`` ANDs
them: a long question matches few abstracts), with and without its length normalisation.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks._postgres import postgres_url
from pywrapai_graph import Chunk, Document, PGVectorStore
from pywrapai_graph.adapters.sources.beir import BeirCollection, load_beir
from pywrapai_graph.application.chunker import Chunker
from pywrapai_graph.application.retrieval_metrics import score_run

DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "cranfield"
ASKED, SCORED = 300, 100
AND = "plainto_tsquery('english', %s)"
OR = "replace(plainto_tsquery('english', %s)::text, '&', '|')::tsquery"
VARIANTS = {
    "ts_rank_cd, plainto_tsquery (AND; pgvector-haystack)": (AND, 0),
    "ts_rank_cd, lexemes OR-ed": (OR, 0),
    "ts_rank_cd, lexemes OR-ed, normalisation 1 (log length)": (OR, 1),
}


def chunks_of(data: BeirCollection, chunker: Chunker | None) -> list[Chunk]:
    docs = [Document(d.text, id=d.id) for d in data.corpus]
    if chunker is None:
        return [Chunk(d.text, doc_id=d.id, id=d.id) for d in docs]
    return [c for d in docs for c in chunker.split(d)]


def documents(hits: list[str]) -> list[str]:
    """Document ids ranked by their best chunk, the first :data:`SCORED`."""
    return list(dict.fromkeys(hits))[:SCORED]


def tsvector_runs(url: str, chunks: list[Chunk], queries: dict[str, str]) -> dict[str, Any]:
    import psycopg2

    conn = psycopg2.connect(url)
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("DROP TABLE IF EXISTS bench_tsrank")
    cur.execute("CREATE TABLE bench_tsrank (id text PRIMARY KEY, doc_id text, content text)")
    cur.executemany(
        "INSERT INTO bench_tsrank VALUES (%s, %s, %s)", [(c.id, c.doc_id, c.text) for c in chunks]
    )
    cur.execute("CREATE INDEX ON bench_tsrank USING gin (to_tsvector('english', content))")
    cur.execute("ANALYZE bench_tsrank")
    runs: dict[str, Any] = {}
    for label, (tsquery, norm) in VARIANTS.items():
        statement = (
            f"SELECT doc_id FROM bench_tsrank, (SELECT {tsquery} AS query) q "
            "WHERE to_tsvector('english', content) @@ q.query "
            "ORDER BY ts_rank_cd(to_tsvector('english', content), q.query, %s) DESC, id LIMIT %s"
        )
        run = {}
        for qid, text in queries.items():
            cur.execute(statement, (text, norm, ASKED))
            run[qid] = documents([r[0] for r in cur.fetchall()])
        runs[label] = run
    conn.close()
    return runs


def postings_run(url: str, chunks: list[Chunk], queries: dict[str, str]) -> dict[str, Any]:
    store = PGVectorStore(url, table_name="bench_tsrank_ours", dimension=1)
    store.clear()
    store.add([Chunk(c.text, doc_id=c.doc_id, id=c.id, embedding=[1.0]) for c in chunks])
    search: Callable[[str], list[str]] = lambda q: [  # noqa: E731
        h.chunk.doc_id for h in store.lexical_search(q, ASKED)
    ]
    run = {qid: documents(search(text)) for qid, text in queries.items()}
    store.close()
    return run


def main(argv: list[str]) -> None:
    data = load_beir(Path(argv[0]) if argv else DEFAULT)
    print(f"Cranfield: {len(data.corpus)} documents, {len(data.queries)} queries; nDCG@10")
    with postgres_url() as url:
        for form, chunker in (("whole", None), ("chunked 500/50", Chunker(500, 50))):
            chunks = chunks_of(data, chunker)
            runs = {
                "PGVectorStore BM25 (postings, document field)": postings_run(
                    url, chunks, data.queries
                )
            }
            runs.update(tsvector_runs(url, chunks, data.queries))
            for label, run in runs.items():
                score = score_run(run, data.qrels)
                print(f"{form:<15} {label:<58} {score.ndcg_at_10:.4f}")


if __name__ == "__main__":
    main(sys.argv[1:])
