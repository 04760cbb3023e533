"""One statement (one round trip) per PostgreSQL read; writes keep their transaction.
Counted on the wire by a proxy that reads the statements the store sends."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import pytest

from pywrapai_graph import PGVectorStore
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
