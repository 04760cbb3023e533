"""PGVectorStore for production: a connection pool, statement_timeout, a DML-only role,
``pywrapai-graph store init`` and the schema version — against the real server."""

from __future__ import annotations

import asyncio
import io
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from pywrapai_graph import Document, PGVectorStore, VectorRetriever
from pywrapai_graph.adapters.vectorstores.postgres.schema import SCHEMA_VERSION
from pywrapai_graph.composition.cli import main
from pywrapai_graph.composition.container import build_container
from pywrapai_graph.errors import ConfigurationError, VectorStoreError
from pywrapai_graph.testing.contracts.vector_store import WordEmbedder, make_chunks

pytestmark = pytest.mark.integration
DIM = 8


@pytest.fixture
def table() -> str:
    return f"prod_{uuid.uuid4().hex[:10]}"


def waiting_backends(admin: Any, table: str) -> int:
    with admin.cursor() as cur:
        cur.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s "
            "AND wait_event_type = 'Lock'",
            (f"pywrapai-graph:{table}",),
        )
        return int(cur.fetchone()[0])


def hold_table_lock(admin: Any, pg_url: str, table: str) -> Any:
    """A second admin connection holding an exclusive lock on ``table`` until rollback."""
    import psycopg2

    locker = psycopg2.connect(pg_url)
    with locker.cursor() as cur:
        cur.execute(f'LOCK TABLE "{table}" IN ACCESS EXCLUSIVE MODE')
    return locker


def wait_for(condition: Any, tries: int = 400) -> bool:
    for _ in range(tries):  # bounded: at most ~20 s
        if condition():
            return True
        threading.Event().wait(0.05)
    return False


def test_threads_and_the_async_offload_use_several_server_connections(
    pg_url: str, admin: Any, table: str
) -> None:
    store = PGVectorStore(pg_url, table_name=table, dimension=DIM, pool_size=4)
    chunks = make_chunks(20, DIM)
    store.add(chunks)
    # Every search below waits for a table lock held elsewhere: each one that is really
    # running at the same time holds its own server connection, waiting on the server.
    locker = hold_table_lock(admin, pg_url, table)
    results: list[str] = []
    threads = [
        threading.Thread(
            target=lambda i=i: results.append(
                store.search(chunks[i].embedding or [], k=1)[0].chunk.id
            )
        )
        for i in range(4)
    ]
    for t in threads:
        t.start()
    assert wait_for(lambda: waiting_backends(admin, table) == 4), "4 threads, 4 connections"
    locker.rollback()
    locker.close()
    for t in threads:
        t.join()
    assert sorted(results) == sorted(c.id for c in chunks[:4])

    async def offloaded() -> list[str]:
        locker = hold_table_lock(admin, pg_url, table)
        searches = [
            asyncio.ensure_future(store.asearch(chunks[i].embedding or [], k=1)) for i in range(4)
        ]
        seen = await asyncio.to_thread(wait_for, lambda: waiting_backends(admin, table) == 4)
        locker.rollback()
        locker.close()
        assert seen, "4 offloaded searches, 4 connections"
        return [hits[0].chunk.id for hits in await asyncio.gather(*searches)]

    assert asyncio.run(offloaded()) == [c.id for c in chunks[:4]]
    store.close()


def test_statement_timeout_cancels_and_names_the_setting(
    pg_url: str, admin: Any, table: str
) -> None:
    store = PGVectorStore(pg_url, table_name=table, dimension=DIM, statement_timeout_ms=200)
    store.add(make_chunks(3, DIM))
    locker = hold_table_lock(admin, pg_url, table)
    try:
        with pytest.raises(VectorStoreError, match=r"statement_timeout \(200 ms\)"):
            store.search([1.0] * DIM, k=1)  # waits on the lock until the server cancels it
    finally:
        locker.rollback()
        locker.close()
    assert len(store.search([1.0] * DIM, k=1)) == 1  # the pooled connection is still good
    store.close()


