"""The tool-server port: a process or endpoint that lists tools and runs them (MCP)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from pywrapai_graph.domain.remote_tool import RemoteToolSpec

__all__ = ["ToolServer"]


@runtime_checkable
class ToolServer(Protocol):
    """An open connection to a server whose tools the agent may call.

    Implementations are safe to call from any thread and any event loop.
    """

    @property
    def name(self) -> str:
        """The server's configured name (in errors and logs; never a secret)."""
        ...

    def list_tools(self) -> list[RemoteToolSpec]:
        """The tools the server listed when the connection was opened.

        Raises:
            InvalidStateError: the connection is not open.
        """
        ...

    async def acall(self, tool: str, arguments: Mapping[str, Any]) -> str:
        """Run ``tool`` on the server; its result as the text the model receives.

        Cancelling the awaiting task cancels the call on the server's side too.

        Raises:
            RemoteToolError: the tool reported a failure, or the server refused the call.
            ToolServerError: the server is gone or broke the protocol.
        """
        ...
