"""The input checks ``BaseVectorStore`` wraps around every public method a store defines.

A store's ``add``/``search``/``delete``... are the public methods themselves (the reference's
custom-store example defines them directly), so the checks cannot live in a template method
the store would have to call. Instead ``BaseVectorStore.__init_subclass__`` wraps each of
these methods once, in the class that defines (or inherits from a mixin) it:

* ``add``/``aadd``, and the chunks of ``replace_document``/``areplace_document``/
  ``replace_document_vectors``: a list of :class:`Chunk` following :func:`check_chunk`.
* ``search``/``asearch``/``lexical_search``: ``k`` made a plain ``int`` (numpy integers,
  clamped to ``MAX_K``), the filter checked; then hits whose metadata is not *equal* to the
  filter (``True`` is not ``1``) are dropped, and the store is asked again with a larger
  ``k`` while dropping left fewer than ``k`` hits from a full page.
* ``search_many``/``asearch_many``: the same for each query's hits; a query that lost hits
  from a full page is searched again alone (through the guarded ``search``).
* ``count``/``acount``: the filter checked.
* ``delete``/``adelete``: a list of str ids (a bare ``str`` refused), distinct, in order.
* ``delete_by_doc``/``adelete_by_doc``: a str.
* ``similarities``/``asimilarities``/``lexical_scores``: the query (a vector, a text), and
  ``ids`` as delete's ids.

The arguments are passed on in the shape they came (positional stays positional), so a
store whose ``search`` has no ``filter`` parameter keeps working.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.errors import ArgumentTypeError
from pywrapai_graph.ports.store_inputs import (
    MAX_K,
    check_chunks,
    check_delete_ids,
    check_doc_id,
    check_filter,
    check_k,
    check_older_than,
    check_query_text,
    check_query_vector,
    matches_filter,
)

__all__ = ["guard_methods", "score_ids"]

_CHECKED = "__pywrapai_checked__"
Method = Callable[..., Any]
#: checks (positional args, keyword args) and returns the positional args to pass on
_Check = Callable[[tuple[Any, ...], dict[str, Any]], tuple[Any, ...]]


def _chunk_list(method: str) -> Callable[[Any], Sequence[Any]]:
    """The check of ``method``'s chunks: a sequence following :func:`check_chunks` (a
    generator is read once, here)."""

    def sequence(chunks: Any) -> Sequence[Any]:
        if not isinstance(chunks, Sequence | Chunk):
            if not isinstance(chunks, Iterable):
                raise ArgumentTypeError(
                    f"{method}() takes a list of chunks, got {type(chunks).__name__}"
                )
            chunks = list(chunks)
        check_chunks(chunks, method)
        return chunks  # type: ignore[no-any-return]

    return sequence


def _argument(name: str, check: Callable[[Any], Any], position: int = 0) -> _Check:
    """Checks one argument of the method (at ``position``, or by keyword ``name``) with
    ``check``, which returns the value to pass on."""

    def checked(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        if len(args) > position:
            return (*args[:position], check(args[position]), *args[position + 1 :])
        if name in kwargs:
            kwargs[name] = check(kwargs[name])
        return args

    return checked


def _unchanged(check: Callable[[Any], None]) -> Callable[[Any], Any]:
    def passed_on(value: Any) -> Any:
        check(value)
        return value

    return passed_on


#: the query's check and keyword name, by method
_QUERIES: dict[str, tuple[Callable[[object, str], None], str]] = {
    "search": (check_query_vector, "query_vector"),
    "asearch": (check_query_vector, "query_vector"),
    "lexical_search": (check_query_text, "query"),
}


class _Query:
    """Where ``k`` and ``filter`` sit in one ``search(query, k, filter)`` call."""

    def __init__(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], default_k: Any, method: str = ""
    ) -> None:
        self.args = list(args)
        self.kwargs = kwargs
        if method in _QUERIES:
            check, name = _QUERIES[method]
            if self.args or name in kwargs:
                check(self.args[0] if self.args else kwargs[name], method)
        explicit = len(self.args) > 1 or "k" in kwargs
        given_k = self.args[1] if len(self.args) > 1 else kwargs.get("k", default_k)
        filter = self.args[2] if len(self.args) > 2 else kwargs.get("filter")
        check_filter(filter)
        if filter and any(isinstance(v, tuple) for v in filter.values()):
            filter = {k: list(v) if isinstance(v, tuple) else v for k, v in filter.items()}
            if len(self.args) > 2:
                self.args[2] = filter
            else:
                kwargs["filter"] = filter  # a tuple is the JSON list it stands for
        self.filter: Mapping[str, Any] | None = filter
        self.k = check_k(given_k) if explicit or given_k is not None else None
        if self.k is not None:
            self._set_k(self.k, explicit=explicit)

    def _set_k(self, k: int, *, explicit: bool = True) -> None:
        if len(self.args) > 1:
            self.args[1] = k
        elif explicit:
            self.kwargs["k"] = k

    def larger(self, asked: int) -> int | None:
        """The next ``k`` to ask for after a full page lost hits to the filter, or None."""
        if asked >= MAX_K:
            return None
        bigger = min(asked * 2, MAX_K)
        self._set_k(bigger)
        return bigger

    def kept(self, hits: list[ScoredChunk]) -> list[ScoredChunk]:
        """The hits whose metadata equals the filter."""
        if not self.filter:
            return hits
        return [h for h in hits if matches_filter(h.chunk.metadata, self.filter)]

    def needs_more(self, hits: list[ScoredChunk], kept: list[ScoredChunk], asked: int) -> bool:
        """A full page of ``asked`` hits lost some to the filter, leaving fewer than ``k``."""
        return self.k is not None and len(kept) < min(len(hits), self.k) and len(hits) >= asked

    def result(self, kept: list[ScoredChunk]) -> list[ScoredChunk]:
        return kept if self.k is None else kept[: self.k]


def _default_k(method: Method) -> Any:
    try:
        parameter = inspect.signature(method).parameters.get("k")
    except (TypeError, ValueError):
        return None
    if parameter is None or parameter.default is inspect.Parameter.empty:
        return None
    return parameter.default


def _guard_search(method: Method, name: str = "search") -> Method:
    default_k = _default_k(method)

    @functools.wraps(method)
    def search(self: Any, *args: Any, **kwargs: Any) -> Any:
        query = _Query(args, kwargs, default_k, name)
        hits = method(self, *query.args, **query.kwargs)
        kept, asked = query.kept(hits), query.k or 0
        while query.needs_more(hits, kept, asked) and (bigger := query.larger(asked)):
            asked, hits = bigger, method(self, *query.args, **query.kwargs)
            kept = query.kept(hits)
        return query.result(kept)

    return search


def _guard_asearch(method: Method) -> Method:
    default_k = _default_k(method)

    @functools.wraps(method)
    async def asearch(self: Any, *args: Any, **kwargs: Any) -> Any:
        query = _Query(args, kwargs, default_k, "asearch")
        hits = await method(self, *query.args, **query.kwargs)
        kept, asked = query.kept(hits), query.k or 0
        while query.needs_more(hits, kept, asked) and (bigger := query.larger(asked)):
            asked, hits = bigger, await method(self, *query.args, **query.kwargs)
            kept = query.kept(hits)
        return query.result(kept)

    return asearch


class _Batch(_Query):
    """A ``search_many(query_vectors, k, filter)`` call: ``_Query`` for each vector."""

    def __init__(self, args: tuple[Any, ...], kwargs: dict[str, Any], default_k: Any) -> None:
        super().__init__(args, kwargs, default_k)
        given = self.args[0] if self.args else self.kwargs.get("query_vectors", [])
        if isinstance(given, str | bytes | Mapping) or not isinstance(given, Iterable):
            raise ArgumentTypeError(
                f"search_many() takes a list of query vectors, got a {type(given).__name__}"
            )
        self.vectors = list(given)  # read once, even if an iterator
        for vector in self.vectors:
            check_query_vector(vector, "search_many")
        if self.args:
            self.args[0] = self.vectors
        else:
            self.kwargs["query_vectors"] = self.vectors

    def settled(self, batch: list[list[ScoredChunk]]) -> list[list[ScoredChunk] | None]:
        """Each query's kept hits, or None where a full page lost some to the filter."""
        out: list[list[ScoredChunk] | None] = []
        for hits in batch:
            kept = self.kept(hits)
            out.append(None if self.needs_more(hits, kept, self.k or 0) else self.result(kept))
        return out

    def one(self, vector: Any) -> tuple[list[Any], dict[str, Any]]:
        """The arguments of ``search`` for one vector of the batch."""
        kwargs = {k: v for k, v in self.kwargs.items() if k != "query_vectors"}
        return [vector, *self.args[1:]], kwargs


