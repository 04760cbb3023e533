"""How an MCP session reaches its server: a subprocess over stdio, or streamable HTTP."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import IO, TextIO

from pywrapai_graph.adapters.mcp._guard import Guard, guarded
from pywrapai_graph.adapters.mcp._stdio import bounded_stdio
from pywrapai_graph.errors import MissingExtraError
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
    by the SDK's)."""
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


def _server_errlog(stack: contextlib.AsyncExitStack) -> TextIO:
    """Where a stdio server's stderr goes: ours when it is a real file, else nowhere."""
    try:
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        devnull: IO[str] = open(os.devnull, "w")  # noqa: SIM115 - closed by the stack
        stack.callback(devnull.close)
        return devnull  # type: ignore[return-value]
    return sys.stderr
