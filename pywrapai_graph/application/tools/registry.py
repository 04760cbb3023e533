"""ToolRegistry: stores tools, produces their schemas and executes the model's calls."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from pywrapai_graph.application.observability.telemetry import check_hooks
from pywrapai_graph.application.tools.execution import (
    ToolLimits,
    ToolOutcome,
    aexecute_tool,
    error_text,
    execute_tool,
    format_tool_output,
)
from pywrapai_graph.application.tools.provider_schemas import (
    anthropic_tools,
    gemini_declarations,
    openai_tools,
)
from pywrapai_graph.application.tools.tool import TOOL_ATTRIBUTE, Tool
from pywrapai_graph.domain import ToolCall, ToolResult
from pywrapai_graph.errors import ArgumentTypeError, InvalidArgumentError, UnknownToolError
from pywrapai_graph.ports.hooks import Hooks

__all__ = ["ToolRegistry", "format_tool_output"]

_log = logging.getLogger(__name__)


class ToolRegistry:
    """The tools a model may call.

    Args:
        hooks: observability hooks told about every tool execution (here and in an Agent).

    :meth:`execute` gives each tool the default limits (30 s, 64 KiB) unless the tool sets
    its own; an ``Agent`` takes them from its ``AgentConfig``.

    Example:
        >>> registry = ToolRegistry()
        >>> registry.register(get_weather)          # doctest: +SKIP
        >>> registry.to_schema()                    # doctest: +SKIP
    """

    def __init__(self, *, hooks: Sequence[Hooks] | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        self.hooks = check_hooks(hooks)
        self._limits = ToolLimits()

    def register(self, item: Tool | Callable[..., Any]) -> Tool:
        """Add a ``@tool``-decorated function or a :class:`Tool`; returns the Tool.

        Raises:
            TypeError: for a plain function (decorate it with ``@tool``) or any other object.
            ValueError: when a tool with the same name is already registered.
        """
        if isinstance(item, Tool):
            found = item
        else:
            attached = getattr(item, TOOL_ATTRIBUTE, None)
            if not isinstance(attached, Tool):
                what = getattr(item, "__name__", type(item).__name__)
                raise ArgumentTypeError(
                    f"{what!r} is not a tool: decorate it with @tool or pass a Tool instance"
                )
            found = attached
        if found.name in self._tools:
            raise InvalidArgumentError(f"a tool named {found.name!r} is already registered")
        self._tools[found.name] = found
        return found

    def get(self, name: str) -> Tool:
        """The tool called ``name``.

        Raises:
            KeyError: when no such tool is registered (the message lists the registered ones).
        """
        try:
            return self._tools[name]
        except KeyError:
            raise UnknownToolError(
                f"no tool named {name!r}; registered tools: {self.names}"
            ) from None

    def execute(self, tool_call: ToolCall) -> ToolResult:
        """Run one call. A failure of the tool (an exception, invalid arguments, its timeout
        or result size) becomes ``ToolResult(content="Error: <message>")`` so the model can
        recover; the message is our typed error's, redacted.

        Raises:
            KeyError: when the model named a tool that is not registered.
        """
        tool = self.get(tool_call.name)
        return self._result(execute_tool(tool, tool_call, self.hooks, self._limits))

    async def aexecute(self, tool_call: ToolCall) -> ToolResult:
        """Async :meth:`execute`: awaits ``async def`` tools, runs sync ones in a worker thread."""
        tool = self.get(tool_call.name)
        return self._result(await aexecute_tool(tool, tool_call, self.hooks, self._limits))

    @staticmethod
    def _result(outcome: ToolOutcome) -> ToolResult:
        call, error = outcome.call, outcome.error
        if error is not None:
            _log.info("tool %r failed: %s", call.name, type(error).__name__)
        content = outcome.content if error is None else error_text(error)
        return ToolResult(call.id, call.name, content)

    def to_schema(self) -> list[dict[str, Any]]:
        """Provider-neutral definitions: pass these to ``chat(tools=...)``."""
        return [t.to_schema() for t in self._tools.values()]

    def to_openai_schema(self) -> list[dict[str, Any]]:
        """What OpenAI receives (inspection and tests only)."""
        return openai_tools(self.to_schema())

    def to_anthropic_schema(self) -> list[dict[str, Any]]:
        """What Anthropic receives (inspection and tests only)."""
        return anthropic_tools(self.to_schema())

    def to_gemini_schema(self) -> list[dict[str, Any]]:
        """What Gemini receives, unsupported schema keys stripped (inspection and tests only)."""
        return gemini_declarations(self.to_schema())

    @property
    def names(self) -> list[str]:
        """Tool names in registration order."""
        return list(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __repr__(self) -> str:
        return f"ToolRegistry(tools={self.names!r})"
