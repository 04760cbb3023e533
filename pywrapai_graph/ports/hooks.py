"""The observability-hooks port: callbacks for what tracing does not cover."""

from __future__ import annotations

from pywrapai_graph.domain.events import (
    AgentStepEvent,
    LLMCallEvent,
    RetrievalEvent,
    ToolCallEvent,
)

__all__ = ["Hooks"]


class Hooks:
    """Subclass and override the callbacks you need; the others do nothing.

    Register hooks per object (``LLM(hooks=[...])``, ``VectorRetriever(..., hooks=[...])``,
    ``ToolRegistry(hooks=[...])``, ``Agent(..., hooks=[...])``), on a container
    (``build_container(..., hooks=[...])``) or for the whole process
    (``pywrapai_graph.observability.register_hooks``). Callbacks run synchronously after the
    operation, on the calling thread; an exception raised by a callback is logged on the
    ``pywrapai_graph.hooks`` logger and never reaches the call.
    """

    def on_llm_call(self, event: LLMCallEvent) -> None:
        """After every model call (chat, stream, structured), successful or not."""

    def on_retrieval(self, event: RetrievalEvent) -> None:
        """After every retrieval."""

    def on_tool_call(self, event: ToolCallEvent) -> None:
        """After every tool execution."""

    def on_agent_step(self, event: AgentStepEvent) -> None:
        """After every tool-calling agent turn."""
