"""One deadline from the moment of the call: with PostgreSQL frozen (SIGSTOP on the
postmaster and every backend) under 40 concurrent calls, threads and async tasks through the
offload pool, each call answers a typed error within its deadline plus a small slack, none
waits for the freeze to end, and the store serves again once the server is thawed."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable, Coroutine, Iterator
from typing import Any

import pytest

from pywrapai_graph import PGVectorStore
from pywrapai_graph.adapters.vectorstores.postgres.pool import CLIENT_GRACE_S
from pywrapai_graph.errors import StoreBusyError, StoreTimeoutError
from pywrapai_graph.testing.contracts.vector_store import make_chunks
from tests.integration.servers import EmbeddedPostgres
from tests.integration.test_pg_frozen import server_pids

pytestmark = pytest.mark.integration
DIM = 8
STATEMENT_MS = 1500
#: a call answers by its deadline, plus the client's grace for a server that stopped
#: answering in the middle of a statement, plus this much for a busy test machine
SLACK_S = 1.5
#: the freeze outlasts every deadline by far: a call that waited for the thaw shows
FREEZE_S = 15.0


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[EmbeddedPostgres, str]]:
    """A server of this module's own: freezing the shared one would stall other tests."""
    pg = EmbeddedPostgres()
    try:
        yield pg, pg.start()
    finally:
        pg.stop()


def timed_thread(call: Callable[[], Any], out: list[tuple[float, BaseException | None]]) -> None:
    start = time.monotonic()
    try:
        call()
        out.append((time.monotonic() - start, None))
    except BaseException as exc:  # collected for the assertions
        out.append((time.monotonic() - start, exc))


async def timed_task(
    call: Coroutine[Any, Any, Any], out: list[tuple[float, BaseException | None]]
) -> None:
    start = time.monotonic()
    try:
        await call
        out.append((time.monotonic() - start, None))
    except BaseException as exc:  # collected for the assertions
        out.append((time.monotonic() - start, exc))


def test_a_frozen_server_answers_every_call_within_its_deadline(
    server: tuple[EmbeddedPostgres, str],
) -> None:
    pg, url = server
    store = PGVectorStore(
        url,
        table_name=f"deadline_{uuid.uuid4().hex[:8]}",
        dimension=DIM,
        pool_size=4,
        pool_timeout_ms=10_000,  # longer than the deadline: the deadline must end the wait
        statement_timeout_ms=STATEMENT_MS,
    )
    chunks = make_chunks(20, DIM)
    store.add(chunks)
    query = chunks[0].embedding or []
    sync_calls: list[Callable[[], Any]] = [
        lambda: store.search(query, k=2),
        lambda: store.lexical_search("chunk c3", k=2),
        store.count,
        lambda: store.add(make_chunks(1, DIM, seed=1, prefix="late-")),
    ]
    out: list[tuple[float, BaseException | None]] = []

    async def tasks() -> None:
        calls: list[Callable[[], Coroutine[Any, Any, Any]]] = [
            lambda: store.asearch(query, k=2),
            store.acount,
            lambda: store.aadd(make_chunks(1, DIM, seed=2, prefix="async-")),
            lambda: store.asearch_many([query], k=2),
        ]
        await asyncio.gather(*(timed_task(calls[i % 4](), out) for i in range(20)))

    pids = server_pids(pg)
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    frozen_at = time.monotonic()
    try:
        workers = [
            threading.Thread(target=timed_thread, args=(sync_calls[i % 4], out)) for i in range(20)
        ]
        workers.append(threading.Thread(target=asyncio.run, args=(tasks(),)))
        for w in workers:
            w.start()
        for w in workers:
            w.join(timeout=max(0.0, frozen_at + FREEZE_S - time.monotonic()))
        hung = sum(w.is_alive() for w in workers)
        answered = time.monotonic() - frozen_at
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
    for w in workers:
        w.join(timeout=120)
    assert not hung and answered < FREEZE_S, "calls waited for the freeze to end"
    assert len(out) == 40
    bound = STATEMENT_MS / 1000 + CLIENT_GRACE_S + SLACK_S
    late = sorted(round(s, 2) for s, _ in out if s > bound)
    assert not late, f"{len(late)} of 40 calls took longer than {bound} s: {late}"
    kinds = {type(e).__name__ for _, e in out}
    assert kinds <= {StoreTimeoutError.__name__, StoreBusyError.__name__}, [e for _, e in out]
    # thawed: the next call succeeds, on fresh connections
    assert store.search(query, k=1)[0].chunk.id == chunks[0].id
    store.close()
