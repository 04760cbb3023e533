"""A worker notices, at its next query, that another process cleared the store and filled it
with another embedder of the same dimension (issue 23, the embedder identity): its dense and
hybrid retrievals raise ``EmbedderMismatchError`` instead of ranking the other model's
vectors with its own; lexical retrieval (no embedding) keeps serving; its writes are refused.
Chroma, which has no lexical search, runs the dense half.

Workers are real processes (``spawn``) answering commands over a pipe (``identity_workers``):
each reply proves its command finished, so the order is structural, never timed. The stores
that serve one process at a time (Qdrant local mode, embedded Chroma, in-memory) run the same
scenario with two retrievers in one process. PostgreSQL keeps one statement per dense query.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import uuid
from pathlib import Path
from typing import Any

import pytest

from pywrapai_graph import Document, VectorRetriever
from pywrapai_graph.errors import EmbedderMismatchError
from pywrapai_graph.ports.store_query import RetrievalMode
from tests.integration.identity_workers import embedder, open_store, serve
from tests.integration.pg_wire import StatementCounter
from tests.integration.test_server_stores import name_for

pytestmark = pytest.mark.integration
DOCS = [
    ("d1", "Laminar boundary layers on a heated flat plate transfer heat slowly."),
    ("d2", "Supersonic shock waves form ahead of a blunt cone in wind tunnels."),
    ("d3", "Thin cylindrical shells buckle under external hydrostatic pressure loads."),
]
QUERY = "laminar boundary layer heated plate"
RUNS = ("sync", "async")


class Worker:
    """One worker process and its end of the pipe."""

    def __init__(self, kind: str, where: str) -> None:
        ctx = mp.get_context("spawn")
        self.conn, theirs = ctx.Pipe()
        self.proc = ctx.Process(target=serve, args=(kind, where, theirs), daemon=True)
        self.proc.start()
        theirs.close()
        assert self.conn.recv() == ("ok", None)

    def reply(self, *command: Any) -> tuple[str, Any]:
        self.conn.send(command)
        status, value = self.conn.recv()
        return str(status), value

    def ask(self, *command: Any) -> Any:
        status, value = self.reply(*command)
        assert status == "ok", value
        return value

    def stop(self) -> None:
        if self.proc.is_alive():
            self.conn.send(("close",))
            self.conn.recv()
        self.proc.join(timeout=60)
        if self.proc.is_alive():
            self.proc.kill()
        self.conn.close()


def _where(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if kind == "sqlite":
        return str(tmp_path / "store.db")
    if kind == "faiss":
        return str(tmp_path / "store")
    if kind == "pg":
        return f"{request.getfixturevalue('pg_url')}#ident_{uuid.uuid4().hex[:10]}"
    fixture = "chroma_url" if kind == "chroma_server" else "qdrant_rest_url"
    return f"{request.getfixturevalue(fixture)}#{name_for(tmp_path, 'id')}"


def _refused(reply: tuple[str, Any]) -> bool:
    status, message = reply
    return status == "error" and str(message).startswith("EmbedderMismatchError: ")


@pytest.mark.parametrize("kind", ["sqlite", "faiss", "pg", "chroma_server", "qdrant_server"])
def test_a_worker_notices_another_processes_embedder(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    where = _where(kind, tmp_path, request)
    a, b = Worker(kind, where), Worker(kind, where)
    lexical = not kind.startswith("chroma")
    embedded = ("dense", "hybrid") if lexical else ("dense",)  # the modes that embed
    try:
        a.ask("ingest", DOCS)
        for mode in (*embedded, "lexical") if lexical else embedded:  # a checks its model
            for run in RUNS:
                assert a.ask("retrieve", mode, QUERY, run)[0] == "d1", (mode, run)
        b.ask("use", "second")
        b.ask("clear")
        b.ask("ingest", DOCS)  # another model of the same dimension fills the store
        assert b.ask("retrieve", "dense", QUERY, "sync")  # the new model's worker is served
        for run in RUNS:
            for mode in embedded:
                reply = a.reply("retrieve", mode, QUERY, run)
                assert _refused(reply) and "second-model" in reply[1], (mode, run, reply)
            if lexical:
                assert a.ask("retrieve", "lexical", QUERY, run)[0] == "d1"  # BM25: no embedder
        assert _refused(a.reply("ingest", DOCS))  # writes were refused already
        a.ask("clear")  # a takes the store back: its model serves it again, nothing sticks
        a.ask("ingest", DOCS)
        assert a.ask("retrieve", embedded[-1], QUERY, "sync")[0] == "d1"
        assert _refused(b.reply("retrieve", "dense", QUERY, "async"))
    finally:
        a.stop()
        b.stop()


def _one_process_store(kind: str, tmp_path: Path) -> Any:
    if kind == "in_memory":
        from pywrapai_graph import InMemoryVectorStore

        return InMemoryVectorStore()
    if kind == "qdrant_memory":
        from pywrapai_graph import QdrantVectorStore

        return QdrantVectorStore("one", location=":memory:")
    return open_store(kind, str(tmp_path / kind))


@pytest.mark.parametrize("kind", ["in_memory", "qdrant_local", "qdrant_memory", "chroma_embedded"])
def test_one_process_stores_notice_another_embedder(kind: str, tmp_path: Path) -> None:
    store = _one_process_store(kind, tmp_path)
    docs = [Document(text, id=doc_id) for doc_id, text in DOCS]
    try:
        modes: tuple[RetrievalMode, ...] = ("dense", "hybrid") if store.lexical else ("dense",)
        first = {m: VectorRetriever(embedder("first"), store, mode=m) for m in modes}
        lexical = [VectorRetriever(embedder("first"), store, mode="lexical") for _ in modes[1:]]
        first["dense"].add_documents(docs)
        for retriever in (*first.values(), *lexical):
            assert retriever.retrieve(QUERY)[0].chunk.doc_id == "d1"
        store.clear()
        VectorRetriever(embedder("second"), store).add_documents(docs)
        for retriever in first.values():
            with pytest.raises(EmbedderMismatchError, match="second-model"):
                retriever.retrieve(QUERY)
            with pytest.raises(EmbedderMismatchError, match="second-model"):
                asyncio.run(retriever.aretrieve(QUERY))
        assert all(r.retrieve(QUERY)[0].chunk.doc_id == "d1" for r in lexical)
    finally:
        store.close()


def test_pg_dense_query_checks_the_embedder_in_its_one_statement(pg_url: str) -> None:
    counter = StatementCounter(pg_url)
    url = counter.start()
    try:
        where = f"{url}#ident_{uuid.uuid4().hex[:10]}"
        store = open_store("pg", where)
        retriever = VectorRetriever(embedder("first"), store)
        retriever.add_documents([Document(text, id=doc_id) for doc_id, text in DOCS])
        for _ in range(store.pool_size + 1):  # every pooled connection set up
            retriever.retrieve(QUERY)
        counter.take()
        for _ in range(5):
            assert retriever.retrieve(QUERY)[0].chunk.doc_id == "d1"
        sent = counter.take()
        assert len(sent) == 5 and all("key = 'embedder'" in s for s in sent), sent
        other = open_store("pg", where)  # another worker clears and refills, other model
        other.clear()
        VectorRetriever(embedder("second"), other).add_documents([Document(DOCS[0][1], id="d1")])
        counter.take()
        with pytest.raises(EmbedderMismatchError):
            retriever.retrieve(QUERY)
        assert len(counter.take()) == 1
        other.close()
        store.close()
    finally:
        counter.stop()
