"""The chunker before its fast path (884b7e1): the oracle the fast path must equal.

``reference_split(chunker, doc)`` cuts one window at a time with the rules as they were
first written: ``_last_break`` run on every window, the sentence end found by a forward
regex scan, ids made by ``uuid.uuid5`` itself. The fast ``Chunker`` must give the very
same chunks and ids; ``benchmarks.chunker`` times this loop as the "before" row (with
its own hand-made uuid5, as 884b7e1 had, so the timing is the old code's).
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterator

from pywrapai_graph import Chunk, Chunker, Document
from pywrapai_graph.application.chunker import (
    _CHUNK_NAMESPACE,
    _NON_SPACE,
    MIN_CHUNK_CHARS,
    _content_end,
    _last_break,
    _last_word_end,
)

__all__ = ["reference_chunk_id", "reference_split"]

_SENTENCE_END = re.compile(r"[.!?](?=\s)")
_SPACE_RUN = re.compile(r"\s+")
_TAIL = 128
_VARIANT = {c: "89ab"[int(c, 16) & 3] for c in "0123456789abcdef"}


def reference_chunk_id(doc_id: str, index: int) -> str:
    """What a chunk id is: ``uuid5(namespace, f"{doc_id}\\x00{index}")``."""
    return str(uuid.uuid5(_CHUNK_NAMESPACE, f"{doc_id}\x00{index}"))


class _OldChunkIds:
    """884b7e1's uuid5 by hand (the document prefix hashed once), for the timing."""

    __slots__ = ("_prefix",)

    def __init__(self, doc_id: str) -> None:
        self._prefix = hashlib.sha1(
            _CHUNK_NAMESPACE.bytes + doc_id.encode() + b"\x00", usedforsecurity=False
        )

    def __call__(self, index: int) -> str:
        h = self._prefix.copy()
        h.update(str(index).encode())
        x = h.hexdigest()
        return f"{x[:8]}-{x[8:12]}-5{x[13:16]}-{_VARIANT[x[16]]}{x[17:20]}-{x[20:32]}"


def _last_sentence_end(text: str, lo: int, hi: int) -> int:
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


def reference_split(chunker: Chunker, doc: Document) -> list[Chunk]:
    """``chunker.split(doc)`` as 884b7e1 computed it."""
    return list(_iter_split(chunker, doc))


def _iter_split(chunker: Chunker, doc: Document) -> Iterator[Chunk]:
    text = doc.text
    end = _content_end(text)
    first = _NON_SPACE.search(text, 0, end)
    if first is None:
        return
    pos = first.start()
    ids = _OldChunkIds(doc.id)
    size = chunker.chunk_size
    limit = max(0, min(chunker.overlap, size - 1 - MIN_CHUNK_CHARS))
    index = 0
    head = joiner = ""
    while True:
        if head:
            joiner = "" if head[-1].isspace() else " "
            window_end = pos + size - len(head) - len(joiner)
        else:
            window_end = pos + size
        cut = end if window_end >= end else _reference_cut(text, pos, window_end)
        chunk_text = head + joiner + text[pos:cut] if head else text[pos:cut]
        if len(chunk_text) >= MIN_CHUNK_CHARS:
            yield Chunk(chunk_text, doc.id, doc.metadata.copy(), ids(index))
            index += 1
        if cut >= end:
            return
        pos = _reference_next(text, cut, end)
        if pos < 0:
            return
        if limit:
            tail = len(chunk_text) - limit
            if tail <= 0:
                head = chunk_text
            else:
                gap = _SPACE_RUN.search(chunk_text, tail - 1)
                head = chunk_text[gap.end() :] if gap is not None else ""


def _reference_cut(text: str, pos: int, window_end: int) -> int:
    lo = pos + MIN_CHUNK_CHARS
    for cut in (
        _last_break(text, pos, lo, window_end),
        _last_sentence_end(text, lo, window_end),
        _last_word_end(text, pos, lo, window_end),
    ):
        if cut >= 0:
            return cut
    return window_end


def _reference_next(text: str, cut: int, end: int) -> int:
    if not text[cut].isspace():
        return cut
    if not text[cut + 1].isspace():
        return cut + 1
    following = _NON_SPACE.search(text, cut + 2, end)
    return -1 if following is None else following.start()
