"""Domain: the pure values everything else speaks in (standard library only).

Messages (``Message``, ``Role``, ``ToolCall``, ``ToolResult``), requests and responses
(``ChatRequest``, ``LLMResponse``, ``StreamChunk``), usage and cost (``TokenUsage``,
``CallRecord``), documents (``Document``, ``Chunk``, ``ScoredChunk``, manifests) and agent
results. Frozen, slotted dataclasses; no I/O, no third-party import (import-linter's
``external_imports`` contract checks that). Layer rule: imports nothing of the package
except ``errors`` and ``redaction``.
"""

from pywrapai_graph.domain.documents import Chunk, Document, ScoredChunk
from pywrapai_graph.domain.fallback import FailedAttempt
from pywrapai_graph.domain.generation import (
    GenerationOptions,
    GenerationParams,
    UnsupportedParameterWarning,
)
from pywrapai_graph.domain.limits import Limits
from pywrapai_graph.domain.messages import Message, Role, ToolCall, ToolResult
from pywrapai_graph.domain.parts import DocumentPart, ImagePart, Part, TextPart
from pywrapai_graph.domain.reasoning import ReasoningPart
from pywrapai_graph.domain.request import ChatRequest, ResponseFormat, ToolSpec
from pywrapai_graph.domain.response import InjectedChunk, LLMResponse, StreamChunk, ToolCallDelta
from pywrapai_graph.domain.usage import CallKind, CallRecord, CostTotals, TokenUsage

__all__ = [
    "CallKind",
    "CallRecord",
    "ChatRequest",
    "Chunk",
    "CostTotals",
    "Document",
    "DocumentPart",
    "FailedAttempt",
    "GenerationOptions",
    "GenerationParams",
    "ImagePart",
    "InjectedChunk",
    "LLMResponse",
    "Limits",
    "Message",
    "Part",
    "ReasoningPart",
    "ResponseFormat",
    "Role",
    "ScoredChunk",
    "StreamChunk",
    "TextPart",
    "TokenUsage",
    "ToolCall",
    "ToolCallDelta",
    "ToolResult",
    "ToolSpec",
    "UnsupportedParameterWarning",
]
