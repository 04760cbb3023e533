"""Limits shared through PostgreSQL by real processes: one budget for all of them.

Every worker is a fresh ``spawn`` process with its own limiter and connection; the provider
is a wire server in this process that stamps each request's arrival, and the budget's row is
read back from the database. Nothing here asserts a duration: the windows are counted, the
overlaps are counted, and the one deadline (a killed holder's slot coming back) is the lease
plus a generous slack.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import threading
import time
import uuid
from typing import Any

import pytest

from pywrapai_graph.adapters.shared.budget import TABLE, PostgresBudget
from pywrapai_graph.application.provider_limiter import WINDOW_S, ProviderLimiter
from pywrapai_graph.composition.settings import load_settings
from pywrapai_graph.composition.shared_limits import shared_limiter
from pywrapai_graph.domain import Limits
from pywrapai_graph.errors import (
    ConfigurationError,
    InvalidArgumentError,
    LimitWaitError,
    RuntimeFailure,
)
from pywrapai_graph.testing import ScriptedReply
from pywrapai_graph.testing.wire import OpenAIWire
from pywrapai_graph.testing.wire.server import RecordedRequest

pytestmark = pytest.mark.integration

CTX = mp.get_context("spawn")
PASSWORD = "s3cret-Pa55word"


class Arrivals:
    """The provider's side: when each chat arrived, and how many were open at once."""

    def __init__(self, hold_s: float = 0.0) -> None:
        self.stamps: list[float] = []
        self.lock = threading.Lock()
        self.hold_s = hold_s

    def reply(self, request: RecordedRequest) -> ScriptedReply:
        with self.lock:
            self.stamps.append(time.monotonic())
        if self.hold_s:
            time.sleep(self.hold_s)  # the request stays open: overlaps can be counted
        return ScriptedReply("ok")

    def busiest_minute(self) -> int:
        stamps = sorted(self.stamps)
        return max(
            (sum(1 for t in stamps[i:] if t < s + WINDOW_S) for i, s in enumerate(stamps)),
            default=0,
        )


def run_workers(name: str, args: list[tuple[Any, ...]]) -> list[Any]:
    """``shared_workers.<name>(*a)`` in one process per ``a``; their results in order."""
    results = CTX.Queue()
    procs = [
        CTX.Process(target=_report, args=(results, i, name, *a), daemon=True)
        for i, a in enumerate(args)
    ]
    for p in procs:
        p.start()
    got = dict(results.get(timeout=300) for _ in procs)
    for p in procs:
        p.join(30)
    answers = [got[i] for i in range(len(procs))]
    assert not [a for a in answers if isinstance(a, str) and a.startswith("error")], answers
    return answers


def _report(results: Any, index: int, name: str, *args: Any) -> None:
    from tests.integration import shared_workers

    shared_workers.report(results, index, name, *args)


def test_four_processes_share_one_budget_of_60_a_minute(pg_url: str) -> None:
    arrivals = Arrivals()
    with OpenAIWire(responder=arrivals.reply) as wire:
        start = CTX.Event()
        key = f"sk-shared-{uuid.uuid4().hex}"  # a fresh provider key: a fresh row
        limits = {"requests_per_minute": 60, "max_wait_s": 0.5}
        results = CTX.Queue()
        args = (pg_url, wire.base_url, key, limits, 30, start)
        procs = [
            CTX.Process(target=_report, args=(results, i, "send_chats", *args), daemon=True)
            for i in range(4)
        ]
        for p in procs:
            p.start()
        start.set()
        answers = [results.get(timeout=300)[1] for _ in procs]
        for p in procs:
            p.join(30)
    assert not [a for a in answers if isinstance(a, str)], answers
    admitted = sum(a for a, _ in answers)
    refused = sum(r for _, r in answers)
    assert admitted + refused == 120
    assert arrivals.busiest_minute() <= 60  # the guarantee: never more in any minute
    assert len(arrivals.stamps) == admitted >= 60  # the budget was used, not just refused
    assert sum(1 for a, _ in answers if a > 0) >= 2  # more than one process got turns


def test_the_database_row_counts_every_admission(pg_url: str, admin: Any) -> None:
    limits = Limits(requests_per_minute=7, max_in_flight=3, max_wait_s=0.2)
    key = f"test:{uuid.uuid4().hex}"
    budget = PostgresBudget(pg_url, key, limits)
    limiter = ProviderLimiter(limits, shared=budget)
    permits = [limiter.acquire() for _ in range(3)]
    with pytest.raises(LimitWaitError, match="in flight busy"):
        limiter.acquire()  # three slots in flight, held by this process
    for permit in permits:
        permit.release()
    for _ in range(4):
        limiter.acquire().release()
    with pytest.raises(LimitWaitError, match="would wait"):
        limiter.acquire()  # seven admitted this minute
    budget.close()
    with admin.cursor() as cur:
        cur.execute(
            f"SELECT cardinality(ids), cardinality(lease_ids) FROM {TABLE} WHERE key = %s", (key,)
        )
        assert cur.fetchone() == (7, 0)
    assert limiter.stats.admitted == 7 and limiter.stats.refused == 2 and limiter.in_flight == 0


