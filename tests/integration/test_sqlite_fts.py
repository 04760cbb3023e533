"""SQLite's lexical search is the file's full-text index (FTS5), read by one statement.

- Another process's write is what this process's next lexical query ranks, and that query is
  one statement on this store's connection: nothing is reloaded or rebuilt in the process.
- A hybrid retrieval is one statement too (the dense side is the in-memory matrix).
- The metadata filter, applied in SQL, keeps exactly what ``matches_filter`` keeps.

The other process is real (``spawn``) and has exited before this one reads: the order is structural, never timed.
"""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pywrapai_graph import SQLiteVectorStore
from pywrapai_graph.domain import Chunk
from pywrapai_graph.ports.store_inputs import matches_filter
from pywrapai_graph.ports.store_query import StoreQuery
from pywrapai_graph.testing.contracts.lexical_search import QUERIES, lexical_corpus, reference_bm25
from pywrapai_graph.testing.contracts.store_data import manifest_for

DIM = 8


def _statements(store: SQLiteVectorStore) -> list[str]:
    """The statements the store's connection runs from now on (SQLite's trace hook; the
    engine's own statements inside one, which it reports prefixed by ``--``, left out)."""
    seen: list[str] = []
    store._conn.set_trace_callback(lambda s: None if s.startswith("--") else seen.append(s))
    return seen


def _reads(seen: list[str]) -> list[str]:
    return [s for s in seen if s.lstrip().upper().startswith(("SELECT", "WITH"))]


def _replacement() -> list[Chunk]:
    return [
        Chunk(
            f"Heat transfer heat shield ablation, part {i}.",
            doc_id="doc-2",
            metadata={"part": "new", "doc": "doc-2"},
            id=f"doc-2-new-{i}",
            embedding=[1.0] + [0.0] * (DIM - 1),
        )
        for i in range(3)
    ]


def _replace_doc_2(folder: str) -> None:
    store = SQLiteVectorStore(Path(folder) / "store.db")
    try:
        store.delete_by_doc("doc-1")
        new = _replacement()
        store.replace_document(manifest_for("doc-2", new, DIM), new)
    finally:
        store.close()


def test_another_process_write_is_read_by_one_statement(tmp_path: Path) -> None:
    corpus = lexical_corpus(dim=DIM)
    store = SQLiteVectorStore(tmp_path / "store.db")
    try:
        store.add(corpus)
        store.search([1.0] * DIM, k=3)  # the dense matrix is loaded: it must not be reloaded
        store.lexical_search(QUERIES[0], k=10)
        writer = mp.get_context("spawn").Process(target=_replace_doc_2, args=(str(tmp_path),))
        writer.start()
        writer.join(timeout=120)
        assert writer.exitcode == 0

        seen = _statements(store)
        got = store.lexical_search("heat transfer ablation", k=10)
        assert len(seen) == 1, seen  # one statement: no data_version check, no reload
        assert "__terms" in seen[0]
        live = [c for c in corpus if c.doc_id not in ("doc-1", "doc-2")] + _replacement()
        want = reference_bm25(live, "heat transfer ablation", 10)
        assert [h.chunk.id for h in got] == [i for i, _ in want]
        assert got[0].chunk.doc_id == "doc-2"
        assert [h.score for h in got] == pytest.approx([s for _, s in want], rel=1e-9)
    finally:
        store.close()


def test_hybrid_retrieval_is_one_statement(tmp_path: Path) -> None:
    corpus = lexical_corpus(dim=DIM)
    store = SQLiteVectorStore(tmp_path / "store.db")
    try:
        store.add(corpus)
        vector = list(np.random.default_rng(2).standard_normal(DIM))
        store.search(vector, k=3, filter={"part": "even"})  # loads the matrix and the column
        for fusion in ("rescored", "rrf", "weighted"):
            seen = _statements(store)
            asked = StoreQuery("hybrid", 5, vector, QUERIES[1], {"part": "even"}, fusion=fusion)
            hits = store.retrieve(asked)
            assert len(hits) == 5
            assert all(h.chunk.metadata["part"] == "even" for h in hits)
            assert len(_reads(seen)) == 1, seen
    finally:
        store.close()


FILTER_VALUES: list[dict[str, Any]] = [
    {"flag": True},
    {"flag": 1},
    {"flag": 1.0},
    {"flag": False},
    {"flag": None},
    {"flag": "1"},
    {"tags": ["a", 1]},
    {"tags": ["a", True]},
    {"tags": []},
    {'odd "key".x': "é\\n"},
    {"flag": 1, "tags": ["a", 1]},
    {"missing": None},
]


def test_lexical_filter_keeps_what_matches_filter_keeps(tmp_path: Path) -> None:
    stored: list[dict[str, Any]] = [
        {"flag": True},
        {"flag": 1},
        {"flag": 1.0, "tags": ["a", 1]},
        {"flag": False, "tags": ["a", True]},
        {"flag": None, "tags": []},
        {"flag": "1", "tags": ["a", 1.0]},
        {"flag": 1, "tags": ["a", 1], 'odd "key".x': "é\\n"},
        {"tags": ["a", 1, 2]},
    ]
    chunks = [
        Chunk(f"Shock wave number {i}.", f"d{i}", meta, f"c{i}", [1.0] * DIM)
        for i, meta in enumerate(stored)
    ]
    store = SQLiteVectorStore(tmp_path / "store.db")
    try:
        store.add(chunks)
        for wanted in FILTER_VALUES:
            got = {h.chunk.id for h in store.lexical_search("shock wave", 20, wanted)}
            assert got == {c.id for c in chunks if matches_filter(c.metadata, wanted)}, wanted
    finally:
        store.close()
