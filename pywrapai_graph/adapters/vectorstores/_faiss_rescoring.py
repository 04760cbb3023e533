"""Hybrid retrieval's re-scoring on FAISS: the cosines of given chunks, from the flat index.

The metadata file maps the chunk ids to their labels, the labels (sorted, one per index row)
to rows, and the rows' unit vectors are read back from the flat index: exact, whatever the
number of chunks, and of one committed generation (the store's snapshot).
"""

from __future__ import annotations

import sqlite3
from abc import abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
import numpy.typing as npt

from pywrapai_graph.adapters.vectorstores._exact_index import prepare_query

__all__ = ["FaissRescoring", "Labels"]

#: FAISS labels (the metadata's ``int_id`` of each index row).
Labels = npt.NDArray[np.int64]


class FaissRescoring:
    """``similarities`` of :class:`FAISSVectorStore`."""

    _faiss: Any
    _index: Any
    _meta: sqlite3.Connection
    _dim: int | None

    @abstractmethod
    def _snapshot(self) -> AbstractContextManager[None]: ...

    @abstractmethod
    def _labels(self) -> Labels: ...

    def similarities(self, query_vector: Sequence[float], ids: Sequence[str]) -> dict[str, float]:
        """Cosines of the stored vectors of ``ids`` (read back from the flat index)."""
        with self._snapshot():
            if self._index is None or self._index.ntotal == 0 or not ids:
                return {}
            q = prepare_query(query_vector, self._dim)
            labels = dict(self._id_labels(ids))
            found = [i for i in ids if i in labels]
            if not found:
                return {}
            rows = np.searchsorted(self._labels(), [labels[i] for i in found])
            flat = self._faiss.downcast_index(self._index.index)
            scores = flat.reconstruct_batch(rows.astype(np.int64)) @ q
        return {i: min(float(x), 1.0) for i, x in zip(found, scores, strict=True)}

    def _id_labels(self, ids: Sequence[str]) -> list[tuple[str, int]]:
        found: list[tuple[str, int]] = []
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            marks = ",".join("?" * len(part))
            query = f"SELECT id, int_id FROM chunks WHERE id IN ({marks})"
            found += self._meta.execute(query, part).fetchall()
        return found
