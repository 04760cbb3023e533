"""MCP tools from a real server started over stdio (tests/integration/mcp_server.py).

Each failure is a typed error, and nothing is leaked: after a close, the server's process
is reaped (not a zombie), no child process is left and the session's thread has ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pywrapai import LLM, ToolCall
from pywrapai_graph import Agent, AgentConfig, GraphLLM, ToolRegistry
from pywrapai_graph.composition.mcp_servers import MCPToolServer
from pywrapai_graph.errors import (
    InvalidStateError,
    RemoteToolError,
    ToolArgumentsError,
    ToolServerError,
    ToolTimeoutError,
)
from pywrapai_graph.testing import ScriptedChatModel, ScriptedReply
from tests.integration.mcp_helpers import SERVER, children, reaped

EXPECTED_NAMES = [
    "add",
    "describe",
    "refuse",
    "crash",
    "pid",
    "die",
    "hangup",
    "hang",
    "pause",
    "counters",
    "big",
]


def stdio(name: str = "calc", *, tool_timeout_s: float | None = None) -> MCPToolServer:
    return MCPToolServer(name, command=sys.executable, args=[SERVER], tool_timeout_s=tool_timeout_s)


@pytest.fixture(scope="module")
def server() -> Iterator[MCPToolServer]:
    with stdio(tool_timeout_s=5.0) as opened:
        yield opened


@pytest.fixture
def registry(server: MCPToolServer) -> ToolRegistry:
    registry = ToolRegistry()
    server.register(registry)
    return registry


def open_state(server: MCPToolServer) -> str:
    return "open" if server.is_open else "closed"


def call(registry: ToolRegistry, name: str, **arguments: object) -> str:
    return registry.execute(ToolCall("c1", name, dict(arguments))).content


# ---------------------------------------------------------------------------- listing
def test_tools_are_listed_with_schemas_lowered_to_the_neutral_shape(
    registry: ToolRegistry,
) -> None:
    assert registry.names == EXPECTED_NAMES
    describe = registry.get("describe")
    assert describe.description == "Describe a point."
    # pydantic's $defs/$ref inlined, titles dropped, `str | None` as an optional string
    assert describe.parameters == {
        "type": "object",
        "properties": {
            "p": {
                "type": "object",
                "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                "required": ["x", "y"],
            },
            "unit": {"type": "string", "enum": ["m", "cm"], "default": "m"},
            "note": {"type": "string"},
        },
        "required": ["p"],
    }
    [gemini] = [d for d in registry.to_gemini_schema() if d["name"] == "describe"]
    assert "default" not in json.dumps(gemini)  # Gemini's rules applied on top
    [openai] = [d for d in registry.to_openai_schema() if d["function"]["name"] == "add"]
    assert openai["function"]["parameters"]["properties"]["b"] == {"type": "integer", "default": 2}
    [anthropic] = [d for d in registry.to_anthropic_schema() if d["name"] == "add"]
    assert anthropic["input_schema"]["required"] == ["a"]


def test_a_prefix_keeps_two_servers_tools_apart(server: MCPToolServer) -> None:
    other = MCPToolServer("other", command=sys.executable, args=[SERVER], prefix="other_")
    with other:
        registry = ToolRegistry()
        server.register(registry)
        other.register(registry)
        assert "add" in registry.names and "other_add" in registry.names
        assert call(registry, "other_add", a=40) == "42"
        with pytest.raises(ValueError, match="already registered"):
            server.register(registry)


def test_repr_and_state(server: MCPToolServer) -> None:
    assert repr(server).endswith(", open)") and server.is_open
    closed = stdio("never-opened")
    assert "closed" in repr(closed)
    with pytest.raises(InvalidStateError, match="not open"):
        closed.tools()


# ---------------------------------------------------------------------------- calls
def test_valid_calls_sync_and_async(registry: ToolRegistry) -> None:
    assert call(registry, "add", a=1) == "3"
    assert call(registry, "describe", p={"x": 1, "y": 2.5}, unit="cm") == "(1, 2.5) cm"

    async def both() -> list[str]:
        results = await asyncio.gather(
            registry.aexecute(ToolCall("a", "add", {"a": 1, "b": 1})),
            registry.aexecute(ToolCall("b", "describe", {"p": {"x": 0, "y": 0}, "note": "hi"})),
        )
        return [r.content for r in results]

    assert asyncio.run(both()) == ["2", "(0, 0) m hi"]


def test_invalid_arguments_are_refused_before_the_server(registry: ToolRegistry) -> None:
    tool = registry.get("add")
    with pytest.raises(ToolArgumentsError, match="'a' must be of type integer"):
        tool.invoke({"a": "one"})
    with pytest.raises(ToolArgumentsError, match="unknown argument 'c'") as info:
        tool.invoke({"a": 1, "c": 2})
    assert "missing" not in str(info.value)
    with pytest.raises(ToolArgumentsError, match="missing required argument 'a'"):
        tool.invoke({})
    with pytest.raises(ToolArgumentsError, match="must be one of"):
        registry.get("describe").invoke({"p": {"x": 1, "y": 1}, "unit": "km"})
    # what our schema check cannot see (inside a nested object), the server refuses
    with pytest.raises(RemoteToolError, match="describe") as refused:
        registry.get("describe").invoke({"p": {"x": "left", "y": 1}})
    assert refused.value.server == "calc"


def test_a_tool_that_fails_is_a_remote_tool_error(registry: ToolRegistry) -> None:
    with pytest.raises(RemoteToolError, match="no weather station in Atlantis") as info:
        registry.get("refuse").invoke({"city": "Atlantis"})
    assert (info.value.tool, info.value.server) == ("refuse", "calc")
    with pytest.raises(RemoteToolError, match="crash"):
        registry.get("crash").invoke({})
    # the registry hands the model the error text, as for any failed tool
    assert call(registry, "refuse", city="Oz").startswith("Error: tool 'refuse' on MCP server")
    assert call(registry, "add", a=2) == "4"  # the session is fine


def test_a_hung_tool_times_out_and_is_cancelled_on_the_server(registry: ToolRegistry) -> None:
    hang = registry.get("hang")
    with pytest.raises(ToolTimeoutError):
        hang.invoke({}, timeout_s=0.5)

    async def in_a_loop() -> None:
        with pytest.raises(ToolTimeoutError):
            await hang.ainvoke({}, timeout_s=0.5)

    asyncio.run(in_a_loop())
    counters = json.loads(call(registry, "counters"))
    assert counters["hanging"] == 0  # both calls were cancelled on the server, not left running
    assert call(registry, "add", a=3) == "5"


def test_the_result_size_limit_applies(registry: ToolRegistry) -> None:
    assert call(registry, "big", size=10) == "x" * 10
    assert "over its limit of 65,536" in call(registry, "big", size=70_000)


def test_calls_from_many_threads_and_loops_share_one_session(registry: ToolRegistry) -> None:
    """One server process serves them all; the calls overlap on the server."""
    before = children()
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda i: call(registry, "pause", seconds=0.3 + i / 100), range(8)))
    assert results == [str(0.3 + i / 100) for i in range(8)]
    assert json.loads(call(registry, "counters"))["peak"] >= 2
    assert children() == before  # no new process per thread or per loop


# ---------------------------------------------------------------------------- agent
def test_an_agent_calls_mcp_tools_sync_and_async(registry: ToolRegistry) -> None:
    def agent() -> tuple[Agent, ScriptedChatModel]:
        model = ScriptedChatModel(
            [
                ScriptedReply(
                    tool_calls=[
                        ToolCall("c1", "add", {"a": 20, "b": 22}),
                        ToolCall("c2", "refuse", {"city": "Oz"}),
                    ]
                ),
                "The answer is 42.",
            ]
        )
        return Agent(GraphLLM(llm=LLM(provider=model)), registry), model

    sync_agent, model = agent()
    result = sync_agent.run("What is 20 + 22?")
    assert result.content == "The answer is 42."
    [step] = result.steps
    assert step.tool_results[0].content == "42"
    assert step.tool_results[1].content.startswith("Error: tool 'refuse'")
    # the model was offered the MCP tools' neutral schemas
    assert [t["name"] for t in model.requests[0].tools] == EXPECTED_NAMES

    async_agent, _ = agent()
    assert asyncio.run(async_agent.arun("again")).steps[0].tool_results[0].content == "42"


def test_policy_raise_surfaces_the_typed_error(registry: ToolRegistry) -> None:
    model = ScriptedChatModel([ScriptedReply(tool_calls=[ToolCall("c1", "crash", {})])])
    agent = Agent(
        GraphLLM(llm=LLM(provider=model)), registry, AgentConfig(tool_error_policy="raise")
    )
    with pytest.raises(RemoteToolError) as info:
        agent.run("crash it")
    assert info.value.partial is not None


# ---------------------------------------------------------------------------- failures
def test_a_server_that_kills_itself_mid_call_is_typed_reaped_and_restarted() -> None:
    before = children()
    server = stdio("dying").open()
    registry = ToolRegistry()
    server.register(registry)
    pid = int(call(registry, "pid"))
    assert pid in children() - before
    with pytest.raises(ToolServerError, match="went away while calling 'die'") as info:
        registry.get("die").invoke({})
    assert (info.value.server, info.value.tool) == ("dying", "die")
    assert open_state(server) == "closed"
    # the next call starts the server again, after the dead process was reaped
    restarted = int(call(registry, "pid"))
    assert restarted != pid and reaped(pid)
    assert children() - before == {restarted}
    assert open_state(server) == "open"
    assert call(registry, "add", a=1) == "3"
    thread = server.session.thread
    server.close()
    assert reaped(restarted)
    assert children() == before
    assert thread is not None and not thread.is_alive()


def test_a_server_killed_from_outside_mid_call() -> None:
    """SIGKILL from another process while a call is under way, sync and async callers."""
    before = children()
    with stdio("victim") as server:
        registry = ToolRegistry()
        server.register(registry)
        pid = int(call(registry, "pid"))
        started = threading.Event()

        async def pending() -> BaseException | None:
            task = asyncio.ensure_future(registry.get("hang").ainvoke({}, timeout_s=120))
            await asyncio.sleep(0)
            started.set()
            try:
                await task
            except ToolServerError as exc:
                return exc
            return None

        def killer() -> None:
            started.wait()
            while json.loads(call(registry, "counters"))["hanging"] == 0:
                pass  # the call is running on the server: now kill it
            os.kill(pid, signal.SIGKILL)

        thread = threading.Thread(target=killer)
        thread.start()
        error = asyncio.run(pending())
        thread.join()
        assert isinstance(error, ToolServerError)
        assert "went away while calling 'hang'" in str(error)
    assert reaped(pid)
    assert children() == before


def test_closing_while_a_lost_session_winds_down_still_stops_and_reaps_its_server(
    tmp_path: Path,
) -> None:
    """close() during the SDK's shutdown of a server that went away (its stdout closed,
    SIGTERM ignored: SIGKILL ends it) waits for every step of that shutdown."""
    before = children()
    marker = tmp_path / "stdin-closed"
    stubborn = MCPToolServer(
        "hangup", command=sys.executable, args=[SERVER, "--stubborn", str(marker)]
    )
    stubborn.open()
    registry = ToolRegistry()
    stubborn.register(registry)
    pid = int(call(registry, "pid"))
    try:
        with pytest.raises(ToolServerError, match="went away while calling 'hangup'"):
            registry.get("hangup").invoke({})
        for _ in range(3000):  # the shutdown closes the server's stdin, then waits for it
            if marker.exists():
                break
            time.sleep(0.01)
        stubborn.close()  # while that shutdown runs
        assert reaped(pid)
        assert children() == before
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_a_server_that_cannot_start_is_typed() -> None:
    missing = MCPToolServer("ghost", command="/nonexistent/mcp-server-binary")
    with pytest.raises(ToolServerError, match="could not start command 'mcp-server-binary'"):
        missing.open()
    assert not missing.is_open
    exits = MCPToolServer("quitter", command=sys.executable, args=["-c", "pass"])
    with pytest.raises(ToolServerError, match="quitter"):
        exits.open()


def test_a_server_that_never_answers_the_handshake_times_out() -> None:
    before = children()
    silent = MCPToolServer(
        "silent",
        command=sys.executable,
        args=["-c", "import time; time.sleep(3600)"],
        connect_timeout_s=1.0,
    )
    with pytest.raises(ToolServerError, match="within 1 s"):
        silent.open()
    with pytest.raises(ToolServerError, match="within 1 s"):  # the same, async
        asyncio.run(silent.aopen())
    assert not silent.is_open
    assert children() == before  # the silent processes were stopped and reaped


def test_secrets_in_env_stay_out_of_reprs_and_errors() -> None:
    secret = "sk-live-SECRET-mcp-env-0042"
    server = MCPToolServer("keyed", command="/nonexistent/server", env={"SERVICE_TOKEN": secret})
    assert secret not in repr(server)
    with pytest.raises(ToolServerError) as info:
        server.open()
    chain: list[BaseException] = []
    error: BaseException | None = info.value
    while error is not None:
        chain.append(error)
        error = error.__cause__ or error.__context__
    assert all(secret not in f"{e!r} {e}" for e in chain)


async def test_async_context_manager_opens_and_closes() -> None:
    before = children()
    async with stdio("async") as server:
        registry = ToolRegistry()
        server.register(registry)
        assert (await registry.aexecute(ToolCall("c", "add", {"a": 5}))).content == "7"
        pid = int((await registry.aexecute(ToolCall("c", "pid", {}))).content)
    assert reaped(pid)
    assert children() == before


def test_a_cancelled_aclose_still_stops_the_session_and_reaps_the_server() -> None:
    before = children()
    server = stdio("cancelled-close").open()
    registry = ToolRegistry()
    server.register(registry)
    pid = int(call(registry, "pid"))
    thread = server.session.thread
    assert thread is not None

    async def cancel_while_closing() -> None:
        closing = asyncio.ensure_future(server.aclose())
        while server.is_open:  # the close has begun
            await asyncio.sleep(0.01)
        closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing

    asyncio.run(cancel_while_closing())
    thread.join(30)  # the close goes on after its caller was cancelled
    assert not thread.is_alive()
    assert reaped(pid)
    assert children() == before


def test_calls_are_traced_as_tool_executions(registry: ToolRegistry) -> None:
    from opentelemetry.trace import StatusCode

    from pywrapai_graph.observability import configure
    from tests.unit.test_tracing import Telemetry

    otel = Telemetry()
    configure(tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider)
    try:
        call(registry, "add", a=1)
        call(registry, "refuse", city="Oz")
    finally:
        configure()
    ok, failed = otel.one("execute_tool add"), otel.one("execute_tool refuse")
    assert (ok.attributes or {})["gen_ai.tool.name"] == "add"
    assert ok.status.status_code is not StatusCode.ERROR
    assert failed.status.status_code is StatusCode.ERROR
    assert (failed.attributes or {})["error.type"] == "RemoteToolError"


_NESTING_PROBE = """
import asyncio, json, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pywrapai_graph import MCPToolServer, ToolCall, ToolRegistry
from pywrapai_graph.observability import configure

