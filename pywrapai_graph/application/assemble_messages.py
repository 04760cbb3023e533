"""AssembleMessages: system prompt, history, current message — always in that order."""

from __future__ import annotations

from collections.abc import Sequence

from pywrapai_graph.domain import Message, Role
from pywrapai_graph.errors import ArgumentTypeError, InvalidArgumentError

__all__ = ["AssembleMessages", "as_messages"]


def as_messages(input: str | Sequence[Message]) -> list[Message]:
    """Turn a caller's input (text or messages) into a message list.

    Raises:
        TypeError: when ``input`` is neither a string nor a sequence of Message.
    """
    if isinstance(input, str):
        return [Message(Role.USER, input)]
    messages = list(input)
    for i, m in enumerate(messages):
        if not isinstance(m, Message):
            raise ArgumentTypeError(
                f"input[{i}] is {type(m).__name__}; pass a str or a list of Message objects"
            )
    return messages


class AssembleMessages:
    """Builds the one message list the model sees.

    Order: the versioned system prompt (position 0), then history oldest first, then the
    current input. When versioning is on, a SYSTEM message at the start of the caller's
    input list is replaced by the loaded prompt, and so is one at the start of the history,
    so the model never receives two system prompts.

    Args:
        system_prompt: the loaded prompt text.
        versioning: when False, no system prompt is injected here (the LLM facade may still
            add its own ``LLM(system_prompt=...)``).
    """

    def __init__(self, system_prompt: str | None, *, versioning: bool) -> None:
        if versioning and system_prompt is None:
            raise InvalidArgumentError("versioning is on but no system prompt text was given")
        self._system_prompt = system_prompt
        self._versioning = versioning

    @property
    def system_prompt(self) -> str | None:
        """The prompt injected at position 0, or None when versioning is off."""
        return self._system_prompt if self._versioning else None

    def __call__(
        self,
        input: str | Sequence[Message],
        history: Sequence[Message] | None = None,
    ) -> list[Message]:
        """Return ``[system?] + history + current``.

        Raises:
            TypeError: when ``input`` or ``history`` holds something other than Message.
            ValueError: when ``input`` is an empty list.
        """
        head, current = self.split(input, history)
        return head + current

    def split(
        self,
        input: str | Sequence[Message],
        history: Sequence[Message] | None = None,
    ) -> tuple[list[Message], list[Message]]:
        """The assembled list in two parts: ``[system?] + history`` and the current messages.

        RAG augmentation applies to the second part only.
        """
        current = as_messages(input)
        if not current:
            raise InvalidArgumentError(
                "input is an empty list; pass the current message as text or Message"
            )
        past = as_messages(history or [])
        if not self._versioning:
            return past, current
        assert self._system_prompt is not None  # guaranteed by __init__
        if past and past[0].role is Role.SYSTEM:
            past = past[1:]
        if current[0].role is Role.SYSTEM:
            current = current[1:]
        return [Message(Role.SYSTEM, self._system_prompt), *past], current
