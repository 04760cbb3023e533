"""The contract every vector store must pass.

Subclass :class:`VectorStoreContract` in a test module and implement ``new_store``::

    class TestMyStore(VectorStoreContract):
        def new_store(self, location: Path) -> BaseVectorStore:
            return MyStore(path=location / "db")

The async cases drive the ``a*`` twins with ``asyncio.run`` (no plugin needed): a store
that implements only the sync methods passes them through the base class's thread offload.

``new_store`` is called again with the same location to test reopening: a store whose
``persistent`` is True must show the same data; a non-persistent one must start empty.
Approximate backends (``exact`` is False) are held to recall instead of identical ids.

Rules for a store author (docs/writing-a-store.md has a complete store that passes):

* A valid vector is a flat sequence of numbers of the store's dimension (the first batch
  decides). ``add`` rejects, with a ``ValueError`` that names the chunk id and says
  ``no embedding``, ``dimension`` (or ``flat list``), ``NaN``, ``infinite`` or ``zero``:
  a missing embedding, a wrong length or a nested list, a NaN, a value outside the float32
  range, an all-zero vector.
* Vectors are float32: ``1e39`` is finite in Python but infinite in float32, so it must be
  rejected as infinite before conversion (check ``abs(v) > np.finfo(np.float32).max``),
  never stored as ``inf``.
* A rejected batch leaves the store exactly as it was; ids upsert, the last of a repeated
  id in one batch wins.
* ``search`` returns cosine similarity, highest first, at most ``k``; bad queries (wrong
  dimension, zero norm) and ``k < 1`` raise ``ValueError``. Returned chunks carry text,
  ``doc_id`` and metadata, no embedding.
* Metadata values are JSON scalars (str, int, float, bool, None) or flat lists of them; a
  filter keeps chunks whose metadata has every given key with an equal value (``True`` is
  not ``1``). ``BaseVectorStore`` checks chunks, ``k``, filters and ids before your methods
  run, and drops any hit that does not equal the filter, so these hold for free.
"""

from __future__ import annotations

import asyncio
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from pywrapai_graph.application.vector_retriever import VectorRetriever
from pywrapai_graph.domain import Chunk, Document
from pywrapai_graph.errors import ScopeError
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.testing.contracts.async_twins import AsyncTwinsContract
from pywrapai_graph.testing.contracts.deletion import DeletionContract
from pywrapai_graph.testing.contracts.documents import DocumentContract
from pywrapai_graph.testing.contracts.hostile_inputs import HostileInputContract
from pywrapai_graph.testing.contracts.lexical_quality import LexicalQualityContract
from pywrapai_graph.testing.contracts.one_request import OneRequestContract
from pywrapai_graph.testing.contracts.scoped_views import ScopedViewContract
from pywrapai_graph.testing.contracts.store_data import (
    WordEmbedder,
    document_chunks,
    exact_top,
    make_chunks,
    manifest_for,
)

__all__ = ["VectorStoreContract", "WordEmbedder", "document_chunks", "make_chunks", "manifest_for"]


