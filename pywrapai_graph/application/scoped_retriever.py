"""ScopedRetriever: a view of a retriever bound to fixed metadata (a tenant, a project...)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from pywrapai_graph.application.scoped_ids import LegacyIds, scoped_prefix
from pywrapai_graph.domain import Document, ScoredChunk
from pywrapai_graph.errors import ArgumentTypeError, ScopeError, UnsupportedOperationError
from pywrapai_graph.ports import BaseRetriever, BaseVectorStore, MetadataFilter, TextSplitter
from pywrapai_graph.ports.offload import offload
from pywrapai_graph.ports.retriever import retrieve_filtered
from pywrapai_graph.ports.store_inputs import check_doc_id, check_filter, same_value

__all__ = ["ScopedRetriever", "merge_scope"]


def merge_scope(scope: Mapping[str, Any], extra: Mapping[str, Any] | None) -> dict[str, Any]:
    """``scope`` plus ``extra``; a key of ``extra`` may repeat the scope's value, never change it.

    "Repeat" is the stores' equality (:func:`~pywrapai_graph.ports.store_inputs.same_value`,
    the JSON rule every filter follows): ``True`` is not ``1``, ``1`` is not ``"1"``, ``1``
    is ``1.0``. Python's ``==`` says ``1 == True``, and the caller's ``True`` would then
    have replaced the scope's ``1`` and read another tenant's chunks. The merged mapping
    keeps the scope's own value for every scope key.

    Raises:
        ScopeError: ``extra`` names a scope key with a value the stores do not match to it.
    """
    merged = dict(scope)
    for key, value in (extra or {}).items():
        if key not in scope:
            merged[key] = value
        elif not same_value(scope[key], value):
            raise ScopeError(
                f"{key}={value!r} ({type(value).__name__}) is outside this view's scope "
                f"({key}={scope[key]!r}, {type(scope[key]).__name__}); a scoped retriever "
                "only reads and writes its own scope, and a filter value matches it only when "
                "the stores would match it (True is not 1, 1 is not '1')"
            )
    return merged


class ScopedRetriever(BaseRetriever):
    """Every read applies ``scope`` as a metadata filter; every write stamps it.

    A service that hands a request only the scoped view cannot read another tenant's
    chunks: a per-call ``filter`` narrows the scope further, and one that contradicts it
    raises :class:`~pywrapai_graph.errors.ScopeError`. Document ids are namespaced by the
    scope (``{"tenant":"acme"}/handbook``, :meth:`stored_id`), so two tenants' documents
    never share a stored id, whatever their ids and scope values hold.

    A document stored by an earlier version under the first id scheme
    (``tenant=acme/handbook``) is still read (reads filter by metadata); writing (or
    :meth:`delete_document` / :meth:`adelete_document`) it again through the view removes
    that old copy, unless another scope could own the old id
    (:class:`~pywrapai_graph.application.scoped_ids.LegacyIds`).

    Args:
        inner: a retriever that can filter by metadata (``VectorRetriever``).
        scope: the metadata every chunk of this view carries, e.g. ``{"tenant": "acme"}``.

    Raises:
        ScopeError: an empty scope.
        InvalidArgumentError: a scope key that is not a str or a value that is not a JSON
            scalar (or a flat list of them), as for any metadata filter.
    """

    def __init__(self, inner: BaseRetriever, scope: Mapping[str, Any]) -> None:
        if not scope:
            raise ScopeError("a scope needs at least one metadata key, e.g. {'tenant': 'acme'}")
        check_filter(scope)
        self._inner = inner
        self._scope = dict(scope)
        self._prefix = scoped_prefix(self._scope)

    @property
    def scope(self) -> dict[str, Any]:
        """The metadata this view is bound to (a copy)."""
        return dict(self._scope)

    @property
    def inner(self) -> BaseRetriever:
        """The unscoped retriever."""
        return self._inner

    def stored_id(self, doc_id: str) -> str:
        """The id the store holds this view's document ``doc_id`` under."""
        return self._prefix + doc_id

    def scoped(self, metadata: Mapping[str, Any]) -> ScopedRetriever:
        """A narrower view: this scope plus ``metadata`` (which may not contradict it)."""
        return ScopedRetriever(self._inner, merge_scope(self._scope, metadata))

    # ------------------------------------------------------------------ reads
    def retrieve(
        self, query: str, k: int | None = None, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        """The inner retriever's hits among this view's chunks (and ``filter``'s)."""
        return retrieve_filtered(self._inner, query, k, merge_scope(self._scope, filter))

    async def aretrieve(
        self, query: str, k: int | None = None, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        return await self._inner.aretrieve(query, k, merge_scope(self._scope, filter))

    # ------------------------------------------------------------------ writes
    def _stamped(self, docs: Sequence[Document]) -> list[Document]:
        out = []
        for doc in docs:
            if not isinstance(doc, Document):
                raise ArgumentTypeError(
                    f"add_documents() takes Document objects, got {type(doc).__name__}"
                )
            metadata = merge_scope(self._scope, doc.metadata)
            out.append(dataclasses.replace(doc, metadata=metadata, id=self._prefix + doc.id))
        return out

    def _store(self) -> BaseVectorStore | None:
        store = getattr(self._inner, "store", None)
        return store if isinstance(store, BaseVectorStore) else None

    def _retire_legacy(self, doc_ids: list[str], *, always: bool = False) -> int:
        """Remove the first scheme's copies of ``doc_ids`` (see :class:`LegacyIds`)."""
        store = self._store()
        if store is None:
            return 0
        return LegacyIds(store, self._scope).retire(doc_ids, always=always)

    def add_documents(self, docs: Sequence[Document], chunker: TextSplitter | None = None) -> int:
        """Add ``docs`` with the scope stamped into their metadata and their ids namespaced.

        Raises:
            ScopeError: a document's metadata contradicts the scope.
        """
        stamped = self._stamped(docs)
        written = self._inner.add_documents(stamped, chunker)
        self._retire_legacy([doc.id for doc in docs])
        return written

    async def aadd_documents(
        self, docs: Sequence[Document], chunker: TextSplitter | None = None
    ) -> int:
        """Async :meth:`add_documents`."""
        stamped = self._stamped(docs)
        written = await self._inner.aadd_documents(stamped, chunker)
        await offload(self._retire_legacy, [doc.id for doc in docs])
        return written

    def _deletable(self, doc_id: str) -> BaseVectorStore:
        """The store to delete this view's ``doc_id`` from (``doc_id`` checked first)."""
        check_doc_id(doc_id)
        store = self._store()
        if store is None:
            raise UnsupportedOperationError(
                f"{type(self._inner).__name__} has no vector store to delete from"
            )
        return store

    def delete_document(self, doc_id: str) -> int:
        """Delete this view's document ``doc_id`` (and its copy under the first id scheme);
        returns how many chunks were deleted. Another scope's document of the same id is
        another stored id, and stays.

        Raises:
            UnsupportedOperationError: the view's retriever has no vector store.
        """
        store = self._deletable(doc_id)
        deleted = store.delete_by_doc(self.stored_id(doc_id))
        return deleted + self._retire_legacy([doc_id], always=True)

    async def adelete_document(self, doc_id: str) -> int:
        """Async :meth:`delete_document`: the store's async delete, then the first scheme's
        copy in the offload pool (never on the event loop).

        Raises:
            UnsupportedOperationError: the view's retriever has no vector store.
        """
        store = self._deletable(doc_id)
        deleted = await store.adelete_by_doc(self.stored_id(doc_id))
        return deleted + await offload(self._retire_legacy, [doc_id], always=True)

    def __repr__(self) -> str:
        return f"ScopedRetriever({self._inner!r}, scope={self._scope!r})"
