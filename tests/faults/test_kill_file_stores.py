"""SIGKILL during `ingest` at random instants: SQLite, FAISS and a Qdrant folder stay whole."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from tests.faults.harness import kill_folder_store

# Each kill lands in the ingest command, after the imports (see ``kill_runs``). Drawn over
# the whole process, 20 kills put about 7 (SQLite), 5 (FAISS) and 16 (Qdrant) there: the
# imports took 65%, 75% and 20% of an ingest's process, measured on 2 cores.
KILLS = {"sqlite": 12, "faiss": 12, "qdrant": 16}
FILES = 16


@pytest.mark.parametrize(
    ("backend", "store_lines"),
    [
        ("sqlite", "  backend: sqlite\n  path: {kb}/store.db\n"),
        ("faiss", "  backend: faiss\n  path: {kb}/store.faiss\n"),
        ("qdrant", "  backend: qdrant\n  path: {kb}\n"),
    ],
)
def test_sigkill_at_random_instants(tmp_path: Path, backend: str, store_lines: str) -> None:
    seed = zlib.crc32(backend.encode())
    kills = KILLS[backend]
    report = kill_folder_store(tmp_path, store_lines, files=FILES, kills=kills, seed=seed)
    assert report.kills == kills
    # the kills landed while documents were being written, not only before or after
    assert report.mixed_states >= kills // 4, report
