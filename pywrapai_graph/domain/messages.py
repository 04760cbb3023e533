"""Chat messages and tool-call values: what goes to and comes back from a chat model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pywrapai_graph.domain.checks import check_unicode
from pywrapai_graph.domain.message_records import message_from_record, message_to_record
from pywrapai_graph.domain.parts import DocumentPart, ImagePart, Part, TextPart
from pywrapai_graph.domain.reasoning import ReasoningPart
from pywrapai_graph.errors import ArgumentTypeError, InvalidArgumentError

__all__ = ["Message", "Role", "ToolCall", "ToolResult"]


class Role(StrEnum):
    """Who speaks a message."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A model's request to run one tool.

    Attributes:
        id: the provider's call id; echoed back in :class:`ToolResult.tool_call_id`.
        name: the tool's registered name.
        arguments: decoded JSON arguments.
    """

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.arguments, Mapping):
            raise ArgumentTypeError(
                f"ToolCall.arguments must be a mapping, got {type(self.arguments).__name__}"
            )
        # Our own copy: a caller mutating its dict afterwards cannot change this call.
        object.__setattr__(self, "arguments", dict(self.arguments))


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool returned, ready to be sent back to the model."""

    tool_call_id: str
    name: str
    content: str


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message.

    Constructible positionally, as ``Message(Role.USER, "hi")``. A USER message may carry
    images and documents after its text: ``Message(Role.USER, "What is this?",
    parts=[ImagePart.from_bytes(png)])``.

    Attributes:
        role: who speaks.
        content: the text ("" for an assistant turn that only calls tools); on a message with
            parts, the text sent before them.
        tool_calls: on an ASSISTANT message, the tools the model asked for.
        tool_result: on a TOOL message, the result it carries.
        parts: on a USER message, what follows ``content``, in order: ImagePart,
            DocumentPart and TextPart values.
        reasoning: on an ASSISTANT message, the model's reasoning before its text and tool
            calls (thinking blocks, ``reasoning_content``), sent back to the provider that
            produced it.
    """

    role: Role
    content: str
    tool_calls: Sequence[ToolCall] | None = None
    tool_result: ToolResult | None = None
    parts: Sequence[Part] = ()
    reasoning: Sequence[ReasoningPart] = ()

    def __post_init__(self) -> None:
        role: object = self.role  # callers may pass "user"; checked at run time
        if not isinstance(role, Role):
            try:
                object.__setattr__(self, "role", Role(str(role)))
            except ValueError:
                raise InvalidArgumentError(
                    f"Message.role must be one of {[r.value for r in Role]}, got {role!r}"
                ) from None
        content: object = self.content
        if not isinstance(content, str):
            raise ArgumentTypeError(f"Message.content must be str, got {type(content).__name__}")
        check_unicode(content, f"the {self.role.value} message's content")
        if self.tool_calls is not None:
            calls = tuple(self.tool_calls)
            object.__setattr__(self, "tool_calls", calls or None)
        if self.tool_calls and self.role is not Role.ASSISTANT:
            raise InvalidArgumentError("only an ASSISTANT message can carry tool_calls")
        if self.tool_result is not None and self.role is not Role.TOOL:
            raise InvalidArgumentError("only a TOOL message can carry a tool_result")
        self._check_parts()
        self._check_reasoning()

    def _check_parts(self) -> None:
        given: object = self.parts
        if isinstance(given, str | bytes) or not isinstance(given, Sequence):
            raise ArgumentTypeError(
                f"Message.parts must be a list of parts, got {type(given).__name__}"
            )
        parts = tuple(given)
        for i, part in enumerate(parts):
            if not isinstance(part, TextPart | ImagePart | DocumentPart):
                raise ArgumentTypeError(
                    f"Message.parts[{i}] is {type(part).__name__}; pass TextPart, ImagePart "
                    "or DocumentPart values"
                )
        if parts and self.role is not Role.USER:
            raise InvalidArgumentError(
                f"only a USER message can carry parts (images, documents); this one is "
                f"{self.role.value}"
            )
        object.__setattr__(self, "parts", parts)

    def _check_reasoning(self) -> None:
        given: object = self.reasoning
        if isinstance(given, str | bytes) or not isinstance(given, Sequence):
            raise ArgumentTypeError(
                f"Message.reasoning must be a list of ReasoningPart, got {type(given).__name__}"
            )
        reasoning = tuple(given)
        if not all(isinstance(r, ReasoningPart) for r in reasoning):
            raise ArgumentTypeError("Message.reasoning takes ReasoningPart values only")
        if reasoning and self.role is not Role.ASSISTANT:
            raise InvalidArgumentError(
                f"only an ASSISTANT message can carry reasoning; this one is {self.role.value}"
            )
        object.__setattr__(self, "reasoning", reasoning)

    @property
    def content_parts(self) -> tuple[Part, ...]:
        """Everything the message says, in order: its ``content`` as a TextPart (when not
        empty), then its ``parts``."""
        head: tuple[Part, ...] = (TextPart(self.content),) if self.content else ()
        return head + tuple(self.parts)

    def to_dict(self) -> dict[str, Any]:
        """The message as JSON values, for a history store: ``role`` and ``content``, plus
        ``tool_calls``, ``tool_result``, ``parts`` (bytes base64-encoded) and ``reasoning``
        (signatures kept as they are) when present."""
        return message_to_record(self)

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> Message:
        """The message a :meth:`to_dict` record describes (a plain ``{"role", "content"}``
        record, as text-only histories store, reads back too).

        Raises:
            InvalidArgumentError: a malformed record or part.
        """
        return message_from_record(record)
