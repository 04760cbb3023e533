"""Real servers for the integration tests, from the shipped pytest plugin.

``pywrapai_graph.testing.pytest_plugin`` (loaded in ``tests/conftest.py``) picks, in order:
an explicit URL from the environment (``PYWRAPAI_TEST_PG_URL``, ``PYWRAPAI_TEST_CHROMA_URL``,
``PYWRAPAI_TEST_QDRANT_URL``), testcontainers when a Docker engine answers, else the embedded
server started on 127.0.0.1. PostgreSQL and Chroma always have one: a server that does not
start is a test error, not a skip. Only the Qdrant *server* needs Docker or a URL; without
them those tests skip with the reason printed.
"""

from __future__ import annotations

import gc
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tests.integration.qdrant_rest import QdrantRest


@pytest.fixture(autouse=True, scope="module")
def _collect_client_pools() -> Iterator[None]:
    """chromadb's HttpClient keeps an httpx pool it never closes (its close() drops it
    unclosed); collect those sockets here, at the end of the module that opened them,
    rather than as a ResourceWarning inside whichever later test the collector runs in."""
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


@pytest.fixture(scope="session")
def pg_url(pywrapai_pg_url: str) -> str:
    return pywrapai_pg_url


@pytest.fixture(scope="session")
def chroma_url(pywrapai_chroma_url: str) -> str:
    return pywrapai_chroma_url


@pytest.fixture
def admin(pg_url: str) -> Iterator[Any]:
    """An autocommit superuser connection to :func:`pg_url` (to look at the server)."""
    import psycopg2

    conn = psycopg2.connect(pg_url)
    conn.autocommit = True
    yield conn
    conn.close()


@pytest.fixture
def dml_role(pg_url: str, admin: Any) -> Iterator[tuple[str, str]]:
    """A new login role without rights (dropped with what it owns afterwards), and its DSN."""
    import uuid

    role = f"app_{uuid.uuid4().hex[:8]}"
    with admin.cursor() as cur:
        cur.execute(f"CREATE ROLE {role} LOGIN")
    yield role, pg_url.replace("postgres@", f"{role}@", 1)
    with admin.cursor() as cur:
        cur.execute(f"DROP OWNED BY {role}")
        cur.execute(f"DROP ROLE {role}")


@pytest.fixture(scope="session")
def qdrant_url(pywrapai_qdrant_url: str) -> str:
    return pywrapai_qdrant_url


@pytest.fixture(scope="session")
def qdrant_rest() -> Iterator[QdrantRest]:
    """Qdrant's REST API over qdrant-client's local engine (see ``qdrant_rest``): the store's
    server mode and the SDKs' HTTP paths without a Qdrant server."""
    from tests.integration.qdrant_rest import QdrantRest

    front = QdrantRest()
    try:
        front.start()
        yield front
    finally:
        front.stop()


@pytest.fixture(scope="session")
def qdrant_rest_url(qdrant_rest: QdrantRest) -> str:
    """The URL of :func:`qdrant_rest` (its ``requests`` list what clients sent)."""
    return qdrant_rest.url
