"""A worker process running durable agent runs, for the SIGKILL and two-process tests.

Usage: ``python -m tests.faults.agent_worker BACKEND TARGET MODE RUN_ID [ARG] [BARRIER]``
with BACKEND ``sqlite`` (TARGET: a folder holding ``runs.db`` and ``effects.db``) or
``postgres`` (TARGET: a DSN). MODE ``multi`` resumes RUN_ID, or starts it if nothing was
saved: three turns of two ``record`` calls each, then "done". MODE ``ask`` starts a run whose
first turn calls ``pay`` (needs approval) and ``record``, and prints the pending calls as JSON.
MODE ``decide`` loads the run, waits at BARRIER (a folder) for another worker if given, and
resumes it with the approvals in ARG (JSON); it exits 3 on RunConflictError.

``python -m tests.faults.agent_worker serve BACKEND`` is a fork server: the imports done once,
each worker a fork of it (see :func:`serve`), a real process of its own that a SIGKILL ends.

Tools write their effect keyed by their idempotency key (``ON CONFLICT DO NOTHING``) and
log every attempt in a table of their own, in the same database as the run store.
"""

from __future__ import annotations

import json
import os
import random
import select
import signal
import sqlite3
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from pywrapai_graph import (
    LLM,
    Agent,
    GraphLLM,
    PostgresRunStore,
    Role,
    RunConflictError,
    RunNotFoundError,
    RunStore,
    SQLiteRunStore,
    ToolCall,
    ToolRegistry,
    idempotency_key,
    tool,
)
from pywrapai_graph.application.agent_runs import DENIED
from pywrapai_graph.domain import ChatRequest
from pywrapai_graph.testing import ScriptedChatModel, ScriptedReply

TURNS, CALLS = 3, 2
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS attempts (key TEXT NOT NULL, item TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS effects (key TEXT PRIMARY KEY, item TEXT NOT NULL)",
)


class Effects:
    """The tools' database: effects once per key, every attempt logged."""

    def __init__(self, backend: str, target: str) -> None:
        if backend == "sqlite":
            self.conn: Any = sqlite3.connect(
                Path(target) / "effects.db",
                isolation_level=None,
                timeout=30,
                check_same_thread=False,
            )
            self.mark = "?"
        else:
            import psycopg2

            self.conn = psycopg2.connect(target)
            self.conn.autocommit = True
            self.mark = "%s"

    def create(self) -> None:
        for sql in SCHEMA:
            self._run(sql)

    def _run(self, sql: str, params: tuple[str, ...] = ()) -> list[tuple[Any, ...]]:
        cur = self.conn.cursor()
        cur.execute(sql.replace("?", self.mark), params)
        return list(cur.fetchall()) if cur.description else []

    def record(self, key: str, item: str) -> None:
        self._run("INSERT INTO attempts (key, item) VALUES (?, ?)", (key, item))
        time.sleep(random.uniform(0.005, 0.03))  # a kill can land between the two writes
        self._run(
            "INSERT INTO effects (key, item) VALUES (?, ?) ON CONFLICT DO NOTHING", (key, item)
        )

    def rows(self, table: str, run_id: str) -> list[tuple[str, str]]:
        found = self._run(f"SELECT key, item FROM {table} WHERE key LIKE ?", (f"{run_id}-%",))
        return sorted((str(k), str(i)) for k, i in found)


def open_store(backend: str, target: str) -> RunStore:
    if backend == "sqlite":
        return SQLiteRunStore(Path(target) / "runs.db")
    return PostgresRunStore(target)


