"""EmbedTexts: turn texts into vectors through an embedding provider, accounting for each request.

The use case behind ``Embedder``: it splits the input into provider-sized batches, checks
that every request returned one vector per text, and records one
``CallRecord(kind="embedding")`` per request (the provider's token count, or the
4-characters-per-token estimate of reference D6 when it reports none).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np
import numpy.typing as npt

from pywrapai_graph.application.observability.model_calls import observe_embedding
from pywrapai_graph.application.observability.observation import Observation
from pywrapai_graph.application.token_tracker import TokenTracker
from pywrapai_graph.domain import TokenUsage
from pywrapai_graph.domain.checks import check_unicode
from pywrapai_graph.errors import ArgumentTypeError, InvalidArgumentError, ProviderError
from pywrapai_graph.ports.embedding_provider import EmbeddingBatch, EmbeddingProvider
from pywrapai_graph.ports.hooks import Hooks
from pywrapai_graph.ports.offload import offload
from pywrapai_graph.ports.sync_async import Core, adrive, drive

__all__ = ["EmbedTexts", "abatch", "estimate_tokens"]


def estimate_tokens(texts: Sequence[str]) -> int:
    """The 4-characters-per-token heuristic (reference D6)."""
    return sum(max(1, len(t) // 4) for t in texts if t)


async def abatch(provider: EmbeddingProvider, texts: Sequence[str], model: str) -> EmbeddingBatch:
    """One batch through ``provider``'s async client, or its sync call in the offload pool."""
    native = getattr(provider, "aembed_batch", None)  # not isinstance: a Protocol check a call
    if native is not None:
        return cast(EmbeddingBatch, await native(texts, model))
    return await offload(provider.embed_batch, texts, model)


def _as_lists(vectors: list[list[float]] | memoryview) -> list[list[float]]:
    """The public view: a list of Python floats per vector."""
    if isinstance(vectors, memoryview):
        return cast(list[list[float]], vectors.tolist())
    return vectors


def _float32_rows(
    vectors: list[list[float]] | memoryview, provider: str
) -> npt.NDArray[np.float32]:
    """A batch as a float32 matrix: a memoryview as is, JSON lists converted once."""
    if isinstance(vectors, memoryview):
        return np.asarray(vectors, dtype=np.float32)
    try:
        matrix = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError):
        matrix = None
    if matrix is None or matrix.ndim != 2:
        raise ProviderError(
            f"{provider}: the vectors are not a list of equal-length lists", provider=provider
        )
    return matrix


class EmbedTexts:
    """Embeds texts in batches of at most ``batch_size`` through ``provider``.

    Args:
        provider: the embedding adapter.
        model: the model every request names.
        tracker: receives one usage record per request.
        batch_size: at most this many texts per request (capped by ``provider.max_batch``).
        hooks: observability hooks told about every request.

    Raises:
        ValueError: for a batch size below 1.
    """

    def __init__(
        self,
        provider: EmbeddingProvider,
        model: str,
        tracker: TokenTracker,
        *,
        batch_size: int | None = None,
        hooks: tuple[Hooks, ...] = (),
    ) -> None:
        if batch_size is not None and batch_size < 1:
            raise InvalidArgumentError(f"batch_size must be positive, got {batch_size}")
        self.provider = provider
        self.model = model
        self.tracker = tracker
        self.batch_size = min(batch_size or provider.max_batch, provider.max_batch)
        self.truncated = 0
        self._hooks = hooks

    def _parts(self, texts: Sequence[str]) -> list[list[str]]:
        if isinstance(texts, str):
            raise ArgumentTypeError("embed() takes a list of texts; use embed_one() for one text")
        items = list(texts)
        for i, text in enumerate(items):
            if not isinstance(text, str):
                raise ArgumentTypeError(f"text {i} to embed is a {type(text).__name__}, not a str")
            check_unicode(text, f"text {i} to embed")
        return [items[i : i + self.batch_size] for i in range(0, len(items), self.batch_size)]

    def _observe(self, part: list[str]) -> Observation:
        return observe_embedding(self.provider.provider, self.model, len(part), hooks=self._hooks)

    def _book(
        self, part: list[str], batch: EmbeddingBatch, observed: Observation
    ) -> list[list[float]] | memoryview:
        name = self.provider.provider
        if len(batch.vectors) != len(part):
            raise ProviderError(
                f"{name}: {len(batch.vectors)} vectors for {len(part)} texts", provider=name
            )
        estimated = batch.input_tokens is None  # the provider reported no count
        tokens = estimate_tokens(part) if batch.input_tokens is None else batch.input_tokens
        observed.result = self.tracker.record(
            "embedding", name, batch.model or self.model, TokenUsage(tokens), estimated=estimated
        )
        if observed.active and len(batch.vectors):
            vectors = batch.vectors
            size = vectors.shape[1] if isinstance(vectors, memoryview) and vectors.shape else 0
            dimension = len(vectors[0]) if isinstance(vectors, list) else size
            observed.set({"gen_ai.embeddings.dimension.count": dimension})
        self.truncated += batch.truncated
        return batch.vectors

    def run(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order.

        Raises:
            TypeError: when given a single string.
            ProviderError: when the provider fails or returns the wrong number of vectors.
        """
        return drive(self._vectors(texts), lambda part: self.provider.embed_batch(part, self.model))

    def run_matrix(self, texts: Sequence[str]) -> memoryview:
        """The vectors as one (len(texts), dimension) float32 matrix, in a ``memoryview``:
        vectors a provider computes locally never become Python floats.

        Raises:
            TypeError: when given a single string.
            ProviderError: when the provider fails or returns vectors of different sizes.
        """
        name = self.provider.provider
        parts: list[npt.NDArray[np.float32]] = []
        for part in self._parts(texts):
            with self._observe(part) as observed:
                batch = self.provider.embed_batch(part, self.model)
                parts.append(_float32_rows(self._book(part, batch, observed), name))
        if not parts:
            dimension = getattr(self.provider, "dimension", None)
            size = dimension if isinstance(dimension, int) and dimension > 0 else 0
            return np.empty((0, size), np.float32).data
        if len({p.shape[1] for p in parts}) != 1:
            raise ProviderError(
                f"{name}: batches returned vectors of different sizes", provider=name
            )
        matrix = parts[0] if len(parts) == 1 else np.concatenate(parts)
        return np.ascontiguousarray(matrix, dtype=np.float32).data

    async def arun(self, texts: Sequence[str]) -> list[list[float]]:
        """Async :meth:`run`: the provider's async client, or the offload pool."""
        return await adrive(
            self._vectors(texts), lambda part: abatch(self.provider, part, self.model)
        )

    def _vectors(self, texts: Sequence[str]) -> Core[list[str], list[list[float]]]:
        """:meth:`run` and :meth:`arun`, written once: yields each batch of texts to embed,
        is sent its :class:`EmbeddingBatch`."""
        vectors: list[list[float]] = []
        for part in self._parts(texts):
            with self._observe(part) as observed:
                batch: EmbeddingBatch = yield part
                vectors.extend(_as_lists(self._book(part, batch, observed)))
        return vectors
