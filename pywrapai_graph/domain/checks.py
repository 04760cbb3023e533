"""Runtime checks of arguments that may arrive untyped (from config, JSON or a caller's ``Any``).

They take ``object`` on purpose: the annotations say ``int``/``str``, but a caller without a
type checker can pass anything, and the error must say what was wrong.
"""

from __future__ import annotations

from pywrapai_graph.errors import InvalidArgumentError

__all__ = ["check_unicode", "encodes_as_utf8", "is_positive_int", "is_text"]


def is_positive_int(value: object) -> bool:
    """An ``int`` of at least 1 (``True``/``False`` are not counts)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def is_text(value: object) -> bool:
    """A ``str``."""
    return isinstance(value, str)


def encodes_as_utf8(text: str) -> bool:
    """Whether ``text`` is valid Unicode (no lone surrogate), so UTF-8 can carry it; ASCII
    answers without encoding."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_unicode(text: str, what: str) -> None:
    """Raises InvalidArgumentError when ``text`` holds a lone surrogate: no engine, driver or
    HTTP body can carry it (it is not valid Unicode), so it is refused where it enters.
    ASCII answers without encoding (CPython knows it of a str without reading it), so a huge
    English text costs the local embedder its window, not a pass over the text."""
    if not encodes_as_utf8(text):
        raise InvalidArgumentError(
            f"{what} contains a lone surrogate ({text!r:.60}); it is not valid Unicode text "
            "(decode bytes with errors='replace', not 'surrogateescape')"
        )
