"""Local HTTP servers that speak each LLM and rerank provider's wire format, for offline SDK
tests."""

from pywrapai_graph.testing.wire.cohere import CohereWire
from pywrapai_graph.testing.wire.providers import AnthropicWire, GeminiWire, OllamaWire, OpenAIWire
from pywrapai_graph.testing.wire.responses import OpenAIResponsesWire
from pywrapai_graph.testing.wire.server import (
    RecordedRequest,
    Responder,
    WireResponse,
    WireServer,
)

__all__ = [
    "AnthropicWire",
    "CohereWire",
    "GeminiWire",
    "OllamaWire",
    "OpenAIResponsesWire",
    "OpenAIWire",
    "RecordedRequest",
    "Responder",
    "WireResponse",
    "WireServer",
]
