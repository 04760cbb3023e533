"""Chroma's clients, made safe to hold: a deadline for every HTTP request, the embedded
folder held by one process, and one event loop's async client (:class:`AsyncSide`)."""

from __future__ import annotations

import asyncio
import threading
import uuid
import weakref
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlparse

from pywrapai_graph.adapters._optional import require
from pywrapai_graph.adapters._per_loop import PerLoop
from pywrapai_graph.adapters._unreachable import address, cannot_reach, probe
from pywrapai_graph.adapters.vectorstores.chroma.process_hold import FolderHold
from pywrapai_graph.errors import VectorStoreError
from pywrapai_graph.redaction import scrubbed

if TYPE_CHECKING:
    from chromadb.api import AsyncClientAPI, ClientAPI
    from chromadb.api.models.AsyncCollection import AsyncCollection

__all__ = ["AsyncSide", "bound_requests", "connect_server", "folder_hold", "let_go"]


def bound_requests(client: Any, seconds: float | None) -> None:
    """Give a Chroma HTTP client's connection pool a deadline per request.

    chromadb 1.5.9 builds its ``httpx`` clients with ``timeout=None`` and has no setting for
    it, so a server that stops answering would hang every call for ever. The pool is the
    client's ``_server._session`` (sync) or ``_server._get_client()`` (async, one pool per
    event loop, built on first use); ``httpx`` lets its ``timeout`` be set after creation.
    """
    if seconds is None:
        return
    server: Any = getattr(client, "_server", None)
    pool = getattr(server, "_session", None)
    if pool is None and hasattr(server, "_get_client"):
        pool = server._get_client()
    if pool is None:
        raise VectorStoreError(
            "this chromadb release keeps its HTTP pool elsewhere: pywrapai cannot give Chroma "
            "requests a deadline (pass request_timeout=None to accept that, or pin chromadb)"
        )
    pool.timeout = seconds


def let_go(client: Any, hold: FolderHold | None) -> None:
    """Embedded mode: close the client (chromadb drops its cached state of the folder with
    the last one), then let the folder go. A server's client closes with the process."""
    if hold is not None:
        client.close()
        hold.release()


def folder_hold(folder: Path) -> FolderHold:
    """The hold of an embedded Chroma folder: one process at a time."""
    return FolderHold(
        folder,
        f"the Chroma folder {str(folder)!r} is open in another process, and an embedded "
        "Chroma serves one process at a time (it would not see the other's writes): close "
        f"the store there, or serve the folder with `chroma run --path {folder}` and open "
        "ChromaVectorStore(url=...) in every process",
    )


class AsyncSide:
    """One event loop's Chroma ``AsyncHttpClient`` and collection handles, built on first use.

    chromadb keeps its async HTTP pools in one class-wide table keyed by the loop's hash, and
    never drops a pool whose loop ended (a new loop may get the same hash and the dead pool).
    :meth:`aclose` therefore removes and closes the loop's pool when the last of our clients
    on that loop closes, and unregisters the client's ``System`` (a new one is made per
    client).
    """

    _users: ClassVar[weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, int]] = (
        weakref.WeakKeyDictionary()
    )
    _users_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, connect: Callable[[], Awaitable[AsyncClientAPI]]) -> None:
        self._connect = connect
        self._client: AsyncClientAPI | None = None
        self._handles: dict[str, AsyncCollection] = {}
        self._opening = asyncio.Lock()
        loop = asyncio.get_running_loop()
        # no strong reference to the loop: PerLoop keys on it weakly
        self._loop = weakref.ref(loop)
        self._loop_hash = hash(loop)
        with self._users_lock:
            self._users[loop] = self._users.get(loop, 0) + 1

    async def collection(self, name: str, ident: uuid.UUID) -> AsyncCollection:
        """The handle of ``name``, fetched again when the sync side re-created it."""
        handle = self._handles.get(name)
        if handle is not None and handle.id == ident:
            return handle
        async with self._opening:
            if self._client is None:
                self._client = await self._connect()
            handle = await self._client.get_collection(name, embedding_function=None)
            self._handles[name] = handle
            return handle

    async def aclose(self) -> None:
        """Forget the handles; close the loop's HTTP pool if no other client of ours uses it."""
        self._handles.clear()
        self._opening = asyncio.Lock()  # a used lock holds its loop
        client, self._client = self._client, None
        loop = self._loop()
        with self._users_lock:
            left = self._users.get(loop, 1) - 1 if loop is not None else 0
            if left and loop is not None:
                self._users[loop] = left
            elif loop is not None:
                self._users.pop(loop, None)
        if client is not None:
            shared = require("chromadb.api.shared_system_client", "chroma", "chromadb")
            identifier = str(getattr(client, "_identifier", ""))
            shared.SharedSystemClient._identifier_to_system.pop(identifier, None)
            shared.SharedSystemClient._identifier_to_refcount.pop(identifier, None)
        if not left:
            fastapi = require("chromadb.api.async_fastapi", "chroma", "chromadb")
            pool = fastapi.AsyncFastAPI._clients.pop(self._loop_hash, None)
            if pool is not None:
                await pool.aclose()


def connect_server(
    url: str,
    timeout: float,
    request_timeout: float | None,
    chromadb: Any,
    config: Any,
    settings: Any,
) -> tuple[ClientAPI, PerLoop[AsyncSide]]:
    """A Chroma server's sync client (checked to answer within ``timeout``) and the maker
    of each event loop's async client, every request bounded by ``request_timeout``.

    Raises:
        VectorStoreError: the server cannot be reached (the url's secrets never shown).
    """
    parsed = urlparse(url)
    host = parsed.hostname or "localhost"
    port = parsed.port or (443 if parsed.scheme == "https" else 8000)
    secure = parsed.scheme == "https"
    try:
        shown = f"[{host}]" if ":" in host else host
        scheme = "https" if secure else "http"
        probe(f"{scheme}://{shown}:{port}/api/v2/heartbeat", timeout)
        client: ClientAPI = chromadb.HttpClient(host=host, port=port, ssl=secure, settings=settings)
        bound_requests(client, request_timeout)

        async def connect() -> AsyncClientAPI:
            # its first requests run before its pool can be given a deadline
            client: AsyncClientAPI = await asyncio.wait_for(
                chromadb.AsyncHttpClient(
                    host=host,
                    port=port,
                    ssl=secure,
                    settings=config.Settings(anonymized_telemetry=False),
                ),
                request_timeout,
            )
            bound_requests(client, request_timeout)
            return client

        return client, PerLoop(lambda: AsyncSide(connect), AsyncSide.aclose)
    except (OSError, ValueError) as exc:  # ValueError: "Could not connect to..."
        raise VectorStoreError(
            cannot_reach("Chroma", address(str(url), default_port=port), exc)
        ) from scrubbed(exc, [url])
