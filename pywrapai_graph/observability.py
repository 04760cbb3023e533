"""``pywrapai_graph.observability`` — tracing and metrics set-up, hooks, and the cost ledger.

Spans and metrics follow the OpenTelemetry semantic conventions for generative AI and go to
OpenTelemetry's global providers once the application sets them (``pip install
pywrapai-graph[otel]``); nothing is imported or done until then. :func:`configure` picks
providers for this library only and opts in to recording message contents.
"""

from pywrapai_graph.application.observability.scope import CostScope, cost_scope
from pywrapai_graph.application.observability.telemetry import (
    capture_content,
    configure,
    register_hooks,
    unregister_hooks,
)
from pywrapai_graph.application.token_tracker import DEFAULT_MAX_RECORDS, TokenTracker
from pywrapai_graph.domain import CallRecord, CostTotals
from pywrapai_graph.domain.events import (
    AgentStepEvent,
    LLMCallEvent,
    RetrievalEvent,
    ToolCallEvent,
)
from pywrapai_graph.ports.hooks import Hooks

__all__ = [
    "DEFAULT_MAX_RECORDS",
    "AgentStepEvent",
    "CallRecord",
    "CostScope",
    "CostTotals",
    "Hooks",
    "LLMCallEvent",
    "RetrievalEvent",
    "TokenTracker",
    "ToolCallEvent",
    "capture_content",
    "configure",
    "cost_scope",
    "register_hooks",
    "unregister_hooks",
]
