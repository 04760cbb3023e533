"""The offload pool's queue is bounded: past PYWRAPAI_OFFLOAD_QUEUE waiting calls a new one
is refused at once with OverloadedError; finished and cancelled calls free their place."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from pywrapai_graph.errors import OverloadedError
from pywrapai_graph.ports import offload as offload_module
from pywrapai_graph.ports.offload import offload, offload_queue_size


@pytest.fixture
def small_pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A fresh pool of 2 threads that queues at most 3 calls."""
    monkeypatch.setenv("PYWRAPAI_OFFLOAD_THREADS", "2")
    monkeypatch.setenv("PYWRAPAI_OFFLOAD_QUEUE", "3")
    monkeypatch.setattr(offload_module, "_pools", {})
    monkeypatch.setattr(offload_module, "_pending", [0])
    yield
    pool = offload_module._pools.get("pool")
    if pool is not None:
        pool.shutdown(wait=True)


def test_the_default_queue_is_64_calls_per_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYWRAPAI_OFFLOAD_THREADS", "5")
    monkeypatch.delenv("PYWRAPAI_OFFLOAD_QUEUE", raising=False)
    assert offload_queue_size() == 320


@pytest.mark.usefixtures("small_pool")
def test_a_full_queue_refuses_at_once_and_frees_places_as_calls_finish() -> None:
    gate = threading.Event()
    started: list[int] = []

    def blocked(i: int) -> int:
        started.append(i)
        gate.wait(60)
        return i

    async def scenario() -> None:
        admitted = [asyncio.ensure_future(offload(blocked, i)) for i in range(5)]
        await asyncio.sleep(0)  # each has been handed to the pool
        with pytest.raises(OverloadedError, match="PYWRAPAI_OFFLOAD_QUEUE = 3"):
            await offload(blocked, 99)
        assert 99 not in started  # refused, never run
        admitted[4].cancel()  # a waiting call that is cancelled gives its place back
        await asyncio.sleep(0)
        late = asyncio.ensure_future(offload(blocked, 5))
        await asyncio.sleep(0)
        gate.set()
        assert await asyncio.gather(*admitted[:4], late) == [0, 1, 2, 3, 5]
        assert offload_module._pending == [0]
        assert await offload(blocked, 6) == 6

    asyncio.run(scenario())
