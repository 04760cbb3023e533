"""Native async on the server stores: Chroma over ``AsyncHttpClient`` (and Qdrant's
``AsyncQdrantClient`` where a Qdrant server runs), proved structurally: concurrent reads on
one loop use no offload thread, a ticker runs while they wait on the server, a client is
made per loop and closed with it, and the container closes them on shutdown."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from pywrapai_graph import ChromaVectorStore, QdrantVectorStore
from pywrapai_graph.adapters.vectorstores.kit.vector_batches import Matrix
from pywrapai_graph.adapters.vectorstores.kit.versioned import Hit, VersionedDocuments
from pywrapai_graph.composition.container import build_container
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.ports import offload as offload_module
from pywrapai_graph.testing.contracts.hostile_inputs import HostileInputContract
from pywrapai_graph.testing.contracts.vector_store import VectorStoreContract, make_chunks
from tests.integration.test_server_stores import name_for
from tests.interrupted import VersionedInterrupts

N = 8
DIM = 16


class CountingPool(ThreadPoolExecutor):
    """The offload pool, counting what is handed to it."""

    submitted = 0

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.submitted += 1
        return super().submit(fn, *args, **kwargs)


@pytest.fixture
def pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[CountingPool]:
    counting = CountingPool(4)
    monkeypatch.setitem(offload_module._pools, "pool", counting)
    yield counting
    counting.shutdown()


class Probe:
    """Holds the engine queries until ``N`` are waiting at once, then counts ticker runs
    while they are with the server."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.peak = 0
        self.released = asyncio.Event()
        self.ticks_while_waiting = 0

    async def around(self, call: Any) -> Any:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        if self.in_flight == N:
            self.released.set()
        try:
            await self.released.wait()
            return await call
        finally:
            self.in_flight -= 1

    async def ticker(self, done: asyncio.Event) -> None:
        while not done.is_set():
            if self.released.is_set() and self.in_flight:
                self.ticks_while_waiting += 1
            await asyncio.sleep(0)


class Probed(VersionedDocuments):
    """Engine queries through a :class:`Probe` while one is set."""

    probe: Probe | None = None

    async def _aquery_many(
        self, queries: Sequence[Matrix], n: int, selector: Any
    ) -> list[list[Hit]]:
        call = super()._aquery_many(queries, n, selector)
        return list(await (call if self.probe is None else self.probe.around(call)))


class ProbedChroma(Probed, ChromaVectorStore):
    pass


class ProbedQdrant(Probed, QdrantVectorStore):
    pass


