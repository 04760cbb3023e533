"""Layers of configuration: a layer that changes the backend drops the previous backend's location."""

from __future__ import annotations

from pathlib import Path

import pytest

from pywrapai_graph.composition.settings import load_settings
from pywrapai_graph.errors import ConfigurationError

SQLITE_FILE = "store:\n  backend: sqlite\n  path: kb/store.db\n  table: docs\n"


@pytest.fixture
def sqlite_yaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ("BACKEND", "PATH", "URL", "DSN", "DIMENSION", "TABLE", "COLLECTION", "API_KEY"):
        monkeypatch.delenv(f"PYWRAPAI_STORE__{var}", raising=False)
    path = tmp_path / "pywrapai.yaml"
    path.write_text(SQLITE_FILE)
    return path


def test_env_swap_to_a_server_drops_the_files_path(
    sqlite_yaml: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYWRAPAI_STORE__BACKEND", "qdrant")
    monkeypatch.setenv("PYWRAPAI_STORE__URL", "http://qdrant:6333")
    store = load_settings(sqlite_yaml).store
    assert (store.backend, store.url, store.path) == ("qdrant", "http://qdrant:6333", None)


@pytest.mark.parametrize(
    ("backend", "location"),
    [
        ("faiss", ".pywrapai/store.faiss"),
        ("qdrant", ".pywrapai/qdrant"),
        ("chroma", ".pywrapai/chroma"),
        ("memory", "process memory"),
    ],
)
def test_env_swap_falls_back_to_the_backends_own_default(
    sqlite_yaml: Path, monkeypatch: pytest.MonkeyPatch, backend: str, location: str
) -> None:
    monkeypatch.setenv("PYWRAPAI_STORE__BACKEND", backend)
    store = load_settings(sqlite_yaml).store
    assert store.path is None
    assert store.location() == location


def test_shared_keys_survive_a_swap_when_the_new_backend_reads_them(
    sqlite_yaml: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYWRAPAI_STORE__BACKEND", "pgvector")
    monkeypatch.setenv("PYWRAPAI_STORE__DSN", "postgresql://app:pw@db:5432/rag")
    monkeypatch.setenv("PYWRAPAI_STORE__DIMENSION", "384")
    store = load_settings(sqlite_yaml).store
    assert (store.backend, store.table, store.path) == ("pgvector", "docs", None)


def test_same_backend_keeps_the_lower_layers_location(
    sqlite_yaml: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYWRAPAI_STORE__BACKEND", "sqlite")
    assert load_settings(sqlite_yaml).store.path == "kb/store.db"
    monkeypatch.setenv("PYWRAPAI_STORE__PATH", "other.db")
    assert load_settings(sqlite_yaml).store.path == "other.db"


def test_a_second_file_layer_swaps_the_backend(sqlite_yaml: Path, tmp_path: Path) -> None:
    prod = tmp_path / "prod.yaml"
    prod.write_text("store:\n  backend: chroma\n  url: http://chroma:8000\nrag_k: 2\n")
    settings = load_settings([sqlite_yaml, prod])
    assert (settings.store.backend, settings.store.url, settings.store.path) == (
        "chroma",
        "http://chroma:8000",
        None,
    )
    assert settings.rag_k == 2
    # dict layers follow the same rule
    layered = load_settings(
        [{"store": {"backend": "faiss", "path": "x.faiss"}}, {"store": {"backend": "sqlite"}}]
    )
    assert layered.store.path is None


def test_a_lone_layer_still_validates_its_own_keys(sqlite_yaml: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"takes store\.path or store\.url, not both"):
        load_settings({"store": {"backend": "qdrant", "path": "q", "url": "http://q:6333"}})
