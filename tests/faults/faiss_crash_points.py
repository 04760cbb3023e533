"""SIGKILL a FAISS store's writer at every crash point, one after another, and check each.

Run as ``python -m tests.faults.faiss_crash_points <folder> <seed> <sequences> <rounds>``
(a fresh process: it forks its writers, so no FAISS threads may exist before). It prints a
JSON :class:`Report`: :func:`first_open`, :func:`run` (``sequences``), then
:func:`concurrent_writers` (``rounds``).

A *crash point* is an instant where a real crash may stop the writer: before each SQL
statement the store's connection runs (``BEGIN``, every read and write, ``COMMIT``) and
right after each ``COMMIT``. (The store's whole state is its SQLite file: a kill inside
SQLite's own commit is its journal's to undo; ``test_kill_file_stores`` kills at random
instants.) A forked writer opens the store (so recovery from the last kill runs too), then
runs a sequence of writes (``replace_document_vectors``, ``delete_by_doc``, ``add``,
``delete``, ``compact``, ``clear``) and kills itself with SIGKILL at crash point ``n``; the
next writer kills itself at point ``n + 1``, until one finishes the whole sequence, then the
next sequence starts at point 1. Nothing is timed: every kill lands at a known point.

After each kill, a reader that has had the store open since the start, and a fresh open,
must each see one committed state: the state after the writes that returned, or after the
one the kill interrupted (all or nothing), every document whole (its chunks of one version,
all of them, and its manifest), ``len`` equal to the metadata's rows, every row a hit with
its text. While a writer runs, the reader keeps searching: each search must see one
committed state, never earlier than one it saw before.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import sys
import time
import traceback
import zlib
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pywrapai_graph import Chunk, FAISSVectorStore
from pywrapai_graph.domain.manifest import DocumentManifest, EmbedderIdentity
from pywrapai_graph.errors import PyWrapAIError

DIM = 8
OWNERS = ["w0", "w1", "w2"]  # the writers of ``concurrent_writers``, each with its documents


def doc_names(owner: str) -> list[str]:
    return [f"{owner}d{i}" for i in range(5)]


DOCS = doc_names("")
ALL_DOCS = DOCS + [doc for owner in OWNERS for doc in doc_names(owner)]
IDENTITY = EmbedderIdentity("test", "crash", DIM)

#: documents → version, and the loose chunks (added with ``add``, doc id "loose")
State = tuple[tuple[tuple[str, int], ...], tuple[str, ...]]
Op = tuple[Any, ...]


@dataclass
class Report:
    first_open_kills: int = 0  # kills while a new store was first opened
    runs: int = 0
    kills: int = 0
    sequences: int = 0
    interrupted_op_done: int = 0  # kills after which the interrupted write had committed
    interrupted_op_undone: int = 0
    concurrent_reads: int = 0  # searches while writers ran (how many: never asserted)
    writer_runs: int = 0  # writers of ``concurrent_writers``
    writer_kills: int = 0
    kinds: dict[str, int] = field(default_factory=dict)  # kills by crash point kind
    violations: list[str] = field(default_factory=list)


def chunk_count(doc: str, version: int) -> int:
    return 1 + zlib.crc32(f"{doc}/{version}".encode()) % 4


def vectors_of(doc: str, version: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(zlib.crc32(f"{doc}/{version}".encode()))
    return rng.standard_normal((n, DIM)).astype(np.float32)


def doc_chunks(doc: str, version: int) -> list[Chunk]:
    n = chunk_count(doc, version)
    return [Chunk(f"{doc}|{version}|{i}|{n}", doc, {"v": version}, f"{doc}-{i}") for i in range(n)]


def loose_chunk(key: str) -> Chunk:
    vector = np.random.default_rng(zlib.crc32(key.encode())).standard_normal(DIM)
    return Chunk(f"loose|{key}", "loose", {}, key, embedding=[float(x) for x in vector])


def apply(store: FAISSVectorStore, op: Op) -> None:
    kind = op[0]
    if kind == "replace":
        doc, version = op[1], op[2]
        chunks = doc_chunks(doc, version)
        manifest = DocumentManifest(doc, f"h{version}", len(chunks), IDENTITY)
        store.replace_document_vectors(manifest, chunks, vectors_of(doc, version, len(chunks)).data)
    elif kind == "delete_doc":
        store.delete_by_doc(op[1])
    elif kind == "add":
        store.add([loose_chunk(key) for key in op[1]])
    elif kind == "delete":
        store.delete(list(op[1]))
    elif kind == "compact":
        store.compact()
    elif kind == "clear":
        store.clear()
    else:  # pragma: no cover
        raise AssertionError(kind)


def model(state: State, op: Op) -> State:
    docs, loose = dict(state[0]), set(state[1])
    kind = op[0]
    if kind == "replace":
        docs[op[1]] = op[2]
    elif kind == "delete_doc":
        docs.pop(op[1], None)
    elif kind == "add":
        loose |= set(op[1])
    elif kind == "delete":
        loose -= set(op[1])
    elif kind == "clear":
        docs, loose = {}, set()
    return tuple(sorted(docs.items())), tuple(sorted(loose))


def make_sequence(rng: random.Random, first_version: int, number: int, owner: str = "") -> list[Op]:
    """Six writes to ``owner``'s documents and loose chunks; every third sequence of the
    single writer (``owner`` empty) also clears the store."""
    ops: list[Op] = []
    version = first_version
    docs = doc_names(owner)
    for _ in range(6):
        roll = rng.random()
        if roll < 0.45:
            version += 1
            ops.append(("replace", rng.choice(docs), version))
        elif roll < 0.6:
            ops.append(("delete_doc", rng.choice(docs)))
        elif roll < 0.72:
            count = rng.randint(1, 3)
            ops.append(("add", [f"{owner}L{number}-{len(ops)}-{j}" for j in range(count)]))
        elif roll < 0.8:
            ops.append(("delete", [f"{owner}L{number - 1}-{j}-0" for j in range(6)]))
        else:
            ops.append(("compact",))
    if not owner and number % 3 == 2:
        ops.insert(rng.randrange(len(ops)), ("clear",))
    return ops


def part(state: State, owner: str) -> State:
    """What of ``state`` belongs to ``owner``'s writes."""
    docs = tuple(d for d in state[0] if d[0].startswith(f"{owner}d"))
    return docs, tuple(key for key in state[1] if key.startswith(f"{owner}L"))


