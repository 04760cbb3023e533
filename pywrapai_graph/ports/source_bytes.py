"""The bytes a document's text was decoded from, handed from a source to ingest's hash.

Ingest hashes each document's text as UTF-8 to decide whether it changed. A source that
read the text as UTF-8 bytes (``TextFiles``) already holds exactly those bytes, so encoding
the text again would only copy them. While an ingest runs (:func:`remembering_utf8`),
:func:`decode_utf8` remembers the bytes of each text it decodes and :func:`utf8_of` hands
them back once; everywhere else both are plain ``decode``/``encode``.

Exact by construction: a strict UTF-8 decode has no lone surrogates and keeps a BOM and
CRLF as characters, so ``data.decode("utf-8").encode("utf-8", "surrogatepass") == data``;
an entry is found by the identity of the very ``str`` object decoded (kept alive by the
entry, so its ``id`` cannot be reused), and taken out when used.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["decode_utf8", "remembering_utf8", "utf8_of"]

#: Texts remembered at once at most: ingest hashes windows of 256 documents, so more
#: than this means nobody is taking them (each entry keeps its text and bytes alive).
_MAX_ENTRIES = 1024

_Memo = dict[int, tuple[str, bytes]]
_memo: ContextVar[_Memo | None] = ContextVar("pywrapai_utf8_memo", default=None)


@contextmanager
def remembering_utf8() -> Iterator[None]:
    """Within this block (in this context), :func:`decode_utf8` remembers what it decoded;
    the memory is dropped when the block ends."""
    token = _memo.set({})
    try:
        yield
    finally:
        _memo.reset(token)


def decode_utf8(data: bytes) -> str:
    """``data.decode("utf-8")`` (strict: raises ``UnicodeDecodeError``), remembering
    ``data`` for :func:`utf8_of` inside :func:`remembering_utf8`."""
    text = data.decode("utf-8")
    memo = _memo.get()
    if memo is not None and len(memo) < _MAX_ENTRIES:
        memo[id(text)] = (text, data)
    return text


def utf8_of(text: str) -> bytes:
    """``text.encode("utf-8", "surrogatepass")``: the bytes :func:`decode_utf8` decoded it
    from when it remembers them (taken out: a second call encodes)."""
    memo = _memo.get()
    if memo is not None:
        entry = memo.pop(id(text), None)
        if entry is not None and entry[0] is text:
            return entry[1]
    return text.encode("utf-8", "surrogatepass")
