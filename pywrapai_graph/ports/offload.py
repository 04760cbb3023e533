"""A bounded thread pool that gives sync-only code an async side that never blocks the loop.

Every default ``a*`` method of the ports (``BaseVectorStore.asearch``,
``BaseRetriever.aretrieve``, ...) runs its sync twin here. The pool is bounded so a burst of
requests cannot start an unbounded number of threads; its size is
``PYWRAPAI_OFFLOAD_THREADS`` or, by default, ``min(32, cpu count + 4)`` (the standard
library's own default for I/O-bound pools). It is created on first use, never at import, and
both settings are read then.

Its queue is bounded too: when ``PYWRAPAI_OFFLOAD_QUEUE`` calls (default 64 per thread)
are already waiting for a thread, a new call raises :class:`OverloadedError` at once.
A service under more load than it can serve then refuses the excess in microseconds
(an HTTP 503 the client may retry elsewhere) instead of making every caller wait behind a
queue that only grows; 64 waiting calls per thread is about a second of queue for
millisecond store calls, and never refuses a burst a healthy pool clears quickly.
"""

from __future__ import annotations

import contextvars
import functools
import os
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from pywrapai_graph.errors import OverloadedError

__all__ = ["offload", "offload_pool_size", "offload_queue_size"]

P = ParamSpec("P")
T = TypeVar("T")

_pools: dict[str, ThreadPoolExecutor] = {}  # explicit cache: one pool per process
_pool_lock = threading.Lock()
#: calls handed to the pool and not yet finished (running or waiting)
_pending = [0]
#: threads + waiting calls each pool admits (its environment, read when first used)
_capacity: weakref.WeakKeyDictionary[ThreadPoolExecutor, int] = weakref.WeakKeyDictionary()
#: waiting calls per worker thread, unless PYWRAPAI_OFFLOAD_QUEUE says otherwise
QUEUE_PER_THREAD = 64


def _positive(name: str) -> int | None:
    configured = os.environ.get(name)
    if configured:
        try:
            size = int(configured)
        except ValueError:
            size = 0
        if size >= 1:
            return size
    return None


def offload_pool_size() -> int:
    """How many worker threads the offload pool has (or will have)."""
    return _positive("PYWRAPAI_OFFLOAD_THREADS") or min(32, (os.cpu_count() or 1) + 4)


def offload_queue_size() -> int:
    """How many calls may wait for a thread before a new one is refused."""
    return _positive("PYWRAPAI_OFFLOAD_QUEUE") or QUEUE_PER_THREAD * offload_pool_size()


def _admit(pool: ThreadPoolExecutor) -> None:
    with _pool_lock:
        capacity = _capacity.get(pool)
        if capacity is None:  # read once per pool: the environment costs a request 0.1 ms
            capacity = _capacity[pool] = offload_pool_size() + offload_queue_size()
        if _pending[0] >= capacity:
            threads = offload_pool_size()
            raise OverloadedError(
                f"{_pending[0] - threads} calls are already waiting for the "
                f"{threads} offload threads (PYWRAPAI_OFFLOAD_QUEUE = {offload_queue_size()}): "
                "this one was refused rather than queued. The process has more work than it "
                "serves: retry later, add workers, or raise PYWRAPAI_OFFLOAD_QUEUE / "
                "PYWRAPAI_OFFLOAD_THREADS"
            )
        _pending[0] += 1


def _finished(_: object) -> None:
    with _pool_lock:
        _pending[0] -= 1


def _executor() -> ThreadPoolExecutor:
    with _pool_lock:  # _admit() holds it while reading the environment; never nested
        pool = _pools.get("pool")
        if pool is None:  # made on first use, never at import
            pool = ThreadPoolExecutor(offload_pool_size(), thread_name_prefix="pywrapai-offload")
            _pools["pool"] = pool
        return pool


async def offload(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """Run ``fn(*args, **kwargs)`` in the bounded pool and await its result.

    The caller's context variables travel with the call (as with ``asyncio.to_thread``).

    Raises:
        OverloadedError: the pool's queue is full (nothing was run).
    """
    import asyncio  # here, not at import: sync programs (the CLI) never load asyncio

    loop = asyncio.get_running_loop()
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    executor = _executor()
    _admit(executor)
    try:
        running = executor.submit(call)
    except BaseException:
        _finished(None)
        raise
    # done when the call returned in its thread, or was cancelled before it started
    running.add_done_callback(_finished)
    return await asyncio.wrap_future(running, loop=loop)
