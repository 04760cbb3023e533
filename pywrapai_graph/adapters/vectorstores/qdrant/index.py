"""The payload indexes of a Qdrant collection: on ``id``, the chunk id that deletes and
lookups by chunk id filter on (``ids.ids_filter``), and on the chunk's term indices
that lexical queries filter on (``points.TERMS``): without them a server looks
through the payload of every point."""

from __future__ import annotations

import logging
from typing import Any

from pywrapai_graph.adapters._optional import require
from pywrapai_graph.adapters.vectorstores.qdrant.points import TERMS

__all__ = ["ensure_id_index", "index_chunk_ids"]

#: the payload field holding a point's chunk id (a point id is per version)
_FIELD = "id"
_log = logging.getLogger(__name__)


def index_chunk_ids(client: Any, collection: str) -> None:
    """Create the keyword index on ``id`` (the store asks it when it creates the collection,
    of a server or of Qdrant Edge in process). A key that may not change the collection
    (read-only) leaves it as it is, with a warning: searches stay correct, only slower."""
    m = require("qdrant_client.models", "qdrant", "qdrant-client")
    errors = require("qdrant_client.http.exceptions", "qdrant", "qdrant-client")
    try:
        for field, schema in ((_FIELD, m.PayloadSchemaType.KEYWORD), (TERMS, "integer")):
            client.create_payload_index(
                collection, field_name=field, field_schema=schema, wait=True
            )
    except errors.UnexpectedResponse as exc:
        if exc.status_code not in (401, 403):
            raise
        _log.warning(
            "Qdrant collection %r has no payload index on %r and this key may not create it "
            "(HTTP %s): lookups scan payloads until a key that may opens the store",
            collection,
            _FIELD,
            exc.status_code,
        )


def ensure_id_index(client: Any, collection: str) -> None:
    """At open: create the index when the collection's payload schema lacks it (a
    collection made before the index existed); one schema request when it is there."""
    if _FIELD not in (client.get_collection(collection).payload_schema or {}):
        index_chunk_ids(client, collection)
