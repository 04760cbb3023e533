"""A cold container over real PostgreSQL, asked by 64 threads and 64 event-loop tasks at
once: one store, one LLM, one ledger, and never more server connections than pool_size."""

from __future__ import annotations

import asyncio
import threading
import uuid
from typing import Any

import pytest

from pywrapai_graph import Document
from pywrapai_graph.composition.container import Container, build_container
from pywrapai_graph.testing.wire import OpenAIWire

pytestmark = pytest.mark.integration
THREADS = TASKS = 64
POOL = 4


def connections(admin: Any, table: str) -> int:
    with admin.cursor() as cur:
        cur.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
            (f"pywrapai-graph:{table}",),
        )
        return int(cur.fetchone()[0])


def burst(container: Container) -> list[tuple[Any, ...]]:
    """64 threads and 64 tasks behind one barrier, each building a scoped view and searching."""
    barrier = threading.Barrier(THREADS + 1)
    seen: list[tuple[Any, ...]] = []
    errors: list[BaseException] = []

    def thread(i: int) -> None:
        barrier.wait()
        try:
            graph = container.scoped_graph(scope={"tenant": f"t{i % 3}"})
            hits = container.scoped_retriever(scope={"tenant": f"t{i % 3}"}).retrieve("refunds")
            seen.append((graph.llm, graph.tokens, container.vector_store(), len(hits)))
        except BaseException as exc:  # reported below
            errors.append(exc)

    async def task(i: int, start: asyncio.Event) -> tuple[Any, ...]:
        await start.wait()
        graph = container.scoped_graph(scope={"tenant": f"t{i % 3}"})
        scoped = container.scoped_retriever(scope={"tenant": f"t{i % 3}"})
        hits = await scoped.aretrieve("refunds")
        return (graph.llm, graph.tokens, container.vector_store(), len(hits))

    async def tasks() -> None:
        start = asyncio.Event()
        running = [asyncio.ensure_future(task(i, start)) for i in range(TASKS)]
        await asyncio.sleep(0)
        await asyncio.to_thread(barrier.wait)
        start.set()
        seen.extend(await asyncio.gather(*running))

    workers = [threading.Thread(target=thread, args=(i,)) for i in range(THREADS)]
    workers.append(threading.Thread(target=lambda: asyncio.run(tasks())))
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=300)
        assert not w.is_alive(), "a caller hung"
    assert not errors, errors[:3]
    return seen


def test_cold_burst_builds_one_store_and_stays_within_the_pool(pg_url: str, admin: Any) -> None:
    table = f"burst_{uuid.uuid4().hex[:10]}"
    store = {"backend": "pgvector", "dsn": pg_url, "table": table, "dimension": 64}
    with OpenAIWire() as wire:
        llm = {"provider": "openai", "api_key": "k", "base_url": wire.base_url}
        store["pool_size"] = POOL
        embedder = {"provider": "hashing", "dimension": 64}
        with build_container({"llm": llm, "embedder": embedder, "store": store}) as container:
            seen = burst(container)
            assert connections(admin, table) == POOL
            assert len(seen) == THREADS + TASKS
            for position, name in enumerate(("LLM", "ledger", "store")):
                assert len({id(s[position]) for s in seen}) == 1, f"more than one {name}"
            container.retriever().add_documents([Document("refunds take 14 days", id="r")])
        # shutdown closed the one pool (a backend leaves pg_stat_activity shortly after)
        assert any(
            connections(admin, table) == 0 or threading.Event().wait(0.05) for _ in range(200)
        )
