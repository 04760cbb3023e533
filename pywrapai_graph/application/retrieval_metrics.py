"""Ranking metrics with graded relevance, as trec_eval computes them.

For one query with judgements ``rel(d)`` (documents judged ``<= 0``, or not judged, count as
non-relevant) and a ranked list ``d_1, d_2, ...``:

* ``nDCG@k = DCG@k / IDCG@k`` with ``DCG@k = Σ_{i<=k} rel(d_i) / log2(i + 1)`` (linear gain)
  and ``IDCG@k`` the DCG of the judgements sorted best first;
* ``Recall@k`` = relevant documents in the top ``k`` / all relevant documents;
* ``MRR@k`` = ``1 / i`` for the first relevant ``d_i`` with ``i <= k``, else 0.

A run's figure is the mean over the queries that have at least one relevant document; a
query the run has no list for scores 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "METRICS",
    "Qrels",
    "QueryScores",
    "RetrievalScores",
    "mean_scores",
    "mrr_at",
    "ndcg_at",
    "recall_at",
    "score_queries",
    "score_run",
]

#: query id -> document id -> graded relevance (higher is better; <= 0 not relevant)
Qrels = Mapping[str, Mapping[str, int]]
#: The metrics of a query and of a run, by field name.
METRICS = ("ndcg_at_10", "recall_at_10", "recall_at_100", "mrr_at_10")


def ndcg_at(ranked: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    """Normalised discounted cumulative gain of the top ``k``."""
    gains = sorted((g for g in judged.values() if g > 0), reverse=True)[:k]
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    if ideal == 0:
        return 0.0
    dcg = sum(max(judged.get(d, 0), 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    return dcg / ideal


def recall_at(ranked: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    """Share of the relevant documents found in the top ``k``."""
    relevant = {d for d, g in judged.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked[:k])) / len(relevant)


def mrr_at(ranked: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    """Reciprocal rank of the first relevant document in the top ``k`` (0 if none)."""
    for i, d in enumerate(ranked[:k], start=1):
        if judged.get(d, 0) > 0:
            return 1.0 / i
    return 0.0


@dataclass(frozen=True, slots=True)
class QueryScores:
    """The metrics of one query's ranked list."""

    ndcg_at_10: float
    recall_at_10: float
    recall_at_100: float
    mrr_at_10: float

    def metric(self, name: str) -> float:
        """The metric called ``name`` (one of :data:`METRICS`)."""
        value: float = getattr(self, name)
        return value


@dataclass(frozen=True, slots=True)
class RetrievalScores:
    """Mean metrics over ``queries`` judged queries."""

    ndcg_at_10: float
    recall_at_10: float
    recall_at_100: float
    mrr_at_10: float
    queries: int


def score_queries(run: Mapping[str, Sequence[str]], qrels: Qrels) -> dict[str, QueryScores]:
    """Each judged query's metrics (query id -> scores): the queries of ``qrels`` with at least
    one relevant document, in ``qrels`` order; a query ``run`` has no list for scores 0."""
    scores: dict[str, QueryScores] = {}
    for query, judgements in qrels.items():
        if not any(g > 0 for g in judgements.values()):
            continue
        ranked = run.get(query, ())
        scores[query] = QueryScores(
            ndcg_at(ranked, judgements, 10),
            recall_at(ranked, judgements, 10),
            recall_at(ranked, judgements, 100),
            mrr_at(ranked, judgements, 10),
        )
    return scores


def mean_scores(per_query: Mapping[str, QueryScores]) -> RetrievalScores:
    """The mean of per-query scores (all 0 over no query)."""
    n = len(per_query)
    if n == 0:
        return RetrievalScores(0.0, 0.0, 0.0, 0.0, 0)
    ndcg, recall10, recall100, mrr = (
        sum(s.metric(name) for s in per_query.values()) / n for name in METRICS
    )
    return RetrievalScores(ndcg, recall10, recall100, mrr, queries=n)


def score_run(run: Mapping[str, Sequence[str]], qrels: Qrels) -> RetrievalScores:
    """The mean metrics of ``run`` (query id -> ranked document ids) against ``qrels``."""
    return mean_scores(score_queries(run, qrels))
