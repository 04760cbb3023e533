"""A store call's clock starts when the call is made: an async twin queued behind busy
offload threads, and a sync call made inside another, see the moment of the outer call."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator, Sequence

import pytest

from pywrapai_graph import InMemoryVectorStore
from pywrapai_graph.domain import ScoredChunk
from pywrapai_graph.ports import offload as offload_module
from pywrapai_graph.ports.call_clock import call_clock, call_made
from pywrapai_graph.ports.offload import offload
from pywrapai_graph.ports.vector_store import MetadataFilter
from pywrapai_graph.testing.contracts.vector_store import make_chunks


class ClockedStore(InMemoryVectorStore):
    """Notes the call's clock and the moment its work ran, for each search."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[float, float]] = []

    def _search(
        self, query_vector: Sequence[float], k: int, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        self.seen.append((call_made(), time.monotonic()))
        return super()._search(query_vector, k, filter)


@pytest.fixture
def two_threads(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("PYWRAPAI_OFFLOAD_THREADS", "2")
    monkeypatch.setattr(offload_module, "_pools", {})
    monkeypatch.setattr(offload_module, "_pending", [0])
    yield
    pool = offload_module._pools.get("pool")
    if pool is not None:
        pool.shutdown(wait=True)


@pytest.mark.usefixtures("two_threads")
async def test_an_async_call_queued_for_a_thread_keeps_the_moment_it_was_made() -> None:
    store = ClockedStore()
    chunks = make_chunks(3, 4)
    store.add(chunks)
    gate = threading.Event()
    blockers = [asyncio.ensure_future(offload(gate.wait, 30)) for _ in range(2)]
    await asyncio.sleep(0.05)  # both threads taken
    called = time.monotonic()
    search = asyncio.ensure_future(store.asearch(chunks[0].embedding or [], k=1))
    await asyncio.sleep(0.05)  # the search is queued behind the blockers
    opened = time.monotonic()
    gate.set()
    await asyncio.gather(search, *blockers)
    [(made, ran)] = store.seen
    assert called <= made < opened <= ran  # the clock started before the queue, not after


def test_a_call_inside_another_keeps_the_outer_moment() -> None:
    store = ClockedStore()
    chunks = make_chunks(3, 4)
    store.add(chunks)
    with call_clock() as outer:
        time.sleep(0.01)
        store.search(chunks[0].embedding or [], k=1)
    store.search(chunks[0].embedding or [], k=1)  # a call of its own: a new moment
    (first, _), (second, _) = store.seen
    assert first == outer and second > outer
