"""Lexical search served by PostgreSQL: tables written before it refused, the statistics under
concurrent writers, and a query that reads only the postings of its terms."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from pywrapai_graph import PGVectorStore
from pywrapai_graph.adapters.vectorstores.postgres.bm25 import statement, statement_params
from pywrapai_graph.application.text_analysis import analyze
from pywrapai_graph.domain import Chunk
from pywrapai_graph.errors import VectorStoreError
from pywrapai_graph.ports.store_query import StoreQuery
from pywrapai_graph.testing.contracts.lexical_search import QUERIES, lexical_corpus
from tests.integration.bm25_documents import expected_ranking

pytestmark = pytest.mark.integration
DIM = 16


@pytest.fixture
def table(admin: Any) -> Iterator[str]:
    name = f"lex_{uuid.uuid4().hex[:10]}"
    yield name
    with admin.cursor() as cur:
        for suffix in ("", "__docs", "__info", "__terms", "__doclen", "__bm25"):
            cur.execute(f'DROP TABLE IF EXISTS "{name}{suffix}" CASCADE')
        cur.execute(f'DROP FUNCTION IF EXISTS "{name}__bm25_count"()')
        cur.execute("DELETE FROM pywrapai_schema WHERE table_name = %s", (name,))


def write_version_1(admin: Any, table: str, chunks: list[Chunk]) -> None:
    """The layout (schema version 1) and rows that pywrapai-graph wrote before lexical columns."""
    with admin.cursor() as cur:
        cur.execute("CREATE EXTENSION IF NOT EXISTS vector")
        cur.execute(
            f'CREATE TABLE "{table}" (id TEXT PRIMARY KEY, doc_id TEXT NOT NULL, '
            "text TEXT NOT NULL, metadata JSONB NOT NULL DEFAULT '{}', "
            f"embedding vector({DIM}) NOT NULL)"
        )
        cur.execute(
            f'CREATE INDEX "{table}_hnsw" ON "{table}" USING hnsw (embedding vector_cosine_ops)'
        )
        cur.execute(f'CREATE INDEX "{table}_doc" ON "{table}" (doc_id)')
        cur.execute(f'CREATE INDEX "{table}_meta" ON "{table}" USING gin (metadata)')
        cur.execute(
            f'CREATE TABLE "{table}__docs" (doc_id TEXT PRIMARY KEY, manifest TEXT NOT NULL)'
        )
        cur.execute(f'CREATE TABLE "{table}__info" (key TEXT PRIMARY KEY, value TEXT NOT NULL)')
        cur.execute(
            "CREATE TABLE IF NOT EXISTS pywrapai_schema (table_name TEXT PRIMARY KEY, "
            "version INT NOT NULL, dimension INT NOT NULL, "
            "created_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        cur.execute(
            "INSERT INTO pywrapai_schema (table_name, version, dimension) VALUES (%s, 1, %s)",
            (table, DIM),
        )
        for c in chunks:
            cur.execute(
                f'INSERT INTO "{table}" (id, doc_id, text, metadata, embedding) '
                "VALUES (%s, %s, %s, %s::jsonb, %s::vector)",
                (c.id, c.doc_id, c.text, json.dumps(c.metadata), str(c.embedding)),
            )


def statistics(admin: Any, table: str) -> tuple[int, int, int, int]:
    """(chunks, total length) as the statistics hold them, then as the table holds them."""
    with admin.cursor() as cur:
        cur.execute(
            f'SELECT (SELECT sum(n) FROM "{table}__bm25"), (SELECT sum(total) FROM "{table}__bm25"),'
            f' (SELECT count(*) FROM "{table}"), (SELECT coalesce(sum(lex_len), 0) FROM "{table}")'
        )
        row = cur.fetchone()
    return int(row[0]), int(row[1]), int(row[2]), int(row[3])


def ranking(store: PGVectorStore, query: str, **kw: Any) -> list[tuple[str, float]]:
    return [(h.chunk.id, round(h.score, 9)) for h in store.lexical_search(query, 10, **kw)]


def expected(chunks: list[Chunk], query: str, **kw: Any) -> list[tuple[str, float]]:
    return [(i, round(s, 9)) for i, s in expected_ranking(chunks, query, 10, **kw)]


def test_a_table_of_a_pre_release_layout_is_refused_and_left_as_it_was(
    pg_url: str, admin: Any, table: str
) -> None:
    corpus = lexical_corpus(dim=DIM)
    write_version_1(admin, table, corpus)
    told = r"pre-release pywrapai-graph \(schema version 1; .*ingest the documents again"
    for create in (True, False):  # an owner's open and a DML-only role's
        with pytest.raises(VectorStoreError, match=told):
            PGVectorStore(pg_url, table_name=table, dimension=DIM, create_schema=create)
    with pytest.raises(VectorStoreError, match=told):
        PGVectorStore.init_schema(pg_url, table, DIM)  # `pywrapai-graph store init`
    with admin.cursor() as cur:
        cur.execute("SELECT version FROM pywrapai_schema WHERE table_name = %s", (table,))
        assert cur.fetchone()[0] == 1
        cur.execute("SELECT to_regclass(%s), count(*) FROM " + f'"{table}"', (f"{table}__terms",))
        assert cur.fetchone() == (None, len(corpus))


def test_statistics_stay_exact_under_concurrent_writers(
    pg_url: str, admin: Any, table: str
) -> None:
    corpus = lexical_corpus(n=120, dim=DIM)
    store = PGVectorStore(pg_url, table_name=table, dimension=DIM, pool_size=4)
    store.add(corpus)
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def writer(w: int) -> None:
        try:
            start.wait()
            mine = [c for i, c in enumerate(corpus) if i % 4 == w]
            for round_ in range(15):
                part = mine[round_ % 3 :: 3]
                if round_ % 3 == 0:
                    store.delete([c.id for c in part])
                elif round_ % 3 == 1:
                    store.add(part)
                else:
                    store.delete_by_doc(part[0].doc_id)
                    store.add(mine)
        except BaseException as exc:  # re-raised by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    n, total, rows, lengths = statistics(admin, table)
    assert (n, total) == (rows, lengths)
    ids = _ids(admin, table)
    stored = [c for c in corpus if c.id in ids]
    with admin.cursor() as cur:  # one posting per distinct term of each stored chunk
        cur.execute(f'SELECT count(*), count(DISTINCT chunk_id) FROM "{table}__terms"')
        assert cur.fetchone() == (sum(len(set(analyze(c.text))) for c in stored), len(stored))
    for query in QUERIES:
        assert ranking(store, query) == expected(stored, query)
    store.close()


def _ids(admin: Any, table: str) -> set[str]:
    with admin.cursor() as cur:
        cur.execute(f'SELECT id FROM "{table}"')
        return {r[0] for r in cur.fetchall()}


def _scanned(plan: dict[str, Any], table: str) -> list[tuple[str, int]]:
    """(node type, rows read) of every plan node that reads ``table``."""
    found = []
    if plan.get("Relation Name") == table:
        found.append((plan["Node Type"], int(plan["Actual Rows"]) * int(plan["Actual Loops"])))
    for child in plan.get("Plans", []):
        found += _scanned(child, table)
    return found


def test_a_query_reads_the_postings_of_its_terms_not_the_tables(
    pg_url: str, admin: Any, table: str
) -> None:
    store = PGVectorStore(pg_url, table_name=table, dimension=DIM)
    filler = [  # 3,000 documents
        Chunk(c.text, doc_id=c.id, metadata=c.metadata, id=c.id, embedding=c.embedding)
        for c in lexical_corpus(n=3000, dim=DIM)
    ]
    rare = [
        Chunk(f"a zeppelin hovered over plate {i}", doc_id="z", id=f"z{i}", embedding=[1.0] * DIM)
        for i in range(4)
    ]
    store.add([*filler, *rare])
    plans = []
    with admin.cursor() as cur:
        cur.execute(f'VACUUM ANALYZE "{table}", "{table}__terms", "{table}__doclen"')
        query = StoreQuery("lexical", 3, text="zeppelin")
        for keep, extra in ((None, {}), ("metadata @> %(f0)s::jsonb", {"f0": '{"x": 1}'})):
            text = statement(_sql(), table, "lexical", "rescored", keep).as_string(cur)
            cur.execute(
                "EXPLAIN (ANALYZE, FORMAT JSON) " + text, statement_params(query, extra, None)
            )
            plans.append(cur.fetchone()[0][0]["Plan"])
    for plan, hits in zip(plans, (3, 0), strict=True):
        postings, chunks = _scanned(plan, f"{table}__terms"), _scanned(plan, table)
        documents = _scanned(plan, f"{table}__doclen")
        read = postings + chunks + documents
        assert all("Seq Scan" not in node for node, _ in read), read
        # the term's postings alone, at most once for each field (chunks, documents)
        assert 4 <= sum(rows for _, rows in postings) <= 2 * 4, postings
        assert sum(rows for _, rows in documents) <= 1, documents  # the length of "z"
        assert sum(rows for _, rows in chunks) == hits, chunks  # then the k hits' rows
    assert [h.chunk.id for h in store.lexical_search("zeppelin", k=3)] == ["z0", "z1", "z2"]
    store.close()


def _sql() -> Any:
    from psycopg2 import sql

    return sql
