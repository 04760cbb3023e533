"""PerLoop: one client per event loop, closed on that loop, and forgotten with it."""

from __future__ import annotations

import asyncio
import gc

from pywrapai_graph.adapters._per_loop import PerLoop


class Client:
    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.closed_on: asyncio.AbstractEventLoop | None = None

    async def close(self) -> None:
        self.closed_on = asyncio.get_running_loop()


async def close(client: Client) -> None:
    await client.close()


def test_each_asyncio_run_gets_a_client_closed_and_forgotten_with_its_loop() -> None:
    clients = PerLoop(Client, close)
    made: list[Client] = []

    async def use() -> None:
        client = clients.get()
        assert clients.get() is client  # one per loop
        made.append(client)

    for _ in range(3):
        asyncio.run(use())
        # the loop shut the client down, and nothing keeps the loop alive through the entry
        assert len(clients) == 0
    assert len({id(c) for c in made}) == 3
    assert all(c.closed_on is c.loop for c in made)
    loops = [c.loop for c in made]
    made.clear()
    gc.collect()
    assert all(loop.is_closed() for loop in loops)


def test_aclose_closes_the_running_loops_client_only() -> None:
    clients = PerLoop(Client, close)

    async def use() -> None:
        client = clients.get()
        await clients.aclose()
        assert client.closed_on is client.loop and len(clients) == 0
        assert clients.get() is not client  # a fresh one after aclose

    asyncio.run(use())
    assert len(clients) == 0
