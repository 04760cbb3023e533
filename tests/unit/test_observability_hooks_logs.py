"""Structured logs, hooks, and the library without OpenTelemetry (or without a provider)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from pywrapai_graph import (
    LLM,
    Agent,
    AgentConfig,
    Embedder,
    GraphLLM,
    InMemoryVectorStore,
    TokenUsage,
    ToolCall,
    ToolRegistry,
    VectorRetriever,
    tool,
)
from pywrapai_graph.composition.container import build_container
from pywrapai_graph.domain import Document
from pywrapai_graph.observability import (
    AgentStepEvent,
    Hooks,
    LLMCallEvent,
    RetrievalEvent,
    ToolCallEvent,
    register_hooks,
    unregister_hooks,
)
from pywrapai_graph.testing import ScriptedChatModel
from pywrapai_graph.testing.scripted import ScriptedReply

QUESTION = "What is the secret launch date?"


class Recorder(Hooks):
    def __init__(self) -> None:
        self.events: list[object] = []

    def on_llm_call(self, event: LLMCallEvent) -> None:
        self.events.append(event)

    def on_retrieval(self, event: RetrievalEvent) -> None:
        self.events.append(event)

    def on_tool_call(self, event: ToolCallEvent) -> None:
        self.events.append(event)

    def on_agent_step(self, event: AgentStepEvent) -> None:
        self.events.append(event)


class Broken(Hooks):
    def on_llm_call(self, event: LLMCallEvent) -> None:
        raise RuntimeError("hook bug")


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def agent_script() -> ScriptedChatModel:
    return ScriptedChatModel(
        [
            ScriptedReply(tool_calls=[ToolCall("c1", "add", {"a": 2, "b": 3})]),
            ScriptedReply("5", usage=TokenUsage(20, 1)),
        ],
        provider="openai",
    )


def test_one_info_record_per_call_with_fields_and_no_content(
    caplog: pytest.LogCaptureFixture,
) -> None:
    retriever = VectorRetriever(Embedder(provider="hashing", dimension=32), InMemoryVectorStore())
    retriever.add_documents([Document("The launch is in May.", id="d")])
    llm = LLM(provider=ScriptedChatModel(["In May."], provider="openai"), model="gpt-4o")
    graph = GraphLLM(llm, retriever=retriever)
    with caplog.at_level(logging.INFO, logger="pywrapai_graph"):
        graph.chat(QUESTION)
    records = [r for r in caplog.records if r.name.startswith("pywrapai_graph.")]
    assert [r.name for r in records] == [
        "pywrapai_graph.embeddings",
        "pywrapai_graph.retrieval",
        "pywrapai_graph.llm",
    ]
    chat = records[-1]
    assert chat.levelno == logging.INFO
    fields = chat.attributes  # type: ignore[attr-defined]
    assert fields["gen_ai.request.model"] == "gpt-4o"
    assert fields["gen_ai.usage.input_tokens"] == 10
    assert fields["pywrapai.cost_usd"] == llm.tokens.total_cost
    assert "gpt-4o" in chat.getMessage()
    for r in records:
        assert "launch" not in r.getMessage() and "May" not in r.getMessage()
        assert "launch" not in json.dumps(r.attributes, default=str)  # type: ignore[attr-defined]


def test_failures_log_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    llm = LLM(provider=ScriptedChatModel([]), model="m")
    with caplog.at_level(logging.INFO, logger="pywrapai_graph"), pytest.raises(AssertionError):
        llm.chat("hi")
    [record] = [r for r in caplog.records if r.name == "pywrapai_graph.llm"]
    assert record.levelno == logging.WARNING and "ScriptExhaustedError" in record.getMessage()


def test_library_configures_no_handlers() -> None:
    code = textwrap.dedent(
        """
        import logging, pywrapai_graph
        from pywrapai_graph import LLM
        from pywrapai_graph.testing import ScriptedChatModel
        LLM(provider=ScriptedChatModel(["x"])).chat("hi")
        names = [n for n in logging.root.manager.loggerDict if n.startswith("pywrapai_graph")]
        print(sum(len(logging.getLogger(n).handlers) for n in names), len(logging.root.handlers))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "0"]


