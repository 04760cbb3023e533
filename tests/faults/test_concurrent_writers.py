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
