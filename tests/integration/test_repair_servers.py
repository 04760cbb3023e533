"""A writer killed mid-replace on a server (Chroma; Qdrant through the REST front over
qdrant-client's engine): `store repair` removes what it left.

The writer is a real process, killed (SIGKILL, by itself) right after it stored the chunks of
a new version and before it committed them: the point at which only leftovers remain.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pywrapai_graph import ChromaVectorStore, QdrantVectorStore
from pywrapai_graph.composition.cli import main
from pywrapai_graph.domain import Chunk
from pywrapai_graph.testing.contracts.vector_store import make_chunks, manifest_for
from tests.faults.harness import ROOT

DIM = 8

# replace_document of "doc" with 30 chunks, killed once they are stored, before the commit
_WRITER = """
import os, signal, sys
from pywrapai_graph import ChromaVectorStore, QdrantVectorStore
from pywrapai_graph.domain import Chunk
from pywrapai_graph.testing.contracts.vector_store import make_chunks, manifest_for

Store = ChromaVectorStore if sys.argv[3] == "chroma" else QdrantVectorStore

class Dies(Store):
    def _upsert(self, batch, versions):
        super()._upsert(batch, versions)
        os.kill(os.getpid(), signal.SIGKILL)

store = Dies(url=sys.argv[1], collection=sys.argv[2])
chunks = [Chunk(c.text, "doc", {}, id=c.id, embedding=c.embedding)
          for c in make_chunks(30, 8, seed=7, prefix="new-")]
store.replace_document(manifest_for("doc", chunks, 8), chunks)
"""


@pytest.mark.parametrize("backend", ["chroma", "qdrant"])
def test_repair_removes_what_a_killed_writer_left(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    url = str(request.getfixturevalue("chroma_url" if backend == "chroma" else "qdrant_rest_url"))
    collection = f"repair_{tmp_path.name[-20:]}"
    store: ChromaVectorStore | QdrantVectorStore = (
        ChromaVectorStore(url=url, collection=collection)
        if backend == "chroma"
        else QdrantVectorStore(collection, url=url)
    )
    old = [
        Chunk(c.text, "doc", {}, id=c.id, embedding=c.embedding)
        for c in make_chunks(5, DIM, seed=1, prefix="old-")
    ]
    store.replace_document(manifest_for("doc", old, DIM), old)
    killed = subprocess.run(
        [sys.executable, "-c", _WRITER, url, collection, backend],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        check=False,
        timeout=120,
    )
    assert killed.returncode == -9, killed.stderr.decode()

    def visible() -> set[str]:
        return {h.chunk.id for h in store.search([1.0] * DIM, k=1000)}

    assert visible() == {c.id for c in old}  # the old version, whole
    assert len(store) == 5 + 30  # the engine still holds the dead writer's chunks
    assert store.repair() == 0  # too young: its writer might still be at work
    assert len(store) == 35

    config = tmp_path / "pywrapai.yaml"
    config.write_text(f"store:\n  backend: {backend}\n  url: {url}\n  collection: {collection}\n")
    out, err = io.StringIO(), io.StringIO()
    argv = ["--config", str(config), "store", "repair", "--older-than", "0"]
    assert main(argv, out=out, err=err) == 0, err.getvalue()
    assert out.getvalue() == "repaired: 1 document\n"
    assert len(store) == 5 and visible() == {c.id for c in old}
    assert store.repair(older_than_s=0) == 0  # nothing left to do
    assert store.document_manifest("doc") == manifest_for("doc", old, DIM)
    store.close()
