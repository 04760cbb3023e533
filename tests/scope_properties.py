"""A scoped view never reads or writes outside its scope: the property, for any store.

One corpus of chunks whose ``tenant`` / ``org`` metadata take adversarial values (``True``,
``1``, ``1.0``, ``"1"``, ``None``, strings with the old id separators...) is written once;
then hypothesis draws scopes, per-call filters (biased towards values Python's ``==``
confuses with the scope's) and documents, and checks, in the dense, lexical and hybrid
modes, sync and async:

* a filter or a document that names a scope key with a value the stores would not match to
  the scope's (:func:`same_value`) raises ``ScopeError`` and writes nothing;
* otherwise every hit matches scope and filter by the stores' rule, on an exact store the
  hits are exactly the matching chunks, and a written document carries the scope's values.

``tests/contract/test_scope_property.py`` runs it on the embedded stores and
``tests/integration/test_scope_property_servers.py`` on the servers.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pywrapai_graph.application.vector_retriever import RetrievalMode, VectorRetriever
from pywrapai_graph.domain import Document
from pywrapai_graph.errors import ScopeError
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.ports.store_inputs import matches_filter, same_value
from pywrapai_graph.testing.contracts.vector_store import WordEmbedder

__all__ = ["check_scoped_reads", "check_scoped_writes", "fill_corpus"]

DIM = 16
KEYS = ("tenant", "org")
#: values Python's == or str() confuses with each other, and the old id scheme's separators
VALUES: tuple[Any, ...] = (
    True,
    False,
    1,
    0,
    1.0,
    2.5,
    "1",
    "True",
    "a",
    "a/b",
    "a,org=b",
    None,
)
_MISSING = object()
MODES: tuple[RetrievalMode, ...] = ("dense", "lexical", "hybrid")
_QUERY = "shared words"
_EVERYTHING = 400  # k: more than the corpus holds


def _twins(value: Any) -> list[Any]:
    """Values ``==`` or ``str()`` pairs with ``value``: the ones a scope check may confuse."""
    return [v for v in VALUES if v == value or str(v) == str(value)] or [value]


def corpus() -> list[Document]:
    docs = []
    for t, tenant in enumerate(VALUES):
        for o, org in enumerate((*VALUES, _MISSING)):
            metadata: dict[str, Any] = {"tenant": tenant, "kind": "x" if o % 2 else "y"}
            if org is not _MISSING:
                metadata["org"] = org
            docs.append(Document(f"shared words doc{t}x{o}", metadata, id=f"doc{t}x{o}"))
    return docs


def retrievers(store: BaseVectorStore) -> dict[str, VectorRetriever]:
    embedder = WordEmbedder(DIM)
    return {
        mode: VectorRetriever(
            embedder, store, k=_EVERYTHING, min_score=-1.0, mode=mode, candidates=_EVERYTHING
        )
        for mode in modes_of(store)
    }


def modes_of(store: BaseVectorStore) -> tuple[RetrievalMode, ...]:
    """The retrieval modes ``store`` serves (Chroma: dense only)."""
    return MODES if store.lexical else MODES[:1]


def fill_corpus(store: BaseVectorStore) -> None:
    """Write :func:`corpus` unscoped (once per store)."""
    retrievers(store)["dense"].add_documents(corpus())


@st.composite
def scopes(draw: st.DrawFn) -> dict[str, Any]:
    keys = draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=2, unique=True))
    return {key: draw(st.sampled_from(VALUES)) for key in keys}


@st.composite
def scope_and_extra(draw: st.DrawFn, extra_keys: tuple[str, ...]) -> tuple[dict[str, Any], ...]:
    """A scope and a filter (or document metadata) naming some of its keys with a value
    that is often a twin of the scope's."""
    scope = draw(scopes())
    extra: dict[str, Any] = {}
    for key in draw(st.lists(st.sampled_from(extra_keys), max_size=3, unique=True)):
        if key == "kind":
            extra[key] = draw(st.sampled_from(["x", "y"]))
        elif key in scope:
            extra[key] = draw(st.sampled_from(_twins(scope[key])) | st.sampled_from(VALUES))
        else:
            extra[key] = draw(st.sampled_from(VALUES))
    return scope, extra


def contradicts(scope: dict[str, Any], extra: dict[str, Any]) -> bool:
    return any(k in scope and not same_value(scope[k], v) for k, v in extra.items())


def _read(view: Any, extra: dict[str, Any], asynchronous: bool) -> list[Any]:
    if asynchronous:
        return asyncio.run(view.aretrieve(_QUERY, _EVERYTHING, extra or None))
    if extra:
        return view.retrieve(_QUERY, _EVERYTHING, extra)  # type: ignore[no-any-return]
    return view.retrieve(_QUERY, _EVERYTHING)  # type: ignore[no-any-return]


def check_scoped_reads(store: BaseVectorStore, examples: int) -> None:
    """The read property over ``examples`` draws; the store holds :func:`corpus`."""
    views = retrievers(store)
    docs = corpus()

    @settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
        database=None,
    )
    @given(
        scope_and_extra(("tenant", "org", "kind")),
        st.sampled_from(modes_of(store)),
        st.booleans(),
    )
    def reads(drawn: tuple[dict[str, Any], ...], mode: str, asynchronous: bool) -> None:
        scope, extra = drawn
        view = views[mode].scoped(scope)
        if contradicts(scope, extra):
            try:
                _read(view, extra, asynchronous)
            except ScopeError:
                return
            raise AssertionError(f"{extra} read through the view of {scope}")
        hits = _read(view, extra, asynchronous)
        wanted = {**extra, **scope}
        outside = [h.chunk.metadata for h in hits if not matches_filter(h.chunk.metadata, wanted)]
        assert not outside, f"the view of {scope} with {extra} read {outside[:3]}"
        if store.exact:
            expected = {d.id for d in docs if matches_filter(d.metadata, wanted)}
            assert {h.chunk.doc_id for h in hits} == expected

    reads()


def check_scoped_writes(store: BaseVectorStore, examples: int) -> None:
    """The write property: a scoped write carries the scope's values or is refused."""
    retriever = retrievers(store)["dense"]
    known = {d.id for d in corpus()}

    @settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
        database=None,
    )
    @given(scope_and_extra(("tenant", "org", "kind")), st.booleans())
    def writes(drawn: tuple[dict[str, Any], ...], asynchronous: bool) -> None:
        scope, metadata = drawn
        view = retriever.scoped(scope)
        doc = Document("shared words written", metadata, id="written")
        before = len(store)
        try:
            if asynchronous:
                asyncio.run(view.aadd_documents([doc]))
            else:
                view.add_documents([doc])
        except ScopeError:
            assert contradicts(scope, metadata), f"{metadata} refused in the view of {scope}"
            assert len(store) == before
            return
        assert not contradicts(scope, metadata), f"{metadata} written in the view of {scope}"
        hits = retriever.retrieve("shared words written", k=_EVERYTHING)
        written = [h.chunk for h in hits if h.chunk.doc_id not in known]
        assert written, "the written document is found"
        for chunk in written:
            assert matches_filter(chunk.metadata, scope), f"{chunk.metadata} outside {scope}"
            store.delete_by_doc(chunk.doc_id)
        assert len(store) == before

    writes()
