"""How MCP replies are read: lines cut at the read limit, damaged replies attributed."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("mcp")

import mcp_types
from mcp.shared.message import SessionMessage

from pywrapai_graph.adapters.mcp._guard import DamagedReply, Guard, ReplyTooLarge
from pywrapai_graph.adapters.mcp._stdio import Lines


def reply(request_id: int | str, text: str = "ok") -> bytes:
    result = {"content": [{"type": "text", "text": text}]}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode() + b"\n"


def reply_id(item: object) -> object:
    assert isinstance(item, SessionMessage)
    assert isinstance(item.message, mcp_types.JSONRPCResponse)
    return item.message.id


def request(request_id: int) -> SessionMessage:
    return SessionMessage(
        mcp_types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method="tools/call")
    )


def test_lines_split_across_chunks_and_skip_blank_lines() -> None:
    lines = Lines(1000)
    data = reply(1) + b"\n  \n" + reply(2)
    items = [item for i in range(0, len(data), 7) for item in lines.feed(data[i : i + 7])]
    assert [reply_id(i) for i in items] == [1, 2]


def test_a_long_line_is_cut_at_the_limit_and_the_rest_skipped() -> None:
    lines = Lines(100)
    big = reply(7, "x" * 10_000)
    items = []
    for i in range(0, len(big), 64):  # the rest of the line is skipped, not kept
        items += lines.feed(big[i : i + 64])
    (cut,) = items
    assert isinstance(cut, ReplyTooLarge)
    assert (cut.request_id, cut.limit) == (7, 100)
    assert 100 < cut.size <= 164  # at most one chunk past the limit
    assert lines._parts == []
    (after,) = lines.feed(reply(8))
    assert reply_id(after) == 8


def test_malformed_lines_are_damaged_replies_with_their_id_when_it_can_be_read() -> None:
    lines = Lines(1000)
    not_utf8, not_json = lines.feed(reply(3)[:-3] + b"\xff}}\n" + b"hello\n")
    assert isinstance(not_utf8, DamagedReply)
    assert (str(not_utf8), not_utf8.request_id) == ("a reply that is not UTF-8", 3)
    assert isinstance(not_json, DamagedReply)
    assert not_json.request_id is None


def test_the_guard_answers_the_call_a_damaged_reply_was_meant_for() -> None:
    guard = Guard()
    guard.sent(request(1))
    guard.sent(request(2))
    (error,) = guard.received(DamagedReply("a reply that is not UTF-8", "2"))
    assert isinstance(error, SessionMessage)
    assert isinstance(error.message, mcp_types.JSONRPCError)
    assert error.message.id == 2
    assert isinstance(error.message.error.data, DamagedReply)
    # a reply for an id never sent fails every call still in flight (here: 1)
    stray = SessionMessage(mcp_types.JSONRPCResponse(jsonrpc="2.0", id=99, result={}))
    (failed,) = guard.received(stray)
    assert isinstance(failed, SessionMessage)
    assert failed.message.id == 1  # type: ignore[union-attr]
    # a late reply to an answered (abandoned) call is passed on for the SDK to drop
    late = SessionMessage(mcp_types.JSONRPCResponse(jsonrpc="2.0", id="2", result={}))
    assert guard.received(late) == [late]
    assert guard.received(stray) == []  # nothing in flight: dropped
    guard.sent(request(3))
    anonymous = mcp_types.JSONRPCError(
        jsonrpc="2.0", id=None, error=mcp_types.ErrorData(code=-32700, message="unreadable")
    )
    (unread,) = guard.received(SessionMessage(anonymous))
    assert isinstance(unread, SessionMessage)
    assert isinstance(unread.message, mcp_types.JSONRPCError)
    assert unread.message.id == 3
    assert str(unread.message.error.data) == "an error reply without a request id"


def test_a_cancelled_call_s_late_reply_is_not_a_wrong_id() -> None:
    guard = Guard()
    guard.sent(request(5))
    cancel = mcp_types.JSONRPCNotification(
        jsonrpc="2.0", method="notifications/cancelled", params={"requestId": 5}
    )
    guard.sent(SessionMessage(cancel))
    guard.sent(request(6))
    late = SessionMessage(mcp_types.JSONRPCResponse(jsonrpc="2.0", id=5, result={}))
    assert guard.received(late) == [late]  # call 6 is not failed by it
    guard.sent(SessionMessage(cancel.model_copy(update={"params": {"requestId": 7}})))
    assert guard.received(ReplyTooLarge(10, 5, 7)) == []  # cut, but nobody waits for it
    answer = SessionMessage(mcp_types.JSONRPCResponse(jsonrpc="2.0", id=6, result={}))
    assert guard.received(answer) == [answer]
