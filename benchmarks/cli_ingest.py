"""``pywrapai-graph ingest`` on a real corpus against the same pipeline as a library, and
re-ingest of the unchanged corpus against hashing its files.

Run: .venv/bin/python -m benchmarks.cli_ingest [--limit N] [--no-subprocess]

The corpus is Debian's documentation sources (``apt-get install python3.11-doc linux-doc-6.1``:
3,680 ``*.rst.txt``, 35 MB; see ``benchmarks/_corpus.py``), copied into one temporary
directory so every run reads the same files. Everything uses the CLI's defaults: the hashing
embedder (384), ``Chunker(500, 50)`` and a fresh SQLite store. Measured in one run:

a. the CLI, in-process: ``cli.main(["ingest", DIR])`` (output to a string buffer);
   a'. the CLI as a subprocess (``python -m pywrapai_graph.composition.cli``), which adds
   the interpreter start and the imports;
b. the library: ``IngestDocuments(Embedder("hashing"), SQLiteVectorStore, Chunker)`` over the
   files read with ``Path.read_text``, and the plainest direct calls of the same components
   (split, ``embed_matrix``, ``replace_document_vectors`` per file) — target a <= 1.2x b;
c. the CLI re-ingest with every file unchanged (in-process and as a subprocess) against
d. reading every file and hashing its bytes with SHA-256 — target c <= 2x d.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks._corpus import corpus_files
from benchmarks._table import print_table
from pywrapai_graph import Document, Embedder, SQLiteVectorStore
from pywrapai_graph.application.chunker import Chunker
from pywrapai_graph.application.ingest_documents import IngestDocuments, content_hash
from pywrapai_graph.composition import cli
from pywrapai_graph.domain.manifest import DocumentManifest, EmbedderIdentity

CHUNK_SIZE, OVERLAP, DIM = 500, 50, 384
CLI = (sys.executable, "-m", "pywrapai_graph.composition.cli")


def copy_corpus(dest: Path, limit: int | None) -> list[Path]:
    """The corpus files copied under ``dest`` (flat names keep the order stable)."""
    files = corpus_files()[:limit]
    copied = []
    for i, src in enumerate(files):
        target = dest / f"{i:05d}-{src.name}"
        shutil.copyfile(src, target)
        copied.append(target)
    return copied


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def cli_in_process(config: Path, corpus: Path) -> str:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(["--config", str(config), "ingest", str(corpus)], out=out, err=err)
    if code != 0:
        raise SystemExit(f"ingest failed ({code}): {err.getvalue()}")
    return out.getvalue().splitlines()[-1]


def cli_subprocess(config: Path, corpus: Path) -> str:
    done = subprocess.run(
        [*CLI, "--config", str(config), "ingest", str(corpus)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"ingest failed ({done.returncode}): {done.stderr}")
    return done.stdout.splitlines()[-1]


def library(db: Path, files: list[Path]) -> None:
    store = SQLiteVectorStore(db)
    ingest = IngestDocuments(
        Embedder(provider="hashing", dimension=DIM), store, Chunker(CHUNK_SIZE, OVERLAP)
    )
    docs = (
        Document(p.read_text("utf-8"), metadata={"source": p.name, "path": str(p)}, id=str(p))
        for p in files
    )
    ingest(docs)
    store.close()


def direct_calls(db: Path, files: list[Path]) -> None:
    """The components alone: no manifest lookup, no batching across files."""
    store = SQLiteVectorStore(db)
    embedder = Embedder(provider="hashing", dimension=DIM)
    chunker = Chunker(CHUNK_SIZE, OVERLAP)
    identity = EmbedderIdentity("hashing", f"hashing-{DIM}", DIM)
    for p in files:
        doc = Document(p.read_text("utf-8"), metadata={"source": p.name}, id=str(p))
        chunks = chunker.split(doc)
        if not chunks:
            continue
        vectors = embedder.embed_matrix([c.text for c in chunks])
        manifest = DocumentManifest(doc.id, content_hash(doc, chunker), len(chunks), identity)
        store.replace_document_vectors(manifest, chunks, vectors)
    store.close()


def hash_files(files: list[Path]) -> None:
    """Read + SHA-256 of every file of a ready list."""
    for p in files:
        hashlib.sha256(p.read_bytes()).hexdigest()


def find_and_hash(corpus: Path) -> None:
    """What "hashing the files of a directory" takes: find them (os.walk), read, SHA-256."""
    for folder, _, names in os.walk(corpus):
        for name in names:
            with open(os.path.join(folder, name), "rb") as f:
                hashlib.sha256(f.read()).hexdigest()


def best(fn: Callable[[], object], clock: Callable[[], float], repeat: int = 7) -> float:
    """Best of ``repeat`` runs on ``clock``."""
    times = []
    for _ in range(repeat):
        start = clock()
        fn()
        times.append(clock() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--limit", type=int, default=None, help="use the first N files only")
    parser.add_argument("--no-subprocess", action="store_true", help="skip the subprocess runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cli-ingest-") as tmp:
        root = Path(tmp)
        corpus = root / "corpus"
        corpus.mkdir()
        files = copy_corpus(corpus, args.limit)
        size = sum(p.stat().st_size for p in files)
        print(f"corpus: {len(files):,} files, {size / 1e6:.1f} MB, {os.cpu_count()} cores")
        config = root / "cli.yaml"
        config.write_text(
            f"store:\n  backend: sqlite\n  path: {root / 'cli.db'}\n"
            f"embedder:\n  provider: hashing\n  dimension: {DIM}\n"
            f"chunker:\n  chunk_size: {CHUNK_SIZE}\n  overlap: {OVERLAP}\n",
            encoding="utf-8",
        )
        hash_files(files)  # warm the page cache for everyone

        t_lib = timed(lambda: library(root / "lib.db", files))
        t_direct = timed(lambda: direct_calls(root / "direct.db", files))
        summary: list[str] = []
        t_cli = timed(lambda: summary.append(cli_in_process(config, corpus)))
        rows = [
            ("b. library: IngestDocuments (anchor)", t_lib, 1.0),
            ("b. direct calls of the same components", t_direct, t_direct / t_lib),
            ("a. CLI ingest, in-process", t_cli, t_cli / t_lib),
        ]
        if not args.no_subprocess:
            db = root / "sub.db"
            sub_config = root / "sub.yaml"
            sub_config.write_text(config.read_text().replace(str(root / "cli.db"), str(db)))
            t_sub = timed(lambda: cli_subprocess(sub_config, corpus))
            rows.append(("a. CLI ingest, subprocess", t_sub, t_sub / t_lib))
        print(f"CLI: {summary[0]}")
        print_table("Fresh ingest (s)", rows, unit="s")
        print(f"CLI in-process / direct calls: {t_cli / t_direct:.2f}x (target <= 1.2x)")

        for clock, label in ((time.perf_counter, "wall"), (time.process_time, "CPU")):
            t_find = best(lambda: find_and_hash(corpus), clock)
            t_hash = best(lambda: hash_files(files), clock)
            t_re = best(lambda: summary.append(cli_in_process(config, corpus)), clock)
            rows = [
                ("d. find (os.walk) + read + SHA-256 (anchor)", t_find, 1.0),
                ("d. read + SHA-256 of a ready file list", t_hash, t_hash / t_find),
                ("c. CLI re-ingest, all unchanged, in-process", t_re, t_re / t_find),
            ]
            if not args.no_subprocess and clock is time.perf_counter:
                t_sub_re = best(lambda: cli_subprocess(config, corpus), clock, repeat=3)
                rows.append(("c. CLI re-ingest, subprocess", t_sub_re, t_sub_re / t_find))
                t_help = best(cli_subprocess_help, clock, repeat=3)
                rows.append(("   (subprocess `--help` alone)", t_help, t_help / t_find))
            print_table(
                f"Re-ingest of the unchanged corpus, {label} time, best of 7 (ms)", rows, "ms"
            )
        print(f"CLI again: {summary[-1]}")


def cli_subprocess_help() -> None:
    subprocess.run(
        [*CLI, "--help"],
        capture_output=True,
        check=True,
    )


if __name__ == "__main__":
    main()
