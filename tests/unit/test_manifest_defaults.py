"""The port's manifest lookups: a store overrides either one (the port derives the other), or
neither (then it keeps no manifests, and neither lookup recurses into the other)."""

from __future__ import annotations

from collections.abc import Sequence

from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.domain.manifest import DocumentManifest, EmbedderIdentity
from pywrapai_graph.ports import BaseVectorStore, MetadataFilter
from pywrapai_graph.ports.vector_store import keeps_manifests

MANIFEST = DocumentManifest("d", "hash", 1, EmbedderIdentity("p", "m", 3))


class Plain(BaseVectorStore):
    def _add(self, chunks: Sequence[Chunk]) -> None:
        pass

    def _search(
        self, query_vector: Sequence[float], k: int, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        return []

    def clear(self) -> None:
        pass

    def __len__(self) -> int:
        return 0


class OneByOne(Plain):
    def document_manifest(self, doc_id: str) -> DocumentManifest | None:
        return MANIFEST if doc_id == "d" else None


class Batched(Plain):
    def document_manifests(self, doc_ids: Sequence[str]) -> dict[str, DocumentManifest]:
        return {d: MANIFEST for d in doc_ids if d == "d"}


def test_a_store_without_manifests_answers_none() -> None:
    store = Plain()
    assert not keeps_manifests(store)
    assert store.document_manifest("d") is None
    assert store.document_manifests(["d", "x"]) == {}


def test_either_lookup_gives_the_other() -> None:
    for store in (OneByOne(), Batched()):
        assert keeps_manifests(store)
        assert store.document_manifest("d") == MANIFEST
        assert store.document_manifest("x") is None
        assert store.document_manifests(["d", "x"]) == {"d": MANIFEST}
