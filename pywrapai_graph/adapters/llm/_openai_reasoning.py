"""``reasoning_content`` of OpenAI-compatible servers (DeepSeek, Kimi, vLLM, llama.cpp): read
from replies and stream deltas, and sent back on the assistant messages that need it.

DeepSeek's thinking mode (and Kimi's) refuses a request whose assistant tool-call message
lacks the ``reasoning_content`` it came with, and ignores it on other assistant messages;
the older ``deepseek-reasoner`` refused it anywhere but could not call tools. Sending it
back on tool-call messages only ("tool_calls", the default) satisfies both; "always" and
"never" serve servers that want it on every turn or on none.
"""

from __future__ import annotations

from typing import Any, Literal

from pywrapai_graph.domain import Message, ReasoningPart
from pywrapai_graph.errors import InvalidArgumentError

__all__ = [
    "REPLAY_MODES",
    "ReasoningReplay",
    "checked_replay",
    "reasoning_parts",
    "reasoning_text",
    "replayed",
]

ReasoningReplay = Literal["tool_calls", "always", "never"]
REPLAY_MODES: tuple[ReasoningReplay, ...] = ("tool_calls", "always", "never")


def checked_replay(mode: object) -> ReasoningReplay:
    """``mode`` when it is one of :data:`REPLAY_MODES`.

    Raises:
        InvalidArgumentError: any other value.
    """
    for known in REPLAY_MODES:
        if mode == known:
            return known
    raise InvalidArgumentError(
        f"reasoning_replay must be one of {list(REPLAY_MODES)}, got {mode!r}"
    )


def reasoning_text(message: Any) -> str:
    """The reasoning a reply message or stream delta carries: ``reasoning_content`` (DeepSeek,
    llama.cpp, older vLLM) or ``reasoning`` (newer vLLM, OpenRouter); "" when none."""
    for name in ("reasoning_content", "reasoning"):
        value = getattr(message, name, None)
        if isinstance(value, str) and value:
            return value
    return ""


def replayed(m: Message, mode: ReasoningReplay, provider: str) -> str | None:
    """The ``reasoning_content`` to send on assistant message ``m`` (None: send none)."""
    if mode == "never" or (mode == "tool_calls" and not m.tool_calls):
        return None
    texts = [r.text for r in m.reasoning if r.provider == provider and r.text]
    return "".join(texts) if texts else None


def reasoning_parts(text: str, provider: str) -> tuple[ReasoningPart, ...]:
    """The part ``text`` makes (none for "")."""
    return (ReasoningPart(text, provider=provider),) if text else ()
