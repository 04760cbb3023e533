"""MilvusVectorStore: the store contract on milvus-lite (a local ``.db`` folder), and on a
Milvus server when ``PYWRAPAI_TEST_MILVUS_URL`` names one."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from pywrapai_graph.adapters.vectorstores.milvus.store import MilvusVectorStore
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.ports.store_query import StoreQuery
from pywrapai_graph.testing.contracts.vector_store import VectorStoreContract
from tests.interrupted import VersionedInterrupts

pytest.importorskip("pymilvus")

_URL = os.environ.get("PYWRAPAI_TEST_MILVUS_URL")
#: Milvus's own fusions: WeightedRanker normalises each side itself (not min-max)
_ENGINE_FUSIONS = frozenset({"rescored", "weighted"})


class _MilvusContract(VersionedInterrupts, VectorStoreContract):
    lexical_exact = False  # float32 scores: the reference ranking, not to 1e-9
    lexical_fixed_bm25 = True
    lexical_document_field = False  # BM25 of the chunk alone
    engine_fusions = _ENGINE_FUSIONS
    #: milvus-lite ranks a filtered lexical query with statistics of the rows the filter keeps
    lite_filter_statistics = True

    def test_lexical_filter_applies(self, lexical_store: BaseVectorStore) -> None:
        if not self.lite_filter_statistics:
            super().test_lexical_filter_applies(lexical_store)
            return
        with pytest.raises(AssertionError):  # says so when milvus-lite stops doing it
            super().test_lexical_filter_applies(lexical_store)
        pytest.xfail(
            "milvus-lite 3.2 takes BM25 statistics over the rows a filter keeps (and per "
            "segment: its own TODO); a Milvus server, over the collection"
        )

    def _queries(self, store: BaseVectorStore) -> list[StoreQuery]:
        """Filtered lexical and hybrid queries only where statistics span the collection:
        milvus-lite's per-filter statistics are the limitation the test above pins."""
        asked = super()._queries(store)
        if not self.lite_filter_statistics:
            return asked
        return [q for q in asked if q.mode == "dense" or q.filter is None]


class TestMilvusLite(_MilvusContract):
    def new_store(self, location: Path) -> BaseVectorStore:
        return MilvusVectorStore("contract", path=location / "milvus.db")


@pytest.mark.skipif(not _URL, reason="PYWRAPAI_TEST_MILVUS_URL names no Milvus server")
class TestMilvusServer(_MilvusContract):
    #: a Milvus server (``milvus-lite server`` is milvus-lite's engine behind the URL)
    lite_filter_statistics = os.environ.get("PYWRAPAI_TEST_MILVUS_LITE_SERVER") == "1"

    def new_store(self, location: Path) -> BaseVectorStore:
        # one collection per test location: reopening the location finds the same one
        name = "c" + uuid.uuid5(uuid.NAMESPACE_URL, str(location)).hex
        return MilvusVectorStore(name, url=_URL)


def test_the_adapter_is_at_most_500_lines() -> None:
    """Issue 39's measure of the store seam: the whole Milvus package in 500 lines."""
    package = Path(__file__).parents[2] / "pywrapai_graph/adapters/vectorstores/milvus"
    lines = sum(len(p.read_text().splitlines()) for p in package.glob("*.py"))
    assert lines <= 500, lines
