"""PGVectorStore's rows: chunks written in paced slices with their terms (of the chunk and of
its share of its document) the server turns into postings; deletes; metadata filters as SQL.
The text column holds NUL (which PostgreSQL's ``text`` cannot) as ``U+FDD0 0``, U+FDD0 as
``U+FDD0 e``, so a chunk's text is kept as given.
"""

from __future__ import annotations

import functools
import io
import json
import struct
import time
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
    "store_tables",
    "vector_literal",
    "write_chunks",
]

#: Delta rows of the statistics table: a writer updates the one of its backend.
STATS_SLOTS = 64
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


@functools.cache
def _vector_format(dimension: int) -> str:
    return "'[" + ",".join(["%.9g"] * dimension) + "]'"


def vector_literal(vector: Sequence[float]) -> str:
    """A query vector as a quoted SQL literal, 9 significant digits a value (exact for
    float32; a third shorter than pgvector's adapter writes, and five times faster)."""
    return _vector_format(len(vector)) % tuple(vector)


def store_tables(table: str) -> list[str]:
    """The tables of the store ``table``."""
    return [table, *(table + s for s in ("__docs", "__info", "__terms", "__doclen", "__bm25"))]


def names(sql: Any, table: str) -> dict[str, Any]:
    """The identifiers of ``table``'s objects, for ``sql.SQL(...).format(**names)``."""
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
        **{k: sql.Identifier(table + s) for k, s in _SUFFIXES.items()},
    }


_SUFFIXES = {"hnsw": "_hnsw", "doc": "_doc", "meta": "_meta", "d": "__docs", "i": "__info"}


def lexical_terms(
    chunks: Sequence[Chunk], before: Mapping[str, str]
) -> list[tuple[list[str], list[str]]]:
    """Each chunk's terms, and those of its share of its document (:func:`document_parts`;
    ``before``: each document's last chunk earlier in the same write)."""
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


#: A slice's statements aim at this share of statement_timeout (at most SLICE_SECONDS): the
#: margin absorbs a slice slower than the one it was sized on.
SLICE_SHARE = 0.25
SLICE_SECONDS = 1.0
#: What the first slice assumes a row costs (HNSW insertion and postings, 384 dimensions).
ROW_SECONDS = 0.002
MIN_SLICE_ROWS = 8
MAX_SLICE_ROWS = 8192


class Pacer:
    """Cuts one write on ``conn`` into slices, each sized on the time the one before took, so a
    write of any size fits ``statement_timeout`` (``seconds``; None: none)."""

    def __init__(self, conn: Any, seconds: float | None) -> None:
        self._conn, self._seconds = conn, seconds
        self._target = min(SLICE_SECONDS, seconds * SLICE_SHARE) if seconds else SLICE_SECONDS

    def statement(self) -> None:
        """Arm the client deadline of the next statement (the server's bounds each)."""
        if self._seconds is not None:
            renew(self._conn, self._seconds + CLIENT_GRACE_S)

    def slices(self, n: int) -> Iterator[slice]:
        """``0..n`` in consecutive slices; the time until the next is asked measures the last."""
        rows, start = max(MIN_SLICE_ROWS, int(self._target / ROW_SECONDS)), 0
        while start < n:
            began = time.monotonic()
            yield slice(start, min(n, start + rows))
            start += rows
            fits = int(rows * self._target / max(time.monotonic() - began, 1e-3))
            rows = max(MIN_SLICE_ROWS, min(MAX_SLICE_ROWS, 2 * rows, fits))


def copy_payload(batch: PreparedBatch, lex: Sequence[tuple[list[str], list[str]]]) -> bytes:
    """The batch and its terms (:func:`lexical_terms`, space-separated) as binary COPY rows of
    ``_COLUMNS, terms, dterms``; a ``jsonb`` is a version byte and the JSON, a ``vector``
    int16 dim, int16 0 and big-endian float4s."""
    dim = int(batch.vectors.shape[1])
    raw = np.ascontiguousarray(batch.vectors, dtype=">f4").tobytes()
    step = 4 * dim
    vector_head = struct.pack("!ihh", 4 + step, dim, 0)
    out = io.BytesIO()
    out.write(b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0))
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
    out.write(pack("!h", -1))
    return out.getvalue()


#: A slice's postings from the terms staged with its chunks, both counts, in key order (each
#: index page visited once); the staging table is emptied.
_POSTINGS = (
    "WITH moved AS (DELETE FROM {load} RETURNING id, doc_id, lex_len, terms, dterms) "
    "INSERT INTO {p} (term, doc_id, chunk_id, tf, dtf, dl) SELECT term, doc_id, id, "
    "count(*) FILTER (WHERE f = 0), count(*) FILTER (WHERE f = 1), lex_len FROM moved "
    "CROSS JOIN LATERAL (SELECT unnest(string_to_array(terms, ' ')), 0 UNION ALL "
    "SELECT unnest(string_to_array(dterms, ' ')), 1) x(term, f) "
    "GROUP BY term, doc_id, id, lex_len ORDER BY term, doc_id, id"
)


def write_chunks(cur: Any, sql: Any, table: str, batch: PreparedBatch, pace: Pacer) -> None:
    """Upsert a batch slice by slice (:class:`Pacer`): binary COPY of the chunks and their
    terms into a temp table, one INSERT upserting the chunks (the triggers drop the postings
    of rows overwritten), one making their postings (:data:`_POSTINGS`)."""
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
    """Delete a document's chunks in slices (:func:`delete_rows`); how many there were."""
    pace.statement()
    cur.execute(
        sql.SQL("SELECT id FROM {t} WHERE doc_id = %s").format(t=sql.Identifier(table)), (doc_id,)
    )
    return len(delete_rows(cur, sql, table, [r[0] for r in cur.fetchall()], pace))


def metadata_predicate(sql: Any, filter: MetadataFilter | None) -> tuple[Any, dict[str, str]]:
    """``filter`` as a boolean SQL expression, parameters ``f0``, ``f1``...: scalars by
    containment (the GIN index), lists by equality (containment would match a superset)."""
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
