"""The reference's custom-store example runs as written: delete is optional."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pywrapai_graph import BaseVectorStore, Chunk, Document, FeatureHashingEmbedder, ScoredChunk
from pywrapai_graph import VectorRetriever as Retriever
from pywrapai_graph.errors import UnsupportedOperationError
from pywrapai_graph.ports import MetadataFilter

# Verbatim from the library reference ("Implement BaseVectorStore to add your own backends").
REFERENCE_EXAMPLE = """\
from pywrapai_graph import BaseVectorStore, ScoredChunk, Chunk

class PineconeStore(BaseVectorStore):
    def add(self, chunks: list[Chunk]) -> None: ...
    def search(self, query_vector: list[float], k: int) -> list[ScoredChunk]: ...
    def clear(self) -> None: ...
    def __len__(self) -> int: ...
"""


def test_the_reference_custom_store_example_instantiates() -> None:
    namespace: dict[str, Any] = {}
    exec(compile(REFERENCE_EXAMPLE, "<reference>", "exec"), namespace)
    store = namespace["PineconeStore"]()
    assert isinstance(store, BaseVectorStore)
    assert store.supports_delete is False
    assert store.dimension is None
    with pytest.raises(UnsupportedOperationError, match="PineconeStore cannot delete"):
        store.delete(["x"])
    with pytest.raises(UnsupportedOperationError, match="supports_delete is False"):
        store.delete_by_doc("d")


class ListStore(BaseVectorStore):
    """The reference's four methods, filled in: enough for the retriever to ingest and search."""

    def __init__(self) -> None:
        self.chunks: dict[str, Chunk] = {}

    def add(self, chunks: Sequence[Chunk]) -> None:
        if any(c.embedding is None for c in chunks):
            raise ValueError("every chunk needs an embedding")
        self.chunks.update({c.id: c for c in chunks})

    def search(
        self, query_vector: Sequence[float], k: int = 4, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        q = np.asarray(query_vector) / np.linalg.norm(query_vector)
        scored = [
            ScoredChunk(c, float(np.asarray(c.embedding) @ q / np.linalg.norm(c.embedding or [])))
            for c in self.chunks.values()
        ]
        return sorted(scored, key=lambda s: s.score, reverse=True)[:k]

    def clear(self) -> None:
        self.chunks.clear()

    def __len__(self) -> int:
        return len(self.chunks)


def test_a_store_without_delete_ingests_and_retrieves_through_the_retriever() -> None:
    store = ListStore()
    retriever = Retriever(FeatureHashingEmbedder(), store, k=1)
    docs = [Document("Paris is the capital of France.", id="fr")]
    assert retriever.add_documents(docs) == 1
    assert retriever.add_documents(docs) == 1  # again: upserted by chunk id, not duplicated
    assert len(store) == 1
    assert store.count() == 1
    assert retriever.retrieve("capital of France")[0].chunk.doc_id == "fr"


# The reference's example with each ``...`` filled in; every ``def`` line stays verbatim
# (``search(self, query_vector, k)``: no filter parameter; no delete).
_BODIES = {
    "def add(": "self.__dict__.setdefault('rows', {}).update({c.id: c for c in chunks})",
    "def search(": "return cosine_top(self.__dict__.get('rows', {}), query_vector, k)",
    "def clear(": "self.__dict__.get('rows', {}).clear()",
    "def __len__(": "return len(self.__dict__.get('rows', {}))",
}


def cosine_top(rows: dict[str, Chunk], query_vector: Sequence[float], k: int) -> list[ScoredChunk]:
    q = np.asarray(query_vector) / np.linalg.norm(query_vector)
    scored = [
        ScoredChunk(c, float(np.asarray(c.embedding) @ q / np.linalg.norm(c.embedding or [])))
        for c in rows.values()
    ]
    return sorted(scored, key=lambda s: s.score, reverse=True)[:k]


def reference_store() -> BaseVectorStore:
    """A PineconeStore built from the reference's text, its signatures as written."""
    lines = []
    for line in REFERENCE_EXAMPLE.splitlines():
        start = next((s for s in _BODIES if line.strip().startswith(s)), None)
        if start is None:
            lines.append(line)
        else:
            assert line.endswith(": ...")
            lines.append(f"{line.removesuffix(' ...')}\n        {_BODIES[start]}")
    namespace: dict[str, Any] = {"cosine_top": cosine_top}
    exec(compile("\n".join(lines), "<reference, filled in>", "exec"), namespace)
    store: BaseVectorStore = namespace["PineconeStore"]()
    return store


def test_the_reference_example_is_the_references_text() -> None:
    root = Path(__file__).resolve().parents[2]
    for spec in (base / "shared" / "spec" for base in root.parents):
        if (spec / "pywrapai-graph-reference.txt").is_file():
            text = (spec / "pywrapai-graph-reference.txt").read_text(encoding="utf-8")
            assert REFERENCE_EXAMPLE in text.replace("\r\n", "\n")


POLICIES = [
    Document("Refunds take five days for orders in France.", id="fr", metadata={"region": "eu"}),
    Document("Refunds take five days for orders in Texas.", id="tx", metadata={"region": "us"}),
    Document("Refunds in Ohio take five days too.", id="oh", metadata={"region": "us"}),
]


def test_the_reference_store_retrieves_with_a_filter_through_the_retriever() -> None:
    store = reference_store()
    retriever = Retriever(FeatureHashingEmbedder(), store, k=1)
    assert retriever.add_documents(POLICIES) == 3
    assert retriever.add_documents(POLICIES) == 3  # upserted by chunk id, not duplicated
    assert len(store) == 3
    best = retriever.retrieve("refunds for orders in France")
    assert [h.chunk.doc_id for h in best] == ["fr"]
    # The filter is applied by the base after the store's search: the French policy ranks
    # first but is not in the US region; the store is asked for more until one is found.
    us = retriever.retrieve("refunds for orders in France", filter={"region": "us"})
    assert [h.chunk.doc_id for h in us] == ["tx"]
    both = retriever.retrieve("refunds for orders in France", k=5, filter={"region": "us"})
    assert sorted(h.chunk.doc_id for h in both) == ["oh", "tx"]
    assert (
        store.search(FeatureHashingEmbedder().embed_one("France"), k=3, filter={"region": 1}) == []
    )


def test_the_reference_store_serves_graph_llm_with_a_filter() -> None:
    from pywrapai_graph import LLM, GraphLLM
    from pywrapai_graph.testing import ScriptedChatModel

    retriever = Retriever(FeatureHashingEmbedder(), reference_store(), k=1)
    retriever.add_documents(POLICIES)
    model = ScriptedChatModel(["Five days.", "Five days."])
    graph = GraphLLM(llm=LLM(provider=model), retriever=retriever)
    graph.chat("How long do refunds take in France?")
    graph.chat("How long do refunds take in France?", filter={"region": "us"})
    first, second = (str(r.messages) for r in model.requests)
    assert "orders in France" in first
    assert "orders in Texas" in second and "France." not in second


async def test_the_reference_store_searches_async_with_a_filter() -> None:
    store = reference_store()
    retriever = Retriever(FeatureHashingEmbedder(), store, k=2)
    await retriever.aadd_documents(POLICIES)
    hits = await retriever.aretrieve("refunds in France", filter={"region": "us"})
    assert sorted(h.chunk.doc_id for h in hits) == ["oh", "tx"]
    with pytest.raises(UnsupportedOperationError, match="PineconeStore cannot delete"):
        await store.adelete(["fr"])
