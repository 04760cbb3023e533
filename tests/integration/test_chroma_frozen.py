"""A Chroma server that stops answering (SIGSTOP) turns into StoreTimeoutError within the
store's request deadline, sync and async; once it runs again the store answers again.

chromadb 1.5.9 builds its HTTP pools without a timeout: before the deadline was set, these
calls hung for as long as the server stayed stopped."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pywrapai_graph import ChromaVectorStore
from pywrapai_graph.errors import StoreTimeoutError
from pywrapai_graph.testing.contracts.vector_store import make_chunks
from tests.integration.servers import ChromaServer

pytestmark = pytest.mark.integration
DIM = 8


@pytest.fixture(scope="module")
def chroma() -> Iterator[tuple[ChromaServer, str]]:
    """A server of this module's own: stopping the shared one would stall other tests."""
    server = ChromaServer()
    try:
        yield server, server.start()
    finally:
        server.stop()


@contextlib.contextmanager
def stopped(server: ChromaServer) -> Iterator[None]:
    proc = server._proc
    assert proc is not None
    os.kill(proc.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(proc.pid, signal.SIGCONT)


def outcome(call: Callable[[], Any]) -> BaseException | None:
    """What ``call`` raised (None: it returned), run in a thread the test does not wait on
    for ever: a call that hangs fails the test instead of the suite."""
    caught: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            caught.append(None)
        except BaseException as exc:  # handed to the test
            caught.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=120)
    assert caught, "the call hung past its deadline"
    return caught[0]


def test_a_stopped_server_is_a_typed_timeout_and_a_resumed_one_answers(
    chroma: tuple[ChromaServer, str],
) -> None:
    server, url = chroma
    store = ChromaVectorStore(
        url=url, collection=f"frozen_{uuid.uuid4().hex[:8]}", request_timeout=1.0
    )
    try:
        store.add(make_chunks(5, DIM))
        query = [1.0] * DIM
        assert len(store.search(query, k=3)) == 3
        assert len(asyncio.run(store.asearch(query, k=3))) == 3
        with stopped(server):
            sync_error = outcome(lambda: store.search(query, k=3))
            async_error = outcome(lambda: asyncio.run(store.asearch(query, k=3)))
            write_error = outcome(lambda: store.add(make_chunks(2, DIM, seed=7)))
        for error in (sync_error, async_error, write_error):
            assert isinstance(error, StoreTimeoutError), repr(error)
            assert isinstance(error, TimeoutError)
            assert "127.0.0.1" in str(error) and "request_timeout" in str(error)
        assert len(store.search(query, k=3)) == 3  # the server runs again: so does the store
    finally:
        store.close()
