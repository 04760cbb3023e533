"""A small filesystem for disk-full tests, and whole documents to fill it with."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from pywrapai_graph.domain import Chunk
from pywrapai_graph.domain.manifest import DocumentManifest
from pywrapai_graph.errors import StorageFullError
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.testing.contracts.vector_store import make_chunks, manifest_for

DIM = 256
#: chunk ids per document id
Documents = dict[str, set[str]]


@contextmanager
def tmpfs(mount: Path, options: str) -> Iterator[Path]:
    """A tmpfs mounted at ``mount`` with ``options`` (``size=2m``...), unmounted afterwards."""
    with _mounted(mount, ["-t", "tmpfs", "-o", options, "tmpfs"]):
        yield mount


@contextmanager
def ext4(mount: Path, megabytes: int) -> Iterator[Path]:
    """An ext4 filesystem of ``megabytes`` in a file, loop-mounted at ``mount``. For engines
    that map sparse files into memory: on tmpfs, even reading a hole through a mapping takes
    room, so a full tmpfs fails their reads where a disk would not."""
    image = mount.with_name(mount.name + ".img")
    with open(image, "wb") as f:
        f.truncate(megabytes << 20)
    made = subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], capture_output=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"cannot make an ext4 image here: {made.stderr.decode().strip()}")
    with _mounted(mount, ["-o", "loop", str(image)]):
        yield mount
    image.unlink()


@contextmanager
def _mounted(mount: Path, how: list[str]) -> Iterator[None]:
    if os.geteuid() != 0:
        pytest.skip("mounting a small filesystem needs root (CI runs as root)")
    mount.mkdir(exist_ok=True)
    done = subprocess.run(["mount", *how, str(mount)], capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small filesystem here: {done.stderr.decode().strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def document(i: int, n: int = 100) -> tuple[DocumentManifest, list[Chunk]]:
    doc = f"d{i}"
    chunks = [
        Chunk(c.text, doc, c.metadata, id=c.id, embedding=c.embedding)
        for c in make_chunks(n, DIM, seed=i, prefix=f"{doc}-")
    ]
    return manifest_for(doc, chunks, DIM), chunks


def fill_with_documents(store: BaseVectorStore) -> tuple[StorageFullError, Documents]:
    """Whole documents until the disk is full: the error, and each written document's ids."""
    written: Documents = {}
    for i in range(1000):
        manifest, chunks = document(i)
        try:
            store.replace_document(manifest, chunks)
        except StorageFullError as exc:
            return exc, written
        written[manifest.doc_id] = {c.id for c in chunks}
    raise AssertionError("the disk never filled up")


def documents(store: BaseVectorStore) -> Documents:
    """The visible chunk ids of each document."""
    found: Documents = {}
    for hit in store.search([1.0] * DIM, k=100_000):
        found.setdefault(hit.chunk.doc_id, set()).add(hit.chunk.id)
    return found


def assert_whole(found: Documents, written: Documents) -> None:
    """Each document written before the error is whole; the one that failed is whole or absent."""
    failed = f"d{len(written)}"
    assert found.keys() - written.keys() <= {failed}
    assert {d: found[d] for d in written} == written
    if failed in found:
        assert found[failed] == {c.id for c in document(int(failed[1:]))[1]}


def fill_then_free(
    open_store: Callable[[], BaseVectorStore],
    free: Callable[[], None],
    forget: Callable[[], None] = lambda: None,
) -> tuple[StorageFullError, Documents, Documents]:
    """Whole documents into ``open_store()`` until the disk is full, then: every document is
    whole, the same after a reopen, and writes resume once ``free()`` made room. Returns the
    error, the documents written before it, and those visible after it (``forget`` drops
    what the process caches of the store before it is reopened)."""
    store = open_store()
    error, written = fill_with_documents(store)
    visible = documents(store)
    assert_whole(visible, written)
    store.close()
    forget()
    reopened = open_store()
    assert documents(reopened) == visible
    free()
    manifest, chunks = document(999, n=5)
    reopened.replace_document(manifest, chunks)
    assert documents(reopened) == {**visible, "d999": {c.id for c in chunks}}
    reopened.close()
    forget()
    return error, written, visible
