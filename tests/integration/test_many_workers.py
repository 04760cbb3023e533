"""Three worker processes on one store: what one writes, replaces or deletes is what every
other retrieves on its next query, in dense, lexical and hybrid mode (dense only on Chroma,
which has no lexical search); an erased document's
text is never returned after its delete returned. Stores that serve one process at a time
(Qdrant local mode, embedded Chroma) refuse the second process at open instead.

Each worker is a real process (``spawn``, as a service's workers are) answering commands
over a pipe (see ``many_workers``): a command's reply is the proof that it finished, so the
order of writes and reads is structural, never timed.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pytest

from tests.integration.many_workers import StoreSpec, serve
from tests.integration.test_server_stores import name_for

MODES = ("dense", "lexical", "hybrid")
DOCS = {
    "d1": "Laminar boundary layers on a heated flat plate transfer heat slowly.",
    "d2": "Supersonic shock waves form ahead of a blunt cone in wind tunnels.",
    "d3": "Thin cylindrical shells buckle under external hydrostatic pressure loads.",
    "d4": "Turbulent jets leave a convergent nozzle and entrain the quiet air around.",
}
QUERIES = {
    "d1": "laminar boundary layer heated plate",
    "d2": "supersonic shock cone",
    "d3": "cylindrical shells buckle hydrostatic pressure",
    "d4": "turbulent jet nozzle entrain",
}
NEW_D2 = "Hypersonic ablation chars the heat shield of a reentry capsule."
TOPIC = {"topic": "new"}
D5 = "Flutter of swept wing panels couples aerodynamic lift with structural modes."


class Worker:
    """One worker process and its end of the pipe."""

    def __init__(self, spec: StoreSpec) -> None:
        ctx = mp.get_context("spawn")
        self.conn, theirs = ctx.Pipe()
        self.proc = ctx.Process(target=serve, args=(spec, theirs), daemon=True)
        self.proc.start()
        theirs.close()
        self.opened: tuple[str, Any] = self.conn.recv()
        self.modes = ("dense",) if spec[0].startswith("chroma") else MODES

    def ask(self, *command: Any) -> Any:
        self.conn.send(command)
        status, value = self.conn.recv()
        assert status == "ok", value
        return value

    def stop(self) -> None:
        if self.proc.is_alive() and self.opened[0] == "ok":
            self.conn.send(("close",))
            self.conn.recv()
        self.proc.join(timeout=60)
        if self.proc.is_alive():
            self.proc.kill()
        _close(self.conn)


def _close(conn: Connection) -> None:
    conn.close()


def _texts(worker: Worker, mode: str, query: str, where: dict[str, Any] | None = None) -> list[str]:
    return [text for _, text in worker.ask("retrieve", mode, query, 3, where)]


def _spec(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> StoreSpec:
    if kind == "sqlite":
        return kind, str(tmp_path / "store.db")
    if kind == "faiss":
        return kind, str(tmp_path / "store")
    if kind == "chroma_server":
        return kind, f"{request.getfixturevalue('chroma_url')}#{name_for(tmp_path, 'w')}"
    url = request.getfixturevalue("qdrant_rest_url")
    return kind, f"{url}#{name_for(tmp_path, 'w')}"


@pytest.fixture
def workers(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[list[Worker]]:
    spec = _spec(request.param, tmp_path, request)
    started: list[Worker] = []
    try:
        for _ in range(3):
            started.append(Worker(spec))
            assert started[-1].opened == ("ok", None), started[-1].opened
        yield started
    finally:
        for worker in started:
            worker.stop()


@pytest.mark.parametrize(
    "workers", ["sqlite", "faiss", "chroma_server", "qdrant_server"], indirect=True
)
def test_every_worker_reads_every_other_workers_writes(workers: list[Worker]) -> None:
    a, b, c = workers
    assert c.ask("state", "d2", TOPIC) == (0, 0, None, None)  # empty when opened
    a.ask("ingest", sorted(DOCS.items()), {"topic": "old"})
    for reader in workers:  # every worker reads (and builds whatever it builds) before
        for mode in reader.modes:
            assert DOCS["d1"] in _texts(reader, mode, QUERIES["d1"]), (mode, reader.proc.pid)

    _a_replace_is_read_by_the_others(a, b, c)
    _an_erasure_is_honoured_by_everyone(workers, c)
    a.ask("ingest", [("d5", D5)], {"topic": "old"})  # a new document
    for reader in (b, c):
        for mode in reader.modes:
            assert D5 in _texts(reader, mode, "flutter swept wing panels"), mode
    _a_clear_is_followed_by_the_others(workers, b)


def _a_replace_is_read_by_the_others(a: Worker, b: Worker, c: Worker) -> None:
    before = a.ask("state", "d2", TOPIC)
    assert before[:2] == (4, 0) and before[2] and before[3]
    b.ask("ingest", [("d2", NEW_D2)], TOPIC)  # a replace, into another topic
    after = b.ask("state", "d2", TOPIC)
    assert after[:2] == (4, 1) and after[2] != before[2] and after[3] == before[3]
    for reader in (a, c):
        assert reader.ask("state", "d2", TOPIC) == after  # counts, filter, manifest, embedder
        for mode in reader.modes:  # a filtered read sees the replaced document's new metadata
            assert _texts(reader, mode, "hypersonic ablation capsule", TOPIC) == [NEW_D2], mode
            assert _texts(reader, mode, QUERIES["d2"], TOPIC) in ([], [NEW_D2]), mode
        for mode in reader.modes:
            got = _texts(reader, mode, QUERIES["d2"]) + _texts(reader, mode, "hypersonic ablation")
            assert DOCS["d2"] not in got, mode
            assert NEW_D2 in _texts(reader, mode, "hypersonic ablation capsule"), mode


def _an_erasure_is_honoured_by_everyone(workers: list[Worker], eraser: Worker) -> None:
    eraser.ask("delete", "d3")  # an erasure: from now on nobody returns its text
    assert [w.ask("state", "d3", TOPIC)[::2] for w in workers] == [(3, None)] * 3
    for reader in workers:
        for mode in reader.modes:
            for query in (*QUERIES.values(), DOCS["d3"]):
                assert DOCS["d3"] not in _texts(reader, mode, query), (mode, query)


def _a_clear_is_followed_by_the_others(workers: list[Worker], clearer: Worker) -> None:
    a, b, c = workers
    clearer.ask("clear")  # (Chroma and Qdrant re-create the collection: the others follow it)
    for reader in (a, c):
        for mode in reader.modes:
            assert _texts(reader, mode, QUERIES["d1"]) == [], mode
    assert [w.ask("state", "d4", TOPIC) for w in workers] == [(0, 0, None, None)] * 3
    c.ask("ingest", [("d4", DOCS["d4"])], {"topic": "old"})
    for reader in (a, b):
        for mode in reader.modes:
            assert _texts(reader, mode, QUERIES["d4"]) == [DOCS["d4"]], mode


@pytest.mark.parametrize(
    ("kind", "refusal"),
    [("qdrant_local", "open in another store"), ("chroma_embedded", "open in another process")],
)
def test_one_process_stores_refuse_a_second_worker(tmp_path: Path, kind: str, refusal: str) -> None:
    spec = (kind, str(tmp_path / kind))
    first = Worker(spec)
    try:
        assert first.opened == ("ok", None), first.opened
        first.ask("ingest", sorted(DOCS.items()), {})
        for _ in range(2):
            second = Worker(spec)
            second.stop()
            status, message = second.opened
            assert status == "error" and message.startswith("StoreBusyError")
            assert refusal in message and str(tmp_path / kind) in message
    finally:
        first.stop()
    after = Worker(spec)  # the folder is free once the first worker closed its store
    try:
        assert after.opened == ("ok", None), after.opened
        for mode in after.modes:
            assert DOCS["d4"] in _texts(after, mode, QUERIES["d4"]), mode
    finally:
        after.stop()
