"""What a chat model returns, whole or streamed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pywrapai_graph.domain.fallback import FailedAttempt
from pywrapai_graph.domain.messages import Message, Role, ToolCall
from pywrapai_graph.domain.reasoning import ReasoningPart
from pywrapai_graph.domain.usage import TokenUsage

__all__ = ["InjectedChunk", "LLMResponse", "StreamChunk", "ToolCallDelta"]


@dataclass(frozen=True, slots=True)
class InjectedChunk:
    """A retrieved chunk that was injected as RAG context into the request.

    Attributes:
        chunk_id: the chunk's id in the store.
        score: its cosine similarity to the query.
        text: the text that was injected (what a service shows as a source).
        doc_id: the document it came from.
        metadata: the chunk's metadata (title, URL, tenant, ...).
    """

    chunk_id: str
    score: float
    text: str = ""
    doc_id: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LLMResponse:
    """A complete chat response.

    Attributes:
        content: the text ("" when the model only calls tools).
        tool_calls: the tools the model asked for; empty when it answered in text.
        usage: tokens consumed by this call.
        model: the model that answered.
        provider: the provider name, e.g. "openai".
        cost_usd: what this call cost, from the tracker's price table (0.0 when served
            from the response cache).
        cached: True when the response came from the response cache.
        context: the RAG chunks injected into this request (ids and scores), if any.
        finish_reason: why the model stopped, in the provider's words ("stop",
            "tool_calls", "end_turn", "STOP", ...), when the provider said.
        fallback_from: the models of a fallback chain that failed before ``model``
            answered, in the order they were asked (empty when the first one answered).
        reasoning: what the model thought before answering (thinking blocks with their
            signatures, ``reasoning_content``); :meth:`to_message` puts it on the ASSISTANT
            message that sends it back on the next turn.
    """

    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: TokenUsage = field(default_factory=TokenUsage)
    model: str = ""
    provider: str = ""
    cost_usd: float = 0.0
    cached: bool = False
    context: tuple[InjectedChunk, ...] = ()
    finish_reason: str | None = None
    fallback_from: tuple[FailedAttempt, ...] = ()
    reasoning: tuple[ReasoningPart, ...] = ()

    def to_message(self) -> Message:
        """The ASSISTANT message this response makes in a conversation: its text, tool calls
        and reasoning, ready to be sent back on the next turn."""
        return Message(
            Role.ASSISTANT, self.content, tool_calls=self.tool_calls, reasoning=self.reasoning
        )


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A piece of a tool call as the model streams it.

    A call's first delta names it (``name``, and ``id`` when the provider gives one, with
    ``arguments`` ""); the following ones carry pieces of its JSON arguments, which
    concatenate to the whole arguments object. Calls of one reply are told apart by
    ``index`` (0, 1... in the order the model made them). For display only: the complete,
    decoded calls are in the final response's ``tool_calls``.

    Attributes:
        index: the call's position among the reply's tool calls.
        id: the call's id (on the first delta only; the id the complete call will have).
        name: the tool's name (on the first delta only).
        arguments: a piece of the JSON arguments ("" on the first delta).
    """

    #: the event's name in an agent's event stream (an SSE ``event:`` line)
    kind: ClassVar[str] = "tool_call_delta"

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(frozen=True, slots=True)
class StreamChunk:
    """One event of a streamed response.

    Text arrives in ``text`` pieces and tool calls in ``tool_call_deltas``; the provider's
    final event carries ``usage`` (and the model name), the complete, decoded ``tool_calls``
    and the reasoning parts the stream carried, whole (signatures included); the facade
    records them once the stream is exhausted.
    """

    text: str = ""
    usage: TokenUsage | None = None
    model: str | None = None
    reasoning: tuple[ReasoningPart, ...] = ()
    tool_call_deltas: tuple[ToolCallDelta, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
