"""A Chroma server fails a read that races a write now and then with an ``InternalError``
("Error finding id": its HNSW segment's id map lags the metadata; seen in CI with four
processes writing to and querying one new collection). The store repeats such a read a
bounded number of times, sync and async, and raises anything else at once. The errors are
the server's own reply, injected by a proxy in front of a real Chroma server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pywrapai_graph import ChromaVectorStore
from pywrapai_graph.adapters.vectorstores.chroma.client import READ_PAUSES
from pywrapai_graph.errors import VectorStoreError
from pywrapai_graph.testing.contracts.vector_store import make_chunks
from tests.integration.servers import CountingProxy
from tests.integration.test_server_stores import name_for

pytestmark = pytest.mark.integration
DIM = 8
LAGGING = (500, json.dumps({"error": "InternalError", "message": "Error finding id"}).encode())
OTHER = (500, json.dumps({"error": "InternalError", "message": "Error loading hnsw"}).encode())


@pytest.fixture
def proxied(chroma_url: str, tmp_path: Path) -> Iterator[tuple[ChromaVectorStore, CountingProxy]]:
    proxy = CountingProxy(chroma_url)
    url = proxy.start()
    store = ChromaVectorStore(url=url, collection=name_for(tmp_path, "t"))
    store.add(make_chunks(3, DIM))
    store.search([1.0] * DIM, k=1)
    asyncio.run(store.asearch([1.0] * DIM, k=1))  # the async client's collections fetched
    proxy.requests.clear()
    yield store, proxy
    store.close()
    proxy.stop()


def queries(proxy: CountingProxy) -> int:
    return sum(path.endswith("/query") for _, path in proxy.requests)


def test_a_lagging_read_is_repeated_until_it_answers(
    proxied: tuple[ChromaVectorStore, CountingProxy],
) -> None:
    store, proxy = proxied
    expected = store.search([1.0] * DIM, k=3)
    proxy.requests.clear()
    proxy.replies["query"] = [LAGGING] * len(READ_PAUSES)
    assert store.search([1.0] * DIM, k=3) == expected
    assert queries(proxy) == len(READ_PAUSES) + 1


def test_an_async_lagging_read_is_repeated_until_it_answers(
    proxied: tuple[ChromaVectorStore, CountingProxy],
) -> None:
    store, proxy = proxied
    expected = store.search([1.0] * DIM, k=3)
    proxy.requests.clear()
    proxy.replies["query"] = [LAGGING, LAGGING]
    assert asyncio.run(store.asearch([1.0] * DIM, k=3)) == expected
    assert queries(proxy) == 3


def test_a_read_that_keeps_lagging_fails_with_a_typed_error_after_bounded_tries(
    proxied: tuple[ChromaVectorStore, CountingProxy],
) -> None:
    store, proxy = proxied
    proxy.replies["query"] = [LAGGING] * (len(READ_PAUSES) + 1)
    with pytest.raises(VectorStoreError, match="Error finding id"):
        store.search([1.0] * DIM, k=3)
    assert queries(proxy) == len(READ_PAUSES) + 1
    assert store.search([1.0] * DIM, k=1)  # the next read is answered


def test_another_internal_error_is_raised_at_once(
    proxied: tuple[ChromaVectorStore, CountingProxy],
) -> None:
    store, proxy = proxied
    proxy.replies["query"] = [OTHER]
    with pytest.raises(VectorStoreError, match="Error loading hnsw"):
        store.search([1.0] * DIM, k=3)
    proxy.replies["query"] = [OTHER]
    with pytest.raises(VectorStoreError, match="Error loading hnsw"):
        asyncio.run(store.asearch([1.0] * DIM, k=3))
    assert queries(proxy) == 2
