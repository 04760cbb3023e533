"""One behaviour on every backend for metadata, filters, ``k`` and text (issue 11).

Part of ``VectorStoreContract`` (so every store runs it): metadata values are JSON scalars
or flat lists of them (one error for anything else, objects included), ``True`` never
equals ``1`` in a filter, a list or ``None`` filter value matches an equal stored value, any
key string can be filtered (dots and quotes included), any integral ``k`` (numpy ints,
``2**63``) is clamped to the store's size, lone surrogates are refused before anything is
written. ``BaseVectorStore`` enforces these for every store (user-written ones included)
before the store's own method runs.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pytest

from pywrapai_graph.domain import Chunk
from pywrapai_graph.ports import BaseVectorStore

__all__ = ["HostileInputContract"]


def _unit(dim: int, axis: int) -> list[float]:
    vector = [0.0] * dim
    vector[axis % dim] = 1.0
    return vector


class HostileInputContract:
    """Hostile and edge inputs every store treats the same way."""

    dim: ClassVar[int]

    def _chunk(self, i: int, metadata: dict[str, Any], text: str = "t") -> Chunk:
        return Chunk(text, "doc", metadata, id=f"h{i}", embedding=_unit(self.dim, i))

    @pytest.mark.parametrize(
        "value",
        [
            object(),
            {1, 2},
            {1: "int key"},
            {"a": 1},
            [object()],
            [[1]],
            [{"a": 1}],
            float("nan"),
            b"bytes",
        ],
        ids=[
            "object",
            "set",
            "int-key-dict",
            "dict",
            "list-of-object",
            "nested-list",
            "list-of-dict",
            "nan",
            "bytes",
        ],
    )
    def test_metadata_beyond_json_scalars_is_refused(
        self, store: BaseVectorStore, value: Any
    ) -> None:
        with pytest.raises(ValueError, match="h0"):
            store.add([self._chunk(0, {"k": value})])
        assert len(store) == 0

    def test_json_scalars_and_flat_lists_round_trip(self, store: BaseVectorStore) -> None:
        metadata = {"s": "x", "i": 3, "f": 0.5, "b": False, "none": None, "tags": ["a", 1]}
        store.add([self._chunk(0, metadata)])
        assert store.search(_unit(self.dim, 0), k=1)[0].chunk.metadata == metadata

    @pytest.mark.parametrize("where", ["text", "doc_id", "key", "value"])
    def test_lone_surrogates_are_refused(self, store: BaseVectorStore, where: str) -> None:
        bad = "bad \ud800 text"
        chunk = Chunk(
            bad if where == "text" else "t",
            bad if where == "doc_id" else "doc",
            {bad: 1} if where == "key" else {"k": bad} if where == "value" else {},
            id="h0",
            embedding=_unit(self.dim, 0),
        )
        with pytest.raises(ValueError, match="surrogate"):
            store.add([chunk])
        assert len(store) == 0
        with pytest.raises(ValueError, match="surrogate"):
            store.search(_unit(self.dim, 0), k=1, filter={"k": bad})

    def test_a_bool_never_equals_an_int(self, store: BaseVectorStore) -> None:
        store.add([self._chunk(0, {"n": True}), self._chunk(1, {"n": 1})])
        query = _unit(self.dim, 0)
        assert [h.chunk.id for h in store.search(query, k=5, filter={"n": 1})] == ["h1"]
        assert [h.chunk.id for h in store.search(query, k=5, filter={"n": True})] == ["h0"]
        assert [h.chunk.id for h in store.search(query, k=5, filter={"n": False})] == []

    @pytest.mark.parametrize("key", ["a.b", 'q"k', "with space", "ünïcødé", "$and", "m.x"])
    def test_any_key_string_can_be_filtered(self, store: BaseVectorStore, key: str) -> None:
        store.add([self._chunk(0, {key: "yes"}), self._chunk(1, {key: "no"})])
        hits = store.search(_unit(self.dim, 1), k=5, filter={key: "yes"})
        assert [h.chunk.id for h in hits] == ["h0"]

    @pytest.mark.parametrize(
        "k",
        [np.int64(2), np.int32(2), np.uint8(2), 2**31, 2**63, 10**30],
        ids=["int64", "int32", "uint8", "2**31", "2**63", "10**30"],
    )
    def test_any_integral_k_is_clamped(self, store: BaseVectorStore, k: Any) -> None:
        store.add([self._chunk(0, {}), self._chunk(1, {})])
        assert len(store.search(_unit(self.dim, 0), k=k)) == 2

    @pytest.mark.parametrize("k", [0, -1, True, 2.0, "3", None], ids=repr)
    def test_a_k_that_is_not_a_positive_integer_is_refused(
        self, store: BaseVectorStore, k: Any
    ) -> None:
        store.add([self._chunk(0, {})])
        with pytest.raises((ValueError, TypeError)):
            store.search(_unit(self.dim, 0), k=k)

    @pytest.mark.parametrize(
        "value", [float("inf"), float("nan"), object(), b"bytes", {"a": 1}, [[1]]], ids=repr
    )
    def test_a_filter_value_beyond_json_scalars_is_refused(
        self, store: BaseVectorStore, value: Any
    ) -> None:
        store.add([self._chunk(0, {"k": "x"})])
        with pytest.raises(ValueError, match="JSON"):
            store.search(_unit(self.dim, 0), k=1, filter={"k": value})
        if type(store).count is not BaseVectorStore.count:
            with pytest.raises(ValueError, match="JSON"):
                store.count({"k": value})

    def test_list_and_null_filter_values_match_equal_values_only(
        self, store: BaseVectorStore
    ) -> None:
        store.add(
            [
                self._chunk(0, {"tags": ["a", "b"], "opt": None}),
                self._chunk(1, {"tags": ["b", "a"], "opt": 0}),
                self._chunk(2, {"tags": ["a"], "opt": "None"}),
                self._chunk(3, {"tags": [True, 1.5], "opt": False}),
                self._chunk(4, {"tags": "a", "other": None}),
            ]
        )
        query = _unit(self.dim, 0)

        def ids(filter: dict[str, Any]) -> list[str]:
            return sorted(h.chunk.id for h in store.search(query, k=10, filter=filter))

        assert ids({"tags": ["a", "b"]}) == ["h0"]
        assert ids({"tags": ("b", "a")}) == ["h1"]  # a tuple is a JSON list
        assert ids({"tags": ["a"]}) == ["h2"]
        assert ids({"tags": [True, 1.5]}) == ["h3"]
        assert ids({"tags": [1, 1.5]}) == []  # True is not 1, inside lists too
        assert ids({"tags": []}) == []
        assert ids({"opt": None}) == ["h0"]  # null matches null, not a missing key
        assert ids({"tags": ["a", "b"], "opt": None}) == ["h0"]
        if type(store).count is not BaseVectorStore.count:
            assert store.count({"tags": ["a", "b"]}) == 1
            assert store.count({"opt": None}) == 1
