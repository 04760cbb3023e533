"""The clock port: what time it is, and waiting for time to pass (threads and event loops)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["Clock"]


@runtime_checkable
class Clock(Protocol):
    """Monotonic seconds, and the two ways to wait for them.

    The library's limiters use the system clock; tests inject a clock whose time moves only
    when told, so a 60 s window passes without a second of real time.
    """

    def now(self) -> float:
        """Seconds on a monotonic scale (only differences mean anything)."""
        ...

    def sleep(self, seconds: float) -> None:
        """Block this thread for ``seconds``."""
        ...

    async def asleep(self, seconds: float) -> None:
        """Suspend this task for ``seconds`` without blocking its event loop."""
        ...
