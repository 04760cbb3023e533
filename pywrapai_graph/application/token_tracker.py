"""TokenTracker: records every billed call and totals tokens and cost."""

from __future__ import annotations

import threading

from pywrapai_graph.application.pricing import PriceTable
from pywrapai_graph.domain import CallKind, CallRecord, TokenUsage

__all__ = ["TokenTracker"]


class TokenTracker:
    """Thread-safe ledger of chat and embedding calls.

    Args:
        prices: the price table used for ``cost_usd``; defaults to the pinned table.

    Example:
        >>> tracker = TokenTracker()
        >>> rec = tracker.record("chat", "openai", "gpt-4o-mini", TokenUsage(1000, 500))
        >>> round(tracker.total_cost, 6)
        0.00045
    """

    def __init__(self, prices: PriceTable | None = None) -> None:
        self._prices = prices if prices is not None else PriceTable.default()
        self._records: list[CallRecord] = []
        self._lock = threading.Lock()

    @property
    def prices(self) -> PriceTable:
        """The price table in use."""
        return self._prices

    def record(
        self,
        kind: CallKind,
        provider: str,
        model: str,
        usage: TokenUsage,
        *,
        prompt_file: str | None = None,
    ) -> CallRecord:
        """Price and record one call; returns the stored record."""
        cost = self._prices.cost(kind, provider, model, usage)
        rec = CallRecord(kind, provider, model, usage, cost, prompt_file)
        with self._lock:
            self._records.append(rec)
        return rec

    @property
    def records(self) -> list[CallRecord]:
        """A snapshot of every recorded call, oldest first."""
        with self._lock:
            return list(self._records)

    @property
    def total_cost(self) -> float:
        """USD cost of every recorded call."""
        return sum(r.cost_usd for r in self.records)

    @property
    def total_usage(self) -> TokenUsage:
        """Tokens of every recorded call, summed."""
        total = TokenUsage()
        for r in self.records:
            total = total + r.usage
        return total

    @property
    def total_input_tokens(self) -> int:
        """Input tokens of every recorded call."""
        return self.total_usage.input_tokens

    @property
    def total_output_tokens(self) -> int:
        """Output tokens of every recorded call."""
        return self.total_usage.output_tokens

    def cost_by_prompt_file(self) -> dict[str | None, float]:
        """USD cost grouped by prompt file (None for calls made without one): A/B test data."""
        out: dict[str | None, float] = {}
        for r in self.records:
            out[r.prompt_file] = out.get(r.prompt_file, 0.0) + r.cost_usd
        return out

    def reset(self) -> None:
        """Forget every record."""
        with self._lock:
            self._records.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)

    def __repr__(self) -> str:
        return f"TokenTracker(calls={len(self)}, total_cost={self.total_cost:.6f})"
