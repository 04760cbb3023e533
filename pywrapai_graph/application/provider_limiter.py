"""ProviderLimiter: requests and tokens per minute and requests in flight, for one provider key:
kept in this process, or asked of a :class:`SharedBudget` that every process shares."""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from pywrapai_graph.domain import Limits
from pywrapai_graph.errors import LimitWaitError

if TYPE_CHECKING:  # the event loop loads only when an async call waits (`ask` never does)
    import asyncio
from pywrapai_graph.ports.clock import Clock
from pywrapai_graph.ports.shared_budget import Admission, SharedBudget
from pywrapai_graph.ports.sync_async import Core, adrive, drive

__all__ = [
    "LimiterStats",
    "Permit",
    "ProviderLimiter",
    "SystemClock",
    "TaskWaiter",
    "WindowEntry",
    "window_delay",
]

#: the length of the "per minute" windows, in seconds
WINDOW_S = 60.0
#: how often a call waiting for a slot in flight of a shared budget asks again (a release in
#: another process wakes nobody here)
SHARED_POLL_S = 0.05


class SystemClock(Clock):
    """``time.monotonic``, ``time.sleep`` and ``asyncio.sleep``."""

    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    async def asleep(self, seconds: float) -> None:
        import asyncio

        await asyncio.sleep(seconds)


class WindowEntry(Protocol):
    """One admitted request in a window: when, and how many tokens it counts for."""

    @property
    def at(self) -> float: ...

    @property
    def tokens(self) -> int: ...


def window_delay(
    limits: Limits, window: Sequence[WindowEntry], used: int, tokens: int, now: float
) -> float:
    """Seconds until a request of ``tokens`` fits the 60 s windows (<= 0: now).

    Args:
        limits: the budget.
        window: the requests admitted in the last 60 s, oldest first.
        used: the tokens they count for.
        tokens: the new request's.
        now: the time on the clock of ``window``'s entries.
    """
    at = now
    rpm, tpm = limits.requests_per_minute, limits.tokens_per_minute
    if rpm is not None and len(window) >= rpm:
        at = max(at, window[len(window) - rpm].at + WINDOW_S)
    if tpm is not None and used + tokens > tpm:
        excess = used + tokens - tpm
        for entry in window:  # oldest first: until enough of them have left the window
            excess -= entry.tokens
            if excess <= 0:
                at = max(at, entry.at + WINDOW_S)
                break
    return at - now


class _Entry:
    """One admitted request: when, how many tokens it counts for, and its shared permit."""

    __slots__ = ("at", "permit", "tokens")

    def __init__(self, at: float, tokens: int, permit: int | None = None) -> None:
        self.at = at
        self.tokens = tokens
        self.permit = permit


@dataclass(slots=True)
class LimiterStats:
    """What a limiter has done so far (for tests, benchmarks and dashboards)."""

    admitted: int = 0
    waited: int = 0
    refused: int = 0
    peak_in_flight: int = 0


