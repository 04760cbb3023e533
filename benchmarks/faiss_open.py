"""FAISS store: what opening costs and what one search costs, at 10k and 100k chunks of 384.

Run: .venv/bin/python -m benchmarks.faiss_open [--sizes 10000 100000]

Fills a store with random unit vectors (batches of 1,000 through ``add``), then times, in
the same process: a fresh ``FAISSVectorStore`` open plus its first search (the index built
from the files; best of 3), the median of 50 single-query searches on the open store, and
the median of 10 searches each right after another store object (another connection, as
another process) added one chunk: what following another process's write costs.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from pywrapai_graph import Chunk, FAISSVectorStore

DIM = 384


def run(n: int) -> dict[str, float]:
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        index, meta = Path(tmp) / "s.faiss", Path(tmp) / "s.meta"
        store = FAISSVectorStore(index, meta)
        for start in range(0, n, 1000):
            m = rng.standard_normal((min(1000, n - start), DIM)).astype(np.float32)
            store.add(
                [
                    Chunk(
                        f"text {start + i}",
                        f"d{start // 1000}",
                        {"n": start + i},
                        f"c{start + i}",
                        embedding=row.tolist(),
                    )
                    for i, row in enumerate(m)
                ]
            )
        store.close()
        queries = rng.standard_normal((51, DIM)).astype(np.float32)
        opens = []
        for _ in range(3):
            began = time.perf_counter()
            fresh = FAISSVectorStore(index, meta)
            fresh.search(queries[0].tolist(), k=10)
            opens.append(time.perf_counter() - began)
            fresh.close()
        fresh = FAISSVectorStore(index, meta)
        fresh.search(queries[0].tolist(), k=10)
        times = []
        for q in queries[1:]:
            began = time.perf_counter()
            fresh.search(q.tolist(), k=10)
            times.append(time.perf_counter() - began)
        writer = FAISSVectorStore(index, meta)  # another process's writes, as far as fresh knows
        follows = []
        for i, q in enumerate(queries[1:11]):
            writer.add([Chunk(f"new {i}", "new", {}, f"new{i}", embedding=q.tolist())])
            began = time.perf_counter()
            fresh.search(q.tolist(), k=10)
            follows.append(time.perf_counter() - began)
        writer.close()
        fresh.close()
        size = sum(p.stat().st_size for p in Path(tmp).iterdir())
    return {
        "open_s": min(opens),
        "search_ms": 1000 * statistics.median(times),
        "follow_ms": 1000 * statistics.median(follows),
        "mb": size / 2**20,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    for n in parser.parse_args().sizes:
        r = run(n)
        print(
            f"{n:>7} chunks: open+first search {r['open_s']:.3f} s, "
            f"search p50 {r['search_ms']:.2f} ms, search after another writer's add p50 "
            f"{r['follow_ms']:.1f} ms, files {r['mb']:.0f} MiB"
        )


if __name__ == "__main__":
    main()