def respond(request: ChatRequest) -> ScriptedReply | str:
    """The model: its reply follows from the messages, so any process answers alike."""
    task = next(m.content for m in request.messages if m.role is Role.USER)
    turns = sum(1 for m in request.messages if m.role is Role.ASSISTANT and m.tool_calls)
    if task == "multi" and turns < TURNS:
        # provider ids repeat from turn to turn, as some providers' do
        calls = [ToolCall(f"call_{j}", "record", {"item": f"t{turns}-{j}"}) for j in range(CALLS)]
        return ScriptedReply(tool_calls=calls)
    if task == "pay" and turns == 0:
        return ScriptedReply(
            tool_calls=[
                ToolCall("call_0", "pay", {"item": "p1"}),
                ToolCall("call_1", "record", {"item": "r1"}),
            ]
        )
    denied = any(m.role is Role.TOOL and m.content == DENIED for m in request.messages)
    return "denied" if denied else "done"


def build_agent(backend: str, target: str) -> Agent:
    effects = Effects(backend, target)

    @tool
    def record(item: str) -> str:
        """Record an item."""
        effects.record(idempotency_key(), item)
        return f"recorded {item}"

    @tool(requires_approval=True)
    def pay(item: str) -> str:
        """Pay for an item."""
        effects.record(idempotency_key(), item)
        return f"paid {item}"

    registry = ToolRegistry()
    registry.register(record)
    registry.register(pay)
    model = ScriptedChatModel(respond=respond)
    return Agent(GraphLLM(llm=LLM(provider=model)), registry, run_store=open_store(backend, target))


def wait_at(barrier: Path, parties: int = 2) -> None:
    barrier.mkdir(exist_ok=True)
    (barrier / f"{time.monotonic_ns()}-{random.random()}").touch()
    deadline = time.monotonic() + 60
    while len(list(barrier.iterdir())) < parties and time.monotonic() < deadline:
        time.sleep(0.005)


def main(argv: list[str]) -> int:
    backend, target, mode, run_id, *rest = argv
    agent = build_agent(backend, target)
    print("ready", flush=True)
    if mode == "multi":
        try:
            result = agent.resume(run_id)
        except RunNotFoundError:
            result = agent.run("multi", run_id=run_id)
    elif mode == "ask":
        result = agent.run("pay", run_id=run_id)
        print(json.dumps([[p.id, p.name, p.arguments] for p in result.pending]), flush=True)
        return 0
    else:
        state = agent.run_store.load(run_id) if agent.run_store else None
        assert state is not None
        if len(rest) > 1:
            wait_at(Path(rest[1]))
        try:
            result = agent.resume(state, json.loads(rest[0]))
        except RunConflictError:
            print("conflict", flush=True)
            return 3
    print(result.content, flush=True)
    return 0


def serve(backend: str) -> None:
    """Fork a worker for each line on stdin, a JSON ``[argv, kill_after]``: it runs
    ``main(argv)``; once it has printed "ready" it has ``kill_after`` seconds (``null``: as
    long as it takes) before a SIGKILL. Answers each line with a JSON line: ``[exit code
    (minus the signal that ended it), its stdout, its stderr]``."""
    if backend == "postgres":
        import psycopg2  # noqa: F401  (every worker connects: imported once, here)
    while line := sys.stdin.readline():
        argv, kill_after = json.loads(line)
        print(json.dumps(_fork(argv, kill_after)), flush=True)


def _fork(argv: list[str], kill_after: float | None) -> list[object]:
    out_read, out_write = os.pipe()
    with tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:  # the worker: its output to the pipe and the file, then main
            os.close(out_read)
            os.dup2(out_write, 1)
            os.dup2(err.fileno(), 2)
            random.seed()  # not the sleeps of the worker forked before it
            code = 1
            try:
                code = main(argv)
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        os.close(out_write)
        with os.fdopen(out_read) as out:
            first = out.readline()
            if first == "ready\n" and kill_after is not None:
                ended = os.pidfd_open(pid)  # readable once the worker has ended
                try:
                    if not select.select([ended], [], [], kill_after)[0]:
                        os.kill(pid, signal.SIGKILL)  # not reaped yet: the pid is its
                finally:
                    os.close(ended)
            rest = out.read()
        _, status = os.waitpid(pid, 0)
        err.seek(0)
        return [os.waitstatus_to_exitcode(status), first + rest, err.read().decode()]


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    else:
        sys.exit(main(sys.argv[1:]))
