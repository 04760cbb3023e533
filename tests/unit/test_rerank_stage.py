"""The retriever's rerank stage: N candidates in any mode, reranked, top k; its configuration
through settings and the container; its spans and its cost."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from pywrapai_graph import (
    Document,
    FeatureHashingEmbedder,
    InMemoryVectorStore,
    Reranker,
    RerankModel,
    ScoredChunk,
    VectorRetriever,
)
from pywrapai_graph.composition.container import build_container
from pywrapai_graph.composition.object_graph import ObjectGraph
from pywrapai_graph.composition.settings import load_settings
from pywrapai_graph.errors import ArgumentTypeError, ConfigurationError
from pywrapai_graph.testing.cross_encoder import tiny_cross_encoder_logit, write_tiny_cross_encoder
from pywrapai_graph.testing.wire import CohereWire
from tests.unit.test_tracing import Telemetry, otel

__all__ = ["otel"]

WEIGHTS = {"refund": 4.0, "parcel": 1.0, "damaged": 2.0, "ship": 0.5}
QUERY = "refund for a damaged parcel"
DOCS = [
    Document("A damaged parcel is replaced or refunded by the courier.", id="courier"),
    Document("Every refund of a damaged parcel takes five business days.", id="refunds"),
    Document("Parcels ship from Rotterdam; a parcel ships every weekday.", id="shipping"),
    Document("Support answers within one hour, parcel or not.", id="support"),
    Document("Our refund policy: a refund is issued within a week.", id="policy"),
    Document("Bananas are yellow and grow in bunches.", id="bananas"),
    Document("Damaged goods must be reported within 48 hours.", id="damaged"),
    Document("Parcel lockers are open all night.", id="lockers"),
]


class Recording:
    """A user's own reranker (any object with rerank/arerank): reverses what it is given."""

    def __init__(self) -> None:
        self.seen: list[list[str]] = []

    def rerank(
        self, query: str, hits: Sequence[ScoredChunk], k: int | None = None
    ) -> list[ScoredChunk]:
        self.seen.append([h.chunk.doc_id for h in hits])
        return [ScoredChunk(h.chunk, float(i)) for i, h in enumerate(reversed(hits))][:k]

    async def arerank(
        self, query: str, hits: Sequence[ScoredChunk], k: int | None = None
    ) -> list[ScoredChunk]:
        return self.rerank(query, hits, k)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_cross_encoder(tmp_path_factory.mktemp("tiny-ce"), WEIGHTS)


def retriever(**options: Any) -> VectorRetriever:
    r = VectorRetriever(FeatureHashingEmbedder(64), InMemoryVectorStore(), **options)
    r.add_documents(DOCS)
    return r


def test_no_reranker_by_default() -> None:
    assert retriever().reranker is None
    container = build_container({"store": {"backend": "memory"}})
    assert container.reranker() is None
    assert container.retriever().reranker is None


@pytest.mark.parametrize("mode", ["dense", "lexical", "hybrid"])
def test_the_reranker_sees_n_candidates_of_the_mode_and_k_come_back(mode: str) -> None:
    plain = retriever(mode=mode)
    recording = Recording()
    reranked = retriever(mode=mode, reranker=recording, rerank_candidates=6)
    candidates = [h.chunk.doc_id for h in plain.retrieve(QUERY, k=6)]
    hits = reranked.retrieve(QUERY, k=2)
    assert recording.seen == [candidates]
    assert [h.chunk.doc_id for h in hits] == candidates[::-1][:2]
    assert [h.score for h in hits] == [0.0, 1.0]  # the reranker's scores


def test_k_above_the_candidates_still_gets_k_hits() -> None:
    recording = Recording()
    hits = retriever(reranker=recording, rerank_candidates=2).retrieve(QUERY, k=5)
    assert len(recording.seen[0]) == 5
    assert len(hits) == 5


def test_the_local_cross_encoder_decides_the_order(model_dir: Path) -> None:
    reranker = RerankModel("local", model_dir=model_dir)
    r = retriever(reranker=reranker, rerank_candidates=8, k=3)
    hits = r.retrieve(QUERY)
    logits = {d.id: tiny_cross_encoder_logit(QUERY, d.text, WEIGHTS) for d in DOCS}
    best = sorted(logits, key=lambda i: -logits[i])[:3]
    assert [h.chunk.doc_id for h in hits] == best == ["policy", "refunds", "courier"]
    assert [h.chunk.doc_id for h in retriever(k=3).retrieve(QUERY)] != best  # it re-ordered
    assert asyncio.run(r.aretrieve(QUERY)) == hits


def test_a_scope_filters_before_the_reranker_sees_anything(model_dir: Path) -> None:
    recording = Recording()
    r = VectorRetriever(
        FeatureHashingEmbedder(64), InMemoryVectorStore(), reranker=recording, rerank_candidates=10
    )
    acme, other = r.scoped({"tenant": "acme"}), r.scoped({"tenant": "other"})
    acme.add_documents(DOCS[:3])
    other.add_documents(DOCS[3:])
    hits = acme.retrieve(QUERY, k=2)
    assert sorted(recording.seen[0]) == sorted(acme.stored_id(d.id) for d in DOCS[:3])
    assert {h.chunk.metadata["tenant"] for h in hits} == {"acme"}