def test_hooks_per_object_see_every_kind_of_operation() -> None:
    rec = Recorder()
    retriever = VectorRetriever(
        Embedder(provider="hashing", dimension=32, hooks=[rec]), InMemoryVectorStore(), hooks=[rec]
    )
    retriever.add_documents([Document("alpha beta", id="d")])
    rec.events.clear()
    registry = ToolRegistry(hooks=[rec])
    registry.register(add)
    graph = GraphLLM(LLM(provider=agent_script(), model="gpt-4o", hooks=[rec]), retriever=retriever)
    result = Agent(graph, registry, AgentConfig(max_turns=3), hooks=[rec]).run("2+3?")
    assert result.content == "5"
    kinds = [type(e).__name__ for e in rec.events]
    assert kinds == ["LLMCallEvent", "ToolCallEvent", "AgentStepEvent", "LLMCallEvent"]
    first = rec.events[0]
    assert isinstance(first, LLMCallEvent) and first.provider == "openai"
    assert first.finish_reasons == ("tool_calls",) and first.error is None
    step = rec.events[2]
    assert isinstance(step, AgentStepEvent) and step.step.turn_num == 1
    tool_event = rec.events[1]
    assert isinstance(tool_event, ToolCallEvent) and tool_event.call.id == "c1"
    rec.events.clear()
    retriever.retrieve("alpha")
    kinds = [type(e).__name__ for e in rec.events]
    assert kinds == ["LLMCallEvent", "RetrievalEvent"]  # the query's embedding, then retrieval
    retrieval = rec.events[1]
    assert isinstance(retrieval, RetrievalEvent) and retrieval.hits[0].chunk.doc_id == "d"


def test_a_failing_hook_is_logged_and_isolated(caplog: pytest.LogCaptureFixture) -> None:
    rec = Recorder()
    llm = LLM(provider=ScriptedChatModel(["ok"]), hooks=[Broken(), rec])
    with caplog.at_level(logging.WARNING, logger="pywrapai_graph.hooks"):
        assert llm.chat("hi").content == "ok"
    assert len(rec.events) == 1  # hooks after the broken one still ran
    [record] = caplog.records
    assert "Broken.on_llm_call" in record.getMessage() and record.exc_info is not None


def test_global_and_container_hooks() -> None:
    rec = Recorder()
    register_hooks(rec)
    try:
        LLM(provider=ScriptedChatModel(["ok"])).chat("hi")
    finally:
        unregister_hooks(rec)
    LLM(provider=ScriptedChatModel(["ok"])).chat("hi")
    assert len(rec.events) == 1
    container_rec = Recorder()
    container = build_container({"store": {"backend": "memory"}}, hooks=[container_rec])
    container.retriever().add_documents([Document("alpha", id="a")])
    container.retriever().retrieve("alpha")
    assert [type(e).__name__ for e in container_rec.events][-1] == "RetrievalEvent"
    with pytest.raises(TypeError, match="Hooks"):
        LLM(provider=ScriptedChatModel(["ok"]), hooks=[object()])  # type: ignore[list-item]


# ---------------------------------------------------------------------------- no OpenTelemetry
_WORKLOAD = """
import asyncio
from pywrapai_graph import (LLM, Agent, AgentConfig, Embedder, GraphLLM, InMemoryVectorStore,
                            ToolCall, ToolRegistry, VectorRetriever, tool, Document, cost_scope)
from pywrapai_graph.testing import ScriptedChatModel
from pywrapai_graph.testing.scripted import ScriptedReply

@tool
def add(a: int, b: int) -> int:
    '''Add.'''
    return a + b

def workload():
    retriever = VectorRetriever(Embedder(provider="hashing", dimension=32), InMemoryVectorStore())
    retriever.add_documents([Document("alpha beta", id="d")])
    script = ScriptedChatModel([ScriptedReply(tool_calls=[ToolCall("c", "add", {"a": 1, "b": 2})]),
                                "3", "streamed answer", "plain"], provider="openai")
    graph = GraphLLM(LLM(provider=script, model="gpt-4o"), retriever=retriever)
    registry = ToolRegistry()
    registry.register(add)
    with cost_scope() as scope:
        asyncio.run(Agent(graph, registry, AgentConfig(max_turns=3)).arun("1+2?"))
        "".join(graph.stream("alpha?"))
        graph.chat("alpha?")
    return scope.calls
"""


