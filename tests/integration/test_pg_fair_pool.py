"""Waiting for a pooled PostgreSQL connection is fair: more threads and tasks than
connections, each call short, never see ``StoreBusyError``; a pool that really stays busy
answers ``StoreBusyError`` once ``pool_timeout_ms`` has passed, not before."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from pywrapai_graph import PGVectorStore
from pywrapai_graph.errors import StoreBusyError
from pywrapai_graph.testing.contracts.vector_store import make_chunks

pytestmark = pytest.mark.integration
DIM = 8
POOL = 4
#: seconds of steady load; the old pool (a semaphore that lets a releasing thread take the
#: permit back before the woken waiter runs) failed 2-4 lexical searches in 4 s with 6 threads
SECONDS = 4.0


@pytest.fixture
def store(pg_url: str) -> Iterator[PGVectorStore]:
    store = PGVectorStore(
        pg_url,
        table_name=f"fair_{uuid.uuid4().hex[:8]}",
        dimension=DIM,
        pool_size=POOL,
        pool_timeout_ms=2000,
    )
    store.add(make_chunks(200, DIM))
    yield store
    store.close()


def test_more_threads_and_tasks_than_connections_never_get_busy(store: PGVectorStore) -> None:
    query = make_chunks(1, DIM)[0].embedding or []
    done: list[str] = []
    busy: list[StoreBusyError] = []
    end = time.monotonic() + SECONDS

    def thread() -> None:
        while time.monotonic() < end:
            try:
                store.lexical_search("chunk c7", k=3)
                done.append("thread")
            except StoreBusyError as exc:
                busy.append(exc)

    async def task() -> None:
        while time.monotonic() < end:
            try:
                await store.asearch(query, k=3)
                done.append("task")
            except StoreBusyError as exc:
                busy.append(exc)

    async def tasks() -> None:
        await asyncio.gather(*(task() for _ in range(4)))

    workers = [threading.Thread(target=thread) for _ in range(6)]
    workers.append(threading.Thread(target=asyncio.run, args=(tasks(),)))
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=SECONDS + 60)
        assert not w.is_alive(), "a caller hung"
    assert not busy, f"{len(busy)} StoreBusyError beside {len(done)} calls: {busy[0]}"
    assert "thread" in done and "task" in done


def hold_table_lock(pg_url: str, table: str) -> Any:
    """A connection of its own holding an exclusive lock on ``table`` until rollback."""
    import psycopg2

    locker = psycopg2.connect(pg_url)
    with locker.cursor() as cur:
        cur.execute(f'LOCK TABLE "{table}" IN ACCESS EXCLUSIVE MODE')
    return locker


def test_a_pool_held_busy_answers_busy_after_the_pool_timeout(pg_url: str) -> None:
    table = f"held_{uuid.uuid4().hex[:8]}"
    store = PGVectorStore(
        pg_url, table_name=table, dimension=DIM, pool_size=2, pool_timeout_ms=1000
    )
    store.add(make_chunks(4, DIM))
    locker = hold_table_lock(pg_url, table)
    holders = [threading.Thread(target=store.count) for _ in range(2)]
    try:
        for h in holders:  # both connections wait on the server for the lock
            h.start()
        waited: list[float] = []
        failures: list[BaseException] = []

        def late_call() -> None:
            start = time.monotonic()
            try:
                store.count()
            except BaseException as exc:  # checked below
                failures.append(exc)
            waited.append(time.monotonic() - start)

        async def late_task() -> None:
            start = time.monotonic()
            try:
                await store.acount()
            except BaseException as exc:  # checked below
                failures.append(exc)
            waited.append(time.monotonic() - start)

        time.sleep(0.5)  # the holders have the connections (a waiter would wait longer)
        late = [
            threading.Thread(target=late_call),
            threading.Thread(target=asyncio.run, args=(late_task(),)),
        ]
        for t in late:
            t.start()
        for t in late:
            t.join(timeout=60)
        assert [type(f) for f in failures] == [StoreBusyError, StoreBusyError], failures
        assert "pool_timeout_ms" in str(failures[0])
        # on time: not before the pool timeout, and not much after it
        assert all(1.0 <= w < 1.0 + 2.5 for w in waited), waited
    finally:
        locker.rollback()
        locker.close()
        for h in holders:
            h.join(timeout=60)
        store.close()
