"""A bounded thread pool that gives sync-only code an async side that never blocks the loop.

Every default ``a*`` method of the ports (``BaseVectorStore.asearch``,
``BaseRetriever.aretrieve``, ...) runs its sync twin here. The pool is bounded so a burst of
requests cannot start an unbounded number of threads; its size is
``PYWRAPAI_OFFLOAD_THREADS`` or, by default, ``min(32, cpu count + 4)`` (the standard
library's own default for I/O-bound pools). It is created on first use, never at import.
"""

from __future__ import annotations

import contextvars
import functools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

__all__ = ["offload", "offload_pool_size"]

P = ParamSpec("P")
T = TypeVar("T")

_pools: dict[str, ThreadPoolExecutor] = {}  # explicit cache: one pool per process
_pool_lock = threading.Lock()


def offload_pool_size() -> int:
    """How many worker threads the offload pool has (or will have)."""
    configured = os.environ.get("PYWRAPAI_OFFLOAD_THREADS")
    if configured:
        try:
            size = int(configured)
        except ValueError:
            size = 0
        if size >= 1:
            return size
    return min(32, (os.cpu_count() or 1) + 4)


def _executor() -> ThreadPoolExecutor:
    with _pool_lock:
        pool = _pools.get("pool")
        if pool is None:  # made on first use, never at import
            pool = ThreadPoolExecutor(offload_pool_size(), thread_name_prefix="pywrapai-offload")
            _pools["pool"] = pool
        return pool


async def offload(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """Run ``fn(*args, **kwargs)`` in the bounded pool and await its result.

    The caller's context variables travel with the call (as with ``asyncio.to_thread``).
    """
    import asyncio  # here, not at import: sync programs (the CLI) never load asyncio

    loop = asyncio.get_running_loop()
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    return await loop.run_in_executor(_executor(), call)
