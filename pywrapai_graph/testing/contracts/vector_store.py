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
import zlib
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from pywrapai_graph.application.chunker import Chunker
from pywrapai_graph.application.vector_retriever import VectorRetriever
from pywrapai_graph.domain import Chunk, Document
from pywrapai_graph.domain.manifest import DocumentManifest, EmbedderIdentity
from pywrapai_graph.errors import EmbedderMismatchError, ScopeError, UnsupportedOperationError
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.testing.contracts.hostile_inputs import HostileInputContract
from pywrapai_graph.testing.contracts.rescoring import RescoringContract
from pywrapai_graph.testing.contracts.scoped_views import ScopedViewContract

__all__ = ["VectorStoreContract", "WordEmbedder", "document_chunks", "make_chunks", "manifest_for"]


def make_chunks(
    n: int, dim: int, seed: int = 0, *, docs: int = 1, prefix: str = "c"
) -> list[Chunk]:
    """``n`` chunks with random unit-scale embeddings, spread over ``docs`` documents."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    return [
        Chunk(
            text=f"chunk {prefix}{i}",
            doc_id=f"doc-{i % docs}",
            metadata={"n": i, "parity": "even" if i % 2 == 0 else "odd", "doc": f"doc-{i % docs}"},
            id=f"{prefix}{i}",
            embedding=vectors[i].tolist(),
        )
        for i in range(n)
    ]


class WordEmbedder:
    """A deterministic embedder for the contract: words hashed into ``dimension`` buckets."""

    provider = "contract"

    def __init__(self, dimension: int, model: str = "words") -> None:
        self.dimension = dimension
        self.model = model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.embed_one(t) for t in texts]

    def embed_one(self, text: str) -> list[float]:
        vector = [0.0] * self.dimension
        vector[0] = 0.01  # never the zero vector
        for word in text.lower().split():
            h = zlib.crc32(word.encode())
            vector[h % self.dimension] += 1.0 if h & 1 else -1.0
        return vector


def document_chunks(doc_id: str, n: int, dim: int, version: str) -> list[Chunk]:
    """``n`` embedded chunks of one document, their texts tagged with ``version``."""
    chunks = make_chunks(n, dim, seed=len(version) * 7 + n, prefix=f"{doc_id}-{version}-")
    for i, c in enumerate(chunks):
        c.doc_id = doc_id
        c.text = f"{version} part {i}"
        c.metadata = {"doc": doc_id, "version": version}
    return chunks


def manifest_for(doc_id: str, chunks: list[Chunk], dim: int, model: str = "m") -> DocumentManifest:
    """A manifest of ``chunks`` under the embedder ``contract/<model>``."""
    return DocumentManifest(
        doc_id,
        f"hash-of-{chunks[0].text if chunks else ''}",
        len(chunks),
        EmbedderIdentity("contract", model, dim),
    )


def _exact_top(chunks: list[Chunk], query: np.ndarray, k: int) -> list[tuple[str, float]]:
    m = np.array([c.embedding for c in chunks], dtype=np.float64)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    q = query / np.linalg.norm(query)
    scores = m @ q
    order = np.argsort(-scores)[:k]
    return [(chunks[i].id, float(scores[i])) for i in order]


class VectorStoreContract(RescoringContract, HostileInputContract, ScopedViewContract, ABC):
    """The behaviour every :class:`BaseVectorStore` promises (lexical search and hostile
    inputs included; ``BaseVectorStore`` checks the inputs for every store)."""

    dim: ClassVar[int] = 16

    @abstractmethod
    def new_store(self, location: Path) -> BaseVectorStore:
        """A store whose data lives under ``location`` (called twice to test reopening)."""

    def interrupted_replace(
        self, store: BaseVectorStore, writes: Sequence[tuple[DocumentManifest, list[Chunk]]]
    ) -> AbstractContextManager[None] | None:
        """Optional: a context inside which ``store`` holds these replaces written but not
        committed, as a writer stopped mid-way (or a transaction still open) leaves them.

        Backends with such a state override it (the tests of the built-in stores do); None,
        this default, skips the cases that need it.
        """
        return None

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
            expected = _exact_top(chunks, q, 5)
            got = store.search(q.tolist(), k=5)
            exact_scores = dict(_exact_top(chunks, q, len(chunks)))
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

    # ------------------------------------------------------------------ size
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
        if own.count is BaseVectorStore.count:
            with pytest.raises(UnsupportedOperationError, match="filter"):
                store.count({"parity": "even"})
            return
        assert store.count({"parity": "even"}) == 10
        assert store.count({"parity": "even", "doc": "doc-0"}) == 5
        assert store.count({"parity": "none"}) == 0

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
    def _doc_texts(self, store: BaseVectorStore, doc_id: str, probe: list[float]) -> list[str]:
        return [h.chunk.text for h in store.search(probe, k=100, filter={"doc": doc_id})]

    def test_re_adding_through_the_retriever_replaces_the_whole_document(
        self, store: BaseVectorStore
    ) -> None:
        if not store.supports_delete:
            pytest.skip("old chunks cannot be removed (supports_delete is False)")
        retriever = VectorRetriever(WordEmbedder(self.dim), store, k=100, min_score=-1.0)
        long_text = "\n\n".join(f"Paragraph {i} tells about topic {i}." for i in range(60))
        other = Document("Another document that stays.", metadata={"doc": "other"}, id="other")
        chunker = Chunker(chunk_size=60, overlap=0)
        doc = Document(long_text, metadata={"doc": "long"}, id="long")
        assert retriever.add_documents([doc, other], chunker=chunker) == 61
        assert len(store) == 61
        short = Document("Now it is one short paragraph.", metadata={"doc": "long"}, id="long")
        assert retriever.add_documents([short], chunker=chunker) == 1
        assert len(store) == 2
        hits = retriever.retrieve("one short paragraph", k=10)
        assert sorted(h.chunk.text for h in hits) == [
            "Another document that stays.",
            "Now it is one short paragraph.",
        ]

    def test_replace_document_keeps_a_manifest_until_the_document_changes(
        self, store: BaseVectorStore
    ) -> None:
        v1 = document_chunks("d1", 5, self.dim, "v1")
        manifest = manifest_for("d1", v1, self.dim)
        assert store.replace_document(manifest, v1) == 0
        assert len(store) == 5
        if not store.atomic_documents:
            return
        assert store.document_manifest("d1") == manifest
        assert store.document_manifest("nope") is None
        assert store.embedder_identity() == manifest.embedder
        v2 = document_chunks("d1", 3, self.dim, "v2")
        assert store.replace_document(manifest_for("d1", v2, self.dim), v2) == 5
        assert sorted(self._doc_texts(store, "d1", v2[0].embedding or [])) == [
            "v2 part 0",
            "v2 part 1",
            "v2 part 2",
        ]
        assert store.document_manifest("d1") == manifest_for("d1", v2, self.dim)
        store.delete([v2[0].id])  # the document is no longer the version the manifest names
        assert store.document_manifest("d1") is None
        store.replace_document(manifest_for("d1", v2, self.dim), v2)
        store.add([document_chunks("d1", 1, self.dim, "extra")[0]])
        assert store.document_manifest("d1") is None
        store.replace_document(manifest_for("d1", v2, self.dim), v2)
        assert store.delete_by_doc("d1") == 3
        assert store.document_manifest("d1") is None

    def test_document_manifests_agree_with_document_manifest(self, store: BaseVectorStore) -> None:
        ids = [f"d{i}" for i in range(7)]
        for doc_id in ids[:5]:
            chunks = document_chunks(doc_id, 2, self.dim, doc_id)
            store.replace_document(manifest_for(doc_id, chunks, self.dim), chunks)
        replaced = document_chunks("d2", 3, self.dim, "d2 again")
        store.replace_document(manifest_for("d2", replaced, self.dim), replaced)
        if store.supports_delete:
            store.delete_by_doc("d3")
        store.add([document_chunks("d4", 1, self.dim, "extra")[0]])  # d4 changed by hand
        asked = [*ids, "d0", 'it\'s "odd"']  # repeats, missing ids and quotes are fine
        found = store.document_manifests(asked)
        expected = {d: m for d in asked if (m := store.document_manifest(d)) is not None}
        assert found == expected
        if store.atomic_documents and store.supports_delete:
            assert sorted(found) == ["d0", "d1", "d2"]
            assert found["d2"] == manifest_for("d2", replaced, self.dim)
        assert store.document_manifests([]) == {}

    def test_document_manifests_skip_versions_not_committed(self, store: BaseVectorStore) -> None:
        v1 = document_chunks("d1", 3, self.dim, "v1")
        store.replace_document(manifest_for("d1", v1, self.dim), v1)
        v2 = document_chunks("d1", 2, self.dim, "v2")
        new = document_chunks("d2", 2, self.dim, "v2")
        writes = [(manifest_for("d1", v2, self.dim), v2), (manifest_for("d2", new, self.dim), new)]
        interrupted = self.interrupted_replace(store, writes)
        if interrupted is None:
            pytest.skip("the backend has no state of a replace written but not committed")
        asked = ["d1", "d2", "d3"]
        with interrupted:
            one_by_one = {d: m for d in asked if (m := store.document_manifest(d)) is not None}
            assert one_by_one == {"d1": manifest_for("d1", v1, self.dim)}
            assert store.document_manifests(asked) == one_by_one
        store.replace_document(*writes[0])
        store.replace_document(*writes[1])
        assert store.document_manifests(asked) == {
            "d1": manifest_for("d1", v2, self.dim),
            "d2": manifest_for("d2", new, self.dim),
        }

    def test_replace_document_vectors_takes_a_float32_matrix(self, store: BaseVectorStore) -> None:
        chunks = document_chunks("d1", 4, self.dim, "v1")
        matrix = np.asarray([c.embedding for c in chunks], dtype=np.float32)
        for c in chunks:
            c.embedding = None  # the matrix is the only source of the vectors
        manifest = manifest_for("d1", chunks, self.dim)
        with pytest.raises(ValueError, match="3 vectors were given for 4 chunks"):
            store.replace_document_vectors(manifest, chunks, matrix[:3].data)
        assert store.replace_document_vectors(manifest, chunks, matrix.data) == 0
        assert len(store) == 4
        for row, c in zip(matrix, chunks, strict=True):
            hit = store.search(row.tolist(), k=1)[0]
            assert hit.chunk.id == c.id
            assert hit.score == pytest.approx(1.0, abs=1e-5)
        if store.atomic_documents:
            assert store.document_manifest("d1") == manifest

    def test_a_failed_replace_keeps_the_old_version(self, store: BaseVectorStore) -> None:
        v1 = document_chunks("d1", 4, self.dim, "v1")
        store.replace_document(manifest_for("d1", v1, self.dim), v1)
        v2 = document_chunks("d1", 3, self.dim, "v2")
        v2[2].embedding = [float("nan")] * self.dim
        with pytest.raises(ValueError, match="NaN"):
            store.replace_document(manifest_for("d1", v2, self.dim), v2)
        if store.atomic_documents:
            assert len(store) == 4
            assert sorted(self._doc_texts(store, "d1", v1[0].embedding or [])) == [
                f"v1 part {i}" for i in range(4)
            ]
            assert store.document_manifest("d1") == manifest_for("d1", v1, self.dim)
        wrong = document_chunks("d2", 2, self.dim, "v1")
        with pytest.raises(ValueError, match="belongs to document"):
            store.replace_document(manifest_for("d1", wrong, self.dim), wrong)

    def test_another_embedder_is_refused_until_the_store_is_cleared(
        self, store: BaseVectorStore
    ) -> None:
        if not store.atomic_documents:
            pytest.skip("the store keeps no embedder identity (atomic_documents is False)")
        v1 = document_chunks("d1", 2, self.dim, "v1")
        store.replace_document(manifest_for("d1", v1, self.dim, model="a"), v1)
        d2 = document_chunks("d2", 2, self.dim, "v1")
        with pytest.raises(EmbedderMismatchError, match="contract/a"):
            store.replace_document(manifest_for("d2", d2, self.dim, model="b"), d2)
        other = VectorRetriever(WordEmbedder(self.dim, model="b"), store)
        with pytest.raises(EmbedderMismatchError):
            other.retrieve("anything")
        with pytest.raises(EmbedderMismatchError):
            other.add_documents([Document("text of d3", id="d3")])
        assert len(store) == 2
        store.clear()
        assert store.embedder_identity() is None
        store.replace_document(manifest_for("d2", d2, self.dim, model="b"), d2)
        assert other.retrieve("v1 part 0")

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

    def test_nested_embedding_rejected(self, store: BaseVectorStore) -> None:
        half = self.dim // 2
        bad = Chunk("2-D", id="bad-2d", embedding=[[1.0] * half, [1.0] * half])  # type: ignore[list-item]
        self._assert_rejected_unchanged(store, bad, "flat list|dimension")

    def test_readers_see_a_document_whole_while_it_is_replaced(
        self, store: BaseVectorStore
    ) -> None:
        if not store.atomic_documents:
            pytest.skip("replace_document is not atomic (atomic_documents is False)")
        versions = {
            "v1": document_chunks("d1", 5, self.dim, "v1"),
            "v2": document_chunks("d1", 3, self.dim, "v2"),
        }
        manifests = {v: manifest_for("d1", c, self.dim) for v, c in versions.items()}
        store.replace_document(manifests["v1"], versions["v1"])
        probe = versions["v1"][0].embedding or []
        stop = threading.Event()
        seen: list[list[str]] = []

        def write() -> None:
            for i in range(20):
                v = "v2" if i % 2 == 0 else "v1"
                store.replace_document(manifests[v], versions[v])
            stop.set()

        writer = threading.Thread(target=write)
        writer.start()
        while not stop.is_set():
            seen.append(self._doc_texts(store, "d1", probe))
        writer.join()
        seen.append(self._doc_texts(store, "d1", probe))
        for texts in seen:
            tags = {t.split()[0] for t in texts}
            assert len(tags) == 1, f"a reader saw a mix of versions: {texts}"
            if store.exact:
                assert len(texts) == (5 if tags == {"v1"} else 3)
        assert sorted(seen[-1]) == [f"v1 part {i}" for i in range(5)]

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
    def test_async_twins_behave_like_sync(self, store: BaseVectorStore) -> None:
        chunks = make_chunks(12, self.dim, docs=3)

        async def scenario() -> None:
            await store.aadd(chunks)
            assert await store.acount() == 12
            hits = await store.asearch(chunks[0].embedding or [], k=3)
            sync_hits = store.search(chunks[0].embedding or [], k=3)
            assert [h.chunk.id for h in hits] == [h.chunk.id for h in sync_hits]
            assert hits[0].chunk.id == chunks[0].id
            assert hits[0].score == pytest.approx(1.0, abs=1e-4)
            even = await store.asearch(chunks[1].embedding or [], k=12, filter={"parity": "even"})
            assert {h.chunk.id for h in even} == {c.id for c in chunks if c.metadata["n"] % 2 == 0}
            if store.supports_delete:
                assert await store.adelete([chunks[1].id, "no-such-id"]) == 1
                assert await store.adelete_by_doc("doc-0") == 4
                assert await store.acount() == 7
                if type(store).count is not BaseVectorStore.count:
                    assert await store.acount({"parity": "even"}) == 4
            await store.aclear()
            assert await store.acount() == 0
            assert await store.asearch(chunks[0].embedding or [], k=3) == []

        asyncio.run(scenario())

    def test_async_bad_input_raises_the_same_errors(self, store: BaseVectorStore) -> None:
        store.add(make_chunks(3, self.dim))
        bad = Chunk("short", doc_id="d", id="bad-dim", embedding=[1.0] * (self.dim - 1))

        async def scenario() -> None:
            with pytest.raises(ValueError, match="dimension"):
                await store.aadd([*make_chunks(2, self.dim, seed=5, prefix="x"), bad])
            with pytest.raises(ValueError, match="k must be"):
                await store.asearch([1.0] * self.dim, k=0)

        asyncio.run(scenario())
        assert len(store) == 3

    def test_concurrent_async_calls_on_one_loop(self, store: BaseVectorStore) -> None:
        async def scenario() -> None:
            await asyncio.gather(
                *(store.aadd(make_chunks(10, self.dim, seed=t, prefix=f"a{t}-")) for t in range(4))
            )
            queries = make_chunks(6, self.dim, seed=2, prefix="a2-")
            found = await asyncio.gather(*(store.asearch(q.embedding or [], k=1) for q in queries))
            assert [r[0].chunk.id for r in found] == [q.id for q in queries]

        asyncio.run(scenario())
        assert len(store) == 40

    def test_async_side_survives_a_new_event_loop(self, store: BaseVectorStore) -> None:
        chunks = make_chunks(4, self.dim)
        asyncio.run(store.aadd(chunks))
        # a second asyncio.run is a new loop: native async clients must not be reused
        hits = asyncio.run(store.asearch(chunks[2].embedding or [], k=1))
        assert hits[0].chunk.id == chunks[2].id

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
