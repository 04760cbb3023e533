"""Swapping the store by environment alone, in the repository folder with the shipped pywrapai.yaml."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from pywrapai_graph.composition.cli import main
from tests.snippets import repository_copy


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def stats(text: str) -> dict[str, str]:
    pairs = (line.split(":", 1) for line in text.splitlines())
    return {key.strip(): value.strip() for key, value in pairs}


def prepare_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the repository folder as the working directory, no PYWRAPAI_STORE__* set."""
    for var in ("BACKEND", "PATH", "URL", "DSN", "DIMENSION", "API_KEY"):
        monkeypatch.delenv(f"PYWRAPAI_STORE__{var}", raising=False)
    monkeypatch.delenv("PYWRAPAI_LLM__PROVIDER", raising=False)
    work = repository_copy(tmp_path)
    monkeypatch.chdir(work)
    return work


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the repository folder; the shipped pywrapai.yaml configures SQLite."""
    return prepare_repo(tmp_path, monkeypatch)


def swap_and_use(
    monkeypatch: pytest.MonkeyPatch, backend: str, env: dict[str, str] | None = None
) -> dict[str, str]:
    """Ingest with the shipped config, then swap by environment: ingest, stats, ask."""
    code, out, err = run("ingest", "examples/data")
    assert code == 0, err
    sqlite_total = out.strip().rsplit(";", 1)[-1]  # " N chunks in the store"
    monkeypatch.setenv("PYWRAPAI_STORE__BACKEND", backend)
    for key, value in (env or {}).items():
        monkeypatch.setenv(key, value)
    code, out, err = run("ingest", "examples/data")
    assert code == 0, f"PYWRAPAI_STORE__BACKEND={backend} ingest failed: {err}"
    assert out.strip().rsplit(";", 1)[-1] == sqlite_total  # the same chunks, in the new store
    code, out, err = run("store", "stats")
    assert code == 0, err
    shown = stats(out)
    assert shown["backend"] == backend
    code, out, err = run("ask", "--show-messages", "How long do refunds take?")
    assert code == 0, err
    assert "retrieved: returns-policy.md" in out
    monkeypatch.delenv("PYWRAPAI_STORE__BACKEND")
    return shown


@pytest.mark.parametrize(
    ("backend", "location", "files"),
    [
        ("sqlite", ".pywrapai/store.db", {"store.db"}),
        (
            "faiss",
            ".pywrapai/store.faiss",
            {"store.db", "store.meta.db"},  # the FAISS index lives in memory
        ),
        ("qdrant", ".pywrapai/qdrant", {"store.db", "qdrant"}),
        ("chroma", ".pywrapai/chroma", {"store.db", "chroma"}),
    ],
)
def test_env_only_swap_uses_the_backends_own_default_location(
    repo: Path, monkeypatch: pytest.MonkeyPatch, backend: str, location: str, files: set[str]
) -> None:
    shown = swap_and_use(monkeypatch, backend)
    assert shown["location"] == location
    assert {
        p.name
        for p in (repo / ".pywrapai").iterdir()
        if not p.name.endswith(("-wal", "-shm", ".lock"))
    } == files
    # the SQLite store of the shipped config is untouched by the swap
    code, out, _ = run("store", "stats")
    assert code == 0
    assert stats(out)["backend"] == "sqlite"
    assert stats(out)["chunks"] == shown["chunks"]


def test_env_only_swap_to_memory(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYWRAPAI_STORE__BACKEND", "memory")
    code, out, err = run("store", "stats")
    assert code == 0, err
    assert stats(out)["location"] == "process memory"
    assert stats(out)["chunks"] == "0"
    code, out, err = run("ask", "--show-messages", "How long do refunds take?")
    assert code == 0, err
    assert not (repo / ".pywrapai").exists()  # nothing written for an in-memory store


def test_qdrant_url_over_the_shipped_file_is_not_a_conflict(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the README's swap: the file's store.path must not clash with the environment's URL
    monkeypatch.setenv("PYWRAPAI_STORE__BACKEND", "qdrant")
    monkeypatch.setenv("PYWRAPAI_STORE__URL", "http://127.0.0.1:9")
    code, _, err = run("store", "stats")
    assert code == 1  # nothing listens there: a runtime failure, not a configuration error
    assert "not both" not in err
    assert "cannot reach Qdrant at 127.0.0.1:9: the connection was refused" in err
