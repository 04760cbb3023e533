"""Worker processes for the shared-limits and shared-cache tests (started with ``spawn``, so
each is a fresh interpreter: its own limiter, its own connection, nothing in common with the
others but the database and the provider)."""

from __future__ import annotations

import asyncio
import time
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event
from typing import Any


def send_chats(
    dsn: str, base_url: str, api_key: str, limits: dict[str, Any], calls: int, start: Event
) -> tuple[int, int]:
    """``calls`` chats through one LLM with shared limits, all at once once ``start`` is
    set (half as asyncio tasks); returns (admitted, refused by the limits)."""
    from pywrapai import LLM
    from pywrapai_graph.domain import Limits
    from pywrapai_graph.errors import LimitWaitError

    llm = LLM(
        provider="openai",
        model="gpt-4o-mini",
        api_key=api_key,
        base_url=base_url,
        max_retries=0,
        limits=Limits(**limits, shared=dsn),
    )
    start.wait()
    sent = refused = 0
    for _ in range(calls // 2):
        try:
            llm.chat("Hi")
            sent += 1
        except LimitWaitError:
            refused += 1

    async def one() -> bool:
        try:
            await llm.achat("Hi")
        except LimitWaitError:
            return False
        return True

    async def rest() -> list[bool]:
        return await asyncio.gather(*(one() for _ in range(calls - calls // 2)))

    answers = asyncio.run(rest())
    llm.close()
    return sent + sum(answers), refused + answers.count(False)


def hold_slot(dsn: str, key: str, lease_s: float, conn: Connection) -> None:
    """Take one slot in flight of ``key``'s shared budget, say so, and keep it until killed
    (the budget's worker renews the lease meanwhile)."""
    from pywrapai_graph.adapters.shared.budget import PostgresBudget
    from pywrapai_graph.domain import Limits

    budget = PostgresBudget(dsn, key, Limits(max_in_flight=1), lease_s=lease_s)
    conn.send(budget.admit(0).permit)
    while True:
        time.sleep(60)


def cached_chat(dsn: str, base_url: str, table: str) -> tuple[str, bool]:
    """One chat through an LLM with the shared response cache: (content, cached)."""
    from pywrapai import LLM
    from pywrapai_graph.adapters.shared.response_cache import PostgresResponseCache

    cache = PostgresResponseCache(dsn, ttl_s=600, table=table)
    llm = LLM(
        provider="openai",
        model="gpt-4o-mini",
        api_key="sk-cache-test",
        base_url=base_url,
        max_retries=0,
        cache=cache,
    )
    response = llm.chat("What is the refund window?")
    llm.close()
    cache.close()
    return response.content, response.cached


def report(results: Any, index: int, name: str, *args: Any) -> None:
    """Run the function ``name`` of this module and put ``(index, its result)`` (or
    ``(index, "error: ...")``) on ``results``."""
    try:
        results.put((index, globals()[name](*args)))
    except BaseException as exc:
        results.put((index, f"error: {type(exc).__name__}: {exc}"))
        raise
