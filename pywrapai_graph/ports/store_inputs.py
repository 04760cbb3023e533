"""The input rules every store shares, checked by ``BaseVectorStore`` before any backend runs:
valid Unicode, JSON metadata values, filters of *equal* values (``True`` never equals ``1``)."""

from __future__ import annotations

import json
import math
import numbers
import operator
from collections.abc import Iterable, Mapping, Sequence, Sized
from typing import Any

from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.domain.checks import check_unicode
from pywrapai_graph.domain.manifest import DocumentManifest, EmbedderIdentity
from pywrapai_graph.errors import (
    ArgumentTypeError,
    EmbedderMismatchError,
    InvalidArgumentError,
    UnsupportedOperationError,
)
from pywrapai_graph.ports.sync_async import Core

__all__ = [
    "MAX_K",
    "canonical_json",
    "check_bm25",
    "check_chunk",
    "check_delete_ids",
    "check_doc_id",
    "check_embedder",
    "check_filter",
    "check_k",
    "check_name",
    "check_older_than",
    "check_query_text",
    "check_query_vector",
    "check_vectors",
    "checked_chunks",
    "checked_document",
    "checked_filter",
    "checked_query_vectors",
    "lexical_refusal",
    "matches_filter",
    "paged",
    "same_value",
    "settled",
]

#: the largest k any backend is asked for; a larger k (2**63...) means "all of them"
MAX_K = 2**31 - 1

_RULE = "metadata values are JSON scalars (str, int, float, bool, None) or flat lists of them"


def check_name(value: str, what: str) -> None:
    """:func:`check_unicode` and no NUL (which a chunk's text may hold, ids and metadata not)."""
    check_unicode(value, what)
    if "\x00" in value:
        raise InvalidArgumentError(
            f"{what} holds a NUL character ({value!r:.60}); ids, metadata keys and metadata "
            "strings cannot (PostgreSQL cannot store one): remove it (value.replace('\\x00', ''))"
        )


def check_value(value: Any, what: str) -> None:
    """Raises InvalidArgumentError unless ``value`` is a JSON scalar or a flat list of them."""
    listed = isinstance(value, list | tuple)
    for item in value if listed else (value,):
        if isinstance(item, str):
            check_name(item, what)
        elif isinstance(item, float) and not math.isfinite(item):
            raise InvalidArgumentError(f"{what} is {item}, which JSON cannot hold; {_RULE}")
        elif not (item is None or isinstance(item, bool | int | float)):
            where = " in its list" if listed else ""
            raise InvalidArgumentError(f"{what} holds a {type(item).__name__}{where}; {_RULE}")


def check_chunk(chunk: Chunk) -> None:
    """Valid Unicode text and ids, JSON metadata values; errors name the chunk and field."""
    ids: tuple[object, object] = (chunk.id, chunk.doc_id)  # untyped callers pass anything
    if not all(isinstance(i, str) for i in ids):
        raise ArgumentTypeError(f"chunk ids and doc_ids are str; got {chunk.id!r}/{chunk.doc_id!r}")
    check_name(chunk.id, f"chunk id {chunk.id!r}")
    check_name(chunk.doc_id, f"chunk {chunk.id!r} doc_id")
    text: object = chunk.text
    if not isinstance(text, str):
        raise ArgumentTypeError(f"chunk {chunk.id!r} text is a {type(text).__name__}")
    check_unicode(chunk.text, f"chunk {chunk.id!r} text")
    metadata: object = chunk.metadata
    if not isinstance(metadata, Mapping):
        raise ArgumentTypeError(f"chunk {chunk.id!r} metadata is a {type(metadata).__name__}")
    _check_mapping(metadata, f"chunk {chunk.id!r} metadata")


def _check_mapping(values: Mapping[Any, Any], what: str) -> None:
    """Str keys (valid, without NUL) and :func:`check_value` values."""
    for key, value in values.items():
        if not isinstance(key, str):
            raise InvalidArgumentError(f"{what} key {key!r} is not a str")
        check_name(key, f"{what} key")
        check_value(value, f"{what} {key!r}")


def checked_chunks(chunks: Sequence[Chunk], method: str = "add") -> Sequence[Chunk]:
    """``chunks`` as a sequence (a generator read once), each a :func:`check_chunk` Chunk."""
    given: object = chunks
    if not isinstance(given, Iterable):  # a single Chunk too
        raise ArgumentTypeError(f"{method}() takes a list of chunks, got a {type(given).__name__}")
    if not isinstance(given, Sequence):
        chunks = list(given)
    for c in chunks:
        if not isinstance(c, Chunk):
            raise ArgumentTypeError(f"expected Chunk objects, got {type(c).__name__}")
        check_chunk(c)
    return chunks


