"""Qdrant cluster settings (issue 39 item 2): shards, replication and write consistency go into
the collections a store creates, read consistency into every read, sync and async; unset,
nothing is sent (Qdrant's defaults). No cluster runs here: the REST front over qdrant-client's
local engine (``qdrant_rest``) records the requests the real SDK sends and answers the
collection's settings back as a server would."""

from __future__ import annotations

import asyncio
import re
import uuid
from typing import Any

import pytest

from pywrapai_graph import Document, QdrantVectorStore, VectorRetriever
from pywrapai_graph.adapters.embedders.hashing_embedder import FeatureHashingEmbedder
from pywrapai_graph.composition.backends import build_store
from pywrapai_graph.composition.settings import StoreSettings
from pywrapai_graph.errors import ConfigurationError
from tests.integration.qdrant_rest import CLUSTER_KEYS, QdrantRest

pytestmark = pytest.mark.integration
DOCS = [
    Document("Laminar boundary layers on a heated flat plate.", id="d1"),
    Document("Supersonic shock waves ahead of a blunt cone.", id="d2"),
]
#: the reads that take a read consistency (Qdrant's count does not)
_READS = re.compile(r"/collections/[^/]+/points(/query(/batch)?|/scroll)?\?")


def _created(front: QdrantRest, name: str) -> dict[str, Any]:
    (body,) = [b for m, p, b in front.sent if m == "PUT" and p == f"/collections/{name}"]
    return {k: body.get(k) for k in CLUSTER_KEYS}


def _reads(front: QdrantRest) -> list[str]:
    """The paths (with their query strings) of the reads sent since the front started."""
    return [p for m, p, _ in front.sent if m == "POST" and _READS.search(p + "?")]


def _use(store: QdrantVectorStore) -> None:
    retriever = VectorRetriever(FeatureHashingEmbedder(32), store, mode="hybrid", candidates=2)
    retriever.add_documents(DOCS)
    assert retriever.retrieve("laminar boundary plate", k=1)[0].chunk.doc_id == "d1"
    assert store.search_many([FeatureHashingEmbedder(32).embed(["shock cone"])[0]], k=1)
    assert store.count() == 2 == store.count({"missing": 1}) + 2

    async def read() -> None:
        await retriever.aretrieve("supersonic shock", k=1)
        await store.acount()
        await store.aclose()

    asyncio.run(read())


def test_cluster_settings_reach_the_collections_and_every_read(qdrant_rest: QdrantRest) -> None:
    name = f"cl_{uuid.uuid4().hex[:10]}"
    store = QdrantVectorStore(
        name,
        url=qdrant_rest.url,
        shard_number=3,
        replication_factor=2,
        write_consistency_factor=2,
        read_consistency="majority",
    )
    _use(store)
    assert _created(qdrant_rest, name) == {
        "shard_number": 3,
        "replication_factor": 2,
        "write_consistency_factor": 2,
    }
    # the records collection is replicated as the chunks are, on one shard (it is small)
    assert _created(qdrant_rest, f"{name}.docs") == {
        "shard_number": None,
        "replication_factor": 2,
        "write_consistency_factor": 2,
    }
    reads = [p for p in _reads(qdrant_rest) if name in p]
    kinds = {re.sub(r"\?.*", "", p.split("/points", 1)[1]) for p in reads}
    assert kinds >= {"", "/query", "/query/batch", "/scroll"}  # "": retrieve by id
    assert all("consistency=majority" in p for p in reads), reads
    from qdrant_client import QdrantClient

    params = QdrantClient(url=qdrant_rest.url, check_compatibility=False)
    got = params.get_collection(name).config.params
    assert (got.shard_number, got.replication_factor, got.write_consistency_factor) == (3, 2, 2)
    store.close()


def test_without_settings_nothing_is_sent_and_settings_build_the_store(
    qdrant_rest: QdrantRest,
) -> None:
    plain, configured = f"cl_{uuid.uuid4().hex[:10]}", f"cl_{uuid.uuid4().hex[:10]}"
    _use(QdrantVectorStore(plain, url=qdrant_rest.url))
    assert _created(qdrant_rest, plain) == dict.fromkeys(CLUSTER_KEYS)
    assert not [p for p in _reads(qdrant_rest) if plain in p and "consistency" in p]
    settings = StoreSettings(
        backend="qdrant",
        url=qdrant_rest.url,
        collection=configured,
        shard_number=2,
        read_consistency=2,
    )
    store = build_store(settings)
    assert isinstance(store, QdrantVectorStore)
    _use(store)
    assert _created(qdrant_rest, configured)["shard_number"] == 2
    reads = [p for p in _reads(qdrant_rest) if configured in p]
    assert reads and all("consistency=2" in p for p in reads)


@pytest.mark.parametrize(
    "setting",
    [{"shard_number": 0}, {"replication_factor": True}, {"read_consistency": "most"}],
)
def test_a_bad_cluster_setting_is_refused(qdrant_rest: QdrantRest, setting: Any) -> None:
    with pytest.raises(ConfigurationError, match=next(iter(setting))):
        QdrantVectorStore("bad", url=qdrant_rest.url, **setting)


def test_a_folder_refuses_cluster_settings(tmp_path: Any) -> None:
    with pytest.raises(ConfigurationError, match="needs a Qdrant server"):
        QdrantVectorStore("docs", location=str(tmp_path / "q"), replication_factor=2)
