"""Chunker: paragraph → sentence → hard cut, packed up to ``chunk_size``, with overlap."""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterator

from pywrapai_graph.domain import Chunk, Document

__all__ = ["MIN_CHUNK_CHARS", "Chunker", "chunk_id"]

#: Chunks shorter than this are dropped (the reference's rule).
MIN_CHUNK_CHARS = 10

_PARAGRAPHS = re.compile(r"\n[ \t\r\f\v]*\n\s*")
_SENTENCES = re.compile(r"(?<=[.!?])\s+")
_PARAGRAPH_SEP = "\n\n"
_SENTENCE_SEP = " "
# Chunk ids derive from the document id and position: re-adding a document upserts its
# chunks instead of duplicating them.
_CHUNK_NAMESPACE = uuid.UUID("6f1c1f0e-8d5e-4b43-9a57-3f1f2f7d9c11")


def chunk_id(doc_id: str, index: int) -> str:
    """The stable id of a document's ``index``-th chunk: ``uuid5(namespace, doc_id/index)``."""
    return _chunk_ids(doc_id, [index])[0]


def _chunk_ids(doc_id: str, indexes: list[int]) -> list[str]:
    # uuid.uuid5 computed by hand: the document prefix is hashed once, not once per chunk.
    prefix = hashlib.sha1(_CHUNK_NAMESPACE.bytes + doc_id.encode() + b"\x00", usedforsecurity=False)
    out = []
    for index in indexes:
        h = prefix.copy()
        h.update(str(index).encode())
        raw = bytearray(h.digest()[:16])
        raw[6] = (raw[6] & 0x0F) | 0x50  # version 5
        raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
        x = raw.hex()
        out.append(f"{x[:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:]}")
    return out


def _hard_cut(text: str, budget: int, min_head: int = 1) -> tuple[str, str]:
    """Split ``text`` at the last whitespace within ``budget`` (or at ``budget`` if none).

    The head keeps at least ``min_head`` characters.
    """
    window = text[: budget + 1]
    cut = max(window.rfind(" "), window.rfind("\n"), window.rfind("\t"))
    head = text[:cut].rstrip() if cut > 0 else ""
    if len(head) < min_head or not head:
        return text[:budget], text[budget:].lstrip()
    return head, text[cut:].lstrip()


class Chunker:
    """Splits a :class:`Document` into :class:`Chunk` objects.

    Priority: paragraph boundaries (blank lines), then sentence boundaries (``.``, ``!``,
    ``?`` followed by whitespace) inside an oversized paragraph, then a cut at the last
    whitespace (or a hard character cut) inside an oversized sentence. Small paragraphs and
    sentences are packed together up to ``chunk_size``.

    Each chunk after the first starts with the last ``overlap`` characters of the previous
    chunk (plus a space when the overlap would otherwise glue two words together), so no
    chunk is longer than ``chunk_size + overlap``. Chunks under 10 characters are dropped;
    a tiny piece in the middle of a document is merged forward rather than lost.

    Args:
        chunk_size: target characters per chunk (> 10, since shorter chunks are dropped).
        overlap: characters copied from the end of one chunk to the start of the next
            (0 <= overlap < chunk_size).

    Raises:
        ValueError: for ``chunk_size`` <= 10, negative ``overlap`` or
            ``overlap >= chunk_size``.
    """

    def __init__(self, chunk_size: int = 500, overlap: int = 50) -> None:
        for name, value in (("chunk_size", chunk_size), ("overlap", overlap)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{name} must be an int, got {value!r}")
        if chunk_size <= MIN_CHUNK_CHARS:
            raise ValueError(
                f"chunk_size must be greater than {MIN_CHUNK_CHARS} (chunks under "
                f"{MIN_CHUNK_CHARS} characters are dropped), got {chunk_size}"
            )
        if overlap < 0:
            raise ValueError(f"overlap must be >= 0, got {overlap}")
        if overlap >= chunk_size:
            raise ValueError(
                f"overlap ({overlap}) must be smaller than chunk_size ({chunk_size}); "
                "otherwise every chunk would repeat the previous one"
            )
        self.chunk_size = chunk_size
        self.overlap = overlap
        # One character is kept free for the space that may join overlap and body.
        self._budget = chunk_size - 1 if overlap else chunk_size

    def __repr__(self) -> str:
        return f"Chunker(chunk_size={self.chunk_size}, overlap={self.overlap})"

    def _units(self, text: str) -> Iterator[tuple[str, str]]:
        """(separator before, unit) pairs; every unit fits the budget."""
        budget = self._budget
        for raw in _PARAGRAPHS.split(text):
            paragraph = raw.strip()
            if not paragraph:
                continue
            if len(paragraph) <= budget:
                yield _PARAGRAPH_SEP, paragraph
                continue
            sep = _PARAGRAPH_SEP
            for sentence_text in _SENTENCES.split(paragraph):
                sentence = sentence_text
                while len(sentence) > budget:
                    piece, sentence = _hard_cut(sentence, budget)
                    yield sep, piece
                    sep = _SENTENCE_SEP
                if sentence:
                    yield sep, sentence
                sep = _SENTENCE_SEP

    def _bodies(self, text: str) -> Iterator[str]:
        """Pack units into bodies of at most the budget; no body but the last is tiny."""
        budget = self._budget
        parts: list[str] = []
        size = 0
        for sep, unit in self._units(text):
            extra = len(unit) + (len(sep) if parts else 0)
            if parts and size + extra > budget:
                body = "".join(parts)
                if size < MIN_CHUNK_CHARS:
                    # A tiny body would be dropped: merge it into this unit and cut again.
                    rest = body + sep + unit
                    while len(rest) > budget:
                        head, rest = _hard_cut(rest, budget, MIN_CHUNK_CHARS)
                        yield head
                    parts, size = ([rest], len(rest)) if rest else ([], 0)
                    continue
                yield body
                parts, size = [unit], len(unit)
            else:
                parts.extend((sep, unit) if parts else (unit,))
                size += extra
        if parts:
            yield "".join(parts)

    def split(self, doc: Document) -> list[Chunk]:
        """Split ``doc``; chunks carry its id and a copy of its metadata."""
        texts: list[str] = []
        for body in self._bodies(doc.text):
            if texts and self.overlap:
                prefix = texts[-1][-self.overlap :]
                joiner = "" if prefix[-1].isspace() else " "
                texts.append(prefix + joiner + body)
            else:
                texts.append(body)
        kept = [t for t in texts if len(t) >= MIN_CHUNK_CHARS]
        ids = _chunk_ids(doc.id, list(range(len(kept))))
        return [
            Chunk(text=text, doc_id=doc.id, metadata=dict(doc.metadata), id=chunk_ids)
            for text, chunk_ids in zip(kept, ids, strict=True)
        ]
