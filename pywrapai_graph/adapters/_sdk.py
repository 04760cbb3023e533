"""Helpers every SDK adapter shares: optional imports, error translation, redaction."""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from pywrapai_graph.errors import (
    AuthenticationError,
    BadRequestError,
    ConfigurationError,
    MissingExtraError,
    ProviderError,
    ProviderTimeoutError,
    ProviderUnavailableError,
    RateLimitError,
    ResponseFormatError,
)

__all__ = [
    "drop_none",
    "error_for_status",
    "gemini_client",
    "http_errors",
    "parse_arguments",
    "redact",
    "require",
    "retry_after_seconds",
    "stainless_errors",
    "status_code_errors",
]

# Anything shaped like an API key (OpenAI "sk-...", Anthropic "sk-ant-...", Google "AIza...").
_KEY_SHAPES = re.compile(r"(sk-[A-Za-z0-9_\-*]{6,}|AIza[0-9A-Za-z_\-]{10,})")


def require(module: str, extra: str, package: str | None = None) -> ModuleType:
    """Import an optional SDK, or raise MissingExtraError naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(package or module, extra) from exc


def http_errors() -> tuple[tuple[type[Exception], ...], tuple[type[Exception], ...]]:
    """(timeout exception types, transport exception types) of the HTTP stacks installed.

    SDKs raise them raw: ``httpx`` (ollama), its fork ``httpx2`` (recent google-genai), or
    ``aiohttp`` (google-genai's async transport when aiohttp is installed).
    """
    timeouts: list[type[Exception]] = [TimeoutError]
    transports: list[type[Exception]] = [ConnectionError]
    for name in ("httpx", "httpx2"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        timeouts.append(module.TimeoutException)
        transports.append(module.TransportError)
    try:
        aiohttp = importlib.import_module("aiohttp")
    except ImportError:
        pass
    else:
        transports.append(aiohttp.ClientError)
    return tuple(timeouts), tuple(transports)


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with known secrets and anything key-shaped replaced by ``***``."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return _KEY_SHAPES.sub("***", text)


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
) -> ProviderError:
    """Our exception for an HTTP status from ``provider`` (message redacted)."""
    text = f"{provider}: {redact(message, secrets)}"
    if status in (401, 403):
        return AuthenticationError(
            f"{text} (check the API key for {provider})", provider=provider, status_code=status
        )
    if status == 429:
        return RateLimitError(text, provider=provider, status_code=status, retry_after=retry_after)
    if status is not None and 400 <= status < 500:
        return BadRequestError(text, provider=provider, status_code=status)
    return ProviderUnavailableError(text, provider=provider, status_code=status)


def parse_arguments(raw: str | None, tool_name: str) -> dict[str, Any]:
    """Decode a tool call's JSON arguments.

    Raises:
        ResponseFormatError: the text is not a JSON object (``raw`` keeps it).
    """
    if raw is None or raw.strip() == "":
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ResponseFormatError(
            f"the model sent malformed JSON arguments for tool {tool_name!r}: {exc.msg} "
            f"at position {exc.pos}",
            raw=raw,
        ) from exc
    if not isinstance(value, dict):
        raise ResponseFormatError(
            f"the model sent arguments for tool {tool_name!r} that are not a JSON object",
            raw=raw,
        )
    return value


def drop_none(**values: Any) -> dict[str, Any]:
    """The keyword arguments that were actually given."""
    return {k: v for k, v in values.items() if v is not None}


@contextmanager
def stainless_errors(sdk: ModuleType, provider: str, secret: str | None) -> Iterator[None]:
    """Translate the exceptions of the OpenAI and Anthropic SDKs (same generator, same tree)."""
    try:
        yield
    except sdk.APITimeoutError as exc:
        raise ProviderTimeoutError(f"{provider}: the request timed out", provider=provider) from exc
    except sdk.APIStatusError as exc:
        raise error_for_status(
            exc.status_code,
            str(exc.message),
            provider=provider,
            retry_after=retry_after_seconds(exc.response.headers),
            secrets=[secret],
        ) from exc
    except sdk.APIConnectionError as exc:
        raise ProviderUnavailableError(
            f"{provider}: cannot reach the API: {redact(str(exc), [secret])}", provider=provider
        ) from exc


@contextmanager
def status_code_errors(
    api_error: type[Exception], provider: str, secret: str | None, status: str, message: str
) -> Iterator[None]:
    """Translate SDKs whose errors carry a status attribute (google-genai, ollama), plus the
    raw HTTP-stack timeouts and transport errors they let through."""
    timeouts, transports = http_errors()
    try:
        yield
    except api_error as exc:
        raise error_for_status(
            getattr(exc, status, None),
            str(getattr(exc, message, None) or exc),
            provider=provider,
            secrets=[secret],
        ) from exc
    except timeouts as exc:
        raise ProviderTimeoutError(f"{provider}: the request timed out", provider=provider) from exc
    except transports as exc:
        raise ProviderUnavailableError(
            f"{provider}: cannot reach the server ({type(exc).__name__})", provider=provider
        ) from exc


def gemini_client(
    api_key: str | None, base_url: str | None, timeout: float | None, max_retries: int | None
) -> Any:
    """A ``google.genai.Client`` with our options.

    Raises:
        MissingExtraError: google-genai is not installed.
        ConfigurationError: no API key is available.
    """
    require("google.genai", "gemini", "google-genai")
    from google import genai
    from google.genai import types

    http: dict[str, Any] = {}
    if base_url:
        http["base_url"] = base_url
    if timeout is not None:
        http["timeout"] = int(timeout * 1000)
    if max_retries is not None:
        http["retry_options"] = types.HttpRetryOptions(attempts=max_retries + 1)
    try:
        return genai.Client(
            api_key=api_key, http_options=types.HttpOptions(**http) if http else None
        )
    except ValueError as exc:
        raise ConfigurationError(
            "Gemini needs an API key: set GOOGLE_API_KEY or pass api_key="
        ) from exc
