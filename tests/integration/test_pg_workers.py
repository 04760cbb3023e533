"""Three worker processes over one PostgreSQL store: what one writes, replaces or deletes is
what every other retrieves at its next query, in dense, lexical and hybrid mode."""

from __future__ import annotations

import uuid

import pytest

from tests.integration.store_workers import DIM, Worker, workers

pytestmark = pytest.mark.integration
MODES = ("dense", "lexical", "hybrid")
DOCS = ("d0", "d1", "d2", "d3")


def text_of(doc: str, version: int) -> str:
    # one word no other version or document holds: its lexical query finds this text alone
    return f"{doc} release notes version {version} mark{doc}x{version}"


def check_everyone(team: list[Worker], current: dict[str, str], gone: set[str]) -> None:
    """Every worker, in every mode: each current text is found first by its own words, and no
    text of ``gone`` (replaced or erased versions) is ever returned."""
    for worker in team:
        for mode in MODES:
            for doc, text in current.items():
                hits = worker.ask("retrieve", mode, text, len(DOCS))
                assert hits[0] == (doc, text), (mode, doc, hits)
                assert not {t for _, t in hits} & gone, (mode, hits)
            for old in gone:  # the erased words themselves
                hits = worker.ask("retrieve", mode, old, len(DOCS))
                assert not {t for _, t in hits} & gone, (mode, old, hits)
                if mode == "lexical":
                    marker = old.split()[-1]
                    assert worker.ask("retrieve", mode, marker, len(DOCS)) == []


def test_three_workers_see_each_others_writes_and_deletes(pg_url: str) -> None:
    table = f"workers_{uuid.uuid4().hex[:10]}"
    factory = (
        "PGVectorStore",
        {"connection_string": pg_url, "table_name": table, "dimension": DIM},
    )
    with workers(factory, 3) as team:
        current: dict[str, str] = {}
        gone: set[str] = set()
        for worker in team:  # every worker has searched (and would hold any cache) first
            for mode in MODES:
                assert worker.ask("retrieve", mode, "release notes", 4) == []
        for version in range(6):
            writer, eraser = team[version % 3], team[(version + 1) % 3]
            doc = DOCS[version % len(DOCS)]
            if doc in current:
                gone.add(current[doc])
            current[doc] = text_of(doc, version)
            assert writer.ask("ingest", doc, current[doc]) == 1
            check_everyone(team, current, gone)
            if version % 2 == 1:  # erase another document
                victim = sorted(current)[0]
                assert eraser.ask("delete", victim) == 1
                gone.add(current.pop(victim))
                check_everyone(team, current, gone)
        for worker in team:
            worker.ask("delete", "nothing-here")
