"""MilvusVectorStore beside other processes: a Milvus server by URL (``PYWRAPAI_TEST_MILVUS_URL``,
else ``milvus-lite server`` started here), a milvus-lite folder another process holds, and a
tenant's filter inside every sub-request of a hybrid search."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from pywrapai_graph.adapters.vectorstores.milvus.store import MilvusVectorStore
from pywrapai_graph.errors import StoreBusyError, VectorStoreError
from pywrapai_graph.ports.identity_probe import identity_probe
from pywrapai_graph.ports.store_query import Fusion, RetrievalMode, StoreQuery
from pywrapai_graph.testing.contracts.lexical_search import lexical_corpus
from pywrapai_graph.testing.contracts.store_data import document_chunks, manifest_for

pytest.importorskip("pymilvus")

ROOT = Path(__file__).resolve().parents[2]
DIM = 8


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def milvus_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The given Milvus server, else a ``milvus-lite server`` process of this module."""
    given = os.environ.get("PYWRAPAI_TEST_MILVUS_URL")
    if given:
        yield given
        return
    port = _free_port()
    data = tmp_path_factory.mktemp("milvus-server")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "milvus_lite",
            "server",
            "--data-dir",
            str(data / "lite"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                MilvusVectorStore("ready", url=url).close()
                break
            except VectorStoreError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.2)
        yield url
    finally:
        server.kill()
        server.wait(timeout=30)


def _in_other_process(code: str) -> str:
    """Run ``code`` (``store`` bound) in a fresh interpreter; its stdout."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _store_line(name: str, url: str) -> str:
    return (
        "from pywrapai_graph.adapters.vectorstores.milvus.store import MilvusVectorStore\n"
        f"store = MilvusVectorStore({name!r}, url={url!r})\n"
    )


def test_another_process_delete_and_replace_are_seen_at_once(milvus_url: str) -> None:
    name = "x" + uuid.uuid4().hex
    store = MilvusVectorStore(name, url=milvus_url)
    try:
        corpus = lexical_corpus(n=30, dim=DIM)
        store.add(corpus)
        gone = corpus[0].doc_id
        asked = StoreQuery("hybrid", 30, corpus[0].embedding, "shock waves on a cone")
        assert any(h.chunk.doc_id == gone for h in store.retrieve(asked))
        _in_other_process(_store_line(name, milvus_url) + f"print(store.delete_by_doc({gone!r}))")
        # the very next request of this process sees the delete (Strong consistency)
        assert not [h for h in store.retrieve(asked) if h.chunk.doc_id == gone]
        assert not store.search(corpus[0].embedding or [], k=30, filter={"doc": gone})
        assert store.count({"doc": gone}) == 0
        _in_other_process(
            _store_line(name, milvus_url)
            + "from pywrapai_graph.testing.contracts.store_data import document_chunks, "
            "manifest_for\n"
            f"chunks = document_chunks('fresh', 3, {DIM}, 'v2')\n"
            f"store.replace_document(manifest_for('fresh', chunks, {DIM}), chunks)\n"
        )
        fresh = document_chunks("fresh", 3, DIM, "v2")
        hits = store.search(fresh[0].embedding or [], k=3, filter={"doc": "fresh"})
        assert sorted(h.chunk.id for h in hits) == sorted(c.id for c in fresh)
        assert store.document_manifest("fresh") == manifest_for("fresh", fresh, DIM)
    finally:
        store.clear()
        store.close()


@pytest.mark.parametrize("fusion", ["rrf", "weighted", "rescored"])
def test_a_tenants_filter_holds_inside_hybrid_search(tmp_path: Path, fusion: Fusion) -> None:
    """Tenant B's chunks are the best of both sides for the query; tenant A's filter keeps
    every one of them out (pymilvus ignores ``hybrid_search(filter=...)``: the store puts
    the filter into each sub-request)."""
    store = MilvusVectorStore("tenants", path=tmp_path / "milvus.db")
    try:
        corpus = lexical_corpus(n=40, dim=DIM)
        for i, c in enumerate(corpus):
            c.metadata["tenant"] = "a" if i % 4 == 0 else "b"
        store.add(corpus)
        target = next(c for c in corpus if c.metadata["tenant"] == "b")
        for tenant in ("a", "b"):
            asked = StoreQuery(
                "hybrid", 10, target.embedding, target.text, {"tenant": tenant}, fusion=fusion
            )
            hits = store.retrieve(asked)
            assert hits and {h.chunk.metadata["tenant"] for h in hits} == {tenant}
            assert len(hits) == 10
        # unfiltered, tenant B's chunk leads: the filter above did the work
        unfiltered = store.retrieve(StoreQuery("hybrid", 1, target.embedding, target.text))
        assert unfiltered[0].chunk.id == target.id
    finally:
        store.close()


def test_the_search_reads_the_embedder_identity_in_its_request(tmp_path: Path) -> None:
    store = MilvusVectorStore("identity", path=tmp_path / "milvus.db")
    try:
        chunks = document_chunks("d", 4, DIM, "v1")
        manifest = manifest_for("d", chunks, DIM, model="first")
        store.replace_document(manifest, chunks)
        for mode in ("dense", "lexical", "hybrid"):
            with identity_probe() as probe:
                assert store.retrieve(StoreQuery(mode, 2, chunks[0].embedding, "v1 part"))
            assert probe.seen and probe.identity == manifest.embedder
    finally:
        store.close()


def test_a_folder_another_process_holds_is_a_clear_busy_error(tmp_path: Path) -> None:
    path = tmp_path / "milvus.db"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from pywrapai_graph.adapters.vectorstores.milvus.store import MilvusVectorStore\n"
            f"s = MilvusVectorStore('held', path={str(path)!r}, dimension=4)\n"
            "print('open', flush=True)\nsys.stdin.read()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        with pytest.raises(StoreBusyError, match="another process holds it"):
            MilvusVectorStore("held", path=path)
    finally:
        holder.communicate("", timeout=60)
    store = MilvusVectorStore("held", path=path)  # let go at exit: open here now
    assert store.dimension == 4
    store.close()


def test_an_unreachable_server_is_a_clear_error_without_the_token() -> None:
    with pytest.raises(VectorStoreError, match=r"cannot reach Milvus at 127\.0\.0\.1:1") as info:
        MilvusVectorStore("docs", url="http://127.0.0.1:1", token="root:milvus-SECRET")
    chain: BaseException | None = info.value
    while chain is not None:  # the message and every cause behind it
        assert "milvus-SECRET" not in f"{chain} {chain!r}"
        chain = chain.__cause__ or chain.__context__


class _Counted:
    """The store's real pymilvus client, counting the requests made through it."""

    def __init__(self, client: object) -> None:
        self.client = client
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> object:
        self.calls.append(name)
        return getattr(self.client, name)


