"""Chunker: paragraph → sentence → word → hard cut, in one linear, streaming pass."""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterator

from pywrapai_graph.domain import Chunk, Document
from pywrapai_graph.errors import InvalidArgumentError

__all__ = ["MIN_CHUNK_CHARS", "Chunker", "chunk_id"]

#: Chunks shorter than this are dropped (the reference's rule).
MIN_CHUNK_CHARS = 10

# A paragraph break: a line holding only whitespace ("\n\n" is found with str.rfind).
_SPACED_BREAK = re.compile(r"\n[^\S\n]+\n")
# A sentence ends at ., ! or ? followed by whitespace.
_SENTENCE_END = re.compile(r"[.!?](?=\s)")
_SPACE_RUN = re.compile(r"\s+")
_NON_SPACE = re.compile(r"\S")
# Cut candidates are first looked for in this many characters at the end of the window:
# the last boundary is nearly always there, and a forward regex scan is C-speed.
_TAIL = 128
# Chunk ids derive from the document id and position: re-adding a document upserts its
# chunks instead of duplicating them.
_CHUNK_NAMESPACE = uuid.UUID("6f1c1f0e-8d5e-4b43-9a57-3f1f2f7d9c11")
_VARIANT = {c: "89ab"[int(c, 16) & 3] for c in "0123456789abcdef"}


def chunk_id(doc_id: str, index: int) -> str:
    """The stable id of a document's ``index``-th chunk: ``uuid5(namespace, doc_id/index)``."""
    return _ChunkIds(doc_id)(index)


class _ChunkIds:
    """uuid.uuid5 computed by hand: the document prefix is hashed once, not once per chunk."""

    __slots__ = ("_prefix",)

    def __init__(self, doc_id: str) -> None:
        self._prefix = hashlib.sha1(
            _CHUNK_NAMESPACE.bytes + doc_id.encode() + b"\x00", usedforsecurity=False
        )

    def __call__(self, index: int) -> str:
        h = self._prefix.copy()
        h.update(str(index).encode())
        x = h.hexdigest()
        # Version 5 in the 13th hex digit, the RFC 4122 variant in the 17th.
        return f"{x[:8]}-{x[8:12]}-5{x[13:16]}-{_VARIANT[x[16]]}{x[17:20]}-{x[20:32]}"


def _content_end(text: str) -> int:
    """Index just past the last non-whitespace character (no copy of a large text)."""
    end = len(text)
    while end > 0:
        block = text[max(0, end - 4096) : end]
        kept = len(block.rstrip())
        if kept:
            return end - len(block) + kept
        end -= len(block)
    return 0


def _last_sentence_end(text: str, lo: int, hi: int) -> int:
    """The last cut in ``[lo, hi]`` just after a sentence's final ``.``, ``!`` or ``?``, or -1.

    The window's tail is scanned first: nearly every window has a sentence end there.
    """
    tail = max(lo, hi - _TAIL)
    for start in (tail, lo):
        last = -1
        for match in _SENTENCE_END.finditer(text, start - 1, hi + 1):
            last = match.end()
        if last >= 0:
            return last
        if start == lo:
            break
    return -1


def _last_word_end(text: str, pos: int, lo: int, hi: int) -> int:
    """The last cut in ``[lo, hi]`` just after a word (before a space, tab or newline), or -1."""
    space = max(
        text.rfind(" ", lo, hi + 1), text.rfind("\n", lo, hi + 1), text.rfind("\t", lo, hi + 1)
    )
    if space < 0:
        return -1
    cut = pos + len(text[pos:space].rstrip())
    return cut if cut >= lo else -1


def _last_break(text: str, pos: int, lo: int, hi: int) -> int:
    """The last cut in ``[lo, hi]`` before a paragraph break (spaces before it trimmed), or -1."""
    start = text.rfind("\n\n", lo, hi + 2)
    # A break holding spaces ("\n \n", "\r\n\r\n") after the last plain one wins.
    for spaced in _SPACED_BREAK.finditer(text, max(start + 1, lo), hi + 2):
        if spaced.start() <= hi:
            start = spaced.start()
    if start < 0:
        return -1
    if not text[start - 1].isspace():
        return start
    cut = pos + len(text[pos:start].rstrip())
    return cut if cut >= lo else -1


