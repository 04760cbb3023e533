"""MCP servers named in the configuration: opened with the container's tools, closed by
``shutdown()`` and ``ashutdown()``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pywrapai import LLM, ToolCall
from pywrapai_graph import Agent, GraphLLM
from pywrapai_graph.composition.container import build_container
from pywrapai_graph.errors import ConfigurationError, ToolServerError
from pywrapai_graph.testing import ScriptedChatModel, ScriptedReply
from tests.integration.mcp_helpers import SERVER, children, reaped


def config(**server: Any) -> dict[str, Any]:
    calc = {"command": sys.executable, "args": [SERVER], "prefix": "calc_", **server}
    return {"store": {"backend": "memory"}, "mcp": {"servers": {"calc": calc}}}


def test_the_container_registers_configured_servers_and_shutdown_closes_them() -> None:
    before = children()
    container = build_container(config(env={"SERVICE_TOKEN": "sk-secret-container-0099"}))
    registry = container.tools()
    assert "calc_add" in registry.names and container.tools() is registry
    assert container.agent().registry is registry
    pid = int(registry.execute(ToolCall("c", "calc_pid", {})).content)
    model = ScriptedChatModel(
        [ScriptedReply(tool_calls=[ToolCall("c1", "calc_add", {"a": 1, "b": 1})]), "2"]
    )
    result = Agent(GraphLLM(llm=LLM(provider=model)), registry).run("1 + 1?")
    assert result.steps[0].tool_results[0].content == "2"
    container.shutdown()
    assert reaped(pid)
    assert children() == before
    # used again, the container connects again (a new process)
    again = container.tools()
    assert again is not registry
    new_pid = int(again.execute(ToolCall("c", "calc_pid", {})).content)
    assert new_pid != pid
    container.shutdown()
    assert reaped(new_pid)
    assert children() == before


async def test_ashutdown_closes_them_without_blocking_the_loop() -> None:
    before = children()
    async with build_container(config()) as container:
        registry = container.tools()
        pid = int((await registry.aexecute(ToolCall("c", "calc_pid", {}))).content)
    assert reaped(pid)
    assert children() == before


def test_a_server_that_fails_to_open_closes_those_opened_before_it() -> None:
    before = children()
    settings = config()
    settings["mcp"]["servers"]["broken"] = {"command": "/nonexistent/mcp-server"}
    container = build_container(settings)
    with pytest.raises(ToolServerError, match="broken"):
        container.tools()
    assert children() == before
    container.shutdown()


def test_a_configuration_names_one_transport_per_server(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"command: .* or url:"):
        build_container({"mcp": {"servers": {"x": {"command": "a", "url": "http://h/mcp"}}}})
    with pytest.raises(ConfigurationError, match="headers are for HTTP"):
        build_container({"mcp": {"servers": {"x": {"command": "a", "headers": {"A": "b"}}}}})
    config_file = tmp_path / "pywrapai.yaml"
    config_file.write_text(
        "mcp:\n  servers:\n    search:\n      url: https://search.example/mcp\n"
        "      headers: {Authorization: Bearer tok-SECRET-yaml-77}\n"
    )
    container = build_container(str(config_file))
    settings = container.settings()
    assert "tok-SECRET-yaml-77" not in repr(settings)
    server = settings.mcp.servers["search"]
    assert server.headers["Authorization"].get_secret_value() == "Bearer tok-SECRET-yaml-77"


def test_without_servers_nothing_of_mcp_is_imported() -> None:
    probe = (
        "import sys\n"
        "from pywrapai_graph import MCPToolServer, ToolRegistry\n"
        "from pywrapai_graph.composition.container import build_container\n"
        "registry = build_container({'store': {'backend': 'memory'}}).tools()\n"
        "MCPToolServer('later', command='x')  # built, not opened\n"
        "loaded = [m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'httpx2',"
        " 'pywrapai_graph.adapters.mcp'))]\n"
        "print(loaded)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