def observe(store: FAISSVectorStore) -> State:
    """The state a store shows in one search of every row, checked for whole documents
    (and filtered searches: each hit of the version filtered on)."""
    hits = store.search([1.0] * DIM, k=100_000)
    for version in (1, 2, 3):  # a filtered search: its rows' metadata of the same generation
        for hit in store.search([1.0] * DIM, k=1000, filter={"v": version}):
            assert hit.chunk.metadata == {"v": version}, hit
            assert hit.chunk.text.split("|")[1] == str(version), hit
    docs: dict[str, set[tuple[str, str]]] = {}
    loose: list[str] = []
    for hit in hits:
        chunk = hit.chunk
        if chunk.doc_id == "loose":
            assert chunk.text == f"loose|{chunk.id}", chunk
            loose.append(chunk.id)
        else:
            doc, seen, i, n = chunk.text.split("|")
            assert doc == chunk.doc_id and chunk.id == f"{doc}-{i}", chunk
            docs.setdefault(doc, set()).add((seen, f"{i}/{n}"))
    assert len(set(loose)) == len(loose), "a loose chunk twice"
    versions: dict[str, int] = {}
    for doc, parts in docs.items():
        found = {v for v, _ in parts}
        assert len(found) == 1, f"{doc} mixes versions {sorted(found)}"
        version = int(found.pop())
        count = chunk_count(doc, version)
        whole = {(str(version), f"{j}/{count}") for j in range(count)}
        assert parts == whole, f"{doc} v{version} torn"
        versions[doc] = version
    return tuple(sorted(versions.items())), tuple(sorted(loose))


