"""PerLoop: one async SDK client per event loop, closed when that loop shuts down.

SDK async clients (httpx, aiohttp) bind their connection pool to the loop that first used
them; reusing one after ``asyncio.run`` returned, or from a loop in another thread, fails
with "Event loop is closed" or a false connection error. ``PerLoop`` builds a client for
each running loop on first use.

Closing: each client is paired with a small async generator parked at its ``yield``. The
loop tracks live async generators and ``asyncio.run`` (like ``asyncio.Runner`` and
``loop.shutdown_asyncgens()``) closes them before the loop ends, which runs the generator's
``finally`` and so closes the client on its own loop: no connection outlives its loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import AbstractContextManager
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["PerLoop", "SDKClients", "close_async"]

T = TypeVar("T")


async def close_async(client: Any) -> None:
    """``await client.close()``: how the OpenAI, Anthropic and Ollama async clients close."""
    await client.close()


class PerLoop(Generic[T]):
    """Lazily built, per-event-loop instances of an async client.

    Args:
        factory: builds a new client (called inside the loop that will use it).
        closer: releases one client; awaited on that client's loop.
    """

    def __init__(self, factory: Callable[[], T], closer: Callable[[T], Awaitable[object]]) -> None:
        self._factory = factory
        self._closer = closer
        self._clients: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[T, AsyncGenerator[None, None]]
        ] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    async def _guard(
        self, client: T, loop: asyncio.AbstractEventLoop
    ) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:  # the loop is shutting down its async generators, or aclose() was called
            with self._lock:  # forget it: the guard refers to its loop, which could not go
                entry = self._clients.get(loop)
                if entry is not None and entry[0] is client:
                    del self._clients[loop]
            del loop
            await self._closer(client)

    def _park(self, client: T, loop: asyncio.AbstractEventLoop) -> AsyncGenerator[None, None]:
        guard = self._guard(client, loop)
        step = guard.asend(None)  # registers the generator with the running loop
        with contextlib.suppress(StopIteration):
            step.send(None)  # runs to the yield; nothing before it awaits
        return guard

    def get(self) -> T:
        """The running loop's client (built on first use).

        Raises:
            RuntimeError: when no event loop is running.
        """
        loop = asyncio.get_running_loop()
        with self._lock:
            entry = self._clients.get(loop)
            if entry is None:
                client = self._factory()
                entry = (client, self._park(client, loop))
                self._clients[loop] = entry
            return entry[0]

    def __len__(self) -> int:
        """How many loops currently hold a client."""
        with self._lock:
            return len(self._clients)

    async def aclose(self) -> None:
        """Close the running loop's client, if it built one."""
        loop = asyncio.get_running_loop()
        with self._lock:
            entry = self._clients.pop(loop, None)
        if entry is not None:
            await entry[1].aclose()


class _Closable(Protocol):
    def close(self) -> Any: ...


SyncClient = TypeVar("SyncClient", bound=_Closable)
AsyncClient = TypeVar("AsyncClient")


class SDKClients(ABC, Generic[SyncClient, AsyncClient]):
    """Base of the adapters over an SDK: one sync client, one async client per event loop.

    Parameterised with the SDK's own client classes (``SDKClients[openai.OpenAI,
    openai.AsyncOpenAI]``), so every SDK call in a subclass is type-checked.
    """

    _client: SyncClient
    _aclients: PerLoop[AsyncClient]
    #: the API key, masked in every error and in the scrubbed copies of SDK exceptions
    _secret: str | None = None

    @property
    def _aclient(self) -> AsyncClient:
        return self._aclients.get()

    @abstractmethod
    def _errors(self) -> AbstractContextManager[None]:
        """The SDK's exceptions translated into ours."""

    def close(self) -> None:
        """Release the client's connections."""
        self._client.close()

    async def aclose(self) -> None:
        """Release the current event loop's async client."""
        await self._aclients.aclose()
