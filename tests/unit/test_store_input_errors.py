"""Store inputs that had no typed answer (issue 24): each now names what was wrong.

The shared ones (query vectors, lexical queries, ``repair``, NUL, numbers in filters) are
in the contract suite (``testing/contracts/hostile_inputs.py``), run on every backend; here
the ones of one component: fusion settings, a SQLite or FAISS file changed by hand.
"""

from __future__ import annotations

import sqlite3
from enum import IntEnum
from pathlib import Path
from typing import Any

import pytest

from pywrapai_graph import (
    Chunk,
    FAISSVectorStore,
    FeatureHashingEmbedder,
    SQLiteVectorStore,
    VectorRetriever,
)
from pywrapai_graph.application.fusion import reciprocal_rank_fusion, weighted_score_fusion
from pywrapai_graph.errors import ConfigurationError, InvalidArgumentError, VectorStoreError
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.ports.store_inputs import checked_chunks
from pywrapai_graph.testing.contracts.vector_store import make_chunks

NAN = float("nan")


@pytest.mark.parametrize(
    "weights", [(NAN, 1.0), (1.0, float("inf")), (-1.0, 1.0), (True, 1.0), ("1", 1.0)], ids=repr
)
def test_fusion_weights_are_finite_non_negative_numbers(weights: Any) -> None:
    store = SQLiteVectorStore(":memory:")
    with pytest.raises(ConfigurationError, match="weights"):
        VectorRetriever(FeatureHashingEmbedder(16), store, mode="hybrid", weights=weights)
    hits = [[], []]  # type: ignore[var-annotated]
    with pytest.raises(InvalidArgumentError, match="weights"):
        reciprocal_rank_fusion(hits, weights=weights)
    with pytest.raises(InvalidArgumentError, match="weights"):
        weighted_score_fusion(hits, weights=weights)


@pytest.mark.parametrize("rrf_k", [NAN, -1, float("inf")], ids=repr)
def test_rrf_k_is_a_finite_number(rrf_k: float) -> None:
    with pytest.raises(InvalidArgumentError, match="rrf_k"):
        reciprocal_rank_fusion([[]], rrf_k=rrf_k)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="rrf_k"):
        VectorRetriever(FeatureHashingEmbedder(16), SQLiteVectorStore(":memory:"), rrf_k=rrf_k)  # type: ignore[arg-type]


def _spoil_metadata(path: Path, table: str, value: str) -> None:
    with sqlite3.connect(path) as db:
        db.execute(f'UPDATE "{table}" SET metadata = ? WHERE id = ?', (value, "c1"))


def _reads(store: BaseVectorStore) -> list[Any]:
    query = make_chunks(3, 8)[1].embedding or []
    return [
        lambda: store.search(query, k=3),
        lambda: store.search(query, k=3, filter={"parity": "odd"}),
        lambda: store.lexical_search("chunk", k=3),
    ]


@pytest.mark.parametrize("value", ["{not json", "[1, 2]", "null"], ids=repr)
def test_a_metadata_row_changed_by_hand_is_a_store_error(tmp_path: Path, value: str) -> None:
    path = tmp_path / "store.db"
    SQLiteVectorStore(path, table_name="chunks").add(make_chunks(3, 8))
    _spoil_metadata(path, "chunks", value)
    store = SQLiteVectorStore(path, table_name="chunks")
    for read in _reads(store):
        with pytest.raises(VectorStoreError, match=r"'c1'.*not a JSON object"):
            read()
    store.delete(["c1"])  # the way out the message names
    assert len(store.search(make_chunks(3, 8)[1].embedding or [], k=3)) == 2


def test_a_faiss_metadata_row_changed_by_hand_is_a_store_error(tmp_path: Path) -> None:
    index, meta = tmp_path / "a.faiss", tmp_path / "a.meta"
    FAISSVectorStore(index, meta).add(make_chunks(3, 8))
    _spoil_metadata(meta, "chunks", "{not json")
    store = FAISSVectorStore(index, meta)
    for read in _reads(store):
        with pytest.raises(VectorStoreError, match=r"'c1'.*not a JSON object"):
            read()
    store.close()


class _Tag(str):
    pass


class _Level(IntEnum):
    LOW = 1


def test_subclasses_of_the_json_types_follow_the_same_rules() -> None:
    """A str or int subclass is judged as its base type: valid ones pass, a lone surrogate
    inside a str subclass is still refused, naming the chunk."""
    fine = [
        Chunk("t", "d", {"level": _Level.LOW, "tag": _Tag("x")}, "c1"),
        Chunk(_Tag("text"), "d", {}, "c2"),
    ]
    checked_chunks(fine)
    bad = [Chunk("t", "d", {}, "c1"), Chunk("t", "d", {"tag": _Tag("a\ud800")}, "c2")]
    with pytest.raises(InvalidArgumentError, match="c2"):
        checked_chunks(bad)
