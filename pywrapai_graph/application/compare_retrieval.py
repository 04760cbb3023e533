"""compare_retrieval: several retrieval settings over one ingested corpus, scored per query.

The corpus is chunked and embedded once; each setting (a retriever over the same embedder
and store: another mode, fusion, reranker...) then answers every query. Each setting's
per-query scores are kept for significance tests, and each is compared with the first.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from functools import partial
from typing import TYPE_CHECKING, TypeVar

from pywrapai_graph.application.retrieval_metrics import (
    METRICS,
    Qrels,
    QueryScores,
    RetrievalScores,
    mean_scores,
    score_queries,
)
from pywrapai_graph.application.significance import (
    DEFAULT_ROUNDS,
    DEFAULT_SEED,
    paired_randomisation_test,
    paired_t_test,
)
from pywrapai_graph.application.token_tracker import TokenTracker
from pywrapai_graph.domain import Document, ScoredChunk
from pywrapai_graph.errors import InvalidArgumentError
from pywrapai_graph.ports import TextSplitter

if TYPE_CHECKING:
    from pywrapai_graph.application.vector_retriever import VectorRetriever

__all__ = [
    "EvalProgress",
    "RetrievalComparison",
    "RetrievalEvaluation",
    "SettingEvaluation",
    "Spent",
    "compare_retrieval",
    "fold_to_documents",
]

T = TypeVar("T")

#: Called with (stage, done, total); stage is "ingest", or "queries" / the setting's name.
EvalProgress = Callable[[str, int, int], None]


@dataclass(frozen=True, slots=True)
class Spent:
    """Wall time of a step and what the embedder's ledger recorded meanwhile (every call
    recorded in that ledger: embeddings, and chat or rerank calls that share it):
    ``embedding_tokens`` its input tokens (units), ``calls`` its records."""

    seconds: float = 0.0
    embedding_tokens: int = 0
    cost_usd: float = 0.0
    truncated_texts: int = 0
    calls: int = 0

    def __add__(self, other: Spent) -> Spent:
        return Spent(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(Spent)))


@dataclass(frozen=True, slots=True)
class RetrievalEvaluation:
    """Scores, and what producing them cost.

    Attributes:
        scores: nDCG@10, Recall@10, Recall@100, MRR@10 (see ``retrieval_metrics``).
        mode: the retriever's mode; k: documents ranked per query.
        documents, chunks: what was ingested (0 when an existing store was reused).
        ingest_seconds, search_seconds: wall time of ingesting and of answering every query.
        embedding_tokens, embedding_cost_usd: what the embedder recorded meanwhile.
        truncated_texts: texts the embedder truncated (local models), meanwhile.
    """

    scores: RetrievalScores
    mode: str
    k: int
    documents: int
    chunks: int
    ingest_seconds: float
    search_seconds: float
    embedding_tokens: int
    embedding_cost_usd: float
    truncated_texts: int

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class SettingEvaluation:
    """One setting's scores over the shared corpus.

    Attributes:
        name: the setting's name (as the caller gave it).
        mode: its retriever's mode.
        scores: the mean metrics; per_query: each judged query's metrics.
        search: the time and cost of answering every query (query embeddings, reranking).
        p_values: metric name -> paired randomisation p-value against the first setting
            (empty for the first setting itself).
        t_test_p_values: the same with the paired t-test.
    """

    name: str
    mode: str
    scores: RetrievalScores
    per_query: Mapping[str, QueryScores] = field(repr=False)
    search: Spent
    p_values: Mapping[str, float]
    t_test_p_values: Mapping[str, float]


@dataclass(frozen=True, slots=True)
class RetrievalComparison:
    """Settings compared over one ingest.

    Attributes:
        k: documents ranked per query.
        documents, chunks: what was ingested (0 when an existing store was reused).
        ingest: the time and cost of ingesting the corpus, once for every setting.
        settings: one evaluation per setting, in the caller's order; the first is the
            baseline of the p-values.
    """

    k: int
    documents: int
    chunks: int
    ingest: Spent
    settings: tuple[SettingEvaluation, ...]

    def evaluation(self, index: int = 0) -> RetrievalEvaluation:
        """The ``index``-th setting as a stand-alone evaluation (ingest included)."""
        setting = self.settings[index]
        spent = self.ingest + setting.search
        return RetrievalEvaluation(
            scores=setting.scores,
            mode=setting.mode,
            k=self.k,
            documents=self.documents,
            chunks=self.chunks,
            ingest_seconds=self.ingest.seconds,
            search_seconds=setting.search.seconds,
            embedding_tokens=spent.embedding_tokens,
            embedding_cost_usd=spent.cost_usd,
            truncated_texts=spent.truncated_texts,
        )


def fold_to_documents(hits: Sequence[ScoredChunk], k: int) -> list[str]:
    """Document ids of chunk hits, best first: a document ranks by its best chunk."""
    best: dict[str, float] = {}
    for hit in hits:
        doc = hit.chunk.doc_id
        if doc not in best or hit.score > best[doc]:
            best[doc] = hit.score
    return sorted(best, key=lambda d: -best[d])[:k]


def _spend(embedder: object, work: Callable[[], T]) -> tuple[T, Spent]:
    """Run ``work``; its result and what it spent, read from the embedder's ledger."""
    tracker = getattr(embedder, "tokens", None)
    ledger = tracker if isinstance(tracker, TokenTracker) else None

    def now() -> tuple[int, float, int, int]:
        truncated = getattr(embedder, "truncated_texts", 0)
        counted = truncated if isinstance(truncated, int) else 0
        if ledger is None:
            return 0, 0.0, counted, 0
        return ledger.total_input_tokens, ledger.total_cost, counted, ledger.total_calls

    before = now()
    started = time.perf_counter()
    result = work()
    seconds = time.perf_counter() - started
    after = now()
    tokens, cost, truncated, calls = (b - a for a, b in zip(before, after, strict=True))
    return result, Spent(seconds, int(tokens), cost, int(truncated), int(calls))


