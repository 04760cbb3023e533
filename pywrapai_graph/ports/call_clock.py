"""When a store call was made, where its one deadline starts (offload queue, locks, pool and
statement count against it): :func:`timed` port methods note it in a context variable (into
the offload pool; a nested call keeps the outer one's) that :func:`call_made` reads."""

from __future__ import annotations

import contextlib
import functools
import inspect
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, ParamSpec, TypeVar, cast

__all__ = ["call_clock", "call_made", "timed"]

P = ParamSpec("P")
R = TypeVar("R")

#: time.monotonic() when the store call this context serves was made (None: no call)
_made: ContextVar[float | None] = ContextVar("pywrapai_call_made", default=None)


def call_made() -> float:
    """The moment (``time.monotonic()``) the store call being served was made; now when no
    :func:`timed` method or :func:`call_clock` block noted one."""
    made = _made.get()
    return time.monotonic() if made is None else made


@contextlib.contextmanager
def call_clock() -> Iterator[float]:
    """:func:`call_made` for the block, which starts the clock now outside a :func:`timed` call."""
    made = _made.get()
    token = None if made is not None else _made.set(time.monotonic())
    try:
        yield call_made()
    finally:
        if token is not None:
            _made.reset(token)


def timed(method: Callable[P, R]) -> Callable[P, R]:
    """``method`` (sync or async) noting the moment it was called, unless an outer call did."""
    if inspect.iscoroutinefunction(method):

        @functools.wraps(method)
        async def awaited(*args: P.args, **kwargs: P.kwargs) -> Any:
            with call_clock():
                return await method(*args, **kwargs)

        return cast(Callable[P, R], awaited)

    @functools.wraps(method)
    def called(*args: P.args, **kwargs: P.kwargs) -> R:
        with call_clock():
            return method(*args, **kwargs)

    return called
