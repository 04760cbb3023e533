"""How an MCP session reaches its server: a subprocess over stdio, or streamable HTTP."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any, TextIO

from pywrapai_graph.adapters.mcp._guard import Guard, guarded
from pywrapai_graph.adapters.mcp._stdio import bounded_stdio
from pywrapai_graph.errors import MissingExtraError, RuntimeFailure
from pywrapai_graph.redaction import redact

try:
    import httpx2
    from mcp import Client, StdioServerParameters
    from mcp.client.streamable_http import streamable_http_client
except ImportError as exc:  # this module loads only when an MCP server is configured
    raise MissingExtraError("mcp", "mcp") from exc

__all__ = ["HttpTarget", "StdioTarget", "Target", "connected"]


@dataclass(frozen=True, slots=True)
class StdioTarget:
    """A server started as a subprocess, spoken to over its stdin and stdout.

    ``env`` is added to a minimal inherited environment (PATH, HOME...), as the SDK does.
    """

    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    cwd: str | None = None

    def secrets(self) -> list[str]:
        return list(self.env.values())

    def describe(self) -> str:
        return f"command {os.path.basename(self.command)!r}"


@dataclass(frozen=True, slots=True)
class HttpTarget:
    """A server at a streamable-HTTP endpoint; ``headers`` go with every request."""

    url: str
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    timeout_s: float = 30.0

    def secrets(self) -> list[str]:
        return list(self.headers.values())

    def describe(self) -> str:
        return f"endpoint {redact(self.url, self.secrets())!r}"


Target = StdioTarget | HttpTarget


@contextlib.asynccontextmanager
async def connected(target: Target, max_reply_bytes: int) -> AsyncIterator[tuple[Client, Guard]]:
    """An initialized MCP client session with ``target``, closed (its process stopped and
    reaped, its HTTP session ended) on exit, and the guard of its messages; a reply is read
    up to ``max_reply_bytes`` (a stdio server's line by our reader, an HTTP server's event
    by the SDK's, its JSON body by :class:`_BoundedJson`)."""
    guard = Guard(verbatim=isinstance(target, StdioTarget))
    async with contextlib.AsyncExitStack() as stack:
        if isinstance(target, StdioTarget):
            params = StdioServerParameters(
                command=target.command,
                args=list(target.args),
                env=dict(target.env) or None,
                cwd=target.cwd,
            )
            transport = bounded_stdio(params, _server_errlog(stack), max_reply_bytes, guard)
        else:
            http = await stack.enter_async_context(
                httpx2.AsyncClient(
                    headers=dict(target.headers),
                    timeout=httpx2.Timeout(target.timeout_s, read=300.0),
                    transport=_BoundedJson(max_reply_bytes),
                )
            )
            transport = streamable_http_client(
                target.url, http_client=http, max_sse_event_size=max_reply_bytes
            )
        client = await stack.enter_async_context(Client(guarded(transport, guard), mode="legacy"))
        try:
            yield client, guard
        finally:
            guard.ended = True  # before the SDK fails the calls still in flight


class _BoundedJson(httpx2.AsyncBaseTransport):
    """HTTP whose JSON bodies are read up to ``limit`` bytes (the SDK reads them whole; its
    SSE events it bounds itself): a longer one fails its read with ``StreamError``, which
    the SDK reports as an unreadable reply (the guard makes it ``ReplyTooLarge``)."""

    def __init__(self, limit: int) -> None:
        self._inner = httpx2.AsyncHTTPTransport()
        self._limit = limit

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        if response.headers.get("content-type", "").lower().startswith("application/json"):
            response.stream = _Bounded(response.stream, self._limit)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


class _BodyOverLimit(RuntimeFailure, httpx2.StreamError):
    """A JSON reply body longer than the read limit: one of ours, and a ``StreamError`` for
    the SDK, which reports it as an unreadable reply."""


class _Bounded(httpx2.AsyncByteStream):
    def __init__(self, inner: Any, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        async for chunk in self._inner:
            size += len(chunk)
            if size > self._limit:
                raise _BodyOverLimit(f"a reply over the {self._limit} byte limit")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


def _server_errlog(stack: contextlib.AsyncExitStack) -> TextIO:
    """Where a stdio server's stderr goes: ours when it is a real file, else nowhere."""
    try:
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        devnull: IO[str] = open(os.devnull, "w")  # noqa: SIM115 - closed by the stack
        stack.callback(devnull.close)
        return devnull  # type: ignore[return-value]
    return sys.stderr
