"""TokenTracker: the bounded cost ledger of chat, embedding and agent calls."""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
from collections import defaultdict, deque
from typing import IO

from pywrapai_graph.application.observability.accounting import RunningTotals
from pywrapai_graph.application.observability.scope import active_scopes, current_agent_run
from pywrapai_graph.application.pricing import PriceTable
from pywrapai_graph.domain import CallKind, CallRecord, CostTotals, FailedAttempt, TokenUsage
from pywrapai_graph.errors import InvalidArgumentError

__all__ = ["DEFAULT_MAX_RECORDS", "TokenTracker"]

#: How many per-call records a tracker keeps by default (aggregates cover every call).
DEFAULT_MAX_RECORDS = 10_000


class TokenTracker:
    """Thread-safe, bounded ledger of chat, embedding and agent calls.

    Totals (calls, tokens, USD) are kept exactly for every call ever recorded, overall, per
    (kind, provider, model) and per prompt file; the list of individual records is a ring
    buffer of the latest ``max_records`` calls, so memory stays flat in a long-running
    service. Every record also reaches the :func:`~pywrapai_graph.observability.cost_scope`
    blocks open where the call was made. Share one tracker between an ``LLM`` and an
    ``Embedder`` (``tracker=``) to keep chat and embedding costs in one ledger.

    Args:
        prices: the price table used for ``cost_usd``; defaults to the pinned table.
        max_records: how many recent records ``records`` keeps (0 keeps none).

    Raises:
        ValueError: a negative ``max_records``.

    Example:
        >>> tracker = TokenTracker()
        >>> rec = tracker.record("chat", "openai", "gpt-4o-mini", TokenUsage(1000, 500))
        >>> round(tracker.total_cost, 6)
        0.00045
    """

    def __init__(
        self, prices: PriceTable | None = None, *, max_records: int = DEFAULT_MAX_RECORDS
    ) -> None:
        cap: object = max_records  # callers may pass anything at run time
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
            raise InvalidArgumentError(f"max_records must be an int >= 0, got {max_records!r}")
        self._prices = prices if prices is not None else PriceTable.default()
        self._max_records = max_records
        self._lock = threading.Lock()
        self._clear()

    def _clear(self) -> None:
        self._records: deque[CallRecord] = deque(maxlen=self._max_records)
        self._total = RunningTotals()
        self._by_model: defaultdict[tuple[CallKind, str, str], RunningTotals]
        self._by_model = defaultdict(RunningTotals)
        self._by_prompt: defaultdict[str | None, RunningTotals] = defaultdict(RunningTotals)

    @property
    def prices(self) -> PriceTable:
        """The price table in use."""
        return self._prices

    @property
    def max_records(self) -> int:
        """How many recent records are kept."""
        return self._max_records

    def record(
        self,
        kind: CallKind,
        provider: str,
        model: str,
        usage: TokenUsage,
        *,
        prompt_file: str | None = None,
        estimated: bool = False,
        fallback_from: tuple[FailedAttempt, ...] = (),
    ) -> CallRecord:
        """Price and record one call; returns the stored record.

        ``estimated`` marks usage the provider did not report (see ``CallRecord.estimated``);
        ``fallback_from`` names the models of a fallback chain that failed before this one.
        """
        cost = self._prices.cost(kind, provider, model, usage)
        rec = CallRecord(
            kind,
            provider,
            model,
            usage,
            cost,
            prompt_file,
            time.time(),
            current_agent_run(),
            estimated,
            fallback_from,
        )
        self.add(rec)
        return rec

    def add(self, rec: CallRecord) -> None:
        """Book an already priced record (and count it in the open request scopes)."""
        with self._lock:
            self._records.append(rec)
            self._total.add(rec)
            self._by_model[rec.kind, rec.provider, rec.model].add(rec)
            self._by_prompt[rec.prompt_file].add(rec)
        for scope in active_scopes():
            scope.add(rec)

    @property
    def records(self) -> list[CallRecord]:
        """A snapshot of the latest ``max_records`` calls, oldest first."""
        with self._lock:
            return list(self._records)

    @property
    def totals(self) -> CostTotals:
        """Calls, tokens and cost of every call ever recorded (exact, not just the kept ones)."""
        with self._lock:
            return self._total.snapshot()

    @property
    def total_calls(self) -> int:
        """How many calls were recorded (including records the ring buffer dropped)."""
        return self.totals.calls

    @property
    def dropped_records(self) -> int:
        """How many old records the ring buffer let go (their totals are kept)."""
        with self._lock:
            return self._total.calls - len(self._records)

    @property
    def total_cost(self) -> float:
        """USD cost of every recorded call."""
        return self.totals.cost_usd

    @property
    def total_usage(self) -> TokenUsage:
        """Tokens of every recorded call, summed."""
        return self.totals.usage

    @property
    def total_input_tokens(self) -> int:
        """Input tokens of every recorded call."""
        return self.total_usage.input_tokens

    @property
    def total_output_tokens(self) -> int:
        """Output tokens of every recorded call."""
        return self.total_usage.output_tokens

    def by_model(self) -> dict[tuple[CallKind, str, str], CostTotals]:
        """Exact totals per (kind, provider, model)."""
        with self._lock:
            return {k: v.snapshot() for k, v in self._by_model.items()}

    def cost_by_prompt_file(self) -> dict[str | None, float]:
        """USD cost grouped by prompt file (None for calls made without one): A/B test data."""
        with self._lock:
            return {k: v.cost_usd for k, v in self._by_prompt.items()}

    def export_jsonl(self, target: str | os.PathLike[str] | IO[str]) -> int:
        """Write the kept records as JSON lines (one object per call); returns how many.

        ``target`` is a path (written atomically) or an open text file.
        """
        lines = [json.dumps(_record_json(r), sort_keys=True) + "\n" for r in self.records]
        if isinstance(target, str | os.PathLike):
            tmp = f"{os.fspath(target)}.tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.writelines(lines)
            os.replace(tmp, target)
        else:
            target.writelines(lines)
        return len(lines)

    def reset(self) -> None:
        """Forget every record and total."""
        with self._lock:
            self._clear()

    def __len__(self) -> int:
        """How many calls were recorded."""
        return self.total_calls

    def __repr__(self) -> str:
        t = self.totals
        return f"TokenTracker(calls={t.calls}, total_cost={t.cost_usd:.6f})"


def _record_json(rec: CallRecord) -> dict[str, object]:
    return dataclasses.asdict(rec)
