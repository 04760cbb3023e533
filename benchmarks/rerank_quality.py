"""Reranking on Cranfield: each retrieval mode and hybrid fusion, without and with the reranker
port's test model, and what the reranking stage costs next to retrieval in the same run.

Run: .venv/bin/python -m benchmarks.rerank_quality [FOLDER] [--pg] [--candidates N]
     [--model-dir DIR | --write-model DIR]
(FOLDER defaults to ../shared/data/cranfield beside the repository, as CI lays it out.)

The reranker is the port's test model (``pywrapai_graph.testing.cross_encoder``): a real ONNX
cross-encoder run by ``RerankModel("local", model_dir=...)`` whose logit is the sum of the
weights of the passage's words (each occurrence) that the query also contains. Its weights
come from the collection alone, never from its judgements or any other collection: each
word's inverse document frequency over the Cranfield corpus (Lucene's
``ln(1 + (N - df + 0.5) / (df + 0.5))``, words as the model's tokenizer splits them,
lower-cased, no stemming). They are scaled by ``c`` with a bias of ``-c`` times the largest
total weight of any document, so every logit lies in [-600, 0] and the sigmoid the adapter
applies never saturates (an order-preserving change: the ranking is the idf sum's). The
model's vocabulary is the corpus words some query contains: a word no query contains adds to
no logit, so the model scores these queries exactly as the full vocabulary would (the run
checks the ONNX logits against the Python formula on sample pairs first).

The path is ``pywrapai-graph eval``'s: the corpus (whole abstracts, one chunk each) is ingested
once with the ``local`` embedder (all-MiniLM-L6-v2 int8) through ``compare_retrieval``, and every
query is embedded live. Each setting (dense, lexical, hybrid ``rescored``/``rrf``/``weighted``)
runs without the reranker and with it, at two depths:

- top ``--candidates`` (50): the evaluation ranks 10 documents, so the retriever fetches 50
  candidates and the reranker re-orders them (nDCG@10 only; Recall@100 does not apply);
- the evaluation's 300 candidates (100 documents, 3 chunks each, as ``eval --k 100`` asks:
  the retriever hands the reranker max(asked, rerank_candidates) hits): nDCG@10 and Recall@100.

The reranker is a stage after retrieval: per backend it differs only through the candidates.
The in-memory store is measured; ``--pg`` adds PostgreSQL (the embedded server of the
integration tests, or PYWRAPAI_TEST_PG_URL) over the same corpus vectors. Cost: the rerank
stage's milliseconds per query (timed around ``RerankModel.rerank``) and its ratio to the
retrieval of the same queries in the same run (query embedding + store search + fusion).
p: paired randomisation test (10,000 sign flips, seed 0) of nDCG@10 against the same
setting without the reranker.

The same figures from the command line (in-memory): ``--write-model DIR`` writes the test model
and prints the ``pywrapai-graph eval`` call (see :func:`eval_command`).
"""

from __future__ import annotations

import argparse
import math
import random
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks._postgres import postgres_url
from pywrapai_graph import Embedder, InMemoryVectorStore, VectorRetriever
from pywrapai_graph.adapters.sources.beir import BeirCollection, load_beir
from pywrapai_graph.application.compare_retrieval import compare_retrieval
from pywrapai_graph.application.retrieval_metrics import QueryScores
from pywrapai_graph.application.significance import paired_randomisation_test
from pywrapai_graph.composition.reranker import RerankModel
from pywrapai_graph.domain import Chunk, Document, ScoredChunk
from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.testing.cross_encoder import tiny_cross_encoder_logit, write_tiny_cross_encoder

DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "cranfield"
#: tokens per (query, passage) pair: the test model has no window; the longest abstract fits
MAX_LENGTH = 1024
#: every logit of the test model lies in [-LOGIT_SPAN, 0]: the sigmoid stays exact
LOGIT_SPAN = 600.0
_WORD = re.compile(r"\w+|[^\w\s]+")  # the test model's tokenizer: Whitespace pre-tokenizer

