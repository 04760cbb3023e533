"""The rows of PGVectorStore: chunks in and out in slices a :class:`Pacer` sizes, their text
and terms, and metadata filters (a boolean SQL expression).

A write COPies each slice's chunks with their terms (the project's analyzer,
:func:`~pywrapai_graph.application.text_analysis.analyze`, of the chunk and of its share of
its document: its text without the overlap it repeats from the chunk before it); the server
turns them into postings in the same transaction (the tables: ``schema``).

PostgreSQL's ``text`` cannot hold NUL, yet every store keeps a chunk's text as it was given:
the column holds NUL as ``U+FDD0 0`` and the escape character itself as ``U+FDD0 e`` (U+FDD0
is a Unicode noncharacter, so every ordinary text is stored unchanged).
"""

from __future__ import annotations

import io
import json
import struct
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from pywrapai_graph.adapters.vectorstores.kit.metadata_json import metadata_json
from pywrapai_graph.adapters.vectorstores.kit.vector_batches import PreparedBatch
from pywrapai_graph.adapters.vectorstores.postgres.pool import CLIENT_GRACE_S, renew
from pywrapai_graph.application.text_analysis import analyze, document_parts
from pywrapai_graph.domain import Chunk
from pywrapai_graph.ports import MetadataFilter

__all__ = [
    "Pacer",
    "copy_payload",
    "delete_document",
    "delete_rows",
    "from_pg",
    "lexical_terms",
    "metadata_predicate",
    "names",
    "query_terms",
    "store_tables",
    "to_pg",
    "write_chunks",
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


def query_terms(query: str) -> tuple[list[str], list[int]]:
    """A query's distinct terms and how often each occurs in it."""
    counts = Counter(analyze(query))
    return list(counts), list(counts.values())


def store_tables(table: str) -> list[str]:
    """The tables of the store ``table``: the chunks, manifests, info, postings, document
    lengths and statistics."""
    return [table, *(table + s for s in ("__docs", "__info", "__terms", "__doclen", "__bm25"))]


def names(sql: Any, table: str) -> dict[str, Any]:
    """The identifiers of ``table``'s lexical objects, for ``sql.SQL(...).format(**names)``."""
    terms, doclen, stats = store_tables(table)[3:]
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
def lexical_terms(
    chunks: Sequence[Chunk], before: Mapping[str, str]
) -> list[tuple[list[str], list[str]]]:
    """Each chunk's terms, and those of its share of its document: its text without the
    overlap it repeats from the chunk before it (:func:`document_parts`; ``before``: each
    document's last chunk written before these in the same write)."""
    docs = {c.doc_id for c in chunks}
    context = [(d, t) for d, t in before.items() if d in docs]
    texts = document_parts(
        [*(t for _, t in context), *(c.text for c in chunks)],
        [*(d for d, _ in context), *(c.doc_id for c in chunks)],
    )[len(context) :]
    out = []
    for chunk, text in zip(chunks, texts, strict=True):
        terms = analyze(chunk.text)
        out.append((terms, terms if text == chunk.text else analyze(text)))
    return out


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
    """Cuts one write on ``conn`` into slices of bounded statements inside its transaction,
    each sized on the time the one before it took, so a write of any size fits
    ``statement_timeout`` (``seconds``; None: slices aim at SLICE_SECONDS)."""

    def __init__(self, conn: Any, seconds: float | None) -> None:
        self._conn, self._seconds = conn, seconds
        self._target = min(SLICE_SECONDS, seconds * SLICE_SHARE) if seconds else SLICE_SECONDS

    def statement(self) -> None:
        """Arm the client deadline of the next statement (the server's bounds each)."""
        if self._seconds is not None:
            renew(self._conn, self._seconds + CLIENT_GRACE_S)

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


def copy_payload(batch: PreparedBatch, lex: Sequence[tuple[list[str], list[str]]]) -> bytes:
    """The batch and its terms (:func:`lexical_terms`) in PostgreSQL's binary COPY format:
    (id, doc_id, text, metadata, embedding, lex_len, lex_doc, terms, dterms), the terms
    space-separated (a term holds no space). ``jsonb`` is its version byte and the JSON text,
    a pgvector ``vector`` (int16 dim, int16 0, dim big-endian float4) cut from one big-endian
    copy of the matrix."""
    dim = int(batch.vectors.shape[1])
    raw = np.ascontiguousarray(batch.vectors, dtype=">f4").tobytes()
    step = 4 * dim
    vector_head = struct.pack("!ihh", 4 + step, dim, 0)
    out = io.BytesIO()
    out.write(COPY_HEADER)
    pack = struct.pack

    def fields(*values: str) -> None:
        for field in map(str.encode, values):
            out.write(pack("!i", len(field)))
            out.write(field)

    for i, (chunk, (terms, dterms)) in enumerate(zip(batch.chunks, lex, strict=True)):
        out.write(pack("!h", 9))
        fields(chunk.id, chunk.doc_id, to_pg(chunk.text))
        metadata = _JSONB_VERSION + metadata_json(chunk).encode()
        out.write(pack("!i", len(metadata)) + metadata + vector_head)
        out.write(raw[i * step : (i + 1) * step])
        out.write(pack("!iiii", 4, len(terms), 4, len(dterms)))
        fields(" ".join(terms), " ".join(dterms))
    out.write(COPY_TRAILER)
    return out.getvalue()


#: A slice's postings, built by the server from the terms staged with its chunks: one per
#: term of the chunk or of its share of the document, with both counts, in key order (each
#: index page is then visited once); the staging table is emptied.
_POSTINGS = (
    "WITH moved AS (DELETE FROM {load} RETURNING id, doc_id, lex_len, terms, dterms) "
    "INSERT INTO {p} (term, doc_id, chunk_id, tf, dtf, dl) SELECT term, doc_id, id, "
    "count(*) FILTER (WHERE f = 0), count(*) FILTER (WHERE f = 1), lex_len FROM moved "
    "CROSS JOIN LATERAL (SELECT unnest(string_to_array(terms, ' ')), 0 UNION ALL "
    "SELECT unnest(string_to_array(dterms, ' ')), 1) x(term, f) "
    "GROUP BY term, doc_id, id, lex_len ORDER BY term, doc_id, id"
)


def write_chunks(cur: Any, sql: Any, table: str, batch: PreparedBatch, pace: Pacer) -> None:
    """Upsert a validated batch's rows slice by slice (:class:`Pacer`): each slice's chunks
    and their terms, analysed as the slice comes, go with binary COPY into a session temp
    table, one INSERT upserts the chunks (the triggers drop the postings of the rows it
    overwrites) and one more makes their postings (:data:`_POSTINGS`)."""
    ids = {**names(sql, table), "load": sql.Identifier(f"{table}__load")}
    pace.statement()
    cur.execute(
        sql.SQL(
            "CREATE TEMP TABLE IF NOT EXISTS {load} (LIKE {t}, terms TEXT, dterms TEXT) "
            "ON COMMIT DELETE ROWS"
        ).format(**ids)
    )
    upsert = sql.SQL(
        f"INSERT INTO {{t}} ({_COLUMNS}) SELECT {_COLUMNS} FROM {{load}} ON CONFLICT (id) DO "
        "UPDATE SET doc_id = EXCLUDED.doc_id, text = EXCLUDED.text, metadata = "
        "EXCLUDED.metadata, embedding = EXCLUDED.embedding, lex_len = EXCLUDED.lex_len, "
        "lex_doc = EXCLUDED.lex_doc"
    ).format(**ids)
    copy = (
        sql.SQL(f"COPY {{load}} ({_COLUMNS}, terms, dterms) FROM STDIN WITH (FORMAT binary)")
        .format(**ids)
        .as_string(cur)
    )
    before: dict[str, str] = {}  # each document's last chunk so far: a share follows it
    for part in pace.slices(len(batch.ids)):
        piece = PreparedBatch(batch.ids[part], batch.vectors[part], batch.chunks[part])
        pace.statement()  # the slice's analysis counts in its first statement's deadline
        lex = lexical_terms(piece.chunks, before)
        before.update((c.doc_id, c.text) for c in piece.chunks)
        cur.copy_expert(copy, io.BytesIO(copy_payload(piece, lex)))
        for statement in (upsert, sql.SQL(_POSTINGS).format(**ids)):
            pace.statement()
            cur.execute(statement)


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
