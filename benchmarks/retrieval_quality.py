"""Retrieval quality on Cranfield: dense, lexical and hybrid (each fusion) on every backend,
against a textbook BM25.

Run: .venv/bin/python -m benchmarks.retrieval_quality [FOLDER] [--backends N,..] [--lexical-only]
[--vectors FILE.npz]
(FOLDER defaults to ../shared/data/cranfield beside the repository, as CI lays it out;
``--backends in-memory,sqlite,faiss`` measures those only (names as in :data:`BACKENDS`, or
``postgresql``); ``--lexical-only`` measures the lexical setting alone, with no model, and
skips the embedder's rates; ``--vectors`` keeps the one embedding pass's vectors in FILE and
reuses them on the next run.)
``--rerank [--pg]`` measures instead each setting without and with the reranker port's test
model (benchmarks/rerank_quality.py).

Queries rank 100 documents. The baseline is bm25s over whole abstracts (method "lucene", k1
1.2, b 0.75, its English stop words, the Snowball stemmer of PyStemmer), run in this process
and scored by the same code.

Two rows per backend (in-memory, SQLite, FAISS, Qdrant local, Chroma embedded, PostgreSQL):
every document one chunk, and the same corpus split by ``Chunker(500, 50)`` (a document
ranks by its best chunk; lexical then scores each chunk with its document field). Each row:
nDCG@10 of dense (the bundled local embedder, all-MiniLM-L6-v2 int8; the texts and the
queries are embedded once and every backend gets the same vectors), lexical (the backend's
BM25, k1 1.2, b 0.75) and hybrid with each fusion (``rescored``, the default; ``rrf``;
``weighted``); each side contributes the 300 chunks the evaluation asks for (100 documents,
3 chunks each).
Also measured here: the local embedder's ingest rate against raw onnxruntime on the same
texts (tokenise, run, mean-pool: no store, no library), and 1 vs 2 onnxruntime threads.
Targets: every backend's lexical within 0.01 nDCG@10 of the baseline, and on chunks at least
its lexical on whole documents; on every backend hybrid (default fusion) above its dense and
its lexical side, on whole documents and on chunks; ingest with the local embedder at
>= 0.8x the raw onnxruntime rate. PostgreSQL is the embedded server of the integration tests,
or PYWRAPAI_TEST_PG_URL.
"""

from __future__ import annotations

import contextlib
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
    MilvusVectorStore,
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

    def __init__(self, embedder: Embedder, texts: Sequence[str], saved: Path | None = None) -> None:
        self.provider, self.model = embedder.provider, embedder.model
        self._embedder = embedder
        self._vectors: dict[str, list[float]] = {}
        if saved is not None and saved.exists():  # a previous run's vectors (same model)
            with np.load(saved) as stored:
                rows = stored["vectors"].tolist()
                self._vectors = dict(zip(stored["texts"].tolist(), rows, strict=True))
        self.embed(list(texts))
        if saved is not None:
            np.savez(
                saved, texts=np.array(list(self._vectors)), vectors=list(self._vectors.values())
            )

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
    "Chroma embedded (dense only)": lambda tmp: ChromaVectorStore(tmp / "c", collection="bench"),
    "Milvus Lite (BM25 function)": lambda tmp: MilvusVectorStore("bench", path=tmp / "m.db"),
}


PG_NAME = "PostgreSQL (postings, BM25 in SQL)"


def fresh_pg(url: str) -> PGVectorStore:
    """An emptied PostgreSQL table for 384-dimensional vectors."""
    store = PGVectorStore(url, table_name="bench_cranfield", dimension=384)
    store.clear()
    return store


#: the corpus as each backend gets it: one chunk per document, and split
CORPUS_FORMS: dict[str, Chunker | None] = {"": None, ", chunked": Chunker(500, 50)}

Measured = dict[str, dict[str, RetrievalScores]]


def per_backend(
    data: BeirCollection,
    embedder: Embedder | Precomputed,
    backends: dict[str, Callable[[Path], BaseVectorStore]],
    baseline: RetrievalScores,
    settings: dict[str, dict[str, Any]] = SETTINGS,
) -> Measured:
    """Each backend, whole documents then chunks, each setting: the corpus ingested once per
    form, then every setting's queries (each row printed as soon as it is measured)."""
    out: Measured = {}
    print_header(settings)
    for name, build in backends.items():
        for suffix, chunker in CORPUS_FORMS.items():
            with tempfile.TemporaryDirectory() as tmp:
                store = build(Path(tmp))
                try:
                    out[name + suffix] = _measure(data, embedder, store, settings, chunker)
                finally:
                    store.close()
            print_row(name + suffix, out[name + suffix], out[name], baseline)
    return out


def _measure(
    data: BeirCollection,
    embedder: Embedder | Precomputed,
    store: BaseVectorStore,
    settings: dict[str, dict[str, Any]],
    chunker: Chunker | None,
) -> dict[str, RetrievalScores]:
    got = {}
    for i, (setting, options) in enumerate(settings.items()):
        if options["mode"] != "dense" and not store.lexical:  # Chroma: dense only
            continue
        retriever = VectorRetriever(embedder, store, **options)
        corpus = data.corpus if i == 0 else None
        got[setting] = evaluate_retrieval(
            retriever, data.queries, data.qrels, corpus=corpus, chunker=chunker
        ).scores
    return got