def check_store(store: FAISSVectorStore, meta: Path) -> State:
    """:func:`observe`, plus what one search cannot show: manifests, the row count, metadata
    filters and BM25 search."""
    state = observe(store)
    rows = sum(len(doc_chunks(d, v)) for d, v in state[0]) + len(state[1])
    assert len(store) == rows, f"len {len(store)} but {rows} rows found by search"
    with sqlite3.connect(meta) as conn:
        (count,) = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()
    assert count == rows, f"{count} metadata rows but {rows} found by search"
    manifests = store.document_manifests(ALL_DOCS)
    for doc, version in state[0]:
        manifest = manifests.pop(doc, None)
        assert manifest is not None, f"{doc} has chunks but no manifest"
        assert manifest.content_hash == f"h{version}", (doc, version, manifest)
        assert manifest.chunk_count == chunk_count(doc, version)
    assert not manifests, f"manifests without chunks: {sorted(manifests)}"
    for doc, version in state[0]:  # metadata filters (columns rebuilt after another's write)
        hits = store.search([1.0] * DIM, k=1000, filter={"v": version})
        assert all(h.chunk.metadata == {"v": version} for h in hits), hits
        mine = {h.chunk.id for h in hits if h.chunk.doc_id == doc}
        assert mine == {c.id for c in doc_chunks(doc, version)}, f"{doc} v{version}: {mine}"
        assert store.count({"v": version}) == len(hits)
    versions = dict(state[0])
    for doc in ALL_DOCS:  # BM25 (a mirror of the metadata, rebuilt after another's write)
        found = {(h.chunk.id, h.chunk.text) for h in store.lexical_search(doc, k=1000)}
        chunks = doc_chunks(doc, versions[doc]) if doc in versions else []
        assert found == {(c.id, c.text) for c in chunks}, f"BM25 of {doc}: {sorted(found)}"
    loose = {h.chunk.id for h in store.lexical_search("loose", k=1000)}
    assert loose == set(state[1]), f"BM25 loose: {sorted(loose)}"
    return state


class CrashPoints:
    """Counts crash points in a forked writer and SIGKILLs it at point ``kill_at``."""

    def __init__(self, kill_at: int, note: Callable[[str], None]) -> None:
        self.kill_at = kill_at
        self.count = 0
        self.note = note

    def point(self, kind: str, before_death: Callable[[], None] = lambda: None) -> None:
        self.count += 1
        if self.count == self.kill_at:
            before_death()
            self.note(f"kill {kind}")
            os.kill(os.getpid(), signal.SIGKILL)

    def install(self) -> None:
        real_connect = sqlite3.connect
        point = self.point

        class Traced(sqlite3.Connection):
            def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
                cursor = super().execute(sql, *args)
                if sql == "COMMIT":  # committed, and the store has not yet returned
                    point("after COMMIT")
                return cursor

        def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            conn: sqlite3.Connection = real_connect(*args, **kwargs, factory=Traced)
            conn.set_trace_callback(lambda sql: self.point("sql " + sql.split()[0].upper()))
            return conn

        sqlite3.connect = connect  # type: ignore[assignment]


def writer(index: Path, meta: Path, ops: Sequence[Op], kill_at: int, pipe: int) -> None:
    """The forked writer: report each finished write on ``pipe``, die at ``kill_at``."""

    def note(text: str) -> None:
        os.write(pipe, (text + "\n").encode())

    try:
        CrashPoints(kill_at, note).install()
        store = FAISSVectorStore(index, meta)
        note("open")
        for op in ops:
            note(f"start {op[0]}")
            apply(store, op)
            note("done")
        store.close()
        os._exit(0)
    except BaseException:
        note("raised " + traceback.format_exc().replace("\n", " | "))
        os._exit(3)


def states_after(state: State, ops: Sequence[Op]) -> list[State]:
    """``state``, then the state after each of ``ops``."""
    states = [state]
    for op in ops:
        states.append(model(states[-1], op))
    return states


