"""The shared-budget port: a provider key's limits kept where every process sees them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["Admission", "SharedBudget"]


@dataclass(frozen=True, slots=True)
class Admission:
    """The answer to one request for a turn.

    Attributes:
        permit: the admitted request's id (settle and release it by that id); None when
            it was not admitted.
        wait: when not admitted, seconds until the windows would admit it; None when every
            slot in flight is taken (nobody can say when one is released).
    """

    permit: int | None
    wait: float | None = None


@runtime_checkable
class SharedBudget(Protocol):
    """One provider key's budget held outside the process (a database row), so that every
    process using it is admitted from the same windows and in-flight slots.

    :meth:`admit` decides atomically for all of them. A slot in flight is a lease that the
    holder keeps renewing; a holder that dies stops renewing, and the slot comes back
    within the lease.
    """

    def admit(self, tokens: int) -> Admission:
        """Admit a request of ``tokens`` now, or say how long until it could be."""
        ...

    def settle(self, permit: int, tokens: int) -> None:
        """Count the admitted request ``permit`` for ``tokens`` instead of its estimate."""
        ...

    def release(self, permit: int) -> None:
        """Give back ``permit``'s slot in flight."""
        ...

    def close(self) -> None:
        """Give back every slot this process holds and close the connection."""
        ...