def print_header(settings: dict[str, dict[str, Any]]) -> None:
    columns = "".join(f" {setting:>9}" for setting in settings)
    print(
        f"\n{'nDCG@10 per backend':<44}{columns} {'lex-BM25':>8} {'chunks>=whole':>13} "
        f"{'hybrid > both':>13}",
        flush=True,
    )


def _checks(
    got: dict[str, RetrievalScores], whole: dict[str, RetrievalScores], baseline: RetrievalScores
) -> tuple[float, bool | None, bool | None]:
    """Lexical minus the baseline, lexical at least whole documents' (chunked rows), hybrid
    (default fusion) above both of its sides (None: not measured)."""
    n = {setting: s.ndcg_at_10 for setting, s in got.items()}
    if "lexical" not in n:  # a dense-only backend
        return 0.0, None, None
    delta = n["lexical"] - baseline.ndcg_at_10
    chunks = None if got is whole else n["lexical"] >= whole["lexical"].ndcg_at_10
    beats = None
    if {"rescored", "dense"} <= n.keys():
        beats = n["rescored"] > max(n["dense"], n["lexical"])
    return delta, chunks, beats


def targets_met(got: Measured, baseline: RetrievalScores) -> bool:
    """Every row: lexical within 0.01 of the baseline (whole documents) or at least whole
    documents' (chunks), and hybrid (default fusion) above both sides where measured."""
    ok = True
    for name, scores in got.items():
        whole = got[name.removesuffix(", chunked")]
        delta, chunks, beats = _checks(scores, whole, baseline)
        ok = ok and (chunks if chunks is not None else abs(delta) <= 0.01) and beats is not False
    return ok


def print_row(
    name: str,
    got: dict[str, RetrievalScores],
    whole: dict[str, RetrievalScores],
    baseline: RetrievalScores,
) -> None:
    delta, chunks, beats = _checks(got, whole, baseline)
    columns = "".join(f" {s.ndcg_at_10:>9.4f}" for s in got.values())
    lexical = f"{delta:>+8.4f}" if "lexical" in got else f"{'-':>8}"  # a dense-only backend
    print(f"{name:<44}{columns} {lexical} {_flag(chunks):>13} {_flag(beats):>13}", flush=True)


def _flag(value: bool | None) -> str:
    return "-" if value is None else str(value)


def _option(argv: list[str], flag: str) -> str | None:
    """The value after ``flag`` in ``argv`` (removing both), or None."""
    if flag not in argv:
        return None
    i = argv.index(flag)
    value = argv[i + 1] if i + 1 < len(argv) else ""
    del argv[i : i + 2]
    return value


def chosen_backends(
    names: str | None, url: Callable[[], str]
) -> dict[str, Callable[[Path], BaseVectorStore]]:
    """:data:`BACKENDS` and PostgreSQL, or those whose name starts with one of ``names``
    (comma-separated, any case)."""
    every = {**BACKENDS, PG_NAME: lambda _: fresh_pg(url())}
    if names is None:
        return every
    wanted = [n.strip().lower() for n in names.split(",") if n.strip()]
    chosen = {k: v for k, v in every.items() if any(k.lower().startswith(w) for w in wanted)}
    if not chosen:
        raise SystemExit(f"--backends {names!r}: none of {', '.join(every)}")
    return chosen


def main(argv: list[str]) -> None:
    if "--rerank" in argv:  # the reranker's rows: benchmarks/rerank_quality.py
        from benchmarks import rerank_quality

        rerank_quality.main([a for a in argv if a != "--rerank"])
        return
    argv = list(argv)
    names = _option(argv, "--backends")
    saved = _option(argv, "--vectors")
    lexical_only = "--lexical-only" in argv
    argv = [a for a in argv if a != "--lexical-only"]
    data = load_beir(argv[0] if argv else DEFAULT)
    texts = [d.text for d in data.corpus if d.text.strip()]
    print(f"{data.name}: {len(data.corpus)} documents, {len(data.queries)} judged queries")

    baseline = baseline_bm25(data)
    local = Embedder(provider="local")
    embedder: Embedder | Precomputed = Embedder(provider="hashing")  # lexical: vectors unused
    settings = {"lexical": SETTINGS["lexical"]} if lexical_only else SETTINGS
    if not lexical_only:
        chunked = [c.text for d in data.corpus for c in Chunker(500, 50).split(d)]
        every = [*texts, *chunked, *data.queries.values()]
        embedder = Precomputed(local, every, Path(saved) if saved else None)
    with contextlib.ExitStack() as stack:
        urls: list[str] = []

        def url() -> str:  # the embedded PostgreSQL starts only if it is measured
            if not urls:
                urls.append(stack.enter_context(postgres_url()))
            return urls[0]

        backends = per_backend(data, embedder, chosen_backends(names, url), baseline, settings)
    quality_met = targets_met(backends, baseline)
    print(f"\ntargets: lexical (chunks >= whole, whole within 0.01 of BM25), hybrid: {quality_met}")
    if lexical_only or "in-memory" not in backends:
        return
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
    print(f"\ningest >= 0.8x raw onnxruntime: {ingest_rate >= 0.8 * raw_rate}")


if __name__ == "__main__":
    main(sys.argv[1:])
