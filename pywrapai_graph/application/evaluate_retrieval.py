"""evaluate_retrieval: how well a retriever finds the judged documents of a test collection."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from pywrapai_graph.application.compare_retrieval import (
    EvalProgress,
    RetrievalEvaluation,
    compare_retrieval,
    fold_to_documents,
)
from pywrapai_graph.application.retrieval_metrics import Qrels
from pywrapai_graph.domain import Document
from pywrapai_graph.ports import TextSplitter

if TYPE_CHECKING:
    from pywrapai_graph.application.vector_retriever import VectorRetriever

__all__ = ["EvalProgress", "RetrievalEvaluation", "evaluate_retrieval", "fold_to_documents"]


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
    ids (a document scores by its best chunk) and cut to ``k`` documents. To compare
    several settings over one ingest, with per-query scores and paired p-values, use
    :func:`~pywrapai_graph.application.compare_retrieval.compare_retrieval`.

    Args:
        retriever: the pipeline to measure (its mode, embedder and store).
        queries: query id -> text.
        qrels: query id -> document id -> graded relevance.
        corpus: documents to ingest first (their ids are the ids ``qrels`` names).
        chunker: how to split them (None: one chunk per document).
        k: documents ranked per query (at least 100 for Recall@100 to mean what it says).
        chunks_per_document: over-fetch factor before folding chunks to documents.
        progress: told (stage, done, total) as ingest and queries advance; stage is
            "ingest" or "queries".

    Raises:
        ValueError: k or chunks_per_document < 1.
    """
    comparison = compare_retrieval(
        {retriever.mode: retriever},
        queries,
        qrels,
        corpus=corpus,
        chunker=chunker,
        k=k,
        chunks_per_document=chunks_per_document,
        progress=progress,
    )
    return comparison.evaluation(0)