exporter, provider = InMemorySpanExporter(), TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)  # the mcp SDK traces through the global provider
configure(tracer_provider=provider)
with MCPToolServer("calc", command=sys.executable, args=[sys.argv[1]]) as server:
    registry = ToolRegistry()
    server.register(registry)
    exporter.clear()
    registry.execute(ToolCall("c1", "add", {"a": 1}))
    asyncio.run(registry.aexecute(ToolCall("c2", "add", {"a": 2})))
print(json.dumps([
    [s.name, s.context.span_id, s.parent.span_id if s.parent else None,
     (s.attributes or {}).get("mcp.method.name")]
    for s in exporter.get_finished_spans()
]))
"""


def test_the_sdk_spans_nest_under_the_tool_span_sync_and_async() -> None:
    """Our span's context travels to the session's loop thread: the SDK's client span (and
    the trace context it sends the server) is a child of the agent's execute_tool span."""
    out = subprocess.run(
        [sys.executable, "-c", _NESTING_PROBE, SERVER], capture_output=True, text=True, check=True
    ).stdout
    spans = json.loads(out.strip().splitlines()[-1])
    ours = [s for s in spans if s[0] == "execute_tool add"]
    sdk = [s for s in spans if s[3] == "tools/call"]
    assert len(ours) == len(sdk) == 2
    assert sorted(s[2] for s in sdk) == sorted(s[1] for s in ours)