def test_library_imports_and_runs_with_opentelemetry_absent() -> None:
    code = (
        "import sys\n"
        "sys.modules['opentelemetry'] = None  # any import of it now fails\n"
        + _WORKLOAD
        + "print(workload())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-1] == "6"  # 2 agent turns, 1 stream, 1 chat, 2 query embeddings


def test_import_does_not_import_opentelemetry() -> None:
    code = "import sys, pywrapai_graph, pywrapai, pywrapai_graph.observability\n"
    code += "print([m for m in sys.modules if m.startswith('opentelemetry')])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_no_tracer_provider_means_no_calls_into_opentelemetry() -> None:
    code = (
        "import sys, collections\n"
        "import opentelemetry.trace, opentelemetry.metrics  # installed, but no provider set\n"
        + _WORKLOAD
        + textwrap.dedent(
            """
            TRACING = tuple(f"observability/{m}.py" for m in
                            ("telemetry", "observation", "model_calls", "operations"))
            workload()  # warm-up: every module imported
            calls = collections.Counter()
            def profile(frame, event, arg):
                if event == "call":
                    name = frame.f_code.co_filename
                    if "opentelemetry" in name:
                        calls["otel"] += 1
                    elif name.endswith(TRACING):
                        calls["ours"] += 1
                    calls["all"] += 1
            sys.setprofile(profile)
            n = workload()
            sys.setprofile(None)
            print(n, calls["otel"], calls["ours"], calls["all"])
            """
        )
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    calls, otel, ours, total = map(int, out.stdout.split())
    assert calls == 6
    assert otel == 0
    # 16 observed operations: 4 chats, 3 embedding batches, 2 retrievals, 3 store operations,
    # 1 tool, 1 agent run, 2 agent turns. Each costs its observe_* call, the provider check
    # (gate/listeners) and the shared no-op's enter/exit/setter: at most 6 calls, nothing
    # more; plus 5 hook checks in constructors. Out of ~1,300 calls for the whole workload.
    assert ours <= 6 * 16 + 5, (ours, total)


# ---------------------------------------------------------------------------- warnings
@pytest.mark.parametrize("name", ["openai", "anthropic"])
def test_sdk_retries_are_logged_as_warnings(name: str, caplog: pytest.LogCaptureFixture) -> None:
    from pywrapai_graph.testing.wire import AnthropicWire, OpenAIWire

    wire_type = OpenAIWire if name == "openai" else AnthropicWire
    with wire_type() as wire:
        wire.fail(503, "busy", headers={"retry-after-ms": "1"}).reply("recovered")
        llm = LLM(provider=name, api_key="sk-test-key", base_url=wire.base_url, max_retries=1)
        with caplog.at_level(logging.WARNING, logger="pywrapai_graph"):
            assert llm.chat("hi").content == "recovered"
        llm.close()
        assert len(wire.requests) == 2
    [record] = [r for r in caplog.records if r.name == "pywrapai_graph.retries"]
    assert record.levelno == logging.WARNING
    assert f"{name}: retrying POST" in record.getMessage() and "retry 1" in record.getMessage()
    assert "sk-test-key" not in record.getMessage()


@pytest.mark.parametrize("name", ["gemini", "ollama"])
def test_our_retries_are_logged_as_warnings(name: str, caplog: pytest.LogCaptureFixture) -> None:
    from pywrapai_graph.testing.wire import GeminiWire, OllamaWire

    wire_type = GeminiWire if name == "gemini" else OllamaWire
    with wire_type() as wire:
        wire.fail(503, "busy").reply("recovered")
        options: dict[str, Any] = {"api_key": "g-test-key"} if name == "gemini" else {}
        llm = LLM(provider=name, base_url=wire.base_url, max_retries=1, **options)
        with caplog.at_level(logging.WARNING, logger="pywrapai_graph"):
            assert llm.chat("hi").content == "recovered"
        llm.close()
    [record] = [r for r in caplog.records if r.name == "pywrapai_graph.retries"]
    assert f"{name}: retrying in" in record.getMessage()
    assert "retry 1 of 1" in record.getMessage()
    assert "g-test-key" not in record.getMessage()


async def test_async_sdk_retries_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    from pywrapai_graph.testing.wire import OpenAIWire

    with OpenAIWire() as wire:
        wire.fail(503, "busy", headers={"retry-after-ms": "1"}).reply("recovered")
        llm = LLM(provider="openai", api_key="k", base_url=wire.base_url, max_retries=1)
        with caplog.at_level(logging.WARNING, logger="pywrapai_graph.retries"):
            assert (await llm.achat("hi")).content == "recovered"
        await llm.aclose()
    assert [r.name for r in caplog.records] == ["pywrapai_graph.retries"]


def test_skipped_files_are_logged_as_warnings(
    tmp_path: object, caplog: pytest.LogCaptureFixture
) -> None:
    import pathlib

    from pywrapai_graph.adapters.sources.text_files import TextFiles

    assert isinstance(tmp_path, pathlib.Path)
    (tmp_path / "good.txt").write_text("fine")
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe not utf-8 \xff")
    files = TextFiles([str(tmp_path)])
    with caplog.at_level(logging.WARNING, logger="pywrapai_graph"):
        docs = list(files.documents())
    assert len(docs) == 1
    [record] = caplog.records
    assert record.levelno == logging.WARNING and "bad.txt" in record.getMessage()
    assert "not UTF-8" in record.getMessage()
