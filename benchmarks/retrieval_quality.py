"""Retrieval quality on Cranfield: dense, lexical and hybrid (each fusion) on every backend,
against a textbook BM25.

Run: .venv/bin/python -m benchmarks.retrieval_quality [FOLDER]
(FOLDER defaults to ../shared/data/cranfield beside the repository, as CI lays it out.)
``--rerank [--pg]`` measures instead each setting without and with the reranker port's test
model (benchmarks/rerank_quality.py).

Every document is one chunk (the baseline indexes whole abstracts too); queries rank 100
documents. The baseline is bm25s (method "lucene", k1 1.2, b 0.75, its English stop words,
the Snowball stemmer of PyStemmer), run in this process and scored by the same code.

One row per backend (in-memory, SQLite, FAISS, Qdrant local, Chroma embedded, PostgreSQL):
nDCG@10 of dense (the bundled local embedder, all-MiniLM-L6-v2 int8; the corpus and the
queries are embedded once and every backend gets the same vectors), lexical (the backend's
BM25, k1 1.2, b 0.75) and hybrid with each fusion (``rescored``, the default; ``rrf``;
``weighted``); each side contributes the 300 chunks the evaluation asks for (100 documents,
3 chunks each).
Also measured here: the local embedder's ingest rate against raw onnxruntime on the same
texts (tokenise, run, mean-pool: no store, no library), and 1 vs 2 onnxruntime threads.
Targets: every backend's lexical within 0.01 nDCG@10 of the baseline; on every backend hybrid
(default fusion) above its dense and its lexical side; ingest with the local embedder at
>= 0.8x the raw onnxruntime rate. PostgreSQL is the embedded server of the integration tests,
or PYWRAPAI_TEST_PG_URL.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import onnxruntime as ort
import Stemmer
from tokenizers import Tokenizer

from benchmarks._postgres import postgres_url
from pywrapai_graph import (
    ChromaVectorStore,
    Embedder,
    FAISSVectorStore,
    InMemoryVectorStore,
    PGVectorStore,
    QdrantVectorStore,
    SQLiteVectorStore,
    VectorRetriever,
)
from pywrapai_graph.adapters.embedders.local import LocalEmbeddings, default_model_files
from pywrapai_graph.adapters.sources.beir import BeirCollection, load_beir
from pywrapai_graph.application.chunker import Chunker
from pywrapai_graph.application.evaluate_retrieval import RetrievalEvaluation, evaluate_retrieval
from pywrapai_graph.application.retrieval_metrics import RetrievalScores, score_run
from pywrapai_graph.ports import BaseVectorStore

DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "cranfield"
BATCH, MAX_LENGTH = 32, 256


def baseline_bm25(data: BeirCollection) -> RetrievalScores:
    """bm25s over the same document texts."""
    stemmer = Stemmer.Stemmer("english")
    ids = [d.id for d in data.corpus]
    tokens = bm25s.tokenize(
        [d.text for d in data.corpus], stopwords="en", stemmer=stemmer, show_progress=False
    )
    model = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    model.index(tokens, show_progress=False)
    query_ids = list(data.queries)
    query_tokens = bm25s.tokenize(
        [data.queries[q] for q in query_ids], stopwords="en", stemmer=stemmer, show_progress=False
    )
    results, _ = model.retrieve(query_tokens, k=100, show_progress=False)
    run = {q: [ids[int(j)] for j in results[i]] for i, q in enumerate(query_ids)}
    return score_run(run, data.qrels)


def raw_onnxruntime_rate(texts: list[str]) -> float:
    """Texts per second of plain onnxruntime: tokenise, run in batches, mean-pool."""
    model_path, tokenizer_path = default_model_files()
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    tokenizer.enable_truncation(MAX_LENGTH)
    tokenizer.enable_padding()
    start = time.perf_counter()
    for i in range(0, len(texts), BATCH):
        encoded = tokenizer.encode_batch(texts[i : i + BATCH])
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = session.run(None, feed)[0]
        pooled = (hidden * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
        pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
    return len(texts) / (time.perf_counter() - start)


def thread_rates(texts: list[str]) -> dict[int, float]:
    """Texts per second of the local embedder with 1 and 2 onnxruntime threads."""
    rates = {}
    for threads in (1, 2):
        embedder = LocalEmbeddings(threads=threads)
        start = time.perf_counter()
        embedder.embed_array(texts)
        rates[threads] = len(texts) / (time.perf_counter() - start)
    return rates


def evaluate(
    data: BeirCollection, embedder: Embedder, modes: tuple[str, ...]
) -> dict[str, RetrievalEvaluation]:
    """Ingest once (whole documents), then run the queries in each mode on that store."""
    store = InMemoryVectorStore()
    results: dict[str, RetrievalEvaluation] = {}
    for i, mode in enumerate(modes):
        retriever = VectorRetriever(embedder, store, mode=mode)  # type: ignore[arg-type]
        corpus = data.corpus if i == 0 else None
        results[mode] = evaluate_retrieval(retriever, data.queries, data.qrels, corpus=corpus)
    return results


class Precomputed:
    """An embedder answering from the vectors of one embedding pass over the corpus and the
    queries, so every backend is measured on the same vectors without embedding again."""

    def __init__(self, embedder: Embedder, texts: Sequence[str]) -> None:
        self.provider, self.model = embedder.provider, embedder.model
        self._embedder = embedder
        self._vectors = dict(zip(texts, embedder.embed(list(texts)), strict=True))

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            self._vectors.update(zip(missing, self._embedder.embed(missing), strict=True))
        return [self._vectors[t] for t in texts]

    def embed_one(self, text: str) -> list[float]:
        return self.embed([text])[0]


#: the retrieval settings measured on every backend
SETTINGS: dict[str, dict[str, Any]] = {
    "dense": {"mode": "dense"},
    "lexical": {"mode": "lexical"},
    "rescored": {"mode": "hybrid", "fusion": "rescored"},
    "rrf": {"mode": "hybrid", "fusion": "rrf"},
    "weighted": {"mode": "hybrid", "fusion": "weighted"},
}

#: the stores measured one by one (in a temporary folder)
BACKENDS: dict[str, Callable[[Path], BaseVectorStore]] = {
    "in-memory": lambda _: InMemoryVectorStore(),
    "SQLite": lambda tmp: SQLiteVectorStore(tmp / "store.db"),
    "FAISS": lambda tmp: FAISSVectorStore(tmp / "store.faiss", tmp / "store.json"),
    "Qdrant local (sparse + IDF)": lambda tmp: QdrantVectorStore("bench", location=tmp / "q"),
    "Chroma embedded (terms + BM25)": lambda tmp: ChromaVectorStore(tmp / "c", collection="bench"),
}


def fresh_pg(url: str) -> PGVectorStore:
    """An emptied PostgreSQL table for 384-dimensional vectors."""
    store = PGVectorStore(url, table_name="bench_cranfield", dimension=384)
    store.clear()
    return store


def per_backend(
    data: BeirCollection,
    embedder: Precomputed,
    backends: dict[str, Callable[[Path], BaseVectorStore]],
    baseline: RetrievalScores,
) -> dict[str, dict[str, RetrievalScores]]:
    """Each backend, each setting: the corpus ingested once, then every setting's queries
    (each backend's row printed as soon as it is measured)."""
    out: dict[str, dict[str, RetrievalScores]] = {}
    print_header()
    for name, build in backends.items():
        with tempfile.TemporaryDirectory() as tmp:
            store = build(Path(tmp))
            try:
                out[name] = {}
                for i, (setting, options) in enumerate(SETTINGS.items()):
                    retriever = VectorRetriever(embedder, store, **options)
                    corpus = data.corpus if i == 0 else None
                    out[name][setting] = evaluate_retrieval(
                        retriever, data.queries, data.qrels, corpus=corpus
                    ).scores
            finally:
                store.close()
        print_row(name, out[name], baseline)
    return out


def chunked_lexical(data: BeirCollection) -> dict[str, RetrievalScores]:
    """Lexical retrieval (in-memory) over whole documents and over 500-character chunks."""
    out = {}
    for label, chunker in (
        ("whole documents", None),
        ("Chunker(500, 50): a doc ranks by its best chunk", Chunker(500, 50)),
    ):
        retriever = VectorRetriever(
            Embedder(provider="hashing"), InMemoryVectorStore(), mode="lexical"
        )
        out[label] = evaluate_retrieval(
            retriever, data.queries, data.qrels, corpus=data.corpus, chunker=chunker
        ).scores
    return out


def print_header() -> None:
    print(
        f"\n{'nDCG@10 per backend':<34} {'dense':>7} {'lexical':>8} {'vs BM25':>8} "
        f"{'rescored':>9} {'rrf':>7} {'weighted':>9} {'hybrid > both':>14}",
        flush=True,
    )


def targets_met(got: dict[str, RetrievalScores], baseline: RetrievalScores) -> bool:
    """Lexical within 0.01 of the baseline and hybrid (default fusion) above both sides."""
    n = {setting: s.ndcg_at_10 for setting, s in got.items()}
    close = abs(n["lexical"] - baseline.ndcg_at_10) <= 0.01
    return close and n["rescored"] > max(n["dense"], n["lexical"])


def print_row(name: str, got: dict[str, RetrievalScores], baseline: RetrievalScores) -> None:
    n = {setting: s.ndcg_at_10 for setting, s in got.items()}
    delta = n["lexical"] - baseline.ndcg_at_10
    beats = n["rescored"] > max(n["dense"], n["lexical"])
    print(
        f"{name:<34} {n['dense']:>7.4f} {n['lexical']:>8.4f} {delta:>+8.4f} "
        f"{n['rescored']:>9.4f} {n['rrf']:>7.4f} {n['weighted']:>9.4f} {beats!s:>14}",
        flush=True,
    )


def main(argv: list[str]) -> None:
    if "--rerank" in argv:  # the reranker's rows: benchmarks/rerank_quality.py
        from benchmarks import rerank_quality

        rerank_quality.main([a for a in argv if a != "--rerank"])
        return
    data = load_beir(argv[0] if argv else DEFAULT)
    texts = [d.text for d in data.corpus if d.text.strip()]
    print(f"{data.name}: {len(data.corpus)} documents, {len(data.queries)} judged queries")

    baseline = baseline_bm25(data)
    local = Embedder(provider="local")
    vectors = Precomputed(local, [*texts, *data.queries.values()])
    with postgres_url() as url:
        pg = {"PostgreSQL (postings, BM25 in SQL)": lambda _: fresh_pg(url)}
        backends = per_backend(data, vectors, {**BACKENDS, **pg}, baseline)
    quality_met = all(targets_met(got, baseline) for got in backends.values())
    print(f"\n{'lexical (our BM25, in-memory) over':<50} {'nDCG@10':>8} {'vs BM25':>8}")
    for label, s in chunked_lexical(data).items():
        print(f"{label:<50} {s.ndcg_at_10:>8.4f} {s.ndcg_at_10 - baseline.ndcg_at_10:>+8.4f}")
    hashing = evaluate(data, Embedder(provider="hashing"), ("dense", "hybrid"))
    raw_rate = raw_onnxruntime_rate(texts)
    ours = evaluate(data, local, ("dense",))
    ingest_rate = len(texts) / ours["dense"].ingest_seconds
    threads = thread_rates(texts[:200])

    memory = backends["in-memory"]
    rows: list[tuple[str, Any]] = [
        ("baseline BM25 (bm25s, k1 1.2, b 0.75)", baseline),
        ("hashing, dense", hashing["dense"].scores),
        ("hashing + BM25, hybrid (rescored)", hashing["hybrid"].scores),
        ("local all-MiniLM-L6-v2 int8, dense", memory["dense"]),
        ("lexical (our BM25, k1 1.2, b 0.75)", memory["lexical"]),
        ("local + BM25, hybrid (rescored)", memory["rescored"]),
        ("local + BM25, hybrid (rrf)", memory["rrf"]),
        ("local + BM25, hybrid (weighted)", memory["weighted"]),
    ]
    print(
        f"\n{'retrieval':<42} {'nDCG@10':>8} {'R@100':>7} {'R@10':>7} {'MRR@10':>7} {'vs BM25':>8}"
    )
    for label, s in rows:
        ratio = s.ndcg_at_10 / baseline.ndcg_at_10
        print(
            f"{label:<42} {s.ndcg_at_10:>8.4f} {s.recall_at_100:>7.4f} {s.recall_at_10:>7.4f} "
            f"{s.mrr_at_10:>7.4f} {ratio:>7.2f}x"
        )
    truncated = ours["dense"].truncated_texts
    print(
        f"\nlocal embedder: {truncated} of {len(texts)} abstracts truncated at {MAX_LENGTH} tokens"
    )
    print(f"\n{'ingest rate (texts/s)':<42} {'rate':>8} {'ratio':>8}")
    print(f"{'raw onnxruntime (batch 32, 1 thread)':<42} {raw_rate:>8.1f} {1.0:>7.2f}x")
    print(
        f"{'VectorRetriever + local embedder + store':<42} {ingest_rate:>8.1f} "
        f"{ingest_rate / raw_rate:>7.2f}x"
    )
    print(f"{'local embedder, 1 thread (200 texts)':<42} {threads[1]:>8.1f} {1.0:>7.2f}x")
    print(
        f"{'local embedder, 2 threads (200 texts)':<42} {threads[2]:>8.1f} "
        f"{threads[2] / threads[1]:>7.2f}x"
    )
    print("\ntargets:")
    print(f"  every backend: lexical within 0.01 of BM25, hybrid above both: {quality_met}")
    print(f"  ingest >= 0.8x raw onnxruntime: {ingest_rate >= 0.8 * raw_rate}")


if __name__ == "__main__":
    main(sys.argv[1:])
