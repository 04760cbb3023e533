"""The data the vector-store contract writes: random chunks, documents, manifests, a word
embedder, and numpy's exact answer to compare with."""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np

from pywrapai_graph.domain import Chunk
from pywrapai_graph.domain.manifest import DocumentManifest, EmbedderIdentity

__all__ = ["WordEmbedder", "document_chunks", "exact_top", "make_chunks", "manifest_for"]


def make_chunks(
    n: int, dim: int, seed: int = 0, *, docs: int = 1, prefix: str = "c"
) -> list[Chunk]:
    """``n`` chunks with random unit-scale embeddings, spread over ``docs`` documents."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    return [
        Chunk(
            text=f"chunk {prefix}{i}",
            doc_id=f"doc-{i % docs}",
            metadata={"n": i, "parity": "even" if i % 2 == 0 else "odd", "doc": f"doc-{i % docs}"},
            id=f"{prefix}{i}",
            embedding=vectors[i].tolist(),
        )
        for i in range(n)
    ]


class WordEmbedder:
    """A deterministic embedder for the contract: words hashed into ``dimension`` buckets."""

    provider = "contract"

    def __init__(self, dimension: int, model: str = "words") -> None:
        self.dimension = dimension
        self.model = model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.embed_one(t) for t in texts]

    def embed_one(self, text: str) -> list[float]:
        vector = [0.0] * self.dimension
        vector[0] = 0.01  # never the zero vector
        for word in text.lower().split():
            h = zlib.crc32(word.encode())
            vector[h % self.dimension] += 1.0 if h & 1 else -1.0
        return vector


def document_chunks(doc_id: str, n: int, dim: int, version: str) -> list[Chunk]:
    """``n`` embedded chunks of one document, their texts tagged with ``version``."""
    chunks = make_chunks(n, dim, seed=len(version) * 7 + n, prefix=f"{doc_id}-{version}-")
    for i, c in enumerate(chunks):
        c.doc_id = doc_id
        c.text = f"{version} part {i}"
        c.metadata = {"doc": doc_id, "version": version}
    return chunks


def manifest_for(doc_id: str, chunks: list[Chunk], dim: int, model: str = "m") -> DocumentManifest:
    """A manifest of ``chunks`` under the embedder ``contract/<model>``."""
    return DocumentManifest(
        doc_id,
        f"hash-of-{chunks[0].text if chunks else ''}",
        len(chunks),
        EmbedderIdentity("contract", model, dim),
    )


def exact_cosines(chunks: list[Chunk], query: Sequence[float] | np.ndarray) -> dict[str, float]:
    """Each chunk's cosine similarity to ``query``, by numpy."""
    m = np.array([c.embedding for c in chunks], dtype=np.float64)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    q = np.asarray(query, dtype=np.float64)
    scores = m @ (q / np.linalg.norm(q))
    return {c.id: float(s) for c, s in zip(chunks, scores, strict=True)}


def exact_top(chunks: list[Chunk], query: np.ndarray, k: int) -> list[tuple[str, float]]:
    """The ids and cosine scores of the ``k`` chunks nearest ``query``, by numpy."""
    return sorted(exact_cosines(chunks, query).items(), key=lambda pair: -pair[1])[:k]
