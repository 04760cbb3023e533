"""``pywrapai-graph eval FOLDER``: retrieval quality of the configured pipeline on a BEIR folder."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, TextIO

from pywrapai_graph.application.significance import DEFAULT_ROUNDS, DEFAULT_SEED
from pywrapai_graph.composition.backends import backend_entry
from pywrapai_graph.composition.eval_settings import EVAL_AXES, EvalSetting, eval_settings
from pywrapai_graph.composition.factories import make_reranker, make_retriever
from pywrapai_graph.errors import ConfigurationError, InvalidStateError
from pywrapai_graph.ports.store_inputs import lexical_refusal

if TYPE_CHECKING:
    from pywrapai_graph.adapters.sources.beir import BeirCollection
    from pywrapai_graph.application.compare_retrieval import (
        RetrievalComparison,
        RetrievalEvaluation,
        SettingEvaluation,
    )
    from pywrapai_graph.composition.embedder import Embedder
    from pywrapai_graph.composition.object_graph import ObjectGraph
    from pywrapai_graph.composition.reranker import RerankModel
    from pywrapai_graph.ports import BaseVectorStore

__all__ = ["ProgressBar", "add_eval_parser", "run_eval"]


def add_eval_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``eval`` sub-command's arguments."""
    ev = sub.add_parser(
        "eval",
        help="measure retrieval on BEIR-layout test collections, comparing settings",
        description="Ingest FOLDER/corpus.jsonl with the configured embedder and chunker into "
        "a fresh in-memory store (or, with --reuse-store, search the configured store as it "
        "is), run every query of FOLDER/queries.jsonl and score the ranked documents against "
        "FOLDER/qrels.tsv: nDCG@10, Recall@10, Recall@100, MRR@10 (graded relevance), with "
        "time and embedding cost. Chunk hits fold to their document (best chunk). Several "
        "--mode/--fusion values compare settings over ONE ingest: a row per setting with its "
        "query cost, and a paired randomisation test of each setting against the first.",
    )
    ev.add_argument("folder", nargs="+", help="folders with corpus.jsonl, queries.jsonl, qrels.tsv")
    for axis in EVAL_AXES:
        ev.add_argument(axis.option, dest=axis.field, metavar="LIST", help=axis.help)
    ev.add_argument("--k", type=int, default=100, help="documents ranked per query (100)")
    ev.add_argument(
        "--json",
        action="store_true",
        help="print JSON: one folder and one setting keep the single-evaluation object; "
        'otherwise {"embedder", "k", "significance", "collections": [...]}',
    )
    ev.add_argument(
        "--per-query",
        metavar="PATH",
        help="write each query's scores as JSON lines (collection, setting, query, metrics)",
    )
    ev.add_argument(
        "--reuse-store",
        action="store_true",
        help="search the configured store without ingesting (it must hold the corpus)",
    )


class ProgressBar:
    """A one-line progress bar per stage on a terminal; silent otherwise.

    Args:
        stream: where the bar is drawn (a terminal, or nothing is drawn).
        label_width: the width the stage's name is padded to.
    """

    def __init__(self, stream: TextIO, label_width: int = 0) -> None:
        self.stream = stream
        self.label_width = label_width
        self.live = stream.isatty()

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.live or total == 0:
            return
        filled = 30 * done // total
        label = f"{stage:{self.label_width}}"
        self.stream.write(f"\r{label} [{'#' * filled}{'.' * (30 - filled)}] {done}/{total}")
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


def _table(comparison: RetrievalComparison, name: str, queries: int, embedder: str) -> str:
    """Several settings of one collection: a row each, p-values against the first."""
    i = comparison.ingest
    ingest = (
        f"ingest once {i.seconds:.1f} s ({comparison.documents} documents, "
        f"{comparison.chunks} chunks), embedding {i.embedding_tokens} tokens, "
        f"${i.cost_usd:.6f}; {i.truncated_texts} texts truncated"
        if comparison.documents
        else "ingest skipped (store reused)"
    )
    width = max(12, *(len(s.name) for s in comparison.settings))
    lines = [
        f"{name}: {queries} queries ({comparison.settings[0].scores.queries} judged), "
        f"embedder {embedder}, k {comparison.k}",
        f"  {ingest}",
        f"  {'setting':<{width}} nDCG@10  Recall@10 Recall@100 MRR@10  p(nDCG)  t-test p "
        "search s  query tokens  cost $",
    ]
    for setting in comparison.settings:
        s = setting.scores
        p = _p(setting.p_values.get("ndcg_at_10"))
        t = _p(setting.t_test_p_values.get("ndcg_at_10"))
        lines.append(
            f"  {setting.name:<{width}} {s.ndcg_at_10:.4f}   {s.recall_at_10:.4f}    "
            f"{s.recall_at_100:.4f}     {s.mrr_at_10:.4f}  "
            f"{p:<8} {t:<8} {setting.search.seconds:8.1f}  "
            f"{setting.search.embedding_tokens:12d}  {setting.search.cost_usd:.6f}"
        )
    lines.append(
        f"  p of nDCG@10 against {comparison.settings[0].name}: paired randomisation test "
        f"({DEFAULT_ROUNDS} rounds, seed {DEFAULT_SEED}) and paired t-test"
    )
    return "\n".join(lines) + "\n"


