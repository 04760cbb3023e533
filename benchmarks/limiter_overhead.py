"""What client-side limits add to a call, as ratios to the same call without them.

The anchor is ``LLM.chat`` through the OpenAI SDK to a local wire server (real HTTP on
127.0.0.1: the cheapest a real call gets). The same call with limits that never make it wait
(every check done, every window and the in-flight count kept) runs interleaved with it, round
by round, so machine load hits both alike; then the limiter's own turn (acquire, settle,
release) alone, sync and async.

Run: .venv/bin/python -m benchmarks.limiter_overhead
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from benchmarks._table import best_of, print_table
from pywrapai_graph import LLM
from pywrapai_graph.application.provider_limiter import ProviderLimiter
from pywrapai_graph.domain import Limits
from pywrapai_graph.testing.wire import OpenAIWire

#: limits that are checked and kept on every call but never make one wait
LOOSE = Limits(requests_per_minute=10**9, tokens_per_minute=10**12, max_in_flight=1000)
CALLS = 200
ROUNDS = 9


def _turns(limiter: ProviderLimiter, n: int) -> None:
    for _ in range(n):
        with limiter.acquire(21) as permit:
            permit.settle(15)


async def _aturns(limiter: ProviderLimiter, n: int) -> None:
    for _ in range(n):
        with await limiter.aacquire(21) as permit:
            permit.settle(15)


def _chat(llm: LLM) -> Callable[[], object]:
    return lambda: llm.chat("Hi", max_tokens=20)


def main() -> None:
    with OpenAIWire(responder=lambda request: "ok") as wire:
        options: dict[str, Any] = {
            "base_url": wire.base_url,
            "api_key": "sk-bench",
            "max_retries": 0,
        }
        plain = LLM(provider="openai", model="gpt-4o-mini", **options)
        limited = LLM(
            provider="openai",
            model="gpt-4o-mini",
            limits=ProviderLimiter(LOOSE),
            **options,
        )
        for llm in (plain, limited):  # warm the connections and the SDK
            llm.chat("Hi", max_tokens=20)
        best = {"plain": float("inf"), "limited": float("inf")}
        for _ in range(ROUNDS):
            for name, llm in (("plain", plain), ("limited", limited)):
                t = best_of(_chat(llm), repeat=1, number=CALLS // 10)
                best[name] = min(best[name], t)
        plain.close()
        limited.close()
    anchor = best["plain"]
    alone = ProviderLimiter(LOOSE)
    turn = best_of(lambda: _turns(alone, 1000), repeat=ROUNDS) / 1000
    aturn = best_of(lambda: asyncio.run(_aturns(alone, 1000)), repeat=ROUNDS) / 1000
    print_table(
        "Client-side limits: LLM.chat over HTTP to a local OpenAI wire server (per call)",
        [
            ("LLM.chat without limits (anchor)", anchor, 1.0),
            (
                "LLM.chat with limits (rpm, tpm, in-flight kept)",
                best["limited"],
                best["limited"] / anchor,
            ),
            ("the limiter's turn alone (acquire, settle, release)", turn, turn / anchor),
            ("the same, async (aacquire)", aturn, aturn / anchor),
        ],
    )


if __name__ == "__main__":
    main()
