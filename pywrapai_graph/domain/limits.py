"""Client-side limits on what one process sends to one provider key."""

from __future__ import annotations

from dataclasses import dataclass

from pywrapai_graph.errors import InvalidArgumentError

__all__ = ["Limits"]


def _positive(name: str, value: object, kind: type) -> None:
    if value is None:
        return
    numeric = isinstance(value, kind) or (kind is float and isinstance(value, int))
    if isinstance(value, bool) or not numeric or not value > 0:  # type: ignore[operator]
        raise InvalidArgumentError(f"Limits.{name} must be a number > 0 or None, got {value!r}")


@dataclass(frozen=True, slots=True)
class Limits:
    """What one process may send to one provider key (None: no limit of that kind).

    Every ``LLM`` and ``Embedder`` of the process that names the same provider and key with
    limits shares one budget. Token counts are estimated before a request (4 characters per
    token of its input, plus its ``max_tokens``) and corrected by the usage the provider
    reports.

    Attributes:
        requests_per_minute: requests started in any 60 s window.
        tokens_per_minute: tokens (input plus output) of the requests in any 60 s window.
        max_in_flight: requests open at once (a stream holds its slot until it ends).
        max_wait_s: the longest a call waits for its turn; a longer wait is a
            ``LimitWaitError`` (a ``RateLimitError``, so a fallback chain moves on).
    """

    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    max_in_flight: int | None = None
    max_wait_s: float = 60.0

    def __post_init__(self) -> None:
        _positive("requests_per_minute", self.requests_per_minute, int)
        _positive("tokens_per_minute", self.tokens_per_minute, int)
        _positive("max_in_flight", self.max_in_flight, int)
        _positive("max_wait_s", self.max_wait_s, float)
