"""SIGKILL a FAISS store's writer at every crash point, one after another, and check each.

Run as ``python -m tests.faults.faiss_crash_points <folder> <seed> <sequences>`` (a fresh
process: it forks its writers, so no FAISS threads may exist before). It prints a JSON
:class:`Report`.

A *crash point* is an instant where a real crash may stop the writer: before each SQL
statement the store's metadata connection runs (``BEGIN``, every write, ``COMMIT``), before
and after each file operation (``os.replace``, ``ftruncate``, ``fsync``, ``unlink``,
``faiss.write_index``), halfway through a log append (half of it written) and after a
pending index written only halfway. A forked writer opens the store (so recovery from the
last kill runs too), then runs a sequence of writes (``replace_document_vectors``,
``delete_by_doc``, ``add``, ``delete``, ``compact``, ``clear``; ``compact_bytes=0`` so
writes also compact on their own) and kills itself with SIGKILL at crash point ``n``; the
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
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pywrapai_graph import Chunk, FAISSVectorStore
from pywrapai_graph.domain.manifest import DocumentManifest, EmbedderIdentity
from pywrapai_graph.errors import PyWrapAIError

DIM = 8
DOCS = [f"d{i}" for i in range(5)]
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
    kills_in_compaction: int = 0  # between a pending file's first byte and its rename
    interrupted_op_done: int = 0  # kills after which the interrupted write had committed
    interrupted_op_undone: int = 0
    concurrent_reads: int = 0
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


def make_sequence(rng: random.Random, first_version: int, number: int) -> list[Op]:
    ops: list[Op] = []
    version = first_version
    for _ in range(6):
        roll = rng.random()
        if roll < 0.45:
            version += 1
            ops.append(("replace", rng.choice(DOCS), version))
        elif roll < 0.6:
            ops.append(("delete_doc", rng.choice(DOCS)))
        elif roll < 0.72:
            ops.append(("add", [f"L{number}-{len(ops)}-{j}" for j in range(rng.randint(1, 3))]))
        elif roll < 0.8:
            ops.append(("delete", [f"L{number - 1}-{j}-0" for j in range(6)]))
        else:
            ops.append(("compact",))
    if number % 3 == 2:
        ops.insert(rng.randrange(len(ops)), ("clear",))
    return ops


def observe(store: FAISSVectorStore) -> State:
    """The state a store shows in one search of every row, checked for whole documents."""
    hits = store.search([1.0] * DIM, k=100_000)
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
    """:func:`observe`, plus what one search cannot show: manifests and the row count."""
    state = observe(store)
    rows = sum(len(doc_chunks(d, v)) for d, v in state[0]) + len(state[1])
    assert len(store) == rows, f"len {len(store)} but {rows} rows found by search"
    with sqlite3.connect(meta) as conn:
        (count,) = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()
    assert count == rows, f"{count} metadata rows but {rows} found by search"
    manifests = store.document_manifests(DOCS)
    for doc, version in state[0]:
        manifest = manifests.pop(doc, None)
        assert manifest is not None, f"{doc} has chunks but no manifest"
        assert manifest.content_hash == f"h{version}", (doc, version, manifest)
        assert manifest.chunk_count == chunk_count(doc, version)
    assert not manifests, f"manifests without chunks: {sorted(manifests)}"
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
        import faiss

        real_connect = sqlite3.connect

        def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            conn: sqlite3.Connection = real_connect(*args, **kwargs)
            conn.set_trace_callback(lambda sql: self.point("sql " + sql.split()[0].upper()))
            return conn

        sqlite3.connect = connect  # type: ignore[assignment]
        self.wrap(os, "replace")
        self.wrap(os, "ftruncate")
        self.wrap(os, "fsync")
        self.wrap(os, "unlink")
        real_pwrite = os.pwrite

        def pwrite(fd: int, data: Any, offset: int) -> int:
            view = memoryview(data)
            half = len(view) // 2

            def torn() -> None:
                real_pwrite(fd, view[:half], offset)

            self.point("pwrite", torn)
            written = real_pwrite(fd, view, offset)
            self.point("after pwrite")
            return written

        os.pwrite = pwrite
        real_write_index = faiss.write_index

        def write_index(index: Any, path: str) -> None:
            self.point("write_index")

            def torn() -> None:
                real_write_index(index, path)
                size = os.path.getsize(path)
                os.truncate(path, size // 2)

            self.point("torn pending", torn)
            real_write_index(index, path)
            self.point("after write_index")

        faiss.write_index = write_index  # type: ignore[assignment]

    def wrap(self, module: Any, name: str) -> None:
        real = getattr(module, name)

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            self.point(name)
            result = real(*args, **kwargs)
            self.point("after " + name)
            return result

        setattr(module, name, wrapped)


def writer(index: Path, meta: Path, ops: Sequence[Op], kill_at: int, pipe: int) -> None:
    """The forked writer: report each finished write on ``pipe``, die at ``kill_at``."""

    def note(text: str) -> None:
        os.write(pipe, (text + "\n").encode())

    try:
        CrashPoints(kill_at, note).install()
        store = FAISSVectorStore(index, meta, compact_bytes=0)
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


def first_open(folder: Path, report: Report) -> None:
    """Kill the process creating a new store at each crash point of its first open: the next
    open must work as on a new store, and so must what follows (a write, a reopen)."""
    for kill_at in range(1, 100):
        work = folder / f"first{kill_at}"
        work.mkdir(parents=True)
        index, meta = work / "s.faiss", work / "s.meta"
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover (the child)
            os.close(read)
            writer(index, meta, [], kill_at, write)
        os.close(write)
        status = os.waitpid(pid, 0)[1]
        with os.fdopen(read) as pipe:
            lines = pipe.read().splitlines()
        killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        report.first_open_kills += killed
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
                f"first open, kill {kill_at} ({lines[-1:]}): then {type(exc).__name__}: {exc}"
            )
        if not killed:
            return


def run(folder: Path, seed: int, sequences: int) -> Report:
    rng = random.Random(seed)
    report = Report()
    first_open(folder, report)
    folder.mkdir(parents=True, exist_ok=True)
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
            states = [state]
            for op in ops:
                states.append(model(states[-1], op))
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:  # pragma: no cover (the child)
                os.close(read)
                writer(index, meta, ops, kill_at, write)
            os.close(write)
            seen = 0
            while True:  # read while it writes: always one committed state, never older
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    break
                try:
                    now = observe(reader)
                except (AssertionError, PyWrapAIError) as exc:
                    report.violations.append(f"seq {number} kill {kill_at}: concurrent: {exc!r}")
                    continue
                report.concurrent_reads += 1
                time.sleep(0.002)  # (let the writer run: how often we look, never asserted)
                later = [i for i in range(seen, len(states)) if states[i] == now]
                if not later:
                    report.violations.append(
                        f"seq {number} kill {kill_at}: concurrent read saw {now}, not one of "
                        f"the states from {seen} on"
                    )
                else:
                    seen = later[0]
            with os.fdopen(read) as pipe:
                lines = pipe.read().splitlines()
            report.runs += 1
            killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
            raised = [line for line in lines if line.startswith("raised")]
            if raised or not (killed or os.WEXITSTATUS(status) == 0):
                report.violations.append(f"seq {number} kill {kill_at}: writer {raised or status}")
                return report
            done_ops = lines.count("done")
            interrupted = done_ops < len(ops) and f"start {ops[done_ops][0]}" in lines
            allowed = states[done_ops : done_ops + 1 + interrupted]
            if killed:
                report.kills += 1
                kind = lines[-1].removeprefix("kill ")
                report.kinds[kind] = report.kinds.get(kind, 0) + 1
                if (folder / "s.faiss.pending").exists():
                    report.kills_in_compaction += 1
            found = verify(reader, index, meta, allowed, number % 2 == 0)
            where = f"seq {number} kill {kill_at} ({lines[-1]}; {done_ops} done)"
            if isinstance(found, str):
                report.violations.append(f"{where}: {found}")
                return report
            if interrupted and len(allowed) == 2 and allowed[0] != allowed[1]:
                if found == allowed[1]:
                    report.interrupted_op_done += 1
                else:
                    report.interrupted_op_undone += 1
            state = found
            if not killed:
                break
            kill_at += 1
    reader.close()
    return report


def verify(
    reader: FAISSVectorStore, index: Path, meta: Path, allowed: list[State], reader_first: bool
) -> State | str:
    """The state after a kill, seen alike by the open reader and a fresh open, or what's wrong."""
    seen: list[State] = []
    for who in ("reader", "fresh") if reader_first else ("fresh", "reader"):
        try:
            if who == "reader":
                seen.append(check_store(reader, meta))
            else:
                fresh = FAISSVectorStore(index, meta, compact_bytes=0)
                try:
                    seen.append(check_store(fresh, meta))
                finally:
                    fresh.close()
        except AssertionError as exc:
            return f"{who}: inconsistent: {exc}"
        except Exception as exc:
            return f"{who}: raised {type(exc).__name__}: {exc}"
        if seen[-1] not in allowed:
            return f"{who}: state {seen[-1]} is none of {allowed}"
    if seen[0] != seen[1]:
        return f"reader and fresh open disagree: {seen}"
    return seen[0]


if __name__ == "__main__":
    result = run(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
    print(json.dumps(asdict(result)))
