"""IngestDocuments: replace semantics, the typed report, manifests and the embedder check."""

from __future__ import annotations

from pathlib import Path

import pytest

from pywrapai_graph import Chunker, Document, InMemoryVectorStore, SQLiteVectorStore
from pywrapai_graph.application.ingest_documents import IngestDocuments, content_hash
from pywrapai_graph.domain.ingest_report import IngestStatus
from pywrapai_graph.errors import ArgumentTypeError, EmbedderMismatchError
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.testing.contracts.vector_store import WordEmbedder


class CountingEmbedder(WordEmbedder):
    def __init__(self, dimension: int = 16, model: str = "words") -> None:
        super().__init__(dimension, model)
        self.calls: list[int] = []

    def embed(self, texts: object) -> list[list[float]]:
        items = list(texts)  # type: ignore[call-overload]
        self.calls.append(len(items))
        return super().embed(items)


PARAGRAPHS = "\n\n".join(f"Paragraph {i} is about subject {i} in detail." for i in range(30))


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> BaseVectorStore:
    if request.param == "memory":
        return InMemoryVectorStore()
    return SQLiteVectorStore(tmp_path / "s.db")


def test_report_says_added_unchanged_replaced(store: BaseVectorStore) -> None:
    embedder = CountingEmbedder()
    ingest = IngestDocuments(embedder, store, Chunker(chunk_size=80, overlap=0))
    docs = [Document(PARAGRAPHS, id="long"), Document("A short one here.", id="short")]
    first = ingest(docs)
    assert [d.status for d in first.documents] == [IngestStatus.ADDED, IngestStatus.ADDED]
    assert first.added == ["long", "short"]
    assert first.chunks_written == len(store)
    calls = len(embedder.calls)
    again = ingest(docs)
    assert again.unchanged == ["long", "short"]
    assert again.chunks_written == 0
    assert len(embedder.calls) == calls  # nothing embedded for unchanged documents
    changed = ingest([Document("Now short.", id="long")])
    assert changed.replaced == ["long"]
    assert len(store) == 2
    assert store.document_manifest("long") is not None


def test_a_changed_chunker_or_embedder_is_not_unchanged(store: BaseVectorStore) -> None:
    doc = Document(PARAGRAPHS, id="long")
    IngestDocuments(CountingEmbedder(), store, Chunker(chunk_size=80, overlap=0))([doc])
    report = IngestDocuments(CountingEmbedder(), store, Chunker(chunk_size=200, overlap=0))([doc])
    assert report.replaced == ["long"]
    assert content_hash(doc, Chunker(80, 0)) != content_hash(doc, Chunker(200, 0))
    with pytest.raises(EmbedderMismatchError, match="contract/words"):
        IngestDocuments(CountingEmbedder(model="other"), store, Chunker(200, 0))([doc])


def test_small_documents_share_embedding_batches(store: BaseVectorStore) -> None:
    embedder = CountingEmbedder()
    docs = [Document(f"Document {i} has its own words.", id=f"d{i}") for i in range(10)]
    IngestDocuments(embedder, store, batch_size=4)(docs)
    assert embedder.calls == [4, 4, 2]
    assert len(store) == 10


def test_blank_documents_store_nothing_and_remove_the_old_version(store: BaseVectorStore) -> None:
    ingest = IngestDocuments(CountingEmbedder(), store)
    ingest([Document("Some text.", id="d")])
    report = ingest([Document("   ", id="d")])
    assert report.replaced == ["d"]
    assert len(store) == 0


def test_only_documents_are_accepted(store: BaseVectorStore) -> None:
    with pytest.raises(ArgumentTypeError, match="Document objects"):
        IngestDocuments(CountingEmbedder(), store)(["text"])  # type: ignore[list-item]
