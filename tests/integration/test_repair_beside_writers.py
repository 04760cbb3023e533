"""`repair()` beside live writers, on every engine: three processes replace the same documents
round after round, their clocks 20 minutes slow, while a fourth repairs in a loop with the
default guard. Afterwards every document is whole in one committed version, its manifest
names that version, and re-ingesting it changes nothing."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import pytest

import pywrapai_graph
from pywrapai_graph import Chunker, Document, VectorRetriever
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.testing.contracts.vector_store import WordEmbedder
from tests.integration.store_workers import DIM, Factory, version_text, workers

pytestmark = pytest.mark.integration
DOCS = ["a", "b", "c"]
ROUNDS = 8
BACKENDS = ["pgvector", "sqlite", "faiss", "chroma", "qdrant"]


def factory(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Factory:
    name = f"rep_{uuid.uuid4().hex[:10]}"
    if backend == "pgvector":
        url = request.getfixturevalue("pg_url")
        return "PGVectorStore", {"connection_string": url, "table_name": name, "dimension": DIM}
    if backend == "sqlite":
        return "SQLiteVectorStore", {"db_path": str(tmp_path / "s.db")}
    if backend == "faiss":
        return "FAISSVectorStore", {
            "index_path": str(tmp_path / "f.index"),
            "meta_path": str(tmp_path / "f.meta"),
            "dimension": DIM,
        }
    if backend == "chroma":
        return "ChromaVectorStore", {
            "url": request.getfixturevalue("chroma_url"),
            "collection": name,
        }
    return "QdrantVectorStore", {
        "collection": name,
        "url": request.getfixturevalue("qdrant_rest_url"),
    }


def check_whole(store: BaseVectorStore, docs: list[str] = DOCS) -> None:
    """Each document: one version's chunks, all of them, and the manifest of that version."""
    everything = store.search([1.0] * DIM, k=1000)
    for doc in docs:
        texts = {h.chunk.text for h in everything if h.chunk.doc_id == doc}
        tags = {tag for t in texts for tag in re.findall(rf"{doc}:writer(\d+):round(\d+)", t)}
        assert len(tags) == 1, (doc, sorted(tags))  # one version, never two mixed
        writer, round_ = (int(x) for x in tags.pop())
        manifest = store.document_manifest(doc)
        assert manifest is not None and manifest.chunk_count == len(texts), doc
        again = VectorRetriever(WordEmbedder(DIM), store)
        report = again.ingest([Document(version_text(doc, writer, round_), id=doc)], Chunker(500))
        assert report.unchanged == [doc], doc  # re-ingest agrees: nothing to write


@pytest.mark.parametrize("backend", BACKENDS)
def test_repair_in_a_loop_beside_three_writers_keeps_every_document_whole(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    spec = factory(backend, tmp_path, request)
    with workers(spec, 4) as team:
        *writers, repairer = team
        for w in writers:
            w.ask("skew", 20 * 60)  # the writers' clocks are 20 minutes slow
        repairer.send("repair_until_told", 600.0)
        for i, w in enumerate(writers):
            w.send("replace_rounds", DOCS, i, ROUNDS)
        refused = [w.receive() for w in writers]
        repairer.send("halt")
        assert repairer.receive() >= 1
    # only writers racing on the same document are ever refused, never all of them
    assert sum(refused) < len(writers) * ROUNDS * len(DOCS)
    name, kwargs = spec
    store: Any = getattr(pywrapai_graph, name)(**kwargs)
    try:
        check_whole(store)
        assert store.repair(older_than_s=0) >= 0  # no writer left: leftovers may go now
        check_whole(store)
        assert len(store) == sum(store.document_manifest(d).chunk_count for d in DOCS)
    finally:
        store.close()


@pytest.mark.parametrize("backend", ["chroma", "qdrant"])
def test_a_stalled_writer_is_left_alone_then_refused_after_a_repair_takes_its_version(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    spec = factory(backend, tmp_path, request)
    name, kwargs = spec
    store: Any = getattr(pywrapai_graph, name)(**kwargs)
    old = version_text("a", 0, 0)
    VectorRetriever(WordEmbedder(DIM), store).add_documents([Document(old, id="a")], Chunker(500))
    whole = len(store)
    with workers(spec, 2) as (writer, repairer):
        writer.ask("skew", 20 * 60)  # its version token claims to be 20 minutes old
        writer.send("replace_paused", "a", 1, 1)
        assert writer.receive() == "paused"  # new chunks stored, not committed
        assert len(store) > whole
        assert repairer.ask("repair", 600.0) == 0  # first seen now: left to its writer
        assert repairer.ask("repair", 600.0) == 0
        assert repairer.ask("repair", 0.0) == 1  # the operator's call: take it over
        writer.send("resume")
        assert writer.receive() == "refused"  # the writer does not commit a removed version
    assert len(store) == whole
    check_whole(store, ["a"])
    store.close()
