"""Pure values of pywrapai-graph (standard library only)."""

from pywrapai_graph.domain.documents import Chunk, Document, ScoredChunk
from pywrapai_graph.domain.generation import (
    GenerationOptions,
    GenerationParams,
    UnsupportedParameterWarning,
)
from pywrapai_graph.domain.messages import Message, Role, ToolCall, ToolResult
from pywrapai_graph.domain.request import ChatRequest, ResponseFormat, ToolSpec
from pywrapai_graph.domain.response import InjectedChunk, LLMResponse, StreamChunk
from pywrapai_graph.domain.usage import CallKind, CallRecord, CostTotals, TokenUsage

__all__ = [
    "CallKind",
    "CallRecord",
    "ChatRequest",
    "Chunk",
    "CostTotals",
    "Document",
    "GenerationOptions",
    "GenerationParams",
    "InjectedChunk",
    "LLMResponse",
    "Message",
    "ResponseFormat",
    "Role",
    "ScoredChunk",
    "StreamChunk",
    "TokenUsage",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "UnsupportedParameterWarning",
]
