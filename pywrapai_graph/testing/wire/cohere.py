"""Cohere's Rerank API wire format, written from its public API reference.

``POST /v2/rerank`` with ``{"model", "query", "documents": [str], "top_n"?}`` answers
``{"id", "results": [{"index", "relevance_score"}...] best first, "meta": {"api_version",
"billed_units": {"search_units"}}}``; one search unit per 100 documents. Errors are
``{"message": ...}`` with the HTTP status.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any, ClassVar

from pywrapai_graph.testing.scripted import ScriptedReply
from pywrapai_graph.testing.wire.server import WireResponse, WireServer

__all__ = ["CohereWire", "word_overlap"]

_WORD = re.compile(r"\w+")
#: documents one search unit covers
DOCUMENTS_PER_SEARCH_UNIT = 100
#: scores a (query, document) pair
Relevance = Callable[[str, str], float]


def word_overlap(query: str, document: str) -> float:
    """The share of the query's distinct words that the document contains (0 to 1)."""
    asked = set(_WORD.findall(query.lower()))
    if not asked:
        return 0.0
    return len(asked & set(_WORD.findall(document.lower()))) / len(asked)


class CohereWire(WireServer):
    """``/v2/rerank`` as api.cohere.com speaks it; relevance is computed by ``relevance``
    (default :func:`word_overlap`), so a test can predict every score."""

    computed_kinds: ClassVar[tuple[str, ...]] = ("rerank",)

    def __init__(self, *, relevance: Relevance = word_overlap, **options: Any) -> None:
        super().__init__(**options)
        self.relevance = relevance

    routes: ClassVar[dict[str, str]] = {"/v2/rerank": "rerank"}

    def render_computed(self, kind: str, body: Any, path: str) -> WireResponse:
        if not isinstance(body, dict) or not isinstance(body.get("documents"), list):
            return WireResponse(400, self.render_error(400, "documents is required"))
        query = str(body.get("query", ""))
        documents = [str(d) for d in body["documents"]]
        scored = sorted(
            ((i, self.relevance(query, d)) for i, d in enumerate(documents)),
            key=lambda pair: -pair[1],
        )
        top = body.get("top_n")
        if isinstance(top, int):
            scored = scored[:top]
        reply = {
            "id": "rerank-wire",
            "results": [{"index": i, "relevance_score": s} for i, s in scored],
            "meta": {
                "api_version": {"version": "2"},
                "billed_units": {
                    "search_units": math.ceil(len(documents) / DOCUMENTS_PER_SEARCH_UNIT)
                },
            },
        }
        return WireResponse(body=json.dumps(reply).encode())

    def render_chat(self, reply: ScriptedReply, body: Any, stream: bool) -> WireResponse:
        return WireResponse(404, self.render_error(404, "this server only reranks"))

    def render_error(self, status: int, message: str) -> bytes:
        return json.dumps({"message": message}).encode()
