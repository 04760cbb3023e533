"""Worker processes for the conversation-store tests (started with ``spawn``: each a fresh
interpreter with its own connection, sharing nothing with the others but the database)."""

from __future__ import annotations

from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event
from typing import Any

from pywrapai_graph.ports.conversation_store import ConversationStore


def open_store(kind: str, location: str, table: str) -> ConversationStore:
    """A SQLite store over the file ``location`` or a PostgreSQL one over the DSN."""
    if kind == "sqlite":
        from pywrapai_graph.adapters.conversations.sqlite import SQLiteConversationStore

        return SQLiteConversationStore(location, table=table)
    from pywrapai_graph.adapters.conversations.postgres import PostgresConversationStore

    return PostgresConversationStore(location, table=table)


def append_turns(
    kind: str, location: str, table: str, writer: str, turns: int, start: Event, results: Any
) -> None:
    """Append ``turns`` numbered turns to conversation "shared" once ``start`` is set."""
    from pywrapai_graph.testing.contracts.conversation_store import numbered_turn

    store = open_store(kind, location, table)
    start.wait()
    for n in range(turns):
        store.append("shared", numbered_turn(writer, n))
    store.close()
    results.put(writer)


def append_until_killed(kind: str, location: str, table: str, writer: str, log: Connection) -> None:
    """Append large turns to conversation "crash" forever, saying ("begin", n) before each
    append and ("end", n) after it, until the test kills the process."""
    from pywrapai_graph.testing.contracts.conversation_store import numbered_turn

    store = open_store(kind, location, table)
    store.load("crash")  # connected and the table made before the first "begin"
    n = 0
    while True:
        turn = numbered_turn(writer, n, size=100, pad=4_000)  # 400 kB to write
        log.send(("begin", n))
        store.append("crash", turn)
        log.send(("end", n))
        n += 1
