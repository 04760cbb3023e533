"""An in-memory, thread-safe LRU response cache."""

from __future__ import annotations

import threading
from collections import OrderedDict

from pywrapai_graph.domain import LLMResponse
from pywrapai_graph.errors import InvalidArgumentError
from pywrapai_graph.ports import ResponseCache

__all__ = ["LRUResponseCache"]


class LRUResponseCache(ResponseCache):
    """Keeps the ``max_entries`` most recently used responses.

    Args:
        max_entries: capacity; the least recently used entry is evicted beyond it.

    Raises:
        ValueError: when ``max_entries`` is not positive.
    """

    def __init__(self, max_entries: int = 1024) -> None:
        if max_entries <= 0:
            raise InvalidArgumentError(f"max_entries must be positive, got {max_entries}")
        self._max = max_entries
        self._data: OrderedDict[str, LLMResponse] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> LLMResponse | None:
        with self._lock:
            found = self._data.get(key)
            if found is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return found

    def set(self, key: str, response: LLMResponse) -> None:
        with self._lock:
            self._data[key] = response
            self._data.move_to_end(key)
            while len(self._data) > self._max:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    def __repr__(self) -> str:
        return f"LRUResponseCache(entries={len(self)}, max_entries={self._max})"