def _guard_search_many(method: Method) -> Method:
    default_k = _default_k(method)

    @functools.wraps(method)
    def search_many(self: Any, *args: Any, **kwargs: Any) -> Any:
        batch = _Batch(args, kwargs, default_k)
        settled = batch.settled(method(self, *batch.args, **batch.kwargs))
        return [
            self.search(*a, **kw) if hits is None else hits  # searched alone, asking for more
            for vector, hits in zip(batch.vectors, settled, strict=True)
            for a, kw in [batch.one(vector)]
        ]

    return search_many


def _guard_asearch_many(method: Method) -> Method:
    default_k = _default_k(method)

    @functools.wraps(method)
    async def asearch_many(self: Any, *args: Any, **kwargs: Any) -> Any:
        batch = _Batch(args, kwargs, default_k)
        settled = batch.settled(await method(self, *batch.args, **batch.kwargs))
        return [
            await self.asearch(*a, **kw) if hits is None else hits
            for vector, hits in zip(batch.vectors, settled, strict=True)
            for a, kw in [batch.one(vector)]
        ]

    return asearch_many


def _guard(check: _Check) -> Callable[[Method], Method]:
    def wrap(method: Method) -> Method:
        if inspect.iscoroutinefunction(method):

            @functools.wraps(method)
            async def checked_async(self: Any, *args: Any, **kwargs: Any) -> Any:
                args = check(args, kwargs)
                return await method(self, *args, **kwargs)

            return checked_async

        @functools.wraps(method)
        def checked(self: Any, *args: Any, **kwargs: Any) -> Any:
            args = check(args, kwargs)
            return method(self, *args, **kwargs)

        return checked

    return wrap


