"""SIGKILL during `ingest` into pgvector and Chroma: every document stays whole (tests/faults)."""

from __future__ import annotations

import itertools
from pathlib import Path

from chromadb.api.shared_system_client import SharedSystemClient

from tests.faults.harness import (
    PARAGRAPHS,
    clean_contents,
    cli_ingest,
    kill_folder_store,
    kill_runs,
    write_config,
    write_corpus,
)

KILLS = 6
FILES = 10


def test_sigkill_pgvector(tmp_path: Path, pg_url: str) -> None:
    tables = (f"kill_{tmp_path.name[-12:].replace('-', '_')}_{i}" for i in itertools.count())

    def lines() -> str:
        return f"  backend: pgvector\n  dsn: {pg_url}\n  dimension: 64\n  table: {next(tables)}\n"

    config = write_config(tmp_path, lines())
    docs = tmp_path / "docs"
    write_corpus(docs, "A", FILES - 3, PARAGRAPHS)
    clean_a = clean_contents(config, docs)

    def restore_a() -> None:
        write_config(tmp_path, lines())  # a fresh table holding version A
        write_corpus(docs, "A", FILES - 3, PARAGRAPHS)
        cli_ingest(config, docs)
        write_corpus(docs, "B", FILES, PARAGRAPHS)

    restore_a()
    clean_b = clean_contents(config, docs)
    report = kill_runs(config, docs, restore_a, clean_a, clean_b, KILLS, seed=11)
    assert report.kills == KILLS
    assert report.mixed_states >= 1, report


def test_sigkill_chroma_embedded(tmp_path: Path) -> None:
    # chromadb caches one client per folder in the process: forget the replaced folder's
    report = kill_folder_store(
        tmp_path,
        "  backend: chroma\n  path: {kb}\n",
        files=FILES,
        kills=KILLS,
        seed=12,
        forget=SharedSystemClient.clear_system_cache,
    )
    assert report.kills == KILLS
    assert report.mixed_states >= 1, report
