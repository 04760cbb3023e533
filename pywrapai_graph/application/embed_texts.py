"""Embedding use-case logic: how many tokens a text costs when the provider does not say."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["estimate_tokens"]


def estimate_tokens(texts: Sequence[str]) -> int:
    """The 4-characters-per-token heuristic (reference D6)."""
    return sum(max(1, len(t) // 4) for t in texts if t)
