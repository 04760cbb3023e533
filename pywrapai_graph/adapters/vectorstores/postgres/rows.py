"""The rows of PGVectorStore: chunks in and out, in slices a :class:`Pacer` sizes, their
text, their postings, and metadata filters (a boolean SQL expression).

A write sends each slice's chunks with binary COPY, then their postings: the client analyses
each chunk with the project's analyzer
(:func:`~pywrapai_graph.application.text_analysis.analyze`) into one posting per distinct
term of the chunk or of its share of its document (its text without the overlap it repeats
from the chunk before it, :func:`~pywrapai_graph.application.text_analysis.document_parts`),
in the same transaction (the tables are described in ``schema``).

PostgreSQL's ``text`` cannot hold NUL, yet every store keeps a chunk's text as it was given
(ids, metadata keys and strings may not hold NUL on any store: ``ports.store_inputs``): the
column holds NUL as ``U+FDD0 0`` and the escape character itself as ``U+FDD0 e``. U+FDD0 is a
Unicode noncharacter, so every ordinary text is stored unchanged.
"""

from __future__ import annotations

import io
import json
import struct
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from pywrapai_graph.adapters.vectorstores.kit.metadata_json import metadata_json
from pywrapai_graph.adapters.vectorstores.kit.vector_batches import PreparedBatch
from pywrapai_graph.application.text_analysis import analyze, document_parts
from pywrapai_graph.domain import Chunk
from pywrapai_graph.ports import MetadataFilter

