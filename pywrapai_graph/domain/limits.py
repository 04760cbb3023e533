"""Client-side limits on what one process, or every process sharing a database, sends to one
provider key."""

from __future__ import annotations

from dataclasses import dataclass, field

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
    """What may be sent to one provider key (None: no limit of that kind).

    Every ``LLM`` and ``Embedder`` of the process that names the same provider and key with
    limits shares one budget. With ``shared``, that budget is held by a PostgreSQL database
    instead, and every process (workers, pods, machines) using the same database, provider
    and key shares it. Token counts are estimated before a request (4 characters per token
    of its input, plus its ``max_tokens``) and corrected by the usage the provider reports.

    Attributes:
        requests_per_minute: requests started in any 60 s window.
        tokens_per_minute: tokens (input plus output) of the requests in any 60 s window.
        max_in_flight: requests open at once (a stream holds its slot until it ends).
        max_wait_s: the longest a call waits for its turn; a longer wait is a
            ``LimitWaitError`` (a ``RateLimitError``, so a fallback chain moves on).
        shared: a PostgreSQL DSN (``postgresql://user:password@host/db``) whose database
            holds the budget for every process; None keeps it in this process. Never shown
            in a repr or a message.
    """

    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    max_in_flight: int | None = None
    max_wait_s: float = 60.0
    shared: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        shared: object = self.shared  # a checked value at runtime, whatever its type says
        if shared is not None and not (isinstance(shared, str) and shared.strip()):
            raise InvalidArgumentError("Limits.shared must be a PostgreSQL DSN or None")
        _positive("requests_per_minute", self.requests_per_minute, int)
        _positive("tokens_per_minute", self.tokens_per_minute, int)
        _positive("max_in_flight", self.max_in_flight, int)
        _positive("max_wait_s", self.max_wait_s, float)
