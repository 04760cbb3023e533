"""A stream that ends early still books what the provider produced — once — in the ledger, the
request's cost scope and the span: closed by the consumer (``break``, ``close()``, garbage
collection), its task cancelled mid-stream, or cut off by the server; a stream that had fallen
back to a second model still names the model that failed. Each provider's official SDK over
real HTTP to its local wire server."""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from pywrapai import LLM, TokenUsage
from pywrapai_graph import GraphLLM
from pywrapai_graph.application.embed_texts import estimate_tokens
from pywrapai_graph.domain import CallRecord, FailedAttempt
from pywrapai_graph.errors import IncompleteStreamError
from pywrapai_graph.observability import CostScope, configure, cost_scope
from pywrapai_graph.testing import ScriptedReply
from pywrapai_graph.testing.contracts.chat_model import SECRET
from pywrapai_graph.testing.wire import AnthropicWire, GeminiWire, OllamaWire, OpenAIWire
from pywrapai_graph.testing.wire.server import WireResponse, WireServer

PROMPT = "Tell me about the Greek alphabet, please."
REPLY = ScriptedReply("Alpha beta gamma delta", usage=TokenUsage(30, 7))
FIRST = "Alpha be"  # the first streamed piece of REPLY on every wire server
PROMPT_ESTIMATE = estimate_tokens([PROMPT])


class _Held(list[bytes]):
    """Stream chunks that pause after the first text piece until ``release`` is set."""

    def __init__(self, chunks: list[bytes], release: threading.Event) -> None:
        super().__init__(chunks)
        self.release = release

    def __iter__(self) -> Iterator[bytes]:
        for chunk in list.__iter__(self):
            yield chunk
            if FIRST.encode() in chunk:
                self.release.wait(10)


