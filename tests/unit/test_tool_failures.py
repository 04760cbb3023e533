"""A failing tool reaches spans, logs and the model only as our typed, redacted error; tools
are bounded in time and result size; agent errors carry the run so far under every policy.

Spans come from the OpenTelemetry SDK's in-memory exporter, the model is the scripted one
(its recorded requests are what a provider would have received).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from pywrapai_graph import LLM, Agent, AgentConfig, GraphLLM, ToolCall, ToolRegistry, tool
from pywrapai_graph.domain import Role
from pywrapai_graph.errors import (
    ProviderUnavailableError,
    PyWrapAIError,
    ToolArgumentsError,
    ToolResultTooLargeError,
    ToolTimeoutError,
)
from pywrapai_graph.observability import configure
from pywrapai_graph.testing import ScriptedChatModel
from pywrapai_graph.testing.scripted import ScriptedReply
from tests.secret_forms import FORMS

PW = "Hunter2-tool-pw"
DSN = f"postgresql://app:{PW}@db.internal:5432/orders"
ARG_SECRET = "ARGUMENT-VALUE-7731"


@tool
def lookup_order(order_id: str) -> str:
    """Look an order up in the orders database."""
    raise ConnectionError(f"could not connect to {DSN}: connection refused ({order_id})")


@tool
def count_orders(customer: int) -> str:
    """Count a customer's orders."""
    return str(customer)


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


