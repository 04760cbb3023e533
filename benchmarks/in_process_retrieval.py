"""Hybrid retrieval on the in-process stores: one pass (``retrieve``) against the composed
path (``search`` + ``lexical_search``, fused by the retriever without re-scoring), same run.

Run: .venv/bin/python -m benchmarks.in_process_retrieval [FOLDER] [--chunks N] [--rounds R]
(FOLDER defaults to ../shared/data/cranfield; its abstracts, repeated as documents of their
own, give ``N`` chunks (default 25,000) with clustered 384-d vectors; its queries are asked
through ``VectorRetriever(mode="hybrid")`` with each fusion, rounds alternating between the
two paths.)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from benchmarks._data import clustered_vectors
from pywrapai_graph import Chunk, InMemoryVectorStore, VectorRetriever
from pywrapai_graph.adapters.embedders.hashing_embedder import FeatureHashingEmbedder
from pywrapai_graph.adapters.sources.beir import load_beir
from pywrapai_graph.ports import BaseVectorStore


class ComposedInMemory(InMemoryVectorStore):
    """The same store without its one-pass ``retrieve``: the retriever composes it."""

    _retrieve = BaseVectorStore._retrieve


def _per_query_ms(retriever: VectorRetriever, queries: list[str]) -> float:
    """CPU milliseconds a query (process time: steadier than wall time on a shared machine;
    one thread, so the two agree on a quiet one)."""
    start = time.process_time()
    for q in queries:
        retriever.retrieve(q, k=10)
    return (time.process_time() - start) * 1000 / len(queries)


def main(argv: list[str]) -> None:
    chunks = int(argv[argv.index("--chunks") + 1]) if "--chunks" in argv else 25_000
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 3
    folder = next((a for a in argv if not a.startswith("--") and not a.isdigit()), None)
    data = load_beir(Path(folder or Path(__file__).parents[2] / "shared/data/cranfield"))
    texts = [d.text for d in data.corpus]
    vectors = clustered_vectors(chunks, 384)
    made = [
        Chunk(texts[i % len(texts)], doc_id=f"d{i}", id=f"c{i}", embedding=vectors[i].tolist())
        for i in range(chunks)
    ]
    queries = list(data.queries.values())
    embedder = FeatureHashingEmbedder(384)
    stores = {"one pass": InMemoryVectorStore(), "composed": ComposedInMemory()}
    for store in stores.values():
        store.add(made)
    print(f"in-memory, {chunks} chunks, {len(queries)} queries, hybrid k=10, CPU ms per query")
    for fusion in ("rescored", "rrf"):
        retrievers = {
            name: VectorRetriever(embedder, s, mode="hybrid", fusion=fusion)
            for name, s in stores.items()
        }
        for r in retrievers.values():  # builds the lexical index, warms the caches
            _per_query_ms(r, queries[:5])
        times: dict[str, list[float]] = {name: [] for name in retrievers}
        for _ in range(rounds):
            for name, r in retrievers.items():
                times[name].append(_per_query_ms(r, queries))
        best = {name: min(t) for name, t in times.items()}
        rows = ", ".join(
            f"{name} {ms:.2f} (rounds {', '.join(f'{t:.1f}' for t in times[name])})"
            for name, ms in best.items()
        )
        print(f"{fusion}: {rows}; composed / one pass {best['composed'] / best['one pass']:.2f}x")


if __name__ == "__main__":
    main(sys.argv[1:])
