"""``from pywrapai_graph.tools import Tool, ToolRegistry, tool`` — the reference's import path."""

from pywrapai_graph.application.tools import Tool, ToolRegistry, tool

__all__ = ["Tool", "ToolRegistry", "tool"]
