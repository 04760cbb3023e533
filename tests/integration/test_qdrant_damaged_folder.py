"""A damaged Qdrant folder is refused when it opens, never served with fewer points (issue 36
item 3): each engine file of a real folder (200 documents of 10 chunks: 2,000 chunk points
and the documents' records) is cut in half, zeroed and deleted in turn; each case either opens with every point
and every document record, or raises ``StoreDamagedError``. Each open runs in a child
process forked for it, so an engine that crashed the interpreter would show as a crash."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pywrapai_graph import Chunker, Document, QdrantVectorStore, VectorRetriever
from pywrapai_graph.adapters.embedders.hashing_embedder import FeatureHashingEmbedder
from pywrapai_graph.errors import StoreDamagedError

pytestmark = pytest.mark.integration
DOCUMENTS = 200
CHUNKS = 2000

#: Forks one child per (file, damage): it damages a copy of the folder, opens it and says
#: what it found; the parent reports each child's line, or how it died. The parent imports
#: the SDKs before forking: importing them again in every child took most of the time.
_OPENER = r"""
import json, os, shutil, subprocess, sys
import qdrant_client.http.exceptions, qdrant_client.models, qdrant_edge  # once, not per child
from pywrapai_graph import QdrantVectorStore
from pywrapai_graph.errors import PyWrapAIError, StoreDamagedError

source, how, work = sys.argv[1], sys.argv[2], sys.argv[3]
documents, chunks = int(sys.argv[4]), int(sys.argv[5])
files = sorted(
    os.path.relpath(os.path.join(d, f), source)
    for d, _, names in os.walk(source) for f in names if f != ".pywrapai.lock"
)

def check(folder):
    try:
        store = QdrantVectorStore("docs", location=folder)
    except StoreDamagedError as exc:
        return "damaged" if folder in str(exc) else "damaged, not naming the folder"
    except PyWrapAIError as exc:
        return f"other error: {type(exc).__name__}: {exc}"
    ids = [f"d{i}" for i in range(documents)]
    texts = {p.payload["id"]: p.payload["text"] for p in store._scroll("docs", None)}
    found = (len(store), len(texts), len(store.document_manifests(ids)))
    store.close()
    return "whole" if found == (chunks, chunks, documents) else f"silently partial: {found}"

for relative in files:
    folder = os.path.join(work, "copy")
    shutil.rmtree(folder, ignore_errors=True)
    subprocess.run(["cp", "-a", "--sparse=always", source, folder], check=True)
    path = os.path.join(folder, relative)
    if how == "delete":
        os.unlink(path)
    elif how == "half":
        os.truncate(path, os.path.getsize(path) // 2)
    else:  # every byte zero, as a hole: the same bytes, without writing them
        size = os.path.getsize(path)
        os.truncate(path, 0)
        os.truncate(path, size)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read)
        try:
            said = check(folder)
        except BaseException as exc:
            said = f"escaped: {type(exc).__name__}: {exc}"
        os.write(write, said.encode()[:500])
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        said = pipe.read().decode()
    _, status = os.waitpid(child, 0)
    if os.WIFSIGNALED(status):
        said = f"crashed: signal {os.WTERMSIG(status)}"
    print(json.dumps([relative, said]), flush=True)
"""


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("damaged") / "qdrant"
    store = QdrantVectorStore("docs", location=str(folder))
    retriever = VectorRetriever(FeatureHashingEmbedder(16), store)
    words = ["laminar", "shock", "boundary", "flutter", "heat", "nozzle", "wing", "cone"]
    sentences = [
        " ".join(f"{words[(i + j) % 8]} {words[(i * j) % 7]} flow {i} part {j}." for j in range(10))
        for i in range(DOCUMENTS)
    ]
    documents = [Document(text, id=f"d{i}") for i, text in enumerate(sentences)]
    retriever.add_documents(documents, Chunker(40, 0))
    assert len(store) == CHUNKS
    store.close()
    return folder


@pytest.mark.parametrize("how", ["half", "zero", "delete"])
def test_every_damaged_engine_file_is_refused_or_loses_nothing(
    written: Path, tmp_path: Path, how: str
) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _OPENER,
            str(written),
            how,
            str(tmp_path),
            str(DOCUMENTS),
            str(CHUNKS),
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    cases = dict(json.loads(line) for line in done.stdout.splitlines())
    engine_files = [f for f in cases if f.startswith("edge/")]
    assert len(engine_files) > 40, cases  # both shards: segments, indexes, logs, configs
    wrong = {f: said for f, said in cases.items() if said not in ("whole", "damaged")}
    assert not wrong, wrong
    assert "damaged" in cases.values()


def test_the_issue_case_a_halved_id_tracker_is_refused(written: Path, tmp_path: Path) -> None:
    """The case the issue found opening 11,000 of 20,000 points with no error."""
    folder = tmp_path / "copy"
    shutil.copytree(written, folder)
    (mappings,) = (folder / "edge" / "docs").rglob("mutable_id_tracker.mappings")
    data = mappings.read_bytes()
    mappings.write_bytes(data[: len(data) // 2])
    with pytest.raises(StoreDamagedError, match="docs") as info:
        QdrantVectorStore("docs", location=str(folder))
    assert str(folder) in str(info.value) and "backup" in str(info.value)
    shutil.rmtree(folder)
    shutil.copytree(written, folder)  # undamaged, the copy opens with every point
    store = QdrantVectorStore("docs", location=str(folder))
    assert len(store) == CHUNKS
    store.close()
