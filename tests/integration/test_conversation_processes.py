"""Conversation stores shared by processes: SQLite files and PostgreSQL tables.

Two workers appending to one conversation both land, each turn whole and in its writer's
order; a worker killed (SIGKILL) mid-append, many times over, leaves no half turn visible.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from pywrapai_graph.testing.contracts.conversation_store import check_whole_turns
from tests.integration.conversation_workers import open_store

pytestmark = pytest.mark.integration

CTX = mp.get_context("spawn")
KILLS = 12


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    """(kind, file or DSN, table) of a fresh conversation table."""
    table = f"conv_{uuid.uuid4().hex[:8]}"
    if request.param == "sqlite":
        yield "sqlite", str(tmp_path / "chats.db"), table
    else:
        yield "postgres", request.getfixturevalue("pg_url"), table


def test_two_processes_appending_at_once_both_land_whole(
    location: tuple[str, str, str],
) -> None:
    kind, where, table = location
    start, results = CTX.Event(), CTX.Queue()
    from tests.integration.conversation_workers import append_turns

    workers = [
        CTX.Process(target=append_turns, args=(kind, where, table, name, 30, start, results))
        for name in ("a", "b")
    ]
    for w in workers:
        w.start()
    start.set()
    done = {results.get(timeout=120) for _ in workers}
    for w in workers:
        w.join(30)
    assert done == {"a", "b"}
    store = open_store(kind, where, table)
    messages = store.load("shared")
    store.close()
    check_whole_turns(messages, {"a": 30, "b": 30})
    writers = [m.content.split(" ")[0] for m in messages[::3]]
    # the writers' turns interleave (they ran at once), yet none was split
    assert writers.count("a") == writers.count("b") == 30


def _kill_mid_append(kind: str, where: str, table: str, writer: str) -> tuple[int, bool]:
    """Start a worker appending, SIGKILL it after a random few appends; returns (appends it
    finished, whether it was killed between its "begin" and "end" of an append)."""
    from tests.integration.conversation_workers import append_until_killed

    ours, theirs = CTX.Pipe(duplex=False)
    proc = CTX.Process(target=append_until_killed, args=(kind, where, table, writer, theirs))
    proc.start()
    theirs.close()
    events: list[tuple[str, int]] = []
    wanted = random.randint(1, 4)
    while events[-1:] != [("begin", wanted)]:
        assert ours.poll(120), "the worker never appended"
        events.append(ours.recv())
    time.sleep(random.uniform(0, 0.01))  # somewhere in encoding, writing or committing it
    os.kill(proc.pid or 0, signal.SIGKILL)
    proc.join(30)
    while ours.poll():
        try:
            events.append(ours.recv())
        except EOFError:  # the worker's end is closed: everything it sent was read
            break
    ours.close()
    return sum(e == "end" for e, _ in events), events[-1][0] == "begin"


def test_a_worker_killed_mid_append_leaves_no_half_turn(
    location: tuple[str, str, str],
) -> None:
    kind, where, table = location
    finished: dict[str, int] = {}
    mid_append = 0
    for i in range(KILLS):
        finished[f"k{i}"], during = _kill_mid_append(kind, where, table, f"k{i}")
        mid_append += during
    store = open_store(kind, where, table)
    seen = check_whole_turns(store.load("crash"))
    store.close()
    # each killed worker's finished turns are there; the one it was writing is whole or absent
    assert all(len(seen.get(w, [])) in (done, done + 1) for w, done in finished.items()), seen
    assert mid_append >= KILLS // 2, f"only {mid_append} of {KILLS} kills landed mid-append"
