"""One statement (one round trip) per PostgreSQL read, a whole retrieval included; writes keep
their transaction. Counted on the wire by a proxy that reads the messages the store sends."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from pywrapai_graph import (
    Document,
    FeatureHashingEmbedder,
    InMemoryVectorStore,
    PGVectorStore,
    VectorRetriever,
)
from pywrapai_graph.testing.contracts.vector_store import make_chunks
from tests.integration.pg_wire import StatementCounter

pytestmark = pytest.mark.integration
DIM = 8


@pytest.fixture
def wire(pg_url: str) -> Iterator[tuple[StatementCounter, str]]:
    counter = StatementCounter(pg_url)
    url = counter.start()
    yield counter, url
    counter.stop()


def test_each_read_is_one_statement_and_writes_stay_transactional(
    wire: tuple[StatementCounter, str],
) -> None:
    counter, url = wire
    store = PGVectorStore(url, table_name=f"rt_{uuid.uuid4().hex[:10]}", dimension=DIM)
    chunks = make_chunks(6, DIM)
    store.add(chunks)
    store.search(chunks[0].embedding or [], k=2)  # every pooled connection is set up below
    for _ in range(store.pool_size):
        store.count()
    counter.take()

    query = chunks[1].embedding or []
    searches = 20
    for _ in range(searches):
        assert store.search(query, k=3)[0].chunk.id == chunks[1].id
    sent = counter.take()
    assert len(sent) == searches, sent[:6]
    assert all(s.startswith("SELECT id, doc_id, text, metadata, 1 - (embedding") for s in sent)

    asyncio.run(store.asearch(query, k=3))
    assert len(store.search_many([query, query], k=2)) == 2
    assert store.count(filter={"i": 1}) in (0, 1)
    assert store.document_manifest("nothing") is None
    assert store.embedder_identity() is None
    reads = counter.take()
    assert len(reads) == 5, reads
    assert not [s for s in reads if s in ("BEGIN", "COMMIT")]

    store.delete([chunks[5].id])
    write = counter.take()
    assert write[0] == "BEGIN" and write[-1] == "COMMIT" and len(write) == 4, write
    store.close()


DOCS = {
    "acme": [
        "Refunds take five business days after the parcel reaches our warehouse.",
        "Parcels ship from the Rotterdam warehouse every weekday morning.",
        "Calls are answered by the support desk between nine and five.",
    ],
    "globex": [
        "Refunds are paid within ten days of a cancelled order.",
        "Parcels ship from Chicago by ground freight.",
        "The night desk answers calls about lost parcels.",
    ],
}
MODES: list[dict[str, Any]] = [
    {"mode": "dense"},
    {"mode": "lexical"},
    *({"mode": "hybrid", "fusion": fusion} for fusion in ("rescored", "rrf", "weighted")),
]


def _retrieval(retriever: Any, runs: str, query: str, filter: dict[str, Any] | None) -> Any:
    if runs == "async":
        return asyncio.run(retriever.aretrieve(query, filter=filter))
    return retriever.retrieve(query, filter=filter)


@pytest.mark.parametrize("settings", MODES, ids=lambda s: "-".join(s.values()))
def test_each_retrieval_is_one_statement_in_one_message(
    wire: tuple[StatementCounter, str], settings: dict[str, Any]
) -> None:
    """After a warm-up, every retrieval — any mode and fusion, with a filter, through a
    tenant scope, sync and async — sends the server exactly one message: one simple-protocol
    ``Q`` holding one SELECT (no BEGIN/COMMIT, no SET, no second statement). The hits are the
    composed retrieval's over an in-memory store of the same documents."""
    counter, url = wire
    store = PGVectorStore(url, table_name=f"rq_{uuid.uuid4().hex[:10]}", dimension=64)
    reference = InMemoryVectorStore()
    retrievers = [
        VectorRetriever(FeatureHashingEmbedder(64), s, k=2, min_score=-1.0, **settings)
        for s in (store, reference)
    ]
    for tenant, texts in DOCS.items():
        docs = [Document(t, id=f"{tenant}-{i}") for i, t in enumerate(texts)]
        for retriever in retrievers:
            retriever.scoped({"tenant": tenant}).add_documents(docs)
    ours, composed = retrievers
    for _ in range(store.pool_size + 1):  # every pooled connection set up
        ours.retrieve("refunds")
    counter.take(), counter.take_messages()

    query = "how many days do refunds take"
    for runs in ("sync", "async"):
        for how, filter in (("all", None), ("filter", {"tenant": "acme"}), ("scope", None)):
            asked = ours.scoped({"tenant": "acme"}) if how == "scope" else ours
            hits = _retrieval(asked, runs, query, filter)
            sent, messages = counter.take(), counter.take_messages()
            assert messages == ["Q"], (runs, how, messages)
            assert len(sent) == 1 and ";" not in sent[0], sent
            assert sent[0].startswith(("SELECT", "WITH")), sent[0][:60]
            base = composed.scoped({"tenant": "acme"}) if how == "scope" else composed
            want = _retrieval(base, "sync", query, filter)
            assert [h.chunk.id for h in hits] == [h.chunk.id for h in want], (runs, how)
            assert hits[0].chunk.text.startswith("Refunds")
            if how != "all":
                assert {h.chunk.metadata["tenant"] for h in hits} == {"acme"}
            assert [h.score for h in hits] == pytest.approx([h.score for h in want], abs=1e-5)
    store.close()
