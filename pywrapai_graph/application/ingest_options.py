"""What callers of ingest configure and receive, without the ingest pipeline itself.

``VectorRetriever`` validates its options and names its callbacks with these at construction;
the pipeline (:mod:`~pywrapai_graph.application.ingest_documents`, with its thread pool and
hashing) is imported only when something is ingested, so a search-only program never loads it.
"""

from __future__ import annotations

from collections.abc import Callable

from pywrapai_graph.domain.ingest_report import DocumentOutcome
from pywrapai_graph.errors import ArgumentTypeError, InvalidArgumentError
from pywrapai_graph.ports import EmbeddingModel

__all__ = [
    "DEFAULT_EMBED_CONCURRENCY",
    "OutcomeCallback",
    "ProgressCallback",
    "check_embed_concurrency",
    "embedder_name",
]

#: Called after each stored document with (chunks done, chunks known so far).
ProgressCallback = Callable[[int, int], None]
#: Called with each document's outcome as soon as it is stored.
OutcomeCallback = Callable[[DocumentOutcome], None]
#: Embedding requests at once for an embedder that sends them to a server.
DEFAULT_EMBED_CONCURRENCY = 4


def embedder_name(embedder: EmbeddingModel) -> tuple[str, str]:
    """(provider, model) of an embedder, from its ``provider``/``model`` attributes."""
    provider = getattr(embedder, "provider", None)
    model = getattr(embedder, "model", None)
    return (
        provider if isinstance(provider, str) and provider else type(embedder).__name__,
        model if isinstance(model, str) else "",
    )


def check_embed_concurrency(value: int) -> int:
    """``value`` if it is a valid ``embed_concurrency`` (an int >= 0).

    Raises:
        ArgumentTypeError: not an int.
        InvalidArgumentError: negative.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentTypeError(f"embed_concurrency must be an int, got {type(value).__name__}")
    if value < 0:
        raise InvalidArgumentError(
            f"embed_concurrency must be >= 0 (0 embeds and writes in turn), got {value}"
        )
    return value
