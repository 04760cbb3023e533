"""Attacks by a hostile MCP server process (tests/integration/mcp_hostile_server.py).

Each answer comes long before the tool timeout (30 s here): a schema that expands
exponentially, a 40 MB result, a line that is not JSON, a reply with a wrong id, invalid
UTF-8, a JSON-RPC error, and a call that stalls the whole server. "At once" is proven by
what happened (the error's type, the bytes read, the server's process id) and a deadline
far below the timeout, never by a tight clock.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pywrapai_graph.application.tools import Tool
from pywrapai_graph.application.tools.remote_tools import remote_tool
from pywrapai_graph.composition.mcp_servers import MCPToolServer
from pywrapai_graph.errors import (
    RemoteToolError,
    ToolResultTooLargeError,
    ToolServerError,
    ToolTimeoutError,
)
from tests.integration.mcp_helpers import children, reaped

HOSTILE = str(Path(__file__).with_name("mcp_hostile_server.py"))
#: the tools' timeout: every answer below must come long before it
TIMEOUT_S = 30.0
#: "at once": a sixth of the timeout, generous for a loaded machine
PROMPTLY_S = TIMEOUT_S / 6


@pytest.fixture
def hostile() -> Iterator[MCPToolServer]:
    """A server of its own per test: an attack that wedges it cannot fail the next test."""
    before = children()
    server = MCPToolServer("hostile", command=sys.executable, args=[HOSTILE])
    server.open()
    try:
        yield server
    finally:
        server.close()
    assert children() == before


def usable_tools(server: MCPToolServer) -> dict[str, Tool]:
    """The listing's tools but the one with the exponential schema (tested on its own)."""
    session = server.session
    listed = session.list_tools()
    return {s.name: remote_tool(session, s) for s in listed if s.name != "exponential"}


@pytest.fixture
def tools(hostile: MCPToolServer) -> dict[str, Tool]:
    return usable_tools(hostile)


def invoke(tools: dict[str, Tool], name: str, **arguments: object) -> str:
    return str(tools[name].invoke(arguments, timeout_s=TIMEOUT_S))


def timed_failure(
    tools: dict[str, Tool], name: str, **arguments: object
) -> tuple[Exception, float]:
    started = time.monotonic()
    with pytest.raises(Exception) as info:
        invoke(tools, name, **arguments)
    return info.value, time.monotonic() - started


def test_an_exponential_schema_is_refused_for_its_tool_only(hostile: MCPToolServer) -> None:
    made: list[list[Tool]] = []  # in a thread the test can stop waiting for
    worker = threading.Thread(target=lambda: made.append(hostile.tools()), daemon=True)
    worker.start()
    worker.join(PROMPTLY_S)
    assert made, "lowering the listed schemas did not finish"
    tools = {t.name: t for t in made[0]}
    error, _ = timed_failure(tools, "exponential", x=1)
    assert isinstance(error, ToolServerError)
    assert (error.server, error.tool) == ("hostile", "exponential")
    assert "input schema over the limits" in str(error)
    # a recursive schema is lowered (the recursion becomes a plain object) and works
    children_schema = tools["tree"].parameters["properties"]["root"]["properties"]["children"]
    assert children_schema == {"type": "array", "items": {"type": "object"}}
    assert invoke(tools, "tree", root={"label": "a"}) == '{"label": "a"}'
    assert invoke(tools, "echo", text="hi") == "hi"


def test_a_huge_result_is_cut_at_the_read_limit(tools: dict[str, Tool]) -> None:
    pid = invoke(tools, "pid")
    error, elapsed = timed_failure(tools, "huge", megabytes=40)
    assert isinstance(error, ToolResultTooLargeError)
    # reading stopped at the limit (8 MiB), within one read of it: not at 40 MB
    assert error.limit == 8 * 1024 * 1024
    assert error.limit < error.size <= error.limit + 1024 * 1024
    assert elapsed < PROMPTLY_S
    # the rest of the line was skipped: the same session answers the next call
    assert invoke(tools, "echo", text="after") == "after"
    assert invoke(tools, "pid") == pid


