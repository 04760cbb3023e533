"""A fair pool of PostgreSQL connections: callers are served in the order they asked.

``threading.Semaphore`` (and ``psycopg2.pool`` behind one) is not fair: a thread that
releases and asks again at once takes the permit back before the woken waiter runs, so under
steady load some waiters are overtaken until their timeout. Here a released slot is handed
directly to the oldest waiter, and a newcomer never takes a slot while anyone waits.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from pywrapai_graph.errors import InvalidStateError

__all__ = ["FairPool", "Slot"]


class Slot:
    """A place in the pool: ``conn`` (None: not open, or a broken one discarded), and what
    the store set on its session (the store opens, configures and closes connections)."""

    __slots__ = ("configured", "conn", "statement_ms")

    def __init__(self) -> None:
        self.conn: Any = None
        self.configured = False
        #: statement_timeout last SET on this session (None: the value it was opened with)
        self.statement_ms: int | None = None

    def discard(self) -> None:
        """Close the connection; the slot opens a new one when next used."""
        conn, self.conn, self.configured, self.statement_ms = self.conn, None, False, None
        if conn is not None and not conn.closed:
            conn.close()


class _Waiter:
    __slots__ = ("slot", "wake")

    def __init__(self) -> None:
        self.slot: Slot | None = None
        self.wake = threading.Lock()
        self.wake.acquire()  # released by the hand-over


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