def test_slots_in_flight_are_shared_by_four_processes(pg_url: str) -> None:
    arrivals = Arrivals(hold_s=0.05)
    with OpenAIWire(responder=arrivals.reply) as wire:
        start = CTX.Event()
        start.set()
        key = f"sk-flight-{uuid.uuid4().hex}"
        limits = {"max_in_flight": 2, "max_wait_s": 120}
        answers = run_workers("send_chats", [(pg_url, wire.base_url, key, limits, 6, start)] * 4)
        assert wire.peak_in_flight_total <= 2  # never more open at the provider at once
    assert sum(a for a, _ in answers) == 24 == len(arrivals.stamps)


def test_a_killed_holder_gives_its_slot_back_within_the_lease(pg_url: str) -> None:
    lease_s = 1.5
    key = f"test:{uuid.uuid4().hex}"
    ours, theirs = CTX.Pipe()
    results = CTX.Queue()  # kept: the child unpickles it
    holder = CTX.Process(
        target=_report, args=(results, 0, "hold_slot", pg_url, key, lease_s, theirs)
    )
    holder.start()
    try:
        assert ours.poll(60) and ours.recv() is not None  # the holder has the one slot
        budget = PostgresBudget(pg_url, key, Limits(max_in_flight=1), lease_s=lease_s)
        waited_past_lease = time.monotonic() + 2 * lease_s
        refusals = 0
        while time.monotonic() < waited_past_lease:  # alive, it keeps renewing the lease
            assert budget.admit(0).permit is None
            refusals += 1
            time.sleep(0.1)
        assert refusals > 0
        os.kill(holder.pid or 0, signal.SIGKILL)
        holder.join(10)
        deadline = time.monotonic() + lease_s + 5.0  # the lease, and a generous slack
        while (admission := budget.admit(0)).permit is None:
            assert time.monotonic() < deadline, "the dead holder's slot never came back"
            time.sleep(0.1)
        budget.release(admission.permit)
        budget.close()
    finally:
        if holder.is_alive():
            holder.kill()


def test_the_dsn_password_never_shows(pg_url: str, caplog: pytest.LogCaptureFixture) -> None:
    dsn = f"postgresql://postgres:{PASSWORD}@127.0.0.1:1/postgres?connect_timeout=2"
    limits = Limits(requests_per_minute=5, shared=dsn)
    limiter = shared_limiter("openai", {"api_key": f"sk-{uuid.uuid4().hex}"}, limits)
    assert limiter is not None and limiter.shared is not None
    for shown in (repr(limits), str(limits), repr(limiter), repr(limiter.shared)):
        assert PASSWORD not in shown
    with pytest.raises(RuntimeFailure) as caught:
        limiter.acquire()
    chain: list[BaseException] = []
    error: BaseException | None = caught.value
    while error is not None:
        chain.append(error)
        error = error.__cause__ or error.__context__
    assert "cannot reach PostgreSQL at 127.0.0.1:1" in str(caught.value)
    assert all(PASSWORD not in f"{e!r} {e}" for e in chain)
    settings = load_settings({"limits": {"openai": {"requests_per_minute": 5, "shared": dsn}}})
    assert PASSWORD not in repr(settings) and settings.limits.of("openai") == limits
    assert PASSWORD not in caplog.text


def test_bad_shared_arguments_are_refused() -> None:
    with pytest.raises(InvalidArgumentError, match=r"Limits\.shared"):
        Limits(requests_per_minute=1, shared="")
    with pytest.raises(InvalidArgumentError, match="lease_s"):
        PostgresBudget("postgresql://h/db", "k", Limits(max_in_flight=1), lease_s=0)


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_worker_gets_its_own_connection_and_slots(pg_url: str) -> None:
    """As ``gunicorn --preload`` does: the budget is made before the fork, used after it."""
    key = f"test:{uuid.uuid4().hex}"
    budget = PostgresBudget(pg_url, key, Limits(max_in_flight=2))
    first = budget.admit(0).permit
    assert first is not None
    ours, theirs = mp.get_context("fork").Pipe()
    pid = os.fork()
    if pid == 0:  # the child: one more slot, through a connection of its own
        try:
            theirs.send(budget.admit(0).permit is not None and budget.admit(0).permit is None)
        finally:
            os._exit(0)
    assert ours.poll(60) and ours.recv() is True
    os.waitpid(pid, 0)
    assert budget.admit(0).permit is None  # the parent's session still works: both taken
    budget.release(first)
    budget.close()


def test_other_shared_database_for_the_same_key_is_refused() -> None:
    key = {"api_key": f"sk-{uuid.uuid4().hex}"}
    first = Limits(requests_per_minute=5, shared=f"postgresql://u:{PASSWORD}@db-a/app")
    shared_limiter("openai", key, first)
    other = Limits(requests_per_minute=5, shared=f"postgresql://u:{PASSWORD}@db-b/app")
    with pytest.raises(ConfigurationError, match="another shared database") as caught:
        shared_limiter("openai", key, other)
    assert PASSWORD not in str(caught.value)
