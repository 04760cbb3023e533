"""FeatureHashingEmbedder: an offline, deterministic embedder (feature hashing of words and
n-grams). ``HashingEmbedder`` is its previous name, kept for one release (it warns).

It is *lexical*, not semantic: texts that share words (or word fragments) get similar
vectors; synonyms and paraphrases do not. Use it for tests, demos and air-gapped
pipelines; use a provider's embedding model for real semantic retrieval.
"""

from __future__ import annotations

import re
import warnings
import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from pywrapai_graph.application.embed_texts import estimate_tokens
from pywrapai_graph.application.token_tracker import TokenTracker
from pywrapai_graph.domain import TokenUsage
from pywrapai_graph.errors import ArgumentTypeError, InvalidArgumentError

__all__ = ["FeatureHashingEmbedder", "HashingEmbedder"]

_WORDS = re.compile(r"\w+", re.UNICODE)
_SIGN_BIT = 1 << 31


def _texts(texts: Sequence[str]) -> Sequence[str]:
    if isinstance(texts, str):
        raise ArgumentTypeError("embed() takes a list of texts; use embed_one() for one text")
    return texts


class FeatureHashingEmbedder:
    """Maps text to a fixed-size, L2-normalised vector by hashing its features.

    Features: each lower-cased word (weight 1.0) and its character n-grams with boundary
    markers (weight 0.5 in total per word), hashed with CRC-32 into ``dimension`` signed
    buckets. Identical text always gives the identical vector, in every process.

    Args:
        dimension: vector size.
        ngram: character n-gram length (0 disables n-grams).

    Raises:
        ValueError: for a non-positive dimension or negative n-gram length.
    """

    provider = "hashing"
    #: computed in pure Python (it holds the GIL): ingest embeds it on the calling thread
    pure_python = True

    def __init__(self, dimension: int = 384, ngram: int = 3) -> None:
        if dimension <= 0:
            raise InvalidArgumentError(f"dimension must be positive, got {dimension}")
        if ngram < 0:
            raise InvalidArgumentError(f"ngram must be >= 0, got {ngram}")
        self.dimension = dimension
        self.ngram = ngram
        self.model = f"hashing-{dimension}"
        self.tokens = TokenTracker()

    def _features(self, text: str) -> dict[int, float]:
        weights: dict[int, float] = {}
        n = self.ngram
        for word in _WORDS.findall(text.lower()):
            feats = [(word, 1.0)]
            if n:
                marked = f"<{word}>"
                grams = [marked[i : i + n] for i in range(max(1, len(marked) - n + 1))]
                feats += [(g, 0.5 / len(grams)) for g in grams]
            for feat, weight in feats:
                h = zlib.crc32(feat.encode("utf-8"))
                bucket = h % self.dimension
                weights[bucket] = weights.get(bucket, 0.0) + (weight if h & _SIGN_BIT else -weight)
        return weights

    def _unit(self, text: str) -> npt.NDArray[np.float64]:
        vec = np.zeros(self.dimension, dtype=np.float64)
        for bucket, weight in self._features(text).items():
            vec[bucket] = weight
        norm = float(np.linalg.norm(vec))
        if norm == 0.0:
            # No word characters at all: a fixed unit vector keeps the result usable.
            vec[0] = 1.0
            norm = 1.0
        unit: npt.NDArray[np.float64] = vec / norm
        return unit

    def vectors(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text, without recording usage."""
        return [self._unit(t).tolist() for t in _texts(texts)]

    def matrix(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The unit vectors of ``texts`` as one float32 matrix, without recording usage."""
        out = np.empty((len(_texts(texts)), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i] = self._unit(text)
        return out

    def embed_matrix(self, texts: Sequence[str]) -> memoryview:
        """The vectors as one float32 matrix (what ingest uses: no Python float per value)."""
        out = self.matrix(texts)
        self._record(texts)
        return out.data

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text."""
        vectors = self.vectors(texts)
        self._record(texts)
        return vectors

    def _record(self, texts: Sequence[str]) -> None:
        usage = TokenUsage(estimate_tokens(texts))
        self.tokens.record("embedding", self.provider, self.model, usage, estimated=True)

    def embed_one(self, text: str) -> list[float]:
        """The vector of one text."""
        return self.embed([text])[0]

    def __repr__(self) -> str:
        return f"FeatureHashingEmbedder(dimension={self.dimension}, ngram={self.ngram})"


if TYPE_CHECKING:
    HashingEmbedder = FeatureHashingEmbedder
else:

    def __getattr__(name: str) -> Any:
        if name == "HashingEmbedder":
            warnings.warn(
                "HashingEmbedder is now FeatureHashingEmbedder; the old name goes in the next "
                "release",
                DeprecationWarning,
                stacklevel=2,
            )
            return FeatureHashingEmbedder
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
