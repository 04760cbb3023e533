"""The embedder port: texts in, vectors out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

__all__ = ["EmbeddingModel"]


@runtime_checkable
class EmbeddingModel(Protocol):
    """Anything that turns texts into vectors: ``Embedder`` or a test fake.

    Raises:
        pywrapai_graph.errors.ProviderError: when the provider fails.
    """

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order."""
        ...

    def embed_one(self, text: str) -> list[float]:
        """The vector of one text."""
        ...
