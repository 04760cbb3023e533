"""docs/least-privilege.md, run as written against the real PostgreSQL: its SQL as the
superuser and the owner it names, its commands and its Python with the three roles' DSNs;
then what each application role can and cannot do."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pywrapai_graph import Document, PGVectorStore, VectorRetriever
from pywrapai_graph.adapters.embedders.hashing_embedder import FeatureHashingEmbedder
from pywrapai_graph.composition.container import build_container
from pywrapai_graph.errors import VectorStoreError
from pywrapai_graph.testing.contracts.vector_store import make_chunks
from tests import snippets
from tests.integration.test_pg_production import cli, write_config

pytestmark = pytest.mark.integration

PAGE = snippets.ROOT / "docs" / "least-privilege.md"
DIM = 384
ROLES = ("app_owner", "app_reader", "app_writer")
_SQL = re.compile(
    r"<!--\s*sql:\s*(?P<who>superuser|owner) on (?P<db>\w+)(?P<printed>, as printed[^>]*)?"
    r"\s*-->\s*\n```sql\n(?P<code>.*?)```",
    re.S,
)


@dataclass(frozen=True, slots=True)
class SqlBlock:
    line: int
    who: str
    database: str
    code: str
    printed: bool  # the output of the command before it

    def statements(self) -> list[str]:
        lines = [ln for ln in self.code.splitlines() if ln.strip() and not ln.startswith("--")]
        return [s.strip() for s in "\n".join(lines).split(";\n") if s.strip()]


def sql_blocks() -> list[SqlBlock]:
    text = PAGE.read_text(encoding="utf-8")
    return [
        SqlBlock(
            text.count("\n", 0, m.start("code")),
            m["who"],
            m["db"],
            m["code"],
            m["printed"] is not None,
        )
        for m in _SQL.finditer(text)
    ]


def page_steps() -> list[SqlBlock | snippets.Snippet]:
    """The page's SQL blocks and the snippets this test runs, in the page's order."""
    runs = [s for s in snippets.parse(PAGE) if "test_least_privilege.py" in s.reason]
    steps: list[SqlBlock | snippets.Snippet] = [*sql_blocks(), *runs]
    return sorted(steps, key=lambda s: s.line)


def dsn(pg_url: str, **parts: str) -> str:
    from psycopg2.extensions import make_dsn

    return str(make_dsn(pg_url, **parts))


def execute(url: str, statements: list[str]) -> None:
    import psycopg2

    conn = psycopg2.connect(url)
    conn.autocommit = True  # CREATE DATABASE refuses a transaction block
    try:
        with conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
    finally:
        conn.close()


def _drop_everything(pg_url: str) -> None:
    execute(
        pg_url,
        ["DROP DATABASE IF EXISTS app WITH (FORCE)", f"DROP ROLE IF EXISTS {', '.join(ROLES)}"],
    )


@dataclass(frozen=True, slots=True)
class Server:
    superuser: str  # on database app
    owner: str
    reader: str
    writer: str


@pytest.fixture(scope="module")
def page_run(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Every step of the page, in order, on a server without the page's roles and database."""
    _drop_everything(pg_url)
    server = Server(
        superuser=dsn(pg_url, dbname="app"),
        owner=dsn(pg_url, dbname="app", user="app_owner", password="owner-secret"),
        reader=dsn(pg_url, dbname="app", user="app_reader", password="reader-secret"),
        writer=dsn(pg_url, dbname="app", user="app_writer", password="writer-secret"),
    )
    urls = {
        ("superuser", "postgres"): pg_url,
        ("superuser", "app"): server.superuser,
        ("owner", "app"): server.owner,
    }
    env = {"OWNER_DSN": server.owner, "READER_DSN": server.reader, "WRITER_DSN": server.writer}
    printed = ""
    try:
        for number, step in enumerate(page_steps()):
            if isinstance(step, SqlBlock):
                if step.printed:  # the page shows what the command printed, exactly
                    assert step.code.strip() == printed.strip(), (
                        f"{PAGE.name}:{step.line}: the SQL differs from what the command above "
                        f"prints now; paste its output:\n{printed}"
                    )
                execute(urls[step.who, step.database], step.statements())
            else:
                printed = snippets.run(step, tmp_path_factory.mktemp(f"step{number}"), env)
        yield server
    finally:
        _drop_everything(pg_url)


def test_the_page_runs_as_written(page_run: Server) -> None:
    kinds = [type(s).__name__ for s in page_steps()]
    assert kinds.count("SqlBlock") == 3 and kinds.count("Snippet") == 3
    reader = PGVectorStore(page_run.reader, dimension=DIM, create_schema=False)
    assert reader.document_manifest("refunds") is not None  # the page's writer ingested it
    reader.close()


def test_the_pages_configuration_opens_the_readers_store(page_run: Server) -> None:
    import yaml

    text = PAGE.read_text(encoding="utf-8")
    block = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    config = yaml.safe_load(block)
    config["store"]["dsn"] = page_run.reader  # the environment's PYWRAPAI_STORE__DSN
    container = build_container(config)
    store = container.vector_store()
    assert isinstance(store, PGVectorStore)
    assert store.pool_size == 4
    assert store.count() >= 1
    container.shutdown()


def _retriever(store: PGVectorStore, mode: Any = "dense") -> VectorRetriever:
    return VectorRetriever(FeatureHashingEmbedder(DIM), store, min_score=-1.0, mode=mode)


