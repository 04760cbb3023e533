"""``agent.run_store``: where the container's agents keep their runs (none, SQLite, PostgreSQL)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, SecretStr, model_validator

from pywrapai_graph.ports.run_store import RunStore

__all__ = ["RunStoreSettings"]


class RunStoreSettings(BaseModel):
    """``agent.run_store: sqlite`` keeps runs in the SQLite file ``path``;
    ``agent.run_store: {backend: postgres, dsn: ...}`` in that PostgreSQL database (without
    ``dsn``: the database of ``store.dsn``); ``none`` (the default) keeps no run, so a run
    stopped for approval resumes only from the state the caller holds."""

    model_config = ConfigDict(extra="forbid")

    backend: Literal["none", "sqlite", "postgres"] = "none"
    path: str = "agent_runs.db"
    dsn: SecretStr | None = None
    table: str = "pywrapai_agent_runs"

    @model_validator(mode="before")
    @classmethod
    def _named(cls, value: Any) -> Any:
        return {"backend": value} if isinstance(value, str) else value

    def store(self, store_dsn: SecretStr | None) -> RunStore | None:
        """The run store these settings describe (``store_dsn``: the vector store's DSN).

        Raises:
            ConfigurationError: ``postgres`` without a DSN here or in ``store.dsn``.
        """
        if self.backend == "sqlite":
            from pywrapai_graph.adapters.shared.runs.sqlite import SQLiteRunStore

            return SQLiteRunStore(self.path, table=self.table)
        if self.backend == "none":
            return None
        dsn = self.dsn or store_dsn
        if dsn is None:
            from pywrapai_graph.errors import ConfigurationError

            raise ConfigurationError(
                "agent.run_store postgres needs agent.run_store.dsn (or store.dsn)"
            )
        from pywrapai_graph.adapters.shared.runs.postgres import PostgresRunStore

        return PostgresRunStore(dsn.get_secret_value(), table=self.table)
