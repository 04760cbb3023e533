"""Worker processes that open a store at the same moment, round after round.

Each worker waits for a job (what to open), meets the others at a barrier, opens the store,
writes and reads one chunk, and reports "ok" or the error. Spawned once, reused every round.
"""

from __future__ import annotations

import multiprocessing
from typing import Any

DIM = 8


def open_store(kind: str, where: str, name: str) -> Any:
    if kind == "pgvector":
        from pywrapai_graph import PGVectorStore

        return PGVectorStore(where, table_name=name, dimension=DIM, pool_size=1)
    if kind == "qdrant":
        from pywrapai_graph import QdrantVectorStore

        return QdrantVectorStore(name, url=where, dimension=DIM)
    from pywrapai_graph import ChromaVectorStore

    return ChromaVectorStore(url=where, collection=name)


def worker(jobs: Any, results: Any, barrier: Any) -> None:
    from pywrapai_graph.testing.contracts.vector_store import make_chunks

    while (job := jobs.get()) is not None:
        kind, where, name, me = job
        barrier.wait(timeout=120)
        try:
            store = open_store(kind, where, name)
            try:
                store.add(make_chunks(1, DIM, prefix=f"{me}-"))
                store.search([1.0] * DIM, k=1)
            finally:
                store.close()
            results.put((me, "ok"))
        except Exception as exc:  # reported to the test, with where it was raised
            import traceback

            where = " < ".join(
                f"{f.name}:{f.lineno}" for f in traceback.extract_tb(exc.__traceback__)[-3:]
            )
            results.put((me, f"{type(exc).__name__}: {exc} (at {where})"))


class Racers:
    """``n`` spawned processes that open stores together on :meth:`race`."""

    def __init__(self, n: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._jobs = [ctx.Queue() for _ in range(n)]
        self._results = ctx.Queue()
        self._barrier = ctx.Barrier(n)
        self._procs = [
            ctx.Process(target=worker, args=(q, self._results, self._barrier), daemon=True)
            for q in self._jobs
        ]
        for p in self._procs:
            p.start()

    def race(self, kind: str, where: str, names: list[str]) -> dict[int, str]:
        """Worker i opens ``names[i]`` at ``where``; their reports by worker."""
        for i, (queue, name) in enumerate(zip(self._jobs, names, strict=True)):
            queue.put((kind, where, name, i))
        return dict(self._results.get(timeout=300) for _ in names)

    def stop(self) -> None:
        for q in self._jobs:
            q.put(None)
        for p in self._procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
