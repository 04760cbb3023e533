"""The Qdrant filter selecting chunks by their chunk ids (every version of each)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pywrapai_graph.adapters._optional import require

__all__ = ["ids_filter"]


def ids_filter(ids: Sequence[str]) -> Any:
    """A filter on the ``id`` payload field (the chunk id; a point id is per version)."""
    m = require("qdrant_client.models", "qdrant", "qdrant-client")
    return m.Filter(must=[m.FieldCondition(key="id", match=m.MatchAny(any=list(ids)))])
