"""What one admission of the shared limits costs, against the same call without limits.

The anchor is ``LLM.chat`` through the OpenAI SDK to a local wire server (real HTTP on
127.0.0.1: the cheapest a real call gets). Then one shared admission (the one ``UPDATE`` of
the budget's row) on the local PostgreSQL, with 0 to 2,000 admissions already in the row's
60 s window (the row holds the window: its size is the budget per minute in use), p50 and
p90 of single admissions; and a whole shared turn (admit, settle and release: the last two
queued to the worker thread).

Run: .venv/bin/python -m benchmarks.shared_limits
"""

from __future__ import annotations

import statistics
import time
import uuid
from typing import Any

from benchmarks._postgres import postgres_url
from benchmarks._table import best_of
from pywrapai_graph import LLM
from pywrapai_graph.adapters.shared.budget import PostgresBudget
from pywrapai_graph.application.provider_limiter import ProviderLimiter
from pywrapai_graph.domain import Limits
from pywrapai_graph.testing.wire import OpenAIWire

SAMPLES = 400
WINDOW = Limits(requests_per_minute=10**6, tokens_per_minute=10**9)
RPM_ONLY = Limits(requests_per_minute=10**6)
FLIGHT = Limits(requests_per_minute=10**6, tokens_per_minute=10**9, max_in_flight=16)
WINDOWS = (0, 100, 500, 2000)


def _chat_anchor() -> float:
    with OpenAIWire(responder=lambda request: "ok") as wire:
        options: dict[str, Any] = {"base_url": wire.base_url, "api_key": "sk-bench"}
        llm = LLM(provider="openai", model="gpt-4o-mini", max_retries=0, **options)
        llm.chat("Hi", max_tokens=20)
        best = best_of(lambda: llm.chat("Hi", max_tokens=20), repeat=5, number=40)
        llm.close()
    return best


def _admissions(url: str, already: int, limits: Limits) -> list[float]:
    """Seconds of each of SAMPLES admissions, the row's window holding ``already`` more."""
    budget = PostgresBudget(url, f"bench:{uuid.uuid4().hex}", limits)
    for _ in range(already):
        if (permit := budget.admit(20).permit) is not None:
            budget.release(permit)
    times = []
    for _ in range(SAMPLES):
        start = time.perf_counter()
        admission = budget.admit(20)
        times.append(time.perf_counter() - start)
        if admission.permit is not None:
            budget.release(admission.permit)
    budget.close()
    return times


def _round_trip(url: str) -> list[float]:
    """Seconds of each of SAMPLES ``SELECT 1`` on one connection: the floor of any statement."""
    import psycopg2

    conn = psycopg2.connect(url)
    conn.autocommit = True
    times = []
    with conn.cursor() as cur:
        for _ in range(SAMPLES):
            start = time.perf_counter()
            cur.execute("SELECT 1")
            cur.fetchall()
            times.append(time.perf_counter() - start)
    conn.close()
    return times


def _turns(url: str) -> float:
    limits = Limits(requests_per_minute=10**6, tokens_per_minute=10**9, max_in_flight=10**4)
    limiter = ProviderLimiter(
        limits, shared=PostgresBudget(url, f"bench:{uuid.uuid4().hex}", limits)
    )

    def turn() -> None:
        with limiter.acquire(21) as permit:
            permit.settle(15)

    best = best_of(turn, repeat=5, number=100)
    assert limiter.shared is not None
    limiter.shared.close()
    return best


def main() -> None:
    anchor = _chat_anchor()
    print("\nShared limits on the local PostgreSQL (one process, one connection)")
    print(f"{'case':<56} {'p50 ms':>8} {'p90 ms':>8} {'of chat':>8}")
    print(f"{'LLM.chat to a local wire server (anchor, best)':<56} {anchor * 1e3:>8.3f}")
    with postgres_url() as url:
        floor = _round_trip(url)
        label = "SELECT 1 (the round-trip floor)"
        print(f"{label:<56} {statistics.median(floor) * 1e3:>8.3f}")
        cases = [(f"rpm+tpm, {n} already in the window", n, WINDOW) for n in WINDOWS]
        cases.append(("rpm only, 2000 already in the window", 2000, RPM_ONLY))
        cases.append(("rpm+tpm+16 in flight (each released), 500 in window", 500, FLIGHT))
        for label, already, limits in cases:
            times = _admissions(url, already, limits)
            p50 = statistics.median(times)
            p90 = statistics.quantiles(times, n=10)[-1]
            print(f"{label:<56} {p50 * 1e3:>8.3f} {p90 * 1e3:>8.3f} {p50 / anchor:>7.2f}x")
        turn = _turns(url)
        label = "a whole turn: acquire, settle, release (best mean)"
        print(f"{label:<56} {turn * 1e3:>8.3f} {'':>8} {turn / anchor:>7.2f}x")


if __name__ == "__main__":
    main()
