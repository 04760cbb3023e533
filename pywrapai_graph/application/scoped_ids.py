"""The stored id of a scoped view's document, and the ids the first scheme gave them.

A view stores document ``handbook`` of scope ``{"tenant": "acme"}`` as
``{"tenant":"acme"}/handbook``: the scope as a JSON object (keys sorted, each value in its
JSON type, integral floats as integers, as the stores match them), a slash, the id. The
object is one JSON text, which ends where its braces close, so the stored id gives back its
scope and its document id: two different (scope, id) pairs never share a stored id, whatever
characters keys, values and ids hold, and ``1``, ``True`` and ``"1"`` stay three scopes.

The first scheme wrote ``tenant=acme/handbook`` (``key=value`` pairs joined by commas, values
as ``str()`` gives them): tenant ``a`` with id ``b/x`` and tenant ``a/b`` with id ``x``
shared one id, as did ``{org: a, team: b}`` and ``{org: "a,team=b"}``, or ``1`` and ``"1"``.
:func:`legacy_readings` lists every (scope, id) such an id can stand for, so that a view
removes its own old document only when no other scope can own it
(:class:`~pywrapai_graph.application.scoped_retriever.ScopedRetriever`).
"""

from __future__ import annotations

import ast
import itertools
import json
import logging
import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pywrapai_graph.errors import UnsupportedOperationError
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.ports.store_inputs import canonical_json, same_value
from pywrapai_graph.ports.vector_store import keeps_manifests

__all__ = ["LegacyIds", "legacy_prefix", "legacy_readings", "scoped_prefix"]

logger = logging.getLogger(__name__)

#: readings of one old id beyond which it is called ambiguous without looking further
MAX_READINGS = 64
_NAMED: dict[str, Any] = {"True": True, "False": False, "None": None}


def scoped_prefix(scope: Mapping[str, Any]) -> str:
    """``{"key":value,...}/``: the scope's JSON object, keys sorted, then a slash."""
    pairs = (
        json.dumps(key, ensure_ascii=False) + ":" + canonical_json(value)
        for key, value in sorted(scope.items())
    )
    return "{" + ",".join(pairs) + "}/"


def legacy_prefix(scope: Mapping[str, Any]) -> str:
    """``key=value,...``/: the prefix of the first scheme (not injective)."""
    return ",".join(f"{k}={v}" for k, v in sorted(scope.items())) + "/"


def _typed(text: str) -> list[Any]:
    """Every JSON value (scalar or flat list) whose ``str()`` is ``text``."""
    values: list[Any] = [text]
    if text in _NAMED:
        values.append(_NAMED[text])
    for kind in (int, float):
        try:
            value = kind(text)
        except ValueError:
            continue
        if str(value) == text and (kind is int or math.isfinite(value)):
            values.append(value)
    if text.startswith("[") and len(text) < 10_000:
        try:
            listed = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            listed = None
        flat = isinstance(listed, list) and all(
            v is None or isinstance(v, str | int | float) for v in listed
        )
        if flat and str(listed) == text:
            values.append(listed)
    return values


def _pairs(prefix: str) -> Iterator[list[tuple[str, str]]]:
    """Every way ``prefix`` splits into ``key=value`` texts joined by commas, keys sorted."""
    pieces = prefix.split(",")
    for cuts in itertools.product((False, True), repeat=len(pieces) - 1):
        groups, current = [], pieces[0]
        for cut, piece in zip(cuts, pieces[1:], strict=True):
            if cut:
                groups.append(current)
                current = piece
            else:
                current += "," + piece
        groups.append(current)
        splits = [[(g[:i], g[i + 1 :]) for i, c in enumerate(g) if c == "="] for g in groups]
        for pairs in itertools.product(*splits):
            keys = [k for k, _ in pairs]
            if keys == sorted(set(keys)):
                yield list(pairs)


def legacy_readings(stored_id: str) -> list[tuple[dict[str, Any], str]] | None:
    """Every (scope, document id) the first scheme stored as ``stored_id``; None when they
    are more than :data:`MAX_READINGS` (too ambiguous to enumerate)."""
    if stored_id.count(",") > 8 or stored_id.count("=") > 16 or stored_id.count("/") > 64:
        return None  # bounds the splits tried below (at most 2**8 groupings per slash)
    readings: list[tuple[dict[str, Any], str]] = []
    for slash, char in enumerate(stored_id):
        if char != "/":
            continue
        prefix, doc_id = stored_id[:slash], stored_id[slash + 1 :]
        for pairs in _pairs(prefix):
            keys = [k for k, _ in pairs]
            for values in itertools.product(*(_typed(v) for _, v in pairs)):
                readings.append((dict(zip(keys, values, strict=True)), doc_id))
                if len(readings) > MAX_READINGS:
                    return None
    return readings


def _same_scope(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)


class LegacyIds:
    """Removes what the first scheme stored for a view's documents, once they are rewritten.

    A stored id of the first scheme is removed only when every other (scope, id) it can be
    read as (:func:`legacy_readings`) names a scope without a single chunk in the store:
    otherwise another tenant may own it, and it stays (a WARNING names it; check whose it
    is, then ``store.delete_by_doc(old_id)``).
    """

    def __init__(self, store: BaseVectorStore, scope: Mapping[str, Any]) -> None:
        self._store = store
        self._scope = dict(scope)
        self._prefix = legacy_prefix(scope)
        self._counts: dict[str, int | None] = {}

    def retire(self, doc_ids: Iterable[str], *, always: bool = False) -> int:
        """Delete the old documents of ``doc_ids`` this scope owns; returns chunks deleted.

        Only those the store lists a manifest for (one indexed request for all), unless
        ``always`` and the store keeps no manifests: then every one this scope owns.
        """
        wanted = {self._prefix + d: d for d in doc_ids}
        blind = always and not keeps_manifests(self._store)
        present = wanted if blind else self._store.document_manifests(list(wanted))
        deleted = 0
        for old_id in present:
            if self._owned(old_id, wanted[old_id]):
                deleted += self._store.delete_by_doc(old_id)
            elif not blind:
                logger.warning(
                    "kept %r, stored under the first scoped-id scheme: another scope may own "
                    "it; check its chunks' metadata, then store.delete_by_doc() it",
                    old_id,
                )
        return deleted

    def _owned(self, old_id: str, doc_id: str) -> bool:
        readings = legacy_readings(old_id)
        if readings is None:
            return False
        others = [s for s, d in readings if not (d == doc_id and _same_scope(s, self._scope))]
        return all(self._count(scope) == 0 for scope in others)

    def _count(self, scope: dict[str, Any]) -> int | None:
        key = canonical_json(sorted(scope.items()))
        if key not in self._counts:
            try:
                self._counts[key] = self._store.count(scope)
            except UnsupportedOperationError:
                self._counts[key] = None
        return self._counts[key]
