"""A cold container asked by 64 threads and 64 event-loop tasks at once builds each shared
object once; shutdown() racing with builds closes everything that was built."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from pywrapai_graph.adapters.vectorstores.memory.store import InMemoryVectorStore
from pywrapai_graph.application.scoped_retriever import ScopedRetriever
from pywrapai_graph.application.vector_retriever import VectorRetriever
from pywrapai_graph.composition import backends
from pywrapai_graph.composition.backends import BackendEntry
from pywrapai_graph.composition.container import Container, build_container
from pywrapai_graph.composition.graph_llm import GraphLLM
from pywrapai_graph.composition.settings import StoreSettings
from pywrapai_graph.testing.wire import OpenAIWire

THREADS = TASKS = 64


class CountingStores:
    """A backend that counts the stores it builds and holds each build open until a second
    build starts (or 0.5 s pass): any second concurrent build is made to happen, not hoped for."""

    def __init__(self) -> None:
        self.built: list[InMemoryVectorStore] = []
        self.closed: list[InMemoryVectorStore] = []
        self._lock = threading.Lock()
        self._second = threading.Event()

    def build(self, store: StoreSettings) -> InMemoryVectorStore:
        with self._lock:
            count = len(self.built) + 1
            made = _ClosingStore(self, store.dimension)
            self.built.append(made)
        if count >= 2:
            self._second.set()
        self._second.wait(0.5)
        return made


class _ClosingStore(InMemoryVectorStore):
    def __init__(self, counter: CountingStores, dimension: int | None) -> None:
        super().__init__(dimension)
        self._counter = counter

    def close(self) -> None:
        self._counter.closed.append(self)


@pytest.fixture
def stores(monkeypatch: pytest.MonkeyPatch) -> CountingStores:
    counter = CountingStores()
    monkeypatch.setitem(backends._BACKENDS, "counting", BackendEntry("counting", counter.build))
    return counter


@pytest.fixture
def container(stores: CountingStores) -> Iterator[Container]:
    with OpenAIWire() as wire:
        llm = {"provider": "openai", "api_key": "k", "base_url": wire.base_url}
        built = build_container({"llm": llm, "store": {"backend": "counting", "dimension": 8}})
        yield built
        built.shutdown()


def ask_everything(container: Container, tenant: str) -> tuple[Any, ...]:
    graph = container.scoped_graph(scope={"tenant": tenant})
    assert isinstance(graph, GraphLLM)
    scoped = graph.retriever
    assert isinstance(scoped, ScopedRetriever)
    inner = scoped.inner
    assert isinstance(inner, VectorRetriever)
    return (graph.llm, graph.tokens, inner, inner.store, inner.embedder, container.ledger())


def test_a_cold_burst_of_threads_and_tasks_builds_each_object_once(
    container: Container, stores: CountingStores
) -> None:
    barrier = threading.Barrier(THREADS + 1)  # the threads and the event loop's thread
    seen: list[tuple[Any, ...]] = []
    errors: list[BaseException] = []

    def thread(i: int) -> None:
        barrier.wait()
        try:
            seen.append(ask_everything(container, f"t{i}"))
            seen.append((*seen[-1][:3], container.vector_store(), *seen[-1][4:]))
        except BaseException as exc:  # reported below
            errors.append(exc)

    async def task(i: int, start: asyncio.Event) -> tuple[Any, ...]:
        await start.wait()
        return ask_everything(container, f"a{i}")

    async def tasks() -> None:
        start = asyncio.Event()
        running = [asyncio.ensure_future(task(i, start)) for i in range(TASKS)]
        await asyncio.sleep(0)  # every task is parked on the event
        await asyncio.to_thread(barrier.wait)
        start.set()
        seen.extend(await asyncio.gather(*running))

    workers = [threading.Thread(target=thread, args=(i,)) for i in range(THREADS)]
    for w in workers:
        w.start()
    loop_thread = threading.Thread(target=lambda: asyncio.run(tasks()))
    loop_thread.start()
    for w in [*workers, loop_thread]:
        w.join(timeout=120)
        assert not w.is_alive(), "a caller hung"
    assert not errors, errors[:3]
    assert len(seen) == 2 * THREADS + TASKS
    assert len(stores.built) == 1, f"{len(stores.built)} stores built"
    for position, name in enumerate(("LLM", "ledger", "retriever", "store", "embedder")):
        assert len({id(s[position]) for s in seen}) == 1, f"more than one {name}"
    assert len({id(s[-1]) for s in seen}) == 1, "more than one container ledger"
    assert seen[0][1] is seen[0][-1]  # the LLM books into the container's one ledger
    assert len(container._built().take()) == 3  # one LLM, one store, one embedder


def test_shutdown_racing_with_builds_closes_every_store_it_built(
    container: Container, stores: CountingStores
) -> None:
    stop = threading.Event()
    errors: list[BaseException] = []

    def hammer() -> None:
        while not stop.is_set():
            try:
                container.scoped_graph(scope={"tenant": "x"})
            except BaseException as exc:  # reported below
                errors.append(exc)
                return

    workers = [threading.Thread(target=hammer) for _ in range(8)]
    for w in workers:
        w.start()
    rounds = 0
    while len(stores.built) < 6 and rounds < 1000:  # each shutdown lets the next caller build
        container.shutdown()
        rounds += 1
        threading.Event().wait(0.01)
    stop.set()
    for w in workers:
        w.join(timeout=60)
        assert not w.is_alive()
    container.shutdown()
    assert not errors, errors[:3]
    assert len(stores.built) >= 2
    # every store that was built was closed exactly once: none leaked, none closed twice
    assert sorted(map(id, stores.closed)) == sorted(map(id, stores.built))
