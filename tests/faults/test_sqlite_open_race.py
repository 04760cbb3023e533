"""Processes that open one fresh SQLite store at the same instant all get a working store."""

from __future__ import annotations

import multiprocessing as mp
from multiprocessing.synchronize import Barrier
from pathlib import Path

from pywrapai_graph.adapters.vectorstores.sqlite.store import SQLiteVectorStore

OPENERS, ROUNDS = 3, 40


def _open(path: str, start: Barrier, results: mp.Queue[str]) -> None:
    start.wait()
    try:
        store = SQLiteVectorStore(path)
        results.put(f"ok {len(store)}")
        store.close()
    except Exception as exc:  # reported to the parent, which asserts on it
        results.put(f"{type(exc).__name__}: {exc}")


def test_processes_opening_one_fresh_file_at_once_all_succeed(tmp_path: Path) -> None:
    ctx = mp.get_context("fork")
    outcomes: list[str] = []
    for round_ in range(ROUNDS):
        path = str(tmp_path / f"store{round_}.db")
        start = ctx.Barrier(OPENERS)
        results: mp.Queue[str] = ctx.Queue()
        procs = [ctx.Process(target=_open, args=(path, start, results)) for _ in range(OPENERS)]
        for p in procs:
            p.start()
        outcomes += [results.get(timeout=60) for _ in procs]
        for p in procs:
            p.join(timeout=60)
            assert p.exitcode == 0
    assert outcomes == ["ok 0"] * (OPENERS * ROUNDS)
