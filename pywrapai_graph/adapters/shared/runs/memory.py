"""InMemoryRunStore: run states in a dict, for tests and single-process use."""

from __future__ import annotations

import json
import threading

from pywrapai_graph.domain.agent_state import AgentRunState, RunConflictError
from pywrapai_graph.ports.run_store import RunStore

__all__ = ["InMemoryRunStore"]


class InMemoryRunStore(RunStore):
    """Run states held as JSON text in this process (lost with it): the store's semantics —
    compare-and-set, plain JSON — without a database."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, tuple[int, str]] = {}

    def load(self, run_id: str) -> AgentRunState | None:
        with self._lock:
            found = self._runs.get(run_id)
        return None if found is None else AgentRunState.from_dict(json.loads(found[1]))

    def save(self, state: AgentRunState) -> None:
        text = json.dumps(state.to_dict())
        with self._lock:
            found = self._runs.get(state.run_id)
            if (found[0] if found else 0) != state.seq - 1:
                raise RunConflictError(state.run_id)
            self._runs[state.run_id] = (state.seq, text)

    def delete(self, run_id: str) -> None:
        with self._lock:
            self._runs.pop(run_id, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._runs)
