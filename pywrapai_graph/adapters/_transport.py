"""The HTTP stacks under the SDKs: the timeout and transport exception types they let through
raw, and the hooks we hang on their clients (retry logs, the last body and headers)."""

from __future__ import annotations

import functools
import importlib
import logging
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, TypeVar

__all__ = ["BodyRecorder", "http_errors", "log_retries"]

T = TypeVar("T")
_RAW_LIMIT = 64 * 1024  # characters of a bad body kept for inspection
_STREAMED = ("text/event-stream", "ndjson", "eventstream")  # SSE, NDJSON, AWS event streams


@functools.cache  # a call per provider request: the imports are looked up once
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


class BodyRecorder:
    """The last non-streamed response (body, headers) seen in this context, through httpx
    event hooks: a reply the SDK cannot decode is reported with its raw body, and a status
    error without headers in the SDK (Ollama) still yields ``Retry-After``."""

    def __init__(self) -> None:
        self._last: ContextVar[tuple[Any, Any] | None] = ContextVar(
            f"pywrapai-body-{id(self)}", default=None
        )

    @staticmethod
    def _streamed(response: Any) -> bool:
        kind = str(response.headers.get("content-type", ""))
        return any(s in kind for s in _STREAMED)

    def hook(self, response: Any) -> None:
        """httpx ``response`` event hook (sync clients)."""
        if self._streamed(response):
            self._last.set(("", response.headers))
            return
        response.read()  # decoded only if a failure asks for it: most replies never are
        self._last.set((response, response.headers))

    async def ahook(self, response: Any) -> None:
        """httpx ``response`` event hook (async clients)."""
        if self._streamed(response):
            self._last.set(("", response.headers))
            return
        await response.aread()
        self._last.set((response, response.headers))

    def reset(self) -> None:
        """Forget the previous response before a new call."""
        self._last.set(None)

    def body(self) -> str | None:
        """The last body, or None when no response was recorded."""
        last = self._last.get()
        if last is None:
            return None
        return "" if isinstance(last[0], str) else str(last[0].text[:_RAW_LIMIT])

    def headers(self) -> Any:
        """The last response headers, or None."""
        last = self._last.get()
        return last[1] if last is not None else None
