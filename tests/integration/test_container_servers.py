"""Container branches that need real servers: pgvector and a Chroma server."""

from __future__ import annotations

from pywrapai_graph import Document
from pywrapai_graph.composition.container import build_container


def _round_trip(config: dict[str, object]) -> None:
    container = build_container(config)
    retriever = container.retriever()
    retriever.add_documents(
        [Document("Paris is the capital of France."), Document("Bananas are yellow fruit.")]
    )
    assert retriever.retrieve("capital of France", k=1)[0].chunk.text.startswith("Paris")
    container.vector_store().close()


def test_pgvector_branch(pg_url: str) -> None:
    _round_trip(
        {"store": {"backend": "pgvector", "dsn": pg_url, "table": "container_kb", "dimension": 384}}
    )


def test_chroma_server_branch(chroma_url: str) -> None:
    _round_trip({"store": {"backend": "chroma", "url": chroma_url, "collection": "container_kb"}})
