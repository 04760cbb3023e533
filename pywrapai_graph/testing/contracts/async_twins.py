"""The async part of the vector-store contract: the ``a*`` twins behave like their sync
methods (a store with sync methods only passes through the base class's thread offload),
concurrently on one loop, and on a new event loop after another ended."""

from __future__ import annotations

import asyncio
from typing import ClassVar

import pytest

from pywrapai_graph.domain import Chunk
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.testing.contracts.store_data import (
    make_chunks,
)

__all__ = ["AsyncTwinsContract"]


class AsyncTwinsContract:
    """The async twins, driven with ``asyncio.run`` (no plugin needed)."""

    dim: ClassVar[int]

    def test_async_twins_behave_like_sync(self, store: BaseVectorStore) -> None:
        chunks = make_chunks(12, self.dim, docs=3)

        async def scenario() -> None:
            await store.aadd(chunks)
            assert await store.acount() == 12
            hits = await store.asearch(chunks[0].embedding or [], k=3)
            sync_hits = store.search(chunks[0].embedding or [], k=3)
            assert [h.chunk.id for h in hits] == [h.chunk.id for h in sync_hits]
            assert hits[0].chunk.id == chunks[0].id
            assert hits[0].score == pytest.approx(1.0, abs=1e-4)
            even = await store.asearch(chunks[1].embedding or [], k=12, filter={"parity": "even"})
            assert {h.chunk.id for h in even} == {c.id for c in chunks if c.metadata["n"] % 2 == 0}
            if store.supports_delete:
                assert await store.adelete([chunks[1].id, "no-such-id"]) == 1
                assert await store.adelete_by_doc("doc-0") == 4
                assert await store.acount() == 7
                if type(store)._count is not BaseVectorStore._count:
                    assert await store.acount({"parity": "even"}) == 4
            await store.aclear()
            assert await store.acount() == 0
            assert await store.asearch(chunks[0].embedding or [], k=3) == []

        asyncio.run(scenario())

    def test_async_bad_input_raises_the_same_errors(self, store: BaseVectorStore) -> None:
        store.add(make_chunks(3, self.dim))
        bad = Chunk("short", doc_id="d", id="bad-dim", embedding=[1.0] * (self.dim - 1))

        async def scenario() -> None:
            with pytest.raises(ValueError, match="dimension"):
                await store.aadd([*make_chunks(2, self.dim, seed=5, prefix="x"), bad])
            with pytest.raises(ValueError, match="k must be"):
                await store.asearch([1.0] * self.dim, k=0)

        asyncio.run(scenario())
        assert len(store) == 3

    def test_concurrent_async_calls_on_one_loop(self, store: BaseVectorStore) -> None:
        async def scenario() -> None:
            await asyncio.gather(
                *(store.aadd(make_chunks(10, self.dim, seed=t, prefix=f"a{t}-")) for t in range(4))
            )
            queries = make_chunks(6, self.dim, seed=2, prefix="a2-")
            found = await asyncio.gather(*(store.asearch(q.embedding or [], k=1) for q in queries))
            assert [r[0].chunk.id for r in found] == [q.id for q in queries]

        asyncio.run(scenario())
        assert len(store) == 40

    def test_async_side_survives_a_new_event_loop(self, store: BaseVectorStore) -> None:
        chunks = make_chunks(4, self.dim)
        asyncio.run(store.aadd(chunks))
        # a second asyncio.run is a new loop: native async clients must not be reused
        hits = asyncio.run(store.asearch(chunks[2].embedding or [], k=1))
        assert hits[0].chunk.id == chunks[2].id
