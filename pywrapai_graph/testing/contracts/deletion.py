"""The deletion part of the vector-store contract: ``delete``, ``delete_by_doc`` and
``count``, or, for a store without them (``supports_delete`` False), the errors that say so."""

from __future__ import annotations

from typing import ClassVar

import pytest

from pywrapai_graph.errors import UnsupportedOperationError
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.testing.contracts.store_data import (
    make_chunks,
)

__all__ = ["DeletionContract"]


class DeletionContract:
    """Deleting by id and by document, counting by filter (a store that cannot says so)."""

    dim: ClassVar[int]

    def _cannot_delete(self, store: BaseVectorStore) -> bool:
        """A store declaring ``supports_delete = False`` must refuse loudly, not pretend."""
        if store.supports_delete:
            return False
        with pytest.raises(UnsupportedOperationError):
            store.delete(["any"])
        with pytest.raises(UnsupportedOperationError):
            store.delete_by_doc("any")
        return True

    def test_delete_by_ids(self, store: BaseVectorStore) -> None:
        chunks = make_chunks(10, self.dim)
        store.add(chunks)
        if self._cannot_delete(store):
            return
        assert store.delete([chunks[0].id, chunks[5].id, "no-such-id"]) == 2
        assert len(store) == 8
        ids = {h.chunk.id for h in store.search(chunks[0].embedding or [], k=10)}
        assert chunks[0].id not in ids
        assert chunks[5].id not in ids
        assert len(ids) == 8

    def test_delete_by_doc(self, store: BaseVectorStore) -> None:
        chunks = make_chunks(12, self.dim, docs=3)
        store.add(chunks)
        if self._cannot_delete(store):
            return
        assert store.delete_by_doc("doc-1") == 4
        assert len(store) == 8
        remaining = store.search(chunks[1].embedding or [], k=12)
        assert all(h.chunk.doc_id != "doc-1" for h in remaining)
        assert store.delete_by_doc("doc-1") == 0

    def test_count_and_dimension(self, store: BaseVectorStore) -> None:
        """``count``/``dimension`` come with defaults, so a store written with the required
        methods only still passes: its ``dimension`` is None and a filtered count refuses."""
        assert store.count() == 0
        chunks = make_chunks(20, self.dim, docs=4)
        store.add(chunks)
        assert store.count() == len(store) == 20
        own = type(store)
        if own.dimension is BaseVectorStore.dimension:
            assert store.dimension is None
        else:
            assert store.dimension == self.dim
        if own._count is BaseVectorStore._count:
            with pytest.raises(UnsupportedOperationError, match="filter"):
                store.count({"parity": "even"})
            return
        assert store.count({"parity": "even"}) == 10
        assert store.count({"parity": "even", "doc": "doc-0"}) == 5
        assert store.count({"parity": "none"}) == 0

    def test_delete_refuses_a_bare_string(self, store: BaseVectorStore) -> None:
        chunks = make_chunks(3, self.dim)
        for c, name in zip(chunks, "abc", strict=True):
            c.id = name
        store.add(chunks)
        if self._cannot_delete(store):
            return
        with pytest.raises(TypeError, match="list of ids"):
            store.delete("abc")
        assert len(store) == 3
        assert store.delete(["abc"]) == 0
