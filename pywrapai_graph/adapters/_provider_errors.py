"""Provider error translation: SDK exceptions and HTTP statuses become our exception tree."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from pywrapai_graph.adapters._transport import http_errors
from pywrapai_graph.adapters._unreachable import cannot_reach, endpoint_of
from pywrapai_graph.errors import (
    AuthenticationError,
    BadRequestError,
    ProviderError,
    ProviderTimeoutError,
    ProviderUnavailableError,
    RateLimitError,
)
from pywrapai_graph.redaction import redact, scrubbed

__all__ = [
    "error_for_status",
    "retry_after_seconds",
    "stainless_errors",
    "status_code_errors",
]


def retry_after_seconds(headers: Any) -> float | None:
    """The ``retry-after`` (or ``retry-after-ms``) header in seconds, when present."""
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return float(ms) / 1000.0
        value = headers.get("retry-after")
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def error_for_status(
    status: int | None,
    message: str,
    *,
    provider: str,
    retry_after: float | None = None,
    secrets: Iterable[str | None] = (),
    where: str | None = None,
) -> ProviderError:
    """Our exception for an HTTP status from ``provider`` at ``where`` (message redacted)."""
    text = f"{provider}: {redact(message, secrets)}"
    if status in (401, 403):
        at = f" at {where}" if where else ""
        return AuthenticationError(
            f"{provider}{at}: the server rejected the credentials (HTTP {status}): "
            f"{redact(message, secrets)} (check the API key for {provider})",
            provider=provider,
            status_code=status,
        )
    if status == 429:
        return RateLimitError(text, provider=provider, status_code=status, retry_after=retry_after)
    if status is not None and 400 <= status < 500:
        return BadRequestError(text, provider=provider, status_code=status)
    return ProviderUnavailableError(text, provider=provider, status_code=status)


@contextmanager
def stainless_errors(sdk: ModuleType, provider: str, secret: str | None) -> Iterator[None]:
    """Translate the exceptions of the OpenAI and Anthropic SDKs (same generator, same tree)."""
    try:
        yield
    except sdk.APITimeoutError as exc:
        raise ProviderTimeoutError(
            _unreachable(provider, exc, [secret], timeout=True), provider=provider
        ) from scrubbed(exc, [secret])
    except sdk.APIStatusError as exc:
        raise error_for_status(
            exc.status_code,
            str(exc.message),
            provider=provider,
            retry_after=retry_after_seconds(exc.response.headers),
            secrets=[secret],
            where=endpoint_of(exc),
        ) from scrubbed(exc, [secret])
    except sdk.APIConnectionError as exc:
        raise ProviderUnavailableError(
            _unreachable(provider, exc, [secret]), provider=provider
        ) from scrubbed(exc, [secret])


@contextmanager
def status_code_errors(
    api_error: type[Exception],
    provider: str,
    secret: str | None,
    status: str,
    message: str,
    headers: Callable[[Exception], Any] | None = None,
) -> Iterator[None]:
    """Translate SDKs whose errors carry a status attribute (google-genai, ollama), plus the
    raw HTTP-stack timeouts and transport errors they let through. ``headers(exc)`` gives
    the response headers (for ``Retry-After``) when the error itself does not carry them."""
    timeouts, transports = http_errors()
    try:
        yield
    except api_error as exc:
        raise error_for_status(
            getattr(exc, status, None),
            str(getattr(exc, message, None) or exc),
            provider=provider,
            retry_after=retry_after_seconds(headers(exc) if headers else None),
            secrets=[secret],
            where=endpoint_of(exc),
        ) from scrubbed(exc, [secret])
    except timeouts as exc:
        raise ProviderTimeoutError(
            _unreachable(provider, exc, [secret], timeout=True), provider=provider
        ) from scrubbed(exc, [secret])
    except transports as exc:
        raise ProviderUnavailableError(
            _unreachable(provider, exc, [secret]), provider=provider
        ) from scrubbed(exc, [secret])


def _unreachable(
    provider: str, exc: BaseException, secrets: list[str | None], *, timeout: bool = False
) -> str:
    where = endpoint_of(exc) or "its API (address unknown)"
    message = cannot_reach(provider, where, exc, reason="timeout" if timeout else None)
    return redact(message, secrets)