class Chunker:
    """Splits a :class:`Document` into :class:`Chunk` objects, in one linear pass.

    Each chunk is cut at the best boundary inside its window: the last paragraph break
    (a blank line), else the last sentence end (``.``, ``!``, ``?`` followed by
    whitespace), else the last whitespace, else a hard character cut. Whole paragraphs
    and sentences are therefore packed together up to the size limit.

    ``chunk_size`` is a **maximum**: no chunk is longer, overlap included. (The reference
    calls it a "target"; a maximum is what users expect from it, so we read it that way.)
    Each chunk after the first starts with the longest tail of the previous chunk that is
    at most ``overlap`` characters long and starts at a word (a non-space character at the
    start of the chunk or after whitespace), then one space, then the new text. The overlap
    leaves room for at least 10 new characters, so it is capped at
    ``chunk_size - 11``. Chunks under 10 characters are dropped; only the end of a
    document can be that short.

    Time is linear in the text's length whatever its shape (one huge line, one huge
    paragraph, no whitespace at all), and :meth:`iter_split` streams: memory beyond the
    text itself is a few chunks.

    Args:
        chunk_size: maximum characters per chunk, overlap included (> 10, since shorter
            chunks are dropped).
        overlap: at most this many characters of the previous chunk start the next one
            (0 <= overlap < chunk_size).

    Raises:
        ValueError: for ``chunk_size`` <= 10, negative ``overlap`` or
            ``overlap >= chunk_size``.
    """

    def __init__(self, chunk_size: int = 500, overlap: int = 50) -> None:
        for name, value in (("chunk_size", chunk_size), ("overlap", overlap)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidArgumentError(f"{name} must be an int, got {value!r}")
        if chunk_size <= MIN_CHUNK_CHARS:
            raise InvalidArgumentError(
                f"chunk_size must be greater than {MIN_CHUNK_CHARS} (chunks under "
                f"{MIN_CHUNK_CHARS} characters are dropped), got {chunk_size}"
            )
        if overlap < 0:
            raise InvalidArgumentError(f"overlap must be >= 0, got {overlap}")
        if overlap >= chunk_size:
            raise InvalidArgumentError(
                f"overlap ({overlap}) must be smaller than chunk_size ({chunk_size}); "
                "otherwise every chunk would repeat the previous one"
            )
        self.chunk_size = chunk_size
        self.overlap = overlap
        # The overlap, its joining space and 10 new characters fit in one chunk.
        self._overlap_limit = max(0, min(overlap, chunk_size - 1 - MIN_CHUNK_CHARS))

    def __repr__(self) -> str:
        return f"Chunker(chunk_size={self.chunk_size}, overlap={self.overlap})"

    def split(self, doc: Document) -> list[Chunk]:
        """Split ``doc``; chunks carry its id and a copy of its metadata."""
        return list(self.iter_split(doc))

    def iter_split(self, doc: Document) -> Iterator[Chunk]:
        """Yield ``doc``'s chunks one at a time (what :meth:`split` returns, streamed)."""
        text = doc.text
        end = _content_end(text)
        first = _NON_SPACE.search(text, 0, end)
        if first is None:
            return
        pos = first.start()
        ids = _ChunkIds(doc.id)
        doc_id, metadata, size, limit = doc.id, doc.metadata, self.chunk_size, self._overlap_limit
        index = 0
        head = joiner = ""
        # One pass: each step looks at one window of at most chunk_size characters and
        # moves past it, so the work is linear in the text whatever its shape.
        while True:
            if head:
                joiner = "" if head[-1].isspace() else " "
                window_end = pos + size - len(head) - len(joiner)
            else:
                window_end = pos + size
            if window_end >= end:
                cut = end
            else:
                lo = pos + MIN_CHUNK_CHARS
                cut = _last_break(text, pos, lo, window_end)
                if cut < 0:
                    cut = _last_sentence_end(text, lo, window_end)
                    if cut < 0:
                        cut = _last_word_end(text, pos, lo, window_end)
                        if cut < 0:
                            # A hard cut. (It ends in whitespace when a long run of spaces
                            # follows fewer than MIN_CHUNK_CHARS characters: nothing is lost.)
                            cut = window_end
            chunk_text = head + joiner + text[pos:cut] if head else text[pos:cut]
            if len(chunk_text) >= MIN_CHUNK_CHARS:
                yield Chunk(chunk_text, doc_id, metadata.copy(), ids(index))
                index += 1
            if cut >= end:
                return
            # Skip the whitespace after the cut (text[end - 1] is not whitespace).
            if not text[cut].isspace():
                pos = cut
            elif not text[cut + 1].isspace():
                pos = cut + 1
            else:
                following = _NON_SPACE.search(text, cut + 2, end)
                if following is None:
                    return
                pos = following.start()
            if limit:
                tail = len(chunk_text) - limit
                if tail <= 0:
                    head = chunk_text
                else:
                    gap = _SPACE_RUN.search(chunk_text, tail - 1)
                    head = chunk_text[gap.end() :] if gap is not None else ""
