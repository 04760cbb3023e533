"""Two processes ingesting into one file-based store at once: both finish, nothing is lost."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.faults.harness import (
    ROOT,
    assert_holds,
    clean_contents,
    ingest_command,
    write_config,
    write_corpus,
)


def race(work: Path, store_lines: str) -> tuple[Path, list[tuple[Path, int, str]]]:
    """Two ``ingest`` processes of different folders into one store, started together:
    the configuration, and each folder with its process's exit code and stderr."""
    config = write_config(work, store_lines.format(kb=work / "kb"))
    folders = [work / "one", work / "two"]
    for folder, version in zip(folders, "AB", strict=True):
        write_corpus(folder, version, 10, 30)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            ingest_command(config, folder), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        for folder in folders
    ]
    errors = [p.communicate(timeout=300)[1].decode() for p in procs]
    return config, [
        (folder, proc.returncode, err)
        for folder, proc, err in zip(folders, procs, errors, strict=True)
    ]


@pytest.mark.parametrize(
    ("backend", "store_lines"),
    [
        ("sqlite", "  backend: sqlite\n  path: {kb}/store.db\n"),
        ("faiss", "  backend: faiss\n  path: {kb}/store.faiss\n"),
    ],
)
def test_two_writer_processes(tmp_path: Path, backend: str, store_lines: str) -> None:
    config, runs = race(tmp_path, store_lines)
    expected = {}
    for folder, code, err in runs:
        assert code == 0, err
        expected.update(clean_contents(config, folder))
    assert_holds(config, expected)


@pytest.mark.parametrize(
    ("store_lines", "refusal"),
    [
        ("  backend: qdrant\n  path: {kb}\n", "open in another store"),
        ("  backend: chroma\n  path: {kb}/chroma\n", "open in another process"),
    ],
)
def test_one_process_stores_refuse_a_second_process_clearly(
    tmp_path: Path, store_lines: str, refusal: str
) -> None:
    """Qdrant's local mode and embedded Chroma are one process at a time: the other one is
    refused, cleanly."""
    config, runs = race(tmp_path, store_lines)
    expected = {}
    for folder, code, err in runs:
        if code == 0:
            expected.update(clean_contents(config, folder))
        else:  # refused with our message, not a traceback
            assert code == 1, err
            assert err.startswith("error: ") and "Traceback" not in err
            assert refusal in err
    assert expected, "at least one process must have written"
    assert_holds(config, expected)
