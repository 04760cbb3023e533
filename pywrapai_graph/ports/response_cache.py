"""The response-cache port: remembers complete responses by request key."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pywrapai_graph.domain import LLMResponse

__all__ = ["ResponseCache"]


@runtime_checkable
class ResponseCache(Protocol):
    """A cache of chat responses keyed by a digest of the request.

    Implementations must be safe to share between threads: one cache typically serves every
    copy made with ``GraphLLM.with_system_prompt``.
    """

    def get(self, key: str) -> LLMResponse | None:
        """Return the cached response for ``key``, or None."""
        ...

    def set(self, key: str, response: LLMResponse) -> None:
        """Remember ``response`` under ``key``."""
        ...

    def clear(self) -> None:
        """Forget everything."""
        ...

    def __len__(self) -> int:
        """Number of cached responses."""
        ...
