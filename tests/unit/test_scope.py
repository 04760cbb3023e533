"""Per-request scope: filter= and rag_k= per call, scoped retrievers, the container's views."""

from __future__ import annotations

import pytest

from pywrapai import LLM
from pywrapai_graph import (
    Agent,
    Document,
    FeatureHashingEmbedder,
    GraphLLM,
    InMemoryVectorStore,
    ToolRegistry,
    VectorRetriever,
)
from pywrapai_graph.application.scoped_retriever import ScopedRetriever
from pywrapai_graph.composition.container import build_container
from pywrapai_graph.domain import Document as Doc
from pywrapai_graph.domain import ScoredChunk
from pywrapai_graph.errors import ScopeError
from pywrapai_graph.ports import BaseRetriever, TextSplitter
from pywrapai_graph.testing import ScriptedChatModel

DOCS = [
    Document("Acme refunds take 14 days.", {"tenant": "acme"}, id="acme-refunds"),
    Document("Globex refunds take 30 days.", {"tenant": "globex"}, id="globex-refunds"),
    Document("Acme ships worldwide.", {"tenant": "acme"}, id="acme-shipping"),
]


def sent_prompt(fake: ScriptedChatModel, index: int = -1) -> str:
    return fake.requests[index].messages[-1].content


@pytest.fixture
def retriever() -> VectorRetriever:
    r = VectorRetriever(FeatureHashingEmbedder(64), InMemoryVectorStore(), k=4, min_score=-1.0)
    r.add_documents(DOCS)
    return r


def test_filter_and_rag_k_per_call_on_every_graph_method(retriever: VectorRetriever) -> None:
    fake = ScriptedChatModel(respond=lambda r: '{"days": 14}')
    graph = GraphLLM(LLM(provider=fake), retriever=retriever)
    acme = {"tenant": "acme"}
    response = graph.chat("How long do refunds take?", filter=acme, rag_k=1)
    assert len(response.context) == 1
    assert "Acme refunds" in sent_prompt(fake) and "Globex" not in sent_prompt(fake)
    assert "".join(graph.stream("refunds?", filter=acme)).startswith('{"days"')
    assert "Globex" not in sent_prompt(fake) and "Acme ships" in sent_prompt(fake)
    unscoped = graph.chat("How long do refunds take?")
    assert len(unscoped.context) == 3
    assert "Globex" in sent_prompt(fake)

    from pydantic import BaseModel

    class Days(BaseModel):
        days: int

    assert graph.chat_structured("refunds?", Days, filter={"tenant": "globex"}).days == 14
    assert "Globex" in sent_prompt(fake) and "Acme" not in sent_prompt(fake)


async def test_filter_and_rag_k_on_the_async_methods(retriever: VectorRetriever) -> None:
    fake = ScriptedChatModel(respond=lambda r: "ok")
    graph = GraphLLM(LLM(provider=fake), retriever=retriever)
    response = await graph.achat("refunds?", filter={"tenant": "globex"})
    assert [c.chunk_id for c in response.context] and "Acme" not in sent_prompt(fake)
    pieces = [p async for p in graph.astream("refunds?", filter={"tenant": "acme"}, rag_k=1)]
    assert "".join(pieces) == "ok"
    assert "Acme" in sent_prompt(fake) and "Globex" not in sent_prompt(fake)
    with pytest.raises(ValueError, match="rag_k"):
        await graph.achat("refunds?", rag_k=0)


def test_agent_runs_scoped_rag_only_when_asked(retriever: VectorRetriever) -> None:
    fake = ScriptedChatModel(respond=lambda r: "done")
    agent = Agent(GraphLLM(LLM(provider=fake), retriever=retriever), ToolRegistry())
    agent.run("refunds?")
    assert "<context>" not in sent_prompt(fake)
    agent.run("refunds?", filter={"tenant": "acme"}, rag_k=1)
    assert "Acme refunds" in sent_prompt(fake) and "Globex" not in sent_prompt(fake)


async def test_agent_arun_takes_the_same_scope(retriever: VectorRetriever) -> None:
    fake = ScriptedChatModel(respond=lambda r: "done")
    agent = Agent(GraphLLM(LLM(provider=fake), retriever=retriever), ToolRegistry())
    result = await agent.arun("refunds?", filter={"tenant": "globex"})
    assert result.content == "done"
    assert "Globex refunds" in sent_prompt(fake) and "Acme" not in sent_prompt(fake)


