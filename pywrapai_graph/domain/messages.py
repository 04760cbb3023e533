"""Chat messages and tool-call values: what goes to and comes back from a chat model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pywrapai_graph.domain.checks import check_unicode
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

    Constructible positionally, as ``Message(Role.USER, "hi")``.

    Attributes:
        role: who speaks.
        content: the text ("" for an assistant turn that only calls tools).
        tool_calls: on an ASSISTANT message, the tools the model asked for.
        tool_result: on a TOOL message, the result it carries.
    """

    role: Role
    content: str
    tool_calls: Sequence[ToolCall] | None = None
    tool_result: ToolResult | None = None

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