@dataclass
class Child:
    """A forked writer: its process, pipe, writes, and the states they lead through."""

    pid: int
    pipe: int
    states: list[State]
    seen: int = 0  # the latest of its states a read saw
    status: int = -1  # (-1 while it runs)
    lines: list[str] = field(default_factory=list)

    def poll(self) -> bool:
        """Whether it has exited (its notes read so far in ``lines``)."""
        self.lines += _read_lines(self.pipe)
        if self.status == -1:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            self.status = status if done else -1
        return self.status != -1

    @property
    def killed(self) -> bool:
        return os.WIFSIGNALED(self.status) and os.WTERMSIG(self.status) == signal.SIGKILL

    def failure(self) -> str | None:
        """What went wrong in it (an exception, an exit code), if anything."""
        raised = [line for line in self.lines if line.startswith("raised")]
        if raised or not (self.killed or os.WEXITSTATUS(self.status) == 0):
            return f"writer {raised or self.status}"
        return None

    def allowed(self) -> list[State]:
        """The states it may have left: after the writes that returned, or after the one
        the kill interrupted."""
        done = self.lines.count("done")
        started = sum(line.startswith("start ") for line in self.lines)
        return self.states[done : done + 1 + (started > done)]


def fork_writer(index: Path, meta: Path, ops: list[Op], kill_at: int, states: list[State]) -> Child:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        os.close(read)
        writer(index, meta, ops, kill_at, write)
    os.close(write)
    os.set_blocking(read, False)
    return Child(pid, read, states)


def wait_reading(reader: FAISSVectorStore, children: dict[str, Child], report: Report) -> None:
    """Search with ``reader`` until every child has exited: each search must show, of each
    child's documents, one of its states, never one older than a search saw before."""
    while True:
        exited = [child.poll() for child in children.values()]  # (each polled)
        if all(exited):
            break
        try:
            now = observe(reader)
        except (AssertionError, PyWrapAIError) as exc:
            report.violations.append(f"concurrent read: {exc!r}")
            continue
        report.concurrent_reads += 1
        for owner, child in children.items():
            mine = part(now, owner)
            later = [i for i in range(child.seen, len(child.states)) if child.states[i] == mine]
            if not later:
                report.violations.append(
                    f"a concurrent read saw {mine} of writer {owner!r}, none of its states "
                    f"from {child.seen} on"
                )
            else:
                child.seen = later[0]
        time.sleep(0.002)  # (let the writers run: how often we look, never asserted)
    for child in children.values():
        child.lines += _read_lines(child.pipe)
        os.close(child.pipe)


def first_open(folder: Path, report: Report) -> None:
    """Kill the process creating a new store at each crash point of its first open: the next
    open must work as on a new store, and so must what follows (a write, a reopen)."""
    for kill_at in range(1, 100):
        work = folder / f"first{kill_at}"
        work.mkdir(parents=True)
        index, meta = work / "s.faiss", work / "s.meta"
        child = fork_writer(index, meta, [], kill_at, [])
        while not child.poll():
            time.sleep(0.001)
        child.lines += _read_lines(child.pipe)
        os.close(child.pipe)
        report.first_open_kills += child.killed
        failure = child.failure()
        if failure:
            report.violations.append(f"first open, kill {kill_at}: {failure}")
        try:
            store = FAISSVectorStore(index, meta)
            apply(store, ("replace", "d0", 1))
            store.close()
            store = FAISSVectorStore(index, meta)
            state = check_store(store, meta)
            store.close()
            assert state == ((("d0", 1),), ()), state
        except Exception as exc:
            report.violations.append(
                f"first open, kill {kill_at} ({child.lines[-1:]}): then {type(exc).__name__}: {exc}"
            )
        if not child.killed:
            return