class _Holding(WireServer):
    """Holds every streamed reply after its first text piece (``release`` lets it end)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def render_chat(self, reply: ScriptedReply, body: Any, stream: bool) -> WireResponse:
        response = super().render_chat(reply, body, stream)
        if stream and response.chunks is not None:
            response.chunks = _Held(response.chunks, self.release)
        return response

    def stop(self) -> None:
        self.release.set()
        super().stop()


class HoldingOpenAI(_Holding, OpenAIWire):
    pass


class HoldingAnthropic(_Holding, AnthropicWire):
    pass


class HoldingGemini(_Holding, GeminiWire):
    pass


class HoldingOllama(_Holding, OllamaWire):
    pass


@dataclass(frozen=True)
class Kind:
    make: Callable[[], _Holding]
    keep: int  # chunks up to and including the first text piece, for WireServer.cut
    reported_input: int  # input tokens the provider reported before its first text, if any


KINDS = {
    "openai": Kind(HoldingOpenAI, 2, 0),
    "anthropic": Kind(HoldingAnthropic, 3, 30),  # message_start carries the input usage
    "gemini": Kind(HoldingGemini, 1, 0),
    "ollama": Kind(HoldingOllama, 1, 0),
}


@dataclass
class Provider:
    name: str
    wire: _Holding
    kind: Kind
    llm: LLM
    spans: InMemorySpanExporter

    def chat_spans(self) -> list[ReadableSpan]:
        return [s for s in self.spans.get_finished_spans() if s.name.startswith("chat ")]


@pytest.fixture(params=list(KINDS))
def provider(request: pytest.FixtureRequest) -> Iterator[Provider]:
    name: str = request.param
    kind = KINDS[name]
    spans = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(spans))
    configure(tracer_provider=tracing)
    try:
        with kind.make() as wire:
            options: dict[str, Any] = {"timeout": 10.0, "max_retries": 0}
            options["base_url"] = wire.base_url if name == "openai" else wire.url
            if name != "ollama":
                options["api_key"] = SECRET
            llm = LLM(provider=name, **options)
            yield Provider(name, wire, kind, llm, spans)
            llm.close()
    finally:
        configure()


def _one_estimated_record(p: Provider, scope: CostScope, text: str) -> CallRecord:
    """Exactly one record, its usage estimated where the provider had not reported it, the
    same call counted in the scope and on the span."""
    [record] = p.llm.tokens.records
    assert record.estimated
    assert record.usage.input_tokens == (p.kind.reported_input or PROMPT_ESTIMATE)
    assert record.usage.output_tokens == estimate_tokens([text])
    assert p.llm.tokens.totals.estimated_calls == 1
    totals = scope.totals
    assert (totals.calls, totals.estimated_calls, totals.usage) == (1, 1, record.usage)
    assert totals.cost_usd == record.cost_usd
    [span] = p.chat_spans()
    attrs = dict(span.attributes or {})
    assert attrs["pywrapai.usage.estimated"] is True
    assert attrs["gen_ai.usage.input_tokens"] == record.usage.input_tokens
    assert attrs["gen_ai.usage.output_tokens"] == record.usage.output_tokens
    assert attrs["pywrapai.cost_usd"] == record.cost_usd
    return record


def _finish(p: Provider) -> None:
    p.wire.release.set()  # the held server thread ends its reply


# ---------------------------------------------------------------------------- sync


def test_break_after_the_first_piece(provider: Provider) -> None:
    provider.wire.reply(REPLY)
    with cost_scope() as scope:
        for piece in provider.llm.stream(PROMPT):
            assert piece == FIRST
            break  # the stream object is dropped here, as in most loops
        _finish(provider)
    _one_estimated_record(provider, scope, FIRST)
    assert provider.chat_spans()[0].attributes["pywrapai.stream.abandoned"] is True  # type: ignore[index]


def test_close_and_garbage_collection(provider: Provider) -> None:
    provider.wire.reply(REPLY, REPLY)
    with cost_scope() as closed:
        stream = provider.llm.stream(PROMPT)
        assert next(stream) == FIRST
        stream.close()
        stream.close()  # twice: still one record
        _finish(provider)
    _one_estimated_record(provider, closed, FIRST)
    provider.llm.tokens.reset()
    provider.spans.clear()
    provider.wire.release.clear()
    with cost_scope() as collected:
        graph = GraphLLM(llm=provider.llm)
        dropped = graph.stream(PROMPT)
        assert next(dropped) == FIRST
        del dropped
        gc.collect()
        _finish(provider)
    _one_estimated_record(provider, collected, FIRST)


def test_a_stream_read_to_its_end_is_booked_once_with_the_reported_usage(
    provider: Provider,
) -> None:
    provider.wire.reply(REPLY)
    _finish(provider)  # nothing held
    with cost_scope() as scope:
        stream = provider.llm.stream(PROMPT)
        assert stream.text() == REPLY.content
        stream.close()  # after the end: nothing more to book
    [record] = provider.llm.tokens.records
    assert (record.usage, record.estimated) == (REPLY.usage, False)
    assert (scope.calls, scope.totals.estimated_calls) == (1, 0)
    assert "pywrapai.usage.estimated" not in (provider.chat_spans()[0].attributes or {})


def test_the_server_cuts_the_stream(provider: Provider) -> None:
    provider.wire.cut(REPLY, keep=provider.kind.keep)
    with cost_scope() as scope:
        stream = provider.llm.stream(PROMPT)
        with pytest.raises(IncompleteStreamError):
            for _ in stream:
                pass
    _one_estimated_record(provider, scope, FIRST)


# ---------------------------------------------------------------------------- async


def test_async_break_then_aclose_and_a_dropped_stream(provider: Provider) -> None:
    provider.wire.reply(REPLY, REPLY)

    async def run() -> tuple[CostScope, CostScope]:
        with cost_scope() as closed:
            stream = provider.llm.astream(PROMPT)
            async for piece in stream:
                assert piece == FIRST
                break
            await stream.aclose()
        _finish(provider)
        first = provider.llm.tokens.records
        assert len(first) == 1
        with cost_scope() as dropped:
            graph = GraphLLM(llm=provider.llm)
            abandoned = graph.astream(PROMPT)
            assert await anext(abandoned) == FIRST
        del abandoned  # the event loop's finaliser closes it, outside the scope's block
        for _ in range(5):
            await asyncio.sleep(0)
        await provider.llm.aclose()
        return closed, dropped

    closed, dropped = asyncio.run(run())
    first, second = provider.llm.tokens.records
    assert first.estimated and second.estimated
    assert (closed.calls, dropped.calls) == (1, 1)
    assert dropped.usage == second.usage


def test_async_task_cancelled_mid_stream(provider: Provider) -> None:
    provider.wire.reply(REPLY)
    received: list[str] = []

    async def consume(scope_out: list[CostScope]) -> None:
        with cost_scope() as scope:
            scope_out.append(scope)
            async for piece in provider.llm.astream(PROMPT):
                received.append(piece)

    async def run() -> CostScope:
        scopes: list[CostScope] = []
        task = asyncio.create_task(consume(scopes))
        while not received:
            await asyncio.sleep(0.01)
        task.cancel()  # while it waits for the provider's next piece
        with pytest.raises(asyncio.CancelledError):
            await task
        _finish(provider)
        await provider.llm.aclose()
        return scopes[0]

    scope = asyncio.run(run())
    assert received == [FIRST]
    _one_estimated_record(provider, scope, FIRST)
    assert provider.chat_spans()[0].attributes["pywrapai.cancelled"] is True  # type: ignore[index]


def test_async_server_cut(provider: Provider) -> None:
    provider.wire.cut(REPLY, keep=provider.kind.keep)

    async def run() -> CostScope:
        with cost_scope() as scope:
            try:
                with pytest.raises(IncompleteStreamError):
                    async for _ in provider.llm.astream(PROMPT):
                        pass
            finally:
                await provider.llm.aclose()
        return scope

    _one_estimated_record(provider, asyncio.run(run()), FIRST)


# ---------------------------------------------------------------------------- fallbacks


async def _drop_async(llm: LLM, drop: str, backup: _Holding) -> None:
    """Read the first piece of an async stream, then drop it as ``drop`` says."""
    if drop == "aclose":
        stream = llm.astream(PROMPT)
        assert await anext(stream) == FIRST
        await stream.aclose()
    else:  # the client disconnects: the task reading the stream is cancelled

        async def consume() -> None:
            async for _ in llm.astream(PROMPT):
                started.set()

        started = asyncio.Event()
        task = asyncio.create_task(consume())
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    backup.release.set()
    await llm.aclose()


@pytest.mark.parametrize("drop", ["close", "collected", "aclose", "cancelled"])
def test_a_dropped_stream_keeps_its_fallback_attribution(drop: str) -> None:
    spans = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(spans))
    configure(tracer_provider=tracing)
    try:
        with OpenAIWire() as primary, HoldingAnthropic() as backup:
            primary.fail(429, "slow down")
            backup.reply(REPLY)
            fallback = {"provider": "anthropic", "model": "claude-haiku-4-5-20251001"}
            fallback.update(base_url=backup.url, api_key=SECRET)
            llm = LLM(
                provider="openai",
                model="gpt-4o-mini",
                base_url=primary.base_url,
                api_key=SECRET,
                max_retries=0,
                fallbacks=[{**fallback, "max_retries": 0}],
            )
            if drop in ("aclose", "cancelled"):
                asyncio.run(_drop_async(llm, drop, backup))
            else:
                stream = llm.stream(PROMPT)
                assert next(stream) == FIRST
                if drop == "close":
                    stream.close()
                del stream
                gc.collect()
                backup.release.set()
                llm.close()
    finally:
        configure()
    failed = (FailedAttempt("openai", "gpt-4o-mini", "RateLimitError", 429),)
    [record] = llm.tokens.records
    assert (record.provider, record.estimated, record.fallback_from) == ("anthropic", True, failed)
    answered = [s for s in spans.get_finished_spans() if s.name.startswith("chat ")][-1]
    assert (answered.attributes or {})["pywrapai.fallback.from"] == (str(failed[0]),)
