"""The reference's custom-store example runs as written: delete is optional."""

from __future__ import annotations

from collections.abc import Sequence
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
