"""evaluate_retrieval: how well a retriever finds the judged documents of a test collection."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from pywrapai_graph.application.retrieval_metrics import Qrels, RetrievalScores, score_run
from pywrapai_graph.application.token_tracker import TokenTracker
from pywrapai_graph.domain import Document, ScoredChunk
from pywrapai_graph.errors import InvalidArgumentError
from pywrapai_graph.ports import TextSplitter

if TYPE_CHECKING:
    from pywrapai_graph.application.vector_retriever import VectorRetriever

__all__ = ["EvalProgress", "RetrievalEvaluation", "evaluate_retrieval", "fold_to_documents"]

#: Called with (stage, done, total); stage is "ingest" or "queries".
EvalProgress = Callable[[str, int, int], None]


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


def fold_to_documents(hits: Sequence[ScoredChunk], k: int) -> list[str]:
    """Document ids of chunk hits, best first: a document ranks by its best chunk."""
    best: dict[str, float] = {}
    for hit in hits:
        doc = hit.chunk.doc_id
        if doc not in best or hit.score > best[doc]:
            best[doc] = hit.score
    return sorted(best, key=lambda d: -best[d])[:k]


class _Usage:
    """The embedder's recorded tokens, cost and truncations, to take differences of."""

    def __init__(self, embedder: object) -> None:
        tracker = getattr(embedder, "tokens", None)
        self._tracker = tracker if isinstance(tracker, TokenTracker) else None
        self._embedder = embedder

    def now(self) -> tuple[int, float, int]:
        truncated = getattr(self._embedder, "truncated_texts", 0)
        if self._tracker is None:
            return 0, 0.0, truncated if isinstance(truncated, int) else 0
        return (
            self._tracker.total_input_tokens,
            self._tracker.total_cost,
            truncated if isinstance(truncated, int) else 0,
        )


def evaluate_retrieval(
    retriever: VectorRetriever,
    queries: Mapping[str, str],
    qrels: Qrels,
    *,
    corpus: Sequence[Document] | None = None,
    chunker: TextSplitter | None = None,
    k: int = 100,
    chunks_per_document: int = 3,
    progress: EvalProgress | None = None,
) -> RetrievalEvaluation:
    """Ingest ``corpus`` (unless None: the store is used as it is), run every query, score.

    Each query retrieves ``k * chunks_per_document`` chunks, which are folded to document
    ids (a document scores by its best chunk) and cut to ``k`` documents.

    Args:
        retriever: the pipeline to measure (its mode, embedder and store).
        queries: query id -> text.
        qrels: query id -> document id -> graded relevance.
        corpus: documents to ingest first (their ids are the ids ``qrels`` names).
        chunker: how to split them (None: one chunk per document).
        k: documents ranked per query (at least 100 for Recall@100 to mean what it says).
        chunks_per_document: over-fetch factor before folding chunks to documents.
        progress: told (stage, done, total) as ingest and queries advance.

    Raises:
        ValueError: k or chunks_per_document < 1.
    """
    if k < 1 or chunks_per_document < 1:
        raise InvalidArgumentError(
            f"k and chunks_per_document must be >= 1, got {k}, {chunks_per_document}"
        )
    usage = _Usage(retriever.embedder)
    tokens0, cost0, truncated0 = usage.now()
    chunks = 0
    started = time.perf_counter()
    if corpus is not None:

        def ingest_progress(done: int, total: int) -> None:
            if progress is not None:
                progress("ingest", done, total)

        chunks = retriever.add_documents(corpus, chunker, progress=ingest_progress)
    ingested = time.perf_counter()
    run: dict[str, list[str]] = {}
    for i, (query_id, text) in enumerate(queries.items(), start=1):
        hits = retriever.retrieve(text, k=k * chunks_per_document)
        run[query_id] = fold_to_documents(hits, k)
        if progress is not None:
            progress("queries", i, len(queries))
    searched = time.perf_counter()
    tokens1, cost1, truncated1 = usage.now()
    return RetrievalEvaluation(
        scores=score_run(run, qrels),
        mode=retriever.mode,
        k=k,
        documents=len(corpus) if corpus is not None else 0,
        chunks=chunks,
        ingest_seconds=ingested - started,
        search_seconds=searched - ingested,
        embedding_tokens=tokens1 - tokens0,
        embedding_cost_usd=cost1 - cost0,
        truncated_texts=truncated1 - truncated0,
    )
