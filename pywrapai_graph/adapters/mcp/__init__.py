"""MCP (Model Context Protocol) tool servers, through the official ``mcp`` SDK (extra ``[mcp]``)."""
