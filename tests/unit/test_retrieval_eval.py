"""Retrieval metrics against trec_eval (pytrec_eval), evaluate_retrieval, and the eval command."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import pytest
import pytrec_eval

from pywrapai_graph import Chunker, FeatureHashingEmbedder, InMemoryVectorStore, VectorRetriever
from pywrapai_graph.adapters.sources.beir import load_beir
from pywrapai_graph.application.evaluate_retrieval import evaluate_retrieval, fold_to_documents
from pywrapai_graph.application.retrieval_metrics import (
    mrr_at,
    ndcg_at,
    recall_at,
    score_run,
)
from pywrapai_graph.composition.cli import main
from pywrapai_graph.domain import Chunk, ScoredChunk
from pywrapai_graph.errors import ConfigurationError


def _fixture(seed: int = 3) -> tuple[dict[str, dict[str, int]], dict[str, list[str]]]:
    """Graded qrels and ranked runs for 30 queries over 200 documents."""
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(200)]
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, list[str]] = {}
    for q in range(30):
        judged = rng.sample(docs, rng.randint(1, 25))
        qrels[f"q{q}"] = {d: rng.choice([0, 1, 2, 3, 4]) for d in judged}
        qrels[f"q{q}"][judged[0]] = rng.randint(1, 4)  # at least one relevant document
        favoured = judged * 3 + docs  # relevant documents tend to rank high
        ranked = list(dict.fromkeys(rng.sample(favoured, len(favoured))))[:150]
        run[f"q{q}"] = ranked
    return qrels, run


def test_metrics_equal_trec_eval_on_graded_judgements() -> None:
    qrels, run = _fixture()
    # trec_eval ranks by score: give distinct, decreasing scores in our order
    as_scores = {q: {d: float(len(r) - i) for i, d in enumerate(r)} for q, r in run.items()}
    top10 = {q: {d: float(10 - i) for i, d in enumerate(r[:10])} for q, r in run.items()}
    trec = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.10,100"})
    reference = trec.evaluate(as_scores)
    mrr_reference = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top10)
    for q, ranked in run.items():
        assert ndcg_at(ranked, qrels[q], 10) == pytest.approx(reference[q]["ndcg_cut_10"])
        assert recall_at(ranked, qrels[q], 10) == pytest.approx(reference[q]["recall_10"])
        assert recall_at(ranked, qrels[q], 100) == pytest.approx(reference[q]["recall_100"])
        assert mrr_at(ranked, qrels[q], 10) == pytest.approx(mrr_reference[q]["recip_rank"])
    scores = score_run(run, qrels)
    n = len(reference)
    assert scores.queries == n == 30
    assert scores.ndcg_at_10 == pytest.approx(sum(r["ndcg_cut_10"] for r in reference.values()) / n)
    assert scores.recall_at_100 == pytest.approx(
        sum(r["recall_100"] for r in reference.values()) / n
    )
    assert scores.mrr_at_10 == pytest.approx(
        sum(r["recip_rank"] for r in mrr_reference.values()) / n
    )


def test_metrics_on_a_hand_computed_example() -> None:
    judged = {"a": 3, "b": 1, "c": 0, "z": 2}
    ranked = ["c", "a", "x", "b"]
    # DCG = 3/log2(3) + 1/log2(5); IDCG = 3/1 + 2/log2(3) + 1/2
    import math

    dcg = 3 / math.log2(3) + 1 / math.log2(5)
    assert ndcg_at(ranked, judged, 10) == pytest.approx(dcg / (3 + 2 / math.log2(3) + 0.5))
    assert recall_at(ranked, judged, 10) == pytest.approx(2 / 3)
    assert mrr_at(ranked, judged, 10) == pytest.approx(0.5)
    assert mrr_at(ranked, judged, 1) == 0.0
    # a query with no relevant judgement is left out; one the run misses scores 0
    scores = score_run({"q1": ranked}, {"q1": judged, "q2": {"a": 0}, "q3": {"b": 2}})
    assert scores.queries == 2
    assert scores.recall_at_10 == pytest.approx((2 / 3) / 2)


def test_chunk_hits_fold_to_their_best_document() -> None:
    hits = [
        ScoredChunk(Chunk("", doc_id=d, id=f"{d}{i}"), s)
        for i, (d, s) in enumerate([("A", 0.9), ("B", 0.8), ("A", 0.7), ("C", 0.6), ("B", 0.5)])
    ]
    assert fold_to_documents(hits, 10) == ["A", "B", "C"]
    assert fold_to_documents(hits, 2) == ["A", "B"]


def _beir(folder: Path) -> Path:
    corpus = [
        ("1", "Wing flutter", "Wing flutter at transonic speeds. " * 8),
        ("2", "Heat transfer", "Heat transfer in laminar boundary layers on flat plates."),
        ("3", "", "Buckling of thin cylindrical shells under axial compression."),
        ("4", "Shock waves", "Shock wave interaction with a turbulent boundary layer."),
    ]
    folder.mkdir()
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "title": t, "text": x}) + "\n" for i, t, x in corpus)
    )
    queries = {"1": "flutter of wings", "2": "boundary layer heat transfer", "3": "shell buckling"}
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in queries.items())
        + json.dumps({"_id": "9", "text": "an unjudged query"})
        + "\n"
    )
    (folder / "qrels.tsv").write_text(
        "query-id\tcorpus-id\tscore\n1\t1\t4\n2\t2\t3\n2\t4\t1\n3\t3\t2\n"
    )
    return folder


def test_evaluate_retrieval_ingests_searches_and_scores(tmp_path: Path) -> None:
    collection = load_beir(_beir(tmp_path / "mini"))
    assert collection.name == "mini"
    assert collection.corpus[0].text.startswith("Wing flutter at transonic")  # title once
    assert collection.corpus[1].text.startswith("Heat transfer in laminar")
    assert collection.corpus[3].text.startswith("Shock waves\n\nShock wave interaction")
    assert sorted(collection.queries) == ["1", "2", "3"]  # the unjudged query is left out
    embedder = FeatureHashingEmbedder(64)
    retriever = VectorRetriever(embedder, InMemoryVectorStore(), mode="lexical")
    seen: list[tuple[str, int, int]] = []
    result = evaluate_retrieval(
        retriever,
        collection.queries,
        collection.qrels,
        corpus=collection.corpus,
        chunker=Chunker(60, 0),
        k=10,
        progress=lambda stage, done, total: seen.append((stage, done, total)),
    )
    assert result.chunks > len(collection.corpus)  # document 1 was split
    assert result.scores.queries == 3
    assert result.scores.mrr_at_10 == 1.0  # each query finds a relevant document first
    assert result.scores.recall_at_10 == 1.0
    assert result.embedding_tokens > 0  # the hashing embedder's estimate, during ingest
    assert ("queries", 3, 3) in seen
    assert any(stage == "ingest" for stage, _, _ in seen)
    again = evaluate_retrieval(retriever, collection.queries, collection.qrels, k=10)
    assert (again.documents, again.chunks, again.scores) == (0, 0, result.scores)


def test_load_beir_names_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="not a BEIR-layout folder"):
        load_beir(tmp_path)
    folder = _beir(tmp_path / "bad")
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n1\t1\tvery\n")
    with pytest.raises(ConfigurationError, match=r"qrels.tsv:2: expected"):
        load_beir(folder)


def test_eval_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _beir(tmp_path / "mini")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pywrapai.yaml").write_text(
        "store:\n  backend: sqlite\n  path: kb/store.db\nchunker:\n  chunk_size: 60\n"
        "  overlap: 0\nretriever:\n  mode: hybrid\n"
    )
    out, err = io.StringIO(), io.StringIO()
    assert main(["eval", str(folder), "--mode", "lexical", "--json", "--k", "10"], out, err) == 0
    body = json.loads(out.getvalue())
    assert body["mode"] == "lexical"
    assert body["scores"]["recall_at_10"] == 1.0
    assert body["documents"] == 4
    assert err.getvalue() == ""  # no progress bar when stderr is not a terminal
    assert not (tmp_path / "kb").exists()  # a fresh in-memory store, not the configured one
    out = io.StringIO()
    assert main(["eval", str(folder)], out, err) == 0
    report = out.getvalue()
    assert "mode hybrid" in report  # the configured mode
    assert "nDCG@10" in report
    assert "MRR@10" in report
    assert "embedding " in report
    err = io.StringIO()
    assert main(["eval", str(tmp_path / "nowhere")], io.StringIO(), err) == 2
    assert "not a BEIR-layout folder" in err.getvalue()


@pytest.mark.parametrize(
    ("file", "content", "expected"),
    [
        ("corpus.jsonl", b'{"_id": "1", "text": "caf\xe9"}\n', r"corpus.jsonl:1: not UTF-8"),
        ("queries.jsonl", b'{"_id": "1", "text": "ok"}\n\xff\n', r"queries.jsonl:2: not UTF-8"),
        ("qrels.tsv", b"query-id\tcorpus-id\tscore\n1\t1\t\xe9\n", r"qrels.tsv:2: not UTF-8"),
        ("qrels.tsv", b"query-id\tcorpus-id\tscore\n1\t1\t" + b"9" * 400 + b"\n", r"out of range"),
        ("qrels.tsv", b"query-id\tcorpus-id\tscore\n1\t1\t" + b"9" * 5000 + b"\n", r"integer"),
        ("qrels.tsv", b"query-id\tcorpus-id\tscore\n1\t1\t-2000000\n", r"qrels.tsv:2: the score"),
        ("corpus.jsonl", b"[" * 100_000 + b"]" * 100_000 + b"\n", r"corpus.jsonl:1: JSON nested"),
        (
            "corpus.jsonl",
            b'{"_id": "1", "text": ' + b"[" * 5000 + b"]" * 5000 + b"}\n",
            r"corpus.jsonl:1: JSON nested|\"text\" strings",
        ),
        ("corpus.jsonl", b'{"_id": {"a": 1}, "text": "x"}\n', r'"_id" must be a string'),
        ("queries.jsonl", b'{"_id": "1", "text": ["a", "b"]}\n', r"got text of another type"),
    ],
)
def test_load_beir_gives_every_bad_input_a_typed_error(
    tmp_path: Path, file: str, content: bytes, expected: str
) -> None:
    folder = _beir(tmp_path / "bad")
    (folder / file).write_bytes(content)
    with pytest.raises(ConfigurationError, match=expected):
        load_beir(folder)


def test_eval_command_exits_2_naming_the_bad_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _beir(tmp_path / "mini")
    (folder / "corpus.jsonl").write_bytes(b"[" * 100_000 + b"]" * 100_000 + b"\n")
    monkeypatch.chdir(tmp_path)
    err = io.StringIO()
    assert main(["eval", str(folder)], io.StringIO(), err) == 2
    assert "JSON nested too deeply" in err.getvalue()


def test_eval_reuse_store_on_an_empty_store_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: it scored nothing (every metric 0) and exited 0.
    folder = _beir(tmp_path / "mini")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pywrapai.yaml").write_text("store:\n  backend: memory\n")
    out, err = io.StringIO(), io.StringIO()
    assert main(["eval", str(folder), "--reuse-store"], out, err) == 2
    assert "holds no chunks" in err.getvalue() and out.getvalue() == ""
