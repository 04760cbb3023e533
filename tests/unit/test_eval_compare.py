"""Comparing retrieval settings over one ingest: compare_retrieval, the paired randomisation
test, the eval command's settings axes, --per-query and the JSON of several settings.

On real queries and judgements: tests/fixtures/cranfield_subset (see its SOURCE.md).
"""

from __future__ import annotations

import importlib
import io
import itertools
import json
import random
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from pywrapai_graph import Chunker, FeatureHashingEmbedder, InMemoryVectorStore, VectorRetriever
from pywrapai_graph.adapters.sources.beir import load_beir
from pywrapai_graph.application.compare_retrieval import compare_retrieval
from pywrapai_graph.application.evaluate_retrieval import evaluate_retrieval
from pywrapai_graph.application.retrieval_metrics import METRICS
from pywrapai_graph.application.significance import paired_randomisation_test, paired_t_test
from pywrapai_graph.composition.cli import main
from pywrapai_graph.composition.eval_settings import eval_settings
from pywrapai_graph.composition.settings import Settings
from pywrapai_graph.errors import ConfigurationError, InvalidArgumentError
from pywrapai_graph.testing.cross_encoder import write_tiny_cross_encoder

SUBSET = Path(__file__).resolve().parents[1] / "fixtures" / "cranfield_subset"
#: The single-setting --json object, as the eval command printed it before comparisons.
SINGLE_KEYS = {
    "collection",
    "embedder",
    "scores",
    "mode",
    "k",
    "documents",
    "chunks",
    "ingest_seconds",
    "search_seconds",
    "embedding_tokens",
    "embedding_cost_usd",
    "truncated_texts",
}


