"""One algorithm, two drivers: the sync and async twins of a method written once.

An algorithm that waits on I/O (a model call, an embedding, a store query) is written once as
a generator that *yields* what it needs done and receives the answer; :func:`drive` answers
with blocking calls, :func:`adrive` with awaited ones. A fix to the algorithm lands in both;
only the few lines that do the I/O differ. An exception raised while doing a step is thrown
into the generator at its ``yield``, so its ``try``/``with`` blocks see it exactly as they
would see a direct call's.

Example::

    def _core(self, query):               # the algorithm, once
        vector = yield Embed(query)
        return (yield Search(vector))

    def run(self, query):
        return drive(self._core(query), self._do)      # self._do: a step -> its answer

    async def arun(self, query):
        return await adrive(self._core(query), self._ado)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar, cast

__all__ = ["Core", "adrive", "drive"]

S = TypeVar("S")
R = TypeVar("R")

#: An algorithm written once: yields steps of type ``S``, is sent their answers, returns ``R``.
Core = Generator[S, Any, R]


def drive(core: Core[S, R], do: Callable[[S], Any]) -> R:
    """Run ``core``, doing each step it yields with the blocking ``do``."""
    answer: Any = None
    failure: BaseException | None = None
    while True:
        done, step = _advance(core, answer, failure)
        if done:
            return cast(R, step)
        try:
            answer, failure = do(step), None
        except BaseException as exc:  # the core decides: it sees the error at its yield
            answer, failure = None, exc


async def adrive(core: Core[S, R], do: Callable[[S], Awaitable[Any]]) -> R:
    """:func:`drive` for async code: each step is done by awaiting ``do``."""
    answer: Any = None
    failure: BaseException | None = None
    while True:
        done, step = _advance(core, answer, failure)
        if done:
            return cast(R, step)
        try:
            answer, failure = await do(step), None
        except BaseException as exc:  # cancellation too: the core's `with` blocks unwind
            answer, failure = None, exc


def _advance(core: Core[S, R], answer: Any, failure: BaseException | None) -> tuple[bool, Any]:
    """``(False, next step)`` after sending ``answer`` (or throwing ``failure``) into the
    core, or ``(True, its result)`` once it has returned."""
    try:
        return False, core.send(answer) if failure is None else core.throw(failure)
    except StopIteration as finished:
        return True, finished.value