@pytest.mark.parametrize(
    ("tool", "what"),
    [
        ("not_json", "a line that is not a JSON-RPC message"),
        ("wrong_id", "a reply to a request never sent"),
        ("bad_unicode", "a reply that is not UTF-8"),
    ],
)
def test_a_malformed_reply_fails_its_call_at_once(
    tools: dict[str, Tool], tool: str, what: str
) -> None:
    pid = invoke(tools, "pid")
    error, elapsed = timed_failure(tools, tool)
    assert isinstance(error, ToolServerError), error
    assert not isinstance(error, ToolTimeoutError)
    assert f"broke the protocol while calling {tool!r}: it sent {what}" in str(error)
    assert (error.server, error.tool) == ("hostile", tool)
    assert elapsed < PROMPTLY_S
    assert invoke(tools, "echo", text="after") == "after"
    assert invoke(tools, "pid") == pid  # the session stayed


def test_a_malformed_reply_fails_only_the_call_it_answered(tools: dict[str, Tool]) -> None:
    """Its id is read from the damaged line: a call in flight beside it is not failed."""
    beside: list[str] = []
    other = threading.Thread(target=lambda: beside.append(invoke(tools, "linger", seconds=3)))
    other.start()
    while invoke(tools, "lingering") == "0":
        pass  # until the other call runs on the server
    error, _ = timed_failure(tools, "bad_unicode")
    assert invoke(tools, "lingering") == "1"  # it was in flight throughout
    other.join()
    assert isinstance(error, ToolServerError)
    assert beside == ["done"]


def test_a_json_rpc_error_is_a_remote_tool_error_and_the_session_stays(
    tools: dict[str, Tool],
) -> None:
    pid = invoke(tools, "pid")
    error, _ = timed_failure(tools, "rpc_error")
    assert isinstance(error, RemoteToolError)
    assert "the backend said no" in str(error)
    assert invoke(tools, "pid") == pid


def test_a_timed_out_call_on_a_polite_server_keeps_the_session(tools: dict[str, Tool]) -> None:
    pid = invoke(tools, "pid")
    with pytest.raises(ToolTimeoutError):
        tools["linger"].invoke({"seconds": 60}, timeout_s=0.5)
    assert invoke(tools, "pid") == pid  # it answered the ping: no restart


def test_a_call_that_stalls_the_server_leaves_the_next_calls_usable(
    tools: dict[str, Tool],
) -> None:
    """The stalled server cannot answer anything: the next call finds it out by a ping,
    stops it and starts it again; the calls after that use the new session at once."""
    stalled = int(invoke(tools, "pid"))
    with pytest.raises(ToolTimeoutError):
        tools["stall"].invoke({"seconds": 120}, timeout_s=1.0)
    for i in range(5):  # none of them times out (each may take up to TIMEOUT_S)
        assert invoke(tools, "echo", text=str(i)) == str(i)
    restarted = int(invoke(tools, "pid"))
    assert restarted != stalled
    assert reaped(stalled)


# ---------------------------------------------------------------------------- over HTTP
@pytest.fixture(scope="module", params=["sse", "json"])
def over_http(request: pytest.FixtureRequest) -> Iterator[MCPToolServer]:
    """The server over HTTP, answering in SSE events or in JSON bodies."""
    options = ["--http", "--json"] if request.param == "json" else ["--http"]
    process = subprocess.Popen(
        [sys.executable, HOSTILE, *options], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("PORT "), f"the hostile server did not start: {line!r}"
        url = f"http://127.0.0.1:{int(line.split()[1])}/mcp"
        with MCPToolServer("hostile-http", url=url) as server:
            yield server
    finally:
        process.kill()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()


def test_over_http_a_json_rpc_error_is_a_remote_tool_error_and_the_session_stays(
    over_http: MCPToolServer,
) -> None:
    tools = usable_tools(over_http)
    error, _ = timed_failure(tools, "rpc_error")
    assert isinstance(error, RemoteToolError)
    assert "the backend said no" in str(error)
    assert over_http.is_open  # not wound down as a lost connection
    assert invoke(tools, "echo", text="after") == "after"


def test_over_http_a_huge_result_is_cut_at_the_read_limit(over_http: MCPToolServer) -> None:
    tools = usable_tools(over_http)
    error, elapsed = timed_failure(tools, "huge", megabytes=40)
    assert isinstance(error, ToolResultTooLargeError)
    assert error.limit == 8 * 1024 * 1024
    assert elapsed < PROMPTLY_S
    assert over_http.is_open
    assert invoke(tools, "echo", text="after") == "after"
