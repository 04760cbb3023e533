"""One retriever method: ``retrieve(query, k=None, filter=None)`` and ``aretrieve`` with the same
arguments on every retriever; the previous names warn and still work; retrievers written for
earlier releases (the reference's form, or with ``retrieve_matching``) keep working."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Sequence
from typing import Any

import pytest

from pywrapai_graph import (
    LLM,
    BaseRetriever,
    Chunk,
    Document,
    FeatureHashingEmbedder,
    GraphLLM,
    InMemoryVectorStore,
    ScopedRetriever,
    ScoredChunk,
    VectorRetriever,
)
from pywrapai_graph.errors import ScopeError
from pywrapai_graph.ports import MetadataFilter, TextSplitter
from pywrapai_graph.testing import ScriptedChatModel

DOCS = [
    Document("Refunds take five business days.", {"kind": "policy"}, id="refunds"),
    Document("Refund requests need the order number.", {"kind": "howto"}, id="howto"),
    Document("Parcels ship every weekday.", {"kind": "policy"}, id="shipping"),
]


def retriever() -> VectorRetriever:
    r = VectorRetriever(FeatureHashingEmbedder(64), InMemoryVectorStore(), k=2)
    r.add_documents(DOCS)
    return r


def ids(hits: Sequence[ScoredChunk]) -> list[str]:
    return [h.chunk.doc_id for h in hits]


@pytest.mark.parametrize("cls", [BaseRetriever, VectorRetriever, ScopedRetriever])
def test_retrieve_and_aretrieve_have_one_signature(cls: type[BaseRetriever]) -> None:
    names = ["self", "query", "k", "filter"]
    assert list(inspect.signature(cls.retrieve).parameters) == names
    assert list(inspect.signature(cls.aretrieve).parameters) == names
    for method in (cls.retrieve, cls.aretrieve):
        params = inspect.signature(method).parameters
        assert params["k"].default is None
        assert params["filter"].default is None


def test_vector_and_scoped_retrievers_filter_through_retrieve() -> None:
    r = retriever()
    assert ids(r.retrieve("refund", filter={"kind": "howto"})) == ["howto"]
    assert ids(asyncio.run(r.aretrieve("refund", None, {"kind": "howto"}))) == ["howto"]
    r = VectorRetriever(FeatureHashingEmbedder(64), InMemoryVectorStore(), min_score=-1.0)
    view = r.scoped({"t": "a"})
    view.add_documents(DOCS)
    hits = view.retrieve("refund", k=5, filter={"kind": "policy"})
    assert sorted(ids(hits)) == sorted(view.stored_id(i) for i in ("refunds", "shipping"))
    assert asyncio.run(view.aretrieve("refund", 5, {"kind": "policy"})) == hits


def test_the_old_names_warn_and_answer_like_retrieve() -> None:
    r = retriever()
    expected = ids(r.retrieve("refund", 3, {"kind": "policy"}))
    with pytest.deprecated_call(match=r"retrieve_matching.*retrieve\(query, k=None"):
        assert ids(r.retrieve_matching("refund", {"kind": "policy"}, 3)) == expected
    with pytest.deprecated_call(match=r"search"):
        assert ids(r.search("refund", 3, {"kind": "policy"})) == expected
    with pytest.deprecated_call():
        assert ids(r.search("refund", 3)) == ids(r.retrieve("refund", 3))
    view = r.scoped({"kind": "policy"})
    with pytest.deprecated_call():
        assert ids(view.retrieve_matching("refund", {"kind": "policy"})) == ids(
            view.retrieve("refund")
        )


class ReferenceForm(BaseRetriever):
    """The reference's ``BM25Retriever``: ``retrieve(query, k)``, no filter."""

    def retrieve(self, query: str, k: int = 4) -> list[ScoredChunk]:  # type: ignore[override]
        return [ScoredChunk(Chunk(f"{query} #{i}", doc_id=f"r{i}"), 1.0) for i in range(k)]

    def add_documents(self, docs: Sequence[Document], chunker: TextSplitter | None = None) -> int:
        return 0


class PreviousRelease(ReferenceForm):
    """A retriever written for the previous release: filters through ``retrieve_matching``."""

    def __init__(self) -> None:
        self.filters: list[Any] = []

    def retrieve_matching(
        self, query: str, filter: MetadataFilter, k: int | None = None
    ) -> list[ScoredChunk]:
        self.filters.append(dict(filter))
        return self.retrieve(query, k or 1)


def test_a_retriever_in_the_reference_form_still_works_and_refuses_filters() -> None:
    graph = GraphLLM(LLM(provider=ScriptedChatModel(["a", "b"])), retriever=ReferenceForm())
    _, hits = graph.assemble("refunds")
    assert ids(hits) == ["r0", "r1", "r2", "r3"]
    assert ids(asyncio.run(ReferenceForm().aretrieve("refunds", 2))) == ["r0", "r1"]
    with pytest.raises(ScopeError, match="its retrieve\\(\\) takes no filter"):
        graph.assemble("refunds", filter={"tenant": "acme"})
    with pytest.raises(ScopeError):
        asyncio.run(ReferenceForm().aretrieve("refunds", 2, {"tenant": "acme"}))
    with pytest.raises(ScopeError):
        ScopedRetriever(ReferenceForm(), {"t": 1}).retrieve("q")


def test_a_previous_release_retriever_still_gets_its_filters() -> None:
    legacy = PreviousRelease()
    graph = GraphLLM(LLM(provider=ScriptedChatModel(["a"])), retriever=legacy)
    _, hits = graph.assemble("refunds", filter={"tenant": "acme"}, rag_k=2)
    assert legacy.filters == [{"tenant": "acme"}]
    assert ids(hits) == ["r0", "r1"]
    view = ScopedRetriever(legacy, {"tenant": "globex"})
    view.retrieve("q", 1, {"kind": "policy"})
    asyncio.run(view.aretrieve("q", 1))
    assert legacy.filters[1:] == [
        {"tenant": "globex", "kind": "policy"},
        {"tenant": "globex"},
    ]


def test_hashing_embedder_is_the_old_name_of_feature_hashing_embedder() -> None:
    with pytest.deprecated_call(match="FeatureHashingEmbedder"):
        from pywrapai_graph import HashingEmbedder
    with pytest.deprecated_call(match="FeatureHashingEmbedder"):
        from pywrapai_graph.adapters.embedders.hashing_embedder import HashingEmbedder as again
    assert HashingEmbedder is again is FeatureHashingEmbedder
    assert HashingEmbedder(16).embed_one("x") == FeatureHashingEmbedder(16).embed_one("x")
    assert repr(FeatureHashingEmbedder(16)) == "FeatureHashingEmbedder(dimension=16, ngram=3)"
