"""``MCPToolServer``: an MCP server's tools in a ``ToolRegistry`` (extra ``[mcp]``).

The MCP SDK (and asyncio) load only when a server is opened, so configuring none costs
nothing and the command line never imports them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING

from pywrapai_graph.application.tools import Tool, ToolRegistry
from pywrapai_graph.application.tools.remote_tools import remote_tools
from pywrapai_graph.errors import InvalidArgumentError, InvalidStateError
from pywrapai_graph.redaction import redact

if TYPE_CHECKING:
    from pywrapai_graph.adapters.mcp.session import MCPSession
    from pywrapai_graph.composition.mcp_settings import MCPServerSettings, MCPSettings

__all__ = ["MCPToolServer", "mcp_servers"]


class MCPToolServer:
    """One MCP server — a subprocess over stdio, or a streamable-HTTP endpoint — whose
    tools an agent may call.

    Open it (``with``, ``async with``, :meth:`open` or :meth:`aopen`), then register its
    tools (:meth:`register`); closing it ends the session and stops a stdio server's
    process. A container opens the servers named under ``mcp.servers`` with its tools and
    closes them on ``shutdown()`` / ``ashutdown()``.

    Args:
        name: the server's name (in errors, logs and reprs).
        command: the program of a stdio server (with ``args``, ``env``, ``cwd``).
        url: the endpoint of a streamable-HTTP server (with ``headers``).
        prefix: put before each tool's name (two servers may both have a ``search``).
        connect_timeout_s: seconds to start, shake hands and list the tools.
        tool_timeout_s: per-call timeout of these tools (None: the agent's
            ``tool_timeout_s``).
        max_result_bytes: result size limit of these tools (None: the agent's). A reply
            is read up to 8 MiB (or six times this limit, the most a text at the limit
            takes JSON-escaped, when that is more): a longer one is cut there and its call
            fails at once with ``ToolResultTooLargeError``.

    Header and environment values are treated as secrets: never in a repr, a log or an
    error.

    Raises:
        ValueError: neither or both of ``command`` and ``url``; options of the other
            transport; an empty name.
    """

    def __init__(
        self,
        name: str,
        *,
        command: str | None = None,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        url: str | None = None,
        headers: Mapping[str, str] | None = None,
        prefix: str = "",
        connect_timeout_s: float = 30.0,
        tool_timeout_s: float | None = None,
        max_result_bytes: int | None = None,
    ) -> None:
        if not name:
            raise InvalidArgumentError("an MCP server needs a name")
        if (command is None) == (url is None):
            raise InvalidArgumentError(
                f"MCP server {name!r}: give command= (a stdio server) or url= (streamable HTTP)"
            )
        if url is not None and (args or env or cwd is not None):
            raise InvalidArgumentError(f"MCP server {name!r}: args, env and cwd need command=")
        if command is not None and headers:
            raise InvalidArgumentError(f"MCP server {name!r}: headers need url=")
        if connect_timeout_s <= 0:
            raise InvalidArgumentError("connect_timeout_s must be positive")
        self.name = name
        self.prefix = prefix
        self._command = command
        self._args = tuple(args)
        self._env = dict(env or {})
        self._cwd = os.fspath(cwd) if cwd is not None else None
        self._url = url
        self._headers = dict(headers or {})
        self._connect_timeout_s = connect_timeout_s
        self._tool_timeout_s = tool_timeout_s
        self._max_result_bytes = max_result_bytes
        self._session: MCPSession | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, name: str, settings: MCPServerSettings) -> MCPToolServer:
        """The server ``mcp.servers.<name>`` of a configuration describes."""
        return cls(
            name,
            command=settings.command,
            args=settings.args,
            env={k: v.get_secret_value() for k, v in settings.env.items()},
            cwd=settings.cwd,
            url=settings.url,
            headers={k: v.get_secret_value() for k, v in settings.headers.items()},
            prefix=settings.prefix,
            connect_timeout_s=settings.connect_timeout_s,
            tool_timeout_s=settings.tool_timeout_s,
        )

    def _new_session(self) -> MCPSession:
        from pywrapai_graph.adapters.mcp.session import (
            DEFAULT_MAX_REPLY_BYTES,
            HttpTarget,
            MCPSession,
            StdioTarget,
        )

        target: StdioTarget | HttpTarget
        if self._command is not None:
            target = StdioTarget(self._command, self._args, self._env, self._cwd)
        else:
            assert self._url is not None
            target = HttpTarget(self._url, self._headers)
        limit = self._max_result_bytes
        return MCPSession(
            self.name,
            target,
            connect_timeout_s=self._connect_timeout_s,
            max_reply_bytes=max(DEFAULT_MAX_REPLY_BYTES, 6 * limit if limit else 0),
        )

    def _connection(self) -> MCPSession:
        """The session, made at the first open (it opens again after a close)."""
        with self._lock:
            if self._session is None:
                self._session = self._new_session()
            return self._session

    # ------------------------------------------------------------------ lifecycle
    def open(self) -> MCPToolServer:
        """Connect and list the server's tools; returns self.

        Raises:
            ToolServerError: the server could not be started or reached in time.
            MissingExtraError: the ``mcp`` package is not installed (extra ``[mcp]``).
            InvalidStateError: the server is already open.
        """
        self._connection().open()
        return self

    async def aopen(self) -> MCPToolServer:
        """:meth:`open` without blocking the running event loop."""
        await self._connection().aopen()
        return self

    def close(self) -> None:
        """End the session (a stdio server's process is stopped and reaped); idempotent."""
        if self._session is not None:
            self._session.close()

    async def aclose(self) -> None:
        """:meth:`close` without blocking the running event loop."""
        if self._session is not None:
            await self._session.aclose()

    def __enter__(self) -> MCPToolServer:
        return self.open()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> MCPToolServer:
        return await self.aopen()

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ tools
    @property
    def is_open(self) -> bool:
        """True while the session is open and the server has not gone away."""
        session = self._session
        return session is not None and session.is_open

    @property
    def session(self) -> MCPSession:
        """The open session.

        Raises:
            InvalidStateError: the server is not open.
        """
        session = self._session
        if session is None or session.thread is None:
            raise InvalidStateError(
                f"MCP server {self.name!r} is not open: use `with server:` or server.open()"
            )
        return session

    def tools(self) -> list[Tool]:
        """A :class:`Tool` per tool the server listed (named ``prefix + name``).

        Raises:
            InvalidStateError: the server is not open.
        """
        return remote_tools(
            self.session,
            prefix=self.prefix,
            timeout_s=self._tool_timeout_s,
            max_result_bytes=self._max_result_bytes,
        )

    def register(self, registry: ToolRegistry) -> list[Tool]:
        """Register every tool of the server in ``registry``; returns them.

        Raises:
            InvalidStateError: the server is not open.
            ValueError: a tool of that name is already registered (give a ``prefix``).
        """
        return [registry.register(t) for t in self.tools()]

    def __repr__(self) -> str:
        where = (
            f"command={self._command!r}" if self._command else f"url={redact(self._url or '')!r}"
        )
        state = "open" if self.is_open else "closed"
        return f"MCPToolServer({self.name!r}, {where}, {state})"


def mcp_servers(settings: MCPSettings) -> list[MCPToolServer]:
    """The (unopened) servers of an ``mcp:`` section, in the order it names them."""
    return [MCPToolServer.from_settings(n, s) for n, s in settings.servers.items()]