def check_filter(filter: Mapping[str, Any] | None) -> None:
    """Raises InvalidArgumentError unless a filter maps str keys to :func:`check_value` values."""
    if filter is None:
        return
    given: object = filter
    if not isinstance(given, Mapping):
        raise ArgumentTypeError(f"filter must be a dict of metadata values, got {given!r:.60}")
    _check_mapping(filter, "filter")


def checked_filter(filter: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The filter after :func:`check_filter`, a tuple value given as the JSON list it is."""
    check_filter(filter)
    if filter and any(isinstance(v, tuple) for v in filter.values()):
        return {key: list(v) if isinstance(v, tuple) else v for key, v in filter.items()}
    return filter


def settled(
    hits: Sequence[ScoredChunk], k: int, filter: Mapping[str, Any] | None, asked: int
) -> list[ScoredChunk] | None:
    """The first ``k`` hits of a page of ``asked`` whose metadata *equals* ``filter``, or
    None when the filter took hits from a full page (ask the store for more)."""
    kept = [h for h in hits if matches_filter(h.chunk.metadata, filter)] if filter else hits
    if len(kept) < min(len(hits), k) and len(hits) >= asked and asked < MAX_K:
        return None
    return list(kept[:k])


def paged(k: int, filter: Mapping[str, Any] | None, asked: int) -> Core[int, list[ScoredChunk]]:
    """A search's first ``k`` hits equal to the filter, for ``drive``/``adrive``: yields how
    many hits to ask for, doubling while a full page lost hits to the filter."""
    while (page := settled((yield asked), k, filter, asked)) is None:
        asked = min(asked * 2, MAX_K)
    return page


def check_k(k: int) -> int:
    """``k`` as a plain int clamped to :data:`MAX_K` (numpy ints accepted, bools refused)."""
    given: object = k
    try:
        value = None if isinstance(given, bool) else operator.index(given)  # type: ignore[arg-type]
    except TypeError:
        value = None
    if value is None or value < 1:
        raise InvalidArgumentError(f"k must be a positive int, got {k!r}")
    return min(value, MAX_K)


def check_bm25(k1: float, b: float) -> None:
    """Raises InvalidArgumentError unless k1 >= 0 and 0 <= b <= 1 (BM25's parameters)."""
    if not (math.isfinite(k1) and k1 >= 0.0 and 0.0 <= b <= 1.0):
        raise InvalidArgumentError(f"BM25 needs k1 >= 0 and 0 <= b <= 1, got k1={k1}, b={b}")


def check_doc_id(doc_id: str) -> None:
    """Raises ArgumentTypeError unless ``doc_id`` is a str."""
    if not isinstance(doc_id, str):
        raise ArgumentTypeError(f"doc_id must be a str, got {doc_id!r}")
    check_name(doc_id, "doc_id")


def check_delete_ids(ids: Sequence[str]) -> list[str]:
    """The distinct ids, in order; a bare ``str`` (a sequence of characters) is refused."""
    if isinstance(ids, str | bytes):
        raise ArgumentTypeError(
            f"delete() takes a list of ids, got the string {ids!r}; write delete([{ids!r}])"
        )
    out = list(dict.fromkeys(ids))
    for i in out:
        if not isinstance(i, str):
            raise ArgumentTypeError(f"chunk ids are str, got {i!r} ({type(i).__name__})")
        check_name(i, "a chunk id")
    return out


def check_query_vector(vector: object, method: str = "search") -> None:
    """Raises ArgumentTypeError (a text, a dict, a set...) or InvalidArgumentError (nested,
    not 1-D) unless ``vector`` looks like one flat vector (the store checks its numbers)."""
    if isinstance(vector, str | bytes | bytearray | Mapping) or not isinstance(vector, Sized):
        raise ArgumentTypeError(
            f"{method}() takes a query vector (a flat list of floats), got a "
            f"{type(vector).__name__}; embed a text first (embedder.embed_one(text))"
        )
    ndim = getattr(vector, "ndim", None)
    first = next(iter(vector), None) if ndim is None else None  # type: ignore[call-overload]
    nested = isinstance(first, Sized) and not isinstance(first, str | bytes)
    if (ndim is not None and ndim != 1) or nested:
        shape = getattr(vector, "shape", None) or f"{len(vector)} nested sequences"
        raise InvalidArgumentError(
            f"{method}() takes one flat query vector, got {shape}; search_many() takes many"
        )


def checked_query_vectors(query_vectors: object) -> list[Any]:
    """``search_many``'s query vectors as a list (an iterator read once), each checked."""
    if isinstance(query_vectors, str | bytes | Mapping) or not isinstance(query_vectors, Iterable):
        raise ArgumentTypeError(
            f"search_many() takes a list of query vectors, got a {type(query_vectors).__name__}"
        )
    vectors = list(query_vectors)
    for vector in vectors:
        check_query_vector(vector, "search_many")
    return vectors


def check_query_text(query: object, method: str = "lexical_search") -> None:
    """Raises ArgumentTypeError unless ``query`` is a str (valid Unicode)."""
    if not isinstance(query, str):
        raise ArgumentTypeError(f"{method}() takes a query text (a str), got {query!r:.60}")
    check_name(query, f"{method}() query")


def check_older_than(seconds: object) -> float:
    """``repair(older_than_s=...)`` as a float: a finite number >= 0 (not a bool)."""
    real = isinstance(seconds, numbers.Real) and not isinstance(seconds, bool)
    value = float(seconds) if real else math.nan  # type: ignore[arg-type]
    if not (math.isfinite(value) and value >= 0):
        raise InvalidArgumentError(
            f"older_than_s is a finite number of seconds >= 0, got {seconds!r:.60}"
        )
    return value


def same_value(stored: Any, wanted: Any) -> bool:
    """JSON equality: ``True`` never equals ``1``; lists (or tuples) compare item by item."""
    if isinstance(stored, bool) or isinstance(wanted, bool):
        return type(stored) is type(wanted) and stored == wanted
    lists = isinstance(stored, list | tuple), isinstance(wanted, list | tuple)
    if any(lists):
        return all(lists) and len(stored) == len(wanted) and all(map(same_value, stored, wanted))
    return bool(stored == wanted)


def matches_filter(metadata: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """True when ``metadata`` has every key of ``filter`` with an equal (JSON) value."""
    if not filter:
        return True
    return all(key in metadata and same_value(metadata[key], v) for key, v in filter.items())


def _canonical(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)  # 1.0 == 1 in a filter, as everywhere else
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return value


def canonical_json(value: Any) -> str:
    """One text per JSON value under :func:`same_value`, for engines that match only strings."""
    return json.dumps(_canonical(value), ensure_ascii=False, separators=(",", ":"))


def lexical_refusal(store: str, asked: str) -> UnsupportedOperationError:
    """The error of ``asked`` on a ``store`` without lexical search, naming those with one."""
    return UnsupportedOperationError(
        f"{store} has no lexical search, which {asked} needs: lexical and hybrid retrieval "
        "run on the PostgreSQL (pgvector), SQLite, Qdrant, in-memory and FAISS stores; use "
        "one of them, or mode='dense'"
    )


def checked_document(manifest: DocumentManifest, chunks: Sequence[Chunk]) -> Sequence[Chunk]:
    """:func:`checked_chunks`, all of the manifest's document (one per chunk it counts)."""
    chunks = checked_chunks(chunks, "replace_document")
    for c in chunks:
        if c.doc_id != manifest.doc_id:
            raise InvalidArgumentError(
                f"chunk {c.id!r} belongs to document {c.doc_id!r}, not {manifest.doc_id!r}"
            )
    if (distinct := len({c.id for c in chunks})) != manifest.chunk_count:
        raise InvalidArgumentError(
            f"document {manifest.doc_id!r}: the manifest counts {manifest.chunk_count} chunks, "
            f"{distinct} distinct ones were given"
        )
    return chunks


def check_vectors(chunks: Sequence[Chunk], vectors: memoryview) -> None:
    """Raises ValueError unless ``vectors`` is a float32 matrix with one row per chunk."""
    given: object = vectors  # callers outside mypy may pass an array
    if not isinstance(given, memoryview) or given.ndim != 2 or given.format != "f":
        raise InvalidArgumentError("vectors must be a 2-D float32 memoryview, one row per chunk")
    if (rows := (vectors.shape or (0,))[0]) != len(chunks):
        raise InvalidArgumentError(f"{rows} vectors were given for {len(chunks)} chunks")


def check_embedder(
    recorded: EmbedderIdentity | None, given: EmbedderIdentity
) -> EmbedderIdentity | None:
    """The identity a store holds after a write by ``given`` (dimension 0 is never recorded).

    Raises:
        EmbedderMismatchError: a store filled by ``recorded`` meets another embedder.
    """
    if recorded is None:
        return given if given.dimension else None
    same_model = (recorded.provider, recorded.model) == (given.provider, given.model)
    if not same_model or given.dimension not in (0, recorded.dimension):
        raise EmbedderMismatchError(
            f"this store holds vectors from {recorded}, but the embedder in use is {given}; "
            "vectors of different models do not compare. Configure the store's embedder, or "
            "clear the store (store.clear(), or `pywrapai-graph store clear`) and ingest again"
        )
    return recorded