#: the retrieval settings (name -> VectorRetriever options), as retrieval_quality measures them
SETTINGS: dict[str, dict[str, str]] = {
    "dense": {"mode": "dense"},
    "lexical": {"mode": "lexical"},
    "hybrid rescored": {"mode": "hybrid", "fusion": "rescored"},
    "hybrid rrf": {"mode": "hybrid", "fusion": "rrf"},
    "hybrid weighted": {"mode": "hybrid", "fusion": "weighted"},
}


# ------------------------------------------------------------------ the test model
def collection_idf(corpus: Sequence[Document]) -> dict[str, float]:
    """Lucene's idf of every word of ``corpus`` (the test model's tokenization)."""
    df: Counter[str] = Counter()
    for doc in corpus:
        df.update(set(_WORD.findall(doc.text.lower())))
    n = len(corpus)
    return {w: math.log(1.0 + (n - d + 0.5) / (d + 0.5)) for w, d in df.items()}


def model_weights(data: BeirCollection) -> tuple[dict[str, float], float]:
    """(word -> weight, bias) of the test model: idf scaled so that logits lie in [-600, 0]."""
    idf = collection_idf(data.corpus)
    largest = max(sum(idf[w] for w in _WORD.findall(d.text.lower())) for d in data.corpus)
    scale = LOGIT_SPAN / largest
    asked = {w for q in data.queries.values() for w in _WORD.findall(q.lower())}
    return {w: scale * idf[w] for w in sorted(asked & idf.keys())}, -LOGIT_SPAN


def write_test_model(folder: Path, data: BeirCollection) -> RerankModel:
    """Write the test model into ``folder``, load it, and check it against the formula."""
    weights, bias = model_weights(data)
    write_tiny_cross_encoder(folder, weights, bias=bias)
    reranker = RerankModel("local", model_dir=folder, max_length=MAX_LENGTH)
    check_model(reranker, data, weights, bias)
    return reranker


def check_model(
    reranker: RerankModel, data: BeirCollection, weights: dict[str, float], bias: float
) -> None:
    """The ONNX model's log-relevance equals the Python logit on sample pairs."""
    picked = random.Random(0)
    queries = picked.sample(sorted(data.queries.values()), 5)
    passages = picked.sample([d.text for d in data.corpus if d.text], 40)
    for query in queries:
        hits = [ScoredChunk(_chunk(i, p), 0.0) for i, p in enumerate(passages)]
        for hit in reranker.rerank(query, hits):
            want = tiny_cross_encoder_logit(query, hit.chunk.text, weights, bias)
            got = math.log(hit.score) - math.log1p(-hit.score)
            if abs(got - want) > 1e-2:
                raise SystemExit(f"test model: logit {got} where the formula gives {want}")


def _chunk(i: int, text: str) -> Chunk:
    return Chunk(text=text, doc_id=str(i), id=f"{i}#0")


# ------------------------------------------------------------------ measuring
class TimedReranker:
    """A Reranker that times the one it wraps (seconds spent in rerank)."""

    def __init__(self, inner: RerankModel) -> None:
        self.inner = inner
        self.seconds = 0.0

    def rerank(
        self, query: str, hits: Sequence[ScoredChunk], k: int | None = None
    ) -> list[ScoredChunk]:
        start = time.perf_counter()
        try:
            return self.inner.rerank(query, hits, k)
        finally:
            self.seconds += time.perf_counter() - start

    async def arerank(
        self, query: str, hits: Sequence[ScoredChunk], k: int | None = None
    ) -> list[ScoredChunk]:
        start = time.perf_counter()
        try:
            return await self.inner.arerank(query, hits, k)
        finally:
            self.seconds += time.perf_counter() - start


