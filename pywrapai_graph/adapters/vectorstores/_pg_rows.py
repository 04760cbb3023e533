"""The rows of PGVectorStore: chunks in (``execute_values`` or binary COPY, then their
postings) and metadata filters out (a boolean SQL expression)."""

from __future__ import annotations

import io
import json
import struct
from typing import Any

import numpy as np

from pywrapai_graph.adapters.vectorstores._metadata_json import metadata_json
from pywrapai_graph.adapters.vectorstores._pg_lexical import (
    COPY_HEADER,
    COPY_TRAILER,
    Analysis,
    analyse,
    copy_binary,
    write_postings,
)
from pywrapai_graph.adapters.vectorstores._pg_text import to_pg
from pywrapai_graph.adapters.vectorstores._vector_batches import PreparedBatch
from pywrapai_graph.ports import MetadataFilter

__all__ = ["copy_payload", "metadata_predicate", "write_chunks"]

_JSONB_VERSION = b"\x01"
_COLUMNS = "id, doc_id, text, metadata, embedding, lex_len, lex_doc"
_UPSERT = (
    "ON CONFLICT (id) DO UPDATE SET doc_id = EXCLUDED.doc_id, text = EXCLUDED.text, "
    "metadata = EXCLUDED.metadata, embedding = EXCLUDED.embedding, lex_len = EXCLUDED.lex_len, "
    "lex_doc = EXCLUDED.lex_doc"
)


def copy_payload(batch: PreparedBatch, analysis: Analysis) -> bytes:
    """The batch in PostgreSQL's binary COPY format: (id, doc_id, text, metadata, embedding,
    lex_len, lex_doc).

    Text fields are UTF-8, ``jsonb`` is its version byte and the JSON text, and a pgvector
    ``vector`` is (int16 dim, int16 0, dim big-endian float4), cut from one big-endian copy
    of the whole matrix: no Python float per value. ``lex_len`` is the chunk's length after
    analysis, ``lex_doc`` that of its share of its document (``_pg_lexical``).
    """
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


def write_chunks(
    cur: Any, sql: Any, extras: Any, table: str, batch: PreparedBatch, *, copy: bool
) -> None:
    """Upsert a validated batch's rows (one statement, or binary COPY through a session temp
    table and one upserting INSERT), then their postings."""
    analysis = analyse(batch.chunks)
    t = sql.Identifier(table)
    if copy:
        staging = sql.Identifier(f"{table}__load")
        cur.execute(
            sql.SQL(
                "CREATE TEMP TABLE IF NOT EXISTS {s} (LIKE {t} INCLUDING DEFAULTS) "
                "ON COMMIT DELETE ROWS"
            ).format(s=staging, t=t)
        )
        copy_binary(cur, sql, staging, f"({_COLUMNS})", copy_payload(batch, analysis))
        cur.execute(
            sql.SQL(
                f"INSERT INTO {{t}} ({_COLUMNS}) SELECT {_COLUMNS} FROM {{s}} {_UPSERT}"
            ).format(t=t, s=staging)
        )
    else:
        rows = [
            (c.id, c.doc_id, to_pg(c.text), metadata_json(c), v, n, part)
            for c, v, n, part in zip(
                batch.chunks, batch.vectors, analysis.lengths, analysis.part_lengths, strict=True
            )
        ]
        query = sql.SQL(f"INSERT INTO {{t}} ({_COLUMNS}) VALUES %s {_UPSERT}").format(t=t)
        extras.execute_values(
            cur, query, rows, template="(%s, %s, %s, %s::jsonb, %s, %s, %s)", page_size=len(rows)
        )
    # after the chunks: their triggers dropped the postings of the rows they overwrote
    write_postings(cur, sql, table, batch.chunks, analysis)


def metadata_predicate(sql: Any, filter: MetadataFilter | None) -> tuple[Any, list[str]]:
    """``filter`` as a boolean SQL expression and its parameters: scalars by containment
    (the GIN index), lists by jsonb equality (containment would match any superset)."""
    scalars = {k: v for k, v in (filter or {}).items() if not isinstance(v, list | tuple)}
    clauses: list[Any] = []
    params: list[str] = []
    if scalars:
        clauses.append(sql.SQL("metadata @> %s::jsonb"))
        params.append(json.dumps(scalars))
    for key, value in (filter or {}).items():
        if isinstance(value, list | tuple):
            clauses.append(sql.SQL("metadata -> %s = %s::jsonb"))
            params += [key, json.dumps(list(value))]
    if not clauses:
        return sql.SQL("true"), []
    return sql.SQL(" AND ").join(clauses), params
