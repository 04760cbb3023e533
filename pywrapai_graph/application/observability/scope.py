"""Request scopes: "the cost and tokens of everything inside this block".

Scopes live in a :class:`contextvars.ContextVar`, so each asyncio task and each thread sees
only the scopes opened in its own context (a task inherits its creator's scopes, as does a
worker started with ``asyncio.to_thread``), and nested scopes all see an inner call.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from pywrapai_graph.application.observability.accounting import RunningTotals
from pywrapai_graph.domain import CallRecord, CostTotals, TokenUsage

__all__ = [
    "CostScope",
    "active_scopes",
    "agent_run_context",
    "cost_scope",
    "current_agent_run",
]

_SCOPES: ContextVar[tuple[CostScope, ...]] = ContextVar("pywrapai_cost_scopes", default=())


class CostScope:
    """What every call inside one ``with cost_scope()`` block cost, across all ledgers.

    Thread-safe: a tool running in a worker thread adds to the scope of the task that
    started it. Totals are exact; the scope keeps no record list, only totals per
    (kind, provider, model).

    Attributes:
        name: an optional label (a request id, a user id).
    """

    def __init__(self, name: str | None = None) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._total = RunningTotals()
        self._by_model: defaultdict[tuple[str, str, str], RunningTotals] = defaultdict(
            RunningTotals
        )

    def add(self, rec: CallRecord) -> None:
        """Count one recorded call (ledgers call this; users need not)."""
        with self._lock:
            self._total.add(rec)
            self._by_model[rec.kind, rec.provider, rec.model].add(rec)

    @property
    def totals(self) -> CostTotals:
        """Calls, tokens and cost of everything recorded inside the scope so far."""
        with self._lock:
            return self._total.snapshot()

    @property
    def cost_usd(self) -> float:
        """USD cost so far."""
        return self.totals.cost_usd

    @property
    def usage(self) -> TokenUsage:
        """Tokens so far."""
        return self.totals.usage

    @property
    def calls(self) -> int:
        """Number of recorded calls so far."""
        return self.totals.calls

    def by_model(self) -> dict[tuple[str, str, str], CostTotals]:
        """Totals per (kind, provider, model)."""
        with self._lock:
            return {k: v.snapshot() for k, v in self._by_model.items()}

    def __repr__(self) -> str:
        t = self.totals
        return f"CostScope(name={self.name!r}, calls={t.calls}, cost_usd={t.cost_usd:.6f})"


def active_scopes() -> tuple[CostScope, ...]:
    """The scopes open in the current context, outermost first."""
    return _SCOPES.get()


@contextmanager
def cost_scope(name: str | None = None) -> Iterator[CostScope]:
    """Open a request scope: every chat, embedding and agent call inside it is counted.

    Example:
        >>> with cost_scope("request-42") as scope:   # doctest: +SKIP
        ...     graph.chat("hi")
        ...     print(scope.cost_usd, scope.usage)
    """
    scope = CostScope(name)
    token = _SCOPES.set((*_SCOPES.get(), scope))
    try:
        yield scope
    finally:
        _SCOPES.reset(token)


_AGENT_RUN: ContextVar[str | None] = ContextVar("pywrapai_agent_run", default=None)


def current_agent_run() -> str | None:
    """The id of the agent run in progress in this context, if any."""
    return _AGENT_RUN.get()


@contextmanager
def agent_run_context(run_id: str) -> Iterator[None]:
    """Mark every call recorded inside the block as part of agent run ``run_id``."""
    token = _AGENT_RUN.set(run_id)
    try:
        yield
    finally:
        _AGENT_RUN.reset(token)
