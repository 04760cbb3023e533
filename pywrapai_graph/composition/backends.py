"""The vector-store table: every backend, by name, in one place.

A row holds the backend's name, its settings model (the ``store.*`` fields it needs and
their cross-field rules), the factory that imports and builds the store, the pip extra of
its driver and, for a file-backed store, its default path under ``.pywrapai/``. The settings
(which names ``store.backend`` accepts, what each requires, the default paths) and the
container's ``vector_store`` are derived from this table, so a new store is its adapter
module plus one row (or one :func:`register_backend` call for a store of your own).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, SecretStr, model_validator

from pywrapai_graph.errors import ConfigurationError, InvalidArgumentError
from pywrapai_graph.ports import BaseVectorStore

if TYPE_CHECKING:
    from pywrapai_graph.composition.settings import StoreSettings

__all__ = [
    "BACKENDS",
    "BackendEntry",
    "BackendSettings",
    "backend_entry",
    "build_store",
    "default_store_path",
    "register_backend",
]


class BackendSettings(BaseModel):
    """The ``store.*`` fields one backend needs; a subclass per backend adds its rules.

    Validated against the store section (unknown keys ignored): a missing required field
    reads ``store.<field> is required for backend '<name>'``.
    """

    model_config = ConfigDict(extra="ignore")


class _PGVectorSettings(BackendSettings):
    dsn: SecretStr
    dimension: int


class _PathOrUrlSettings(BackendSettings):
    backend: str
    path: str | None = None
    url: str | None = None

    @model_validator(mode="after")
    def _not_both(self) -> _PathOrUrlSettings:
        if self.path is not None and self.url is not None:
            raise InvalidArgumentError(
                f"backend {self.backend!r} takes store.path or store.url, not both"
            )
        return self


@dataclass(frozen=True, slots=True)
class BackendEntry:
    """One vector-store backend.

    Attributes:
        name: the ``store.backend`` value.
        build: builds the store from the validated store settings (imports inside its body).
        settings: the fields and rules this backend requires of ``store.*``.
        extra: the pip extra that installs its driver (None: nothing to install).
        default_path: where a file-backed store lives when ``store.path`` is not set.
        lexical: the store has lexical (BM25) search: ``retriever.mode`` lexical and hybrid.
    """

    name: str
    build: Callable[[StoreSettings], BaseVectorStore]
    settings: type[BackendSettings] = BackendSettings
    extra: str | None = None
    default_path: str | None = None
    lexical: bool = True


def _file_path(store: StoreSettings) -> str:
    chosen = Path(store.path or default_store_path(store.backend))
    chosen.parent.mkdir(parents=True, exist_ok=True)
    return str(chosen)


def _memory(store: StoreSettings) -> BaseVectorStore:
    from pywrapai_graph.adapters.vectorstores.memory.store import InMemoryVectorStore

    return InMemoryVectorStore(dimension=store.dimension)


def _sqlite(store: StoreSettings) -> BaseVectorStore:
    from pywrapai_graph.adapters.vectorstores.sqlite.store import SQLiteVectorStore

    return SQLiteVectorStore(_file_path(store), table_name=store.table)


def _faiss(store: StoreSettings) -> BaseVectorStore:
    from pywrapai_graph.adapters.vectorstores.faiss.store import FAISSVectorStore

    index = _file_path(store)
    meta = os.path.splitext(index)[0] + ".meta.db"
    return FAISSVectorStore(
        index, meta, dimension=store.dimension, lock_timeout=store.lock_timeout_s
    )


def _chroma(store: StoreSettings) -> BaseVectorStore:
    from pywrapai_graph.adapters.vectorstores.chroma.store import ChromaVectorStore

    if store.url is not None:
        return ChromaVectorStore(
            url=store.url, collection=store.collection, request_timeout=store.request_timeout_s
        )
    return ChromaVectorStore(path=_file_path(store), collection=store.collection)


def _pgvector(store: StoreSettings) -> BaseVectorStore:
    from pywrapai_graph.adapters.vectorstores.postgres.store import PGVectorStore

    required = _PGVectorSettings.model_validate(store.model_dump(exclude_none=True))
    return PGVectorStore(
        required.dsn.get_secret_value(),
        table_name=store.table,
        dimension=required.dimension,
        pool_size=store.pool_size,
        pool_timeout_ms=store.pool_timeout_ms,
        statement_timeout_ms=store.statement_timeout_ms,
        create_schema=store.create_schema,
    )


def _pgvector_only(store: StoreSettings, command: str) -> _PGVectorSettings:
    if store.backend != "pgvector":
        raise ConfigurationError(
            f"{command} works on a PostgreSQL schema; the configured backend is "
            f"{store.backend!r} (set store.backend: pgvector)"
        )
    return _PGVectorSettings.model_validate(store.model_dump(exclude_none=True))


def init_pgvector_schema(store: StoreSettings) -> bool:
    """``pywrapai-graph store init``: create the pgvector schema with an owner's DSN.

    Returns:
        True when something was created, False when everything already existed.

    Raises:
        ConfigurationError: not a pgvector store, another dimension, or a newer schema version.
        VectorStoreError: the server cannot be reached, or the role lacks a right (named).
    """
    from pywrapai_graph.adapters.vectorstores.postgres.store import PGVectorStore

    required = _pgvector_only(store, "store init")
    return PGVectorStore.init_schema(
        required.dsn.get_secret_value(), table_name=store.table, dimension=required.dimension
    )


def pgvector_grants(store: StoreSettings, reader: str | None, writer: str | None) -> list[str]:
    """``pywrapai-graph store grants``: the GRANT statements for application roles.

    Raises:
        ConfigurationError: not a pgvector store.
        InvalidArgumentError: neither role named.
        VectorStoreError: the server cannot be reached, or the table does not exist.
    """
    from pywrapai_graph.adapters.vectorstores.postgres.store import PGVectorStore

    required = _pgvector_only(store, "store grants")
    return PGVectorStore.grant_statements(
        required.dsn.get_secret_value(), store.table, reader=reader, writer=writer
    )


def _qdrant(store: StoreSettings) -> BaseVectorStore:
    from pywrapai_graph.adapters.vectorstores.qdrant.store import QdrantVectorStore

    key = None if store.api_key is None else store.api_key.get_secret_value()
    cluster: dict[str, Any] = {  # a folder refuses them (ConfigurationError)
        "shard_number": store.shard_number,
        "replication_factor": store.replication_factor,
        "write_consistency_factor": store.write_consistency_factor,
        "read_consistency": store.read_consistency,
    }
    if store.url is not None:
        return QdrantVectorStore(
            store.collection, url=store.url, api_key=key, dimension=store.dimension, **cluster
        )
    location = store.path if store.path == ":memory:" else _file_path(store)
    return QdrantVectorStore(
        store.collection, location=location, dimension=store.dimension, **cluster
    )


def _milvus(store: StoreSettings) -> BaseVectorStore:
    from pywrapai_graph.adapters.vectorstores.milvus.store import MilvusVectorStore

    token = None if store.api_key is None else store.api_key.get_secret_value()
    if store.url is not None:
        return MilvusVectorStore(
            store.collection, url=store.url, token=token, dimension=store.dimension
        )
    return MilvusVectorStore(store.collection, path=_file_path(store), dimension=store.dimension)


_BACKENDS: dict[str, BackendEntry] = {
    e.name: e
    for e in (
        BackendEntry("memory", _memory),
        BackendEntry("sqlite", _sqlite, default_path=".pywrapai/store.db"),
        BackendEntry("faiss", _faiss, extra="faiss", default_path=".pywrapai/store.faiss"),
        BackendEntry(
            "chroma",
            _chroma,
            _PathOrUrlSettings,
            extra="chroma",
            default_path=".pywrapai/chroma",
            lexical=False,  # dense only: see ChromaVectorStore
        ),
        BackendEntry("pgvector", _pgvector, _PGVectorSettings, extra="pgvector"),
        BackendEntry(
            "qdrant", _qdrant, _PathOrUrlSettings, extra="qdrant", default_path=".pywrapai/qdrant"
        ),
        BackendEntry(
            "milvus",
            _milvus,
            _PathOrUrlSettings,
            extra="milvus",
            default_path=".pywrapai/milvus.db",
        ),
    )
}

#: backend name → entry (read-only view; add rows with :func:`register_backend`).
BACKENDS: Mapping[str, BackendEntry] = MappingProxyType(_BACKENDS)


def register_backend(entry: BackendEntry) -> None:
    """Add (or replace) a backend: settings and the container accept its name from now on."""
    _BACKENDS[entry.name] = entry


def backend_entry(name: str) -> BackendEntry:
    """The entry of ``name``.

    Raises:
        ConfigurationError: no such backend (the message lists the known ones).
    """
    entry = _BACKENDS.get(name)
    if entry is None:
        raise ConfigurationError(
            f"unknown vector-store backend {name!r}; known backends: {', '.join(_BACKENDS)}"
        )
    return entry


def default_store_path(backend: str) -> str:
    """The default location of a file-backed store under ``.pywrapai/``."""
    entry = _BACKENDS.get(backend)
    return entry.default_path if entry is not None and entry.default_path else ":memory:"


def build_store(store: StoreSettings) -> BaseVectorStore:
    """The configured store, built by its backend's factory."""
    return backend_entry(store.backend).build(store)