class Spans:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def all(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def text(self) -> str:
        parts: list[str] = []
        for s in self.all():
            parts += [s.name, json.dumps(dict(s.attributes or {}), default=str)]
            parts += [json.dumps(dict(e.attributes or {}), default=str) for e in s.events]
            parts.append(str(s.status.description))
        return "\n".join(parts)

    def exception_events(self, name: str) -> list[dict[str, Any]]:
        return [
            dict(e.attributes or {})
            for s in self.all()
            if s.name == name
            for e in s.events
            if e.name == "exception"
        ]


@pytest.fixture
def spans() -> Iterator[Spans]:
    found = Spans()
    configure(tracer_provider=found.provider)
    try:
        yield found
    finally:
        configure()


def call(name: str, **arguments: Any) -> ScriptedReply:
    return ScriptedReply(tool_calls=[ToolCall(f"call_{name}", name, arguments)])


def agent_with(
    replies: list[ScriptedReply | str],
    *tools: Callable[..., Any],
    config: AgentConfig | None = None,
    respond: Callable[[Any], ScriptedReply | str] | None = None,
) -> tuple[Agent, ScriptedChatModel]:
    fake = ScriptedChatModel(replies, respond=respond, provider="openai")
    registry = ToolRegistry()
    for t in tools:
        registry.register(t)
    graph = GraphLLM(llm=LLM(provider=fake, model="gpt-4o-mini"))
    return Agent(graph=graph, registry=registry, config=config), fake


def sent_to_model(fake: ScriptedChatModel) -> str:
    return "\n".join(m.content for r in fake.requests for m in r.messages if m.role is Role.TOOL)


# ----------------------------------------------------------------- redacted and typed


def test_a_failing_tool_reaches_spans_logs_and_model_only_redacted(
    spans: Spans, caplog: pytest.LogCaptureFixture
) -> None:
    agent, fake = agent_with([call("lookup_order", order_id="A-1"), "sorry"], lookup_order)
    with caplog.at_level(logging.DEBUG):
        result = agent.run("where is A-1?")
    assert result.content == "sorry"
    to_model = sent_to_model(fake)
    assert PW not in to_model
    assert to_model.startswith("Error: could not connect to postgresql://app:***@db.internal")
    assert PW not in spans.text() + caplog.text
    (event,) = spans.exception_events("execute_tool lookup_order")
    assert event == {"exception.type": "pywrapai_graph.errors.ToolExecutionError"}


def test_with_content_capture_on_the_span_holds_the_redacted_message(spans: Spans) -> None:
    configure(tracer_provider=spans.provider, capture_content=True)
    agent, _ = agent_with([call("lookup_order", order_id="A-1"), "sorry"], lookup_order)
    agent.run("where is A-1?")
    (event,) = spans.exception_events("execute_tool lookup_order")
    assert "postgresql://app:***@db.internal" in event["exception.message"]
    assert PW not in spans.text()


def test_rejected_argument_values_stay_out_of_spans(spans: Spans) -> None:
    agent, fake = agent_with([call("count_orders", customer=ARG_SECRET), "ok"], count_orders)
    agent.run("count")
    assert ARG_SECRET not in spans.text()
    (event,) = spans.exception_events("execute_tool count_orders")
    assert event == {"exception.type": "pywrapai_graph.errors.ToolArgumentsError"}
    assert ARG_SECRET in sent_to_model(fake)  # the model learns what it got wrong


def test_policy_raise_raises_the_tools_own_error_and_traces_ours(
    spans: Spans, caplog: pytest.LogCaptureFixture
) -> None:
    agent, fake = agent_with(
        [call("lookup_order", order_id="A-1")],
        lookup_order,
        config=AgentConfig(tool_error_policy="raise"),
    )
    with caplog.at_level(logging.DEBUG), pytest.raises(ConnectionError) as info:
        agent.run("where is A-1?")
    error = info.value
    assert PW in str(error)  # the application's own exception, in its own process
    assert error.__context__ is None
    assert error.partial.total_turns == 1  # type: ignore[attr-defined]
    assert len(fake.requests) == 1
    assert PW not in spans.text() + caplog.text
    run_events = spans.exception_events("invoke_agent pywrapai.Agent")
    assert run_events == [{"exception.type": "pywrapai_graph.errors.ToolExecutionError"}]


@pytest.mark.parametrize(("text", "secret", "kept"), FORMS)
def test_secrets_in_every_form_stay_out_of_the_model_spans_and_logs(
    text: str, secret: str, kept: str, spans: Spans, caplog: pytest.LogCaptureFixture
) -> None:
    @tool
    def deploy(target: str) -> str:
        """Deploy to a target."""
        raise PermissionError(f"deploy to {target} failed: {text}")

    configure(tracer_provider=spans.provider, capture_content=True)
    agent, fake = agent_with([call("deploy", target="prod"), "it failed"], deploy)
    with caplog.at_level(logging.DEBUG):
        agent.run("deploy")
    to_model = sent_to_model(fake)
    assert to_model.startswith("Error: deploy to prod failed")
    assert kept in to_model
    assert secret not in to_model + spans.text() + caplog.text


def test_registry_execute_returns_the_redacted_error() -> None:
    registry = ToolRegistry()
    registry.register(lookup_order)
    result = registry.execute(ToolCall("c1", "lookup_order", {"order_id": "A-1"}))
    assert PW not in result.content
    assert result.content.startswith("Error: could not connect to postgresql://app:***@")


# ----------------------------------------------------------------- timeouts


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at the end of the test: lets the hung tools' abandoned threads finish."""
    event = threading.Event()
    yield event
    event.set()


def hanging(release: threading.Event, timeout_s: float | None) -> Callable[..., str]:
    """A sync tool that returns only once ``release`` is set."""

    def hang(x: str) -> str:
        """Never returns on its own."""
        release.wait()
        return x

    return tool(timeout_s=timeout_s)(hang)


def test_a_hung_sync_tool_times_out_and_the_model_is_told(release: threading.Event) -> None:
    agent, fake = agent_with([call("hang", x="1"), "gave up"], hanging(release, 0.05))
    assert agent.run("go").content == "gave up"
    assert sent_to_model(fake).startswith("Error: tool 'hang' did not finish within 0.05 s")


def test_the_config_timeout_applies_to_tools_without_their_own(release: threading.Event) -> None:
    agent, _ = agent_with(
        [call("hang", x="1")],
        hanging(release, None),
        config=AgentConfig(tool_timeout_s=0.05, tool_error_policy="raise"),
    )
    with pytest.raises(ToolTimeoutError) as info:
        agent.run("go")
    assert info.value.timeout_s == 0.05
    assert info.value.partial is not None


def test_an_async_tool_is_cancelled_at_its_timeout() -> None:
    cancelled: list[bool] = []

    @tool(timeout_s=0.05)
    async def stall(x: str) -> str:
        """Waits for ever."""
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return x

    agent, fake = agent_with([call("stall", x="1"), "gave up"], stall)
    assert asyncio.run(agent.arun("go")).content == "gave up"
    assert cancelled == [True]
    assert "did not finish within 0.05 s" in sent_to_model(fake)
    agent, fake = agent_with([call("stall", x="1"), "gave up"], stall)
    assert agent.run("go").content == "gave up"  # sync run: asyncio.run + the same timeout
    assert cancelled == [True, True]


def test_a_hung_sync_tool_under_arun_is_abandoned_not_awaited(release: threading.Event) -> None:
    """asyncio.run joins its default executor on exit: a hung tool there would hang the run."""
    agent, fake = agent_with([call("hang", x="1"), "gave up"], hanging(release, 0.05))
    assert asyncio.run(agent.arun("go")).content == "gave up"
    assert "did not finish" in sent_to_model(fake)


def test_a_tool_raising_its_own_timeout_error_is_not_our_timeout() -> None:
    @tool(timeout_s=5.0)
    async def upstream(x: str) -> str:
        """Its upstream timed out."""
        raise TimeoutError("upstream took too long")

    agent, fake = agent_with([call("upstream", x="1"), "ok"], upstream)
    asyncio.run(agent.arun("go"))
    assert sent_to_model(fake) == "Error: upstream took too long"


# ----------------------------------------------------------------- result size


def test_an_oversized_result_is_a_typed_error_not_ten_megabytes_to_the_model() -> None:
    @tool
    def dump(x: str) -> str:
        """Returns far too much."""
        return x * (10 << 20)

    agent, fake = agent_with([call("dump", x="y"), "too much"], dump)
    agent.run("go")
    text = sent_to_model(fake)
    assert len(text) < 500
    assert "returned 10,485,760 bytes or more, over its limit of 65,536" in text
    strict, _ = agent_with(
        [call("dump", x="y")], dump, config=AgentConfig(tool_error_policy="raise")
    )
    with pytest.raises(ToolResultTooLargeError) as info:
        strict.run("go")
    assert (info.value.size, info.value.limit) == (10 << 20, 64 * 1024)


def test_size_limits_count_utf8_bytes_and_can_be_raised_per_tool() -> None:
    @tool(max_result_bytes=9)
    def small(x: str) -> str:
        """Three three-byte characters fit, four do not."""
        return x

    registry = ToolRegistry()
    registry.register(small)
    assert registry.execute(ToolCall("a", "small", {"x": "€€€"})).content == "€€€"
    over = registry.execute(ToolCall("b", "small", {"x": "€€€€"})).content
    assert over.startswith("Error: tool 'small' returned 12 bytes or more, over its limit of 9")


@pytest.mark.parametrize(
    "kwargs",
    [{"timeout_s": 0}, {"timeout_s": -1.0}, {"timeout_s": float("nan")}, {"max_result_bytes": 0}],
)
def test_limits_must_be_positive(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="must be a positive"):
        tool(**kwargs)(get_weather.__wrapped__)  # type: ignore[attr-defined]
    config = {
        f"tool_{k}" if k == "timeout_s" else "max_tool_result_bytes": v for k, v in kwargs.items()
    }
    with pytest.raises(ValueError, match=r"AgentConfig: .* must be a positive"):
        AgentConfig(**config)


# ----------------------------------------------------------------- partial results


@pytest.mark.parametrize("policy", ["return_to_model", "skip", "raise"])
def test_agent_errors_carry_the_steps_so_far_under_every_policy(policy: Any) -> None:
    def provider_down(_: Any) -> str:
        raise ProviderUnavailableError("the provider is down", provider="openai")

    agent, _ = agent_with(
        [call("get_weather", city="Oslo"), call("lookup_order", order_id="A-1")],
        get_weather,
        lookup_order,
        config=AgentConfig(tool_error_policy=policy),
        respond=provider_down,
    )
    with pytest.raises(ConnectionError if policy == "raise" else PyWrapAIError) as info:
        agent.run("go")
    partial = info.value.partial  # type: ignore[attr-defined]
    assert partial is not None
    if policy == "raise":  # the tool's own exception
        assert isinstance(info.value, ConnectionError)
        assert [s.tool_calls[0].name for s in partial.steps] == ["get_weather"]
    else:
        assert isinstance(info.value, ProviderUnavailableError)
        assert [s.tool_calls[0].name for s in partial.steps] == ["get_weather", "lookup_order"]
    assert partial.total_turns == 2


def test_bad_arguments_under_raise_carry_the_partial_result_too() -> None:
    agent, _ = agent_with(
        [call("count_orders", customer="x")],
        count_orders,
        config=AgentConfig(tool_error_policy="raise"),
    )
    with pytest.raises(ToolArgumentsError) as info:
        agent.run("go")
    assert info.value.partial is not None and info.value.partial.total_turns == 1
