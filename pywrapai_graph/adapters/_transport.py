"""The timeout and transport exception types of the HTTP stacks that SDKs let through raw."""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["http_errors", "log_retries"]

T = TypeVar("T")


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


_retry_log = logging.getLogger("pywrapai_graph.retries")


def log_retries(
    client: T,
    provider: str,
    *,
    is_async: bool = False,
    record: Callable[[Any], Any] | None = None,
) -> T:
    """Make an OpenAI/Anthropic SDK client log each retry it makes as a WARNING, and hand
    every response to ``record`` (a response hook) when given; returns it.

    A request hook on the SDK's own HTTP client (``client._client``, so its defaults, its
    closing and its retry behaviour stay the SDK's) reads the SDK's retry-count header. A
    client without that attribute is returned unchanged.
    """

    def note(request: Any) -> None:
        retry = request.headers.get("x-stainless-retry-count", "0")
        if retry != "0":
            _retry_log.warning(
                "%s: retrying %s %s (retry %s)",
                provider,
                request.method,
                request.url.path,
                retry,
                extra={"attributes": {"gen_ai.provider.name": provider, "retry": retry}},
            )

    async def anote(request: Any) -> None:
        note(request)

    hooks = getattr(getattr(client, "_client", None), "event_hooks", None)
    if isinstance(hooks, dict):
        hooks.setdefault("request", []).append(anote if is_async else note)
        if record is not None:
            hooks.setdefault("response", []).append(record)
    return client
