"""Between a transport and the SDK's session: a damaged reply fails its call at once.

The SDK drops what it cannot use — a line that is not JSON-RPC, a reply to an id it never
sent — and waits on: the call it was meant for then waits out its whole timeout. The guard
relays every message and keeps the ids of the requests in flight, so it knows which calls a
damaged reply was meant for and answers them itself, at once, with an error that carries a
:class:`DamagedReply` (as ``MCPError.data``: an object no server can send over the wire).
A reply it cannot attribute (no id, or an id never sent) fails every call in flight: the
server is not answering what it was asked.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import AsyncIterator
from typing import Any

from pywrapai_graph.errors import MissingExtraError

try:
    import anyio
    import mcp_types
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
    from mcp.client._transport import ReadStream, Transport, TransportStreams, WriteStream
    from mcp.shared.dispatcher import coerce_request_id
    from mcp.shared.message import SessionMessage
except ImportError as exc:  # this module loads only when an MCP server is configured
    raise MissingExtraError("mcp", "mcp") from exc

__all__ = ["DamagedReply", "Guard", "ReplyTooLarge", "guarded"]

_log = logging.getLogger(__name__)
#: ids of abandoned requests remembered (their late replies are dropped quietly)
_ABANDONED = 1024
#: how the SDK's HTTP transport reports a reply over the size limit: an event (httpx2's
#: SSEError), or a JSON body our HTTP transport cut (:mod:`._transports`)
_TOO_LARGE = {
    mcp_types.CONNECTION_CLOSED: re.compile(
        r"^SSE stream failed: Server-sent event exceeded the (\d+) byte limit"
    ),
    mcp_types.PARSE_ERROR: re.compile(
        r"^Failed to parse JSON response: a reply over the (\d+) byte limit"
    ),
}

Inbound = SessionMessage | Exception


class DamagedReply(Exception):
    """A reply that could not be used: malformed, or cut at the size limit.

    Attributes:
        request_id: the request it answered, when that could be read from it.
    """

    def __init__(self, why: str, request_id: mcp_types.RequestId | None = None) -> None:
        super().__init__(why)
        self.request_id = request_id


class ReplyTooLarge(DamagedReply):
    """A reply longer than the read limit: reading it stopped there.

    Attributes:
        size: bytes read of it (more than ``limit``).
        limit: the read limit.
    """

    def __init__(self, size: int, limit: int, request_id: mcp_types.RequestId | None) -> None:
        super().__init__(f"a reply of {size:,} bytes or more, over {limit:,}", request_id)
        self.size = size
        self.limit = limit


class Guard:
    """The requests in flight on one connection, and whether it has ended.

    Args:
        verbatim: every reply passed on is the server's own (our stdio reader). The SDK's
            HTTP transport also makes replies of its own for a lost connection, with the
            code ``CONNECTION_CLOSED`` that a server may use for its errors too.
    """

    def __init__(self, *, verbatim: bool = False) -> None:
        self.verbatim = verbatim
        self._pending: dict[mcp_types.RequestId, mcp_types.RequestId] = {}  # key: sent id
        self._abandoned: dict[mcp_types.RequestId, None] = {}
        #: True once the server's side of the connection ended
        self.ended = False
        #: True when the server stopped answering: it is not given time to exit by itself
        self.stuck = False

    def _abandon(self, key: mcp_types.RequestId) -> None:
        self._pending.pop(key, None)
        self._abandoned[key] = None
        if len(self._abandoned) > _ABANDONED:
            del self._abandoned[next(iter(self._abandoned))]

    def sent(self, message: SessionMessage) -> None:
        """Note a request we send, or one we cancel (its reply may still come)."""
        msg = message.message
        if isinstance(msg, mcp_types.JSONRPCRequest):
            self._pending[coerce_request_id(msg.id)] = msg.id
        elif isinstance(msg, mcp_types.JSONRPCNotification) and msg.method == (
            "notifications/cancelled"
        ):
            request_id = (msg.params or {}).get("requestId")
            if isinstance(request_id, int | str):
                self._abandon(coerce_request_id(request_id))

    def received(self, item: Inbound) -> list[Inbound]:
        """What the session gets for ``item``: it as is, or errors for the calls it failed."""
        if isinstance(item, DamagedReply):
            return self._failed(item)
        if isinstance(item, Exception) or not isinstance(
            item.message, mcp_types.JSONRPCResponse | mcp_types.JSONRPCError
        ):
            return [item]
        reply_id = item.message.id
        too_large = self._too_large(item.message)
        if too_large is not None:
            return self._failed(too_large)
        key = coerce_request_id(reply_id) if reply_id is not None else None
        if key is not None and (self._pending.pop(key, None) is not None or key in self._abandoned):
            self._abandoned.pop(key, None)
            return [item]
        if reply_id is None:  # JSON-RPC's "the request could not be read"
            return self._failed(DamagedReply("an error reply without a request id"))
        shown = str(reply_id)[:32]  # the server's text: short
        return self._failed(DamagedReply(f"a reply to a request never sent (id {shown!r})"))

    def _too_large(self, message: Any) -> ReplyTooLarge | None:
        """The SDK's HTTP transport's stand-in for a reply cut at the size limit."""
        if self.verbatim or not isinstance(message, mcp_types.JSONRPCError):
            return None
        pattern = _TOO_LARGE.get(message.error.code)
        found = pattern.match(message.error.message) if pattern is not None else None
        if found is None:
            return None
        limit = int(found.group(1))
        return ReplyTooLarge(limit + 1, limit, message.id)

    def _failed(self, damage: DamagedReply) -> list[Inbound]:
        """An error for the call ``damage`` answered, or for every call in flight (none
        when it answered a call already abandoned: nobody waits for it)."""
        key = coerce_request_id(damage.request_id) if damage.request_id is not None else None
        if key is not None and key in self._abandoned and key not in self._pending:
            del self._abandoned[key]
            return []
        keys = [key] if key in self._pending else list(self._pending)
        if not keys:
            _log.warning("MCP server sent %s while no call was waiting; dropped", damage)
        errors: list[Inbound] = []
        for each in keys:
            errors.append(_error(self._pending[each], damage))
            self._abandon(each)
        return errors


def _error(request_id: mcp_types.RequestId, damage: DamagedReply) -> SessionMessage:
    error = mcp_types.ErrorData(code=mcp_types.INTERNAL_ERROR, message=str(damage), data=damage)
    return SessionMessage(mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


@contextlib.asynccontextmanager
async def guarded(transport: Transport, guard: Guard) -> AsyncIterator[TransportStreams]:
    """``transport``'s streams, relayed through ``guard``."""
    async with transport as (inner_read, inner_write):
        to_session, session_read = anyio.create_memory_object_stream[Inbound](0)
        session_write, from_session = anyio.create_memory_object_stream[SessionMessage](0)
        async with anyio.create_task_group() as tg:
            tg.start_soon(_inbound, guard, inner_read, to_session)
            tg.start_soon(_outbound, guard, from_session, inner_write)
            try:
                yield session_read, session_write
            finally:
                tg.cancel_scope.cancel()


async def _inbound(
    guard: Guard, inner: ReadStream[Inbound], session: MemoryObjectSendStream[Inbound]
) -> None:
    async with session:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            async for item in inner:
                for each in guard.received(item):
                    await session.send(each)
        guard.ended = True


async def _outbound(
    guard: Guard,
    session: MemoryObjectReceiveStream[SessionMessage],
    inner: WriteStream[SessionMessage],
) -> None:
    async with session:
        try:
            async for message in session:
                guard.sent(message)
                await inner.send(message)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            await _close(inner)


async def _close(stream: Any) -> None:
    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
        await stream.aclose()