class CorpusVectors:
    """The local embedder, remembering the vectors of the corpus batches it embedded (so a
    second backend ingests the same vectors without embedding again); queries
    (``embed_one``) are embedded live every time, as a deployed retriever does."""

    def __init__(self, embedder: Embedder) -> None:
        self.provider, self.model = embedder.provider, embedder.model
        self._embedder = embedder
        self._vectors: dict[str, list[float]] = {}

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            self._vectors.update(zip(missing, self._embedder.embed(missing), strict=True))
        return [self._vectors[t] for t in texts]

    def embed_one(self, text: str) -> list[float]:
        return self._embedder.embed_one(text)


@dataclass(frozen=True, slots=True)
class Row:
    """One setting on one backend."""

    ndcg: float
    recall_100: float
    ndcg_top: float  # reranking the top --candidates
    p_top: float
    ndcg_all: float  # reranking the evaluation's 300 candidates
    recall_all: float
    p_all: float
    retrieval_ms: float  # per query, no reranker (query embedding + search + fusion)
    rerank_ms_top: float  # per query, the rerank stage alone
    rerank_ms_all: float


def _p(ours: dict[str, QueryScores], base: dict[str, QueryScores]) -> float:
    a = [ours[q].ndcg_at_10 for q in base]
    b = [base[q].ndcg_at_10 for q in base]
    return paired_randomisation_test(a, b)


def measure(
    data: BeirCollection,
    embedder: CorpusVectors,
    store: BaseVectorStore,
    reranker: RerankModel,
    candidates: int,
) -> dict[str, Row]:
    """Every setting without and with the reranker, over one ingest into ``store``."""
    deep = {name: TimedReranker(reranker) for name in SETTINGS}
    top = {name: TimedReranker(reranker) for name in SETTINGS}

    def retrievers(timed: dict[str, TimedReranker] | None) -> dict[str, VectorRetriever]:
        return {
            name: VectorRetriever(
                embedder,
                store,
                reranker=None if timed is None else timed[name],
                rerank_candidates=candidates,
                **options,  # type: ignore[arg-type]
            )
            for name, options in SETTINGS.items()
        }

    plain = retrievers(None)
    first = compare_retrieval(
        {**plain, **{f"{n}+rerank": r for n, r in retrievers(deep).items()}},
        data.queries,
        data.qrels,
        corpus=data.corpus,
    )
    at_10 = compare_retrieval(
        {**plain, **{f"{n}+rerank": r for n, r in retrievers(top).items()}},
        data.queries,
        data.qrels,
        k=10,
    )
    by_name = {s.name: s for s in first.settings}
    by_name_10 = {s.name: s for s in at_10.settings}
    queries = len(data.queries)
    rows = {}
    for name in SETTINGS:
        base, ranked = by_name[name], by_name[f"{name}+rerank"]
        base_10, ranked_10 = by_name_10[name], by_name_10[f"{name}+rerank"]
        rows[name] = Row(
            ndcg=base.scores.ndcg_at_10,
            recall_100=base.scores.recall_at_100,
            ndcg_top=ranked_10.scores.ndcg_at_10,
            p_top=_p(dict(ranked_10.per_query), dict(base_10.per_query)),
            ndcg_all=ranked.scores.ndcg_at_10,
            recall_all=ranked.scores.recall_at_100,
            p_all=_p(dict(ranked.per_query), dict(base.per_query)),
            retrieval_ms=1000 * base.search.seconds / queries,
            rerank_ms_top=1000 * top[name].seconds / queries,
            rerank_ms_all=1000 * deep[name].seconds / queries,
        )
    return rows


# ------------------------------------------------------------------ printing
_HEAD = (
    "| backend | setting | nDCG@10 | Recall@100 | + rerank top {n}: nDCG@10 (p) | "
    "+ rerank 300: nDCG@10 (p) | Recall@100 | retrieval ms/q | rerank top {n} ms/q (ratio) | "
    "rerank 300 ms/q (ratio) |"
)