def write_config(tmp_path: Path, dsn: str, table: str, **store: Any) -> str:
    path = tmp_path / f"{uuid.uuid4().hex}.yaml"
    config = {"store": {"backend": "pgvector", "dsn": dsn, "table": table, "dimension": DIM}}
    config["store"].update(store)
    path.write_text(yaml.safe_dump(config))
    return str(path)


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_store_init_then_a_dml_only_role_works(
    pg_url: str, admin: Any, table: str, tmp_path: Path, dml_role: tuple[str, str]
) -> None:
    owner_config = write_config(tmp_path, pg_url, table)
    code, out, err = cli("--config", owner_config, "store", "init")
    assert (code, err) == (0, "")
    assert out.startswith(f"schema for PostgreSQL table {table!r}: created\n")
    assert "store grants --reader ROLE --writer ROLE" in out
    code, out, _ = cli("--config", owner_config, "store", "init")
    assert (code, "already up to date" in out) == (0, True)  # idempotent

    role, role_dsn = dml_role
    # the role cannot create anything: with create_schema on, the error names the right
    with pytest.raises(VectorStoreError, match="lacks CREATE on schema public") as info:
        PGVectorStore(role_dsn, table_name=f"{table}_new", dimension=DIM)
    assert "store init" in str(info.value)

    with admin.cursor() as cur:
        cur.execute(
            f'GRANT SELECT ON "{table}", "{table}__docs", "{table}__info", "{table}__terms", '
            f'"{table}__doclen", "{table}__bm25" TO {role}'
        )
        cur.execute(f"GRANT SELECT ON pywrapai_schema TO {role}")
    reader = PGVectorStore(role_dsn, table_name=table, dimension=DIM, create_schema=False)
    with pytest.raises(VectorStoreError, match=f"the role lacks [A-Z]+ on table '{table}'") as info:
        reader.add(make_chunks(2, DIM))
    assert f"GRANT SELECT, INSERT, UPDATE, DELETE ON {table}" in str(info.value)
    reader.close()

    with admin.cursor() as cur:
        for suffix in ("", "__docs", "__info", "__terms", "__doclen", "__bm25"):
            t = table + suffix
            cur.execute(f'GRANT INSERT, UPDATE, DELETE ON "{t}" TO {role}')
    container = build_container(write_config(tmp_path, role_dsn, table, create_schema=False))
    store = container.vector_store()
    retriever = VectorRetriever(WordEmbedder(DIM), store, min_score=-1.0)
    assert retriever.add_documents([Document("refunds take 14 days", id="r")]) == 1
    assert retriever.retrieve("refunds")[0].chunk.doc_id == "r"
    assert retriever.add_documents([Document("refunds take 30 days", id="r")]) == 1
    assert store.delete_by_doc("r") == 1
    container.shutdown()


def test_a_missing_table_or_a_newer_schema_is_a_clear_error(
    pg_url: str, admin: Any, table: str, tmp_path: Path
) -> None:
    with pytest.raises(VectorStoreError, match=r"does not exist .* store init"):
        PGVectorStore(pg_url, table_name=table, dimension=DIM, create_schema=False)
    assert PGVectorStore.init_schema(pg_url, table, DIM) is True
    with admin.cursor() as cur:
        cur.execute("UPDATE pywrapai_schema SET version = 99 WHERE table_name = %s", (table,))
    with pytest.raises(ConfigurationError, match="schema version 99, newer than"):
        PGVectorStore(pg_url, table_name=table, dimension=DIM, create_schema=False)
    with pytest.raises(ConfigurationError, match="upgrade pywrapai-graph"):
        PGVectorStore(pg_url, table_name=table, dimension=DIM)
    code, _, err = cli("--config", write_config(tmp_path, pg_url, table), "store", "init")
    assert code == 2 and f"newer than the version {SCHEMA_VERSION}" in err
    with pytest.raises(ConfigurationError, match="dimension 8"):
        PGVectorStore.init_schema(pg_url, table, 16)


def test_store_init_refuses_another_backend(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"store": {"backend": "memory"}}))
    code, _, err = cli("--config", str(path), "store", "init")
    assert code == 2 and "store.backend: pgvector" in err
