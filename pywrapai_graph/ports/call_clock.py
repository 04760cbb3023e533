"""When a store call was made: where its one deadline starts (queueing for an offload
thread, the store's locks, a pooled connection and the statement all count against it).

The port's public methods are wrapped in :func:`timed`, which notes the moment in a context
variable (the offload pool carries it into its thread; a call made inside another keeps the
outer moment); a store reads it with :func:`call_made`.
"""

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
    """The moment (``time.monotonic()``) the store call being served was made; a call not
    made through a :func:`timed` method starts now, for the block."""
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
