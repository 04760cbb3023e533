"""A frozen PostgreSQL (SIGSTOP on the postmaster and every backend) turns into typed errors
within the store's deadlines, and the FastAPI example's health checks still answer."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from pywrapai_graph import PGVectorStore
from pywrapai_graph.errors import StoreBusyError, StoreTimeoutError
from pywrapai_graph.testing.contracts.vector_store import make_chunks
from tests.integration.servers import EmbeddedPostgres

pytestmark = pytest.mark.integration
DIM = 8


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[EmbeddedPostgres, str]]:
    """A server of this module's own: freezing the shared one would stall other tests."""
    pg = EmbeddedPostgres()
    try:
        yield pg, pg.start()
    finally:
        pg.stop()


def server_pids(pg: EmbeddedPostgres) -> list[int]:
    """The postmaster and every process it started (backends, checkpointer, ...)."""
    postmaster = int((pg.root / "data" / "db" / "postmaster.pid").read_text().split()[0])
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                # the parent pid is the 2nd field after the ")" closing the command name
                if int((entry / "stat").read_text().rpartition(")")[2].split()[1]) == postmaster:
                    children.append(int(entry.name))
    return [postmaster, *children]


@contextlib.contextmanager
def frozen(pg: EmbeddedPostgres) -> Iterator[None]:
    pids = server_pids(pg)
    stopped = []
    try:
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
            stopped.append(pid)
        yield
    finally:
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


def outcomes(calls: list[Callable[[], Any]]) -> list[BaseException | None]:
    """Run the calls at once, each in a thread; what each raised (None: returned)."""
    results: list[BaseException | None] = [None] * len(calls)

    def run(i: int) -> None:
        try:
            calls[i]()
        except BaseException as exc:  # collected for the assertions
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive(), "a call hung on the frozen server"
    return results


def test_a_frozen_server_gives_typed_errors_within_the_deadlines(
    server: tuple[EmbeddedPostgres, str],
) -> None:
    pg, url = server
    store = PGVectorStore(
        url,
        table_name=f"frozen_{uuid.uuid4().hex[:8]}",
        dimension=DIM,
        pool_size=2,
        pool_timeout_ms=300,  # before the calls' deadline: the third call finds the pool busy
        statement_timeout_ms=800,
    )
    chunks = make_chunks(4, DIM)
    store.add(chunks)
    query = chunks[0].embedding or []
    with frozen(pg):
        # two calls take the two connections and time out; the third finds none free
        got = outcomes(
            [
                lambda: store.search(query, k=1),
                lambda: store.add(make_chunks(1, DIM, seed=1, prefix="late-")),
                lambda: asyncio.run(store.asearch(query, k=1)),
            ]
        )
        assert sorted(type(e).__name__ for e in got) == [
            "StoreBusyError",
            "StoreTimeoutError",
            "StoreTimeoutError",
        ], got
        timeout = next(e for e in got if isinstance(e, StoreTimeoutError))
        busy = next(e for e in got if isinstance(e, StoreBusyError))
        where = f"127.0.0.1:{pg.port}"
        assert where in str(timeout) and "statement_timeout_ms" in str(timeout)
        assert isinstance(timeout, TimeoutError)
        assert where in str(busy) and "pool_timeout_ms" in str(busy)
        # the timed-out connections were discarded, and a new one is not made in time either
        (late,) = outcomes([store.count])
        assert isinstance(late, StoreTimeoutError) and where in str(late), late
    # thawed: the store serves again on fresh connections
    assert store.search(query, k=1)[0].chunk.id == chunks[0].id
    store.close()


async def test_the_service_health_checks_answer_while_the_database_is_frozen(
    server: tuple[EmbeddedPostgres, str],
) -> None:
    pytest.importorskip("fastapi")
    from examples.fastapi_service import create_app

    pg, url = server
    table = f"svc_{uuid.uuid4().hex[:8]}"
    app = create_app(
        {
            "embedder": {"provider": "hashing", "dimension": DIM},
            "store": {"backend": "pgvector", "dsn": url, "table": table, "dimension": DIM},
        }
    )
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://service") as client,
    ):
        assert (await client.get("/ready")).status_code == 200
        with frozen(pg):
            live = await asyncio.wait_for(client.get("/health"), 30)
            ready = await asyncio.wait_for(client.get("/ready"), 30)
        assert live.status_code == 200 and live.json() == {"status": "ok"}
        assert ready.status_code == 503
        assert ready.json()["status"] == "degraded"
