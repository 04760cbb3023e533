"""The documents part of the vector-store contract: ``replace_document`` makes a list of
chunks the whole of a document; with ``atomic_documents`` it is all or nothing, readers see
one version or the other, manifests name the committed version only, and the store keeps
to the embedder that filled it."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import ClassVar

import numpy as np
import pytest

from pywrapai_graph.application.chunker import Chunker
from pywrapai_graph.application.vector_retriever import VectorRetriever
from pywrapai_graph.domain import Chunk, Document
from pywrapai_graph.domain.manifest import DocumentManifest
from pywrapai_graph.errors import EmbedderMismatchError
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.testing.contracts.store_data import (
    WordEmbedder,
    document_chunks,
    manifest_for,
)

__all__ = ["DocumentContract"]


class DocumentContract:
    """Whole-document writes, manifests and the embedder a store was filled by."""

    dim: ClassVar[int]

    def interrupted_replace(
        self, store: BaseVectorStore, writes: Sequence[tuple[DocumentManifest, list[Chunk]]]
    ) -> AbstractContextManager[None] | None:
        """Optional: a context inside which ``store`` holds these replaces written but not
        committed, as a writer stopped mid-way (or a transaction still open) leaves them.

        Backends with such a state override it (the tests of the built-in stores do); None,
        this default, skips the cases that need it.
        """
        return None

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
