"""Client-side deadlines for PostgreSQL calls: a server that stops answering cannot hold a
thread (and its pooled connection) forever.

``statement_timeout`` is enforced by the server. A server that is stopped, partitioned away
or swapping cancels nothing, and libpq waits on its socket without a timeout (TCP keepalives
do not help: a stopped server's kernel still acknowledges them). :func:`watch` arms a timer
for one call; if the call has not returned when it expires, the watchdog thread shuts the
connection's socket down (``shutdown(2)`` on a duplicate descriptor: the descriptor stays
libpq's, so it cannot be reused under it). The waiting libpq call then returns at once with a
connection error, the caller sees :attr:`Watch.fired` and reports a timeout, and the pool
discards the connection.

A :class:`Deadline` is one call's: it starts when the call was made (the port's call clock),
so time queued for a thread and for a pooled connection counts, and whatever is left goes to
the statement (the server's ``statement_timeout`` and this watchdog, a grace later). A long
write gives each of its statements a fresh deadline with :func:`renew`.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import math
import os
import socket
import threading
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["UNBOUNDED", "Deadline", "Watch", "renew", "watch"]


@dataclass(frozen=True, slots=True)
class Deadline:
    """A call made at ``made`` (``time.monotonic()``) that has ``seconds`` (inf: no limit)."""

    made: float
    seconds: float

    @property
    def bounded(self) -> bool:
        return self.seconds != math.inf

    def remaining(self) -> float:
        """Seconds left (negative once passed; inf without a limit)."""
        return self.made + self.seconds - time.monotonic()

    def waited(self) -> float:
        """Seconds since the call was made."""
        return time.monotonic() - self.made


#: A call without a deadline (maintenance: a schema change, an index build).
UNBOUNDED = Deadline(0.0, math.inf)


class Watch:
    """One armed deadline: :attr:`fired` tells whether it expired during the call."""

    __slots__ = ("_done", "_fd", "_lock", "deadline", "fired")

    def __init__(self, deadline: float, fd: int) -> None:
        self.deadline = deadline
        self.fired = False
        self._fd = fd
        self._done = False
        self._lock = threading.Lock()

    def disarm(self) -> None:
        """After this returns the watchdog never touches the socket."""
        with self._lock:
            self._done = True

    @property
    def done(self) -> bool:
        return self._done

    def fire(self) -> None:
        with self._lock:
            if self._done:
                return
            self._done = self.fired = True
            with contextlib.suppress(OSError):  # already closed: nothing to interrupt
                sock = socket.socket(fileno=os.dup(self._fd))
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                finally:
                    sock.close()  # the duplicate only


#: A call without a deadline.
NEVER = Watch(float("inf"), -1)
NEVER.disarm()


#: The watchdog looks at least this often (seconds), so arming a later deadline never has
#: to wake it: a call pays for a lock and a heap push, not a thread switch.
_TICK = 1.0


class _Watchdog:
    """One daemon thread for the process, sleeping until the earliest armed deadline."""

    def __init__(self) -> None:
        self._wake = threading.Condition()
        self._heap: list[tuple[float, int, Watch]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None
        self._wakes_at = 0.0  # when the thread looks next

    def arm(self, seconds: float, fd: int) -> Watch:
        armed = Watch(time.monotonic() + seconds, fd)
        with self._wake:
            heap = self._heap
            while heap and heap[0][2].done:  # finished calls leave as they reach the top
                heapq.heappop(heap)
            heapq.heappush(heap, (armed.deadline, next(self._order), armed))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="pywrapai-pg-deadlines", daemon=True
                )
                self._thread.start()
            elif armed.deadline < self._wakes_at:
                self._wake.notify()
        return armed

    def renew(self, armed: Watch, seconds: float) -> None:
        """Move ``armed``'s deadline to ``seconds`` from now; its older heap entry is then
        passed over when it reaches the top."""
        with self._wake:
            if armed.done:
                return
            armed.deadline = time.monotonic() + seconds
            heapq.heappush(self._heap, (armed.deadline, next(self._order), armed))
            if armed.deadline < self._wakes_at:
                self._wake.notify()

    def _run(self) -> None:
        with self._wake:
            while True:
                heap = self._heap
                while heap and heap[0][2].done:
                    heapq.heappop(heap)
                now = time.monotonic()
                if heap and heap[0][0] <= now:
                    armed = heapq.heappop(heap)[2]
                    if armed.deadline <= now:  # not renewed since this entry was pushed
                        armed.fire()
                    continue
                self._wakes_at = min(heap[0][0] if heap else now + _TICK, now + _TICK)
                self._wake.wait(self._wakes_at - now)


_watchdogs: dict[str, _Watchdog] = {}  # explicit cache: one watchdog thread per process
_watchdogs_lock = threading.Lock()
#: The deadline armed over each connection's call, for :func:`renew`.
_armed: weakref.WeakKeyDictionary[Any, Watch] = weakref.WeakKeyDictionary()


def _watchdog() -> _Watchdog:
    with _watchdogs_lock:
        dog = _watchdogs.get("dog")
        if dog is None:  # made on first use, never at import
            dog = _watchdogs["dog"] = _Watchdog()
        return dog


@contextlib.contextmanager
def watch(conn: Any, seconds: float | None) -> Iterator[Watch]:
    """Arm a deadline of ``seconds`` (None: none) over the calls made on ``conn`` inside."""
    if seconds is None:
        yield NEVER
        return
    armed = _watchdog().arm(seconds, conn.fileno())
    with _watchdogs_lock:
        _armed[conn] = armed
    try:
        yield armed
    finally:
        armed.disarm()
        with _watchdogs_lock:
            _armed.pop(conn, None)


def renew(conn: Any, seconds: float) -> None:
    """Give the call running on ``conn`` a fresh deadline, ``seconds`` from now: a write of
    many bounded statements arms each one (nothing happens when the call has none)."""
    with _watchdogs_lock:
        armed = _armed.get(conn)
    if armed is not None:
        _watchdog().renew(armed, seconds)
