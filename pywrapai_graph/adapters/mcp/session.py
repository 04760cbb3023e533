"""A connection to one MCP server over stdio or streamable HTTP (the official ``mcp`` SDK).

The session lives on a :class:`LoopThread` of its own (see there why); :meth:`open` /
:meth:`aopen` start it and take the tool listing, :meth:`acall` submits calls to it from
any loop, and :meth:`close` / :meth:`aclose` end it: the SDK then closes the server's stdin,
waits, and terminates and reaps its process (stdio), or ends the HTTP session and closes
its connections. A server that goes away during a call (its process killed, its endpoint
gone) fails that call with :class:`ToolServerError` and the session is wound down at once,
so no process is left unreaped; the next call connects again (a stdio server is started
again once the dead process was reaped).

A hostile or broken server cannot make calls wait for their timeout: replies are read up to
``max_reply_bytes`` (a longer one fails its call with ``ToolResultTooLargeError``), and a
reply the protocol does not allow fails the call it was meant for at once (see
:mod:`._guard`). After a call that timed out or was answered badly, the next call first
pings the server; one that does not answer within ``_PROBE_S`` (stuck on the abandoned
call) is stopped and started again. A JSON-RPC error is the server's answer
(``RemoteToolError``) and the session stays.

Secrets (header and environment values) never reach a repr, a log record or an error: the
errors carry the SDK's message redacted, with these values masked.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Mapping
from typing import Any

from pywrapai_graph.adapters.mcp._guard import DamagedReply, Guard, ReplyTooLarge
from pywrapai_graph.adapters.mcp._loop_thread import LoopThread
from pywrapai_graph.adapters.mcp._results import result_text
from pywrapai_graph.adapters.mcp._transports import HttpTarget, StdioTarget, Target, connected
from pywrapai_graph.domain.remote_tool import RemoteToolSpec
from pywrapai_graph.errors import (
    InvalidStateError,
    MissingExtraError,
    PyWrapAIError,
    RemoteToolError,
    ToolResultTooLargeError,
    ToolServerError,
)
from pywrapai_graph.ports.sync_async import Core, adrive, drive
from pywrapai_graph.ports.tool_server import ToolServer
from pywrapai_graph.redaction import redact, scrubbed

try:
    import anyio
    import httpx2
    import mcp_types
    from mcp import Client
    from mcp.shared.exceptions import MCPError
except ImportError as exc:  # this module loads only when an MCP server is configured
    raise MissingExtraError("mcp", "mcp") from exc

__all__ = ["HttpTarget", "MCPSession", "StdioTarget"]

_log = logging.getLogger(__name__)
#: what an opening waits for: the server's tool listing
Ready = concurrent.futures.Future[list[RemoteToolSpec]]
#: pages of a tool listing read at most (a server that pages forever cannot hang an open)
_MAX_PAGES = 100
#: seconds :meth:`MCPSession.close` waits for the SDK's shutdown (stdin closed, then
#: SIGTERM, then SIGKILL: about 4 s at worst for a stdio server that ignores all three)
_CLOSE_TIMEOUT_S = 10.0
#: bytes of one reply read at most (a stdio server's line): beyond, the call fails at once
DEFAULT_MAX_REPLY_BYTES = 8 * 1024 * 1024
#: seconds a suspect session (a call abandoned or answered badly) has to answer a ping
#: before the next call: a server still stuck on that call is stopped and started again
_PROBE_S = 2.0


class MCPSession(ToolServer):
    """One MCP server's session, usable from any thread and any event loop.

    Args:
        name: the server's name in errors and logs.
        target: how to reach it.
        connect_timeout_s: seconds :meth:`open` waits for the server to start, answer the
            handshake and list its tools.
        max_reply_bytes: bytes of one reply (a stdio server's line) read at most: a longer
            one is cut there and its call fails at once with ``ToolResultTooLargeError``.
    """

    def __init__(
        self,
        name: str,
        target: Target,
        *,
        connect_timeout_s: float = 30.0,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
    ) -> None:
        self._name = name
        self._target = target
        self._secrets = target.secrets()
        self._connect_timeout_s = connect_timeout_s
        self._max_reply_bytes = max_reply_bytes
        self._lock = threading.Lock()
        self._runner: LoopThread | None = None
        self._client: Client | None = None  # read and written on the runner's loop only
        self._guard = Guard()  # the current connection's (runner's loop only)
        self._suspect = False  # a call was abandoned or answered badly: ping before the next
        self._stop: asyncio.Event | None = None  # set: the serving task leaves the session
        self._serving: asyncio.Task[None] | None = None
        self._giving_up: anyio.CancelScope | None = None  # cancelled: the serving task gives up
        self._tools: list[RemoteToolSpec] | None = None
        self._gone = ""  # why the session ended by itself ("" while it has not)
        self._restart: asyncio.Lock | None = None  # one reconnection at a time (runner's loop)

    @property
    def name(self) -> str:
        return self._name

    @property
    def is_open(self) -> bool:
        """True between a successful open and a close, unless the server went away (the
        next call then connects again)."""
        return self._runner is not None and self._tools is not None and not self._gone

    @property
    def thread(self) -> threading.Thread | None:
        """The thread that holds the session while it is open."""
        runner = self._runner
        return runner.thread if runner is not None else None

    def __repr__(self) -> str:
        state = "open" if self.is_open else "closed"
        return f"MCPSession({self._name!r}, {self._target.describe()}, {state})"

    # ------------------------------------------------------------------ open and close
    def _start(self) -> Ready:
        with self._lock:
            if self._runner is not None:
                raise InvalidStateError(f"MCP server {self._name!r} is already open")
            runner = LoopThread(f"pywrapai-mcp-{self._name}")
            ready: Ready = concurrent.futures.Future()
            runner.submit(self._serve(ready))
            self._runner, self._gone = runner, ""
            return ready

    def _timed_out(self) -> ToolServerError:
        return ToolServerError(
            f"MCP server {self._name!r} ({self._target.describe()}) did not start, answer the "
            f"handshake and list its tools within {self._connect_timeout_s:g} s; check that it "
            "runs on its own, or raise connect_timeout_s",
            server=self._name,
        )

    def open(self) -> None:
        """Start (stdio) or reach (HTTP) the server, shake hands and take its tool listing.

        Raises:
            ToolServerError: the server could not be started or reached, failed the
                handshake, or took longer than ``connect_timeout_s``.
            InvalidStateError: the session is already open.
        """
        timeout = self._connect_timeout_s
        drive(
            self._opening(),
            lambda ready: ready.result(timeout) if ready is not None else self.close(),
        )

    async def aopen(self) -> None:
        """:meth:`open` without blocking the running loop."""
        await adrive(self._opening(), self._await_or_close)

    def _opening(self) -> Core[Ready | None, None]:
        """:meth:`open` and :meth:`aopen`, written once: yields the listing to wait for
        (up to ``connect_timeout_s``), or None to close the session after a failure."""
        ready = self._start()
        try:
            self._tools = yield ready
        except BaseException as exc:
            yield None
            if isinstance(exc, TimeoutError):
                raise self._timed_out() from None
            raise

    async def _await_or_close(self, ready: Ready | None) -> list[RemoteToolSpec] | None:
        if ready is None:
            await self.aclose()
            return None
        async with asyncio.timeout(self._connect_timeout_s):
            return await asyncio.wrap_future(ready)

    def _take_runner(self) -> LoopThread | None:
        with self._lock:
            runner, self._runner, self._tools = self._runner, None, None
            return runner

    def close(self) -> None:
        """End the session (a stdio server's process is stopped and reaped); idempotent."""
        runner = self._take_runner()
        if runner is not None:
            self._shut(runner)
            runner.stop(_CLOSE_TIMEOUT_S)

    async def aclose(self) -> None:
        """:meth:`close` in a worker thread: the running loop is not blocked, and a cancelled
        caller does not cut the shutdown short."""
        await asyncio.to_thread(self.close)

    def _shut(self, runner: LoopThread) -> None:
        """Let the serving task leave the SDK's contexts in order (before the loop stops)."""
        with contextlib.suppress(RuntimeError):
            finished = runner.submit(self._release())
            if not runner.in_loop():
                with contextlib.suppress(concurrent.futures.TimeoutError, Exception):
                    finished.result(_CLOSE_TIMEOUT_S)

    async def _release(self) -> None:
        task = self._serving
        if task is None:
            return
        if self._client is None and self._giving_up is not None:  # connecting: give up on it
            self._giving_up.cancel()
        elif self._stop is not None:
            self._stop.set()
        await asyncio.wait({task})

    # ------------------------------------------------------------------ the serving task
    async def _serve(self, ready: Ready) -> None:
        self._stop = asyncio.Event()
        self._serving = asyncio.current_task()
        # Giving up cancels this scope, never the task: the SDK's shutdown (stdin closed, the
        # process stopped, its exit awaited, its transport closed) is shielded from anyio's
        # cancellation only; a Task.cancel() would cut it short and leave the child unreaped.
        with anyio.CancelScope() as self._giving_up:
            try:
                async with connected(self._target, self._max_reply_bytes) as (client, guard):
                    tools = await self._list(client)
                    self._client, self._guard, self._suspect = client, guard, False
                    _settle(ready, tools)
                    await self._stop.wait()
            except BaseException as exc:  # an exception group, a cancellation...
                if not ready.done():
                    _fail(ready, self._connect_error(exc))
                elif not self._gone:
                    self._gone = "its connection failed"
                    _log.info(
                        "MCP server %r: session ended: %s", self._name, self._text(_leaf(exc))
                    )
                if isinstance(exc, asyncio.CancelledError):
                    raise
            finally:
                self._client = None

    async def _list(self, client: Client) -> list[RemoteToolSpec]:
        tools: list[RemoteToolSpec] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(_spec(t) for t in page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    def _connect_error(self, exc: BaseException) -> PyWrapAIError:
        leaf = _leaf(exc)
        if isinstance(leaf, PyWrapAIError):
            return leaf
        if isinstance(leaf, FileNotFoundError | PermissionError):
            why = f"could not start {self._target.describe()}: {type(leaf).__name__}"
        else:
            why = f"failed while connecting ({self._target.describe()}): {self._text(leaf)}"
        error = ToolServerError(f"MCP server {self._name!r} {why}", server=self._name)
        error.__cause__ = scrubbed(leaf, self._secrets)
        return error

    def _text(self, exc: BaseException) -> str:
        return f"{type(exc).__name__}: {redact(str(exc), self._secrets)}"

    # ------------------------------------------------------------------ calls
    def list_tools(self) -> list[RemoteToolSpec]:
        tools = self._tools
        if tools is None:
            raise InvalidStateError(
                f"MCP server {self._name!r} is not open: open it (with ... / open()) first"
            )
        return list(tools)

    async def acall(self, tool: str, arguments: Mapping[str, Any]) -> str:
        runner = self._runner
        if runner is None:
            raise self._unavailable(tool)
        try:
            pending = runner.submit(self._call(tool, dict(arguments)))
        except RuntimeError:
            raise self._unavailable(tool) from None
        try:
            return await asyncio.wrap_future(pending)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                # our caller gave up (a timeout): the call is cancelled there too, but the
                # server may be stuck on it; marked now, before the caller's next call
                self._suspect = True
                raise
            raise self._lost(tool, "the session was closed or lost during the call") from None

    def _unavailable(self, tool: str) -> ToolServerError:
        return ToolServerError(
            f"MCP server {self._name!r} is not open: cannot call {tool!r}; open it first "
            "(`with server:`, open(), or the container's tools)",
            server=self._name,
            tool=tool,
        )

    def _lost(self, tool: str, why: str) -> ToolServerError:
        self._gone = self._gone or "it went away during a call"
        return ToolServerError(
            f"MCP server {self._name!r} went away while calling {tool!r}: {why}; the call may "
            "or may not have run (the next call connects again)",
            server=self._name,
            tool=tool,
        )

    async def _call(self, tool: str, arguments: dict[str, Any]) -> str:
        client = await self._usable()
        guard = self._guard
        try:
            result = await client.call_tool(tool, arguments)
        except Exception as exc:  # typed below, outside this block: not even its __context__
            failure = exc
        else:
            if result.is_error:
                raise RemoteToolError(
                    f"tool {tool!r} on MCP server {self._name!r} failed: "
                    f"{redact(result_text(result), self._secrets)}",
                    tool=tool,
                    server=self._name,
                )
            return result_text(result)
        lost = isinstance(failure, MCPError) and failure.code == mcp_types.CONNECTION_CLOSED
        if lost and not guard.ended:  # the server's error, or the SDK's for a lost stream?
            lost = not guard.verbatim and not await self._answers(client)
        raise self._call_error(tool, failure, lost)

    async def _usable(self) -> Client:
        """The session's client: a suspect session's server must answer a ping first, a
        session that ended is started again; concurrent callers share one of each.

        Raises:
            ToolServerError: the server could not be started or reached in time.
        """
        if self._client is not None and not self._suspect:
            return self._client
        self._restart = self._restart or asyncio.Lock()
        async with self._restart:
            if self._client is not None and self._suspect:
                await self._probe(self._client)
            return self._client or await self._reconnect()

    @staticmethod
    async def _answers(client: Client) -> bool:
        """Whether the server answers a ping within ``_PROBE_S``."""
        with anyio.move_on_after(_PROBE_S), contextlib.suppress(Exception):
            await client.session.send_ping()
            return True
        return False

    async def _probe(self, client: Client) -> None:
        """Keep a suspect session if its server answers a ping in time, else end it (a
        server stuck on an abandoned call would make every next call wait)."""
        if await self._answers(client):
            self._suspect = False
            return
        _log.info("MCP server %r: no answer to a ping after a failed call; restarting", self._name)
        self._gone = self._gone or "it stopped answering"
        self._guard.stuck = True
        self._end_session()

    async def _reconnect(self) -> Client:
        """Connect again after the session ended (a stdio server is started again, once
        the previous process was reaped); called under ``self._restart``."""
        if self._serving is not None:
            await asyncio.wait({self._serving})
        ready: Ready = concurrent.futures.Future()
        self._serving = asyncio.get_running_loop().create_task(self._serve(ready))
        try:
            await self._await_or_close(ready)
        except TimeoutError:
            if self._giving_up is not None:  # the new task's: it started before this timeout
                self._giving_up.cancel()
            raise self._timed_out() from None
        _log.info("MCP server %r: connected again (%s)", self._name, self._gone)
        self._gone = ""
        return self._connected_client()

    def _connected_client(self) -> Client:
        client = self._client
        assert client is not None  # set by _serve before it settles ``ready``
        return client

    def _call_error(self, tool: str, exc: Exception, lost: bool) -> PyWrapAIError:
        """Our error for what the SDK raised during a call (the SDK's own kept redacted);
        ``lost``: the connection ended (a server may answer with the SDK's "connection
        closed" code too: then its error is its answer)."""
        if isinstance(exc, MCPError) and isinstance(exc.data, DamagedReply):
            return self._damaged(tool, exc.data)
        if isinstance(exc, MCPError) and not lost:
            return RemoteToolError(
                f"MCP server {self._name!r} refused the call to {tool!r}: "
                f"{redact(exc.message, self._secrets)}",
                tool=tool,
                server=self._name,
            )
        if isinstance(exc, MCPError):
            return self._wind_down(tool, "the connection closed (did its process exit?)")
        if isinstance(exc, _TRANSPORT_ERRORS):
            return self._wind_down(tool, self._text(exc), exc)
        error = ToolServerError(  # the SDK failed otherwise (a malformed result...)
            f"MCP server {self._name!r}: calling {tool!r} failed: {self._text(exc)}",
            server=self._name,
            tool=tool,
        )
        error.__cause__ = scrubbed(exc, self._secrets)
        return error

    def _damaged(self, tool: str, damage: DamagedReply) -> PyWrapAIError:
        """A reply cut at the read limit, or one that broke the protocol: the session
        stays, but the server must answer a ping before the next call."""
        self._suspect = True
        if isinstance(damage, ReplyTooLarge):
            return ToolResultTooLargeError(tool, damage.size, damage.limit)
        return ToolServerError(
            f"MCP server {self._name!r} broke the protocol while calling {tool!r}: it sent "
            f"{damage}; the call may or may not have run",
            server=self._name,
            tool=tool,
        )

    def _end_session(self) -> None:
        """End the session now; the next call connects again once it has ended (the SDK
        stops and reaps a stdio server's process)."""
        self._client = None
        if self._stop is not None:
            self._stop.set()

    def _wind_down(
        self, tool: str, why: str, cause: BaseException | None = None
    ) -> ToolServerError:
        """The connection is lost: end the session now (the SDK reaps a dead process)."""
        error = self._lost(tool, why)
        if cause is not None:
            error.__cause__ = scrubbed(cause, self._secrets)
        self._end_session()
        return error


_TRANSPORT_ERRORS = (
    httpx2.HTTPError,
    OSError,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    anyio.EndOfStream,
)


def _spec(tool: mcp_types.Tool) -> RemoteToolSpec:
    return RemoteToolSpec(tool.name, tool.description or "", dict(tool.input_schema))


def _settle(future: Ready, tools: list[RemoteToolSpec]) -> None:
    with contextlib.suppress(concurrent.futures.InvalidStateError):  # the opener gave up
        future.set_result(tools)


def _fail(future: Ready, error: BaseException) -> None:
    with contextlib.suppress(concurrent.futures.InvalidStateError):
        future.set_exception(error)


def _leaf(exc: BaseException) -> BaseException:
    """The first real failure inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        exc = (inner or list(exc.exceptions))[0]
    return exc
