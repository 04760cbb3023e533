"""The contract every chat-model adapter must pass, through its SDK against a wire server.

Subclass :class:`ChatModelContract` and say how to start a server that speaks your
provider's wire format and how to build your adapter against it::

    class TestMyProvider(ChatModelContract):
        model = "my-model"

        def wire_server(self) -> WireServer:
            return MyWire()          # a WireServer subclass rendering your wire format

        def chat_model(self, wire: WireServer, **options: Any) -> ChatModel:
            return MyChatModel(self.model, base_url=wire.url, **options)

The cases talk to the adapter through the port (``ChatModel``) and the application's
``CallModel`` use case, so they hold for a user's adapter exactly as for the built-in ones.
What a provider does differently is declared, not skipped: ``priced``,
``tool_call_ids``, ``retry_after`` and :meth:`structured_reply`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import traceback
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from pywrapai_graph.application.call_model import CallModel
from pywrapai_graph.application.token_tracker import TokenTracker
from pywrapai_graph.application.tools import ToolRegistry, tool
from pywrapai_graph.domain import (
    ChatRequest,
    LLMResponse,
    Message,
    Role,
    TokenUsage,
    ToolCall,
    ToolCallDelta,
)
from pywrapai_graph.domain.messages import ToolResult
from pywrapai_graph.errors import (
    AuthenticationError,
    ProviderTimeoutError,
    ProviderUnavailableError,
    RateLimitError,
    StructuredOutputError,
)
from pywrapai_graph.ports import ChatModel
from pywrapai_graph.testing.scripted import ScriptedReply
from pywrapai_graph.testing.wire.server import WireServer

__all__ = [
    "SECRET",
    "ChatModelContract",
    "City",
    "get_weather",
    "search_docs",
    "tool_registry",
]

#: The API key the contract gives adapters; it must never appear in an error, log or repr.
SECRET = "sk-test-SECRET-0123456789"


class City(BaseModel):
    """The structured-output schema of the contract."""

    name: str
    population: int


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return f"16°C, cloudy in {city}"


@tool
def search_docs(query: str, limit: int = 5) -> str:
    """Search internal documentation."""
    return f"Found {limit} results for: {query}"


def tool_registry() -> ToolRegistry:
    """The contract's two tools, registered."""
    registry = ToolRegistry()
    registry.register(get_weather)
    registry.register(search_docs)
    return registry


