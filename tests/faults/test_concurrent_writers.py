"""Two processes ingesting into one file-based store at once: both finish, nothing is lost."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.faults.harness import (
    ROOT,
    clean_contents,
    contents,
    ingest_command,
    open_store,
    write_config,
    write_corpus,
)


@pytest.mark.parametrize(
    ("backend", "store_lines"),
    [
        ("sqlite", "  backend: sqlite\n  path: {kb}/store.db\n"),
        ("faiss", "  backend: faiss\n  path: {kb}/store.faiss\n"),
        ("chroma", "  backend: chroma\n  path: {kb}/chroma\n"),
    ],
)
def test_two_writer_processes(tmp_path: Path, backend: str, store_lines: str) -> None:
    config = write_config(tmp_path, store_lines.format(kb=tmp_path / "kb"))
    first, second = tmp_path / "one", tmp_path / "two"
    write_corpus(first, "A", 10, 30)
    write_corpus(second, "B", 10, 30)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            ingest_command(config, folder),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        for folder in (first, second)
    ]
    outputs = [p.communicate(timeout=300) for p in procs]
    for proc, (_out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err.decode()
    expected = {**clean_contents(config, first), **clean_contents(config, second)}
    store = open_store(config)
    try:
        assert contents(store, list(expected)) == expected
        assert len(store) == sum(len(c) for c in expected.values())
    finally:
        store.close()


def test_qdrant_local_second_process_gets_a_clear_error(tmp_path: Path) -> None:
    """Qdrant's local mode is one process at a time: the other one is refused, cleanly."""
    config = write_config(tmp_path, f"  backend: qdrant\n  path: {tmp_path / 'kb'}\n")
    first, second = tmp_path / "one", tmp_path / "two"
    write_corpus(first, "A", 10, 30)
    write_corpus(second, "B", 10, 30)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            ingest_command(config, folder), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        for folder in (first, second)
    ]
    outputs = [p.communicate(timeout=300) for p in procs]
    done = []
    for folder, proc, (_out, err) in zip((first, second), procs, outputs, strict=True):
        if proc.returncode == 0:
            done.append(folder)
        else:  # refused with our message, not a traceback
            assert proc.returncode == 1, err.decode()
            assert err.decode().startswith("error: ") and "Traceback" not in err.decode()
    assert done, "at least one process must have written"
    expected = {}
    for folder in done:
        expected.update(clean_contents(config, folder))
    store = open_store(config)
    try:
        assert contents(store, list(expected)) == expected
        assert len(store) == sum(len(c) for c in expected.values())
    finally:
        store.close()
