"""Anthropic prompt caching: where to put ``cache_control`` breakpoints in a Messages request.

Anthropic caches a request's prefix up to each block marked ``cache_control`` (at most four
per request), in the order tools, system, messages. Writing the cache costs 1.25x the input
rate on the tokens written, and every later read of them 0.1x, so a prefix sent again within
the cache's five-minute lifetime pays for its write at the first reuse (1.25 + 0.1 < 2).
Prefixes shorter than the model's minimum are never cached (and never billed as writes), so
no breakpoint is placed there.

``auto`` marks the prefixes a service sends again: the tools, the system prompt and the
conversation up to the turn before the last (the history; in an agent loop, everything up to
the latest tool results), each when its prefix reaches the model's minimum. The current turn
is never marked: it is new in every request.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from pywrapai_graph.application.embed_texts import estimate_tokens
from pywrapai_graph.errors import InvalidArgumentError

__all__ = ["CACHE_MODES", "PromptCache", "checked_mode", "mark_breakpoints", "min_cacheable"]

PromptCache = Literal["auto", "off"]
CACHE_MODES: tuple[PromptCache, ...] = ("auto", "off")
#: the most breakpoints one request may carry
MAX_BREAKPOINTS = 4
_EPHEMERAL = {"type": "ephemeral"}

# Minimum cacheable prompt length, in tokens, by model family (Anthropic's prompt-caching
# documentation); other models: 1024 (Sonnet 4.5, Sonnet 4, Opus 4.1, Opus 4, Sonnet 3.7).
_MINIMUMS = (
    ("claude-opus-4-5", 4096),
    ("claude-opus-4-6", 4096),
    ("claude-haiku-4-5", 4096),
    ("claude-sonnet-4-6", 2048),
    ("claude-3-5-haiku", 2048),
    ("claude-3-haiku", 2048),
)
_DEFAULT_MINIMUM = 1024


def checked_mode(mode: object) -> PromptCache:
    """``mode`` when it is one of :data:`CACHE_MODES`.

    Raises:
        InvalidArgumentError: any other value.
    """
    for known in CACHE_MODES:
        if mode == known:
            return known
    raise InvalidArgumentError(f"prompt_cache must be one of {list(CACHE_MODES)}, got {mode!r}")


def min_cacheable(model: str) -> int:
    """The shortest prefix, in tokens, that ``model`` caches."""
    for family, minimum in _MINIMUMS:
        if model.startswith(family):
            return minimum
    return _DEFAULT_MINIMUM


def _marked(block: dict[str, Any]) -> dict[str, Any]:
    return {**block, "cache_control": dict(_EPHEMERAL)}


def _mark_turn(turn: dict[str, Any]) -> bool:
    """Mark the last block of ``turn``; False when it has none that can carry a breakpoint
    (empty text cannot)."""
    content = turn["content"]
    if isinstance(content, str):
        if not content:
            return False
        turn["content"] = [_marked({"type": "text", "text": content})]
        return True
    if not content or (content[-1].get("type") == "text" and not content[-1].get("text")):
        return False
    content[-1] = _marked(content[-1])
    return True


def mark_breakpoints(params: dict[str, Any], turn_tokens: Sequence[int], model: str) -> None:
    """Add ``cache_control`` breakpoints to a Messages request's ``params`` in place: on the
    last tool, on the system prompt and at the end of the stable history, each where the
    prefix it closes reaches ``model``'s minimum cacheable length.

    Args:
        turn_tokens: the estimated tokens of each turn of ``params["messages"]``.
    """
    minimum = min_cacheable(model)
    prefix = 0
    marks = 0
    tools: list[dict[str, Any]] | None = params.get("tools")
    if tools:
        prefix += estimate_tokens([json.dumps(tools)])
        if prefix >= minimum:
            tools[-1] = _marked(tools[-1])
            marks += 1
    system: str | None = params.get("system")
    if system:
        prefix += estimate_tokens([system])
        if prefix >= minimum:
            params["system"] = [_marked({"type": "text", "text": system})]
            marks += 1
    turns: list[dict[str, Any]] = params["messages"]
    if len(turns) >= 2 and marks < MAX_BREAKPOINTS:
        prefix += sum(turn_tokens[:-1])
        if prefix >= minimum:
            _mark_turn(turns[-2])