class ChatModelContract(ABC):
    """The behaviour every :class:`~pywrapai_graph.ports.ChatModel` adapter promises."""

    #: The model the cases ask for.
    model: ClassVar[str]
    #: Calls cost money: the default price table must price ``model`` (False: cost is 0).
    priced: ClassVar[bool] = True
    #: The provider sends tool-call ids (False: the adapter numbers them ``call_0``, ...).
    tool_call_ids: ClassVar[bool] = True
    #: A 429's ``retry-after`` header reaches ``RateLimitError.retry_after``.
    retry_after: ClassVar[bool] = True

    @abstractmethod
    def wire_server(self) -> WireServer:
        """A (not yet started) local server speaking the provider's wire format."""

    @abstractmethod
    def chat_model(self, wire: WireServer, **options: Any) -> ChatModel:
        """The adapter, pointed at ``wire``; ``options`` may set ``api_key`` and ``timeout``
        (defaults: the contract's :data:`SECRET`, 5 s, no retries)."""

    def structured_reply(self, value: dict[str, Any]) -> ScriptedReply | str:
        """How the provider answers a structured-output request with ``value``."""
        import json

        return json.dumps(value)

    # ------------------------------------------------------------------ fixtures
    @pytest.fixture
    def wire(self) -> Iterator[WireServer]:
        with self.wire_server() as server:
            yield server

    @pytest.fixture
    def adapter(self, wire: WireServer) -> Iterator[ChatModel]:
        model = self.chat_model(wire)
        yield model
        model.close()

    def _calls(self, adapter: ChatModel) -> tuple[CallModel, TokenTracker]:
        tracker = TokenTracker()
        return CallModel(adapter, tracker), tracker

    def _request(self, text: str = "Hi", **fields: Any) -> ChatRequest:
        return ChatRequest(messages=(Message(Role.USER, text),), model=self.model, **fields)

    # ------------------------------------------------------------------ plain chat
    def test_chat_text_usage_and_cost(self, wire: WireServer, adapter: ChatModel) -> None:
        wire.reply(ScriptedReply("Hello!", usage=TokenUsage(1000, 500)))
        calls, tracker = self._calls(adapter)
        response = calls.chat(self._request())
        assert response.content == "Hello!"
        assert (response.usage.input_tokens, response.usage.output_tokens) == (1000, 500)
        assert response.provider == adapter.provider
        [rec] = tracker.records
        assert rec.usage == response.usage
        if not self.priced:
            assert rec.cost_usd == 0.0
            return
        price = tracker.prices.price_for(self.model)
        assert price is not None, f"the default price table does not price {self.model!r}"
        assert rec.cost_usd == pytest.approx(price.cost(response.usage))
        assert rec.cost_usd > 0

    def test_tool_calls_parsed(self, wire: WireServer, adapter: ChatModel) -> None:
        calls = [
            ToolCall("call_1", "get_weather", {"city": "London"}),
            ToolCall("call_2", "search_docs", {"query": "refunds", "limit": 2}),
        ]
        wire.reply(ScriptedReply(tool_calls=calls))
        response = adapter.chat(self._request("q", tools=tuple(tool_registry().to_schema())))
        assert response.content == ""
        assert [(c.name, c.arguments) for c in response.tool_calls] == [
            ("get_weather", {"city": "London"}),
            ("search_docs", {"query": "refunds", "limit": 2}),
        ]
        expected = ["call_1", "call_2"] if self.tool_call_ids else ["call_0", "call_1"]
        assert [c.id for c in response.tool_calls] == expected

    def test_full_tool_calling_flow(self, wire: WireServer, adapter: ChatModel) -> None:
        wire.reply(
            ScriptedReply(tool_calls=[ToolCall("call_abc", "get_weather", {"city": "London"})]),
            "The weather in London is 16°C and cloudy.",
        )
        registry = tool_registry()
        question = Message(Role.USER, "What's the weather in London?")
        first = adapter.chat(
            ChatRequest((question,), self.model, tuple(registry.to_schema()), "auto")
        )
        [call] = first.tool_calls
        result = registry.execute(call)
        assert result.content == "16°C, cloudy in London"
        history = (
            question,
            Message(Role.ASSISTANT, "", tool_calls=first.tool_calls),
            Message(
                Role.TOOL,
                result.content,
                tool_result=ToolResult(call.id, call.name, result.content),
            ),
        )
        final = adapter.chat(ChatRequest(history, self.model))
        assert final.content == "The weather in London is 16°C and cloudy."
        assert "16°C, cloudy in London" in str(list(wire.chat_requests())[-1].json)

    # ------------------------------------------------------------------ streams
    def test_stream_text_then_usage(self, wire: WireServer, adapter: ChatModel) -> None:
        wire.reply(
            ScriptedReply("Once upon a time, there was a library.", usage=TokenUsage(40, 12))
        )
        calls, tracker = self._calls(adapter)
        pieces = []
        for piece in calls.stream(self._request("Write a story")):
            pieces.append(piece)
            assert len(tracker) == 0  # usage is known only at the end
        assert "".join(pieces) == "Once upon a time, there was a library."
        assert len(pieces) >= 3
        assert tracker.total_usage == TokenUsage(40, 12)

    def test_stream_tolerates_tool_call_deltas(self, wire: WireServer, adapter: ChatModel) -> None:
        call = ToolCall("call_9", "get_weather", {"city": "A very long city name"})
        wire.reply(ScriptedReply("Checking.", tool_calls=[call], usage=TokenUsage(5, 6)))
        calls, tracker = self._calls(adapter)
        assert "".join(calls.stream(self._request("go"))) == "Checking."
        assert tracker.total_usage == TokenUsage(5, 6)

    def test_stream_tool_calls_piece_by_piece(self, wire: WireServer, adapter: ChatModel) -> None:
        """Each call streams as a delta naming it, then pieces of its JSON arguments; the
        final response holds the decoded calls (sync and async)."""
        calls = [
            ToolCall("call_1", "get_weather", {"city": "A very long city name"}),
            ToolCall("call_2", "search_docs", {"query": "refunds", "limit": 2}),
        ]
        wire.reply(*[ScriptedReply("Checking.", tool_calls=calls)] * 2)
        use_case, _ = self._calls(adapter)
        request = self._request("go", tools=tuple(tool_registry().to_schema()))
        stream = use_case.stream(request)
        events = list(stream.events())

        async def astream() -> tuple[list[str | ToolCallDelta], LLMResponse]:
            streamed = use_case.astream(request)
            seen = [event async for event in streamed.events()]
            await adapter.aclose()
            return seen, streamed.response

        for seen, response in ((events, stream.response), asyncio.run(astream())):
            assert "".join(e for e in seen if isinstance(e, str)) == "Checking."
            deltas = [e for e in seen if isinstance(e, ToolCallDelta)]
            ids = [c.id for c in response.tool_calls]
            for i, call in enumerate(calls):
                mine = [d for d in deltas if d.index == i]
                assert (mine[0].id, mine[0].name, mine[0].arguments) == (ids[i], call.name, "")
                assert json.loads("".join(d.arguments for d in mine[1:])) == call.arguments
            expected = ["call_1", "call_2"] if self.tool_call_ids else ["call_0", "call_1"]
            assert ids == expected
            assert [(c.name, c.arguments) for c in response.tool_calls] == [
                (c.name, c.arguments) for c in calls
            ]

    def test_async_chat_and_stream(self, wire: WireServer, adapter: ChatModel) -> None:
        wire.reply(
            ScriptedReply("async hello", usage=TokenUsage(3, 2)),
            ScriptedReply("async stream text", usage=TokenUsage(4, 5)),
        )
        calls, tracker = self._calls(adapter)

        async def run() -> tuple[str, str]:
            response = await calls.achat(self._request())
            text = "".join([p async for p in calls.astream(self._request("story"))])
            await adapter.aclose()
            return response.content, text

        assert asyncio.run(run()) == ("async hello", "async stream text")
        assert tracker.total_usage == TokenUsage(7, 7)

    def test_async_clients_are_safe_across_event_loops(
        self, wire: WireServer, adapter: ChatModel
    ) -> None:
        """Repeated ``asyncio.run`` and a loop in another thread each get their own client."""
        wire.reply("first", "second", "third", "fourth")

        async def ask() -> str:
            return (await adapter.achat(self._request())).content

        async def ask_stream() -> str:
            return "".join([c.text async for c in adapter.astream(self._request()) if c.text])

        assert asyncio.run(ask()) == "first"
        assert asyncio.run(ask()) == "second"  # a new loop: no "Event loop is closed"
        in_thread: list[str] = []
        thread = threading.Thread(target=lambda: in_thread.append(asyncio.run(ask_stream())))
        thread.start()
        thread.join()
        assert in_thread == ["third"]

        async def ask_and_close() -> str:
            answer = await ask()
            await adapter.aclose()
            return answer

        assert asyncio.run(ask_and_close()) == "fourth"

    # ------------------------------------------------------------------ structured output
    def _structured(self, adapter: ChatModel) -> LLMResponse:
        city = CallModel.structured_format(City)
        return adapter.chat(self._request("Biggest French city?", response_format=city))

    def test_structured_output(self, wire: WireServer, adapter: ChatModel) -> None:
        wire.reply(self.structured_reply({"name": "Paris", "population": 2100000}))
        response = self._structured(adapter)
        assert CallModel.parse_structured(response, City) == City(name="Paris", population=2100000)

    def test_invalid_structured_output_keeps_raw_text(
        self, wire: WireServer, adapter: ChatModel
    ) -> None:
        reply = self.structured_reply({"name": "Paris"})
        wire.reply(reply if not isinstance(reply, str) else '{"name": "Paris", "population": "x"')
        with pytest.raises(StructuredOutputError) as info:
            CallModel.parse_structured(self._structured(adapter), City)
        assert "Paris" in info.value.raw

    # ------------------------------------------------------------------ errors
    def test_401_is_authentication_error_without_the_key(
        self, wire: WireServer, adapter: ChatModel
    ) -> None:
        wire.fail(401, f"Incorrect API key provided: {SECRET}")
        with pytest.raises(AuthenticationError) as info:
            adapter.chat(self._request())
        assert SECRET not in str(info.value)
        assert info.value.__cause__ is not None
        assert info.value.status_code == 401

    def test_429_is_rate_limit(self, wire: WireServer, adapter: ChatModel) -> None:
        wire.fail(429, "slow down", headers={"retry-after": "2"})
        with pytest.raises(RateLimitError) as info:
            adapter.chat(self._request())
        if self.retry_after:
            assert info.value.retry_after == 2.0

    def test_500_is_provider_unavailable(self, wire: WireServer, adapter: ChatModel) -> None:
        wire.fail(500, "internal")
        with pytest.raises(ProviderUnavailableError):
            adapter.chat(self._request())

    def test_timeout(self, wire: WireServer) -> None:
        wire.stall(3.0)
        model = self.chat_model(wire, timeout=0.5)
        try:
            with pytest.raises(ProviderTimeoutError):
                model.chat(self._request())
        finally:
            model.close()

    def test_unreachable_server_is_provider_unavailable(self, wire: WireServer) -> None:
        model = self.chat_model(wire, timeout=2.0)
        wire.stop()
        try:
            with pytest.raises(ProviderUnavailableError):
                model.chat(self._request())
        finally:
            model.close()

    def test_repr_shows_no_secret(self, adapter: ChatModel) -> None:
        assert SECRET not in repr(adapter)

    def test_an_echoed_key_is_nowhere_in_the_traceback_or_log(
        self, wire: WireServer, caplog: pytest.LogCaptureFixture
    ) -> None:
        odd_key = "not-shaped-like-a-key-4242"  # only known-secret masking can catch this one
        wire.fail(401, f"Incorrect API key provided: {SECRET} / {odd_key}")
        model = self.chat_model(wire, api_key=odd_key)
        try:
            with pytest.raises(AuthenticationError) as info:
                model.chat(self._request())
        finally:
            model.close()
        text = "".join(traceback.format_exception(info.value))
        with caplog.at_level(logging.ERROR):
            try:
                raise info.value
            except AuthenticationError:
                logging.getLogger("test").exception("provider failed")
        chain = []
        cause = info.value.__cause__
        while cause is not None:
            chain.append(str(cause))
            cause = cause.__cause__
        for shown in (text, caplog.text, *chain):
            assert odd_key not in shown
            assert SECRET not in shown
        assert "Incorrect API key provided" in text  # the message survives, redacted
