"""``pywrapai_graph.agent`` — the reference's module path for the agent names."""

from pywrapai_graph.application.run_agent import Agent
from pywrapai_graph.domain.agent import (
    AgentBudgetExceededError,
    AgentConfig,
    AgentMaxTurnsError,
    AgentResult,
    AgentStep,
    ToolTiming,
)

__all__ = [
    "Agent",
    "AgentBudgetExceededError",
    "AgentConfig",
    "AgentMaxTurnsError",
    "AgentResult",
    "AgentStep",
    "ToolTiming",
]