def _rank(
    retriever: VectorRetriever,
    queries: Mapping[str, str],
    depth: tuple[int, int],
    report: Callable[[int, int], None],
) -> dict[str, list[str]]:
    k, chunks_per_document = depth
    run: dict[str, list[str]] = {}
    for i, (query_id, text) in enumerate(queries.items(), start=1):
        run[query_id] = fold_to_documents(retriever.retrieve(text, k=k * chunks_per_document), k)
        report(i, len(queries))
    return run


def _p_values(
    baseline: Mapping[str, QueryScores] | None,
    other: Mapping[str, QueryScores],
    seed: int,
    rounds: int,
) -> tuple[dict[str, float], dict[str, float]]:
    """(randomisation, t-test) p-values of ``other`` against ``baseline``, per metric."""
    if not baseline:
        return {}, {}
    randomisation: dict[str, float] = {}
    t_test: dict[str, float] = {}
    for metric in METRICS:
        theirs = [other[q].metric(metric) for q in baseline]
        ours = [baseline[q].metric(metric) for q in baseline]
        randomisation[metric] = paired_randomisation_test(theirs, ours, rounds=rounds, seed=seed)
        t_test[metric] = paired_t_test(theirs, ours)
    return randomisation, t_test


def compare_retrieval(
    retrievers: Mapping[str, VectorRetriever],
    queries: Mapping[str, str],
    qrels: Qrels,
    *,
    corpus: Sequence[Document] | None = None,
    chunker: TextSplitter | None = None,
    k: int = 100,
    chunks_per_document: int = 3,
    progress: EvalProgress | None = None,
    rounds: int = DEFAULT_ROUNDS,
    seed: int = DEFAULT_SEED,
) -> RetrievalComparison:
    """Ingest ``corpus`` once (unless None: the store is used as it is), then run every query
    through each retriever and score it; each setting after the first gets paired p-values
    against the first.

    Each query retrieves ``k * chunks_per_document`` chunks, which are folded to document
    ids (a document scores by its best chunk) and cut to ``k`` documents.

    Args:
        retrievers: setting name -> retriever; all over the same embedder and store.
        queries: query id -> text.
        qrels: query id -> document id -> graded relevance.
        corpus: documents to ingest first (their ids are the ids ``qrels`` names).
        chunker: how to split them (None: one chunk per document).
        k: documents ranked per query (at least 100 for Recall@100 to mean what it says).
        chunks_per_document: over-fetch factor before folding chunks to documents.
        progress: told (stage, done, total) as ingest and each setting's queries advance.
        rounds, seed: of the paired randomisation test.

    Raises:
        InvalidArgumentError: no retriever, retrievers over different embedders or stores,
            or k or chunks_per_document < 1.
    """
    if k < 1 or chunks_per_document < 1:
        raise InvalidArgumentError(
            f"k and chunks_per_document must be >= 1, got {k}, {chunks_per_document}"
        )
    named = list(retrievers.items())
    if not named:
        raise InvalidArgumentError("compare_retrieval needs at least one retriever")
    first = named[0][1]
    if any(r.store is not first.store or r.embedder is not first.embedder for _, r in named):
        raise InvalidArgumentError(
            "compare_retrieval's retrievers must share one embedder and one store (the "
            "corpus is ingested once, through the first)"
        )
    tell = progress or (lambda stage, done, total: None)
    chunks, ingest = 0, Spent()
    if corpus is not None:
        add = partial(first.add_documents, corpus, chunker, progress=partial(tell, "ingest"))
        chunks, ingest = _spend(first.embedder, add)
    stage = "queries" if len(named) == 1 else None
    settings: list[SettingEvaluation] = []
    for name, retriever in named:
        report = partial(tell, stage or name)
        depth = (k, chunks_per_document)
        run, search = _spend(retriever.embedder, partial(_rank, retriever, queries, depth, report))
        per_query = score_queries(run, qrels)
        base = settings[0].per_query if settings else None
        p_values, t_test = _p_values(base, per_query, seed, rounds)
        scores = mean_scores(per_query)
        settings.append(
            SettingEvaluation(name, retriever.mode, scores, per_query, search, p_values, t_test)
        )
    documents = len(corpus) if corpus is not None else 0
    return RetrievalComparison(k, documents, chunks, ingest, tuple(settings))
