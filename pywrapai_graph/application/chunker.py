"""Chunker: paragraph → sentence → word → hard cut, in one linear, streaming pass."""

from __future__ import annotations

import itertools
import operator
import re
import uuid
from collections.abc import Iterator

from pywrapai_graph.domain import Chunk, Document
from pywrapai_graph.domain.checks import check_unicode
from pywrapai_graph.errors import ArgumentTypeError, InvalidArgumentError

__all__ = ["MIN_CHUNK_CHARS", "Chunker", "chunk_id"]

#: Chunks shorter than this are dropped (the reference's rule).
MIN_CHUNK_CHARS = 10

# A paragraph break: a line holding only whitespace ("\n\n" is found with str.rfind).
_SPACED_BREAK = re.compile(r"\n[^\S\n]+\n")
# A sentence ends at ., ! or ? followed by whitespace.
_SENTENCE_END = re.compile(r"[.!?](?=\s)")
_NON_SPACE = re.compile(r"\S")
_COPY = operator.methodcaller("copy")

# Chunk ids derive from the document id and position: re-adding a document upserts its
# chunks instead of duplicating them.
_CHUNK_NAMESPACE = uuid.UUID("6f1c1f0e-8d5e-4b43-9a57-3f1f2f7d9c11")


def chunk_id(doc_id: str, index: int) -> str:
    """The stable id of a document's ``index``-th chunk: ``uuid5(namespace, doc_id/index)``."""
    return str(uuid.uuid5(_CHUNK_NAMESPACE, f"{_checked_id(doc_id)}\x00{index:d}"))


def _checked_id(doc_id: str) -> str:
    """The document id as a plain ``str`` (a subclass is hashed as its characters).

    Raises:
        ArgumentTypeError: the id is not a ``str``.
        InvalidArgumentError: it holds a lone surrogate (no UTF-8, no uuid5, no store).
    """
    if not isinstance(doc_id, str):
        raise ArgumentTypeError(f"Document.id must be a str, got {type(doc_id).__name__}")
    check_unicode(doc_id, "Document.id")
    return str.__str__(doc_id)


def _chunk_ids(doc_id: str) -> Iterator[str]:
    """The ids of a document's chunks 0, 1, 2, ... (endless); a bad id raises at once."""
    prefix = f"{_checked_id(doc_id)}\x00"
    return (str(uuid.uuid5(_CHUNK_NAMESPACE, f"{prefix}{i}")) for i in itertools.count())


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
    """The last cut in ``[lo, hi]`` just after a sentence's final ``.``, ``!`` or ``?``, or -1
    (a sentence ends at a mark followed by whitespace)."""
    last = -1
    for match in _SENTENCE_END.finditer(text, lo - 1, hi + 1):
        last = match.end()
    return last


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

    Both may be set later (``chunker.overlap = 100``); they are checked the same way.

    Raises:
        ValueError: for ``chunk_size`` <= 10, negative ``overlap`` or
            ``overlap >= chunk_size``.
    """

    def __init__(self, chunk_size: int = 500, overlap: int = 50) -> None:
        self._configure(chunk_size, overlap)

    @property
    def chunk_size(self) -> int:
        """Maximum characters per chunk; may be set (checked as in the constructor)."""
        return self._chunk_size

    @chunk_size.setter
    def chunk_size(self, value: int) -> None:
        self._configure(value, self._overlap)

    @property
    def overlap(self) -> int:
        """At most this many characters of a chunk start the next; may be set (checked)."""
        return self._overlap

    @overlap.setter
    def overlap(self, value: int) -> None:
        self._configure(self._chunk_size, value)

    def _configure(self, chunk_size: int, overlap: int) -> None:
        """Checks and sets both settings (the loops rely on them: a chunk size under the
        overlap, set after construction, once made the Python loop run forever)."""
        for name, value in (("chunk_size", chunk_size), ("overlap", overlap)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidArgumentError(f"{name} must be an int, got {value!r}")
        chunk_size, overlap = operator.index(chunk_size), operator.index(overlap)  # plain ints
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
                "otherwise every chunk would repeat the previous one (to lower both, "
                "set overlap first)"
            )
        self._chunk_size = chunk_size
        self._overlap = overlap
        # The overlap, its joining space and 10 new characters fit in one chunk.
        self._overlap_limit = max(0, min(overlap, chunk_size - 1 - MIN_CHUNK_CHARS))

    def __repr__(self) -> str:
        return f"Chunker(chunk_size={self.chunk_size}, overlap={self.overlap})"

    def split(self, doc: Document) -> list[Chunk]:
        """Split ``doc``; chunks carry its id and a copy of its metadata.

        Raises:
            ArgumentTypeError: ``doc.text`` or ``doc.id`` is not a ``str``.
            InvalidArgumentError: ``doc.id`` holds a lone surrogate (its chunks' ids are
                uuid5 of its UTF-8 bytes).
        """
        return list(self._chunks(doc))

    def iter_split(self, doc: Document) -> Iterator[Chunk]:
        """Yield ``doc``'s chunks one at a time (what :meth:`split` returns, streamed)."""
        yield from self._chunks(doc)

    def _chunks(self, doc: Document) -> Iterator[Chunk]:
        # Each field is read once; a bad text or id raises here, whatever the text holds.
        text, doc_id, metadata = _characters(doc.text), doc.id, doc.metadata
        texts = _chunk_texts(text, self._chunk_size, self._overlap_limit)
        ids = _chunk_ids(doc_id)
        copies = map(_COPY, itertools.repeat(metadata))
        return map(Chunk, texts, itertools.repeat(doc_id), copies, ids)


