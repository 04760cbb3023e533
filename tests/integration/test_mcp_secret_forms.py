"""An MCP server's error text reaches the model, spans and logs with every common secret
form masked: a server on the official SDK (``mcp_leaky_server.py``) in a real subprocess,
over stdio."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from pywrapai import LLM, ToolCall
from pywrapai_graph import Agent, GraphLLM, ToolRegistry
from pywrapai_graph.composition.mcp_servers import MCPToolServer
from pywrapai_graph.domain import Role
from pywrapai_graph.observability import configure
from pywrapai_graph.testing import ScriptedChatModel, ScriptedReply
from tests.secret_forms import FORMS

LEAKY = str(Path(__file__).with_name("mcp_leaky_server.py"))


@pytest.fixture(scope="module")
def registry() -> Iterator[ToolRegistry]:
    with MCPToolServer("ops", command=sys.executable, args=[LEAKY]) as server:
        registry = ToolRegistry()
        server.register(registry)
        yield registry


def test_secrets_in_mcp_error_text_are_masked_everywhere(
    registry: ToolRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    spans = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(spans))
    calls = [ToolCall(f"c{i}", "deploy", {"form": i}) for i in range(len(FORMS))]
    model = ScriptedChatModel([ScriptedReply(tool_calls=calls), "none found"])
    configure(tracer_provider=tracing, capture_content=True)
    try:
        with caplog.at_level(logging.DEBUG):
            Agent(GraphLLM(llm=LLM(provider=model)), registry).run("weather?")
    finally:
        configure()
    results = [m.content for m in model.requests[1].messages if m.role is Role.TOOL]
    assert len(results) == len(FORMS)
    traced = "\n".join(
        json.dumps(dict(s.attributes or {}), default=str)
        + "".join(json.dumps(dict(e.attributes or {}), default=str) for e in s.events)
        for s in spans.get_finished_spans()
    )
    for result, (_, secret, kept) in zip(results, FORMS, strict=True):
        assert "deploy failed: " in result and kept in result
        assert secret not in result
        assert secret not in traced and secret not in caplog.text
