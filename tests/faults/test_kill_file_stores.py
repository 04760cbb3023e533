"""SIGKILL during `ingest` at random instants: SQLite, FAISS and a Qdrant folder stay whole."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from tests.faults.harness import kill_folder_store

KILLS = 20
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
    report = kill_folder_store(tmp_path, store_lines, files=FILES, kills=KILLS, seed=seed)
    assert report.kills == KILLS
    # the kills landed while documents were being written, not only before or after
    assert report.mixed_states >= KILLS // 4, report
