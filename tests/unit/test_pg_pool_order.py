"""The PostgreSQL store's pool hands slots out in arrival order, with real threads: a
released slot goes to the oldest waiter, never back to the thread that released it."""

from __future__ import annotations

import threading

import pytest

from pywrapai_graph.adapters.vectorstores.postgres.pool import FairPool, Slot
from pywrapai_graph.errors import InvalidStateError


def wait_for_waiters(pool: FairPool, n: int) -> None:
    for _ in range(2000):  # bounded: at most ~20 s
        if len(pool._waiters) == n:
            return
        threading.Event().wait(0.01)
    raise AssertionError(f"never {n} waiters")


def test_waiters_are_served_in_arrival_order() -> None:
    pool = FairPool(1)
    held = pool.acquire(None)
    assert held is not None
    served: list[int] = []

    def waiter(i: int) -> None:
        slot = pool.acquire(None)
        assert slot is not None
        served.append(i)
        pool.release(slot)

    threads = []
    for i in range(8):  # one at a time, so the arrival order is known
        threads.append(threading.Thread(target=waiter, args=(i,)))
        threads[-1].start()
        wait_for_waiters(pool, i + 1)
    pool.release(held)
    for t in threads:
        t.join(timeout=30)
    assert served == list(range(8))


def test_a_releasing_thread_cannot_take_the_slot_back_from_a_waiter() -> None:
    pool = FairPool(1)
    held = pool.acquire(None)
    assert held is not None
    got: list[Slot | None] = []
    waiting = threading.Thread(target=lambda: got.append(pool.acquire(None)))
    waiting.start()
    wait_for_waiters(pool, 1)
    pool.release(held)
    assert pool.acquire(0) is None  # at once, before the woken waiter has even run
    waiting.join(timeout=30)
    assert got == [held]


def test_a_timed_out_waiter_leaves_the_queue_and_close_wakes_the_rest() -> None:
    pool = FairPool(1)
    held = pool.acquire(None)
    assert pool.acquire(0.05) is None
    assert not pool._waiters
    failures: list[BaseException] = []

    def waiter() -> None:
        try:
            pool.acquire(None)
        except InvalidStateError as exc:
            failures.append(exc)

    t = threading.Thread(target=waiter)
    t.start()
    wait_for_waiters(pool, 1)
    pool.closeall()
    t.join(timeout=30)
    assert len(failures) == 1 and "closed" in str(failures[0])
    assert held is not None
    pool.release(held)  # a slot given back after close is discarded, not reused
    with pytest.raises(InvalidStateError):
        pool.acquire(0)
