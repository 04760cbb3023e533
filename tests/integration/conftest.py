"""Real servers for the integration tests.

Each fixture picks, in order: an explicit URL from the environment
(``PYWRAPAI_TEST_PG_URL``, ``PYWRAPAI_TEST_CHROMA_URL``, ``PYWRAPAI_TEST_QDRANT_URL``), the
embedded server started here on 127.0.0.1, then testcontainers when a Docker engine answers.
In CI (``CI=true``) PostgreSQL and Chroma must start: a failure is a test error, not a skip.
Only the Qdrant *server* needs Docker; without it those tests skip with the reason printed.
"""

from __future__ import annotations

import gc
import os
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from tests.integration.servers import ChromaServer, EmbeddedPostgres, docker_available

if TYPE_CHECKING:
    from tests.integration.qdrant_rest import QdrantRest

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _container_url(kind: str) -> Iterator[str]:
    """A testcontainers server (users with Docker); skips cleanly when there is none."""
    if not docker_available():
        pytest.skip(f"no Docker engine for a {kind} container and no embedded server")
    containers: Any = pytest.importorskip("testcontainers")
    del containers
    if kind == "postgres":
        from testcontainers.postgres import PostgresContainer

        with PostgresContainer("pgvector/pgvector:pg16") as pg:
            yield pg.get_connection_url(driver=None)
    elif kind == "chroma":
        from testcontainers.chroma import ChromaContainer

        with ChromaContainer() as chroma:
            cfg = chroma.get_config()
            yield f"http://{cfg['endpoint']}"
    else:
        from testcontainers.qdrant import QdrantContainer

        with QdrantContainer() as qdrant:
            yield f"http://{qdrant.rest_host_address}"


@pytest.fixture(autouse=True, scope="module")
def _collect_client_pools() -> Iterator[None]:
    """chromadb's HttpClient keeps an httpx pool it never closes (its close() drops it
    unclosed); collect those sockets here, at the end of the module that opened them,
    rather than as a ResourceWarning inside whichever later test the collector runs in."""
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


class _Server(Protocol):
    def start(self) -> str: ...
    def stop(self) -> None: ...


def _server_url(env_var: str, make: Callable[[], _Server], kind: str) -> Iterator[str]:
    """The URL in ``env_var``, else the embedded server, else a container (never in CI)."""
    explicit = os.environ.get(env_var)
    if explicit:
        yield explicit
        return
    server: _Server | None = None
    try:
        server = make()
        url = server.start()
    except Exception as exc:
        if server is not None:
            server.stop()
        if IN_CI:
            pytest.fail(f"the embedded {kind} server did not start: {exc!r}")
        yield from _container_url(kind)
        return
    try:
        yield url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    yield from _server_url("PYWRAPAI_TEST_PG_URL", EmbeddedPostgres, "postgres")


@pytest.fixture
def admin(pg_url: str) -> Iterator[Any]:
    """An autocommit superuser connection to :func:`pg_url` (to look at the server)."""
    import psycopg2

    conn = psycopg2.connect(pg_url)
    conn.autocommit = True
    yield conn
    conn.close()


@pytest.fixture(scope="session")
def chroma_url() -> Iterator[str]:
    yield from _server_url("PYWRAPAI_TEST_CHROMA_URL", ChromaServer, "chroma")


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


@pytest.fixture(scope="session")
def qdrant_url() -> Iterator[str]:
    explicit = os.environ.get("PYWRAPAI_TEST_QDRANT_URL")
    if explicit:
        yield explicit
        return
    yield from _container_url("qdrant")
