"""FAISS files damaged while a store has them open: bytes past the last commit are ignored;
damage to committed bytes is a VectorStoreError on every later call, never an empty or
partial answer, and no write of the store that saw it touches the files."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from pywrapai_graph import FAISSVectorStore
from pywrapai_graph.adapters.vectorstores.faiss.segment_log import encode_segment
from pywrapai_graph.errors import VectorStoreError
from pywrapai_graph.testing.contracts.vector_store import make_chunks
from tests.faults.faiss_crash_points import DIM, State, apply, check_store

DAMAGED = r"disagree|shorter|cannot read"


def _files(folder: Path) -> tuple[object, ...]:
    """The index files' bytes, the other files' names, and what the metadata commits."""
    with sqlite3.connect(folder / "s.meta") as conn:
        committed = conn.execute("SELECT * FROM meta ORDER BY key").fetchall()
        committed += conn.execute("SELECT int_id, id FROM chunks ORDER BY int_id").fetchall()
    conn.close()
    names = sorted(p.name for p in folder.iterdir() if not p.name.endswith(("-wal", "-shm")))
    index = (folder / "s.faiss").read_bytes(), (folder / "s.faiss.log").read_bytes()
    return names, index, committed


def test_garbage_past_the_last_committed_segment_is_ignored(tmp_path: Path) -> None:
    """A torn append (zeros, random bytes, or a whole well-formed segment never committed)
    is invisible to an open store and to a fresh one, and the next append replaces it."""
    index, meta, log = tmp_path / "s.faiss", tmp_path / "s.meta", tmp_path / "s.faiss.log"
    rng = random.Random(5)
    writer = FAISSVectorStore(index, meta)
    reader = FAISSVectorStore(index, meta)
    apply(writer, ("replace", "d0", 1))
    expected: State = ((("d0", 1),), ())
    forged = encode_segment(np.arange(50, 53, dtype=np.int64), np.ones((3, DIM), np.float32))
    tails = [b"\x00" * 7, rng.randbytes(333), forged, forged[: len(forged) // 2]]
    for version, tail in enumerate(tails, start=2):
        apply(writer, ("replace", "d1", version))  # a committed segment at the end
        expected = ((("d0", 1), ("d1", version)), ())
        with log.open("ab") as f:
            f.write(tail)
        assert check_store(reader, meta) == expected
        fresh = FAISSVectorStore(index, meta)  # cuts the tail off
        assert check_store(fresh, meta) == expected
        fresh.close()
        assert check_store(reader, meta) == expected
    writer.close()
    reader.close()


def _flip(offset: Callable[[int], int]) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        data = bytearray(path.read_bytes())
        data[offset(len(data))] ^= 0x04
        path.write_bytes(bytes(data))

    return damage


_LOG = [
    _flip(lambda n: 3),  # the first segment's header
    _flip(lambda n: 40),  # a label
    _flip(lambda n: n - 1),  # the last vector
    lambda p: p.write_bytes(p.read_bytes()[:-1]),
]
_BASE = [_flip(lambda n: n // 2), lambda p: p.write_bytes(p.read_bytes()[:-8])]


@pytest.mark.parametrize(
    ("target", "damage", "compacted"),
    [("s.faiss.log", d, c) for d in _LOG for c in (True, False)]
    + [("s.faiss", d, True) for d in _BASE],
)
def test_damage_to_committed_bytes_is_an_error_on_every_call(
    tmp_path: Path, target: str, damage: Callable[[Path], None], compacted: bool
) -> None:
    """The reader reads the damaged file again: all of it after another process compacted,
    or only the new segments if not."""
    index, meta = tmp_path / "s.faiss", tmp_path / "s.meta"
    writer = FAISSVectorStore(index, meta)
    reader = FAISSVectorStore(index, meta)
    writer.add(make_chunks(20, DIM))
    assert len(reader) == 20  # the reader has read the base
    writer.delete(["c0", "c1"])
    if compacted:
        writer.compact()  # a new base: the reader must read everything again
    writer.add(make_chunks(4, DIM, seed=1, prefix="x"))  # a segment
    writer.add(make_chunks(4, DIM, seed=2, prefix="y"))  # another one
    writer.close()
    damage(tmp_path / target)
    before = _files(tmp_path)
    calls: list[Callable[[], object]] = [
        lambda: reader.search([1.0] * DIM, k=50),
        lambda: len(reader),
        lambda: reader.count({"parity": "even"}),
        lambda: reader.search([1.0] * DIM, k=50),  # again: still an error, never []
        lambda: reader.document_manifest("d0"),
        lambda: reader.add(make_chunks(2, DIM, seed=3, prefix="z")),
        lambda: reader.delete(["c5"]),
        reader.compact,
        lambda: len(reader),
    ]
    for call in calls:
        with pytest.raises(VectorStoreError, match=DAMAGED):
            call()
    assert _files(tmp_path) == before  # nothing written over what is left
    with pytest.raises(VectorStoreError, match=DAMAGED):
        FAISSVectorStore(index, meta)
    reader.close()


def test_a_flipped_byte_anywhere_in_the_log(tmp_path: Path) -> None:
    """Inside a committed segment: refused; past the last commit: ignored. Never a store
    that opens with other rows than it committed."""
    index, meta, log = tmp_path / "s.faiss", tmp_path / "s.meta", tmp_path / "s.faiss.log"
    store = FAISSVectorStore(index, meta)
    for version in range(1, 4):
        apply(store, ("replace", f"d{version}", version))
    store.close()
    committed = log.read_bytes()
    with log.open("ab") as f:  # an append that never committed
        f.write(encode_segment(np.arange(90, 92, dtype=np.int64), np.ones((2, DIM), np.float32)))
    damaged = log.read_bytes()
    expected: State = ((("d1", 1), ("d2", 2), ("d3", 3)), ())
    rng = random.Random(11)
    offsets = sorted(rng.sample(range(len(damaged)), 40))
    assert offsets[0] < len(committed) <= offsets[-1]  # both kinds
    for offset in offsets:
        data = bytearray(damaged)
        data[offset] ^= 1 << rng.randrange(8)
        log.write_bytes(bytes(data))
        if offset < len(committed):
            with pytest.raises(VectorStoreError, match="disagree"):
                FAISSVectorStore(index, meta)
        else:
            store = FAISSVectorStore(index, meta)
            assert check_store(store, meta) == expected
            store.close()
            assert log.read_bytes() == committed  # the tail cut off