def test_the_reader_searches_and_every_write_names_the_missing_right(page_run: Server) -> None:
    reader = PGVectorStore(page_run.reader, dimension=DIM, create_schema=False)
    before = reader.count()
    assert before >= 1
    assert _retriever(reader).retrieve("refunds")[0].chunk.doc_id == "refunds"
    assert _retriever(reader, "lexical").retrieve("refunds")[0].chunk.doc_id == "refunds"
    assert _retriever(reader, "hybrid").retrieve("refunds")[0].chunk.doc_id == "refunds"
    assert reader.count({"missing": "x"}) == 0
    chunk_id = reader.search(FeatureHashingEmbedder(DIM).embed_one("refunds"), k=1)[0].chunk.id

    writes: list[tuple[Any, str]] = [
        (lambda: reader.add(make_chunks(2, DIM)), "lacks INSERT on table 'vector_chunks'"),
        (
            lambda: _retriever(reader).add_documents([Document("new text", id="new")]),
            "lacks INSERT on table 'vector_chunks__info'",  # the first table it writes
        ),
        (lambda: reader.delete([chunk_id]), "lacks DELETE on table 'vector_chunks'"),
        (lambda: reader.delete_by_doc("refunds"), "lacks DELETE on table 'vector_chunks'"),
        (reader.clear, "lacks TRUNCATE on table 'vector_chunks'"),
    ]
    for write, right in writes:
        with pytest.raises(VectorStoreError, match=re.escape(right)) as info:
            write()
        assert "GRANT" in str(info.value) and "store grants" in str(info.value)
    assert reader.count() == before  # nothing changed
    reader.close()


def test_the_writer_ingests_replaces_and_deletes(page_run: Server) -> None:
    writer = PGVectorStore(page_run.writer, dimension=DIM, create_schema=False, pool_size=2)
    retriever = _retriever(writer)
    doc = Document("Shipping takes 3 days. " * 40, id="shipping")
    assert retriever.add_documents([doc]) >= 1
    changed = Document("Shipping takes 2 days now. " * 40, id="shipping")
    retriever.add_documents([changed])  # a replace: old chunks out, new ones in, one transaction
    assert "2 days" in retriever.retrieve("shipping", filter={})[0].chunk.text
    writer.add(make_chunks(600, DIM))  # 500+ rows: binary COPY through a temporary table
    assert writer.count() >= 601
    ids = [c.id for c in make_chunks(600, DIM)]
    assert writer.delete(ids) == 600
    assert writer.delete_by_doc("shipping") >= 1
    with pytest.raises(VectorStoreError, match="lacks TRUNCATE"):
        writer.clear()  # an owner's job
    writer.close()


@pytest.mark.parametrize("role", ["reader", "writer"])
def test_neither_role_can_create_a_schema(page_run: Server, role: str) -> None:
    url = getattr(page_run, role)
    with pytest.raises(VectorStoreError, match=r"does not exist and create_schema is off"):
        PGVectorStore(url, table_name="other_docs", dimension=DIM, create_schema=False)
    with pytest.raises(VectorStoreError, match="lacks CREATE on schema public"):
        PGVectorStore(url, table_name="other_docs", dimension=DIM)
    with pytest.raises(VectorStoreError, match="lacks CREATE on schema public"):
        PGVectorStore.init_schema(url, "other_docs", DIM)


def _listed(statement: str) -> list[str]:
    """The relations a ``GRANT ... ON a, b TO r;`` names, unquoted, in order."""
    on = statement.split(" ON ", 1)[1].rsplit(" TO ", 1)[0]
    return [name.strip().strip('"') for name in on.split(",")]


def test_grants_leave_out_other_stores_that_share_the_name_prefix(pg_url: str) -> None:
    table = f"g_{uuid.uuid4().hex[:8]}"
    for name in (table, f"{table}__copy"):
        assert PGVectorStore.init_schema(pg_url, name, 4) is True
    statements = PGVectorStore.grant_statements(pg_url, table, reader="r1")
    select = next(s for s in statements if s.startswith("GRANT SELECT"))
    listed = _listed(select)
    assert listed[0] == table and listed[-1] == "pywrapai_schema"
    assert {f"{table}__docs", f"{table}__info"} <= set(listed)
    assert all(t == table or t.startswith(f"{table}__") for t in listed[:-1])
    assert not any(t.startswith(f"{table}__copy") for t in listed)  # another store's
    assert select.endswith(' TO "r1";')
    assert not any("INSERT" in s for s in statements)  # no writer named
    with pytest.raises(VectorStoreError, match=r"does not exist: run `pywrapai-graph store init"):
        PGVectorStore.grant_statements(pg_url, f"{table}_missing", writer="w")
    with pytest.raises(Exception, match="name a reader role, a writer role or both"):
        PGVectorStore.grant_statements(pg_url, table)


def test_store_grants_is_a_command(pg_url: str, tmp_path: Path) -> None:
    table = f"g_{uuid.uuid4().hex[:8]}"
    PGVectorStore.init_schema(pg_url, table, 8)

    config = write_config(tmp_path, pg_url, table)
    code, out, err = cli("--config", config, "store", "grants", "--writer", "svc")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    write = next(s for s in lines if s.startswith("GRANT INSERT, UPDATE, DELETE ON "))
    assert write.endswith(' TO "svc";')
    assert {table, f"{table}__docs", f"{table}__info"} <= set(_listed(write))
    assert "pywrapai_schema" not in _listed(write)  # only store init writes it
    assert re.search(r'^GRANT TEMPORARY ON DATABASE "\w+" TO "svc";$', out, re.M)
