"""Metadata as object columns aligned with the vector matrix, one per key filtered on (built
then, kept in step by every write): a filter is one C-level comparison per key."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from pywrapai_graph.ports.store_inputs import same_value

__all__ = ["MetadataColumns"]

Objects = npt.NDArray[np.object_]
Mask = npt.NDArray[np.bool_]
#: Called with the row count: every row's metadata, in row order.
MetadataSource = Callable[[int], Sequence[Mapping[str, Any]]]

_SCALARS = (str, int, float, bool, type(None))
_MISSING = object()  # an absent key: equal to no filter value


class _JSONBool:
    """A bool equal only to the same bool: one C-level ``column == value`` is JSON equality."""

    __slots__ = ("value",)

    def __init__(self, value: bool) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _JSONBool) and other.value is self.value

    def __hash__(self) -> int:
        return hash(self.value)


_TRUE, _FALSE = _JSONBool(True), _JSONBool(False)


def _stored(value: object) -> object:
    """A bool as its :class:`_JSONBool`, any other value as itself."""
    return (_FALSE, _TRUE)[value] if isinstance(value, bool) else value


def _objects(values: Iterable[object], count: int) -> Objects:
    # fromiter keeps each value as one object (a list value is not spread over the array).
    return np.fromiter(map(_stored, values), dtype=object, count=count)


class MetadataColumns:
    """Object columns of the keys filters use, built from ``source`` when first needed."""

    def __init__(self, source: MetadataSource) -> None:
        self._source = source
        self._columns: dict[str, Objects] = {}

    def clear(self) -> None:
        """Forget every column (they are rebuilt on demand)."""
        self._columns.clear()

    def grow(self, capacity: int, rows: int) -> None:
        """Follow the matrix to ``capacity`` rows, keeping the first ``rows``."""
        for key, column in self._columns.items():
            if column.shape[0] < capacity:
                grown = np.empty(capacity, dtype=object)
                grown[:rows] = column[:rows]
                self._columns[key] = grown

    def assign(
        self, rows: npt.NDArray[np.intp] | slice, metadata: Sequence[Mapping[str, Any]]
    ) -> None:
        """Set the values of ``rows`` from their new metadata."""
        for key, column in self._columns.items():
            column[rows] = _objects((m.get(key, _MISSING) for m in metadata), len(metadata))

    def move(self, target: int, source: int) -> None:
        """Row ``source`` now lives at ``target`` (a delete swapped it in)."""
        for column in self._columns.values():
            column[target] = column[source]

    def delete(self, rows: npt.NDArray[np.intp], count: int) -> None:
        """Drop ``rows`` of the first ``count`` rows; the rows after them move up, in order."""
        if not len(rows):
            return
        keep: Mask = np.ones(count, dtype=bool)
        keep[rows] = False
        kept = int(np.count_nonzero(keep))
        for column in self._columns.values():
            column[:kept] = column[:count][keep]
            column[kept:count] = None

    def mask(self, filter: Mapping[str, Any], rows: int, capacity: int) -> Mask:
        """Rows whose metadata has every key of ``filter`` with an equal value."""
        mask: Mask = np.ones(rows, dtype=bool)
        for key, value in filter.items():
            column = self._column(key, rows, capacity)[:rows]
            if isinstance(value, _SCALARS):  # bools compare as _JSONBool: True never equals 1
                mask &= np.asarray(column == _stored(value), dtype=bool)
            else:  # a list value: numpy would spread it, so compare one by one
                mask &= np.fromiter((same_value(v, value) for v in column), dtype=bool, count=rows)
        return mask

    def _column(self, key: str, rows: int, capacity: int) -> Objects:
        column = self._columns.get(key)
        if column is None:
            column = self._columns[key] = np.empty(capacity, dtype=object)
            column[:rows] = _objects((m.get(key, _MISSING) for m in self._source(rows)), rows)
        return column
