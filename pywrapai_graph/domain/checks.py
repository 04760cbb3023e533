"""Runtime checks of arguments that may arrive untyped (from config, JSON or a caller's ``Any``).

They take ``object`` on purpose: the annotations say ``int``/``str``, but a caller without a
type checker can pass anything, and the error must say what was wrong.
"""

from __future__ import annotations

__all__ = ["is_positive_int", "is_text"]


def is_positive_int(value: object) -> bool:
    """An ``int`` of at least 1 (``True``/``False`` are not counts)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def is_text(value: object) -> bool:
    """A ``str``."""
    return isinstance(value, str)
