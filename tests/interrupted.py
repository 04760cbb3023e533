"""Replaces written but not committed, as the contract's ``interrupted_replace`` asks for.

SQL stores (SQLite, FAISS's metadata file, PostgreSQL): another connection's transaction
that has deleted the document's old chunks and written the new manifest, still open while
the store is read, rolled back at the end. Versioned stores (Chroma, Qdrant): the first two
steps of ``replace_document`` (the pending version in the record, the new version's chunks
stored), then nothing, as a writer that died before the commit leaves them.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any

from pywrapai_graph.adapters.vectorstores.kit.vector_batches import prepare_batch
from pywrapai_graph.adapters.vectorstores.kit.versioned import DocRecord, VersionedDocuments
from pywrapai_graph.domain import Chunk
from pywrapai_graph.domain.manifest import DocumentManifest
from pywrapai_graph.ports import BaseVectorStore

Writes = Sequence[tuple[DocumentManifest, list[Chunk]]]


@contextmanager
def sqlite_open_transaction(
    path: str | Path, chunks_table: str, docs_table: str, writes: Writes
) -> Iterator[None]:
    """A second connection's open transaction holding ``writes`` (tables given quoted)."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=30.0)
    try:
        conn.execute("BEGIN IMMEDIATE")
        for manifest, _chunks in writes:
            conn.execute(f"DELETE FROM {chunks_table} WHERE doc_id = ?", (manifest.doc_id,))
            conn.execute(
                f"INSERT OR REPLACE INTO {docs_table} (doc_id, manifest) VALUES (?, ?)",
                (manifest.doc_id, manifest.to_json()),
            )
        yield
        conn.execute("ROLLBACK")
    finally:
        conn.close()


@contextmanager
def pg_open_transaction(url: str, table: str, writes: Writes) -> Iterator[None]:
    """:func:`sqlite_open_transaction` on PostgreSQL (``table`` and ``<table>__docs``)."""
    import psycopg2
    from psycopg2 import sql

    conn: Any = psycopg2.connect(url)
    try:
        with conn.cursor() as cur:  # psycopg2 opens the transaction at the first statement
            for manifest, _chunks in writes:
                cur.execute(
                    sql.SQL("DELETE FROM {t} WHERE doc_id = %s").format(t=sql.Identifier(table)),
                    (manifest.doc_id,),
                )
                cur.execute(
                    sql.SQL(
                        "INSERT INTO {d} (doc_id, manifest) VALUES (%s, %s) "
                        "ON CONFLICT (doc_id) DO UPDATE SET manifest = EXCLUDED.manifest"
                    ).format(d=sql.Identifier(table + "__docs")),
                    (manifest.doc_id, manifest.to_json()),
                )
        yield
        conn.rollback()
    finally:
        conn.close()


def versioned_half_replace(store: BaseVectorStore, writes: Writes) -> AbstractContextManager[None]:
    """Steps 1 and 2 of ``replace_document`` for each write, and never the commit."""
    assert isinstance(store, VersionedDocuments)
    for manifest, chunks in writes:
        with store._writing():
            doc_id = manifest.doc_id
            record = store._records([doc_id]).get(doc_id) or DocRecord(doc_id)
            version = f"{time.time_ns():x}-{uuid.uuid4().hex}"
            store._put_record(replace(record, pending=version))
            store._upsert(prepare_batch(chunks, store._dim), [version] * len(chunks))
    return nullcontext()


class VersionedInterrupts:
    """The contract's ``interrupted_replace`` for Chroma and Qdrant test classes."""

    def interrupted_replace(
        self, store: BaseVectorStore, writes: Writes
    ) -> AbstractContextManager[None] | None:
        return versioned_half_replace(store, writes)
