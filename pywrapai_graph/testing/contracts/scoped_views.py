"""Scoped views over a store: stored ids never collide, the first id scheme is migrated.

Part of ``VectorStoreContract``. A view stores document ``x`` of scope ``{"tenant": "a"}``
under ``{"tenant":"a"}/x`` (issue 24): tenant ``a`` with id ``b/x`` and tenant ``a/b`` with
id ``x``, ``{org: a, team: b}`` and ``{org: "a,team=b"}``, ``1``, ``"1"`` and ``True`` are
all different documents. A store written by an earlier version holds ids of the first
scheme (``tenant=a/x``); a view that writes the same document again removes that copy when
no other scope can own the old id, on a store that keeps document manifests (every
built-in store); elsewhere the old copy stays. ``delete_document`` deletes both copies on
any store that can count by a filter; it and ``adelete_document`` delete only the view's own
document, never another scope's of the same id.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, ClassVar

import pytest

from pywrapai_graph.application.scoped_ids import legacy_prefix
from pywrapai_graph.application.vector_retriever import VectorRetriever
from pywrapai_graph.domain import Document
from pywrapai_graph.errors import UnsupportedOperationError
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.ports.vector_store import keeps_manifests

__all__ = ["ScopedViewContract", "write_first_scheme"]

#: (scope, document id) pairs the first scheme stored under one id, pair by pair
COLLIDING: list[tuple[dict[str, Any], str]] = [
    ({"tenant": "a"}, "b/x"),
    ({"tenant": "a/b"}, "x"),
    ({"org": "a", "team": "b"}, "d"),
    ({"org": "a,team=b"}, "d"),
    ({"tenant": 1}, "d"),
    ({"tenant": "1"}, "d"),
    ({"tenant": True}, "d"),
    ({"tenant": "True"}, "d"),
]


def write_first_scheme(
    retriever: VectorRetriever, scope: dict[str, Any], doc_id: str, text: str
) -> None:
    """Store a document as a view of the first scheme did: the scope stamped into its
    metadata, its id prefixed with ``key=value,...``/ (what earlier versions wrote)."""
    retriever.add_documents([Document(text, dict(scope), id=legacy_prefix(scope) + doc_id)])


def _manifests(store: BaseVectorStore) -> bool:
    return keeps_manifests(store)


class ScopedViewContract:
    """Mixed into :class:`VectorStoreContract`; uses its ``store`` fixture."""

    dim: ClassVar[int]

    def _retriever(self, store: BaseVectorStore) -> VectorRetriever:
        from pywrapai_graph.testing.contracts.vector_store import WordEmbedder

        return VectorRetriever(WordEmbedder(self.dim), store, k=20, min_score=-1.0)

    def test_scoped_ids_never_collide(self, store: BaseVectorStore) -> None:
        retriever = self._retriever(store)
        views = [(retriever.scoped(scope), doc_id) for scope, doc_id in COLLIDING]
        for n, (view, doc_id) in enumerate(views):
            view.add_documents([Document(f"policy number{n}", {}, id=doc_id)])
        assert len(store) == len(COLLIDING), "no view replaced another's document"
        for n, (view, _) in enumerate(views):
            assert [h.chunk.text for h in view.retrieve("policy", k=20)] == [f"policy number{n}"]
        ids = {view.stored_id(doc_id) for view, doc_id in views}
        assert len(ids) == len(COLLIDING)

    def test_a_view_rewrites_what_the_first_scheme_stored(
        self, store: BaseVectorStore, caplog: pytest.LogCaptureFixture
    ) -> None:
        retriever = self._retriever(store)
        write_first_scheme(retriever, {"tenant": "acme"}, "handbook", "handbook old")
        write_first_scheme(retriever, {"tenant": 1}, "d", "numbered old")
        write_first_scheme(retriever, {"tenant": "a/b"}, "x", "slashed tenant's")
        acme, one, a = (retriever.scoped({"tenant": t}) for t in ("acme", 1, "a"))
        assert [h.chunk.text for h in acme.retrieve("handbook")] == ["handbook old"]

        acme.add_documents([Document("handbook new", {}, id="handbook")])
        asyncio.run(one.aadd_documents([Document("numbered new", {}, id="d")]))
        with caplog.at_level(logging.WARNING, "pywrapai_graph.application.scoped_ids"):
            a.add_documents([Document("a's own", {}, id="b/x")])  # the old id is a/b's
        texts = sorted(h.chunk.text for h in retriever.retrieve("handbook numbered own", k=20))
        if _manifests(store):
            assert texts == ["a's own", "handbook new", "numbered new", "slashed tenant's"]
            assert "tenant=a/b/x" in caplog.text
        else:  # no manifests: the old copies cannot be found, and stay
            assert len(texts) == 6
        if not store.supports_delete:
            with pytest.raises(UnsupportedOperationError):
                acme.delete_document("handbook")
            return
        assert acme.delete_document("handbook") >= 1
        if _manifests(store) or type(store)._count is not BaseVectorStore._count:
            assert acme.retrieve("handbook") == [], "the old copy went too"
        assert [h.chunk.text for h in retriever.scoped({"tenant": "a/b"}).retrieve("x")] == [
            "slashed tenant's"
        ]

    def test_a_scoped_delete_sync_or_async_deletes_only_its_own_scope(
        self, store: BaseVectorStore
    ) -> None:
        retriever = self._retriever(store)
        views = {t: retriever.scoped({"tenant": t}) for t in ("acme", "globex", "initech")}
        for tenant, view in views.items():
            view.add_documents([Document(f"handbook of {tenant}", {}, id="handbook")])
        write_first_scheme(retriever, {"tenant": "a/b"}, "x", "slashed tenant's")
        if not store.supports_delete:
            with pytest.raises(UnsupportedOperationError):
                asyncio.run(views["acme"].adelete_document("handbook"))
            return
        assert views["acme"].delete_document("handbook") == 1
        assert asyncio.run(views["globex"].adelete_document("handbook")) == 1
        assert asyncio.run(views["globex"].adelete_document("handbook")) == 0
        # the first scheme's "tenant=a/b/x" reads as tenant "a"'s "b/x" too: a/b's, it stays
        assert asyncio.run(retriever.scoped({"tenant": "a"}).adelete_document("b/x")) == 0
        texts = sorted(h.chunk.text for h in retriever.retrieve("handbook slashed", k=20))
        assert texts == ["handbook of initech", "slashed tenant's"]
