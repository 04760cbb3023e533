"""PGVectorStore's fair pool of connections and the client deadline on each call.

The pool hands a released slot to the oldest waiter (a ``threading.Semaphore`` would let a
thread that releases and asks again overtake it). libpq waits on a stopped server's socket
forever, so :func:`watch` arms a deadline over a call, past which a watchdog thread shuts the
socket down and the call fails; :func:`renew` re-arms it for each statement of a write.
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pywrapai_graph.errors import InvalidStateError

__all__ = ["CLIENT_GRACE_S", "NEVER", "FairPool", "Slot", "Watch", "renew", "watch"]

#: The client gives up this long after a call's deadline when the server has not answered
#: (a stopped or unreachable server cancels nothing) and closes the connection.
CLIENT_GRACE_S = 2.0


@dataclass(slots=True, eq=False)
class Slot:
    """A place in the pool: ``conn`` (None: not open yet, or discarded)."""

    conn: Any = None

    def discard(self) -> None:
        """Close the connection; the slot opens a new one when next used."""
        conn, self.conn = self.conn, None
        if conn is not None and not conn.closed:
            conn.close()


@dataclass(slots=True, eq=False)
class _Waiter:
    slot: Slot | None = None
    wake: threading.Lock = field(default_factory=threading.Lock)  # held until the hand-over


class FairPool:
    """``size`` slots, handed out first come, first served, to threads.

    Raises:
        InvalidStateError: :meth:`acquire` after :meth:`closeall`.
    """

    def __init__(self, size: int) -> None:
        self._lock = threading.Lock()
        self.slots = tuple(Slot() for _ in range(size))
        self._free = list(self.slots)  # free slots exist only while nobody waits
        self._waiters: deque[_Waiter] = deque()
        self.closed = False

    def acquire(self, timeout: float | None) -> Slot | None:
        """A slot, or None when none came within ``timeout`` seconds (None: no limit)."""
        with self._lock:
            self._check_open()
            if self._free:  # the most recently used first: its connection is open
                return self._free.pop()
            waiter = _Waiter()
            waiter.wake.acquire()
            self._waiters.append(waiter)
        waiter.wake.acquire(timeout=-1 if timeout is None else max(timeout, 0.0))
        with self._lock:
            if waiter.slot is not None:  # handed over, perhaps as the wait timed out
                return waiter.slot
            self._check_open()  # closeall() woke it
            self._waiters.remove(waiter)
            return None

    def release(self, slot: Slot) -> None:
        """Give ``slot`` back: to the oldest waiter, else to the free list."""
        with self._lock:
            if self.closed:
                slot.discard()
            elif self._waiters:
                waiter = self._waiters.popleft()
                waiter.slot = slot
                waiter.wake.release()
            else:
                self._free.append(slot)

    def closeall(self) -> None:
        """Close the free connections now and the others as they come back."""
        with self._lock:
            self.closed = True
            for slot in self._free:
                slot.discard()
            self._free.clear()
            while self._waiters:
                self._waiters.popleft().wake.release()

    def _check_open(self) -> None:
        if self.closed:
            raise InvalidStateError("this PostgreSQL store was closed; open a new one")


@dataclass(slots=True, eq=False)
class Watch:
    """One armed deadline over the socket ``fd``: :attr:`fired` tells whether it expired
    during the call, after :attr:`seconds` (as last armed or renewed)."""

    fd: int
    deadline: float = math.inf
    seconds: float = math.inf
    fired: bool = False


#: A call without a deadline.
NEVER = Watch(-1)
#: The watchdog looks at least this often (seconds), so arming a later deadline never has
#: to wake it: a call pays for a lock, not a thread switch.
_TICK = 1.0


class _Watchdog:
    """One daemon thread sleeping until the earliest deadline armed (by connection, changed
    only under ``wake``)."""

    def __init__(self) -> None:
        self.wake = threading.Condition()
        self.armed: dict[Any, Watch] = {}
        self.thread: threading.Thread | None = None
        self.wakes_at = 0.0  # when the thread looks next

    def set(self, conn: Any, seconds: float, armed: Watch | None = None) -> None:
        """Arm ``armed`` over ``conn`` for ``seconds`` from now, or (None) move the deadline
        armed over ``conn`` there (nothing when none is)."""
        deadline = time.monotonic() + seconds
        with self.wake:
            armed = armed or self.armed.get(conn)
            if armed is None:
                return
            armed.deadline, armed.seconds = deadline, seconds
            self.armed[conn] = armed
            if self.thread is None:
                self.thread = threading.Thread(
                    target=self._run, name="pywrapai-pg-deadlines", daemon=True
                )
                self.thread.start()
            elif deadline < self.wakes_at:
                self.wake.notify()

    def _run(self) -> None:
        with self.wake:
            while True:
                now = time.monotonic()
                for conn, armed in list(self.armed.items()):
                    if armed.deadline <= now:
                        del self.armed[conn]
                        armed.fired = True
                        _shut(armed.fd)
                soonest = min((a.deadline for a in self.armed.values()), default=math.inf)
                self.wakes_at = min(soonest, now + _TICK)
                self.wake.wait(self.wakes_at - now)


def _shut(fd: int) -> None:
    """Shut the socket down through a duplicate descriptor (``fd`` stays libpq's)."""
    with contextlib.suppress(OSError):  # already closed: nothing to interrupt
        sock = socket.socket(fileno=os.dup(fd))
        try:
            sock.shutdown(socket.SHUT_RDWR)
        finally:
            sock.close()  # the duplicate only


_DOG = _Watchdog()  # one for the process; its thread starts with the first deadline


@contextlib.contextmanager
def watch(conn: Any, seconds: float | None) -> Iterator[Watch]:
    """Arm a deadline of ``seconds`` (None: none) over the calls made on ``conn`` inside;
    once it is left the watchdog never touches the socket."""
    if seconds is None:
        yield NEVER
        return
    armed = Watch(conn.fileno())
    _DOG.set(conn, seconds, armed)
    try:
        yield armed
    finally:
        with _DOG.wake:
            if _DOG.armed.get(conn) is armed:
                del _DOG.armed[conn]


def renew(conn: Any, seconds: float) -> None:
    """Give the call running on ``conn`` a fresh deadline, ``seconds`` from now: a write of
    many bounded statements arms each one (nothing happens when the call has none)."""
    _DOG.set(conn, seconds)
