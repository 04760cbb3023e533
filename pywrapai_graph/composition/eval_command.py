"""``pywrapai-graph eval FOLDER``: retrieval quality of the configured pipeline on a BEIR folder."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, TextIO

from pywrapai_graph.composition.factories import make_retriever
from pywrapai_graph.errors import InvalidStateError

if TYPE_CHECKING:
    from pywrapai_graph.application.evaluate_retrieval import RetrievalEvaluation
    from pywrapai_graph.composition.object_graph import ObjectGraph
    from pywrapai_graph.ports import BaseVectorStore

__all__ = ["add_eval_parser", "run_eval"]


def add_eval_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``eval`` sub-command's arguments."""
    ev = sub.add_parser(
        "eval",
        help="measure retrieval on a BEIR-layout test collection",
        description="Ingest FOLDER/corpus.jsonl with the configured embedder and chunker into "
        "a fresh in-memory store (or, with --reuse-store, search the configured store as it "
        "is), run every query of FOLDER/queries.jsonl and score the ranked documents against "
        "FOLDER/qrels.tsv: nDCG@10, Recall@10, Recall@100, MRR@10 (graded relevance), with "
        "time and embedding cost. Chunk hits fold to their document (best chunk).",
    )
    ev.add_argument("folder", help="a folder with corpus.jsonl, queries.jsonl, qrels.tsv")
    ev.add_argument(
        "--mode",
        choices=["dense", "lexical", "hybrid"],
        help="retrieval mode (default: retriever.mode of the configuration)",
    )
    ev.add_argument("--k", type=int, default=100, help="documents ranked per query (100)")
    ev.add_argument("--json", action="store_true", help="print the result as JSON")
    ev.add_argument(
        "--reuse-store",
        action="store_true",
        help="search the configured store without ingesting (it must hold the corpus)",
    )


class _Bar:
    """A one-line progress bar per stage on a terminal; silent otherwise."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.live = stream.isatty()

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.live or total == 0:
            return
        filled = 30 * done // total
        self.stream.write(f"\r{stage:8} [{'#' * filled}{'.' * (30 - filled)}] {done}/{total}")
        if done == total:
            self.stream.write("\n")
        self.stream.flush()


def _report(result: RetrievalEvaluation, name: str, queries: int, embedder: str) -> str:
    s = result.scores
    ingest = (
        f"ingest {result.ingest_seconds:.1f} s ({result.documents} documents, "
        f"{result.chunks} chunks, {result.chunks / max(result.ingest_seconds, 1e-9):.1f} "
        "chunks/s)"
        if result.documents
        else "ingest skipped (store reused)"
    )
    return (
        f"{name}: {queries} queries ({s.queries} judged), mode {result.mode}, "
        f"embedder {embedder}, k {result.k}\n"
        f"  nDCG@10     {s.ndcg_at_10:.4f}\n"
        f"  Recall@10   {s.recall_at_10:.4f}\n"
        f"  Recall@100  {s.recall_at_100:.4f}\n"
        f"  MRR@10      {s.mrr_at_10:.4f}\n"
        f"  {ingest}; search {result.search_seconds:.1f} s "
        f"({queries / max(result.search_seconds, 1e-9):.1f} queries/s)\n"
        f"  embedding {result.embedding_tokens} tokens, ${result.embedding_cost_usd:.6f}"
        f"; {result.truncated_texts} texts truncated\n"
    )


def run_eval(container: ObjectGraph, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run ``eval``; returns the exit code."""
    # imported here: the other commands never load the BEIR reader or the evaluation
    from pywrapai_graph.adapters.sources.beir import load_beir
    from pywrapai_graph.adapters.vectorstores.in_memory import InMemoryVectorStore
    from pywrapai_graph.application.evaluate_retrieval import evaluate_retrieval

    collection = load_beir(args.folder)
    settings = container.settings()
    if args.mode is not None:
        retriever_settings = settings.retriever.model_copy(update={"mode": args.mode})
        settings = settings.model_copy(update={"retriever": retriever_settings})
    embedder = container.embedder()
    store: BaseVectorStore = container.vector_store() if args.reuse_store else InMemoryVectorStore()
    if args.reuse_store and len(store) == 0:
        store.close()
        raise InvalidStateError(
            "eval --reuse-store: the configured store holds no chunks, so every query would "
            "score 0 (an in-memory store starts empty in each process). Ingest the corpus "
            "into a persistent store first, or run eval without --reuse-store to ingest it "
            "into a fresh one."
        )
    retriever = make_retriever(settings, embedder, store, container.hooks())
    result = evaluate_retrieval(
        retriever,
        collection.queries,
        collection.qrels,
        corpus=None if args.reuse_store else collection.corpus,
        chunker=container.chunker(),
        k=args.k,
        progress=_Bar(err),
    )
    if args.json:
        body = {
            "collection": collection.name,
            "embedder": {"provider": embedder.provider, "model": embedder.model},
            **result.as_dict(),
        }
        out.write(json.dumps(body, indent=2) + "\n")
    else:
        name = f"{embedder.provider}/{embedder.model}"
        out.write(_report(result, collection.name, len(collection.queries), name))
    store.close()
    return 0
