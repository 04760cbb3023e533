"""A FAISS store's file damaged outside the library: bytes past the last commit are ignored;
damage to committed rows is a VectorStoreError on every later call, never an empty or
partial answer, and no write of the store that saw it touches the file."""

from __future__ import annotations

import random
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from pywrapai_graph import FAISSVectorStore
from pywrapai_graph.errors import VectorStoreError
from pywrapai_graph.testing.contracts.vector_store import make_chunks
from tests.faults.faiss_crash_points import DIM, State, apply, check_store

DAMAGED = r"damaged|malformed|not a database"


def test_garbage_past_the_last_commit_is_ignored(tmp_path: Path) -> None:
    """A torn append to the write-ahead log (zeros, random bytes, a copy of a committed
    frame's bytes) is invisible to an open store and to a fresh one."""
    index, meta, wal = tmp_path / "s.faiss", tmp_path / "s.meta", tmp_path / "s.meta-wal"
    rng = random.Random(5)
    writer = FAISSVectorStore(index, meta)
    reader = FAISSVectorStore(index, meta)
    apply(writer, ("replace", "d0", 1))
    expected: State = ((("d0", 1),), ())
    tails = [b"\x00" * 7, rng.randbytes(5000), wal.read_bytes()[32:4200]]
    for version, tail in enumerate(tails, start=2):
        apply(writer, ("replace", "d1", version))  # a commit at the end
        expected = ((("d0", 1), ("d1", version)), ())
        with wal.open("ab") as f:
            f.write(tail)
        assert check_store(reader, meta) == expected
        fresh = FAISSVectorStore(index, meta)
        assert check_store(fresh, meta) == expected
        fresh.close()
        assert check_store(reader, meta) == expected
    writer.close()
    reader.close()


def _page_of(table: str, kind: str) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        with sqlite3.connect(path) as conn:
            pages = conn.execute(
                "SELECT pageno, (SELECT page_size FROM pragma_page_size) FROM dbstat "
                "WHERE name = ? AND pagetype = ? ORDER BY pageno",
                (table, kind),
            ).fetchall()
        conn.close()
        page, size = pages[len(pages) // 2]
        data = bytearray(path.read_bytes())
        data[(page - 1) * size : page * size] = bytes(size)
        path.write_bytes(bytes(data))

    return damage


def _short_vector(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE chunks SET vector = zeroblob(9) WHERE id = 'y2'")
    conn.close()


def _flipped_bit(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        (blob,) = conn.execute("SELECT vector FROM chunks WHERE id = 'c200'").fetchone()
        data = bytearray(blob)
        data[len(data) // 2] ^= 0x10  # one float changed, the row's length and CRC kept
        conn.execute("UPDATE chunks SET vector = ? WHERE id = 'c200'", (bytes(data),))
    conn.close()


_DAMAGE = {
    "chunk rows zeroed": _page_of("chunks", "leaf"),
    "cut in half": lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
    "last page cut": lambda p: p.write_bytes(p.read_bytes()[:-4096]),
    "a vector cut short": _short_vector,
    "a bit of a vector flipped": _flipped_bit,
}


@pytest.mark.parametrize("damage", list(_DAMAGE.values()), ids=list(_DAMAGE))
def test_damage_to_committed_rows_is_an_error_on_every_call(
    tmp_path: Path, damage: Callable[[Path], None]
) -> None:
    index, meta = tmp_path / "s.faiss", tmp_path / "s.meta"
    writer = FAISSVectorStore(index, meta)
    writer.add(make_chunks(400, DIM))
    writer.delete(["c0", "c1"])
    writer.add(make_chunks(4, DIM, seed=2, prefix="y"))
    writer.close()
    damage(meta)
    before = meta.read_bytes()
    found: VectorStoreError | None = None
    try:
        store = FAISSVectorStore(index, meta)
    except VectorStoreError as exc:  # found while opening: as good
        found = exc
    else:
        calls: list[Callable[[], object]] = [
            lambda: store.search([1.0] * DIM, k=50),
            lambda: len(store),
            lambda: store.count({"parity": "even"}),
            lambda: store.search([1.0] * DIM, k=50),  # again: still an error, never []
            lambda: store.add(make_chunks(2, DIM, seed=3, prefix="z")),
            lambda: store.delete(["c5"]),
            lambda: len(store),
        ]
        for call in calls:
            with pytest.raises(VectorStoreError, match=DAMAGED):
                call()
        store.close()
    assert found is None or re.search(DAMAGED, str(found)), found
    assert meta.read_bytes() == before  # nothing written over what is left
