"""A chat request as the chat-model port receives it: fully assembled, provider-neutral."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from pywrapai_graph.domain.generation import GenerationParams
from pywrapai_graph.domain.messages import Message
from pywrapai_graph.errors import InvalidArgumentError

__all__ = ["ChatRequest", "ResponseFormat", "StructuredMode", "ToolSpec"]

#: How structured output is asked for: "native" (the provider's JSON-schema field), "tool"
#: (a forced tool call whose arguments are the object) or "auto" (the adapter's choice).
StructuredMode = Literal["auto", "native", "tool"]

#: A provider-neutral tool definition, as ``ToolRegistry.to_schema()`` returns:
#: ``{"name": ..., "description": ..., "parameters": {JSON Schema object}}``.
ToolSpec = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ResponseFormat:
    """Ask the model for JSON matching ``json_schema`` (structured output).

    Adapters must return the JSON document as the response's ``content`` text; on the forced
    tool path they also return the tool call itself in ``tool_calls``, so that a retry can
    answer it with a tool result.

    Attributes:
        name: the schema's name (the forced tool's name).
        json_schema: the JSON Schema of the object.
        mode: "native", "tool" or "auto"; a provider with a single way ignores it.

    Raises:
        InvalidArgumentError: ``mode`` is none of the three.
    """

    name: str
    json_schema: Mapping[str, Any]
    mode: StructuredMode = "auto"

    def __post_init__(self) -> None:
        if self.mode not in get_args(StructuredMode):
            raise InvalidArgumentError(
                f"mode={self.mode!r}: pass 'auto', 'native' (the provider's JSON-schema "
                "output) or 'tool' (a forced tool call)"
            )


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
