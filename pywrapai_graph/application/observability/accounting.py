"""Exact running totals shared by the cost ledger and request scopes."""

from __future__ import annotations

import math

from pywrapai_graph.domain import CallRecord, CostTotals, TokenUsage

__all__ = ["ExactSum", "RunningTotals"]


class ExactSum:
    """A running float sum that is exact: its value equals ``math.fsum`` of every term.

    Keeps Shewchuk's non-overlapping partials, whose count stays small (bounded by the
    exponent range), so a long-running ledger's total never drifts however many calls it adds.
    """

    __slots__ = ("_partials",)

    def __init__(self) -> None:
        self._partials: list[float] = []

    def add(self, x: float) -> None:
        """Add one term."""
        kept = 0
        for partial in self._partials:
            big, small = (partial, x) if abs(x) < abs(partial) else (x, partial)
            hi = big + small
            lo = small - (hi - big)
            if lo:
                self._partials[kept] = lo
                kept += 1
            x = hi
        del self._partials[kept:]
        self._partials.append(x)

    @property
    def value(self) -> float:
        """The correctly rounded sum of every term added."""
        return math.fsum(self._partials)


class RunningTotals:
    """Calls, tokens and cost of many records (not thread-safe: callers hold a lock)."""

    __slots__ = ("_cost", "_usage", "calls", "estimated")

    def __init__(self) -> None:
        self.calls = 0
        self.estimated = 0
        self._usage = [0, 0, 0, 0, 0]
        self._cost = ExactSum()

    def add(self, rec: CallRecord) -> None:
        """Count one record."""
        u = rec.usage
        self.calls += 1
        self.estimated += rec.estimated
        t = self._usage
        t[0] += u.input_tokens
        t[1] += u.output_tokens
        t[2] += u.cache_read_tokens
        t[3] += u.cache_write_tokens
        t[4] += u.reasoning_tokens
        self._cost.add(rec.cost_usd)

    @property
    def cost_usd(self) -> float:
        """Exact USD total."""
        return self._cost.value

    @property
    def usage(self) -> TokenUsage:
        """Token totals."""
        return TokenUsage(*self._usage)

    def snapshot(self) -> CostTotals:
        """The totals as a frozen value."""
        return CostTotals(self.calls, self.usage, self.cost_usd, self.estimated)
