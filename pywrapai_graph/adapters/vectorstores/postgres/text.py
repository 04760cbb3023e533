"""Chunk text through PostgreSQL, whose ``text`` type cannot hold a NUL character.

Every store keeps a chunk's text as it was given, NUL included (ids, metadata keys and
strings may not hold NUL on any store: ``ports.store_inputs.check_name``). In PostgreSQL
the text column holds NUL as ``U+FDD0 0`` and the escape character itself as ``U+FDD0 e``:
U+FDD0 is a Unicode noncharacter, set aside for a program's internal use, so a text without
NUL and without U+FDD0 (every ordinary text) is stored unchanged.
"""

from __future__ import annotations

__all__ = ["from_pg", "to_pg"]

_ESCAPE = "\ufdd0"


def to_pg(text: str) -> str:
    """``text`` as the text column holds it."""
    if "\x00" not in text and _ESCAPE not in text:
        return text
    return text.replace(_ESCAPE, _ESCAPE + "e").replace("\x00", _ESCAPE + "0")


def from_pg(stored: str) -> str:
    """The text :func:`to_pg` stored as ``stored``."""
    if _ESCAPE not in stored:
        return stored
    # every escape character starts a pair, so "\ufdd00" is always an escaped NUL
    return stored.replace(_ESCAPE + "0", "\x00").replace(_ESCAPE + "e", _ESCAPE)
