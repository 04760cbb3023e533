"""Calling a tool with a timeout.

A sync tool with a timeout runs in a daemon thread of its own, which is abandoned when the
timeout passes: Python cannot stop a thread, and a thread of a shared pool (or
``asyncio.to_thread``'s executor, which ``asyncio.run`` joins on exit) would make the caller
wait for the hung tool after all. The tool's context variables (the current span...) go
with it. An async tool is cancelled by ``asyncio.wait_for``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import math
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from pywrapai_graph.errors import ToolTimeoutError

__all__ = ["acall_with_timeout", "await_with_timeout", "call_with_timeout"]

#: What a finished call hands back: (value, None) or (None, the exception it raised).
Done = Callable[[Any, BaseException | None], None]


def _unbounded(timeout_s: float | None) -> bool:
    return timeout_s is None or math.isinf(timeout_s)


def _start(fn: Callable[..., Any], kwargs: dict[str, Any], name: str, done: Done) -> None:
    context = contextvars.copy_context()

    def work() -> None:
        try:
            value = context.run(fn, **kwargs)
        except BaseException as exc:  # handed to the caller, who raises it
            done(None, exc)
        else:
            done(value, None)

    threading.Thread(target=work, name=f"pywrapai-tool-{name}", daemon=True).start()


def call_with_timeout(
    fn: Callable[..., Any], kwargs: dict[str, Any], timeout_s: float | None, name: str
) -> Any:
    """``fn(**kwargs)``, in a thread that is abandoned after ``timeout_s`` seconds.

    Raises:
        ToolTimeoutError: the call did not return in time.
    """
    if _unbounded(timeout_s):
        return fn(**kwargs)
    assert timeout_s is not None
    finished = threading.Event()
    box: list[tuple[Any, BaseException | None]] = []

    def done(value: Any, error: BaseException | None) -> None:
        box.append((value, error))
        finished.set()

    _start(fn, kwargs, name, done)
    if not finished.wait(timeout_s):
        raise ToolTimeoutError(name, timeout_s)
    value, error = box[0]
    if error is not None:
        raise error
    return value


async def acall_with_timeout(
    fn: Callable[..., Any], kwargs: dict[str, Any], timeout_s: float | None, name: str
) -> Any:
    """Await a sync ``fn(**kwargs)`` run in a thread, abandoned after ``timeout_s`` seconds.

    Raises:
        ToolTimeoutError: the call did not return in time.
    """
    if _unbounded(timeout_s):
        return await asyncio.to_thread(fn, **kwargs)
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(value: Any, error: BaseException | None) -> None:
        if future.done():  # timed out and cancelled meanwhile
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def done(value: Any, error: BaseException | None) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed while an abandoned thread ran
            loop.call_soon_threadsafe(settle, value, error)

    _start(fn, kwargs, name, done)
    return await await_with_timeout(future, timeout_s, name)


async def await_with_timeout(awaitable: Awaitable[Any], timeout_s: float | None, name: str) -> Any:
    """Await ``awaitable``, cancelled after ``timeout_s`` seconds.

    Raises:
        ToolTimeoutError: it did not finish in time.
    """
    if _unbounded(timeout_s):
        return await awaitable
    assert timeout_s is not None
    deadline = asyncio.timeout(timeout_s)
    try:
        async with deadline:
            return await awaitable
    except TimeoutError:
        if not deadline.expired():  # the tool's own TimeoutError
            raise
        raise ToolTimeoutError(name, timeout_s) from None
