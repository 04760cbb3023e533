"""PGVectorStore writes a query vector's SQL literal itself (``%.9g`` a value): exact for
float32, checked like every store's query, and sent unscaled only where pgvector's float32
cosine cannot overflow."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from pywrapai_graph import PGVectorStore
from pywrapai_graph.adapters.vectorstores.kit.vector_batches import query_norm
from pywrapai_graph.adapters.vectorstores.postgres.rows import vector_literal
from pywrapai_graph.errors import InvalidArgumentError
from pywrapai_graph.ports.store_query import StoreQuery
from pywrapai_graph.testing.contracts.vector_store import make_chunks

pytestmark = pytest.mark.integration
DIM = 16


def test_the_literal_reads_back_as_the_same_float32_values() -> None:
    rng = np.random.default_rng(7)
    for scale in (1e-30, 1e-6, 1.0, 1e6, 1e37):
        vector = (rng.standard_normal(384) * scale).astype(np.float32)
        literal = vector_literal(vector.tolist())
        assert literal.startswith("'[") and literal.endswith("]'")
        back = np.array(literal[2:-2].split(","), dtype=np.float32)
        assert np.array_equal(back, vector), scale


@pytest.mark.parametrize(
    ("vector", "said"),
    [
        ([1.0] * (DIM - 1), "dimension"),
        ([0.0] * DIM, "zero norm"),
        ([float("nan")] + [1.0] * (DIM - 1), "NaN or infinite"),
        ([float("inf")] + [1.0] * (DIM - 1), "NaN or infinite"),
        ([1e39] + [1.0] * (DIM - 1), "NaN or infinite"),  # finite in Python, not in float32
        (["1"] + [1.0] * (DIM - 1), "flat list of numbers"),
    ],
)
def test_a_bad_query_is_refused_before_the_server_sees_it(vector: list[object], said: str) -> None:
    with pytest.raises(InvalidArgumentError, match=said):
        query_norm(vector, DIM)  # type: ignore[arg-type]


def test_queries_at_any_scale_find_the_same_chunks(pg_url: str) -> None:
    store = PGVectorStore(pg_url, table_name=f"lit_{uuid.uuid4().hex[:10]}", dimension=DIM)
    try:
        chunks = make_chunks(30, DIM)
        store.add(chunks)
        target = np.asarray(chunks[7].embedding, dtype=np.float64)
        found = {}
        for scale in (1e-20, 1e-3, 1.0, 1e3, 1e30):  # outside 1e-6..1e6 it is scaled first
            hits = store.retrieve(StoreQuery("dense", 5, vector=(target * scale).tolist()))
            found[scale] = [(h.chunk.id, round(h.score, 5)) for h in hits]
        assert found[1.0][0] == (chunks[7].id, 1.0)
        assert all(ids == found[1.0] for ids in found.values()), found
        with pytest.raises(InvalidArgumentError, match="NaN or infinite"):
            store.retrieve(StoreQuery("dense", 5, vector=[1e39] + [1.0] * (DIM - 1)))
    finally:
        store.clear()
        store.close()
