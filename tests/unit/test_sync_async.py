"""One algorithm, two drivers: answers, errors and cancellation reach the core alike."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pywrapai_graph.ports.sync_async import Core, adrive, drive


def _core(log: list[str]) -> Core[str, int]:
    """Asks for two numbers and sums them; records how its `try` blocks saw a failure."""
    try:
        first: int = yield "first"
        try:
            second: int = yield "second"
        except ValueError as exc:
            log.append(f"second failed: {exc}")
            second = -1
        return first + second
    finally:
        log.append("closed")


def _answers(step: str) -> int:
    return {"first": 40, "second": 2}[step]


def _second_fails(step: str) -> int:
    if step == "second":
        raise ValueError("boom")
    return 40


def test_both_drivers_answer_each_step_and_return_the_result() -> None:
    log: list[str] = []
    assert drive(_core(log), _answers) == 42

    async def ado(step: str) -> int:
        await asyncio.sleep(0)
        return _answers(step)

    assert asyncio.run(adrive(_core(log), ado)) == 42
    assert log == ["closed", "closed"]


def test_a_failed_step_is_raised_at_the_cores_yield() -> None:
    log: list[str] = []
    assert drive(_core(log), _second_fails) == 39

    async def ado(step: str) -> int:
        return _second_fails(step)

    assert asyncio.run(adrive(_core(log), ado)) == 39
    assert log == ["second failed: boom", "closed"] * 2


def test_a_failure_the_core_does_not_handle_propagates_after_its_cleanup() -> None:
    log: list[str] = []

    def fail(step: str) -> int:
        raise KeyError(step)

    with pytest.raises(KeyError, match="first"):
        drive(_core(log), fail)
    assert log == ["closed"]


def test_cancelling_the_async_driver_unwinds_the_core() -> None:
    log: list[str] = []
    started = asyncio.Event()

    async def hang(step: Any) -> int:
        started.set()
        await asyncio.Event().wait()
        return 0

    async def main() -> None:
        task = asyncio.create_task(adrive(_core(log), hang))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert log == ["closed"]
