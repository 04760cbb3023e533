"""A stdio transport whose reads are bounded (the SDK's ``stdio_client``, reading lines our way).

The SDK's reader decodes the server's stdout strictly and joins a line's chunks by string
concatenation with no limit: a 40 MB line is read whole, in time quadratic in its length,
and invalid UTF-8 ends the reader. Ours reads bytes: a line over ``max_line_bytes`` is cut
there (:class:`ReplyTooLarge`, attributed to the request whose id opens it; the rest of the
line is skipped, not kept), and a line that is not UTF-8 or not JSON-RPC becomes a
:class:`DamagedReply` for the guard (see :mod:`._guard`). Starting and stopping the process
stay the SDK's: its own new process group, then stdin closed, SIGTERM and SIGKILL to the
group, each bounded.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from typing import TextIO

from pywrapai_graph.adapters.mcp._guard import DamagedReply, Guard, Inbound, ReplyTooLarge
from pywrapai_graph.errors import MissingExtraError

try:
    import anyio
    import mcp_types
    from anyio.abc import ByteReceiveStream
    from anyio.streams.memory import MemoryObjectSendStream
    from mcp import StdioServerParameters
    from mcp.client._transport import TransportStreams
    from mcp.client.stdio import (
        _create_platform_compatible_process,
        _stop_server_process,
        get_default_environment,
    )
    from mcp.shared.message import SessionMessage
except ImportError as exc:  # this module loads only when an MCP server is configured
    raise MissingExtraError("mcp", "mcp") from exc

__all__ = ["Lines", "bounded_stdio"]

#: where a reply's id is looked for: its first bytes (the SDK writes ``jsonrpc``, ``id`` first)
_HEAD = 256
_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,64}")')


class Lines:
    """Splits the server's output into JSON-RPC messages, no line longer than ``limit``."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._parts: list[bytes] = []
        self._size = 0
        self._head = b""
        self._skipping = False  # the current line was cut: drop the rest of it

    def feed(self, chunk: bytes) -> list[Inbound]:
        """The messages (or damaged replies) ``chunk`` completes."""
        out: list[Inbound] = []
        start = 0
        while start <= len(chunk):
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if not self._skipping:
                self._take(piece, out)
            if end < 0:
                break
            line = b"".join(self._parts)
            if not self._skipping and line.strip():  # blank lines carry nothing
                out.append(_parsed(line))
            self._parts, self._size, self._head, self._skipping = [], 0, b"", False
            start = end + 1
        return out

    def _take(self, piece: bytes, out: list[Inbound]) -> None:
        if len(self._head) < _HEAD:
            self._head += piece[: _HEAD - len(self._head)]
        self._size += len(piece)
        if self._size > self._limit:
            out.append(ReplyTooLarge(self._size, self._limit, _id_in(self._head)))
            self._parts, self._skipping = [], True
        elif piece:
            self._parts.append(piece)


def _id_in(head: bytes) -> mcp_types.RequestId | None:
    found = _ID.search(head)
    if found is None:
        return None
    value = found.group(1).decode("utf-8", "replace")
    return value.strip('"') if value.startswith('"') else int(value)


def _parsed(line: bytes) -> Inbound:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return DamagedReply("a reply that is not UTF-8", _id_in(line[:_HEAD]))
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(text, by_name=False))
    except ValueError:
        return DamagedReply("a line that is not a JSON-RPC message", _id_in(line[:_HEAD]))


@contextlib.asynccontextmanager
async def bounded_stdio(
    params: StdioServerParameters, errlog: TextIO, max_line_bytes: int, guard: Guard
) -> AsyncIterator[TransportStreams]:
    """The server of ``params`` started, its stdout read in lines of at most
    ``max_line_bytes``; stopped and reaped on exit (as the SDK's ``stdio_client`` does),
    terminated at once when ``guard`` found it stuck."""
    process = await _create_platform_compatible_process(
        command=params.command,
        args=params.args,
        env=get_default_environment() | (params.env or {}),
        errlog=errlog,
        cwd=params.cwd,
    )
    to_session, read_stream = anyio.create_memory_object_stream[Inbound](0)
    write_stream, from_session = anyio.create_memory_object_stream[SessionMessage](0)
    stdin, stdout = process.stdin, process.stdout
    assert stdin is not None, "the server is spawned with pipes"
    assert stdout is not None, "the server is spawned with pipes"

    async def writer() -> None:
        try:
            async with from_session:
                async for message in from_session:
                    json = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await stdin.send((json + "\n").encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await to_session.aclose()  # the session sees the connection end

    async with anyio.create_task_group() as tg:
        tg.start_soon(_read, stdout, to_session, Lines(max_line_bytes))
        tg.start_soon(writer)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                read_stream.close()  # the reader now drains stdout: a server stuck writing exits
                write_stream.close()
                if guard.stuck:  # it would not notice its stdin closing
                    with contextlib.suppress(ProcessLookupError):
                        process.terminate()
                await _stop_server_process(process)
                await to_session.aclose()
            tg.cancel_scope.cancel()


async def _read(
    stdout: ByteReceiveStream, session: MemoryObjectSendStream[Inbound], lines: Lines
) -> None:
    """Deliver the server's messages until its stdout ends; once the session is gone, drain
    it (discarding) until it closes."""
    delivering = True
    async with session:
        with contextlib.suppress(
            anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError
        ):
            while True:
                chunk = await stdout.receive()
                for item in lines.feed(chunk) if delivering else ():
                    try:
                        await session.send(item)
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                        delivering = False
                        break
