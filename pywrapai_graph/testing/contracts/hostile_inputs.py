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

import asyncio
from typing import Any, ClassVar

import numpy as np
import pytest

from pywrapai_graph.domain import Chunk
from pywrapai_graph.errors import (
    ArgumentTypeError,
    InvalidArgumentError,
    UnsupportedOperationError,
)
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
        "value",
        [float("inf"), float("nan"), object(), b"bytes", {"a": 1}, [[1]]],
        # the same id in every process (pytest-xdist's workers compare their collections)
        ids=lambda v: "object()" if type(v) is object else repr(v),
    )
    def test_a_filter_value_beyond_json_scalars_is_refused(
        self, store: BaseVectorStore, value: Any
    ) -> None:
        store.add([self._chunk(0, {"k": "x"})])
        with pytest.raises(ValueError, match="JSON"):
            store.search(_unit(self.dim, 0), k=1, filter={"k": value})
        if type(store)._count is not BaseVectorStore._count:
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
        if type(store)._count is not BaseVectorStore._count:
            assert store.count({"tags": ["a", "b"]}) == 1
            assert store.count({"opt": None}) == 1

    # ------------------------------------------------------------------ issue 24
    def test_a_query_that_is_not_one_flat_vector_is_refused(self, store: BaseVectorStore) -> None:
        store.add([self._chunk(0, {})])
        flat = _unit(self.dim, 0)
        for bad in ("abc", b"abc", {"a": 1.0}, 3.0, None):
            with pytest.raises(ArgumentTypeError, match="query vector"):
                store.search(bad, k=1)  # type: ignore[arg-type]
        with pytest.raises(ArgumentTypeError):
            asyncio.run(store.asearch("abc", k=1))  # type: ignore[arg-type]
        for nested in ([flat], [[v] for v in flat], np.array([flat]), np.array([flat, flat])):
            with pytest.raises(InvalidArgumentError, match="flat"):
                store.search(nested, k=1)  # type: ignore[arg-type]
        with pytest.raises(ArgumentTypeError, match="query vector"):
            store.search_many("abc", k=1)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError, match="flat"):
            store.search_many([[flat]], k=1)  # type: ignore[list-item]
        as_array: Any = np.array(flat)
        assert [h.chunk.id for h in store.search(as_array, k=1)] == ["h0"]

    @pytest.mark.parametrize("query", [None, 5, b"words", ["words"]], ids=repr)
    def test_lexical_search_takes_a_text(self, store: BaseVectorStore, query: Any) -> None:
        store.add([self._chunk(0, {}, text="some words")])
        expected = ArgumentTypeError if store.lexical else UnsupportedOperationError
        with pytest.raises(expected):
            store.lexical_search(query, k=1)

    @pytest.mark.parametrize(
        "seconds", [float("nan"), float("inf"), -1.0, True, "600", None], ids=repr
    )
    def test_repair_takes_a_finite_number_of_seconds(
        self, store: BaseVectorStore, seconds: Any
    ) -> None:
        with pytest.raises(InvalidArgumentError, match="older_than_s"):
            store.repair(older_than_s=seconds)
        assert store.repair(older_than_s=0) == 0

    def test_a_text_holding_nul_round_trips(self, store: BaseVectorStore) -> None:
        """The one rule for NUL: any text keeps it (pgvector escapes it); ids, keys and
        metadata strings may not hold it on any store."""
        texts = ["alpha\x00beta", "\x00", "x\ufdd0e\ufdd00y\x00\ufdd0"]
        store.add([self._chunk(i, {"i": i}, text=t) for i, t in enumerate(texts)])
        for i, text in enumerate(texts):
            [hit] = store.search(_unit(self.dim, i), k=1, filter={"i": i})
            assert hit.chunk.text == text
        if store.lexical:
            assert [h.chunk.text for h in store.lexical_search("beta", k=5)] == [texts[0]]

    @pytest.mark.parametrize("where", ["id", "doc_id", "key", "value", "list"])
    def test_nul_in_ids_and_metadata_is_refused(self, store: BaseVectorStore, where: str) -> None:
        bad = "a\x00b"
        chunk = Chunk(
            "t",
            bad if where == "doc_id" else "doc",
            {bad: 1} if where == "key" else {"k": bad} if where == "value" else {},
            id=bad if where == "id" else "h0",
            embedding=_unit(self.dim, 0),
        )
        if where == "list":
            chunk.metadata = {"k": ["ok", bad]}
        with pytest.raises(InvalidArgumentError, match="NUL"):
            store.add([chunk])
        assert len(store) == 0
        with pytest.raises(InvalidArgumentError, match="NUL"):
            store.search(_unit(self.dim, 0), k=1, filter={"k": bad} if where != "key" else {bad: 1})
        if where in ("id", "doc_id") and store.supports_delete:
            with pytest.raises(InvalidArgumentError, match="NUL"):
                store.delete([bad]) if where == "id" else store.delete_by_doc(bad)

    def test_an_int_filter_matches_an_equal_float(self, store: BaseVectorStore) -> None:
        store.add(
            [
                self._chunk(0, {"n": 1.0}),
                self._chunk(1, {"n": 1}),
                self._chunk(2, {"n": True}),
                self._chunk(3, {"n": "1"}),
                self._chunk(4, {"n": 2}),
                self._chunk(5, {"n": -0.0}),
                self._chunk(6, {"n": 0}),
            ]
        )
        query = _unit(self.dim, 0)

        def ids(value: Any) -> list[str]:
            return sorted(h.chunk.id for h in store.search(query, k=10, filter={"n": value}))

        assert ids(1) == ["h0", "h1"]
        assert ids(1.0) == ["h0", "h1"]
        assert ids(True) == ["h2"]
        assert ids("1") == ["h3"]
        assert ids(0) == ids(0.0) == ["h5", "h6"]
        if type(store)._count is not BaseVectorStore._count:
            assert store.count({"n": 1}) == store.count({"n": 1.0}) == 2
