"""A chat request as the chat-model port receives it: fully assembled, provider-neutral."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pywrapai_graph.domain.generation import GenerationParams
from pywrapai_graph.domain.messages import Message

__all__ = ["ChatRequest", "ResponseFormat", "ToolSpec"]

#: A provider-neutral tool definition, as ``ToolRegistry.to_schema()`` returns:
#: ``{"name": ..., "description": ..., "parameters": {JSON Schema object}}``.
ToolSpec = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ResponseFormat:
    """Ask the model for JSON matching ``json_schema`` (structured output).

    Adapters must return the JSON document as the response's ``content`` text.
    """

    name: str
    json_schema: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """Everything an adapter needs for one call.

    Attributes:
        messages: the complete, assembled list (system prompt first, if any).
        model: the model to call.
        tools: neutral tool definitions; adapters convert them to their wire format.
        tool_choice: "auto", "required", "none" or a tool name; None leaves the provider default.
        response_format: structured output request, or None for free text.
        temperature: sampling temperature, or None for the provider default.
        max_tokens: output token cap, or None for the adapter's default.
        top_p, stop, seed: the other :class:`GenerationParams`, None when unset.
        extra: provider-specific parameters passed through unchanged.
    """

    messages: tuple[Message, ...]
    model: str
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: str | None = None
    response_format: ResponseFormat | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    top_p: float | None = None
    stop: tuple[str, ...] | None = None
    seed: int | None = None

    @property
    def generation(self) -> GenerationParams:
        """The generation parameters of this request."""
        return GenerationParams(self.max_tokens, self.temperature, self.top_p, self.stop, self.seed)

    @property
    def tool_names(self) -> list[str]:
        """Names of the offered tools, in order."""
        return [str(t.get("name", "")) for t in self.tools]