_ADD = _guard(_argument("chunks", _chunk_list("add")))
_COUNT = _guard(_argument("filter", _unchanged(check_filter)))
_DELETE = _guard(_argument("ids", check_delete_ids))
_DELETE_DOC = _guard(_argument("doc_id", _unchanged(check_doc_id)))
_REPLACE = _guard(_argument("chunks", _chunk_list("replace_document"), position=1))


def score_ids(ids: Any, method: str) -> list[str]:
    """The distinct ids of a re-scoring call, in order (a bare ``str`` refused)."""
    if isinstance(ids, str | bytes):
        raise ArgumentTypeError(f"{method}() takes a list of ids, got the string {ids!r:.60}")
    return check_delete_ids(ids)


def _scores_of(method: str, query: str, check_query: Callable[[object, str], None]) -> _Check:
    """The check of ``method(query, ids, ...)``: the query, then the ids."""
    query_check = _argument(query, _unchanged(lambda q: check_query(q, method)))
    ids_check = _argument("ids", lambda ids: score_ids(ids, method), position=1)
    return lambda args, kwargs: ids_check(query_check(args, kwargs), kwargs)


_SIMILARITIES = _guard(_scores_of("similarities", "query_vector", check_query_vector))
_REPAIR = _guard(_argument("older_than_s", check_older_than, position=99))  # keyword-only
_GUARDS: dict[str, Callable[[Method], Method]] = {
    "replace_document": _REPLACE,
    "areplace_document": _REPLACE,
    "replace_document_vectors": _REPLACE,
    "add": _ADD,
    "aadd": _ADD,
    "search": _guard_search,
    "lexical_search": functools.partial(_guard_search, name="lexical_search"),
    "asearch": _guard_asearch,
    "search_many": _guard_search_many,
    "asearch_many": _guard_asearch_many,
    "count": _COUNT,
    "acount": _COUNT,
    "delete": _DELETE,
    "adelete": _DELETE,
    "delete_by_doc": _DELETE_DOC,
    "adelete_by_doc": _DELETE_DOC,
    "repair": _REPAIR,
    "similarities": _SIMILARITIES,
    "asimilarities": _SIMILARITIES,
    "lexical_scores": _guard(_scores_of("lexical_scores", "query", check_query_text)),
}


def guard_methods(cls: type, base: type) -> None:
    """Wrap each guarded method ``cls`` has that is not ``base``'s own nor wrapped yet."""
    for name, guard in _GUARDS.items():
        method = getattr(cls, name, None)
        if (
            not inspect.isfunction(method)
            or method is getattr(base, name, None)
            or getattr(method, _CHECKED, False)
        ):
            continue
        checked = guard(method)
        setattr(checked, _CHECKED, True)
        setattr(cls, name, checked)
