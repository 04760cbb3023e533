"""A worker process for the embedder-identity tests: one store, driven by pipe.

Commands (each reply is ``("ok", value)`` or ``("error", "<type>: <message>")``):

* ``("use", name)``: retrieve and ingest with the embedder ``name`` from now on
  (``"first"`` or ``"second"``: two models of the same dimension)
* ``("ingest", [(doc_id, text), ...])``: ``add_documents``
* ``("clear",)``: ``store.clear()``
* ``("retrieve", mode, query, run)``: the hits' doc ids, ``run`` = "sync" or "async"
* ``("close",)``: close the store and stop
"""

from __future__ import annotations

import asyncio
from multiprocessing.connection import Connection
from typing import Any, cast

from pywrapai_graph.adapters.embedders.hashing_embedder import FeatureHashingEmbedder
from tests.integration.many_workers import answer_commands
from tests.integration.many_workers import open_store as open_worker_store

DIM = 64


class SecondModel(FeatureHashingEmbedder):
    """Another model of the same dimension (other name, other vectors)."""

    def __init__(self) -> None:
        super().__init__(DIM, ngram=4)
        self.model = "second-model"


def embedder(name: str) -> FeatureHashingEmbedder:
    return FeatureHashingEmbedder(DIM) if name == "first" else SecondModel()


def open_store(kind: str, where: str) -> Any:
    """The store (``where``: a path, or ``url#name`` for a server)."""
    from pywrapai_graph import PGVectorStore

    if kind == "pg":
        url, table = where.split("#")
        return PGVectorStore(url, table_name=table, dimension=DIM)
    return open_worker_store((kind, where))


def _retriever(store: Any, state: dict[str, Any], mode: str) -> Any:
    """The worker's retriever of this embedder and mode, made once and kept (a service's
    retrievers live as long as the worker: whatever they hold in memory is kept too)."""
    from pywrapai_graph import VectorRetriever

    key = f"{state['use']}/{mode}"
    if key not in state:
        state[key] = VectorRetriever(embedder(state["use"]), store, k=3, mode=cast(Any, mode))
    return state[key]


def _answer(store: Any, state: dict[str, Any], command: tuple[Any, ...]) -> Any:
    from pywrapai_graph import Document

    name = command[0]
    if name == "use":
        state["use"] = command[1]
        return None
    if name == "clear":
        return store.clear()
    if name == "ingest":
        docs = [Document(text, id=doc_id) for doc_id, text in command[1]]
        return _retriever(store, state, "dense").add_documents(docs)
    _, mode, query, run = command
    retriever = _retriever(store, state, mode)
    hits = asyncio.run(retriever.aretrieve(query)) if run == "async" else retriever.retrieve(query)
    return [h.chunk.doc_id for h in hits]


def serve(kind: str, where: str, conn: Connection) -> None:
    """The worker's body: open the store (reply with the outcome), then answer commands."""
    try:
        store = open_store(kind, where)
    except Exception as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    state: dict[str, Any] = {"use": "first"}
    conn.send(("ok", None))
    answer_commands(store, conn, lambda command: _answer(store, state, command))