class TaskWaiter:
    """A task waiting (for a slot, on a clock): woken from any thread through its own loop."""

    __slots__ = ("future", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.future: asyncio.Future[None] = loop.create_future()

    def set(self) -> None:
        with contextlib.suppress(RuntimeError):  # its loop is closed: nobody waits any more
            self.loop.call_soon_threadsafe(_resolve, self.future)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


_Waiter = threading.Event | TaskWaiter


class _Ask:
    """The step "ask the shared budget for a turn" (answered with an :class:`Admission`)."""


_ASK = _Ask()
#: what an admission waits on (and the time left), or the shared budget to ask
_Step = tuple[_Waiter | float | _Ask, float]


class Permit:
    """One admitted request: :meth:`settle` its real token count, :meth:`release` its slot
    (a context manager releases on exit)."""

    __slots__ = ("_entry", "_limiter", "_released")

    def __init__(self, limiter: ProviderLimiter, entry: _Entry) -> None:
        self._limiter = limiter
        self._entry = entry
        self._released = False

    def settle(self, tokens: int) -> None:
        """Count the request for ``tokens`` (what the provider reported) instead of its
        estimate."""
        self._limiter._settle(self._entry, tokens)

    def release(self) -> None:
        """Free the request's in-flight slot (once)."""
        if not self._released:
            self._released = True
            self._limiter._release(self._entry)

    def __enter__(self) -> Permit:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class ProviderLimiter:
    """Admits requests to one provider key within :class:`Limits`, across threads and
    event loops: a thread waits by sleeping (or on an event, for a slot in flight), a task by
    awaiting, so a waiting task never blocks its loop.

    With ``shared``, the windows and slots are the shared budget's (one for every process
    that uses it): each turn is asked of it (by a worker thread, for a task), a call that
    finds every slot taken asks again every 50 ms, and :attr:`stats` and :attr:`in_flight`
    count this process's requests only.

    Args:
        limits: the budget.
        clock: the time source (the system's monotonic clock by default).
        name: how errors name the budget (``"openai key 3f2a…"``; never the key itself).
        shared: the budget every process shares; None keeps it in this process.
    """

    def __init__(
        self,
        limits: Limits,
        *,
        clock: Clock | None = None,
        name: str = "",
        shared: SharedBudget | None = None,
    ) -> None:
        self.limits = limits
        self.name = name or "this provider"
        self.shared = shared
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._lock = threading.Lock()
        self._window: deque[_Entry] = deque()
        self._window_tokens = 0
        self._in_flight = 0
        self._waiters: list[_Waiter] = []
        self.stats = LimiterStats()

    @property
    def in_flight(self) -> int:
        """Requests admitted and not yet released."""
        return self._in_flight

    @property
    def tokens_in_window(self) -> int:
        """The tokens the requests of the current 60 s window count for."""
        with self._lock:
            self._expire(self._clock.now())
            return self._window_tokens

    # ------------------------------------------------------------------ the books
    def _expire(self, now: float) -> None:
        window = self._window
        while window and window[0].at <= now - WINDOW_S:
            self._window_tokens -= window.popleft().tokens

    def _delay(self, tokens: int, now: float) -> float | None:
        """0: admit now; > 0: the windows admit it in that many seconds; None: every slot
        in flight is taken (wait for a release)."""
        self._expire(now)
        cap = self.limits.max_in_flight
        if cap is not None and self._in_flight >= cap:
            return None
        return max(0.0, window_delay(self.limits, self._window, self._window_tokens, tokens, now))

    def _admit(self, tokens: int, now: float, waited: bool, permit: int | None = None) -> Permit:
        entry = _Entry(now, tokens, permit)
        if permit is None:  # a shared budget keeps its window itself
            self._window.append(entry)
            self._window_tokens += tokens
        self._in_flight += 1
        stats = self.stats
        stats.admitted += 1
        stats.waited += waited
        stats.peak_in_flight = max(stats.peak_in_flight, self._in_flight)
        return Permit(self, entry)

    def _settle(self, entry: _Entry, tokens: int) -> None:
        if self.shared is not None and entry.permit is not None:
            self.shared.settle(entry.permit, tokens)
            return
        with self._lock:
            if self._window and self._window[0].at <= entry.at:  # still in the window
                self._window_tokens += tokens - entry.tokens
            entry.tokens = tokens

    def _release(self, entry: _Entry) -> None:
        if self.shared is not None and entry.permit is not None:
            self.shared.release(entry.permit)
        with self._lock:
            self._in_flight -= 1
            waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            waiter.set()

    def _refuse(self, tokens: int, delay: float | None) -> LimitWaitError:
        self.stats.refused += 1
        tpm = self.limits.tokens_per_minute
        if tpm is not None and tokens > tpm:
            why = f"needs ~{tokens} tokens, more than tokens_per_minute={tpm} allows"
        elif delay is None:
            why = f"found all {self.limits.max_in_flight} requests in flight busy"
        else:
            why = f"would wait {delay:.1f} s for its turn"
        return LimitWaitError(
            f"the client-side limits of {self.name}: this call {why}, over max_wait_s="
            f"{self.limits.max_wait_s:g}; raise the limits or max_wait_s, or send less",
            status_code=None,
            retry_after=delay,
        )

    def _next_step(
        self, tokens: int, deadline: float | None, waited: bool, waiter: Callable[[], _Waiter]
    ) -> tuple[Permit | float | _Waiter, float]:
        """Under the lock: a permit, or how to wait (seconds to sleep, or a new ``waiter()``
        registered for the next release); and the deadline."""
        now = self._clock.now()
        if deadline is None:
            deadline = now + self.limits.max_wait_s
        tpm = self.limits.tokens_per_minute
        if tpm is not None and tokens > tpm:  # no window would ever have room for it
            raise self._refuse(tokens, None)
        delay = self._delay(tokens, now)
        if delay == 0.0:
            return self._admit(tokens, now, waited), deadline
        if (delay is not None and now + delay > deadline) or now >= deadline:
            raise self._refuse(tokens, delay)
        if delay is None:
            self._waiters.append(made := waiter())
            return made, deadline
        return delay, deadline

    def _shared_step(
        self, tokens: int, admission: Admission, deadline: float, waited: bool
    ) -> Permit | float:
        """The shared budget's answer as a permit or seconds to sleep."""
        now = self._clock.now()
        if admission.permit is not None:
            with self._lock:
                return self._admit(tokens, now, waited, admission.permit)
        delay = admission.wait
        if (delay is not None and now + delay > deadline) or now >= deadline:
            raise self._refuse(tokens, delay)
        return min(SHARED_POLL_S, deadline - now) if delay is None else delay

    # ------------------------------------------------------------------ admission
    def acquire(self, tokens: int = 0) -> Permit:
        """Wait (blocking this thread) until a request of ``tokens`` may start.

        Raises:
            LimitWaitError: the wait would exceed ``max_wait_s`` (nothing was admitted).
        """

        def wait(step: _Step) -> Admission | None:
            what, timeout = step
            if isinstance(what, threading.Event):
                what.wait(timeout)
            elif isinstance(what, float):
                self._clock.sleep(what)
            elif self.shared is not None:
                return self.shared.admit(tokens)
            return None

        return drive(self._admission(tokens, threading.Event), wait)

    async def aacquire(self, tokens: int = 0) -> Permit:
        """Async :meth:`acquire`: the task awaits, its event loop keeps running.

        Raises:
            LimitWaitError: the wait would exceed ``max_wait_s`` (nothing was admitted).
        """
        import asyncio

        loop = asyncio.get_running_loop()

        async def wait(step: _Step) -> Admission | None:
            what, timeout = step
            if isinstance(what, TaskWaiter):
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(what.future, timeout)
            elif isinstance(what, float):
                await self._clock.asleep(what)
            elif self.shared is not None:  # a database round trip: never on the loop
                return await asyncio.to_thread(self.shared.admit, tokens)
            return None

        return await adrive(self._admission(tokens, lambda: TaskWaiter(loop)), wait)

    def _admission(self, tokens: int, waiter: Callable[[], _Waiter]) -> Core[_Step, Permit]:
        """:meth:`acquire` and :meth:`aacquire`, written once: yields each wait (a waiter
        registered for the next release and the time left, or seconds to sleep) and, with a
        shared budget, each turn to ask of it (sent back its :class:`Admission`)."""
        deadline: float | None = None
        waited = False
        step: Permit | float | _Waiter
        while True:
            if self.shared is None:
                with self._lock:
                    step, deadline = self._next_step(tokens, deadline, waited, waiter)
            else:
                tpm = self.limits.tokens_per_minute
                if tpm is not None and tokens > tpm:  # no window would ever have room for it
                    raise self._refuse(tokens, None)
                if deadline is None:  # from the moment the call was made
                    deadline = self._clock.now() + self.limits.max_wait_s
                admission = yield _ASK, 0.0
                step = self._shared_step(tokens, admission, deadline, waited)
            if isinstance(step, Permit):
                return step
            waited = True
            yield step, max(0.0, deadline - self._clock.now())

    def __repr__(self) -> str:
        return f"ProviderLimiter({self.name}, {self.limits})"