async def concurrent_searches(store: ProbedChroma | ProbedQdrant) -> None:
    chunks = make_chunks(40, DIM, docs=4)
    await store.aadd(chunks)
    probe = store.probe = Probe()
    done = asyncio.Event()
    ticker = asyncio.create_task(probe.ticker(done))
    singles, batches = await asyncio.gather(
        asyncio.gather(*(store.asearch(c.embedding or [], k=2) for c in chunks[: N // 2])),
        asyncio.gather(*(store.asearch_many([c.embedding or []], k=2) for c in chunks[N // 2 : N])),
    )
    done.set()
    await ticker
    ids = [r[0].chunk.id for r in singles] + [r[0][0].chunk.id for r in batches]
    assert ids == [c.id for c in chunks[:N]]
    store.probe = None
    assert probe.peak == N, "every search was waiting on the server at once"
    assert probe.ticks_while_waiting > 0, "the loop ran other tasks meanwhile"


@pytest.fixture
def chroma(chroma_url: str, tmp_path: Path) -> Iterator[ProbedChroma]:
    store = ProbedChroma(url=chroma_url, collection=name_for(tmp_path, "n"))
    yield store
    store.close()


def test_chroma_server_reads_are_native_async(chroma: ProbedChroma, pool: CountingPool) -> None:
    asyncio.run(chroma.aadd(make_chunks(1, DIM, seed=3, prefix="warm-")))  # writes offload
    before = pool.submitted
    assert before >= 1

    async def scenario() -> None:
        await concurrent_searches(chroma)
        assert await chroma.acount() == 41

    asyncio.run(scenario())
    # the add inside the scenario is the only offloaded call: N searches, count: none
    assert pool.submitted == before + 1


def test_chroma_async_client_per_loop_closed_with_its_loop(chroma: ProbedChroma) -> None:
    from chromadb.api.async_fastapi import AsyncFastAPI

    chunks = make_chunks(6, DIM)
    chroma.add(chunks)
    clients = chroma._aclients
    assert clients is not None
    loops: list[int] = []  # hashes only: a loop held here would keep its entry alive

    async def search(i: int) -> str:
        loops.append(hash(asyncio.get_running_loop()))
        hits = await chroma.asearch(chunks[i].embedding or [], k=1)
        assert len(clients) >= 1
        return hits[0].chunk.id

    assert [asyncio.run(search(i)) for i in range(3)] == [c.id for c in chunks[:3]]
    assert len(clients) == 0  # each loop's client closed when asyncio.run shut the loop down
    assert not set(loops) & set(AsyncFastAPI._clients)  # their HTTP pools closed and dropped

    # a loop in another thread at the same time as this one
    results: list[str] = []
    worker = threading.Thread(target=lambda: results.append(asyncio.run(search(4))))
    worker.start()
    results.append(asyncio.run(search(5)))
    worker.join()
    assert sorted(results) == sorted([chunks[4].id, chunks[5].id])
    assert len(clients) == 0


def test_chroma_aclose_and_container_shutdown_close_the_loops_client(
    chroma_url: str, tmp_path: Path
) -> None:
    async def scenario() -> None:
        store = ChromaVectorStore(url=chroma_url, collection=name_for(tmp_path, "a"))
        store.add(make_chunks(3, DIM))
        assert store._aclients is not None
        assert await store.acount() == 3
        assert len(store._aclients) == 1
        await store.aclose()
        assert len(store._aclients) == 0

        config = {
            "embedder": {"provider": "hashing", "dimension": DIM},
            "store": {"backend": "chroma", "url": chroma_url, "collection": "lifecycle"},
        }
        async with build_container(config) as container:
            built = container.vector_store()
            assert isinstance(built, ChromaVectorStore) and built._aclients is not None
            await built.acount()
            assert len(built._aclients) == 1
        assert len(built._aclients) == 0

    asyncio.run(scenario())


def test_chroma_native_reads_see_a_cleared_and_refilled_collection(chroma: ProbedChroma) -> None:
    chunks = make_chunks(5, DIM)

    async def scenario() -> None:
        await chroma.aadd(chunks)
        assert (await chroma.asearch(chunks[0].embedding or [], k=1))[0].chunk.id == "c0"
        await chroma.aclear()  # a new collection under the same name
        assert await chroma.asearch(chunks[0].embedding or [], k=1) == []
        await chroma.aadd(make_chunks(5, DIM, prefix="new-"))
        assert (await chroma.asearch(chunks[0].embedding or [], k=1))[0].chunk.id == "new-0"
        assert await chroma.acount() == 5

    asyncio.run(scenario())


def test_chroma_native_reads_follow_a_collection_another_store_re_created(
    chroma: ProbedChroma, chroma_url: str
) -> None:
    """Another process's clear() deletes and re-creates the collection: this store's async
    reads (native, by collection id) follow the name instead of failing from then on."""
    other = ChromaVectorStore(url=chroma_url, collection=chroma._name)
    chunks = make_chunks(5, DIM)

    async def search() -> list[str]:
        return [h.chunk.id for h in await chroma.asearch(chunks[0].embedding or [], k=2)]

    async def scenario() -> None:  # one event loop: its async handles outlive the clear
        chroma.add(chunks)
        assert (await search())[0] == "c0"
        other.clear()
        assert await search() == []
        other.add(make_chunks(3, DIM, prefix="new-"))
        assert await chroma.acount() == 3
        assert (await search())[0].startswith("new-")

    try:
        asyncio.run(scenario())
    finally:
        other.close()


class TestQdrantRestFront(VersionedInterrupts, VectorStoreContract, HostileInputContract):
    """The store's server mode over Qdrant's REST API (local engine behind it)."""

    lexical_exact = False  # term weights written with the chunk (a sparse vector)
    lexical_fixed_bm25 = True
    engine_fusions = frozenset({"rescored", "weighted"})  # Qdrant's DBSF

    @pytest.fixture(autouse=True)
    def _server(self, qdrant_rest_url: str) -> None:
        self.url = qdrant_rest_url

    def new_store(self, location: Path) -> BaseVectorStore:
        return QdrantVectorStore(name_for(location, "r"), url=self.url)


@pytest.mark.parametrize("where", ["qdrant_url", "qdrant_rest_url"])
def test_qdrant_server_reads_are_native_async(
    where: str, request: pytest.FixtureRequest, tmp_path: Path, pool: CountingPool
) -> None:
    url: str = request.getfixturevalue(where)
    store = ProbedQdrant(name_for(tmp_path, "n"), url=url)
    try:
        assert store._aclients is not None
        store.add(make_chunks(1, DIM, seed=3, prefix="warm-"))
        before = pool.submitted
        asyncio.run(concurrent_searches(store))
        assert pool.submitted == before + 1  # the add; N searches: none
        assert len(store._aclients) == 0  # closed with its loop
        assert asyncio.run(store.acount()) == 41
    finally:
        store.close()


def test_qdrant_local_modes_keep_the_offload(tmp_path: Path, pool: CountingPool) -> None:
    for store in (
        QdrantVectorStore("m", location=":memory:"),
        QdrantVectorStore("p", path=tmp_path / "q"),
    ):
        with store:
            assert store._aclients is None
            chunks = make_chunks(4, DIM)
            store.add(chunks)
            before = pool.submitted
            hits = asyncio.run(store.asearch(chunks[1].embedding or [], k=1))
            assert hits[0].chunk.id == chunks[1].id
            assert pool.submitted == before + 1
