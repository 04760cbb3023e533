"""Durable runs in one process: the run stores' compare-and-set, when an agent saves, and a
resume after a crash that re-runs only the call that was under way, with the same key."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pywrapai_graph import (
    LLM,
    Agent,
    AgentRunState,
    GraphLLM,
    InMemoryRunStore,
    RunConflictError,
    RunNotFoundError,
    RunStore,
    SQLiteRunStore,
    ToolCall,
    ToolRegistry,
    idempotency_key,
    tool,
)
from pywrapai_graph.errors import InvalidArgumentError
from pywrapai_graph.testing import ScriptedChatModel, ScriptedReply

CALLS: list[str] = []
CRASH_ON: set[str] = set()


class Crash(BaseException):
    """Stands in for the process dying (nothing of ours catches a BaseException)."""


@tool
def ship(item: str) -> str:
    """Ship an item."""
    key = idempotency_key()
    CALLS.append(key)
    if item in CRASH_ON:
        CRASH_ON.discard(item)
        raise Crash
    return f"shipped {item}"


@pytest.fixture(autouse=True)
def _clear() -> None:
    CALLS.clear()
    CRASH_ON.clear()


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunStore]:
    if request.param == "memory":
        yield InMemoryRunStore()
    else:
        sqlite = SQLiteRunStore(tmp_path / "runs.db")
        yield sqlite
        sqlite.close()


def script() -> list[ScriptedReply | str]:
    return [
        ScriptedReply(tool_calls=[ToolCall("x", "ship", {"item": "a"})]),
        ScriptedReply(
            tool_calls=[ToolCall("x", "ship", {"item": "b"}), ToolCall("y", "ship", {"item": "c"})]
        ),
        "Shipped a, b and c.",
    ]


def agent_over(store: RunStore, replies: list[ScriptedReply | str]) -> Agent:
    registry = ToolRegistry()
    registry.register(ship)
    return Agent(GraphLLM(llm=LLM(provider=ScriptedChatModel(replies))), registry, run_store=store)


def state(run_id: str = "r1", seq: int = 1) -> AgentRunState:
    return AgentRunState(run_id=run_id, tools=("ship",), messages=(), seq=seq)


def test_a_store_saves_by_compare_and_set(store: RunStore) -> None:
    assert store.load("r1") is None
    store.save(state(seq=1))
    with pytest.raises(RunConflictError):
        store.save(state(seq=1))  # a second first save of the run
    store.save(state(seq=2))
    with pytest.raises(RunConflictError):
        store.save(state(seq=2))  # a writer that read seq 1 too
    with pytest.raises(RunConflictError):
        store.save(state(run_id="r2", seq=5))  # no seq 4 stored
    assert store.load("r1") == state(seq=2)
    store.delete("r1")
    store.delete("r1")
    assert store.load("r1") is None


class Recording(InMemoryRunStore):
    def __init__(self) -> None:
        super().__init__()
        self.saved: list[tuple[int, int | None, str | None]] = []

    def save(self, state: AgentRunState) -> None:
        super().save(state)
        settled = None if state.turn is None else len(state.turn.results)
        self.saved.append((state.turns, settled, state.answer))


def test_the_agent_saves_at_start_after_each_reply_and_after_each_call() -> None:
    store = Recording()
    result = agent_over(store, script()).run("Ship a, b, c", run_id="r1")
    assert result.content == "Shipped a, b and c."
    assert store.saved == [
        (0, None, None),  # the run starts
        (1, 0, None),  # the reply, before any tool runs
        (1, 1, None),  # ship(a) done
        (2, 0, None),
        (2, 1, None),  # ship(b)
        (2, 2, None),  # ship(c)
        (3, None, "Shipped a, b and c."),
    ]
    assert CALLS == ["r1-1-0", "r1-2-0", "r1-2-1"]


def test_a_crash_mid_call_re_runs_that_call_only_with_the_same_key(store: RunStore) -> None:
    CRASH_ON.add("c")
    with pytest.raises(Crash):
        agent_over(store, script()).run("Ship a, b, c", run_id="r1")
    assert CALLS == ["r1-1-0", "r1-2-0", "r1-2-1"]
    saved = store.load("r1")
    assert saved is not None and saved.turn is not None
    assert AgentRunState.from_dict(json.loads(json.dumps(saved.to_dict()))) == saved
    assert [t.tool_call_id for t in saved.steps[0].timings] == ["x"]
    assert list(saved.turn.results) == [0] and saved.turn.pending == ()
    # another agent over the same store: the reply of turn 2 was saved, ship(b) too
    done = agent_over(store, ["Shipped a, b and c."]).resume("r1")
    assert done.content == "Shipped a, b and c."
    assert CALLS == ["r1-1-0", "r1-2-0", "r1-2-1", "r1-2-1"]
    assert done.total_turns == 3 and len(done.steps) == 2
    # a finished run answers again without a model call or a tool
    assert agent_over(store, []).resume("r1").content == "Shipped a, b and c."
    assert len(CALLS) == 4


def test_two_workers_resuming_one_state_one_loses(store: RunStore) -> None:
    CRASH_ON.add("a")
    with pytest.raises(Crash):
        agent_over(store, script()).run("Ship a, b, c", run_id="r1")
    saved = store.load("r1")
    assert saved is not None
    agent_over(store, script()[1:]).resume(saved)
    with pytest.raises(RunConflictError):
        agent_over(store, script()[1:]).resume(saved)
    assert CALLS.count("r1-1-0") == 2  # the crashed attempt, then the winner's


def test_arun_with_a_store_saves_each_call() -> None:
    store = Recording()
    result = asyncio.run(agent_over(store, script()).arun("Ship a, b, c", run_id="r1"))
    assert result.content == "Shipped a, b and c." and len(store.saved) == 7


def test_resume_of_an_unknown_run_and_a_bad_run_id_fail_typed(store: RunStore) -> None:
    agent = agent_over(store, script())
    with pytest.raises(RunNotFoundError):
        agent.resume("nope")
    bad: Any = 7
    with pytest.raises(InvalidArgumentError, match="run_id"):
        agent.run("x", run_id=bad)


def test_workers_opening_one_fresh_sqlite_file_at_once_all_open_it(tmp_path: Path) -> None:
    import threading

    path, opened, failed = tmp_path / "runs.db", [], []
    start = threading.Barrier(8)

    def open_it() -> None:
        start.wait()
        try:
            opened.append(SQLiteRunStore(path))
        except Exception as exc:  # what the test looks for
            failed.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failed == [] and len(opened) == 8
    opened[0].save(state())
    assert all(s.load("r1") == state() for s in opened)
    for s in opened:
        s.close()