def test_a_retrieval_or_search_is_one_engine_request(tmp_path: Path) -> None:
    store = MilvusVectorStore("counted", path=tmp_path / "milvus.db")
    try:
        corpus = lexical_corpus(n=30, dim=DIM)
        store.add(corpus)
        counted = store._client = _Counted(store._client)
        sides: list[tuple[RetrievalMode, str]] = [
            ("dense", "search"),
            ("lexical", "search"),
            ("hybrid", "hybrid_search"),
        ]
        for mode, engine in sides:
            counted.calls.clear()
            asked = StoreQuery(mode, 5, corpus[0].embedding, "shock waves", {"part": "odd"})
            assert store.retrieve(asked)
            assert counted.calls == [engine], mode  # no record lookup: hidden rows are filtered
        counted.calls.clear()
        vectors = [list(c.embedding or []) for c in corpus[:4]]
        assert store.search(vectors[0], 3, {"part": "odd"})
        assert len(store.search_many(vectors, 3)) == 4
        assert counted.calls == ["search", "search"]
    finally:
        store.close()


def test_a_replace_is_shown_whole_by_one_request(tmp_path: Path) -> None:
    """Up to the one partial upsert that shows the new version (and hides the old), readers
    see the old version whole; after it, the new one only."""
    store = MilvusVectorStore("shown", path=tmp_path / "milvus.db")
    seen: list[set[str]] = []

    class _Spy(_Counted):
        def __getattr__(self, name: str) -> object:
            call = super().__getattr__(name)
            if name != "upsert":
                return call

            def upsert(collection: str, rows: list[dict[str, object]], **kw: object) -> object:
                if kw.get("partial_update"):  # the show: what a reader sees just before it
                    seen.append({h.chunk.text for h in store.search(vectors[0], 20)})
                return call(collection, rows, **kw)  # type: ignore[operator]

            return upsert

    try:
        first = document_chunks("d", 4, DIM, "v1")
        store.replace_document(manifest_for("d", first, DIM), first)
        vectors = [list(first[0].embedding or [])]
        store._client = _Spy(store._client)
        second = document_chunks("d", 4, DIM, "v2")
        store.replace_document(manifest_for("d", second, DIM), second)
        assert seen == [{c.text for c in first}]  # one show, the old version whole before it
        assert {h.chunk.text for h in store.search(vectors[0], 20)} == {c.text for c in second}
    finally:
        store.close()