def test_a_reranker_without_the_methods_is_a_type_error() -> None:
    with pytest.raises(ArgumentTypeError, match="rerank"):
        VectorRetriever(FeatureHashingEmbedder(8), InMemoryVectorStore(), reranker=object())  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="rerank_candidates"):
        VectorRetriever(FeatureHashingEmbedder(8), InMemoryVectorStore(), rerank_candidates=0)
    assert isinstance(Recording(), Reranker)


# ---------------------------------------------------------------------------- configuration
@pytest.fixture
def wire() -> Iterator[CohereWire]:
    with CohereWire() as server:
        yield server


def test_a_cohere_reranker_from_configuration_books_into_the_one_ledger(wire: CohereWire) -> None:
    config = {
        "store": {"backend": "memory"},
        "retriever": {
            "k": 2,
            "rerank_candidates": 5,
            "reranker": {"provider": "cohere", "api_key": "co-key", "base_url": wire.url},
        },
    }
    with build_container(config) as container:
        r = container.retriever()
        assert r.reranker is container.reranker()
        r.add_documents(DOCS)
        hits = r.retrieve(QUERY)
        (request,) = wire.requests
        assert len(request.json["documents"]) == 5
        assert len(hits) == 2
        assert hits[0].score >= hits[1].score
        kinds = [rec.kind for rec in container.ledger().records]
        assert kinds.count("rerank") == 1
        assert container.ledger().records[-1].cost_usd == pytest.approx(0.002)


def test_the_command_line_builds_the_same_reranker(model_dir: Path) -> None:
    settings = load_settings(
        {
            "store": {"backend": "memory"},
            "retriever": {"reranker": {"provider": "local", "model_dir": str(model_dir)}},
        }
    )
    objects = ObjectGraph(settings)
    reranker = objects.retriever().reranker
    assert isinstance(reranker, RerankModel)
    assert reranker is objects.reranker()
    assert (reranker.provider, reranker.model) == ("local", model_dir.name)
    assert reranker.tokens is objects.ledger()


def test_a_provider_name_alone_and_the_environment_configure_it(
    monkeypatch: pytest.MonkeyPatch, model_dir: Path
) -> None:
    settings = load_settings({"retriever": {"reranker": "cohere"}})
    assert settings.retriever.reranker is not None
    assert settings.retriever.reranker.provider == "cohere"
    monkeypatch.setenv("PYWRAPAI_RETRIEVER__RERANKER__PROVIDER", "local")
    monkeypatch.setenv("PYWRAPAI_RETRIEVER__RERANKER__MODEL_DIR", str(model_dir))
    monkeypatch.setenv("PYWRAPAI_RETRIEVER__RERANK_CANDIDATES", "7")
    monkeypatch.setenv("PYWRAPAI_STORE__BACKEND", "memory")
    r = build_container().retriever()
    assert isinstance(r.reranker, RerankModel)
    assert r.rerank_candidates == 7


@pytest.mark.parametrize(
    ("reranker", "expected"),
    [
        ({"provider": "voyage"}, "unknown rerank provider 'voyage'"),
        ({"provider": "local"}, "retriever.reranker.model_dir is required"),
        ({"provider": "cohere", "timeout": 0}, "retriever.reranker.timeout"),
        ({"provider": "cohere", "colour": "red"}, "retriever.reranker.colour"),
    ],
)
def test_configuration_errors_name_the_key(reranker: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        load_settings({"retriever": {"reranker": reranker}})
    assert expected in str(info.value)


def test_the_api_key_stays_out_of_the_settings_repr() -> None:
    settings = load_settings(
        {"retriever": {"reranker": {"provider": "cohere", "api_key": "co-SECRET-9"}}}
    )
    assert "co-SECRET-9" not in repr(settings)


# ---------------------------------------------------------------------------- telemetry
def test_the_rerank_span_nests_in_the_retrieval_and_carries_its_cost(
    otel: Telemetry, wire: CohereWire
) -> None:
    reranker = RerankModel("cohere", api_key="co-key", base_url=wire.url)
    r = retriever(reranker=reranker, rerank_candidates=4, k=2)
    otel.spans.clear()
    r.retrieve(QUERY)
    assert otel.tree() == [
        (
            "retrieval in_memory",
            [
                ("retrieve in_memory", []),  # the store's one-pass retrieval
                ("rerank rerank-v3.5", []),
            ],
        )
    ]
    span = dict(otel.one("rerank rerank-v3.5").attributes or {})
    assert span["gen_ai.operation.name"] == "rerank"
    assert span["gen_ai.provider.name"] == "cohere"
    assert span["pywrapai.rerank.documents"] == 4
    assert span["pywrapai.rerank.units"] == 1
    assert span["pywrapai.cost_usd"] == pytest.approx(0.002)
    costs = [
        p.value
        for p in otel.metric_points("pywrapai.client.cost")
        if p.attributes["gen_ai.operation.name"] == "rerank"
    ]
    assert costs == [pytest.approx(0.002)]