class VectorStoreContract(
    DeletionContract,
    DocumentContract,
    AsyncTwinsContract,
    OneRequestContract,
    LexicalQualityContract,
    HostileInputContract,
    ScopedViewContract,
    ABC,
):
    """The behaviour every :class:`BaseVectorStore` promises (lexical search and hostile
    inputs included; ``BaseVectorStore`` checks the inputs for every store)."""

    dim: ClassVar[int] = 16

    @abstractmethod
    def new_store(self, location: Path) -> BaseVectorStore:
        """A store whose data lives under ``location`` (called twice to test reopening)."""

    @pytest.fixture
    def location(self, tmp_path: Path) -> Path:
        return tmp_path

    @pytest.fixture
    def store(self, location: Path) -> Iterator[BaseVectorStore]:
        s = self.new_store(location)
        yield s
        s.close()

    # ------------------------------------------------------------------ basics
    def test_empty_store(self, store: BaseVectorStore) -> None:
        assert len(store) == 0
        assert store.search([1.0] * self.dim, k=3) == []

    def test_add_len_clear(self, store: BaseVectorStore) -> None:
        store.add(make_chunks(10, self.dim))
        assert len(store) == 10
        store.clear()
        assert len(store) == 0
        assert store.search([1.0] * self.dim, k=3) == []
        store.add(make_chunks(3, self.dim, seed=1))
        assert len(store) == 3

    def test_add_empty_batch_is_a_no_op(self, store: BaseVectorStore) -> None:
        store.add([])
        assert len(store) == 0

    def test_results_ordered_and_at_most_k(self, store: BaseVectorStore) -> None:
        chunks = make_chunks(30, self.dim)
        store.add(chunks)
        hits = store.search(chunks[0].embedding or [], k=5)
        assert len(hits) == 5
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True)
        assert len(store.search(chunks[0].embedding or [], k=100)) == 30

    def test_self_match_scores_one(self, store: BaseVectorStore) -> None:
        chunks = make_chunks(20, self.dim)
        store.add(chunks)
        for c in chunks[:5]:
            top = store.search(c.embedding or [], k=1)[0]
            assert top.chunk.id == c.id
            assert top.score == pytest.approx(1.0, abs=1e-4)

    def test_scores_equal_exact_numpy_cosine(self, store: BaseVectorStore) -> None:
        chunks = make_chunks(300, self.dim, seed=7)
        store.add(chunks)
        rng = np.random.default_rng(99)
        recall_hits = 0
        for _ in range(10):
            q = rng.standard_normal(self.dim)
            expected = exact_top(chunks, q, 5)
            got = store.search(q.tolist(), k=5)
            exact_scores = dict(exact_top(chunks, q, len(chunks)))
            for hit in got:  # whatever it returns, the score is the true cosine
                assert hit.score == pytest.approx(exact_scores[hit.chunk.id], abs=1e-4)
            if store.exact:
                assert [h.chunk.id for h in got] == [i for i, _ in expected]
            recall_hits += len({h.chunk.id for h in got} & {i for i, _ in expected})
        assert recall_hits / 50 >= (1.0 if store.exact else 0.9)

    def test_returned_chunks_carry_text_doc_and_metadata(self, store: BaseVectorStore) -> None:
        chunks = make_chunks(5, self.dim, docs=2)
        store.add(chunks)
        hit = store.search(chunks[3].embedding or [], k=1)[0].chunk
        assert (hit.id, hit.text, hit.doc_id) == (chunks[3].id, chunks[3].text, chunks[3].doc_id)
        assert hit.metadata == chunks[3].metadata
        assert hit.embedding is None

    def test_query_vector_length_is_not_mutated(self, store: BaseVectorStore) -> None:
        chunks = make_chunks(5, self.dim)
        store.add(chunks)
        q = list(chunks[0].embedding or [])
        snapshot = list(q)
        store.search(q, k=2)
        assert q == snapshot

    # ------------------------------------------------------------------ upsert / delete
    def test_upsert_replaces_same_id(self, store: BaseVectorStore) -> None:
        chunks = make_chunks(5, self.dim)
        store.add(chunks)
        replacement = make_chunks(1, self.dim, seed=42)[0]
        replacement.id = chunks[2].id
        replacement.text = "replaced text"
        store.add([replacement])
        assert len(store) == 5
        top = store.search(replacement.embedding or [], k=1)[0]
        assert (top.chunk.id, top.chunk.text) == (chunks[2].id, "replaced text")
        assert top.score == pytest.approx(1.0, abs=1e-4)

    def test_duplicate_ids_in_one_batch_keep_the_last(self, store: BaseVectorStore) -> None:
        a, b = make_chunks(2, self.dim)
        b.id = a.id
        store.add([a, b])
        assert len(store) == 1
        assert store.search(b.embedding or [], k=1)[0].chunk.text == b.text

    # ------------------------------------------------------------------ size
    # ------------------------------------------------------------------ filter
    def test_metadata_filter(self, store: BaseVectorStore) -> None:
        chunks = make_chunks(20, self.dim, docs=4)
        store.add(chunks)
        hits = store.search(chunks[1].embedding or [], k=20, filter={"parity": "even"})
        assert len(hits) == 10
        assert all(h.chunk.metadata["parity"] == "even" for h in hits)
        both = store.search(
            chunks[0].embedding or [], k=20, filter={"parity": "even", "doc": "doc-0"}
        )
        assert {h.chunk.id for h in both} == {c.id for c in chunks if c.metadata["n"] % 4 == 0}
        assert both[0].chunk.id == chunks[0].id
        assert store.search(chunks[0].embedding or [], k=5, filter={"parity": "none"}) == []

    # ------------------------------------------------------------------ bad input
    def _assert_rejected_unchanged(self, store: BaseVectorStore, bad: Chunk, match: str) -> None:
        good = make_chunks(5, self.dim)
        store.add(good)
        before = [
            (h.chunk.id, round(h.score, 5)) for h in store.search(good[0].embedding or [], k=5)
        ]
        batch = [*make_chunks(3, self.dim, seed=3, prefix="new"), bad]
        with pytest.raises(ValueError, match=match) as info:
            store.add(batch)
        assert bad.id in str(info.value)
        assert len(store) == 5
        after = [
            (h.chunk.id, round(h.score, 5)) for h in store.search(good[0].embedding or [], k=5)
        ]
        assert after == before

    def test_missing_embedding_rejected(self, store: BaseVectorStore) -> None:
        bad = Chunk("no vector", doc_id="d", id="bad-none")
        self._assert_rejected_unchanged(store, bad, "no embedding")

    def test_wrong_dimension_rejected(self, store: BaseVectorStore) -> None:
        bad = Chunk("short", doc_id="d", id="bad-dim", embedding=[1.0] * (self.dim - 1))
        self._assert_rejected_unchanged(store, bad, "dimension")

    def test_nan_rejected(self, store: BaseVectorStore) -> None:
        vec = [1.0] * self.dim
        vec[3] = float("nan")
        self._assert_rejected_unchanged(store, Chunk("nan", id="bad-nan", embedding=vec), "NaN")

    def test_infinite_rejected(self, store: BaseVectorStore) -> None:
        vec = [1.0] * self.dim
        vec[0] = 1e39  # finite in float64, infinite in float32
        self._assert_rejected_unchanged(
            store, Chunk("inf", id="bad-inf", embedding=vec), "infinite"
        )

    def test_zero_norm_rejected(self, store: BaseVectorStore) -> None:
        bad = Chunk("zero", id="bad-zero", embedding=[0.0] * self.dim)
        self._assert_rejected_unchanged(store, bad, "zero")

    def test_bad_queries_rejected(self, store: BaseVectorStore) -> None:
        store.add(make_chunks(3, self.dim))
        with pytest.raises(ValueError, match="dimension"):
            store.search([1.0] * (self.dim + 1), k=1)
        with pytest.raises(ValueError, match="zero"):
            store.search([0.0] * self.dim, k=1)
        with pytest.raises(ValueError, match="k must be"):
            store.search([1.0] * self.dim, k=0)

    # ------------------------------------------------------------------ lifecycle
    def test_reopen_matches_persistence_capability(self, location: Path) -> None:
        chunks = make_chunks(25, self.dim, docs=5)
        first = self.new_store(location)
        first.add(chunks)
        first.close()
        second = self.new_store(location)
        try:
            if second.persistent:
                assert len(second) == 25
                top = second.search(chunks[4].embedding or [], k=1)[0]
                assert top.chunk.id == chunks[4].id
                assert top.chunk.metadata == chunks[4].metadata
                assert second.delete_by_doc("doc-0") == 5
            else:
                assert len(second) == 0
        finally:
            second.close()

    def test_concurrent_adds_from_threads(self, store: BaseVectorStore) -> None:
        errors: list[BaseException] = []

        def work(t: int) -> None:
            try:
                for j in range(5):
                    store.add(make_chunks(10, self.dim, seed=t * 100 + j, prefix=f"t{t}-{j}-"))
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert errors == []
        assert len(store) == 200

    # ------------------------------------------------------------------ documents
    def test_nested_embedding_rejected(self, store: BaseVectorStore) -> None:
        half = self.dim // 2
        bad = Chunk("2-D", id="bad-2d", embedding=[[1.0] * half, [1.0] * half])  # type: ignore[list-item]
        self._assert_rejected_unchanged(store, bad, "flat list|dimension")

    # ------------------------------------------------------------------ batch search
    def test_search_many_equals_search_of_each_query(self, store: BaseVectorStore) -> None:
        assert store.search_many([[1.0] * self.dim, [0.5] * self.dim], k=3) == [[], []]
        chunks = make_chunks(40, self.dim, docs=4)
        store.add(chunks)
        queries = [c.embedding or [] for c in chunks[:5]]
        queries.append(make_chunks(1, self.dim, seed=9, prefix="q")[0].embedding or [])
        filters = [None, {"parity": "even"}, {"doc": "doc-1", "parity": "odd"}, {"n": -1}]
        for where in filters:
            single = [store.search(q, k=4, filter=where) for q in queries]
            batched = store.search_many(queries, k=4, filter=where)
            awaited = asyncio.run(store.asearch_many(queries, k=4, filter=where))
            for got in (batched, awaited):
                assert [[h.chunk.id for h in r] for r in got] == [
                    [h.chunk.id for h in r] for r in single
                ], f"filter {where}"
                assert [[h.score for h in r] for r in got] == [
                    [pytest.approx(h.score, abs=1e-5) for h in r] for r in single
                ]
                if where is None:  # each stored query finds its own chunk first
                    assert [r[0].chunk.id for r in got[:5]] == [c.id for c in chunks[:5]]
        assert store.search_many([], k=3) == []
        # a filter keeps equal values only (True is not 1), in a batch as alone
        flags = make_chunks(2, self.dim, seed=11, prefix="flag-")
        flags[0].metadata, flags[1].metadata = {"flag": True}, {"flag": 1}
        store.add(flags)
        flag_filters: list[dict[str, object]] = [{"flag": 1}, {"flag": True}]
        for flag in flag_filters:
            alone = [store.search(f.embedding or [], k=2, filter=flag) for f in flags]
            for got in (
                store.search_many([f.embedding or [] for f in flags], k=2, filter=flag),
                asyncio.run(store.asearch_many([f.embedding or [] for f in flags], 2, flag)),
            ):
                assert [[h.chunk.id for h in r] for r in got] == [
                    [h.chunk.id for h in r] for r in alone
                ]
                assert {h.chunk.metadata["flag"] for r in got for h in r} == {flag["flag"]}
                assert {type(h.chunk.metadata["flag"]) for r in got for h in r} == {
                    type(flag["flag"])
                }
        with pytest.raises(ValueError, match="k must be"):
            store.search_many(queries, k=0)
        with pytest.raises(ValueError, match="dimension"):
            store.search_many([*queries, [1.0] * (self.dim + 1)], k=2)

    # ------------------------------------------------------------------ async twins
    # ------------------------------------------------------------------ tenants
    def test_a_scoped_view_never_reads_another_tenants_chunks(self, store: BaseVectorStore) -> None:
        retriever = VectorRetriever(WordEmbedder(self.dim), store, k=20, min_score=-1.0)
        views = {t: retriever.scoped({"tenant": t}) for t in ("acme", "globex")}
        for tenant, view in views.items():
            # the same document id in both tenants: neither replaces the other
            view.add_documents(
                [
                    Document(f"refund policy of {tenant}", {"kind": "policy"}, id="policy"),
                    Document(f"holiday calendar of {tenant}", {"kind": "calendar"}, id="cal"),
                ]
            )
        assert len(store) == 4
        for tenant, view in views.items():
            other = "globex" if tenant == "acme" else "acme"
            reads = [
                view.retrieve("refund policy", k=20),
                view.retrieve("refund policy", k=20, filter={"kind": "policy"}),
                view.retrieve("refund policy", k=20, filter={"tenant": tenant}),
                asyncio.run(view.aretrieve("refund policy", k=20)),
                asyncio.run(view.aretrieve("refund policy", 20, {"kind": "calendar"})),
            ]
            for hits in reads:
                assert hits, "the tenant's own chunks are found"
                assert {h.chunk.metadata["tenant"] for h in hits} == {tenant}
            assert len(reads[0]) == 2
            assert [h.chunk.metadata["kind"] for h in reads[1]] == ["policy"]
            with pytest.raises(ScopeError, match="outside this view's scope"):
                view.retrieve("refund policy", filter={"tenant": other})
            with pytest.raises(ScopeError):
                asyncio.run(view.aretrieve("refund policy", filter={"tenant": other}))
