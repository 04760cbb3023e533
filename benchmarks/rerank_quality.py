"""Reranking on Cranfield: each retrieval mode and hybrid fusion, without and with the reranker
port's test model, and what the reranking stage costs next to retrieval in the same run.

Run: .venv/bin/python -m benchmarks.rerank_quality [FOLDER] [--pg] [--candidates N] [--deep]
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
runs without the reranker (100 documents ranked: nDCG@10, Recall@100) and with it:

- on the top ``--candidates`` (50): the evaluation ranks 10 documents, so the retriever fetches
  50 candidates and the reranker re-orders them (nDCG@10; Recall@100 does not apply);
- ``--deep`` (slow: six times the pairs): also on the evaluation's 300 candidates (100
  documents, 3 chunks each, as ``eval --k 100`` asks; the retriever hands the reranker
  max(asked, rerank_candidates) hits): nDCG@10 and Recall@100.

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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks._postgres import postgres_url
from benchmarks.retrieval_quality import SETTINGS, Precomputed, fresh_pg
from pywrapai_graph import Embedder, InMemoryVectorStore, VectorRetriever
from pywrapai_graph.adapters.sources.beir import BeirCollection, load_beir
from pywrapai_graph.application.compare_retrieval import SettingEvaluation, compare_retrieval
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


class CorpusVectors(Precomputed):
    """retrieval_quality's Precomputed, starting empty: it remembers the vectors of the corpus
    batches it embeds (so a second backend ingests the same vectors without embedding again),
    while queries (``embed_one``) are embedded live every time, as a deployed retriever does."""

    def __init__(self, embedder: Embedder) -> None:
        super().__init__(embedder, ())

    def embed_one(self, text: str) -> list[float]:
        return self._embedder.embed_one(text)


@dataclass(frozen=True, slots=True)
class Reranked:
    """A setting with the reranker: nDCG@10, Recall@100 (None: fewer than 100 documents were
    ranked), p of nDCG@10 against the setting without it, the rerank stage's ms per query."""

    ndcg: float
    recall_100: float | None
    p: float
    ms: float


@dataclass(frozen=True, slots=True)
class Row:
    """One setting on one backend: without the reranker (query embedding + search + fusion
    in ``retrieval_ms`` per query), with it on the top candidates, and (``--deep``) on the
    evaluation's 300."""

    ndcg: float
    recall_100: float
    retrieval_ms: float
    top: Reranked
    deep: Reranked | None


def _p(ours: Mapping[str, QueryScores], base: Mapping[str, QueryScores]) -> float:
    a = [ours[q].ndcg_at_10 for q in base]
    b = [base[q].ndcg_at_10 for q in base]
    return paired_randomisation_test(a, b)


def _reranked(
    setting: SettingEvaluation, base: SettingEvaluation, timed: TimedReranker, deep: bool
) -> Reranked:
    queries = len(setting.per_query)
    return Reranked(
        ndcg=setting.scores.ndcg_at_10,
        recall_100=setting.scores.recall_at_100 if deep else None,
        p=_p(setting.per_query, base.per_query),
        ms=1000 * timed.seconds / queries,
    )


def measure(
    data: BeirCollection,
    embedder: CorpusVectors,
    store: BaseVectorStore,
    reranker: RerankModel,
    options: argparse.Namespace,
) -> dict[str, Row]:
    """Every setting without and with the reranker, over one ingest into ``store``: without
    it (and with it on 300 candidates, ``--deep``) at k 100; with it on the top
    ``--candidates`` at k 10 (the retriever then fetches ``--candidates``)."""
    timers = {(name, depth): TimedReranker(reranker) for name in SETTINGS for depth in (0, 1)}

    def retrievers(depth: int | None) -> dict[str, VectorRetriever]:
        return {
            name if depth is None else f"{name}+rerank": VectorRetriever(
                embedder,
                store,
                reranker=None if depth is None else timers[name, depth],
                rerank_candidates=options.candidates,
                **settings,
            )
            for name, settings in SETTINGS.items()
        }

    at_100 = {**retrievers(None), **(retrievers(1) if options.deep else {})}
    first = compare_retrieval(at_100, data.queries, data.qrels, corpus=data.corpus)
    at_10 = compare_retrieval(retrievers(0), data.queries, data.qrels, k=10)
    wide = {s.name: s for s in first.settings}
    narrow = {s.name: s for s in at_10.settings}
    rows = {}
    for name in SETTINGS:
        base = wide[name]
        deep = wide.get(f"{name}+rerank")
        rows[name] = Row(
            ndcg=base.scores.ndcg_at_10,
            recall_100=base.scores.recall_at_100,
            retrieval_ms=1000 * base.search.seconds / len(base.per_query),
            top=_reranked(narrow[f"{name}+rerank"], base, timers[name, 0], deep=False),
            deep=None if deep is None else _reranked(deep, base, timers[name, 1], deep=True),
        )
    return rows


# ------------------------------------------------------------------ printing
def header(candidates: int, deep: bool) -> str:
    cells = [
        "backend",
        "setting",
        "nDCG@10",
        "Recall@100",
        "retrieval ms/query",
        f"+ rerank top {candidates}: nDCG@10",
        "p",
        "rerank ms/query (x retrieval)",
    ]
    if deep:
        cells += ["+ rerank 300: nDCG@10", "p", "Recall@100", "rerank ms/query (x retrieval)"]
    head = "| " + " | ".join(cells) + " |"
    return head + "\n|" + " --- |" * len(cells)


def _cells(r: Reranked, retrieval_ms: float) -> list[str]:
    recall = [] if r.recall_100 is None else [f"{r.recall_100:.4f}"]
    ratio = r.ms / retrieval_ms
    return [f"{r.ndcg:.4f}", f"{r.p:.4f}", *recall, f"{r.ms:.1f} ({ratio:.1f}x)"]


def markdown_row(backend: str, setting: str, r: Row) -> str:
    cells = [backend, setting, f"{r.ndcg:.4f}", f"{r.recall_100:.4f}", f"{r.retrieval_ms:.1f}"]
    cells += _cells(r.top, r.retrieval_ms)
    if r.deep is not None:
        cells += _cells(r.deep, r.retrieval_ms)
    return "| " + " | ".join(cells) + " |"


# ------------------------------------------------------------------ the run
def eval_command(folder: Path, model_dir: Path, candidates: int) -> str:
    """The ``pywrapai-graph eval`` call giving the in-memory figures (``--k 10``: the
    top-``candidates`` column; k 100: the columns without the reranker, and ``--deep``'s)."""
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
        print(header(args.candidates, args.deep), flush=True)
        for name, build in backends(args.pg, pg_url).items():
            store = build()
            try:
                rows = measure(data, embedder, store, reranker, args)
            finally:
                store.close()
            for setting, row in rows.items():
                print(markdown_row(name, setting, row), flush=True)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.rerank_quality")
    parser.add_argument("folder", nargs="?", default=str(DEFAULT))
    parser.add_argument("--pg", action="store_true", help="also measure PostgreSQL")
    parser.add_argument("--candidates", type=int, default=50, help="rerank_candidates (50)")
    parser.add_argument(
        "--deep", action="store_true", help="also rerank the evaluation's 300 candidates (slow)"
    )
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
