"""The embedder port: texts in, vectors out (sync, and async where the embedder offers it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, cast, runtime_checkable

from pywrapai_graph.ports.offload import offload

__all__ = [
    "AsyncEmbeddingModel",
    "EmbeddingModel",
    "MatrixEmbeddingModel",
    "aembed",
    "aembed_one",
    "concurrent_requests",
    "pure_python",
]


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


@runtime_checkable
class AsyncEmbeddingModel(EmbeddingModel, Protocol):
    """An embedder with a native async side (``Embedder`` over an SDK's async client)."""

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        """Async :meth:`embed`."""
        ...

    async def aembed_one(self, text: str) -> list[float]:
        """Async :meth:`embed_one`."""
        ...


async def aembed(embedder: EmbeddingModel, texts: Sequence[str]) -> list[list[float]]:
    """``embedder.aembed(texts)`` when it has one, else ``embed`` in the offload pool."""
    native = getattr(embedder, "aembed", None)  # not isinstance: a Protocol check per query
    if native is not None:
        return cast(list[list[float]], await native(texts))
    return await offload(embedder.embed, texts)


async def aembed_one(embedder: EmbeddingModel, text: str) -> list[float]:
    """``embedder.aembed_one(text)`` when it has one, else ``embed_one`` in the offload pool."""
    native = getattr(embedder, "aembed_one", None)
    if native is not None:
        return cast(list[float], await native(text))
    return await offload(embedder.embed_one, text)


@runtime_checkable
class MatrixEmbeddingModel(EmbeddingModel, Protocol):
    """An embedder that can also return its vectors as one float32 matrix.

    Ingest uses it to hand vectors to a store's bulk path without building a Python float
    per value; ``embed`` stays the public ``list[list[float]]`` view.
    """

    def embed_matrix(self, texts: Sequence[str]) -> memoryview:
        """A 2-D float32 ``memoryview`` (row-major), row ``i`` the vector of ``texts[i]``."""
        ...


def concurrent_requests(embedder: EmbeddingModel) -> bool:
    """Whether ``embedder`` sends requests to a server and takes several calls at once from
    different threads: ``Embedder`` over OpenAI, Gemini or Ollama says so through a
    ``concurrent_requests`` attribute that is True. Other embedders (local models, test
    fakes, user classes without the attribute) are called one at a time."""
    return getattr(embedder, "concurrent_requests", False) is True


def pure_python(embedder: EmbeddingModel) -> bool:
    """Whether ``embedder`` computes in pure Python (its ``pure_python`` attribute is True,
    as for the hashing embedder): it holds the GIL, so running it in a worker thread while
    the caller writes overlaps nothing and only adds thread switches."""
    return getattr(embedder, "pure_python", False) is True
