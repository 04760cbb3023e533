"""PostgresRunStore: the run stores' compare-and-set on a real PostgreSQL, a resume through
it, and a DSN password that appears nowhere."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from pywrapai_graph import PostgresRunStore, RunConflictError
from pywrapai_graph.errors import InvalidArgumentError, RuntimeFailure
from tests.unit.test_agent_runs import Crash, agent_over, script, state
from tests.unit.test_agent_runs import test_a_store_saves_by_compare_and_set as contract


@pytest.fixture
def store(pg_url: str, admin: Any) -> PostgresRunStore:
    with admin.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS test_agent_runs")
    return PostgresRunStore(pg_url, table="test_agent_runs")


def test_compare_and_set_on_postgres(store: PostgresRunStore) -> None:
    contract(store)


def test_a_crashed_run_resumes_from_postgres(store: PostgresRunStore, pg_url: str) -> None:
    from tests.unit.test_agent_runs import CALLS, CRASH_ON

    CALLS.clear()
    CRASH_ON.add("b")
    with pytest.raises(Crash):
        agent_over(store, script()).run("Ship a, b, c", run_id="pg1")
    other = PostgresRunStore(
        pg_url, table="test_agent_runs"
    )  # another connection, as another worker has
    done = agent_over(other, script()[2:]).resume("pg1")
    assert done.content == "Shipped a, b and c."
    assert CALLS == ["pg1-1-0", "pg1-2-0", "pg1-2-0", "pg1-2-1"]
    with pytest.raises(RunConflictError):
        other.save(state("pg1", seq=3))


def test_the_dsn_password_is_never_shown(pg_url: str) -> None:
    parts = urlsplit(pg_url)
    wrong = parts._replace(netloc=f"nobody:s3cret-pw@{parts.hostname}:{parts.port}")
    store = PostgresRunStore(urlunsplit(wrong))
    with pytest.raises(RuntimeFailure) as caught:
        store.load("r1")
    shown = f"{caught.value!s} {caught.value.__cause__!s} {store!r}"
    assert "s3cret-pw" not in shown
    with pytest.raises(InvalidArgumentError):
        PostgresRunStore(pg_url, table="runs; DROP TABLE x")