def run(folder: Path, seed: int, sequences: int) -> Report:
    """One writer, killed at crash point 1, 2, 3... of each sequence of writes."""
    rng = random.Random(seed)
    report = Report()
    first_open(folder, report)
    index, meta = folder / "s.faiss", folder / "s.meta"
    reader = FAISSVectorStore(index, meta)
    state: State = ((), ())
    version = 0
    for number in range(sequences):
        ops = make_sequence(rng, version, number)
        version += len(ops)
        report.sequences += 1
        kill_at = 1
        while True:
            child = fork_writer(index, meta, ops, kill_at, states_after(state, ops))
            wait_reading(reader, {"": child}, report)
            report.runs += 1
            where = f"seq {number} kill {kill_at} ({child.lines[-1:]})"
            failure = child.failure()
            if failure:
                report.violations.append(f"{where}: {failure}")
                return report
            allowed = child.allowed()
            if child.killed:
                report.kills += 1
                kind = child.lines[-1].removeprefix("kill ")
                report.kinds[kind] = report.kinds.get(kind, 0) + 1
            found = verify(reader, index, meta, {"": child}, number % 2 == 0)
            if isinstance(found, str):
                report.violations.append(f"{where}: {found}")
                return report
            if len(allowed) == 2 and allowed[0] != allowed[1]:
                if found == allowed[1]:
                    report.interrupted_op_done += 1
                else:
                    report.interrupted_op_undone += 1
            state = found
            if not child.killed:
                break
            kill_at += 1
    reader.close()
    return report


def concurrent_writers(folder: Path, seed: int, rounds: int, report: Report) -> None:
    """Three writer processes at once, each on its own documents, most of them killed at a
    random crash point, while the reader keeps searching; after each round, the reader and a
    fresh open check the store."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    index, meta = folder / "m.faiss", folder / "m.meta"
    reader = FAISSVectorStore(index, meta)
    state: State = ((), ())
    versions = dict.fromkeys(OWNERS, 0)
    for number in range(rounds):
        children: dict[str, Child] = {}
        for owner in OWNERS:
            ops = make_sequence(rng, versions[owner], number, owner)
            versions[owner] += len(ops)
            kill_at = rng.randint(1, 150) if rng.random() < 0.8 else 0  # 0: never
            states = states_after(part(state, owner), ops)
            children[owner] = fork_writer(index, meta, ops, kill_at, states)
        wait_reading(reader, children, report)
        for child in children.values():
            report.writer_runs += 1
            report.writer_kills += child.killed
            failure = child.failure()
            if failure:
                report.violations.append(f"round {number}: {failure}")
                return
        found = verify(reader, index, meta, children, number % 2 == 0)
        if isinstance(found, str):
            report.violations.append(f"round {number}: {found}")
            return
        state = found
    reader.close()


def verify(
    reader: FAISSVectorStore,
    index: Path,
    meta: Path,
    children: dict[str, Child],
    reader_first: bool,
) -> State | str:
    """The state the exited ``children`` left, seen alike by the open reader and a fresh
    open (each child's part of it one it allows), or what is wrong."""
    seen: list[State] = []
    for who in ("reader", "fresh") if reader_first else ("fresh", "reader"):
        try:
            if who == "reader":
                seen.append(check_store(reader, meta))
            else:
                fresh = FAISSVectorStore(index, meta)
                try:
                    seen.append(check_store(fresh, meta))
                finally:
                    fresh.close()
        except AssertionError as exc:
            return f"{who}: inconsistent: {exc}"
        except Exception as exc:
            return f"{who}: raised {type(exc).__name__}: {exc}"
        for owner, child in children.items():
            if part(seen[-1], owner) not in child.allowed():
                return f"{who}: {owner!r}: {part(seen[-1], owner)} none of {child.allowed()}"
    if seen[0] != seen[1]:
        return f"reader and fresh open disagree: {seen}"
    return seen[0]


def _read_lines(fd: int) -> list[str]:
    data = b""
    with suppress(BlockingIOError):
        while chunk := os.read(fd, 65536):
            data += chunk
    return data.decode().splitlines()


if __name__ == "__main__":
    folder, seed = Path(sys.argv[1]), int(sys.argv[2])
    result = run(folder / "one", seed, int(sys.argv[3]))
    concurrent_writers(folder / "many", seed, int(sys.argv[4]), result)
    print(json.dumps(asdict(result)))
