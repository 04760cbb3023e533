"""What a fallback chain tried before the model that answered."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FailedAttempt"]


@dataclass(frozen=True, slots=True)
class FailedAttempt:
    """A model of a fallback chain that failed, so the next one was asked.

    Attributes:
        provider: the provider that failed, e.g. "openai".
        model: the model that was asked.
        error: the class name of the typed error it failed with (``RateLimitError``,
            ``ProviderTimeoutError``, ``ProviderUnavailableError``...).
        status_code: the HTTP status, when the provider answered with one.
    """

    provider: str
    model: str
    error: str
    status_code: int | None = None

    def __str__(self) -> str:
        status = f" HTTP {self.status_code}" if self.status_code is not None else ""
        return f"{self.provider}/{self.model} ({self.error}{status})"
