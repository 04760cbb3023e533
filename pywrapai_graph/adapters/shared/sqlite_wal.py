"""Switching a SQLite connection to WAL, for files several processes open at once."""

from __future__ import annotations

import sqlite3
import time

__all__ = ["use_wal"]


def use_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """Switch ``conn`` to WAL. Processes opening a fresh file race for the switch, and SQLite
    answers the loser "locked" at once (its busy handler does not cover it): retry until
    ``timeout`` seconds have passed.

    Raises:
        sqlite3.OperationalError: still locked after ``timeout``, or another failure.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
        time.sleep(0.01)
