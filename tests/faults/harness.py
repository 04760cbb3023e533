"""Fault injection: run `pywrapai-graph ingest` in a subprocess and kill it at random instants.

A run starts from a store holding version A of a corpus and ingests version B (every A file
changed, new files added). After a SIGKILL at any instant the store must open, hold every
document complete in version A or complete in version B (or absent, for files new in B),
and a re-ingest of B must make it equal to a clean ingest of B.
"""

from __future__ import annotations

import io
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pywrapai_graph.application.ingest_documents import IngestDocuments
from pywrapai_graph.composition.cli import main
from pywrapai_graph.composition.container import build_container
from pywrapai_graph.domain import Document
from pywrapai_graph.ports import BaseVectorStore

ROOT = Path(__file__).resolve().parents[2]

#: chunk id → text, per document id
Contents = dict[str, dict[str, str]]
PARAGRAPHS = 30  # per corpus file


def write_corpus(folder: Path, version: str, files: int, paragraphs: int) -> None:
    """``files`` Markdown files; version B changes every paragraph and the chunk counts."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for f in range(files):
        count = paragraphs + (f % 5) * (3 if version == "B" else 1)
        text = "\n\n".join(
            f"Version {version} of file {f}, paragraph {p}: the parcel ships in {p % 7} days "
            f"and refunds for order {f * 1000 + p} arrive within {p % 11} business days."
            for p in range(count)
        )
        (folder / f"doc{f:03d}.md").write_text(text)


def write_config(work: Path, store: str) -> Path:
    """A YAML configuration for ``store`` (the ``store:`` section's lines)."""
    work.mkdir(parents=True, exist_ok=True)
    config = work / "pywrapai.yaml"
    config.write_text(
        f"store:\n{store}embedder:\n  provider: hashing\n  dimension: 64\n"
        "chunker:\n  chunk_size: 300\n  overlap: 0\n"
    )
    return config


def open_store(config: Path) -> BaseVectorStore:
    return build_container(str(config)).vector_store()


def contents(store: BaseVectorStore, doc_ids: list[str]) -> Contents:
    """Every stored chunk of each document (exhaustive per document through a filter)."""
    probe = [1.0] * 64
    found: Contents = {}
    for doc_id in doc_ids:
        hits = store.search(probe, k=10_000, filter={"path": doc_id})
        found[doc_id] = {h.chunk.id: h.chunk.text for h in hits}
    return found


def clean_contents(config: Path, folder: Path) -> Contents:
    """What a clean ingest of ``folder`` stores (computed in memory, same chunker/embedder)."""
    memory = write_config(config.parent / "clean", "  backend: memory\n")
    container = build_container(str(memory))
    store = container.vector_store()
    docs = [
        Document(p.read_text(), metadata={"source": p.name, "path": str(p)}, id=str(p))
        for p in sorted(folder.resolve().iterdir())
    ]
    IngestDocuments(container.retriever().embedder, store, container.chunker())(docs)
    return contents(store, [d.id for d in docs])


def cli_ingest(config: Path, folder: Path) -> str:
    out, err = io.StringIO(), io.StringIO()
    code = main(["--config", str(config), "ingest", str(folder)], out=out, err=err)
    assert code == 0, err.getvalue()
    return out.getvalue()


def ingest_command(config: Path, folder: Path) -> list[str]:
    cli = [sys.executable, "-m", "pywrapai_graph.composition.cli"]
    return [*cli, "--config", str(config), "ingest", str(folder)]


#: the command line as ``python -m pywrapai_graph.composition.cli`` runs it (with the one BLAS
#: thread that sets), saying "ready" between its imports and the command
_AFTER_IMPORTS = (
    "import sys\n"
    "from pywrapai_graph.composition.cli import main\n"
    "print('ready', flush=True)\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def start_ingest(
    config: Path, folder: Path, stderr: int = subprocess.DEVNULL
) -> subprocess.Popen[str]:
    """``ingest`` in a new process, returned once its imports are done: what is left is the
    command itself (configuration, store, writes), the window a kill is aimed at."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _AFTER_IMPORTS, "--config", str(config), "ingest", str(folder)],
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"},
        cwd=config.parent,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n"
    return proc


@dataclass
class KillReport:
    kills: int = 0
    mixed_states: int = 0  # runs after which some documents were A and others B
    partial_b: int = 0  # B documents present after the kill, summed over runs


def check_after_kill(
    config: Path, clean_a: Contents, clean_b: Contents, report: KillReport
) -> None:
    """The store opens, each document is whole (A, B or absent), and re-ingest repairs it."""
    store = open_store(config)
    try:
        state = contents(store, list(clean_b))
        versions = set()
        for doc_id, chunks in state.items():
            if chunks == clean_b[doc_id]:
                versions.add("B")
                report.partial_b += 1
            elif chunks == clean_a.get(doc_id, {}):
                versions.add("A" if chunks else "absent")
            else:
                raise AssertionError(
                    f"{doc_id} is neither version A nor B after the kill: {len(chunks)} chunks "
                    f"(A has {len(clean_a.get(doc_id, {}))}, B has {len(clean_b[doc_id])})"
                )
        report.mixed_states += len(versions) > 1
    finally:
        store.close()
    folder = Path(next(iter(clean_b))).parent
    cli_ingest(config, folder)
    assert_holds(config, clean_b)


def assert_holds(config: Path, expected: Contents) -> None:
    """The store holds exactly ``expected``: each document's chunks, and nothing else."""
    store = open_store(config)
    try:
        assert contents(store, list(expected)) == expected
        assert len(store) == sum(len(c) for c in expected.values())
    finally:
        store.close()


def kill_folder_store(
    work: Path,
    store_lines: str,
    *,
    files: int,
    kills: int,
    seed: int,
    forget: Callable[[], None] = lambda: None,
    after_kill: Callable[[Path], None] = lambda kb: None,
) -> KillReport:
    """:func:`kill_runs` for a store living in the folder ``work/kb`` (``{kb}`` in the lines).

    Version A is ingested once and the folder copied; each run starts from that copy.
    ``forget`` drops whatever the test process caches about the folder it replaces;
    ``after_kill`` looks at the folder a killed writer left, before anything opens it.
    """
    kb = work / "kb"
    config = write_config(work, store_lines.format(kb=kb))
    docs = work / "docs"
    write_corpus(docs, "A", files - 4, PARAGRAPHS)
    clean_a = clean_contents(config, docs)
    cli_ingest(config, docs)
    template = work / "kb-A"
    shutil.copytree(kb, template)
    write_corpus(docs, "B", files, PARAGRAPHS)
    clean_b = clean_contents(config, docs)

    def restore_a() -> None:
        forget()
        shutil.rmtree(kb)
        shutil.copytree(template, kb)

    return kill_runs(config, docs, restore_a, clean_a, clean_b, kills, seed, lambda: after_kill(kb))


def kill_runs(
    config: Path,
    docs_b: Path,
    restore_a: Callable[[], None],
    clean_a: Contents,
    clean_b: Contents,
    kills: int,
    seed: int,
    after_kill: Callable[[], None] = lambda: None,
) -> KillReport:
    """``kills`` SIGKILLs at random instants of an A → B ingest, each checked.

    The instants are drawn over the command, after the process's imports: nothing is
    written while modules load, so every kill lands where the store can be caught mid-way.
    """
    rng = random.Random(seed)
    restore_a()
    full = start_ingest(config, docs_b, stderr=subprocess.PIPE)
    began = time.monotonic()
    _, err = full.communicate(timeout=300)
    assert full.returncode == 0, err
    duration = time.monotonic() - began
    report = KillReport()
    for _ in range(3 * kills):
        if report.kills == kills:
            break
        restore_a()
        proc = start_ingest(config, docs_b)
        delay = rng.uniform(0.0, duration)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        killed = proc.returncode == -signal.SIGKILL  # not if it had finished already
        report.kills += killed
        if not killed:  # this run was quicker than the first: aim within its length
            duration = max(delay, 0.1)
        after_kill()
        check_after_kill(config, clean_a, clean_b, report)
    return report