def markdown_row(backend: str, setting: str, r: Row) -> str:
    top_ratio = r.rerank_ms_top / r.retrieval_ms
    all_ratio = r.rerank_ms_all / r.retrieval_ms
    return (
        f"| {backend} | {setting} | {r.ndcg:.4f} | {r.recall_100:.4f} | "
        f"{r.ndcg_top:.4f} ({r.p_top:.3f}) | {r.ndcg_all:.4f} ({r.p_all:.3f}) | "
        f"{r.recall_all:.4f} | {r.retrieval_ms:.1f} | {r.rerank_ms_top:.1f} ({top_ratio:.1f}x) | "
        f"{r.rerank_ms_all:.1f} ({all_ratio:.1f}x) |"
    )


def print_table(results: dict[str, dict[str, Row]], candidates: int) -> None:
    head = _HEAD.format(n=candidates)
    print(head)
    print(_rule(head))
    for backend, rows in results.items():
        for setting, row in rows.items():
            print(markdown_row(backend, setting, row), flush=True)


def _rule(head: str) -> str:
    return "|" + " --- |" * (head.count("|") - 1)


# ------------------------------------------------------------------ the run
def eval_command(folder: Path, model_dir: Path, candidates: int) -> str:
    """The ``pywrapai-graph eval`` call giving the in-memory figures (k 100: the 300-candidate
    columns; ``--k 10``: the top-``candidates`` column)."""
    return (
        f"PYWRAPAI_EMBEDDER__PROVIDER=local PYWRAPAI_CHUNKER__CHUNK_SIZE=100000 "
        f"PYWRAPAI_CHUNKER__OVERLAP=0 PYWRAPAI_RETRIEVER__RERANKER__PROVIDER=local "
        f"PYWRAPAI_RETRIEVER__RERANKER__MODEL_DIR={model_dir} "
        f"PYWRAPAI_RETRIEVER__RERANKER__MAX_LENGTH={MAX_LENGTH} "
        f"PYWRAPAI_RETRIEVER__RERANK_CANDIDATES={candidates} "
        f"pywrapai-graph eval {folder} --mode dense,lexical,hybrid "
        "--fusion rescored,rrf,weighted --reranker none,local [--k 10]"
    )


def backends(with_pg: bool, pg_url: str | None) -> dict[str, Callable[[], BaseVectorStore]]:
    out: dict[str, Callable[[], BaseVectorStore]] = {"in-memory": InMemoryVectorStore}
    if with_pg and pg_url is not None:
        from benchmarks.retrieval_quality import fresh_pg

        out["PostgreSQL"] = lambda: fresh_pg(pg_url)
    return out


def run(args: argparse.Namespace, pg_url: str | None) -> None:
    data = load_beir(args.folder)
    print(f"{data.name}: {len(data.corpus)} documents, {len(data.queries)} judged queries")
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = Path(args.model_dir) if args.model_dir else Path(tmp) / "cranfield-idf"
        reranker = write_test_model(model_dir, data)
        print(f"test model: {model_dir} (checked against the formula)")
        print(eval_command(Path(args.folder), model_dir, args.candidates))
        embedder = CorpusVectors(Embedder(provider="local"))
        results: dict[str, dict[str, Row]] = {}
        for name, build in backends(args.pg, pg_url).items():
            store = build()
            try:
                results[name] = measure(data, embedder, store, reranker, args.candidates)
            finally:
                store.close()
            print(f"{name}: measured", flush=True)
        print()
        print_table(results, args.candidates)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.rerank_quality")
    parser.add_argument("folder", nargs="?", default=str(DEFAULT))
    parser.add_argument("--pg", action="store_true", help="also measure PostgreSQL")
    parser.add_argument("--candidates", type=int, default=50, help="rerank_candidates (50)")
    parser.add_argument("--model-dir", help="write the test model here (kept) instead of a tmp")
    parser.add_argument(
        "--write-model", metavar="DIR", help="only write the test model into DIR (for eval)"
    )
    args = parser.parse_args(argv)
    if args.write_model:
        write_test_model(Path(args.write_model), load_beir(args.folder))
        print(eval_command(Path(args.folder), Path(args.write_model), args.candidates))
        return
    if args.pg:
        with postgres_url() as url:
            run(args, url)
    else:
        run(args, None)


if __name__ == "__main__":
    main(sys.argv[1:])
