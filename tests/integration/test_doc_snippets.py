"""The documentation's server snippets (``<!-- snippet: integration -->``), run as written
against the embedded PostgreSQL+pgvector and Chroma servers, named by ``DATABASE_URL`` and
``CHROMA_URL``; and env-only swaps to those servers in the repository folder."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import snippets
from tests.e2e.test_env_swaps import prepare_repo, swap_and_use
from tests.integration.servers import free_port
from tests.snippets import Snippet

pytestmark = pytest.mark.integration

SERVER_SNIPPETS = snippets.single("integration")
SERVER_PAGES = snippets.walkthroughs("integration")


@pytest.fixture(scope="module")
def server_env(pg_url: str, chroma_url: str) -> Iterator[dict[str, str]]:
    with snippets.wire_environment() as env:
        yield {**env, "DATABASE_URL": pg_url, "CHROMA_URL": chroma_url, "PORT": str(free_port())}


@pytest.mark.parametrize("snippet", SERVER_SNIPPETS, ids=[s.where for s in SERVER_SNIPPETS])
def test_server_snippet_runs_as_written(
    snippet: Snippet, tmp_path: Path, server_env: dict[str, str]
) -> None:
    snippets.run(snippet, tmp_path, server_env)


@pytest.mark.parametrize("page", list(SERVER_PAGES))
def test_walkthrough_runs_as_written(page: str, tmp_path: Path, server_env: dict[str, str]) -> None:
    outputs = snippets.run_walkthrough(SERVER_PAGES[page], tmp_path, server_env)
    if page == "docs/run-it-for-real.md":  # the service answered over HTTP, with its sources
        health, ready, answer = outputs[-1].strip().splitlines()
        assert json.loads(health) == json.loads(ready) == {"status": "ok"}
        reply = json.loads(answer)
        assert reply["answer"] == snippets.WIRE_REPLY
        assert reply["sources"], reply
        assert "Refunds are issued within 5 business days" in outputs[-4]  # ask --show-messages
        # the page's logging configuration formats uvicorn's lines (time, level, logger)
        log = (tmp_path / "work" / "uvicorn.log").read_text()
        assert re.search(
            r"^\d{4}-\d\d-\d\d [\d:,]+ INFO uvicorn.error: Application startup", log, re.M
        )


def _table(tmp_path: Path) -> str:
    return "swap_" + hashlib.sha1(str(tmp_path).encode()).hexdigest()[:10]


def test_env_only_swap_to_pgvector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pg_url: str
) -> None:
    prepare_repo(tmp_path, monkeypatch)
    shown = swap_and_use(
        monkeypatch,
        "pgvector",
        {
            "PYWRAPAI_STORE__DSN": pg_url,
            "PYWRAPAI_STORE__DIMENSION": "384",
            "PYWRAPAI_STORE__TABLE": _table(tmp_path),
        },
    )
    assert shown["location"] == f"PostgreSQL table {_table(tmp_path)!r}"


def test_env_only_swap_to_a_chroma_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chroma_url: str
) -> None:
    work = prepare_repo(tmp_path, monkeypatch)
    shown = swap_and_use(
        monkeypatch,
        "chroma",
        {"PYWRAPAI_STORE__URL": chroma_url, "PYWRAPAI_STORE__COLLECTION": _table(tmp_path)},
    )
    assert shown["location"] == chroma_url
    assert not (work / ".pywrapai" / "chroma").exists()  # the server holds the data
