"""Ingest overlaps its work: structural proofs (requests in flight, events), no timings.

- A remote embedder (OpenAI over the local wire server) gets up to ``embed_concurrency``
  requests at once, and never more; the report and the stored chunks are those of a run
  that embeds one batch at a time.
- A local embedder embeds the next batch while the previous one is being written.
- A failed request stops the ingest with the provider's error; the documents stored are
  whole and come first in the input.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from pywrapai import Embedder
from pywrapai_graph import (
    Chunker,
    Document,
    FeatureHashingEmbedder,
    InMemoryVectorStore,
    SQLiteVectorStore,
)
from pywrapai_graph.application.ingest_documents import IngestDocuments
from pywrapai_graph.domain import Chunk
from pywrapai_graph.domain.ingest_report import IngestReport
from pywrapai_graph.domain.manifest import DocumentManifest
from pywrapai_graph.errors import InvalidArgumentError, ProviderError
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.ports.embedder import pure_python
from pywrapai_graph.testing.contracts.vector_store import WordEmbedder
from pywrapai_graph.testing.wire import OpenAIWire

DOCS = [
    Document(f"Document {i} tells about topic {i} and nothing else. " * (1 + i % 3), id=f"d{i}")
    for i in range(12)
]


def _openai(wire: OpenAIWire) -> Embedder:
    options: dict[str, Any] = {"api_key": "test", "base_url": wire.base_url, "max_retries": 0}
    return Embedder(provider="openai", **options)


def _contents(store: BaseVectorStore) -> dict[str, DocumentManifest | None]:
    return {doc.id: store.document_manifest(doc.id) for doc in DOCS}


def _ingest(wire: OpenAIWire, store: BaseVectorStore, concurrency: int) -> IngestReport:
    with _openai(wire) as embedder:
        return IngestDocuments(embedder, store, batch_size=2, embed_concurrency=concurrency)(DOCS)


def _worker_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("pywrapai-ingest")]


@pytest.mark.parametrize("concurrency", [2, 4])
def test_a_remote_embedder_gets_embed_concurrency_requests_at_once(
    tmp_path: Path, concurrency: int
) -> None:
    with OpenAIWire() as wire:
        one_at_a_time = SQLiteVectorStore(tmp_path / "serial.db")
        serial = _ingest(wire, one_at_a_time, 0)
        assert wire.peak_in_flight["embeddings"] == 1
        wire.peak_in_flight.clear()
        wire.hold("embeddings", concurrency)  # released only when that many are open at once
        store = SQLiteVectorStore(tmp_path / "concurrent.db")
        report = _ingest(wire, store, concurrency)
    # 12 one-chunk documents in batches of 2: 6 requests, `concurrency` of them at once
    assert wire.peak_in_flight["embeddings"] == concurrency
    assert report == serial  # the same outcomes, in input order
    assert [d.doc_id for d in report.documents] == [d.id for d in DOCS]
    assert _contents(store) == _contents(one_at_a_time)
    assert len(store) == len(one_at_a_time) == 12
    assert not _worker_threads()
    store.close()
    one_at_a_time.close()


def test_a_failed_request_stops_the_ingest_and_leaves_whole_documents(tmp_path: Path) -> None:
    with OpenAIWire() as wire:
        wire.fail(500, "the embedding backend fell over")
        store = SQLiteVectorStore(tmp_path / "s.db")
        with pytest.raises(ProviderError):
            _ingest(wire, store, 4)
        assert not _worker_threads()  # nothing runs on after the error
        stored = [doc_id for doc_id, manifest in _contents(store).items() if manifest]
        # written in input order up to the failed batch, each document complete
        assert stored == [d.id for d in DOCS[: len(stored)]]
        assert len(stored) < len(DOCS)
        assert len(store) == len(stored)  # one chunk each: no chunk of a later document
        # the next run completes what is missing
        report = _ingest(wire, store, 4)
    assert report.unchanged == stored
    assert len(store) == len(DOCS)
    store.close()


class _SignallingEmbedder(WordEmbedder):
    """A local embedder that records the order of its calls and signals each start."""

    def __init__(self) -> None:
        super().__init__(dimension=16)
        self.started = [threading.Event() for _ in range(8)]
        self.calls = 0
        self.in_flight = 0
        self.peak = 0
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        with self._lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            call, self.calls = self.calls, self.calls + 1
        self.started[min(call, 7)].set()
        try:
            return super().embed(texts)
        finally:
            with self._lock:
                self.in_flight -= 1


class _WaitingStore(InMemoryVectorStore):
    """Its first write waits until the embedder has started the next batch (or gives up)."""

    def __init__(self, embedder: _SignallingEmbedder) -> None:
        super().__init__()
        self.embedder = embedder
        self.next_batch_began_during_first_write: bool | None = None

    def replace_document_vectors(
        self, manifest: DocumentManifest, chunks: Sequence[Chunk], vectors: memoryview
    ) -> int:
        if self.next_batch_began_during_first_write is None:
            # one thread only: the embedding of batch 2 could never start while we wait
            self.next_batch_began_during_first_write = self.embedder.started[1].wait(10)
        return super().replace_document_vectors(manifest, chunks, vectors)


def test_a_local_embedder_embeds_the_next_batch_while_the_previous_is_written() -> None:
    embedder = _SignallingEmbedder()
    store = _WaitingStore(embedder)
    report = IngestDocuments(embedder, store, batch_size=4)(DOCS)
    assert store.next_batch_began_during_first_write is True
    assert embedder.peak == 1  # a local embedder is called one batch at a time
    assert embedder.calls == 3
    assert report.added == [d.id for d in DOCS]


def test_no_worker_embeds_and_writes_in_turn() -> None:
    embedder = _SignallingEmbedder()
    store = InMemoryVectorStore()
    report = IngestDocuments(embedder, store, batch_size=4, embed_concurrency=0)(DOCS)
    assert not _worker_threads()
    assert report.added == [d.id for d in DOCS]
    assert len(store) == 12


def test_a_long_document_is_written_whole_from_several_batches() -> None:
    embedder = _SignallingEmbedder()
    store = InMemoryVectorStore()
    long = Document(" ".join(f"word{i}" for i in range(400)), id="long")
    docs = [DOCS[0], long, Document("   ", id="blank"), DOCS[1]]
    report = IngestDocuments(embedder, store, Chunker(100, 0), batch_size=3)(docs)
    manifest = store.document_manifest("long")
    assert manifest is not None and manifest.chunk_count > 6  # spans several batches
    hits = store.search(embedder.embed_one("word1"), k=1000)
    assert sum(h.chunk.doc_id == "long" for h in hits) == manifest.chunk_count
    assert len(store) == manifest.chunk_count + 2
    assert [d.doc_id for d in report.documents] == ["d0", "long", "blank", "d1"]
    assert [d.chunks for d in report.documents][2] == 0


@pytest.mark.parametrize("bad", [-1, 1.5, True])
def test_embed_concurrency_is_checked(bad: Any) -> None:
    with pytest.raises((InvalidArgumentError, TypeError)):
        IngestDocuments(WordEmbedder(4), InMemoryVectorStore(), embed_concurrency=bad)


class _TracingChunker(Chunker):
    """A real Chunker that records when it hands out each chunk."""

    def __init__(self, events: list[str]) -> None:
        super().__init__(100, 0)
        self.events = events

    def iter_split(self, doc: Document) -> Iterator[Chunk]:
        for chunk in super().iter_split(doc):
            self.events.append("chunk")
            yield chunk


class _TracingEmbedder(WordEmbedder):
    def __init__(self, events: list[str]) -> None:
        super().__init__(dimension=16)
        self.events = events

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.events.append("embed")
        return super().embed(texts)


def test_a_long_document_is_embedded_while_it_is_still_being_split() -> None:
    events: list[str] = []
    store = InMemoryVectorStore()
    long = Document(" ".join(f"word{i}" for i in range(2000)), id="long")
    ingest = IngestDocuments(
        _TracingEmbedder(events), store, _TracingChunker(events), batch_size=8, embed_concurrency=0
    )
    report = ingest([long])
    chunks = events.count("chunk")
    assert chunks > 16
    assert events.index("embed") == 8  # the first batch went out before chunk 9 was split
    assert events.count("embed") == -(-chunks // 8)
    assert report.documents[0].chunks == chunks == len(store)  # and it was written whole


class _ThreadRecordingHashing(FeatureHashingEmbedder):
    """The real hashing embedder, remembering on which thread each batch was embedded."""

    def __init__(self) -> None:
        super().__init__(dimension=32)
        self.threads: list[str] = []

    def embed_matrix(self, texts: Sequence[str]) -> memoryview:
        self.threads.append(threading.current_thread().name)
        return super().embed_matrix(texts)


def test_the_pure_python_hashing_embedder_runs_on_the_calling_thread() -> None:
    embedder = _ThreadRecordingHashing()
    assert pure_python(embedder) and pure_python(Embedder(provider="hashing"))
    assert not pure_python(Embedder(provider="openai", api_key="test"))
    IngestDocuments(embedder, InMemoryVectorStore(), batch_size=4)(DOCS)
    assert embedder.threads == [threading.current_thread().name] * 3
