"""``pywrapai_graph.observability`` — cost scopes, the ledger's values, tracing and hooks."""

from pywrapai_graph.application.observability.scope import CostScope, cost_scope
from pywrapai_graph.application.token_tracker import DEFAULT_MAX_RECORDS, TokenTracker
from pywrapai_graph.domain import CallRecord, CostTotals

__all__ = [
    "DEFAULT_MAX_RECORDS",
    "CallRecord",
    "CostScope",
    "CostTotals",
    "TokenTracker",
    "cost_scope",
]