class CountingEmbedder(FeatureHashingEmbedder):
    """The hashing embedder, remembering every text it computed a vector for."""

    def __init__(self) -> None:
        super().__init__(64)
        self.texts: list[str] = []

    def vectors(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts.extend(texts)
        return super().vectors(texts)

    def matrix(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.texts.extend(texts)
        return super().matrix(texts)


def test_settings_share_one_ingest_and_get_a_row_and_p_values_each() -> None:
    collection = load_beir(SUBSET)
    embedder = CountingEmbedder()
    store = InMemoryVectorStore()
    retrievers = {
        "dense": VectorRetriever(embedder, store, mode="dense"),
        "lexical": VectorRetriever(embedder, store, mode="lexical"),
        "hybrid/rrf": VectorRetriever(embedder, store, mode="hybrid", fusion="rrf"),
        "hybrid/weighted": VectorRetriever(embedder, store, mode="hybrid", fusion="weighted"),
    }
    seen: list[str] = []
    result = compare_retrieval(
        retrievers,
        collection.queries,
        collection.qrels,
        corpus=collection.corpus,
        chunker=Chunker(400, 40),
        k=20,
        progress=lambda stage, done, total: seen.append(stage),
    )
    queries = len(collection.queries)
    assert result.chunks > result.documents == len(collection.corpus)  # documents were split
    # the corpus is embedded once; then each dense or hybrid setting embeds each query once
    assert len(embedder.texts) == result.chunks + 3 * queries
    assert len(set(embedder.texts[: result.chunks])) >= result.chunks - 5  # (repeated texts)
    assert [s.name for s in result.settings] == list(retrievers)
    assert [s.mode for s in result.settings] == ["dense", "lexical", "hybrid", "hybrid"]
    assert result.settings[1].search.embedding_tokens == 0  # lexical embeds no query
    assert result.settings[0].search.embedding_tokens == result.settings[2].search.embedding_tokens
    assert result.ingest.embedding_tokens > 10 * result.settings[0].search.embedding_tokens
    assert seen.count("ingest") >= 1 and seen.count("hybrid/rrf") == queries
    assert result.settings[0].p_values == {}
    for setting in result.settings:
        assert setting.scores.queries == len(setting.per_query) == 8
        assert setting.scores.ndcg_at_10 == pytest.approx(
            sum(s.ndcg_at_10 for s in setting.per_query.values()) / 8
        )
    for setting in result.settings[1:]:
        assert set(setting.p_values) == set(METRICS) == set(setting.t_test_p_values)
        assert all(0.0 < p <= 1.0 for p in setting.p_values.values())
        assert all(0.0 <= p <= 1.0 for p in setting.t_test_p_values.values())
    # one setting alone scores what it scores beside the others
    alone = evaluate_retrieval(retrievers["lexical"], collection.queries, collection.qrels, k=20)
    assert alone.scores == result.settings[1].scores
    assert (alone.documents, alone.chunks) == (0, 0)


def test_equal_settings_give_p_one() -> None:
    collection = load_beir(SUBSET)
    embedder, store = FeatureHashingEmbedder(64), InMemoryVectorStore()
    same = {n: VectorRetriever(embedder, store, mode="lexical") for n in ("a", "b")}
    result = compare_retrieval(same, collection.queries, collection.qrels, corpus=collection.corpus)
    assert result.settings[0].scores == result.settings[1].scores
    assert result.settings[1].p_values == dict.fromkeys(METRICS, 1.0)
    assert result.settings[1].t_test_p_values == dict.fromkeys(METRICS, 1.0)


def test_retrievers_over_different_stores_are_refused() -> None:
    embedder = FeatureHashingEmbedder(64)
    retrievers = {
        "a": VectorRetriever(embedder, InMemoryVectorStore()),
        "b": VectorRetriever(embedder, InMemoryVectorStore()),
    }
    with pytest.raises(InvalidArgumentError, match="share one embedder and one store"):
        compare_retrieval(retrievers, {"1": "x"}, {"1": {"d": 1}})
    with pytest.raises(InvalidArgumentError, match="at least one retriever"):
        compare_retrieval({}, {"1": "x"}, {"1": {"d": 1}})


def test_randomisation_test_matches_the_exact_permutation_distribution() -> None:
    rng = random.Random(5)
    a = [rng.random() for _ in range(10)]
    b = [x - rng.uniform(-0.1, 0.3) for x in a]
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    observed = abs(sum(diffs)) / 10
    exact = (
        sum(
            abs(sum(s * d for s, d in zip(signs, diffs, strict=True))) / 10 >= observed - 1e-12
            for signs in itertools.product((1, -1), repeat=10)
        )
        / 2**10
    )
    p = paired_randomisation_test(a, b)
    assert p == pytest.approx(exact, abs=0.015)  # 10,000 samples: standard error <= 0.005
    assert p == paired_randomisation_test(a, b)  # fixed seed: the same p every time
    assert paired_randomisation_test(b, a) == p  # two-sided
    assert paired_randomisation_test(a, a) == 1.0
    far = paired_randomisation_test([1.0] * 30, [0.0] * 30, rounds=999)
    assert far == pytest.approx(1 / 1000)  # only 2 of 2**30 sign choices are as extreme
    with pytest.raises(InvalidArgumentError, match="equally long"):
        paired_randomisation_test([1.0], [1.0, 2.0])
    with pytest.raises(InvalidArgumentError, match="rounds >= 1"):
        paired_randomisation_test([1.0], [1.0], rounds=0)


def test_t_test_equals_scipy() -> None:
    stats = importlib.import_module("scipy.stats")  # pytrec-eval-terrier's dependency (dev)

    rng = random.Random(11)
    for n in (2, 3, 8, 30, 225):
        a = [rng.random() for _ in range(n)]
        b = [x + rng.gauss(0.05, 0.2) for x in a]
        assert paired_t_test(a, b) == pytest.approx(stats.ttest_rel(a, b).pvalue, abs=1e-10)
    assert paired_t_test(a, a) == 1.0
    assert paired_t_test([1.0, 2.0], [0.0, 1.0]) == 0.0  # every difference the same, not 0
    assert paired_t_test([0.3], [0.1]) == 1.0  # one query says nothing
    with pytest.raises(InvalidArgumentError, match="equally long"):
        paired_t_test([], [])


def test_eval_settings_are_the_product_of_the_axes_without_meaningless_ones() -> None:
    base = Settings.model_validate({"retriever": {"mode": "hybrid", "fusion": "weighted"}})
    names = [
        s.name
        for s in eval_settings(base, {"mode": "dense,hybrid,lexical", "fusion": "rrf,weighted"})
    ]
    assert names == ["dense", "hybrid/rrf", "hybrid/weighted", "lexical"]
    chosen = eval_settings(base, {"mode": "lexical,hybrid"})  # fusion from the configuration
    assert [s.name for s in chosen] == ["lexical", "hybrid/weighted"]
    assert chosen[1].settings.retriever.fusion == "weighted"
    assert chosen[0].settings.retriever.mode == "lexical"
    assert [s.name for s in eval_settings(base, {})] == ["hybrid/weighted"]
    with pytest.raises(ConfigurationError, match=r"--mode: 'dense,sparse' is not a comma"):
        eval_settings(base, {"mode": "dense,sparse"})
    with pytest.raises(ConfigurationError, match="--fusion"):
        eval_settings(base, {"fusion": " , "})


def _config(tmp_path: Path) -> None:
    (tmp_path / "pywrapai.yaml").write_text(
        "embedder:\n  provider: hashing\n  dimension: 64\nstore:\n  backend: sqlite\n"
        "  path: kb/store.db\nchunker:\n  chunk_size: 400\n  overlap: 40\n"
    )


def test_eval_command_compares_settings_on_several_collections(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    second = tmp_path / "again"
    shutil.copytree(SUBSET, second)
    monkeypatch.chdir(tmp_path)
    _config(tmp_path)
    per_query = tmp_path / "per-query.jsonl"
    out, err = io.StringIO(), io.StringIO()
    argv = ["eval", str(SUBSET), str(second), "--mode", "dense,lexical,hybrid"]
    argv += ["--fusion", "rrf,weighted", "--k", "20", "--json", "--per-query", str(per_query)]
    assert main(argv, out, err) == 0, err.getvalue()
    body = json.loads(out.getvalue())
    assert set(body) == {"embedder", "k", "significance", "collections"}
    assert body["significance"]["against"] == "dense"
    assert [c["collection"] for c in body["collections"]] == ["cranfield_subset", "again"]
    for collection in body["collections"]:
        names = [s["setting"] for s in collection["settings"]]
        assert names == ["dense", "lexical", "hybrid/rrf", "hybrid/weighted"]
        rows = collection["settings"]
        assert collection["ingest"]["embedding_tokens"] > 0
        assert rows[1]["search"]["embedding_tokens"] == 0  # lexical: no query embedding
        assert rows[0]["search"]["embedding_tokens"] == rows[3]["search"]["embedding_tokens"] > 0
        assert rows[0]["p_values"] == {} == rows[0]["t_test_p_values"]
        assert rows[1]["search"]["calls"] == 0 and rows[0]["search"]["calls"] == 8
        assert all(0 < p <= 1 for row in rows[1:] for p in row["p_values"].values())
        assert rows[3]["values"] == {"mode": "hybrid", "fusion": "weighted", "reranker": None}
    # the two copies of one collection score the same
    first, again = body["collections"]
    assert [r["scores"] for r in first["settings"]] == [r["scores"] for r in again["settings"]]
    lines = [json.loads(line) for line in per_query.read_text().splitlines()]
    assert len(lines) == 2 * 4 * 8
    assert set(lines[0]) == {"collection", "setting", "query"} | set(METRICS)
    dense = [
        x["ndcg_at_10"] for x in lines if x["setting"] == "dense" and x["collection"] == "again"
    ]
    assert sum(dense) / 8 == pytest.approx(again["settings"][0]["scores"]["ndcg_at_10"])
    assert not (tmp_path / "kb").exists()  # fresh in-memory stores, not the configured one
    table = io.StringIO()
    assert main(["eval", str(SUBSET), "--mode", "lexical,dense"], table, err) == 0
    text = table.getvalue()
    assert "ingest once" in text and "against lexical" in text
    assert [line.split()[0] for line in text.splitlines()[3:5]] == ["lexical", "dense"]


def test_eval_command_keeps_the_single_setting_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _config(tmp_path)
    out = io.StringIO()
    assert main(["eval", str(SUBSET), "--mode", "hybrid", "--json"], out, io.StringIO()) == 0
    body = json.loads(out.getvalue())
    assert set(body) == SINGLE_KEYS
    assert body["mode"] == "hybrid" and body["documents"] == 102


def test_eval_command_compares_rerankers_as_one_more_axis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = write_tiny_cross_encoder(tmp_path / "ce", {"heat": 2.0, "flow": 1.0, "wing": 1.5})
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pywrapai.yaml").write_text(
        "embedder:\n  provider: hashing\n  dimension: 64\nretriever:\n  reranker:\n"
        f"    provider: local\n    model_dir: {model}\n  rerank_candidates: 20\n"
    )
    out, err = io.StringIO(), io.StringIO()
    argv = ["eval", str(SUBSET), "--mode", "lexical,dense", "--reranker", "none,local", "--json"]
    assert main([*argv, "--k", "20"], out, err) == 0, err.getvalue()
    rows = json.loads(out.getvalue())["collections"][0]["settings"]
    names = [r["setting"] for r in rows]
    assert names == ["lexical", "lexical/rerank:local", "dense", "dense/rerank:local"]
    assert rows[1]["values"] == {"mode": "lexical", "reranker": "rerank:local"}
    assert rows[0]["values"] == {"mode": "lexical", "reranker": None}
    calls = [r["search"]["calls"] for r in rows]  # ledger records: embeddings and reranks
    assert calls[0] == 0 and calls[2] == 8  # lexical embeds nothing; dense each query
    assert calls[1] >= 8 and calls[3] >= 8 + calls[1]  # the reranker ran for every query
    # the configured reranker alone, as before: one setting, the single JSON object
    out = io.StringIO()
    assert main(["eval", str(SUBSET), "--mode", "lexical", "--json"], out, err) == 0
    assert set(json.loads(out.getvalue())) == SINGLE_KEYS


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--mode", "dense,semantic"], "'dense,semantic' is not a comma-separated list"),
        (["--fusion", "borda"], "--fusion"),
        (["SECOND", "--reuse-store"], "searches the one configured store"),
        (["--reranker", "local"], "model_dir is required for the local reranker"),
        (["--reranker", "nope"], "none, cohere, local"),
    ],
)
def test_eval_command_refuses_bad_settings_with_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str], message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    _config(tmp_path)
    argv = [str(SUBSET) if a == "SECOND" else a for a in argv]
    err = io.StringIO()
    assert main(["eval", str(SUBSET), *argv], io.StringIO(), err) == 2
    assert message in err.getvalue()
