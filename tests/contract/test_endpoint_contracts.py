"""The enterprise endpoints pass the chat-model contract, each through its official SDK's
platform client over real HTTP to a local server speaking that platform's wire format:
chat, usage and cost, tool calls, streams (Bedrock's as an AWS event stream), async clients
per loop, structured output, typed errors, timeouts and secrets kept out of every error."""

from __future__ import annotations

from typing import Any

from pywrapai_graph.composition.providers import make_chat_model
from pywrapai_graph.domain import ToolCall
from pywrapai_graph.ports import ChatModel
from pywrapai_graph.testing import ScriptedReply
from pywrapai_graph.testing.contracts.chat_model import ChatModelContract
from pywrapai_graph.testing.wire import (
    AnthropicVertexWire,
    AzureOpenAIWire,
    BedrockWire,
    GeminiVertexWire,
)
from pywrapai_graph.testing.wire.server import WireServer
from tests.contract.endpoint_clients import MODELS, endpoint_options


class _Endpoint(ChatModelContract):
    provider: str

    def chat_model(self, wire: WireServer, **options: Any) -> ChatModel:
        return make_chat_model(
            self.provider, self.model, endpoint_options(self.provider, wire, **options)
        )


class TestAzureOpenAI(_Endpoint):
    provider = "azure-openai"
    model = MODELS[provider]

    def wire_server(self) -> WireServer:
        return AzureOpenAIWire()


class _Claude(_Endpoint):
    def structured_reply(self, value: dict[str, Any]) -> ScriptedReply | str:
        return ScriptedReply(tool_calls=[ToolCall("toolu_1", "City", value)])  # a forced tool


class TestAnthropicBedrock(_Claude):
    provider = "anthropic-bedrock"
    model = MODELS[provider]

    def wire_server(self) -> WireServer:
        return BedrockWire()


class TestAnthropicVertex(_Claude):
    provider = "anthropic-vertex"
    model = MODELS[provider]

    def wire_server(self) -> WireServer:
        return AnthropicVertexWire()


class TestGeminiVertex(_Endpoint):
    provider = "gemini-vertex"
    model = MODELS[provider]
    retry_after = False  # google-genai's errors carry no response headers

    def wire_server(self) -> WireServer:
        return GeminiVertexWire()
