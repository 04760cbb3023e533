"""The PostgreSQL the benchmarks run against."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def postgres_url() -> Iterator[str]:
    """PYWRAPAI_TEST_PG_URL, else the embedded PostgreSQL of the integration tests."""
    url = os.environ.get("PYWRAPAI_TEST_PG_URL")
    if url:
        yield url
        return
    from tests.integration.servers import EmbeddedPostgres

    server = EmbeddedPostgres()
    try:
        yield server.start()
    finally:
        server.stop()