def _characters(text: str) -> str:
    """``Document.text`` as a plain ``str``: a subclass is cut as its characters, whatever
    its methods say.

    Raises:
        ArgumentTypeError: not a ``str`` (Document refuses one, but a frozen dataclass
            can still be forced).
    """
    if type(text) is str:
        return text
    if not isinstance(text, str):
        raise ArgumentTypeError(f"Document.text must be str, got {type(text).__name__}")
    return str.__str__(text)  # a plain copy


def _chunk_texts(text: str, size: int, limit: int) -> Iterator[str]:
    """The texts of the chunks :class:`Chunker` cuts from ``text``, in order.

    Each window is cut by the rules of :func:`_last_break`, :func:`_last_sentence_end`
    and :func:`_last_word_end`.
    """
    end = _content_end(text)
    first = _NON_SPACE.search(text, 0, end)
    if first is None:
        return
    pos, head = first.start(), ""
    # One pass: each step looks at one window of at most chunk_size characters and
    # moves past it, so the work is linear in the text whatever its shape.
    while True:
        joiner = " " if head and not head[-1].isspace() else ""
        window_end = pos + size - len(head) - len(joiner)
        cut = end if window_end >= end else _cut(text, pos, window_end)
        chunk_text = f"{head}{joiner}{text[pos:cut]}" if head else text[pos:cut]
        if len(chunk_text) >= MIN_CHUNK_CHARS:
            yield chunk_text
        if cut >= end:
            return
        pos = _after_space(text, cut, end)
        if pos < 0:
            return
        if limit:
            head = _overlap(chunk_text, limit)


def _cut(text: str, pos: int, window_end: int) -> int:
    """Where the window ``text[pos:window_end]`` (not the last one) is cut."""
    lo = pos + MIN_CHUNK_CHARS
    cut = _last_break(text, pos, lo, window_end)
    return cut if cut >= 0 else _cut_without_break(text, pos, lo, window_end)


def _after_space(text: str, cut: int, end: int) -> int:
    """Where the next window starts: past the whitespace after the cut (-1: none follows
    before ``end``; ``text[end - 1]`` is not whitespace)."""
    if not text[cut].isspace():
        return cut
    following = _NON_SPACE.search(text, cut + 1, end)
    return -1 if following is None else following.start()


def _overlap(chunk_text: str, limit: int) -> str:
    """The overlap carried into the next window: from the first word starting at or after
    ``len(chunk_text) - limit``, i.e. what follows the first whitespace run at or after it - 1."""
    tail = len(chunk_text) - limit
    if tail <= 0:
        return chunk_text
    if chunk_text[tail - 1].isspace():
        return chunk_text[tail:].lstrip()
    word_and_rest = chunk_text[tail - 1 :].split(None, 1)
    return word_and_rest[1] if len(word_and_rest) > 1 else ""


def _cut_without_break(text: str, pos: int, lo: int, hi: int) -> int:
    """Where a window without a paragraph break is cut: sentence end, word end, else hi."""
    cut = _last_sentence_end(text, lo, hi)
    if cut < 0:
        cut = _last_word_end(text, pos, lo, hi)
        if cut < 0:
            # A hard cut. (It ends in whitespace when a long run of spaces follows
            # fewer than MIN_CHUNK_CHARS characters: nothing is lost.)
            cut = hi
    return cut
