"""OpenTelemetry spans and metrics in the GenAI conventions (in-memory SDK exporters)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Generator, Iterator
from typing import Any, cast

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from pywrapai_graph import (
    LLM,
    Agent,
    AgentConfig,
    Document,
    Embedder,
    GraphLLM,
    InMemoryVectorStore,
    TokenUsage,
    ToolCall,
    ToolRegistry,
    VectorRetriever,
    tool,
)
from pywrapai_graph.errors import ProviderUnavailableError
from pywrapai_graph.observability import configure
from pywrapai_graph.testing import ScriptedChatModel
from pywrapai_graph.testing.scripted import ScriptedReply
from pywrapai_graph.testing.wire import OpenAIWire

SECRET = "sk-test-SECRET-telemetry-42"
QUESTION = "How long do refunds take for damaged parcels?"
ANSWER = "Refunds take five business days."
DOCS = [
    Document("Refunds for damaged parcels take five business days.", id="refunds"),
    Document("Parcels ship from Rotterdam every weekday.", id="shipping"),
    Document("Support answers within one hour.", id="support"),
]


class Telemetry:
    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        self.reader = InMemoryMetricReader()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def tree(self) -> list[Any]:
        """Finished spans as nested (name, [children]) in start order."""
        spans = sorted(self.finished(), key=lambda s: s.start_time or 0)
        ids = {s.context.span_id for s in spans if s.context}

        def children(parent: int | None) -> list[Any]:
            return [
                (s.name, children(s.context.span_id if s.context else None))
                for s in spans
                if (s.parent.span_id if s.parent and s.parent.span_id in ids else None) == parent
            ]

        return children(None)

    def one(self, name: str) -> ReadableSpan:
        found = [s for s in self.finished() if s.name == name]
        assert len(found) == 1, [s.name for s in self.finished()]
        return found[0]

    def metric_points(self, name: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        points: list[Any] = []
        for rm in data.resource_metrics if data else ():
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    if m.name == name:
                        points.extend(m.data.data_points)
        return points


@pytest.fixture
def otel() -> Iterator[Telemetry]:
    t = Telemetry()
    configure(tracer_provider=t.tracer_provider, meter_provider=t.meter_provider)
    try:
        yield t
    finally:
        configure()


def all_text(spans: list[ReadableSpan]) -> str:
    parts: list[str] = []
    for s in spans:
        parts.append(s.name)
        parts.append(json.dumps(dict(s.attributes or {}), default=str))
        for e in s.events:
            parts.append(json.dumps(dict(e.attributes or {}), default=str))
        parts.append(str(s.status.description))
    return "\n".join(parts)


def rag_graph(llm: LLM) -> tuple[GraphLLM, VectorRetriever]:
    embedder = Embedder(provider="hashing", dimension=64)
    retriever = VectorRetriever(embedder, InMemoryVectorStore(), k=2)
    retriever.add_documents(DOCS)
    return GraphLLM(llm=llm, retriever=retriever, rag_k=2), retriever


def scripted_llm(*replies: ScriptedReply | str) -> LLM:
    return LLM(provider=ScriptedChatModel(replies, provider="openai"), model="gpt-4o-mini")


# ---------------------------------------------------------------------------- RAG chat
def test_rag_chat_span_tree_and_attributes(otel: Telemetry) -> None:
    graph, _ = rag_graph(scripted_llm(ScriptedReply(ANSWER, usage=TokenUsage(120, 30))))
    otel.spans.clear()
    tracer = otel.tracer_provider.get_tracer("app")
    with tracer.start_as_current_span("request"):
        response = graph.chat(QUESTION)
    assert otel.tree() == [
        (
            "request",
            [
                (
                    "retrieval in_memory",
                    [("embeddings hashing-64", []), ("retrieve in_memory", [])],
                ),
                ("chat gpt-4o-mini", []),
            ],
        )
    ]
    chat = dict(otel.one("chat gpt-4o-mini").attributes or {})
    assert chat == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.system": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.output.type": "text",
        "gen_ai.response.model": "gpt-4o-mini",
        "gen_ai.usage.input_tokens": 120,
        "gen_ai.usage.output_tokens": 30,
        "gen_ai.response.finish_reasons": ("stop",),
        "pywrapai.cost_usd": response.cost_usd,
        "pywrapai.cached": False,
    }
    assert response.cost_usd > 0
    retrieval = dict(otel.one("retrieval in_memory").attributes or {})
    assert retrieval["gen_ai.operation.name"] == "retrieval"
    assert retrieval["pywrapai.retrieval.k"] == 2
    assert list(retrieval["pywrapai.retrieval.chunk_ids"]) == [c.chunk_id for c in response.context]  # type: ignore[arg-type]
    assert list(retrieval["pywrapai.retrieval.scores"]) == [c.score for c in response.context]  # type: ignore[arg-type]
    embed = dict(otel.one("embeddings hashing-64").attributes or {})
    assert embed["gen_ai.operation.name"] == "embeddings"
    assert embed["gen_ai.provider.name"] == "hashing"
    assert embed["gen_ai.usage.input_tokens"] > 0  # type: ignore[operator]
    assert embed["gen_ai.embeddings.dimension.count"] == 64
    search = dict(otel.one("retrieve in_memory").attributes or {})  # the one-pass retrieval
    assert search["db.system.name"] == "in_memory" and search["db.operation.name"] == "retrieve"
    assert search["db.response.returned_rows"] == 2
    assert otel.one("chat gpt-4o-mini").kind.name == "CLIENT"
    # privacy by default: no question, answer or document text anywhere
    text = all_text(otel.finished())
    for secret in (QUESTION, ANSWER, "five business days", "Rotterdam", "refunds take"):
        assert secret.lower() not in text.lower()


def test_contents_only_when_opted_in(otel: Telemetry) -> None:
    configure(
        tracer_provider=otel.tracer_provider,
        meter_provider=otel.meter_provider,
        capture_content=True,
    )
    graph, _ = rag_graph(scripted_llm(ANSWER))
    otel.spans.clear()
    graph.chat(QUESTION)
    chat = dict(otel.one("chat gpt-4o-mini").attributes or {})
    assert QUESTION in str(chat["gen_ai.input.messages"])
    assert json.loads(str(chat["gen_ai.output.messages"])) == [
        {"role": "assistant", "content": ANSWER}
    ]
    retrieval = dict(otel.one("retrieval in_memory").attributes or {})
    assert retrieval["gen_ai.retrieval.query.text"] == QUESTION


def test_prompt_file_and_cache_hit_attributes(otel: Telemetry, tmp_path: Any) -> None:
    (tmp_path / "support-v1.txt").write_text("You are support.")
    llm = LLM(provider=ScriptedChatModel([ANSWER], provider="openai"), model="gpt-4o", cache=True)
    graph = GraphLLM(
        llm,
        enable_system_prompt_versioning=True,
        prompt_file="support-v1.txt",
        prompts_dir=tmp_path,
    )
    first = graph.chat("hi")
    second = graph.chat("hi")
    spans = [dict(s.attributes or {}) for s in otel.finished()]
    assert [s["pywrapai.cached"] for s in spans] == [False, True]
    assert all(s["pywrapai.prompt_file"] == "support-v1.txt" for s in spans)
    assert [s["pywrapai.cost_usd"] for s in spans] == [
        first.cost_usd,
        second.cost_usd == 0.0 and 0.0,
    ]


# ---------------------------------------------------------------------------- streams
def test_streamed_chat_span_ends_when_the_stream_ends(otel: Telemetry) -> None:
    llm = scripted_llm(ScriptedReply(ANSWER, usage=TokenUsage(40, 12)))
    pieces = llm.stream("hi")
    first = next(pieces)
    assert first and otel.finished() == []  # the call is still under way
    rest = list(pieces)
    assert first + "".join(rest) == ANSWER
    span = otel.one("chat gpt-4o-mini")
    attrs = dict(span.attributes or {})
    assert attrs["gen_ai.request.stream"] is True
    assert attrs["gen_ai.usage.input_tokens"] == 40 and attrs["gen_ai.usage.output_tokens"] == 12
    assert attrs["pywrapai.cost_usd"] == llm.tokens.records[-1].cost_usd
    assert span.status.status_code is StatusCode.UNSET


async def test_async_stream_and_an_abandoned_stream(otel: Telemetry) -> None:
    llm = scripted_llm(ScriptedReply(ANSWER, usage=TokenUsage(40, 12)), "one two three")
    text = "".join([p async for p in llm.astream("hi")])
    assert text == ANSWER
    assert otel.one("chat gpt-4o-mini").attributes["gen_ai.usage.output_tokens"] == 12  # type: ignore[index]
    otel.spans.clear()
    stream = cast(Generator[str, None, None], llm.stream("again"))
    next(stream)
    stream.close()  # the caller stops reading
    attrs = dict(otel.one("chat gpt-4o-mini").attributes or {})
    assert attrs["pywrapai.stream.abandoned"] is True
    # what was produced is on the span, marked as an estimate (the reply's usage never came)
    assert attrs["pywrapai.usage.estimated"] is True
    assert attrs["gen_ai.usage.input_tokens"] == llm.tokens.records[-1].usage.input_tokens > 0
    assert attrs["gen_ai.usage.output_tokens"] == 1  # "one " at 4 characters per token
    assert attrs["pywrapai.cost_usd"] == llm.tokens.records[-1].cost_usd
    assert llm.tokens.records[-1].estimated


# ---------------------------------------------------------------------------- agent
async def test_async_agent_run_with_concurrent_tools(otel: Telemetry) -> None:
    a_started, b_started = asyncio.Event(), asyncio.Event()

    @tool
    async def alpha(city: str) -> str:
        """Look up alpha."""
        a_started.set()
        await asyncio.wait_for(b_started.wait(), 5)  # only returns if beta runs meanwhile
        return f"alpha {city}"

    @tool
    async def beta(city: str) -> str:
        """Look up beta."""
        b_started.set()
        await asyncio.wait_for(a_started.wait(), 5)
        return f"beta {city}"

    registry = ToolRegistry()
    registry.register(alpha)
    registry.register(beta)
    llm = scripted_llm(
        ScriptedReply(
            tool_calls=[
                ToolCall("call_a", "alpha", {"city": "Oslo"}),
                ToolCall("call_b", "beta", {"city": "Oslo"}),
            ],
            usage=TokenUsage(50, 10),
        ),
        ScriptedReply("Both say Oslo.", usage=TokenUsage(80, 6)),
    )
    agent = Agent(GraphLLM(llm), registry, AgentConfig(max_turns=3))
    result = await agent.arun("Ask alpha and beta about Oslo")
    assert result.content == "Both say Oslo."
    assert otel.tree() == [
        (
            "invoke_agent pywrapai.Agent",
            [
                (
                    "agent_turn 1",
                    [
                        ("chat gpt-4o-mini", []),
                        ("execute_tool alpha", []),
                        ("execute_tool beta", []),
                    ],
                ),
                ("agent_turn 2", [("chat gpt-4o-mini", [])]),
            ],
        )
    ]
    a, b = otel.one("execute_tool alpha"), otel.one("execute_tool beta")
    assert dict(a.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "alpha",
        "gen_ai.tool.call.id": "call_a",
        "gen_ai.tool.type": "function",
    }
    assert (b.attributes or {})["gen_ai.tool.call.id"] == "call_b"
    assert a.start_time is not None and b.start_time is not None
    assert a.end_time is not None and b.end_time is not None
    assert max(a.start_time, b.start_time) < min(a.end_time, b.end_time)  # they overlapped
    run = dict(otel.one("invoke_agent pywrapai.Agent").attributes or {})
    assert run["gen_ai.operation.name"] == "invoke_agent"
    assert run["pywrapai.agent.turns"] == 2
    assert run["gen_ai.usage.input_tokens"] == 130 and run["gen_ai.usage.output_tokens"] == 16
    assert run["pywrapai.cost_usd"] == result.total_cost_usd
    run_id = str(run["gen_ai.agent.id"])
    assert [r.agent_run for r in llm.tokens.records] == [run_id, run_id]
    assert "Oslo" not in all_text(otel.finished())


# ---------------------------------------------------------------------------- failures
def test_failing_call_sets_error_status_without_the_secret(otel: Telemetry) -> None:
    with OpenAIWire() as wire:
        wire.fail(500, f"internal error for key {SECRET}")
        llm = LLM(
            provider="openai", model="gpt-4o", api_key=SECRET, base_url=wire.base_url, max_retries=0
        )
        with pytest.raises(ProviderUnavailableError):
            llm.chat("hi")
        llm.close()
    span = otel.one("chat gpt-4o")
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})["error.type"] == "ProviderUnavailableError"
    [event] = span.events
    assert event.name == "exception"
    assert str((event.attributes or {})["exception.type"]).endswith("ProviderUnavailableError")
    assert SECRET not in all_text(otel.finished())
    [duration] = otel.metric_points("gen_ai.client.operation.duration")
    assert duration.attributes["error.type"] == "ProviderUnavailableError"
    assert duration.count == 1


def test_failing_tool_marks_its_span(otel: Telemetry) -> None:
    @tool
    def broken(x: int) -> int:
        """Always fails."""
        raise RuntimeError("boom")

    registry = ToolRegistry()
    registry.register(broken)
    result = registry.execute(ToolCall("c1", "broken", {"x": 1}))
    assert result.content.startswith("Error")
    span = otel.one("execute_tool broken")
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes or {})["error.type"] == "ToolExecutionError"  # never the raw one


# ---------------------------------------------------------------------------- metrics
def test_metrics_token_usage_duration_and_cost(otel: Telemetry) -> None:
    llm = scripted_llm(ScriptedReply(ANSWER, usage=TokenUsage(1000, 200)))
    response = llm.chat("hi")
    usage = {
        p.attributes["gen_ai.token.type"]: p
        for p in otel.metric_points("gen_ai.client.token.usage")
    }
    assert usage["input"].sum == 1000 and usage["output"].sum == 200
    assert dict(usage["input"].attributes) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.response.model": "gpt-4o-mini",
        "gen_ai.token.type": "input",
    }
    [duration] = otel.metric_points("gen_ai.client.operation.duration")
    assert duration.count == 1 and duration.attributes["gen_ai.operation.name"] == "chat"
    [cost] = otel.metric_points("pywrapai.client.cost")
    assert cost.value == pytest.approx(response.cost_usd) and cost.value > 0
    embedder = Embedder(provider="hashing", dimension=32)
    embedder.embed(["a b c", "d e f"])
    points = otel.metric_points("gen_ai.client.token.usage")
    embedding = [p for p in points if p.attributes["gen_ai.operation.name"] == "embeddings"]
    assert [p.attributes["gen_ai.token.type"] for p in embedding] == ["input"]


async def test_structured_calls_are_json_chat_spans(otel: Telemetry) -> None:
    from pydantic import BaseModel

    class City(BaseModel):
        name: str

    llm = scripted_llm('{"name": "Oslo"}', '{"name": "Bergen"}')
    assert llm.chat_structured("city?", City).name == "Oslo"
    assert (await llm.achat_structured("city?", City)).name == "Bergen"
    spans = otel.finished()
    assert [s.name for s in spans] == ["chat gpt-4o-mini", "structured_attempt 1"] * 2
    chats, attempts = spans[::2], spans[1::2]
    assert all((s.attributes or {})["gen_ai.output.type"] == "json" for s in chats)
    assert [c.parent.span_id for c in chats if c.parent] == [
        a.context.span_id for a in attempts if a.context
    ]
    assert "Oslo" not in all_text(spans)


def test_each_structured_attempt_is_a_span_with_its_chat_inside(otel: Telemetry) -> None:
    from pydantic import BaseModel

    class City(BaseModel):
        name: str

    llm = scripted_llm('{"town": "Oslo"}', '{"name": "Oslo"}')
    assert llm.chat_structured("city?", City).name == "Oslo"
    attempts = [s for s in otel.finished() if s.name.startswith("structured_attempt")]
    assert [s.name for s in attempts] == ["structured_attempt 1", "structured_attempt 2"]
    assert [(s.attributes or {}).get("pywrapai.structured.valid") for s in attempts] == [
        False,
        None,
    ]
    chats = [s for s in otel.finished() if s.name.startswith("chat")]
    assert [c.parent.span_id for c in chats if c.parent] == [
        a.context.span_id for a in attempts if a.context
    ]


def test_sync_agent_tree_and_a_stopped_run(otel: Telemetry) -> None:
    from pywrapai_graph import AgentMaxTurnsError

    @tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    registry = ToolRegistry()
    registry.register(echo)
    again = ScriptedReply(tool_calls=[ToolCall("e1", "echo", {"text": "x"})])
    agent = Agent(GraphLLM(scripted_llm(again, again)), registry, AgentConfig(max_turns=2))
    with pytest.raises(AgentMaxTurnsError):
        agent.run("loop forever")
    turn: list[Any] = [("chat gpt-4o-mini", []), ("execute_tool echo", [])]
    assert otel.tree() == [
        (
            "invoke_agent pywrapai.Agent",
            [("agent_turn 1", turn), ("agent_turn 2", turn)],
        )
    ]
    run = otel.one("invoke_agent pywrapai.Agent")
    assert run.status.status_code is StatusCode.ERROR
    attrs = dict(run.attributes or {})
    assert attrs["error.type"] == "AgentMaxTurnsError"
    assert attrs["pywrapai.agent.turns"] == 2  # from the partial result
