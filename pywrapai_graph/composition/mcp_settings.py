"""The ``mcp:`` section: MCP servers whose tools the container's registry holds.

.. code-block:: yaml

    mcp:
      servers:
        files:                       # a stdio server: started as a subprocess
          command: npx
          args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"]
          env: {LOG_LEVEL: info}
        search:                      # a streamable-HTTP server
          url: https://search.internal/mcp
          headers: {Authorization: "Bearer ${TOKEN}"}
          prefix: search_

Header and environment values are secrets: shown masked in reprs, never logged.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from pywrapai_graph.errors import InvalidArgumentError
from pywrapai_graph.redaction import redact

__all__ = ["MCPServerSettings", "MCPSettings"]


class MCPServerSettings(BaseModel):
    """One MCP server: ``command`` (stdio) or ``url`` (streamable HTTP)."""

    model_config = ConfigDict(extra="forbid")

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, SecretStr] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, SecretStr] = Field(default_factory=dict)
    prefix: str = Field(default="", description="put before each tool name")
    connect_timeout_s: float = Field(default=30.0, gt=0)
    tool_timeout_s: float | None = Field(
        default=None, gt=0, description="per call; null: agent.tool_timeout_s"
    )

    @model_validator(mode="after")
    def _one_transport(self) -> MCPServerSettings:
        if (self.command is None) == (self.url is None):
            raise InvalidArgumentError(
                "an MCP server needs either command: (a stdio server) or url: (streamable HTTP)"
            )
        if self.url is not None and (self.args or self.env or self.cwd):
            raise InvalidArgumentError("args, env and cwd are for stdio servers (command:)")
        if self.command is not None and self.headers:
            raise InvalidArgumentError("headers are for HTTP servers (url:)")
        return self

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        for name, value in super().__repr_args__():  # a URL may carry a token
            yield name, redact(value) if isinstance(value, str) else value


class MCPSettings(BaseModel):
    """MCP servers by name; the container connects to them when its tools are first used."""

    model_config = ConfigDict(extra="forbid")

    servers: dict[str, MCPServerSettings] = Field(default_factory=dict)
