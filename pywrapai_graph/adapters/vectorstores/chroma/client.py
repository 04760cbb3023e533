"""Chroma's clients made safe to hold (request deadlines, an async client per loop, handles
following a re-created collection, a folder held by one process), its errors as ours."""

from __future__ import annotations

import asyncio
import fcntl
import os
import re
import threading
import time
import uuid
import weakref
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar
from urllib.parse import urlparse

from pywrapai_graph.adapters._optional import require
from pywrapai_graph.adapters._per_loop import PerLoop
from pywrapai_graph.adapters._transport import http_errors
from pywrapai_graph.adapters._unreachable import address, cannot_reach, probe
from pywrapai_graph.adapters.vectorstores.kit.local_files import nearly_full
from pywrapai_graph.adapters.vectorstores.kit.no_follow import open_file, refuse_links, sqlite_files
from pywrapai_graph.domain.checks import is_text
from pywrapai_graph.errors import (
    ConfigurationError,
    StorageFullError,
    StoreBusyError,
    StoreTimeoutError,
    VectorStoreError,
)
from pywrapai_graph.redaction import redact, scrubbed

if TYPE_CHECKING:
    from chromadb.api import AsyncClientAPI, ClientAPI
    from chromadb.api.models.AsyncCollection import AsyncCollection

__all__ = [
    "AsyncSide",
    "FolderHold",
    "FollowingHandle",
    "aread_again",
    "connect",
    "engine_errors",
    "read_again",
    "validate_collection_name",
]

T = TypeVar("T")
#: Pauses before a read is repeated after a transient internal error of Chroma's: a read racing
#: a write ("Error finding id": the HNSW segment lags the metadata) or another process's new
#: collection ("Nothing found on disk"). Reads only: a write is never repeated blindly.
READ_PAUSES = (0.05, 0.2, 0.5)
_TRANSIENT = ("Error finding id", "Nothing found on disk")

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,510}[A-Za-z0-9]$")
_IPV4 = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")


class FolderHold:
    """A counted share of this process's ``flock`` on an embedded Chroma folder (and of the
    stores' ``lock``); another process, or a forked child, gets StoreBusyError."""

    #: (pid, folder): (fd, users, the stores' lock)
    _table: ClassVar[dict[tuple[int, str], tuple[int, int, Any]]] = {}
    _guard: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self._key = (os.getpid(), os.path.realpath(folder))
        with self._guard:
            fd, users, self.lock = self._table.get(self._key, (-1, 0, threading.RLock()))
            if fd < 0:
                fd = open_file(folder / "pywrapai.open.lock", os.O_RDWR | os.O_CREAT)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    raise StoreBusyError(
                        f"the Chroma folder {str(folder)!r} is open in another process (an "
                        "embedded Chroma serves one process at a time): close the store there, "
                        f"or serve the folder with `chroma run --path {folder}` and open "
                        "ChromaVectorStore(url=...) in every process"
                    ) from None
            self._table[self._key] = (fd, users + 1, self.lock)
        self._held = True

    def release(self, client: Any = None) -> None:
        """Close ``client`` and give this share back (idempotent); the last one unlocks."""
        if client is not None:
            client.close()
        with self._guard:
            if not self._held:
                return
            self._held = False
            fd, users, lock = self._table.pop(self._key)
            if users > 1:
                self._table[self._key] = (fd, users - 1, lock)
                return
        os.close(fd)  # closing the descriptor drops the flock


class FollowingHandle:
    """Calls to a name's current collection: one that finds it gone (re-created by another
    process's ``clear()``) fetches it again, tells ``refetched`` and is repeated."""

    def __init__(
        self, fetch: Callable[[], Any], not_found: type[Exception], refetched: Callable[[], object]
    ) -> None:
        self._fetch = fetch
        self._not_found = not_found
        self._refetched = refetched
        self.current = fetch()

    def refetch(self) -> None:
        self.current = self._fetch()
        self._refetched()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.current, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return getattr(self.current, name)(*args, **kwargs)
            except self._not_found:
                self.refetch()
                return getattr(self.current, name)(*args, **kwargs)

        return call


def _transient(exc: Exception) -> bool:
    internal = require("chromadb.errors", "chroma", "chromadb").InternalError
    return isinstance(exc, internal) and any(t in str(exc) for t in _TRANSIENT)


def read_again(read: Callable[[], T]) -> T:
    """``read()``, repeated after each of :data:`READ_PAUSES` while Chroma fails it with a
    transient internal error (the last attempt's error is raised)."""
    for pause in READ_PAUSES:
        try:
            return read()
        except Exception as exc:
            if not _transient(exc):
                raise
        time.sleep(pause)
    return read()


async def aread_again(read: Callable[[], Awaitable[T]]) -> T:
    """Async :func:`read_again`."""
    for pause in READ_PAUSES:
        try:
            return await read()
        except Exception as exc:
            if not _transient(exc):
                raise
        await asyncio.sleep(pause)
    return await read()


def bound_requests(client: Any, seconds: float | None) -> None:
    """A deadline per request on a client's ``httpx`` pool (chromadb has no setting)."""
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


