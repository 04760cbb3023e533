"""Local HTTP servers that speak each LLM and rerank provider's wire format, for offline SDK
tests."""

from pywrapai_graph.testing.wire.azure import AzureOpenAIWire
from pywrapai_graph.testing.wire.bedrock import BedrockWire
from pywrapai_graph.testing.wire.cohere import CohereWire
from pywrapai_graph.testing.wire.providers import AnthropicWire, GeminiWire, OllamaWire, OpenAIWire
from pywrapai_graph.testing.wire.responses import OpenAIResponsesWire
from pywrapai_graph.testing.wire.server import (
    RecordedRequest,
    Responder,
    WireResponse,
    WireServer,
)
from pywrapai_graph.testing.wire.vertex import AnthropicVertexWire, GeminiVertexWire

__all__ = [
    "AnthropicVertexWire",
    "AnthropicWire",
    "AzureOpenAIWire",
    "BedrockWire",
    "CohereWire",
    "GeminiVertexWire",
    "GeminiWire",
    "OllamaWire",
    "OpenAIResponsesWire",
    "OpenAIWire",
    "RecordedRequest",
    "Responder",
    "WireResponse",
    "WireServer",
]