__all__ = [
    "Analysis",
    "Pacer",
    "analyse",
    "copy_binary",
    "copy_payload",
    "delete_document",
    "delete_rows",
    "from_pg",
    "lexical_tables",
    "metadata_predicate",
    "names",
    "query_terms",
    "to_pg",
    "write_chunks",
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


def analyse(
    chunks: Sequence[Chunk], *, parts: bool = True, before: Mapping[str, str] | None = None
) -> Analysis:
    """``chunks`` analysed in their order (``parts=False``: each chunk counts whole);
    ``before``: each document's last chunk written before these in the same write."""
    terms = [analysed(c.text) for c in chunks]
    part_terms = terms
    if parts:
        docs = {c.doc_id for c in chunks}
        context = [(d, t) for d, t in (before or {}).items() if d in docs]
        texts = document_parts(
            [*(t for _, t in context), *(c.text for c in chunks)],
            [*(d for d, _ in context), *(c.doc_id for c in chunks)],
        )[len(context) :]
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


_JSONB_VERSION = b"\x01"
_COLUMNS = "id, doc_id, text, metadata, embedding, lex_len, lex_doc"


#: A slice's statements aim at this share of statement_timeout (and at most
#: :data:`SLICE_SECONDS`): the margin absorbs a slice slower than the one it was sized on.
SLICE_SHARE = 0.25
SLICE_SECONDS = 1.0
#: What the first slice assumes a row costs (HNSW insertion and postings, 384 dimensions):
#: 500 rows under the default timeout, a few dozen under a tiny one.
ROW_SECONDS = 0.002
MIN_SLICE_ROWS = 8
MAX_SLICE_ROWS = 8192


class Pacer:
    """Cuts one write into slices of bounded statements inside its transaction, each sized
    on the time the one before it took, so a write of any size fits ``statement_timeout``
    (``seconds``; None: slices aim at SLICE_SECONDS); ``fresh`` arms the client deadline of
    the next statement."""

    def __init__(self, seconds: float | None, fresh: Callable[[], None]) -> None:
        self._target = min(SLICE_SECONDS, seconds * SLICE_SHARE) if seconds else SLICE_SECONDS
        self.statement = fresh

    def sizes(self) -> Iterator[int]:
        """Rows for each next slice; the time until the next one is asked measures the last."""
        rows = max(MIN_SLICE_ROWS, int(self._target / ROW_SECONDS))
        while True:
            began = time.monotonic()
            yield rows
            took = max(time.monotonic() - began, 1e-3)
            fits = int(rows * self._target / took)
            rows = max(MIN_SLICE_ROWS, min(MAX_SLICE_ROWS, 2 * rows, fits))

    def slices(self, n: int) -> Iterator[slice]:
        """``0..n`` in consecutive slices (:meth:`sizes`)."""
        start = 0
        for size in self.sizes():
            if start >= n:
                return
            yield slice(start, min(n, start + size))
            start += size


def copy_payload(batch: PreparedBatch, analysis: Analysis) -> bytes:
    """The batch in PostgreSQL's binary COPY format: (id, doc_id, text, metadata, embedding,
    lex_len, lex_doc). ``jsonb`` is its version byte and the JSON text, a pgvector ``vector``
    (int16 dim, int16 0, dim big-endian float4) cut from one big-endian copy of the matrix."""
    dim = int(batch.vectors.shape[1])
    raw = np.ascontiguousarray(batch.vectors, dtype=">f4").tobytes()
    step = 4 * dim
    vector_head = struct.pack("!ihh", 4 + step, dim, 0)
    out = io.BytesIO()
    out.write(COPY_HEADER)
    pack = struct.pack
    for i, chunk in enumerate(batch.chunks):
        out.write(pack("!h", 7))
        for field in (
            chunk.id.encode(),
            chunk.doc_id.encode(),
            to_pg(chunk.text).encode(),
            _JSONB_VERSION + metadata_json(chunk).encode(),
        ):
            out.write(pack("!i", len(field)))
            out.write(field)
        out.write(vector_head)
        out.write(raw[i * step : (i + 1) * step])
        out.write(pack("!iiii", 4, analysis.lengths[i], 4, analysis.part_lengths[i]))
    out.write(COPY_TRAILER)
    return out.getvalue()


def write_chunks(cur: Any, sql: Any, table: str, batch: PreparedBatch, pace: Pacer) -> None:
    """Upsert a validated batch's rows slice by slice (:class:`Pacer`): each slice's chunks,
    analysed as the slice comes, go with binary COPY into a session temp table and one
    upserting INSERT empties it (the triggers drop the postings of the rows it overwrites),
    then their postings are COPied."""
    staging = sql.Identifier(f"{table}__load")
    pace.statement()
    cur.execute(
        sql.SQL(
            "CREATE TEMP TABLE IF NOT EXISTS {s} (LIKE {t} INCLUDING DEFAULTS) "
            "ON COMMIT DELETE ROWS"
        ).format(s=staging, t=sql.Identifier(table))
    )
    upsert = sql.SQL(
        f"WITH moved AS (DELETE FROM {{s}} RETURNING {_COLUMNS}) "
        f"INSERT INTO {{t}} ({_COLUMNS}) SELECT {_COLUMNS} FROM moved ON CONFLICT (id) DO "
        "UPDATE SET doc_id = EXCLUDED.doc_id, text = EXCLUDED.text, metadata = "
        "EXCLUDED.metadata, embedding = EXCLUDED.embedding, lex_len = EXCLUDED.lex_len, "
        "lex_doc = EXCLUDED.lex_doc"
    ).format(t=sql.Identifier(table), s=staging)
    before: dict[str, str] = {}  # each document's last chunk so far: a share follows it
    for part in pace.slices(len(batch.ids)):
        piece = PreparedBatch(batch.ids[part], batch.vectors[part], batch.chunks[part])
        pace.statement()  # the slice's analysis counts in its first statement's deadline
        lex = analyse(piece.chunks, before=before)
        before.update((c.doc_id, c.text) for c in piece.chunks)
        copy_binary(cur, sql, staging, f"({_COLUMNS})", copy_payload(piece, lex))
        pace.statement()
        cur.execute(upsert)
        pace.statement()
        write_postings(cur, sql, table, piece.chunks, lex)


def delete_rows(cur: Any, sql: Any, table: str, ids: list[str], pace: Pacer) -> list[str]:
    """Delete the chunks ``ids`` in slices; the document of each chunk deleted."""
    statement = sql.SQL("DELETE FROM {t} WHERE id = ANY(%s) RETURNING doc_id").format(
        t=sql.Identifier(table)
    )
    docs: list[str] = []
    for part in pace.slices(len(ids)):
        pace.statement()
        cur.execute(statement, (ids[part],))
        docs += [r[0] for r in cur.fetchall()]
    return docs


def delete_document(cur: Any, sql: Any, table: str, doc_id: str, pace: Pacer) -> int:
    """Delete a document's chunks in slices; how many there were."""
    statement = sql.SQL(
        "DELETE FROM {t} WHERE id IN (SELECT id FROM {t} WHERE doc_id = %s LIMIT %s)"
    ).format(t=sql.Identifier(table))
    removed = 0
    for size in pace.sizes():
        pace.statement()
        cur.execute(statement, (doc_id, size))
        removed += int(cur.rowcount)
        if cur.rowcount < size:
            break
    return removed


def metadata_predicate(sql: Any, filter: MetadataFilter | None) -> tuple[Any, dict[str, str]]:
    """``filter`` as a boolean SQL expression and its parameters, named ``f0``, ``f1``...:
    scalars by containment (the GIN index), lists by jsonb equality (containment would match
    any superset)."""
    scalars = {k: v for k, v in (filter or {}).items() if not isinstance(v, list | tuple)}
    clauses: list[Any] = []
    params: dict[str, str] = {}
    if scalars:
        clauses.append(sql.SQL("metadata @> %(f0)s::jsonb"))
        params["f0"] = json.dumps(scalars)
    for key, value in (filter or {}).items():
        if isinstance(value, list | tuple):
            n = len(params)
            clauses.append(sql.SQL(f"metadata -> %(f{n})s = %(f{n + 1})s::jsonb"))
            params.update({f"f{n}": key, f"f{n + 1}": json.dumps(list(value))})
    if not clauses:
        return sql.SQL("true"), {}
    return sql.SQL(" AND ").join(clauses), params
