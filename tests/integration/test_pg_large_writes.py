"""A PostgreSQL write larger than one statement may run: it goes in bounded statements inside
its one transaction, each under its own deadline, and a timeout says what became of it.

Against the embedded PostgreSQL, through a wire proxy that lists the statements the store
sends (and, for the client-deadline cases, stops passing the server's replies back)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from pywrapai_graph import Chunk, PGVectorStore
from pywrapai_graph.adapters.vectorstores.postgres.rows import lexical_terms
from pywrapai_graph.errors import StoreTimeoutError
from tests.integration.pg_wire import StatementCounter

pytestmark = pytest.mark.integration

DIM = 16


def copies(sent: list[str]) -> int:
    """The slices among the statements ``sent``: each upserts its chunks in one statement."""
    return sum(s.startswith("WITH moved AS") for s in sent)


class HoldingProxy(StatementCounter):
    """:class:`StatementCounter` that stops passing the server's replies back once a
    statement matching :attr:`hold_after` was sent (the client then waits, as it would on a
    stopped server); the statement itself reaches the server."""

    def __init__(self, upstream_url: str) -> None:
        super().__init__(upstream_url)
        self.hold_after: Callable[[list[str]], bool] = lambda _: False
        self.holding = threading.Event()

    def _pump(self, source: Any, sink: Any) -> None:  # type: ignore[override]
        try:
            while data := source.recv(65536):
                if not self.holding.is_set():
                    sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                s.close()

    def _read_client(self, client: Any, server: Any) -> None:
        buffer, untyped = b"", True
        try:
            while data := client.recv(65536):
                buffer, untyped = self._parse(buffer + data, untyped)
                with self._lock:
                    if self.hold_after(self.statements):
                        self.holding.set()  # before the statement goes: its reply is held
                server.sendall(data)
        except OSError:
            pass
        finally:
            for s in (client, server):  # shutdown: the pump's recv on it would keep it open
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()


@pytest.fixture
def wire(pg_url: str) -> Iterator[tuple[HoldingProxy, str]]:
    proxy = HoldingProxy(pg_url)
    url = proxy.start()
    yield proxy, url
    proxy.stop()


def documents(n: int, seed: int = 0) -> list[Chunk]:
    """``n`` chunks of 60 words in documents of 40, each repeating the last 10 words of the
    chunk before it (as a chunker's overlap does: the document field counts them once)."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, DIM)).astype(np.float32).tolist()
    words = [f"w{int(i)}" for i in rng.integers(0, 3000, size=50 * n + 10)]
    return [
        Chunk(" ".join(words[50 * i : 50 * i + 60]), f"d{i // 40}", {"n": i}, f"c{i}", vectors[i])
        for i in range(n)
    ]


def rows(admin: Any, query: str, *params: Any) -> list[Any]:
    with admin.cursor() as cur:
        cur.execute(query, params)
        return list(cur.fetchall()) if cur.description else []


def test_a_write_of_several_statement_timeouts_succeeds_in_bounded_statements(
    wire: tuple[HoldingProxy, str], admin: Any
) -> None:
    proxy, url = wire
    table = f"big_{uuid.uuid4().hex[:10]}"
    # one statement for all 3,000 rows takes several times this (HNSW insertion), and so
    # does the whole write; a slice of them fits
    store = PGVectorStore(url, table_name=table, dimension=DIM, statement_timeout_ms=800)
    chunks = documents(3000)
    proxy.take()
    started = time.monotonic()
    store.add(chunks)
    took = time.monotonic() - started
    sent = proxy.take()
    assert sent[0] == "BEGIN" and sent[-1] == "COMMIT"  # one transaction
    slices = copies(sent)
    assert slices >= 4, (slices, took)

    assert len(store) == 3000
    stored = {r[0]: r[1:] for r in rows(admin, f"SELECT id, lex_len, lex_doc FROM {table}")}
    whole = lexical_terms(chunks, {})  # the write analysed as one: each chunk's share
    assert stored == {c.id: (len(t), len(d)) for c, (t, d) in zip(chunks, whole, strict=True)}
    assert rows(admin, f"SELECT sum(n), sum(docs) FROM {table}__bm25") == [(3000, 75)]
    hit = store.lexical_search(chunks[1234].text, k=1)[0]
    assert hit.chunk.id == "c1234"

    assert store.delete_by_doc("d0") == 40  # deletes go in slices too
    assert store.delete([c.id for c in chunks]) == 2960
    assert rows(admin, f"SELECT count(*) FROM {table}__terms") == [(0,)]
    assert rows(admin, f"SELECT sum(n), sum(docs) FROM {table}__bm25") == [(0, 0)]
    store.close()


def test_a_later_slice_that_fails_leaves_nothing_of_the_write(
    wire: tuple[HoldingProxy, str], admin: Any
) -> None:
    proxy, url = wire
    table = f"big_{uuid.uuid4().hex[:10]}"
    store = PGVectorStore(url, table_name=table, dimension=DIM, statement_timeout_ms=800)
    chunks = documents(2000, seed=1)
    store.add([chunks[-1]])  # the write's last chunk exists, and another transaction locks it
    admin.autocommit = False
    rows(admin, f"SELECT id FROM {table} WHERE id = %s FOR UPDATE", chunks[-1].id)
    proxy.take()
    with pytest.raises(StoreTimeoutError) as raised:
        store.add(chunks)
    admin.rollback()
    admin.autocommit = True
    message = str(raised.value)
    assert "statement_timeout (800 ms)" in message
    assert "the transaction was rolled back: nothing of this call was applied" in message
    assert "may have been applied" not in message
    assert copies(proxy.take()) >= 2  # failed mid-way

    assert len(store) == 1
    assert rows(admin, f"SELECT count(*) FROM {table}__terms WHERE chunk_id <> %s", "c1999") == [
        (0,)
    ]
    assert rows(admin, f"SELECT sum(n), sum(docs) FROM {table}__bm25") == [(1, 1)]
    store.add(chunks)  # the lock is gone: the same write goes in whole
    assert len(store) == 2000
    store.clear()
    store.close()


@pytest.mark.parametrize(
    ("hold_after", "applied"),
    [
        (lambda sent: copies(sent) == 2, False),
        (lambda sent: bool(sent) and sent[-1] == "COMMIT", True),
    ],
    ids=["mid-write", "commit"],
)
def test_the_client_deadline_says_whether_the_write_may_have_been_applied(
    wire: tuple[HoldingProxy, str],
    admin: Any,
    hold_after: Callable[[list[str]], bool],
    applied: bool,
) -> None:
    proxy, url = wire
    table = f"big_{uuid.uuid4().hex[:10]}"
    store = PGVectorStore(url, table_name=table, dimension=DIM, statement_timeout_ms=300)
    chunks = documents(600, seed=2)
    proxy.hold_after = hold_after
    started = time.monotonic()
    with pytest.raises(StoreTimeoutError) as raised:
        store.add(chunks)
    assert proxy.holding.is_set()
    assert time.monotonic() - started < 30  # each statement's deadline, not the write's
    message = str(raised.value)
    assert "did not answer within 2.3 s" in message
    assert ("may have been applied" in message) is applied
    assert ("the transaction was rolled back" in message) is not applied
    store.close()

    def settled() -> bool:  # the server saw the connection go (and rolled back if not done)
        return not rows(
            admin,
            "SELECT 1 FROM pg_stat_activity WHERE application_name = %s",
            f"pywrapai-graph:{table}",
        )

    deadline = time.monotonic() + 20
    while not settled() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert settled()
    assert rows(admin, f"SELECT count(*) FROM {table}") == [(600 if applied else 0,)]
    rows(admin, f"TRUNCATE {table}, {table}__terms, {table}__doclen, {table}__bm25")
