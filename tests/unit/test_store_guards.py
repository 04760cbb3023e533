"""BaseVectorStore checks the inputs of the methods a store defines before they run, and
keeps only hits equal to the filter: a user's store gets the shared rules for free."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.errors import ArgumentTypeError, InvalidArgumentError
from pywrapai_graph.ports import BaseVectorStore


class _Rows(BaseVectorStore):
    """Chunks kept in a list, with no checks; what reached the store is recorded."""

    def __init__(self) -> None:
        self.rows: list[Chunk] = []
        self.asked: list[Any] = []

    def add(self, chunks: list[Chunk]) -> None:  # type: ignore[override]  # as the reference
        self.rows.extend(chunks)

    def clear(self) -> None:
        self.rows.clear()

    def __len__(self) -> int:
        return len(self.rows)


class NaiveStore(_Rows):
    """Written like the reference's PineconeStore: no filter parameter, no checks; it records
    what reached it. Hits come back in insertion order with score 1."""

    def search(  # type: ignore[override]  # the reference's signature: no filter
        self, query_vector: list[float], k: int
    ) -> list[ScoredChunk]:
        self.asked.append(k)
        return [ScoredChunk(c, 1.0) for c in self.rows[:k]]


class LooseFilterStore(_Rows):
    """Takes a filter but compares with Python's ``==`` (so ``True == 1``)."""

    def search(  # type: ignore[override]
        self, query_vector: list[float], k: int = 4, filter: dict[str, Any] | None = None
    ) -> list[ScoredChunk]:
        self.asked.append(k)
        wanted = filter or {}
        hits = [c for c in self.rows if all(c.metadata.get(n) == v for n, v in wanted.items())]
        return [ScoredChunk(c, 1.0) for c in hits[:k]]

    def delete(self, ids: Sequence[str]) -> int:
        self.asked.append(ids)
        return 0

    def delete_by_doc(self, doc_id: str) -> int:
        return 0


def _chunk(i: int, **metadata: Any) -> Chunk:
    return Chunk(f"t{i}", "d", metadata, id=f"c{i}", embedding=[1.0, 0.0])


def test_a_store_without_a_filter_parameter_gets_a_plain_int_k() -> None:
    store = NaiveStore()
    store.add([_chunk(i) for i in range(3)])
    numpy_k: Any = np.int64(2)
    assert len(store.search([1.0, 0.0], numpy_k)) == 2
    assert len(store.search([1.0, 0.0], k=2**63)) == 3
    assert store.asked == [2, 2**31 - 1]
    assert all(type(k) is int for k in store.asked)
    with pytest.raises(InvalidArgumentError, match="k must be a positive int"):
        store.search([1.0, 0.0], k=True)
    assert len(store.asked) == 2  # refused before the store's code ran


def test_a_bad_chunk_never_reaches_the_store() -> None:
    store = NaiveStore()
    with pytest.raises(InvalidArgumentError, match="c1"):
        store.add([_chunk(0), _chunk(1, when={"nested": 1})])
    with pytest.raises(InvalidArgumentError, match="surrogate"):
        store.add([Chunk("bad \ud800", "d", {}, id="s", embedding=[1.0])])
    with pytest.raises(ArgumentTypeError, match="list of chunks"):
        store.add(_chunk(0))  # type: ignore[arg-type]
    assert store.rows == []
    store.add(_chunk(i) for i in range(2))  # type: ignore[arg-type]  # a generator: read once
    assert [c.id for c in store.rows] == ["c0", "c1"]


def test_hits_not_equal_to_the_filter_are_dropped_and_more_are_asked_for() -> None:
    store = LooseFilterStore()
    # ten chunks with n=True ahead of the two with n=1: == keeps all twelve for {"n": 1}
    store.add([_chunk(i, n=True) for i in range(10)] + [_chunk(10, n=1), _chunk(11, n=1)])
    hits = store.search([1.0, 0.0], k=2, filter={"n": 1})
    assert [h.chunk.id for h in hits] == ["c10", "c11"]
    assert store.asked == [2, 4, 8, 16]  # a full page lost hits to the filter: ask for more
    assert [h.chunk.id for h in store.search([1.0, 0.0], k=3, filter={"n": True})] == [
        "c0",
        "c1",
        "c2",
    ]


def test_a_tuple_filter_value_reaches_the_store_as_a_list() -> None:
    store = LooseFilterStore()
    store.add([_chunk(0, tags=["a", "b"])])
    assert len(store.search([1.0, 0.0], k=1, filter={"tags": ("a", "b")})) == 1
    with pytest.raises(InvalidArgumentError, match="JSON scalars"):
        store.search([1.0, 0.0], k=1, filter={"tags": {"a": 1}})


def test_delete_gets_distinct_str_ids_only() -> None:
    store = LooseFilterStore()
    with pytest.raises(ArgumentTypeError, match="delete"):
        store.delete("c0")
    with pytest.raises(ArgumentTypeError, match="str"):
        store.delete([1, 2])  # type: ignore[list-item]
    store.delete(["a", "b", "a"])
    assert store.asked == [["a", "b"]]


def test_async_twins_of_a_sync_store_are_checked_too() -> None:
    import asyncio

    store = LooseFilterStore()
    with pytest.raises(InvalidArgumentError, match="c0"):
        asyncio.run(store.aadd([_chunk(0, bad=object())]))
    with pytest.raises(InvalidArgumentError):
        asyncio.run(store.asearch([1.0, 0.0], k=0))


def test_replace_document_chunks_are_checked_before_the_store_runs() -> None:
    from pywrapai_graph.domain.manifest import DocumentManifest, EmbedderIdentity

    class OwnReplace(LooseFilterStore):
        def replace_document(self, manifest: DocumentManifest, chunks: Sequence[Chunk]) -> int:
            self.rows = list(chunks)
            return 0

    store = OwnReplace()
    manifest = DocumentManifest("d", "h", 1, EmbedderIdentity("p", "m", 2))
    with pytest.raises(InvalidArgumentError, match="surrogate"):
        store.replace_document(manifest, [_chunk(0, k="\udfff")])
    with pytest.raises(InvalidArgumentError, match="c0"):
        store.replace_document(manifest, chunks=[_chunk(0, k={"a": 1})])
    assert store.rows == []
    assert store.replace_document(manifest, [_chunk(0, k=["a"])]) == 0
    assert [c.id for c in store.rows] == ["c0"]
