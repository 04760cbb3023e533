"""Chunk text through PostgreSQL for PGVectorStore: escaped for the ``text`` column, and
analysed into the postings written with each chunk (the tables are described in ``schema``).

The client analyses each chunk with the project's analyzer
(:func:`~pywrapai_graph.application.text_analysis.analyze`) and writes one posting per distinct
term of the chunk or of its share of its document (its text without the overlap it repeats
from the chunk before it, :func:`~pywrapai_graph.application.text_analysis.document_parts`)
right after the chunk, in the same transaction.

PostgreSQL's ``text`` cannot hold NUL, yet every store keeps a chunk's text as it was given
(ids, metadata keys and strings may not hold NUL on any store: ``ports.store_inputs``): the
column holds NUL as ``U+FDD0 0`` and the escape character itself as ``U+FDD0 e``. U+FDD0 is a
Unicode noncharacter, so every ordinary text is stored unchanged.
"""

from __future__ import annotations

import io
import struct
from collections import Counter
from collections.abc import Sequence
from typing import Any, NamedTuple

from pywrapai_graph.application.text_analysis import analyze, document_parts
from pywrapai_graph.domain import Chunk

__all__ = [
    "COPY_HEADER",
    "COPY_TRAILER",
    "Analysis",
    "analyse",
    "analysed",
    "copy_binary",
    "from_pg",
    "lexical_tables",
    "query_terms",
    "to_pg",
    "write_postings",
]

#: Delta rows of the statistics table: a writer updates the one of its backend.
STATS_SLOTS = 64
#: What every binary COPY payload starts and ends with.
COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0)
COPY_TRAILER = struct.pack("!h", -1)

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


def analysed(text: str) -> Counter[str]:
    """A chunk's terms and how often each occurs."""
    return Counter(analyze(text))


def query_terms(query: str) -> tuple[list[str], list[int]]:
    """A query's distinct terms and how often each occurs in it."""
    counts = analysed(query)
    return list(counts), list(counts.values())


def lexical_tables(table: str) -> tuple[str, str, str]:
    """The postings, document-length and statistics tables of ``table``."""
    return table + "__terms", table + "__doclen", table + "__bm25"


def names(sql: Any, table: str) -> dict[str, Any]:
    """The identifiers of ``table``'s lexical objects, for ``sql.SQL(...).format(**names)``."""
    terms, doclen, stats = lexical_tables(table)
    return {
        "t": sql.Identifier(table),
        "p": sql.Identifier(terms),
        "l": sql.Identifier(doclen),
        "s": sql.Identifier(stats),
        "pc": sql.Identifier(terms + "_chunk"),
        "f": sql.Identifier(table + "__bm25_count"),
        "ins": sql.Identifier(table + "__bm25_ins"),
        "upd": sql.Identifier(table + "__bm25_upd"),
        "del": sql.Identifier(table + "__bm25_del"),
        "slots": sql.Literal(STATS_SLOTS),
    }


# ----------------------------------------------------------------------------- writes
class Analysis(NamedTuple):
    """A batch's chunks analysed: each chunk's terms and length (the ``lex_len`` column), and
    the terms and length of its share of its document (``lex_doc``: its text without the
    overlap it repeats from the chunk before it, :func:`document_parts`)."""

    terms: list[Counter[str]]
    lengths: list[int]
    part_terms: list[Counter[str]]
    part_lengths: list[int]


def analyse(chunks: Sequence[Chunk], *, parts: bool = True) -> Analysis:
    """``chunks`` analysed in their order (``parts=False``: each chunk counts whole)."""
    terms = [analysed(c.text) for c in chunks]
    part_terms = terms
    if parts:
        texts = document_parts([c.text for c in chunks], [c.doc_id for c in chunks])
        part_terms = [
            t if text == c.text else analysed(text)
            for c, t, text in zip(chunks, terms, texts, strict=True)
        ]
    return Analysis(
        terms,
        [sum(t.values()) for t in terms],
        part_terms,
        [sum(t.values()) for t in part_terms],
    )


_POSTING_COLUMNS = "(term, doc_id, chunk_id, tf, dtf, dl)"


def copy_binary(cur: Any, sql: Any, target: Any, columns: str, payload: bytes) -> None:
    """``COPY target columns FROM STDIN`` of a binary ``payload`` (:data:`COPY_HEADER`, the
    rows, :data:`COPY_TRAILER`)."""
    statement = sql.SQL("COPY {t} " + columns + " FROM STDIN WITH (FORMAT binary)")
    cur.copy_expert(statement.format(t=target).as_string(cur), io.BytesIO(payload))


def write_postings(cur: Any, sql: Any, table: str, chunks: Sequence[Chunk], a: Analysis) -> None:
    """COPY the postings of chunks just written (the triggers removed any older ones): one per
    term of the chunk or of its share of the document, with both counts, in key order (each
    index page is then visited once, not once per chunk)."""
    rows = sorted(
        (term.encode(), c.doc_id.encode(), c.id.encode(), terms[term], part[term], dl)
        for c, terms, part, dl in zip(chunks, a.terms, a.part_terms, a.lengths, strict=True)
        for term in terms | part
    )
    if not rows:
        return
    out = io.BytesIO()
    out.write(COPY_HEADER)
    for t, d, c, tf, dtf, dl in rows:
        shape = f"!hi{len(t)}si{len(d)}si{len(c)}siiiiii"
        out.write(struct.pack(shape, 6, len(t), t, len(d), d, len(c), c, 4, tf, 4, dtf, 4, dl))
    out.write(COPY_TRAILER)
    copy_binary(cur, sql, names(sql, table)["p"], _POSTING_COLUMNS, out.getvalue())
