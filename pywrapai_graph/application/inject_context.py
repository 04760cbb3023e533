"""RAG context injection: the reference's D4 template, made injection-safe."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from pywrapai_graph.domain import Message, Role, ScoredChunk

__all__ = ["escape_context_text", "format_context", "inject_context", "query_text"]

# Any tag that opens or closes a <context> block, however spelled: a chunk that contains one
# must not be able to end the block early and smuggle instructions outside it.
_CONTEXT_TAG = re.compile(r"<(\s*/?\s*context\b)", re.IGNORECASE)


def escape_context_text(text: str) -> str:
    """Neutralise ``<context>`` / ``</context>`` tags inside retrieved text."""
    return _CONTEXT_TAG.sub(r"&lt;\1", text)


def format_context(question: str, chunks: Sequence[ScoredChunk]) -> str:
    """The D4 template: numbered chunks inside ``<context>``, then the question."""
    lines = "\n".join(
        f"[{i}] {escape_context_text(sc.chunk.text)}" for i, sc in enumerate(chunks, 1)
    )
    return (
        "Use the following context to answer the question.\n\n"
        f"<context>\n{lines}\n</context>\n\n"
        f"Question: {question}"
    )


def query_text(messages: Sequence[Message]) -> tuple[int, str] | None:
    """Index and text of the current user message (the last USER message), or None."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role is Role.USER:
            return i, messages[i].content
    return None


def inject_context(messages: Sequence[Message], chunks: Sequence[ScoredChunk]) -> list[Message]:
    """A copy of ``messages`` whose current user message is replaced by the D4 template.

    The caller's messages are not modified: the original text is what gets saved (D5).
    """
    out = list(messages)
    found = query_text(out)
    if found is None or not chunks:
        return out
    index, question = found
    # its images and documents stay: only the text is wrapped in the template
    out[index] = dataclasses.replace(out[index], content=format_context(question, chunks))
    return out