def test_scoped_view_stamps_writes_and_refuses_to_leave_its_scope() -> None:
    store = InMemoryVectorStore()
    retriever = VectorRetriever(FeatureHashingEmbedder(64), store)
    acme = retriever.scoped({"tenant": "acme"})
    acme.add_documents([Doc("Acme handbook", {"lang": "en"}, id="handbook")])
    [hit] = retriever.retrieve("Acme handbook", k=5)
    assert hit.chunk.metadata == {"tenant": "acme", "lang": "en"}
    assert hit.chunk.doc_id == '{"tenant":"acme"}/handbook' == acme.stored_id("handbook")
    with pytest.raises(ScopeError, match="outside this view's scope"):
        acme.add_documents([Doc("sneaky", {"tenant": "globex"})])
    narrower = acme.scoped({"lang": "en"})
    assert narrower.scope == {"tenant": "acme", "lang": "en"}
    with pytest.raises(ScopeError):
        acme.scoped({"tenant": "globex"})
    with pytest.raises(ScopeError, match="at least one"):
        ScopedRetriever(retriever, {})


def test_a_retriever_that_cannot_filter_says_so() -> None:
    class Keyword(BaseRetriever):
        # the reference's form: no filter parameter (mypy asks for it, Python does not)
        def retrieve(self, query: str, k: int | None = None) -> list[ScoredChunk]:  # type: ignore[override]
            return []

        def add_documents(self, docs: list[Doc], chunker: TextSplitter | None = None) -> int:  # type: ignore[override]
            return 0

    graph = GraphLLM(LLM(provider=ScriptedChatModel(["x", "y"])), retriever=Keyword())
    assert graph.chat("hi").content == "x"
    with pytest.raises(ScopeError, match="cannot filter by metadata"):
        graph.chat("hi", filter={"tenant": "acme"})


def test_the_container_builds_a_scoped_graph_per_request() -> None:
    container = build_container({"store": {"backend": "memory"}, "embedder": {"dimension": 64}})
    container.retriever().add_documents(DOCS)
    acme = container.scoped_graph(scope={"tenant": "acme"})
    globex = container.scoped_graph(scope={"tenant": "globex"})
    assert acme is not globex
    assert acme.llm is container.graph().llm  # the LLM, cache and tracker are shared
    _, hits = acme.assemble("How long do refunds take?")
    assert hits and {h.chunk.metadata["tenant"] for h in hits} == {"acme"}
    _, hits = globex.assemble("How long do refunds take?")
    assert {h.chunk.metadata["tenant"] for h in hits} == {"globex"}
    view = container.scoped_retriever(scope={"tenant": "acme"})
    assert view.inner is container.retriever()


@pytest.mark.parametrize(
    ("scope", "sneaky"),
    [(1, True), (True, 1), (0, False), (1, "1"), ("True", True), (None, "None")],
    ids=repr,
)
def test_a_value_python_calls_equal_is_not_the_scope(scope: object, sneaky: object) -> None:
    """``1 == True`` in Python, not in the stores: such a filter would have read (and such
    metadata written) the other tenant's chunks."""
    store = InMemoryVectorStore()
    retriever = VectorRetriever(FeatureHashingEmbedder(64), store, min_score=-1.0)
    retriever.add_documents([Doc("the other tenant's secret", {"tenant": sneaky}, id="x")])
    view = retriever.scoped({"tenant": scope})
    fake = ScriptedChatModel(respond=lambda r: "ok")
    graph = GraphLLM(LLM(provider=fake), retriever=retriever).with_retriever(view)
    with pytest.raises(ScopeError, match="outside this view's scope"):
        view.retrieve("secret", filter={"tenant": sneaky})
    with pytest.raises(ScopeError, match="outside this view's scope"):
        graph.chat("secret?", filter={"tenant": sneaky})
    with pytest.raises(ScopeError, match="outside this view's scope"):
        view.add_documents([Doc("mine", {"tenant": sneaky}, id="y")])
    assert view.retrieve("secret") == [] and len(store) == 1


def test_an_equal_number_is_the_scope_and_the_scope_value_is_kept() -> None:
    store = InMemoryVectorStore()
    view = VectorRetriever(FeatureHashingEmbedder(64), store).scoped({"tenant": 1})
    view.add_documents([Doc("one", {"tenant": 1.0}, id="y")])
    [hit] = view.retrieve("one", filter={"tenant": 1.0})
    assert hit.chunk.metadata["tenant"] == 1 and type(hit.chunk.metadata["tenant"]) is int


def test_a_scope_value_beyond_json_is_refused() -> None:
    retriever = VectorRetriever(FeatureHashingEmbedder(64), InMemoryVectorStore())
    with pytest.raises(ValueError, match="JSON"):
        retriever.scoped({"tenant": float("nan")})
    with pytest.raises(ValueError, match="JSON"):
        retriever.scoped({"tenant": {"id": 1}})
