"""``agent.run_store`` in config: the container's agents share the configured run store."""

from __future__ import annotations

from pathlib import Path

import pytest

from pywrapai_graph import PostgresRunStore, SQLiteRunStore
from pywrapai_graph.composition.container import build_container
from pywrapai_graph.errors import ConfigurationError


def test_sqlite_by_name_or_section_and_none_by_default(tmp_path: Path) -> None:
    path = str(tmp_path / "runs.db")
    for run_store in ("sqlite", {"backend": "sqlite", "path": path}):
        with build_container(
            {"store": {"backend": "memory"}, "agent": {"run_store": run_store}}
        ) as container:
            agent, again = container.agent(), container.agent()
            assert isinstance(agent.run_store, SQLiteRunStore)
            assert again.run_store is agent.run_store  # one store for every agent
    assert SQLiteRunStore(path).load("nothing") is None  # the file was created
    with build_container({"store": {"backend": "memory"}}) as container:
        assert container.agent().run_store is None


def test_postgres_takes_its_dsn_or_the_store_s_and_never_shows_it() -> None:
    dsn = "postgresql://app:pw-123@127.0.0.1:1/db"
    config = {"store": {"backend": "memory"}, "agent": {"run_store": {"backend": "postgres"}}}
    with pytest.raises(ConfigurationError, match="dsn"):
        build_container(config).agent()
    for extra in ({"dsn": dsn}, {}):
        section = {"backend": "postgres", **extra}
        store_section = {"backend": "memory"} if extra else {"backend": "memory", "dsn": dsn}
        container = build_container({"store": store_section, "agent": {"run_store": section}})
        store = container.agent().run_store
        assert isinstance(store, PostgresRunStore)  # connects on first use
        assert "pw-123" not in repr(store) and "pw-123" not in repr(container.settings())


def test_an_unknown_backend_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="run_store"):
        build_container({"agent": {"run_store": "redis"}})
