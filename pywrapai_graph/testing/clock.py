"""ManualClock: a :class:`~pywrapai_graph.ports.clock.Clock` whose time moves only when told.

Give it to a ``ProviderLimiter`` and a minute's window passes at once: threads sleeping on it
block, tasks awaiting it are suspended (their loop runs on), until :meth:`ManualClock.advance`
moves the time to the earliest wake-up and wakes whoever is due::

    clock = ManualClock()
    limiter = ProviderLimiter(Limits(requests_per_minute=10), clock=clock)
    ...                                   # workers call through the limiter
    clock.wait_until(lambda: clock.sleepers >= 1)
    clock.advance()                       # the window has passed
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from pywrapai_graph.application.provider_limiter import TaskWaiter
from pywrapai_graph.errors import InvalidStateError
from pywrapai_graph.ports.clock import Clock

__all__ = ["ManualClock"]


class _Sleeper:
    __slots__ = ("waiter", "wake")

    def __init__(self, wake: float, waiter: threading.Event | TaskWaiter) -> None:
        self.wake = wake
        self.waiter = waiter


class ManualClock(Clock):
    """Time that moves only on :meth:`advance`; thread-safe, for threads and event loops.

    Args:
        start: the initial time, in seconds.
    """

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._cond = threading.Condition()
        self._sleepers: list[_Sleeper] = []

    def now(self) -> float:
        with self._cond:
            return self._now

    @property
    def sleepers(self) -> int:
        """Threads and tasks sleeping on this clock now."""
        with self._cond:
            return len(self._sleepers)

    def _enter(self, sleeper: _Sleeper) -> None:
        with self._cond:
            sleeper.wake += self._now
            self._sleepers.append(sleeper)
            self._cond.notify_all()

    def sleep(self, seconds: float) -> None:
        event = threading.Event()
        self._enter(_Sleeper(seconds, event))
        event.wait()

    async def asleep(self, seconds: float) -> None:
        waiter = TaskWaiter(asyncio.get_running_loop())
        self._enter(_Sleeper(seconds, waiter))
        await waiter.future

    def advance(self) -> float:
        """Move to the earliest wake-up and wake every sleeper due; returns the new time.

        Raises:
            InvalidStateError: nobody sleeps (the time would have nowhere to go).
        """
        with self._cond:
            if not self._sleepers:
                raise InvalidStateError("nobody sleeps on the clock: nothing to advance to")
            self._now = max(self._now, min(s.wake for s in self._sleepers))
            due = [s for s in self._sleepers if s.wake <= self._now]
            self._sleepers = [s for s in self._sleepers if s.wake > self._now]
            now = self._now
        for sleeper in due:
            sleeper.waiter.set()
        return now

    def wait_until(self, condition: Callable[[], bool], timeout: float = 60.0) -> None:
        """Block until ``condition()`` holds, re-checked whenever someone starts sleeping
        (and every 10 ms, for conditions that depend on other things).

        Raises:
            InvalidStateError: it did not hold within ``timeout`` real seconds.
        """
        for _ in range(int(timeout / 0.01) + 1):
            if condition():  # outside the lock: it may ask a limiter, which asks the clock
                return
            with self._cond:
                self._cond.wait(0.01)
        raise InvalidStateError(f"the condition did not hold within {timeout:g} s")
