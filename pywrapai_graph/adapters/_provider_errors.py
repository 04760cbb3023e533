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
    PyWrapAIError,
    RateLimitError,
    ResponseFormatError,
)
from pywrapai_graph.redaction import redact, scrubbed

__all__ = [
    "decoding",
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
def _http_stack_errors(provider: str, secret: str | None) -> Iterator[None]:
    """The raw timeouts and transport errors of the HTTP stacks (httpx, httpx2, aiohttp) that
    SDKs let through, e.g. a connection closed in the middle of a body or a stream."""
    timeouts, transports = http_errors()
    try:
        yield
    except PyWrapAIError:
        raise  # ProviderTimeoutError is also a TimeoutError: never wrap ours again
    except timeouts as exc:
        raise ProviderTimeoutError(
            _unreachable(provider, exc, [secret], timeout=True), provider=provider
        ) from scrubbed(exc, [secret])
    except transports as exc:
        raise ProviderUnavailableError(
            _unreachable(provider, exc, [secret]), provider=provider
        ) from scrubbed(exc, [secret])


@contextmanager
def stainless_errors(sdk: ModuleType, provider: str, secret: str | None) -> Iterator[None]:
    """Translate the exceptions of the OpenAI and Anthropic SDKs (same generator, same tree),
    and the raw HTTP errors they let through while a stream is read."""
    with _http_stack_errors(provider, secret):
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
    with _http_stack_errors(provider, secret):
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


@contextmanager
def decoding(
    provider: str, raw: Callable[[], str | None], secrets: Iterable[str | None] = ()
) -> Iterator[None]:
    """Turn a failure to decode a reply into ResponseFormatError with the raw body.

    ``raw`` is asked for the body only on failure; a JSON error's own document wins. The
    decoder's own exception is kept as a scrubbed copy (its text may quote the body, and a
    body may echo a key).
    """
    try:
        yield
    except ResponseFormatError as exc:
        if not exc.raw:  # raised by our translation, which has no body at hand
            exc.raw = raw() or ""
        raise
    except PyWrapAIError:
        raise
    except (ValueError, TypeError, AttributeError, KeyError, IndexError) as exc:
        body = getattr(exc, "doc", None)
        if not isinstance(body, str):
            body = raw()
        raise ResponseFormatError(
            f"{provider}: the reply is not a valid response ({type(exc).__name__}); "
            "its raw body is in the error's .raw attribute",
            raw=body if body is not None else "",
        ) from scrubbed(exc, list(secrets))


def _unreachable(
    provider: str, exc: BaseException, secrets: list[str | None], *, timeout: bool = False
) -> str:
    where = endpoint_of(exc) or "its API (address unknown)"
    message = cannot_reach(provider, where, exc, reason="timeout" if timeout else None)
    return redact(message, secrets)
