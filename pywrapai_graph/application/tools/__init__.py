"""The tool layer: ``@tool``, ``Tool`` and ``ToolRegistry``."""

from pywrapai_graph.application.tools.registry import ToolRegistry, format_tool_output
from pywrapai_graph.application.tools.tool import Tool, tool

__all__ = ["Tool", "ToolRegistry", "format_tool_output", "tool"]
