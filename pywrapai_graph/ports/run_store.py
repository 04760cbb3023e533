"""The run-store port: where an agent keeps the state of its runs between steps."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pywrapai_graph.domain.agent_state import AgentRunState

__all__ = ["RunStore"]


@runtime_checkable
class RunStore(Protocol):
    """Agent run states by run id, written with compare-and-set on ``AgentRunState.seq``.

    An agent with a store saves its run when it starts or resumes, after each model reply
    (before any tool runs) and after each completed tool call, so another process can
    resume the run from the last saved point. Each save is atomic: a reader sees the
    previous state or the new one, whole.
    """

    def load(self, run_id: str) -> AgentRunState | None:
        """The last saved state of ``run_id``, or None."""
        ...

    def save(self, state: AgentRunState) -> None:
        """Store ``state`` if the stored state of its run is the one before it: none when
        ``state.seq`` is 1, else one whose ``seq`` is ``state.seq - 1``.

        Raises:
            RunConflictError: another writer saved this run first.
        """
        ...

    def delete(self, run_id: str) -> None:
        """Forget ``run_id`` (nothing happens when it is not stored)."""
        ...
