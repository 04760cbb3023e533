"""Gemini thoughts: thought summaries (``thought`` parts) kept as reasoning, and the thought
signature of a step kept and returned on its first function call, where Gemini 3 requires it
(the API refuses a function call of the current turn sent back without its signature)."""

from __future__ import annotations

import base64
from collections.abc import Iterable, Sequence
from typing import Any

from pywrapai_graph.domain import ReasoningPart

__all__ = ["sign_first", "thoughts_of"]


def thoughts_of(parts: Iterable[Any], provider: str) -> tuple[ReasoningPart, ...]:
    """The reasoning of a reply's parts: the thought summaries as one part, then each
    signature (base64, in part order) as a part of its own."""
    parts = list(parts)
    thought = "".join(p.text for p in parts if p.thought and p.text)
    out = [ReasoningPart(thought, provider=provider)] if thought else []
    out += [
        ReasoningPart(signature=base64.b64encode(p.thought_signature).decode(), provider=provider)
        for p in parts
        if p.thought_signature
    ]
    return tuple(out)


def sign_first(
    parts: list[dict[str, Any]], reasoning: Sequence[ReasoningPart], provider: str
) -> None:
    """Put the first signature of ``reasoning`` (``provider``'s) back on the first function
    call of ``parts`` — else on its first part — as the reply carried it."""
    signature = next(
        (r.signature for r in reasoning if r.provider == provider and r.signature), None
    )
    if signature is None or not parts:
        return
    target = next((p for p in parts if "function_call" in p), parts[0])
    target["thought_signature"] = base64.b64decode(signature)