def _p(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _setting_json(setting: SettingEvaluation, values: Mapping[str, object]) -> dict[str, object]:
    return {
        "setting": setting.name,
        "values": dict(values),
        "mode": setting.mode,
        "scores": asdict(setting.scores),
        "search": asdict(setting.search),
        "p_values": dict(setting.p_values),
        "t_test_p_values": dict(setting.t_test_p_values),
    }


def _comparisons_json(
    results: Sequence[tuple[BeirCollection, RetrievalComparison]],
    settings: Sequence[EvalSetting],
    embedder: Embedder,
    k: int,
) -> dict[str, object]:
    """The documented JSON of several settings or collections."""
    return {
        "embedder": {"provider": embedder.provider, "model": embedder.model},
        "k": k,
        "significance": {
            "test": "paired randomisation (p_values); paired t-test (t_test_p_values)",
            "against": settings[0].name,
            "rounds": DEFAULT_ROUNDS,
            "seed": DEFAULT_SEED,
        },
        "collections": [
            {
                "collection": collection.name,
                "queries": len(collection.queries),
                "documents": comparison.documents,
                "chunks": comparison.chunks,
                "ingest": asdict(comparison.ingest),
                "settings": [
                    _setting_json(result, setting.values)
                    for result, setting in zip(comparison.settings, settings, strict=True)
                ],
            }
            for collection, comparison in results
        ],
    }


def _write_per_query(
    path: str, results: Sequence[tuple[BeirCollection, RetrievalComparison]]
) -> None:
    """Each judged query's scores, one JSON line per (collection, setting, query)."""
    lines = [
        json.dumps(
            {"collection": collection.name, "setting": setting.name, "query": query}
            | asdict(scores)
        )
        + "\n"
        for collection, comparison in results
        for setting in comparison.settings
        for query, scores in setting.per_query.items()
    ]
    tmp = f"{path}.tmp"  # written whole, then moved into place
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.writelines(lines)
    os.replace(tmp, path)


def _compare(
    container: ObjectGraph,
    args: argparse.Namespace,
    collection: BeirCollection,
    settings: Sequence[EvalSetting],
    progress: ProgressBar,
) -> RetrievalComparison:
    """Ingest ``collection`` once (unless --reuse-store) and run each setting over it."""
    from pywrapai_graph.adapters.vectorstores.memory.store import InMemoryVectorStore
    from pywrapai_graph.application.compare_retrieval import compare_retrieval

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
    rerankers: dict[str | None, RerankModel | None] = {}
    try:
        retrievers = {}
        for s in settings:  # one reranker per provider, shared by the settings that use it
            key = s.values.get("reranker")
            if key not in rerankers:
                rerankers[key] = make_reranker(s.settings, container.ledger(), container.hooks())
            retrievers[s.name] = make_retriever(
                s.settings, embedder, store, container.hooks(), rerankers[key]
            )
        return compare_retrieval(
            retrievers,
            collection.queries,
            collection.qrels,
            corpus=None if args.reuse_store else collection.corpus,
            chunker=container.chunker(),
            k=args.k,
            progress=progress,
        )
    finally:
        for reranker in rerankers.values():
            if reranker is not None:
                reranker.close()
        store.close()


def run_eval(container: ObjectGraph, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run ``eval``; returns the exit code."""
    # imported here: the other commands never load the BEIR reader or the evaluation
    from pywrapai_graph.adapters.sources.beir import load_beir

    settings = eval_settings(
        container.settings(), {a.field: getattr(args, a.field) for a in EVAL_AXES}
    )
    if args.reuse_store and len(args.folder) > 1:
        raise ConfigurationError(
            "eval --reuse-store searches the one configured store: name one folder, or drop "
            "--reuse-store to ingest each folder into a fresh store"
        )
    backend = container.settings().store.backend
    lexical = [s.name for s in settings if s.settings.retriever.mode != "dense"]
    if args.reuse_store and lexical and not backend_entry(backend).lexical:
        raise lexical_refusal(f"store.backend {backend!r}", f"eval --reuse-store {lexical[0]}")
    collections = [load_beir(folder) for folder in args.folder]  # all readable before any work
    embedder = container.embedder()
    results = [
        (c, _compare(container, args, c, settings, ProgressBar(err, 8))) for c in collections
    ]
    if args.per_query:
        _write_per_query(args.per_query, results)
    name = f"{embedder.provider}/{embedder.model}"
    single = len(results) == 1 and len(settings) == 1
    if args.json and single:
        collection, comparison = results[0]
        body = {
            "collection": collection.name,
            "embedder": {"provider": embedder.provider, "model": embedder.model},
            **comparison.evaluation(0).as_dict(),
        }
        out.write(json.dumps(body, indent=2) + "\n")
    elif args.json:
        out.write(json.dumps(_comparisons_json(results, settings, embedder, args.k), indent=2))
        out.write("\n")
    else:
        for collection, comparison in results:
            queries = len(collection.queries)
            if len(settings) == 1:
                out.write(_report(comparison.evaluation(0), collection.name, queries, name))
            else:
                out.write(_table(comparison, collection.name, queries, name))
    return 0
