"""SIGKILL during `ingest` at random instants: SQLite and FAISS stay whole and repairable."""

from __future__ import annotations

import shutil
import zlib
from pathlib import Path

import pytest

from tests.faults.harness import (
    clean_contents,
    cli_ingest,
    kill_runs,
    write_config,
    write_corpus,
)

KILLS = 20
FILES, PARAGRAPHS = 16, 30


@pytest.mark.parametrize(
    ("backend", "store_lines"),
    [
        ("sqlite", "  backend: sqlite\n  path: {kb}/store.db\n"),
        ("faiss", "  backend: faiss\n  path: {kb}/store.faiss\n"),
    ],
)
def test_sigkill_at_random_instants(tmp_path: Path, backend: str, store_lines: str) -> None:
    config = write_config(tmp_path, store_lines.format(kb=tmp_path / "kb"))
    docs = tmp_path / "docs"
    write_corpus(docs, "A", FILES - 4, PARAGRAPHS)
    clean_a = clean_contents(config, docs)
    cli_ingest(config, docs)
    template = tmp_path / "kb-A"
    shutil.copytree(tmp_path / "kb", template)
    write_corpus(docs, "B", FILES, PARAGRAPHS)
    clean_b = clean_contents(config, docs)

    def restore_a() -> None:
        shutil.rmtree(tmp_path / "kb")
        shutil.copytree(template, tmp_path / "kb")

    report = kill_runs(
        config, docs, restore_a, clean_a, clean_b, KILLS, seed=zlib.crc32(backend.encode())
    )
    assert report.kills == KILLS
    # the kills landed while documents were being written, not only before or after
    assert report.mixed_states >= KILLS // 4, report
