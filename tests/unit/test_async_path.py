"""The async path never blocks the event loop: structural proofs, not timings."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import pytest

from pywrapai import LLM, Embedder
from pywrapai_graph import (
    Document,
    FeatureHashingEmbedder,
    GraphLLM,
    InMemoryVectorStore,
    VectorRetriever,
)
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.ports import BaseVectorStore, MetadataFilter
from pywrapai_graph.testing import ScriptedChatModel, ScriptedReply
from pywrapai_graph.testing.wire import OpenAIWire

N = 4
DOCS = [
    Document("Paris is the capital of France.", id="paris"),
    Document("Berlin is the capital of Germany.", id="berlin"),
]


async def test_concurrent_achat_overlaps_embedding_and_chat_requests() -> None:
    with OpenAIWire() as wire:
        options: dict[str, Any] = {"api_key": "test", "base_url": wire.base_url, "max_retries": 0}
        embedder = Embedder(provider="openai", **options)
        retriever = VectorRetriever(embedder, InMemoryVectorStore(), k=1)
        retriever.add_documents(DOCS)
        llm = LLM(provider="openai", **options)
        graph = GraphLLM(llm, retriever=retriever, rag_k=1)
        wire.reply(*[ScriptedReply(f"answer {i}") for i in range(N)])
        wire.hold("embeddings", N).hold("chat", N)
        answers = await asyncio.gather(
            *(graph.achat(f"What is the capital of France? ({i})") for i in range(N))
        )
        await llm.aclose()
        await embedder.aclose()
        llm.close()
        embedder.close()
    assert sorted(a.content for a in answers) == [f"answer {i}" for i in range(N)]
    assert all(len(a.context) == 1 for a in answers)
    assert wire.peak_in_flight["embeddings"] == N
    assert wire.peak_in_flight["chat"] == N


class SleepyStore(BaseVectorStore):
    """A sync-only store whose search waits until the event loop has ticked (or gives up)."""

    def __init__(self) -> None:
        self.inner = InMemoryVectorStore()
        self.entered = threading.Event()
        self.loop_ticked = threading.Event()
        self.released_by_ticker: bool | None = None

    def add(self, chunks: Sequence[Chunk]) -> None:
        self.inner.add(chunks)

    def search(
        self, query_vector: Sequence[float], k: int = 4, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        self.entered.set()
        # If search ran on the loop's thread, the ticker could never run: this would time out.
        self.released_by_ticker = self.loop_ticked.wait(timeout=10)
        return self.inner.search(query_vector, k, filter)

    def delete(self, ids: Sequence[str]) -> int:
        return self.inner.delete(ids)

    def delete_by_doc(self, doc_id: str) -> int:
        return self.inner.delete_by_doc(doc_id)

    def clear(self) -> None:
        self.inner.clear()

    def __len__(self) -> int:
        return len(self.inner)


async def test_a_sleeping_store_does_not_stop_a_ticker_on_the_loop() -> None:
    store = SleepyStore()
    retriever = VectorRetriever(FeatureHashingEmbedder(16), store, k=1)
    retriever.add_documents(DOCS)
    graph = GraphLLM(LLM(provider=ScriptedChatModel(["ok"])), retriever=retriever)
    ticks_while_searching = 0
    done = False

    async def ticker() -> None:
        nonlocal ticks_while_searching
        while not done:
            await asyncio.sleep(0)
            if store.entered.is_set():
                ticks_while_searching += 1
                if ticks_while_searching >= 3:
                    store.loop_ticked.set()

    tick_task = asyncio.create_task(ticker())
    response = await graph.achat("capital of France?")
    done = True
    await tick_task
    assert response.content == "ok"
    assert store.released_by_ticker is True
    assert ticks_while_searching >= 3


@pytest.mark.parametrize("method", ["achat", "astream", "achat_structured"])
async def test_every_async_graph_call_retrieves_off_the_loop(method: str) -> None:
    from pydantic import BaseModel

    class Answer(BaseModel):
        city: str

    store = SleepyStore()
    retriever = VectorRetriever(FeatureHashingEmbedder(16), store, k=1)
    retriever.add_documents(DOCS)
    reply = '{"city": "Paris"}'
    graph = GraphLLM(LLM(provider=ScriptedChatModel([reply])), retriever=retriever)
    stop = asyncio.Event()

    async def ticker() -> None:
        while not stop.is_set():
            await asyncio.sleep(0)
            if store.entered.is_set():
                store.loop_ticked.set()

    task = asyncio.create_task(ticker())
    if method == "achat":
        await graph.achat("capital of France?")
    elif method == "astream":
        assert "".join([p async for p in graph.astream("capital of France?")]) == reply
    else:
        assert (await graph.achat_structured("capital?", Answer)).city == "Paris"
    stop.set()
    await task
    assert store.released_by_ticker is True
