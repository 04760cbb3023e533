"""The Qdrant server store keeps payload indexes on ``id`` (the chunk id, which deletes and
lookups by chunk id filter on) and on ``pywrapai_terms`` (which lexical queries filter on):
created with the collection, never asked again at open. The server path runs against the REST front over qdrant-client's local
engine (``qdrant_rest``): the requests are the server's, the engine ignores the index."""

from __future__ import annotations

import uuid
import warnings

import pytest
from qdrant_client.models import PayloadSchemaType

from pywrapai_graph import Document, QdrantVectorStore, VectorRetriever
from pywrapai_graph.adapters.embedders.hashing_embedder import FeatureHashingEmbedder
from pywrapai_graph.adapters.vectorstores.qdrant.points import TERMS
from tests.integration.qdrant_rest import QdrantRest

pytestmark = pytest.mark.integration
DOCS = [
    Document("Laminar boundary layers on a heated flat plate.", id="d1"),
    Document("Supersonic shock waves ahead of a blunt cone.", id="d2"),
]


def _index_requests(front: QdrantRest, name: str) -> int:
    return front.requests.count(("PUT", f"/collections/{name}/index"))


def test_a_server_collection_gets_the_payload_indexes_at_creation_only(
    qdrant_rest: QdrantRest,
) -> None:
    name = f"ids_{uuid.uuid4().hex[:10]}"
    store = QdrantVectorStore(name, url=qdrant_rest.url)
    assert _index_requests(qdrant_rest, name) == 0  # no collection yet
    hybrid = VectorRetriever(FeatureHashingEmbedder(32), store, mode="hybrid", candidates=1)
    hybrid.add_documents(DOCS)
    assert _index_requests(qdrant_rest, name) == 2  # with the collection: id, terms
    assert hybrid.retrieve("laminar boundary plate", k=2)[0].chunk.doc_id == "d1"
    store.close()
    QdrantVectorStore(name, url=qdrant_rest.url).close()  # an open is no upgrade
    assert _index_requests(qdrant_rest, name) == 2
    assert not [e for e in qdrant_rest.errors if name in e]


def test_local_mode_accepts_the_index_call() -> None:
    store = QdrantVectorStore("ids", location=":memory:")
    hybrid = VectorRetriever(FeatureHashingEmbedder(32), store, mode="hybrid", candidates=1)
    hybrid.add_documents(DOCS)
    client = store._client  # the local engine takes the call, twice (idempotent), and warns
    with warnings.catch_warnings():  # (once per process) that it has no payload indexes
        warnings.simplefilter("ignore", UserWarning)
        for _ in range(2):
            client.create_payload_index("ids", TERMS, PayloadSchemaType.INTEGER)
    assert hybrid.retrieve("supersonic shock cone", k=2)[0].chunk.doc_id == "d2"
    store.close()
