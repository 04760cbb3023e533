"""MCP tools from a real streamable-HTTP server (tests/integration/mcp_server.py --http).

The server demands a bearer token: the headers reach it, and the token reaches no repr,
error or log record. After a close no connection to the server is left open.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
from collections.abc import Iterator

import pytest

from pywrapai import ToolCall
from pywrapai_graph import ToolRegistry
from pywrapai_graph.composition.container import build_container
from pywrapai_graph.composition.mcp_servers import MCPToolServer
from pywrapai_graph.errors import (
    RemoteToolError,
    ToolArgumentsError,
    ToolServerError,
    ToolTimeoutError,
)
from tests.integration.mcp_helpers import HttpServer, established_to, http_server

TOKEN = "tok-SECRET-mcp-http-4242"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[HttpServer]:
    with http_server(TOKEN) as server:
        yield server


def remote(endpoint: HttpServer, **options: float) -> MCPToolServer:
    return MCPToolServer(
        "remote",
        url=endpoint.url,
        headers=endpoint.headers,
        tool_timeout_s=options.get("tool_timeout_s"),
    )


def chain(error: BaseException) -> list[BaseException]:
    found: list[BaseException] = []
    current: BaseException | None = error
    while current is not None:
        found.append(current)
        current = current.__cause__ or current.__context__
    return found


def test_listing_calls_and_failures_over_http(endpoint: HttpServer) -> None:
    with remote(endpoint) as server:
        registry = ToolRegistry()
        server.register(registry)
        assert registry.names[:3] == ["add", "describe", "refuse"]
        assert registry.execute(ToolCall("c", "add", {"a": 40})).content == "42"
        with pytest.raises(ToolArgumentsError):
            registry.get("add").invoke({"a": "forty"})
        with pytest.raises(RemoteToolError, match="no weather station in Oz"):
            registry.get("refuse").invoke({"city": "Oz"})

        async def concurrently() -> list[str]:
            calls = [
                registry.aexecute(ToolCall(str(i), "pause", {"seconds": 0.3})) for i in range(4)
            ]
            return [r.content for r in await asyncio.gather(*calls)]

        assert asyncio.run(concurrently()) == ["0.3"] * 4
        assert json.loads(registry.execute(ToolCall("c", "counters", {})).content)["peak"] >= 2
        assert established_to(endpoint.port) >= 1
    assert established_to(endpoint.port) == 0  # every connection closed with the session


def test_a_hung_call_times_out_and_is_cancelled_on_the_server(endpoint: HttpServer) -> None:
    with remote(endpoint, tool_timeout_s=0.5) as server:
        registry = ToolRegistry()
        server.register(registry)
        # the server's tool_timeout_s is the tools' own timeout
        content = registry.execute(ToolCall("c", "hang", {})).content
        assert content.startswith("Error: tool 'hang' did not finish within 0.5 s")
        with pytest.raises(ToolTimeoutError):
            registry.get("hang").invoke({}, timeout_s=0.5)

        async def in_a_loop() -> None:
            with pytest.raises(ToolTimeoutError):
                await registry.get("hang").ainvoke({}, timeout_s=0.5)

        asyncio.run(in_a_loop())
        counters = json.loads(registry.execute(ToolCall("c", "counters", {})).content)
        assert counters["hanging"] == 0
        assert registry.execute(ToolCall("c", "add", {"a": 1})).content == "3"


def test_a_wrong_token_is_refused_and_never_shown(
    endpoint: HttpServer, caplog: pytest.LogCaptureFixture
) -> None:
    wrong = "tok-SECRET-wrong-9999"
    server = MCPToolServer("remote", url=endpoint.url, headers={"Authorization": f"Bearer {wrong}"})
    assert wrong not in repr(server)
    caplog.set_level(logging.DEBUG)
    with pytest.raises(ToolServerError, match="remote") as info:
        server.open()
    for error in chain(info.value):
        assert wrong not in f"{error!r} {error}"
    assert wrong not in caplog.text and TOKEN not in caplog.text
    assert established_to(endpoint.port) == 0


def test_a_server_killed_mid_call_is_a_tool_server_error() -> None:
    with http_server(TOKEN) as victim, remote(victim) as server:
        registry = ToolRegistry()
        server.register(registry)

        async def killed_mid_call() -> BaseException | None:
            task = asyncio.ensure_future(registry.get("hang").ainvoke({}, timeout_s=120))
            while json.loads(await registry.get("counters").ainvoke({}))["hanging"] == 0:
                await asyncio.sleep(0)
            victim.process.send_signal(signal.SIGKILL)
            try:
                await task
            except ToolServerError as exc:
                return exc
            return None

        error = asyncio.run(killed_mid_call())
        assert isinstance(error, ToolServerError)
        assert (error.server, error.tool) == ("remote", "hang")
        # the next call tries to connect again: the endpoint is gone
        with pytest.raises(ToolServerError, match="failed while connecting"):
            registry.get("add").invoke({"a": 1})
        thread = server.session.thread
    assert thread is not None and not thread.is_alive()
    assert established_to(victim.port) == 0


def test_the_container_reaches_http_servers_from_the_configuration(
    endpoint: HttpServer,
) -> None:
    server = {"url": endpoint.url, "headers": endpoint.headers, "prefix": "web_"}
    settings = {"store": {"backend": "memory"}, "mcp": {"servers": {"web": server}}}
    with build_container(settings) as container:
        registry = container.tools()
        assert registry.execute(ToolCall("c", "web_add", {"a": 5})).content == "7"
        assert TOKEN not in repr(container.settings())
    assert established_to(endpoint.port) == 0
