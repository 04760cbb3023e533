"""SIGKILL a FAISS writer at every crash point of its writes (see ``faiss_crash_points``)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.faults.harness import ROOT


def test_sigkill_at_every_crash_point_of_open_write_compact_and_clear(tmp_path: Path) -> None:
    """Each kill leaves one committed state (the interrupted write all there or not at all),
    the same for a reader that had the store open throughout and for a fresh open; a kill
    while a new store is first opened leaves a store that opens as new; three writers at
    once, killed, never show a reader a state that is not one of each writer's."""
    proc = subprocess.run(
        [sys.executable, "-m", "tests.faults.faiss_crash_points", str(tmp_path), "7", "2", "20"],
        capture_output=True,
        # one thread (no BLAS or OpenMP pool): the driver forks its writers
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
        },
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    report = json.loads(proc.stdout)
    assert report["violations"] == []
    assert report["first_open_kills"] >= 7  # PRAGMA, BEGIN, each CREATE, the format row
    assert report["kills"] >= 150  # every crash point of two sequences of writes
    kinds = report["kinds"]
    for kind in ("sql BEGIN", "sql INSERT", "sql DELETE", "sql COMMIT", "after COMMIT"):
        assert kinds.get(kind, 0) >= 1, kinds
    # kills landed both before and after the interrupted write's commit
    assert report["interrupted_op_done"] >= 1 and report["interrupted_op_undone"] >= 1
    # three writers at once, 20 rounds: most killed at a random crash point of theirs
    assert report["writer_runs"] == 60
    assert report["writer_kills"] >= 20


def test_what_a_killed_first_open_left_opens_as_a_new_store(tmp_path: Path) -> None:
    """An empty file (killed before SQLite wrote a page), or our tables without a row (a
    version that created them one statement at a time); anything else is still refused."""
    from pywrapai_graph import FAISSVectorStore
    from pywrapai_graph.errors import VectorStoreError
    from tests.faults.faiss_crash_points import DIM, apply, check_store

    def new_meta(name: str, *statements: str) -> Path:
        meta = tmp_path / name
        meta.touch()
        with sqlite3.connect(meta) as conn:
            for statement in statements:
                conn.execute(statement)
        conn.close()
        return meta

    tables = [
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "CREATE TABLE chunks (int_id INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, "
        "doc_id TEXT NOT NULL, text TEXT NOT NULL, metadata TEXT NOT NULL)",
    ]
    for meta in (new_meta("empty.meta"), new_meta("steps.meta", *tables)):
        store = FAISSVectorStore(tmp_path / f"{meta.stem}.faiss", meta, dimension=DIM)
        apply(store, ("replace", "d1", 3))
        assert check_store(store, meta) == ((("d1", 3),), ())
        store.close()
    refused = [
        new_meta("rows.meta", *tables, "INSERT INTO meta VALUES ('format', 'other/1')"),
        new_meta("foreign.meta", *tables, "CREATE TABLE t (x)"),
    ]
    for meta in refused:
        with pytest.raises(VectorStoreError, match="not a pywrapai"):
            FAISSVectorStore(tmp_path / f"{meta.stem}.faiss", meta)
