"""``pywrapai_graph.tools.tool`` — where the reference places ``Tool``."""

from pywrapai_graph.application.tools import Tool, tool

__all__ = ["Tool", "tool"]
