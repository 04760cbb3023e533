"""The in-process BM25 index of the file stores (SQLite, FAISS) follows another process's
writes, document statistics included: after a second process deletes one document and
replaces another, this process's next lexical search scores every chunk exactly as the
reference BM25 with its document field over what the store now holds.

The other process is real (``spawn``) and has exited before this one reads: the order is
structural, never timed.
"""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import pytest

from pywrapai_graph import FAISSVectorStore, SQLiteVectorStore
from pywrapai_graph.domain import Chunk
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.testing.contracts.lexical_search import QUERIES, lexical_corpus, reference_bm25
from pywrapai_graph.testing.contracts.store_data import manifest_for

DIM = 8


def _open(kind: str, folder: str) -> BaseVectorStore:
    if kind == "sqlite":
        return SQLiteVectorStore(Path(folder) / "store.db")
    return FAISSVectorStore(Path(folder) / "store.faiss", Path(folder) / "store.sqlite")


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


def _other_process_writes(kind: str, folder: str) -> None:
    store = _open(kind, folder)
    try:
        store.delete_by_doc("doc-1")
        new = _replacement()
        store.replace_document(manifest_for("doc-2", new, DIM), new)
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["sqlite", "faiss"])
def test_document_statistics_follow_another_process(kind: str, tmp_path: Path) -> None:
    corpus = lexical_corpus(dim=DIM)
    store = _open(kind, str(tmp_path))
    try:
        store.add(corpus)
        query = "heat transfer"
        before = [(h.chunk.id, h.score) for h in store.lexical_search(query, k=10)]
        assert [i for i, _ in before] == [i for i, _ in reference_bm25(corpus, query, 10)]

        writer = mp.get_context("spawn").Process(
            target=_other_process_writes, args=(kind, str(tmp_path))
        )
        writer.start()
        writer.join(timeout=120)
        assert writer.exitcode == 0

        live = [c for c in corpus if c.doc_id not in ("doc-1", "doc-2")] + _replacement()
        for q in (query, *QUERIES):
            want = reference_bm25(live, q, 10)
            got = store.lexical_search(q, k=10)
            assert [h.chunk.id for h in got] == [i for i, _ in want], q
            assert [h.score for h in got] == pytest.approx([s for _, s in want], rel=1e-9)
    finally:
        store.close()
