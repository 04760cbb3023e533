"""Synthetic data for the benchmarks: random unit vectors and chunks, made reproducibly."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

from pywrapai_graph import Chunk

Matrix = npt.NDArray[np.float32]


def unit_vectors(n: int, dim: int, seed: int = 0) -> Matrix:
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((n, dim), dtype=np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    return m


def clustered_vectors(n: int, dim: int, seed: int = 0, clusters: int = 200) -> Matrix:
    """Unit vectors around ``clusters`` centres: closer to real embeddings than pure noise."""
    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(12345).standard_normal((clusters, dim), dtype=np.float32)
    m = centres[rng.integers(0, clusters, n)] + 0.6 * rng.standard_normal(
        (n, dim), dtype=np.float32
    )
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    return m


def chunk_batches(matrix: Matrix, batch: int = 1000) -> Iterator[list[Chunk]]:
    """Chunks with list embeddings (what embedders return), one batch at a time."""
    for start in range(0, matrix.shape[0], batch):
        rows = matrix[start : start + batch]
        yield [
            Chunk(
                text=f"chunk {start + i}",
                doc_id=f"d{(start + i) // 10}",
                id=str(start + i),
                embedding=row,
            )
            for i, row in enumerate(rows.tolist())
        ]
