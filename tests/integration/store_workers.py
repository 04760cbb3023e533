"""Worker processes over one store, driven step by step through pipes (no sleeps).

Each worker opens its own store (``factory`` names a public store class of
``pywrapai_graph`` and its keyword arguments, so any backend can be driven) and a
:class:`VectorRetriever` per mode over it, then answers commands until told to stop:

- ``("ingest", doc_id, text)``: ``add_documents`` of one document (a replace when it exists);
- ``("delete", doc_id)``: ``delete_by_doc``; answers how many chunks went;
- ``("retrieve", mode, query, k)``: the ``(doc_id, text)`` of each hit, best first;
- ``("repair", older_than_s)``: ``store.repair``;
- ``("repair_until_told", older_than_s)``: ``store.repair`` again and again until the driver
  sends anything; answers how many repairs ran;
- ``("replace_rounds", doc_ids, writer, rounds)``: ``rounds`` times, ingest each document as
  :func:`version_text` ``(doc, writer, round)``; answers how many writes were refused;
- ``("replace_paused", doc_id, writer, round_)``: ingest :func:`version_text`, answering
  ``"paused"`` once its chunks are stored and before its commit, then, when the driver says
  anything, going on; answers ``"written"``, or ``"refused"`` (a repair took it over);
- ``("skew", seconds)``: this process's wall clock runs ``seconds`` behind from now on;
- ``("stop",)``.

Every answer is ``("ok", value)`` or ``("error", repr)``; the driver waits for it, so a
command to another worker is sent only after this one's write has returned.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection
from typing import Any

Factory = tuple[str, dict[str, Any]]
DIM = 16


def version_text(doc_id: str, writer: int, round_: int) -> str:
    """A document version several chunks long, every chunk naming its version."""
    tag = f"{doc_id}:writer{writer}:round{round_}"
    return "\n\n".join(
        " ".join(f"{tag} part {i} sentence {j} lorem ipsum." for j in range(40))
        for i in range(3 + (writer + round_) % 4)  # versions differ in their chunk counts
    )


def _skew(seconds: float) -> None:
    import time

    real = time.time_ns
    time.time_ns = lambda: real() - int(seconds * 1e9)


def _serve(factory: Factory, conn: Connection) -> None:
    import pywrapai_graph
    from pywrapai_graph import Document, VectorRetriever
    from pywrapai_graph.testing.contracts.vector_store import WordEmbedder

    name, kwargs = factory
    store = getattr(pywrapai_graph, name)(**kwargs)
    embedder = WordEmbedder(DIM)
    retrievers = {
        mode: VectorRetriever(embedder, store, mode=mode, min_score=-1.0)
        for mode in ("dense", "lexical", "hybrid")
        if mode == "dense" or store.lexical  # Chroma is dense only
    }
    conn.send(("ok", "ready"))
    while True:
        command = conn.recv()
        try:
            if command[0] == "stop":
                store.close()
                conn.send(("ok", None))
                return
            if command[0] == "ingest":
                value: Any = retrievers["dense"].add_documents(
                    [Document(command[2], id=command[1])]
                )
            elif command[0] == "delete":
                value = store.delete_by_doc(command[1])
            elif command[0] == "repair":
                value = store.repair(older_than_s=command[1])
            elif command[0] == "repair_until_told":
                value = 0
                while not conn.poll():
                    store.repair(older_than_s=command[1])
                    value += 1
                conn.recv()
            elif command[0] == "replace_rounds":
                value = _replace_rounds(retrievers["dense"], *command[1:])
            elif command[0] == "replace_paused":
                value = _replace_paused(store, retrievers["dense"], conn, *command[1:])
            elif command[0] == "skew":
                _skew(command[1])
                value = None
            else:
                _, mode, query, k = command
                value = [
                    (h.chunk.doc_id, h.chunk.text) for h in retrievers[mode].retrieve(query, k)
                ]
            conn.send(("ok", value))
        except Exception as exc:  # reported to the driver, which fails the test
            conn.send(("error", repr(exc)))


def _replace_rounds(retriever: Any, doc_ids: list[str], writer: int, rounds: int) -> int:
    from pywrapai_graph import Chunker, Document
    from pywrapai_graph.errors import VectorStoreError

    refused = 0
    for round_ in range(rounds):
        for doc_id in doc_ids:
            try:
                retriever.add_documents(
                    [Document(version_text(doc_id, writer, round_), id=doc_id)], Chunker(500)
                )
            except VectorStoreError:  # a repair took this version over: nothing of it shows
                refused += 1
    return refused


def _replace_paused(store: Any, retriever: Any, conn: Connection, *version: Any) -> str:
    from pywrapai_graph import Chunker, Document
    from pywrapai_graph.errors import VectorStoreError

    stored = store._upsert

    def upsert_then_pause(batch: Any, versions: Any) -> None:
        stored(batch, versions)
        conn.send(("ok", "paused"))
        conn.recv()

    store._upsert = upsert_then_pause
    try:
        retriever.add_documents([Document(version_text(*version), id=version[0])], Chunker(500))
        return "written"
    except VectorStoreError:
        return "refused"
    finally:
        del store._upsert


class Worker:
    """The driver's end of one worker process."""

    def __init__(self, process: Any, conn: Connection) -> None:
        self.process = process
        self._conn = conn

    def ask(self, *command: Any) -> Any:
        self.send(*command)
        return self.receive(command)

    def send(self, *command: Any) -> None:
        self._conn.send(command)

    def receive(self, command: Any = "") -> Any:
        status, value = self._conn.recv()
        if status != "ok":
            raise AssertionError(f"worker {self.process.pid} failed {command!r}: {value}")
        return value


@contextmanager
def workers(factory: Factory, n: int = 3) -> Iterator[list[Worker]]:
    """``n`` started worker processes (spawned: nothing inherited), stopped on exit."""
    context = multiprocessing.get_context("spawn")
    started: list[Worker] = []
    try:
        for _ in range(n):
            mine, theirs = context.Pipe()
            process = context.Process(target=_serve, args=(factory, theirs), daemon=True)
            process.start()
            theirs.close()  # the child's end: a worker that dies is an EOFError here, not a hang
            worker = Worker(process, mine)
            started.append(worker)
            assert mine.recv() == ("ok", "ready")
        yield started
    finally:
        for worker in started:
            if worker.process.is_alive():
                try:
                    worker.ask("stop")
                except (EOFError, OSError, AssertionError):
                    worker.process.kill()
            worker.process.join(30)
