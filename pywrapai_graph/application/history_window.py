"""HistoryWindow: keeps a conversation's request within the model's context window."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pywrapai_graph.application.embed_texts import estimate_tokens
from pywrapai_graph.application.input_tokens import (
    MediaTokens,
    estimate_input_tokens,
    generic_media_tokens,
)
from pywrapai_graph.domain import Message, Role
from pywrapai_graph.domain.checks import is_positive_int
from pywrapai_graph.errors import ContextWindowError, InvalidArgumentError

__all__ = ["HistoryWindow", "MessageTokens", "estimate_message_tokens"]

#: Tokens one message costs on a model: its text, media and tool calls.
MessageTokens = Callable[[Message], int]

# Each chat format wraps a message in a few tokens of its own (OpenAI documents 3 to 4).
_PER_MESSAGE = 4


def estimate_message_tokens(message: Message, media: MediaTokens = generic_media_tokens) -> int:
    """The project's estimate of ``message``: its text at 4 characters a token, each image
    and document at ``media``'s formula, each tool call's name and arguments, plus the few
    tokens every chat format wraps a message in."""
    calls = [c.name + json.dumps(c.arguments) for c in message.tool_calls or ()]
    return _PER_MESSAGE + estimate_input_tokens([message], media) + estimate_tokens(calls)


def _turn_starts(messages: Sequence[Message]) -> list[int]:
    """Where each turn of ``messages`` starts: at 0 and at every USER message. A turn holds
    a user's message and everything after it (tool calls and their results) up to the
    next user message, so dropping whole turns never parts a tool call from its result."""
    return [0, *(i for i, m in enumerate(messages) if i and m.role is Role.USER)]


@dataclass(frozen=True, slots=True)
class HistoryWindow:
    """Drops a conversation's oldest turns until its request fits ``max_tokens``.

    The system prompt and the current turn are always kept; older turns are kept newest
    first, whole, while they fit. A turn starts at a user's message and runs to the next
    one, so an assistant's tool calls and their results stay together. When the current
    message continues a turn (it carries tool results), that whole turn is current.

    Args:
        max_tokens: the most input tokens a request may hold: the model's context window
            less room for its reply (and for tool schemas, when tools are sent).
        count: tokens of one message on the model (default: the project's estimate,
            :func:`estimate_message_tokens`; a provider's tokenizer where one runs offline).

    Raises:
        InvalidArgumentError: ``max_tokens`` is not a positive int.
    """

    max_tokens: int
    count: MessageTokens = estimate_message_tokens

    def __post_init__(self) -> None:
        if not is_positive_int(self.max_tokens):
            raise InvalidArgumentError(
                f"max_tokens must be a positive int, got {self.max_tokens!r}"
            )

    def fit(self, messages: Sequence[Message], current: int) -> list[Message]:
        """``messages`` (leading system messages, history, then the ``current`` last
        messages) without the oldest history turns that do not fit.

        Raises:
            ContextWindowError: the system prompt and the current turn alone exceed
                ``max_tokens``.
        """
        given = list(messages)
        current = max(1, min(current, len(given)))
        head = 0
        while head < len(given) - current and given[head].role is Role.SYSTEM:
            head += 1
        past = given[head : len(given) - current]
        start = len(past)  # where the current turn starts in ``past``
        if given[-current].role is not Role.USER:
            start = max((i for i, m in enumerate(past) if m.role is Role.USER), default=0)
        budget = self.max_tokens - sum(self.count(m) for m in (*given[:head], *past[start:]))
        budget -= sum(self.count(m) for m in given[len(given) - current :])
        if budget < 0:
            raise ContextWindowError(
                f"the system prompt and the current turn need {self.max_tokens - budget} "
                f"tokens, more than the window's {self.max_tokens}; shorten the message or "
                "raise max_tokens"
            )
        keep = start
        starts = _turn_starts(past[:start])
        for begin, end in zip(starts[::-1], [start, *starts[:0:-1]], strict=True):
            budget -= sum(self.count(m) for m in past[begin:end])
            if budget < 0:
                break
            keep = begin
        return given[:head] + past[keep:] + given[len(given) - current :]
