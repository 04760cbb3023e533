"""The chunk ids of a Qdrant store: the filter selecting chunks by them (every version of
each) and the payload index that serves it on a server."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from pywrapai_graph.adapters._optional import require

__all__ = ["ID_FIELD", "ids_filter", "index_chunk_ids"]

#: the payload field holding a point's chunk id (a point id is per version)
ID_FIELD = "id"
_log = logging.getLogger(__name__)


def ids_filter(ids: Sequence[str]) -> Any:
    """A filter on the ``id`` payload field (the chunk id; a point id is per version)."""
    m = require("qdrant_client.models", "qdrant", "qdrant-client")
    return m.Filter(must=[m.FieldCondition(key=ID_FIELD, match=m.MatchAny(any=list(ids)))])


def index_chunk_ids(client: Any, collection: str) -> None:
    """A keyword payload index on ``id``, which the id-restricted re-scoring queries of
    hybrid retrieval (``similarities``, ``lexical_scores``) filter on: without it a server
    looks through the payload of every point for them.

    Asked (on a server) when the store creates the collection, and when it opens one whose
    schema lacks it (made before this index existed). Local mode has no payload indexes: it
    takes the call, warns and ignores it, so the store does not ask it. A key that may not
    change the collection (read-only) leaves it as it is, with a warning: searches stay
    correct, only slower.
    """
    m = require("qdrant_client.models", "qdrant", "qdrant-client")
    errors = require("qdrant_client.http.exceptions", "qdrant", "qdrant-client")
    try:
        client.create_payload_index(
            collection, field_name=ID_FIELD, field_schema=m.PayloadSchemaType.KEYWORD, wait=True
        )
    except errors.UnexpectedResponse as exc:
        if exc.status_code not in (401, 403):
            raise
        _log.warning(
            "Qdrant collection %r has no payload index on %r and this key may not create it "
            "(HTTP %s): hybrid re-scoring scans payloads until an administrator opens the "
            "store once with a key that may",
            collection,
            ID_FIELD,
            exc.status_code,
        )
