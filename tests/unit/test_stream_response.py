"""Richer results: response.context carries the sources; streams end with the whole response."""

from __future__ import annotations

import pytest

from pywrapai import LLM, TokenUsage
from pywrapai_graph import (
    Document,
    FeatureHashingEmbedder,
    GraphLLM,
    InMemoryVectorStore,
    VectorRetriever,
)
from pywrapai_graph.errors import StreamNotFinishedError
from pywrapai_graph.testing import ScriptedChatModel, ScriptedReply

DOC = Document("Paris is the capital of France.", {"title": "Atlas", "tenant": "acme"}, id="atlas")


def make_graph(*replies: str) -> tuple[GraphLLM, ScriptedChatModel]:
    retriever = VectorRetriever(FeatureHashingEmbedder(64), InMemoryVectorStore(), k=1)
    retriever.add_documents([DOC])
    fake = ScriptedChatModel(
        [ScriptedReply(r, usage=TokenUsage(12, 3), model="gpt-4o-mini") for r in replies],
        provider="openai",
    )
    return GraphLLM(LLM(provider=fake), retriever=retriever), fake


def test_context_carries_text_document_metadata_and_score() -> None:
    graph, _ = make_graph("Paris.")
    response = graph.chat("What is the capital of France?")
    [source] = response.context
    assert source.text == DOC.text
    assert source.doc_id == "atlas"
    assert source.metadata == {"title": "Atlas", "tenant": "acme"}
    assert 0.0 < source.score <= 1.0
    assert source.chunk_id


def test_stream_iterates_text_then_exposes_the_final_response() -> None:
    graph, _ = make_graph("Paris is the capital.")
    stream = graph.stream("What is the capital of France?")
    with pytest.raises(StreamNotFinishedError, match="iterate it to the end"):
        _ = stream.response
    pieces = []
    for piece in stream:  # the reference's loop, unchanged
        pieces.append(piece)
    assert len(pieces) > 1 and "".join(pieces) == "Paris is the capital."
    final = stream.response
    assert final.content == "Paris is the capital."
    assert final.usage == TokenUsage(12, 3)
    assert final.cost_usd > 0 and final.provider == "openai"
    assert [c.doc_id for c in final.context] == ["atlas"]
    assert graph.tokens.records[-1].cost_usd == final.cost_usd


async def test_astream_iterates_text_then_exposes_the_final_response() -> None:
    graph, _ = make_graph("Paris.")
    stream = graph.astream("What is the capital of France?", rag_k=1)
    assert "".join([p async for p in stream]) == "Paris."
    assert stream.done
    assert stream.response.content == "Paris."
    assert stream.response.context[0].metadata["title"] == "Atlas"
    assert stream.response.usage.output_tokens == 3


async def test_llm_streams_have_the_response_too() -> None:
    llm = LLM(provider=ScriptedChatModel(["one two three", "four"]))
    sync = llm.stream("Hi")
    assert sync.text() == "one two three"
    assert sync.response.context == ()
    astream = llm.astream("Hi")
    assert await astream.text() == "four"
    assert len(llm.tokens.records) == 2
