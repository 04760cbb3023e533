"""Durable agent runs across real processes: SIGKILL at random instants of multi-step runs,
then resumes in new processes until each run finishes, with every tool call's effect in
the database exactly once; approve, deny and edit with the run stopped in one process and
resumed in another; two processes resuming one run, one of which loses."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults.agent_worker import CALLS, TURNS, Effects, open_store

ROOT = Path(__file__).resolve().parents[2]
RUNS = 30  # per backend
MAX_KILLS = 4  # per run; then the run is left to finish


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    if request.param == "sqlite":
        target = str(tmp_path)
    else:
        target = request.getfixturevalue("pywrapai_pg_url")
        effects = Effects("postgres", target)
        for table in ("attempts", "effects", "pywrapai_agent_runs"):
            effects._run(f"DROP TABLE IF EXISTS {table}")
    Effects(request.param, target).create()
    return request.param, target


def start(backend: tuple[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.faults.agent_worker", *backend, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )


def finish(worker: subprocess.Popen[str]) -> tuple[int, list[str]]:
    """The worker's exit code and the lines it printed that were not read yet (read from
    the pipes' own buffers: ``communicate`` would skip what ``readline`` buffered)."""
    assert worker.stdout is not None and worker.stderr is not None
    worker.wait(timeout=120)
    with worker.stdout, worker.stderr:
        out, err = worker.stdout.read(), worker.stderr.read()
    assert worker.returncode in (0, 3, -signal.SIGKILL), err
    assert "Traceback" not in err, err
    return worker.returncode, out.split("\n")


class ForkServer:
    """``agent_worker serve``: each worker a fork of one process that did the imports."""

    def __init__(self, backend: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.faults.agent_worker", "serve", backend],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"},
            cwd=ROOT,
        )

    def run(self, argv: list[str], kill_after: float | None) -> tuple[int, list[str], str]:
        """A worker's exit code, output lines and error output; SIGKILLed ``kill_after``
        seconds after it printed "ready" (its stores open) unless it ended before."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps([argv, kill_after]) + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        assert answer, "the fork server ended"
        code, out, err = json.loads(answer)
        return code, out.split("\n"), err

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        assert self.proc.wait(timeout=60) == 0
        self.proc.stdout.close()


def run_time(forks: ForkServer, backend: tuple[str, str]) -> float:
    """How long one whole run takes on this machine now, fork to exit (the fastest of three:
    the first also makes the store's tables): the span the kills are drawn over (a fixed
    span missed most runs on a fast machine, which ended first)."""
    times = []
    for n in range(3):
        start = time.monotonic()
        code, lines, err = forks.run([*backend, "multi", f"calibration{n}"], None)
        assert code == 0 and lines[1] == "done", err
        times.append(time.monotonic() - start)
    return min(times)


def run_with_kills(
    forks: ForkServer, backend: tuple[str, str], run_id: str, rng: random.Random, span: float
) -> int:
    """Workers on ``run_id`` until one finishes it, killed at a random instant of ``span``
    seconds after "ready" (up to MAX_KILLS times); returns how many were killed."""
    kills = 0
    while True:
        kill_after = rng.uniform(0.0, span) if kills < MAX_KILLS else None
        code, lines, err = forks.run([*backend, "multi", run_id], kill_after)
        assert code in (0, -signal.SIGKILL), err
        assert "Traceback" not in err, err
        assert lines[0] == "ready"  # its stores open: the run starts
        if code == -signal.SIGKILL:  # (a worker that finished before the signal exits 0)
            kills += 1
            continue
        assert lines[1] == "done"
        return kills


def expected(run_id: str) -> list[tuple[str, str]]:
    return sorted(
        (f"{run_id}-{turn + 1}-{j}", f"t{turn}-{j}") for turn in range(TURNS) for j in range(CALLS)
    )


@pytest.fixture
def forks(backend: tuple[str, str]) -> Iterator[ForkServer]:
    server = ForkServer(backend[0])
    yield server
    server.close()


def test_sigkill_at_random_instants_every_call_has_its_effect_once(
    backend: tuple[str, str], forks: ForkServer
) -> None:
    rng = random.Random(zlib.crc32(backend[0].encode()))
    effects = Effects(*backend)
    store = open_store(*backend)
    span = run_time(forks, backend)
    kills = reruns = 0
    for n in range(RUNS):
        run_id = f"run{n}"
        killed = run_with_kills(forks, backend, run_id, rng, span)
        saved = store.load(run_id)
        assert saved is not None and saved.answer == "done"
        assert effects.rows("effects", run_id) == expected(run_id)  # each effect exactly once
        attempts = len(effects.rows("attempts", run_id))
        # a kill interrupts at most the one call under way: only that call runs again
        assert TURNS * CALLS <= attempts <= TURNS * CALLS + killed
        kills += killed
        reruns += attempts - TURNS * CALLS
    print(f"{backend[0]}: {kills} kills, {reruns} calls run again, over {RUNS} runs ({span:.3f} s)")
    assert kills >= RUNS  # the kills happened...
    assert reruns >= 3, (kills, reruns)  # ...and some landed in the middle of a tool call


def ask(backend: tuple[str, str], run_id: str) -> str:
    code, lines = finish(start(backend, "ask", run_id))
    [[call_id, name, arguments]] = json.loads(lines[1])
    assert (code, name, arguments) == (0, "pay", {"item": "p1"})
    return str(call_id)


@pytest.mark.parametrize(
    ("decision", "answer", "paid"),
    [(True, "done", "p1"), (False, "denied", None), ({"item": "p2"}, "done", "p2")],
)
def test_approve_deny_and_edit_in_another_process(
    backend: tuple[str, str], decision: object, answer: str, paid: str | None
) -> None:
    effects = Effects(*backend)
    call_id = ask(backend, "pay1")
    assert effects.rows("effects", "pay1") == [("pay1-1-1", "r1")]  # ran before the stop
    code, lines = finish(start(backend, "decide", "pay1", json.dumps({call_id: decision})))
    assert (code, lines[1]) == (0, answer)
    assert effects.rows("effects", "pay1") == sorted(
        [("pay1-1-1", "r1")] + ([(call_id, paid)] if paid else [])
    )
    assert len(effects.rows("attempts", "pay1")) == 1 + (paid is not None)  # r1 ran once


def test_two_processes_resuming_one_run_one_gets_a_conflict(
    backend: tuple[str, str], tmp_path: Path
) -> None:
    call_id = ask(backend, "pay2")
    approvals = json.dumps({call_id: True})
    barrier = str(tmp_path / "barrier")
    workers = [start(backend, "decide", "pay2", approvals, barrier) for _ in range(2)]
    outcomes = sorted((code, lines[1]) for code, lines in map(finish, workers))
    assert outcomes == [(0, "done"), (3, "conflict")]
    assert Effects(*backend).rows("effects", "pay2") == sorted(
        [("pay2-1-1", "r1"), (call_id, "p1")]
    )
