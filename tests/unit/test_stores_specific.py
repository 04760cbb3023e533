"""Backend-specific behaviour of the built-in stores (the shared contract is in tests/contract)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from pywrapai_graph import (
    Chunk,
    Chunker,
    Document,
    Embedder,
    FeatureHashingEmbedder,
    InMemoryVectorStore,
    SQLiteVectorStore,
)
from pywrapai_graph.adapters.vectorstores.kit.exact_search import ExactIndex
from pywrapai_graph.adapters.vectorstores.kit.vector_batches import prepare_batch
from pywrapai_graph.application.ingest_documents import IngestDocuments
from pywrapai_graph.domain import ScoredChunk
from pywrapai_graph.domain.manifest import DocumentManifest
from pywrapai_graph.errors import VectorStoreError
from pywrapai_graph.ports import BaseVectorStore, EmbeddingModel, MetadataFilter
from pywrapai_graph.ports.store_inputs import matches_filter
from pywrapai_graph.testing.contracts.vector_store import make_chunks


@pytest.mark.parametrize(
    "name",
    ["chunks; DROP TABLE x", 'a"b', "1abc", "", "a b", "x" * 64, "ta-ble", "t\x00"],
)
def test_sqlite_refuses_hostile_table_names(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="not a valid identifier"):
        SQLiteVectorStore(tmp_path / "s.db", table_name=name)
    assert not (tmp_path / "s.db").exists()


def test_sqlite_uses_wal_and_float32_blobs(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with SQLiteVectorStore(path, table_name="kb") as store:
        store.add(make_chunks(3, 8))
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    blob, dim = conn.execute("SELECT embedding, dim FROM kb LIMIT 1").fetchone()
    assert dim == 8
    assert len(blob) == 8 * 4
    assert np.linalg.norm(np.frombuffer(blob, np.float32)) == pytest.approx(1.0, abs=1e-6)


def test_sqlite_two_tables_in_one_file_are_independent(tmp_path: Path) -> None:
    a = SQLiteVectorStore(tmp_path / "s.db", table_name="a")
    b = SQLiteVectorStore(tmp_path / "s.db", table_name="b")
    a.add(make_chunks(3, 8))
    assert (len(a), len(b)) == (3, 0)


def test_sqlite_rejects_non_json_metadata_whole_batch(tmp_path: Path) -> None:
    store = SQLiteVectorStore(tmp_path / "s.db")
    chunks = make_chunks(3, 8)
    chunks[2].metadata = {"when": object()}
    with pytest.raises(ValueError, match="JSON"):
        store.add(chunks)
    assert len(store) == 0
    assert len(SQLiteVectorStore(tmp_path / "s.db")) == 0


def test_sqlite_sees_writes_of_another_process(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    store = SQLiteVectorStore(path)
    store.add(make_chunks(5, 8, prefix="mine"))
    code = (
        "from pywrapai_graph import SQLiteVectorStore\n"
        "from pywrapai_graph.testing.contracts.vector_store import make_chunks\n"
        f"s = SQLiteVectorStore({str(path)!r})\n"
        "s.add(make_chunks(7, 8, seed=5, prefix='theirs'))\n"
        "s.delete(['mine0'])\n"
        "s.close()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert len(store) == 11
    theirs = make_chunks(7, 8, seed=5, prefix="theirs")
    assert store.search(theirs[3].embedding or [], k=1)[0].chunk.id == "theirs3"
    # and our own next write lands on top of theirs, not over a stale copy
    store.add(make_chunks(1, 8, seed=9, prefix="later"))
    assert len(SQLiteVectorStore(path)) == 12


def test_sqlite_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "garbage.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(VectorStoreError, match="cannot open"):
        SQLiteVectorStore(path)


def test_sqlite_concurrent_readers_and_writer(tmp_path: Path) -> None:
    store = SQLiteVectorStore(tmp_path / "s.db")
    store.add(make_chunks(50, 8))
    errors: list[BaseException] = []

    def read() -> None:
        try:
            for _ in range(50):
                assert len(store.search([1.0] * 8, k=5)) == 5
        except BaseException as exc:
            errors.append(exc)

    def write() -> None:
        try:
            for j in range(20):
                store.add(make_chunks(5, 8, seed=100 + j, prefix=f"w{j}-"))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=read) for _ in range(3)] + [threading.Thread(target=write)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(store) == 150


def test_in_memory_growth_is_amortised() -> None:
    index = ExactIndex()
    capacities = set()
    for i in range(200):
        index.upsert(prepare_batch(make_chunks(10, 4, seed=i, prefix=f"b{i}-"), index.dimension))
        capacities.add(index.capacity)
    assert len(index) == 2000
    assert index.capacity <= 2000 * 9 // 8
    # geometric growth by an eighth: log(2000 / 64) / log(1.125) + 1 reallocations, not 200
    assert len(capacities) <= 31
    first = make_chunks(1, 4, seed=999, prefix="probe-")
    index.upsert(prepare_batch(first, index.dimension))
    hits = index.scored(index.search_rows(np.asarray(first[0].embedding, np.float32), 1))
    assert hits[0].chunk.id == "probe-0"


def test_in_memory_search_many_matches_single_searches() -> None:
    store = InMemoryVectorStore()
    chunks = make_chunks(100, 8)
    store.add(chunks)
    queries = [c.embedding or [] for c in chunks[:4]]
    batched = store.search_many(queries, k=3)
    single = [store.search(q, k=3) for q in queries]
    assert [[h.chunk.id for h in r] for r in batched] == [[h.chunk.id for h in r] for r in single]


def test_in_memory_fixed_dimension() -> None:
    store = InMemoryVectorStore(dimension=4)
    with pytest.raises(ValueError, match="expects 4"):
        store.add([Chunk("x", id="x", embedding=[1.0, 2.0])])


def test_add_single_chunk_instead_of_list_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match="list of chunks"):
        InMemoryVectorStore().add(make_chunks(1, 4)[0])  # type: ignore[arg-type]


class _RecordingMemoryStore(InMemoryVectorStore):
    """A real in-memory store that remembers what its bulk path was handed."""

    def __init__(self) -> None:
        super().__init__()
        self.handed: list[tuple[list[Chunk], memoryview]] = []

    def replace_document_vectors(
        self, manifest: DocumentManifest, chunks: Sequence[Chunk], vectors: memoryview
    ) -> int:
        self.handed.append((list(chunks), vectors))
        return super().replace_document_vectors(manifest, chunks, vectors)


@pytest.mark.parametrize("provider", ["hashing", "wire-lists"])
def test_ingest_hands_stores_float32_matrices_never_lists(provider: str) -> None:
    embedder: EmbeddingModel = (
        Embedder("hashing", dimension=32) if provider == "hashing" else _ListEmbedder()
    )
    store = _RecordingMemoryStore()
    docs = [
        Document(
            " ".join(f"Sentence {j} of text {i} names w{i}x{j}." for j in range(40)), id=f"d{i}"
        )
        for i in range(3)
    ]
    report = IngestDocuments(embedder, store, Chunker(200, 20), batch_size=7)(docs)
    assert report.added == ["d0", "d1", "d2"]
    assert [len(chunks) for chunks, _ in store.handed] == [
        len(Chunker(200, 20).split(d)) for d in docs
    ]
    for chunks, vectors in store.handed:
        assert all(c.embedding is None for c in chunks)  # no list of Python floats was built
        assert vectors.format == "f" and vectors.shape == (len(chunks), 32)
        expected = np.asarray(embedder.embed([c.text for c in chunks]), dtype=np.float32)
        np.testing.assert_allclose(np.asarray(vectors), expected, rtol=1e-6)
    query = embedder.embed_one(store.handed[0][0][0].text)
    assert store.search(query, k=1)[0].chunk.id == store.handed[0][0][0].id


class _ListEmbedder:
    """An embedder that only speaks lists (as a user's own would)."""

    provider, model = "lists", "l"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return FeatureHashingEmbedder(32).embed(texts)

    def embed_one(self, text: str) -> list[float]:
        return self.embed([text])[0]


def test_embed_matrix_is_the_float32_view_of_embed() -> None:
    texts = ["alpha beta", "gamma", "", "delta " * 50]
    for embedder in (Embedder("hashing", dimension=48, batch_size=3), FeatureHashingEmbedder(48)):
        matrix = np.asarray(embedder.embed_matrix(texts))
        assert matrix.dtype == np.float32 and matrix.shape == (4, 48)
        np.testing.assert_array_equal(matrix, np.asarray(embedder.embed(texts), np.float32))


def test_a_user_store_without_a_bulk_path_still_gets_lists() -> None:
    class Plain(InMemoryVectorStore):
        _replace_document_vectors = BaseVectorStore._replace_document_vectors
        seen: ClassVar[list[list[float] | None]] = []

        def _replace_document(self, manifest: DocumentManifest, chunks: Sequence[Chunk]) -> int:
            self.seen.extend(c.embedding for c in chunks)
            return super()._replace_document(manifest, chunks)

    store = Plain()
    IngestDocuments(Embedder("hashing", dimension=16), store)([Document("some text here", id="x")])
    assert len(Plain.seen) == 1 and isinstance(Plain.seen[0], list) and len(Plain.seen[0]) == 16


def _filter_store(kind: str, tmp_path: Path) -> BaseVectorStore:
    if kind == "memory":
        return InMemoryVectorStore()
    if kind == "sqlite":
        return SQLiteVectorStore(tmp_path / "f.db")
    pytest.importorskip("faiss")
    from pywrapai_graph import FAISSVectorStore

    return FAISSVectorStore(tmp_path / "f.faiss", tmp_path / "f.meta")


@pytest.mark.parametrize("kind", ["memory", "sqlite", "faiss"])
def test_filtered_search_uses_columns_kept_in_step_with_writes(kind: str, tmp_path: Path) -> None:
    store = _filter_store(kind, tmp_path)
    rng = np.random.default_rng(5)
    colours = ["red", "green", "blue", 1, True, 1.0, None, ["a"], ["a", 1]]

    def batch(start: int, n: int) -> list[Chunk]:
        out = []
        for i in range(start, start + n):
            meta: dict[str, object] = {"colour": colours[int(rng.integers(len(colours)))]}
            if i % 3:
                meta["shape"] = "round" if i % 2 else "square"
            emb = rng.standard_normal(8).tolist()
            out.append(Chunk(f"t{i}", f"d{i % 7}", meta, f"c{i}", emb))
        return out

    kept: dict[str, Chunk] = {}

    def check() -> None:
        q = rng.standard_normal(8).tolist()
        for flt in (
            {"colour": "red"},
            {"colour": 1},
            {"colour": ["a"]},
            {"colour": ["a", 1]},
            {"colour": None, "shape": "round"},
            {"shape": "square"},
            {"nope": 1},
        ):
            expected = {c.id for c in kept.values() if matches_filter(c.metadata, flt)}
            got = store.search(q, k=len(kept) + 5, filter=flt)
            assert {h.chunk.id for h in got} == expected, flt
            assert all(matches_filter(h.chunk.metadata, flt) for h in got)
            scores = [h.score for h in got]
            assert scores == sorted(scores, reverse=True)

    first = batch(0, 60)
    store.add(first)
    kept.update((c.id, c) for c in first)
    check()  # builds the columns
    more = batch(60, 40) + batch(0, 10)  # new rows and replaced ones (new metadata)
    store.add(more)
    kept.update((c.id, c) for c in more)
    removed = [f"c{i}" for i in range(20, 45)]
    store.delete(removed)
    for i in removed:
        kept.pop(i)
    store.delete_by_doc("d3")
    kept = {k: c for k, c in kept.items() if c.doc_id != "d3"}
    check()  # the columns followed every write
    store.close()


def test_sqlite_open_reads_ids_and_vectors_only(tmp_path: Path) -> None:
    path = tmp_path / "lazy.db"
    writer = SQLiteVectorStore(path)
    chunks = make_chunks(50, 8)
    writer.add(chunks)
    writer.close()
    # A chunk whose metadata is not JSON any more: opening and unfiltered searches that do
    # not return it still work, so the open read no metadata.
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE vector_chunks SET metadata = 'not json' WHERE id = 'c49'")
    reader = SQLiteVectorStore(path)
    assert len(reader) == 50
    hit = reader.search(chunks[0].embedding or [], k=1)[0]
    assert (hit.chunk.id, hit.chunk.text, hit.chunk.metadata) == (
        "c0",
        chunks[0].text,
        chunks[0].metadata,
    )
    assert [len(r) for r in reader.search_many([c.embedding or [] for c in chunks[:3]], k=2)] == [
        2,
        2,
        2,
    ]
    reader.close()


def _has_id_map(store: SQLiteVectorStore) -> bool:
    return store._index._row_map is not None


def test_a_store_loaded_for_searches_builds_no_id_map_until_a_write_needs_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "map.db"
    writer = SQLiteVectorStore(path)
    chunks = make_chunks(40, 8)
    writer.add(chunks)
    writer.close()
    reader = SQLiteVectorStore(path)
    assert reader.search(chunks[3].embedding or [], k=2)[0].chunk.id == "c3"
    assert not _has_id_map(reader)  # searches read rows by position only
    assert reader.delete(["c3", "c39", "nope"]) == 2  # the first write builds the map
    assert _has_id_map(reader)
    reader.add(make_chunks(2, 8, seed=5, prefix="new-"))
    assert reader.search(chunks[3].embedding or [], k=1)[0].chunk.id != "c3"
    assert len(reader) == 40
    rows = reader._index._rows
    assert {i: reader._index.id_at(r) for i, r in rows.items()} == {i: i for i in rows}
    reader.close()
    again = SQLiteVectorStore(path)  # the file agrees with what the map said
    assert sorted(h.chunk.id for h in again.search(chunks[0].embedding or [], k=40)) == sorted(rows)
    again.close()


class _CountingSQLiteStore(SQLiteVectorStore):
    """A real SQLite store that counts how it is asked about documents."""

    searches = 0
    manifest_lookups = 0
    asked: ClassVar[list[list[str]]] = []

    def search(
        self, query_vector: Sequence[float], k: int = 4, filter: MetadataFilter | None = None
    ) -> list[ScoredChunk]:
        type(self).searches += 1
        return super().search(query_vector, k, filter)

    def document_manifest(self, doc_id: str) -> DocumentManifest | None:
        type(self).manifest_lookups += 1
        return super().document_manifest(doc_id)

    def document_manifests(self, doc_ids: Sequence[str]) -> dict[str, DocumentManifest]:
        type(self).asked.append(list(doc_ids))
        return super().document_manifests(doc_ids)


def test_re_ingest_decides_unchanged_by_batched_manifest_lookups_never_a_search(
    tmp_path: Path,
) -> None:
    path = tmp_path / "re.db"
    docs = [
        Document(f"File {i} says something specific about w{i}. " * 12, id=f"f{i}")
        for i in range(600)
    ]
    embedder = Embedder("hashing", dimension=32)
    first = IngestDocuments(embedder, SQLiteVectorStore(path), Chunker(120, 12))(docs)
    assert len(first.added) == 600
    store = _CountingSQLiteStore(path)  # a new process's view: nothing loaded yet
    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    report = IngestDocuments(embedder, store, Chunker(120, 12))(docs)
    assert len(report.unchanged) == 600
    assert (_CountingSQLiteStore.searches, _CountingSQLiteStore.manifest_lookups) == (0, 0)
    # three windows of documents, each looked up at once, in input order
    assert [len(ids) for ids in _CountingSQLiteStore.asked] == [256, 256, 88]
    assert [i for ids in _CountingSQLiteStore.asked for i in ids] == [d.id for d in docs]
    # one indexed query per 500 ids asked; the vectors are never read
    lookups = [s for s in statements if "__docs" in s]
    assert len(lookups) == 3 and all("WHERE doc_id IN" in s for s in lookups)
    assert len(store) == first.chunks_written
    assert not [s for s in statements if "embedding" in s]
    store.close()


def test_faiss_search_many_matches_single_searches(tmp_path: Path) -> None:
    pytest.importorskip("faiss")
    from pywrapai_graph import FAISSVectorStore

    store = FAISSVectorStore(str(tmp_path / "i.faiss"), str(tmp_path / "m.db"))
    assert store.search_many([[1.0] * 8], k=2) == [[]]
    chunks = make_chunks(60, 8)
    store.add(chunks)
    queries = [c.embedding or [] for c in chunks[:5]]
    batched = store.search_many(queries, k=3)
    single = [store.search(q, k=3) for q in queries]
    assert [[h.chunk.id for h in r] for r in batched] == [[h.chunk.id for h in r] for r in single]
    assert [r[0].chunk.id for r in batched] == [c.id for c in chunks[:5]]
    store.close()
