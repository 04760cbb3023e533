"""A worker process for the many-workers tests: one store, three retrievers, driven by pipe.

Each worker opens the store as a service worker would and answers commands in order, so
the test knows a write has returned before it asks the others to read (no sleeps):

* ``("ingest", [(doc_id, text), ...], metadata)``: ``add_documents`` (each replaces its
  document), every document with ``metadata``
* ``("delete", doc_id)``: ``delete_by_doc``
* ``("clear",)``: ``clear``
* ``("retrieve", mode, query, k, filter)``: the hits' ``(doc_id, text)`` in that mode
* ``("state", doc_id, filter)``: what the store says of itself: ``len``, ``count(filter)``,
  the document's manifest hash (or None) and the recorded embedder's model (or None)
* ``("close",)``: close the store and stop

Every reply is ``("ok", value)`` or ``("error", "<type>: <message>")``.
"""

from __future__ import annotations

from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

#: (kind, argument): how a worker opens the store
StoreSpec = tuple[str, str]


def open_store(spec: StoreSpec) -> Any:
    """The store of ``spec`` (imports inside: the worker is a fresh process)."""
    kind, where = spec
    if kind == "sqlite":
        from pywrapai_graph import SQLiteVectorStore

        return SQLiteVectorStore(where)
    if kind == "faiss":
        from pywrapai_graph import FAISSVectorStore

        return FAISSVectorStore(where + ".faiss", where + ".json")
    if kind == "chroma_server":
        from pywrapai_graph import ChromaVectorStore

        url, collection = where.split("#")
        return ChromaVectorStore(url=url, collection=collection)
    if kind == "chroma_embedded":
        from pywrapai_graph import ChromaVectorStore

        return ChromaVectorStore(path=where, collection="workers")
    if kind == "qdrant_server":
        from pywrapai_graph import QdrantVectorStore

        url, collection = where.split("#")
        return QdrantVectorStore(collection, url=url)
    if kind == "qdrant_local":
        from pywrapai_graph import QdrantVectorStore

        return QdrantVectorStore("workers", location=where)
    raise ValueError(f"unknown store kind {kind!r}")


def _answer(store: Any, retrievers: dict[str, Any], command: tuple[Any, ...]) -> Any:
    from pywrapai_graph import Document

    name = command[0]
    if name == "ingest":
        docs = [Document(text, dict(command[2]), id=doc_id) for doc_id, text in command[1]]
        return retrievers["dense"].add_documents(docs)
    if name == "delete":
        return store.delete_by_doc(command[1])
    if name == "clear":
        return store.clear()
    if name == "retrieve":
        _, mode, query, k, where = command
        hits = retrievers[mode].retrieve(query, k, where)
        return [(h.chunk.doc_id, h.chunk.text) for h in hits]
    if name == "state":
        _, doc_id, where = command
        manifest = store.document_manifest(doc_id)
        embedder = store.embedder_identity()
        return (
            len(store),
            store.count(where),
            None if manifest is None else manifest.content_hash,
            None if embedder is None else embedder.model,
        )
    raise ValueError(f"unknown command {name!r}")


def serve(spec: StoreSpec, conn: Connection) -> None:
    """The worker's body: open the store (reply with the outcome), then answer commands."""
    from pywrapai_graph import Embedder, VectorRetriever
    from pywrapai_graph.ports.store_query import RetrievalMode

    try:
        store = open_store(spec)
    except Exception as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    embedder = Embedder(provider="hashing")
    every: tuple[RetrievalMode, ...] = ("dense", "lexical", "hybrid")
    modes = every if store.lexical else every[:1]  # Chroma: dense only
    retrievers: dict[str, Any] = {m: VectorRetriever(embedder, store, mode=m) for m in modes}
    conn.send(("ok", None))
    answer_commands(store, conn, lambda command: _answer(store, retrievers, command))


def answer_commands(store: Any, conn: Connection, answer: Callable[[tuple[Any, ...]], Any]) -> None:
    """Reply to each command with ``("ok", answer(command))`` or the error, until ``close``
    (which closes the store)."""
    while True:
        command = conn.recv()
        if command[0] == "close":
            store.close()
            conn.send(("ok", None))
            return
        try:
            conn.send(("ok", answer(command)))
        except Exception as exc:
            conn.send(("error", f"{type(exc).__name__}: {exc}"))