class AsyncSide:
    """One loop's ``AsyncHttpClient`` and chunks handle, built on first use. chromadb keeps
    async pools by loop hash, never dropped: :meth:`aclose` closes the loop's pool with our
    last client on it, and unregisters the client's System."""

    _users: ClassVar[weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, int]] = (
        weakref.WeakKeyDictionary()
    )
    _users_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, connect: Callable[[], Awaitable[AsyncClientAPI]]) -> None:
        self._connect = connect
        self._client: AsyncClientAPI | None = None
        self._handle: AsyncCollection | None = None
        self._opening = asyncio.Lock()
        loop = asyncio.get_running_loop()
        self._loop = weakref.ref(loop)  # PerLoop keys on the loop weakly
        self._loop_hash = hash(loop)
        with self._users_lock:
            self._users[loop] = self._users.get(loop, 0) + 1

    async def collection(self, name: str, ident: uuid.UUID) -> AsyncCollection:
        """The handle of ``name``, fetched again when the sync side re-created it."""
        if self._handle is None or self._handle.id != ident:
            async with self._opening:
                self._client = self._client or await self._connect()
                self._handle = await self._client.get_collection(name, embedding_function=None)
        return self._handle

    async def aclose(self) -> None:
        self._handle = None
        self._opening = asyncio.Lock()  # a used lock holds its loop
        client, self._client = self._client, None
        loop = self._loop()
        left = 0
        with self._users_lock:
            if loop is not None:
                left = self._users.pop(loop, 1) - 1
                if left:
                    self._users[loop] = left
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


def connect(
    url: str | Path, timeout: float, request_timeout: float | None
) -> tuple[ClientAPI, PerLoop[AsyncSide] | None]:
    """Embedded Chroma in a folder (a ``Path``), or a server's sync client (checked to answer
    within ``timeout``) and each loop's async client, requests bounded by ``request_timeout``.

    Raises:
        VectorStoreError: the server cannot be reached (the url's secrets never shown).
    """
    chromadb = require("chromadb", "chroma", "chromadb")
    config = require("chromadb.config", "chroma", "chromadb")
    settings = config.Settings(anonymized_telemetry=False, allow_reset=False)
    if isinstance(url, Path):
        refuse_links(*sqlite_files(url / "chroma.sqlite3"))  # Chroma follows links
        return chromadb.PersistentClient(path=str(url), settings=settings), None
    parsed = urlparse(url)
    host = parsed.hostname or "localhost"
    secure = parsed.scheme == "https"
    port = parsed.port or (443 if secure else 8000)
    try:
        shown = f"[{host}]" if ":" in host else host
        probe(f"{'https' if secure else 'http'}://{shown}:{port}/api/v2/heartbeat", timeout)
        client: ClientAPI = chromadb.HttpClient(host=host, port=port, ssl=secure, settings=settings)
        bound_requests(client, request_timeout)

        async def connect() -> AsyncClientAPI:
            # chromadb writes its API choice into the settings: the async client needs its own
            fresh = type(settings)(anonymized_telemetry=False)
            made = chromadb.AsyncHttpClient(host=host, port=port, ssl=secure, settings=fresh)
            # its first requests run before its pool can be given a deadline
            client: AsyncClientAPI = await asyncio.wait_for(made, request_timeout)
            bound_requests(client, request_timeout)
            return client

        return client, PerLoop(lambda: AsyncSide(connect), AsyncSide.aclose)
    except (OSError, ValueError) as exc:  # ValueError: "Could not connect to..."
        raise VectorStoreError(
            cannot_reach("Chroma", address(str(url), default_port=port), exc)
        ) from scrubbed(exc, [url])


@contextmanager
def engine_errors(
    where: str, url: str | None, request_timeout: float | None, folder: Path | None
) -> Iterator[None]:
    """Chroma's and the transport's errors as the library's (the url's secrets never shown)."""
    errors = require("chromadb.errors", "chroma", "chromadb")
    timeouts, transports = http_errors()
    try:
        yield
    except timeouts as exc:
        raise StoreTimeoutError(
            f"Chroma at {where!r} did not answer within {request_timeout} s "
            f"({type(exc).__name__}): check that the server is up and not overloaded, or "
            "raise the store's request_timeout_s"
        ) from scrubbed(exc, [url])
    except (errors.ChromaError, *transports) as exc:
        if folder is not None and nearly_full(folder):
            raise StorageFullError(
                f"the disk holding {where!r} is full and Chroma failed "
                f"({type(exc).__name__}); it may have left the folder damaged. Free some "
                "space, and restore or re-create the folder if it no longer opens.",
                path=where,
            ) from scrubbed(exc, [url])
        raise VectorStoreError(
            f"Chroma at {where!r} failed: {type(exc).__name__}: {redact(str(exc), [url])}"
        ) from scrubbed(exc, [url])


def validate_collection_name(name: str) -> str:
    """Chroma's naming rules, checked up front with a clear message."""
    if not is_text(name) or not _NAME.fullmatch(name) or ".." in name or _IPV4.fullmatch(name):
        raise ConfigurationError(
            f"invalid Chroma collection name {name!r}: use 3-512 characters from [a-zA-Z0-9._-], "
            "starting and ending with a letter or digit, without '..', and not an IPv4 address"
        )
    return name
