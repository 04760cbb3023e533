"""Several processes opening a store at once on an empty database (or a new Chroma
collection, a new Qdrant collection through the REST API) all come up: schema creation
takes turns under an advisory lock, collection creation re-reads what another process made.
Real spawned processes, many rounds."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.start_race import Racers

pytestmark = pytest.mark.integration
PROCESSES = 4
ROUNDS = 20


@pytest.fixture(scope="module")
def racers() -> Iterator[Racers]:
    group = Racers(PROCESSES)
    yield group
    group.stop()


def database_url(pg_url: str, name: str) -> str:
    base, _, _ = pg_url.rpartition("/")
    return f"{base}/{name}"


def test_processes_starting_together_on_an_empty_database_all_come_up(
    racers: Racers, pg_url: str, admin: Any
) -> None:
    failures = []
    for round_ in range(ROUNDS):
        name = f"race_{uuid.uuid4().hex[:8]}"
        with admin.cursor() as cur:
            cur.execute(f"CREATE DATABASE {name}")
        try:
            # even rounds: one table for all; odd rounds: a table each (they share the
            # extension and the schema-version table, so they race as well)
            tables = ["chunks"] * PROCESSES if round_ % 2 == 0 else [f"t{i}" for i in range(4)]
            reports = racers.race("pgvector", database_url(pg_url, name), tables)
            failures += [f"round {round_}: {r}" for r in reports.values() if r != "ok"]
        finally:
            with admin.cursor() as cur:
                cur.execute(f"DROP DATABASE {name} WITH (FORCE)")
    assert not failures, failures[:4]


def test_processes_creating_one_chroma_collection_together_all_come_up(
    racers: Racers, chroma_url: str
) -> None:
    failures = []
    for round_ in range(ROUNDS):
        name = f"race-{uuid.uuid4().hex[:8]}"
        reports = racers.race("chroma", chroma_url, [name] * PROCESSES)
        failures += [f"round {round_}: {r}" for r in reports.values() if r != "ok"]
    assert not failures, failures[:4]


def test_processes_creating_one_qdrant_collection_together_all_come_up(
    racers: Racers, qdrant_rest_url: str
) -> None:
    failures = []
    for round_ in range(ROUNDS):
        name = f"race_{uuid.uuid4().hex[:8]}"
        reports = racers.race("qdrant", qdrant_rest_url, [name] * PROCESSES)
        failures += [f"round {round_}: {r}" for r in reports.values() if r != "ok"]
    assert not failures, failures[:4]
